"""Settings precedence (defaults → instance file → URBAN_* → test config) and the production guard."""

import re
from pathlib import Path

import pytest

from app import create_app
from app.config import SETTINGS, ConfigurationError, coerce

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_production_refuses_to_start_without_secret_key(tmp_path, monkeypatch):
    monkeypatch.delenv("URBAN_SECRET_KEY", raising=False)
    monkeypatch.delenv("URBAN_ENV", raising=False)
    with pytest.raises(ConfigurationError, match="SECRET_KEY"):
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None})
    with pytest.raises(ConfigurationError, match="SECRET_KEY"):
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None, "ENV": "production"})


def test_production_starts_with_secret_key_and_public_url(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_SECRET_KEY", "s" * 40)
    monkeypatch.setenv("URBAN_PUBLIC_URL", "https://api.example.be")
    app = create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None})
    assert app.config["SECRET_KEY"] == "s" * 40 and not app.debug


def test_production_refuses_to_start_without_public_url(tmp_path, monkeypatch):
    """Finding 2: production never builds absolute links from the request's Host header."""
    monkeypatch.setenv("URBAN_SECRET_KEY", "s" * 40)
    monkeypatch.delenv("URBAN_PUBLIC_URL", raising=False)
    monkeypatch.delenv("URBAN_ENV", raising=False)
    with pytest.raises(ConfigurationError, match="PUBLIC_URL"):
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None})
    create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None, "ENV": "development"})  # falls back to Host


@pytest.mark.parametrize(
    "value",
    [
        "api.example.be",
        "ftp://api.example.be",
        "https://",
        "https://x.be/sub",
        "https://x.be/?a=1",
        "https://u:p@x.be",
        "javascript:alert(1)",
    ],
)
def test_public_url_must_be_an_origin(tmp_path, monkeypatch, value):
    monkeypatch.setenv("URBAN_SECRET_KEY", "s" * 40)
    with pytest.raises(ConfigurationError, match="PUBLIC_URL"):
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None, "PUBLIC_URL": value})


def test_precedence_default_instance_env_test_config(tmp_path, monkeypatch):
    (tmp_path / "config.py").write_text("MAX_LOCATIONS = 7\nCACHE_MAX_AGE = 30\nCLOCK = 'system'\n")
    monkeypatch.setenv("URBAN_CACHE_MAX_AGE", "45")
    app = create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path), "ENGINE": None, "CLOCK": "snapshot"})
    assert app.config["AUTH_FAILURE_LIMIT"] == SETTINGS["AUTH_FAILURE_LIMIT"][0]  # default
    assert app.config["MAX_LOCATIONS"] == 7  # instance file
    assert app.config["CACHE_MAX_AGE"] == 45  # environment (int)
    assert app.config["CLOCK"] == "snapshot"  # test config
    assert app.config["DATABASE"] == str(tmp_path / "urban.sqlite")


@pytest.mark.parametrize(
    "name, raw", [("MAX_LOCATIONS", "many"), ("LOAD_ENGINE", "perhaps"), ("DB_TIMEOUT", "soon")]
)
def test_bad_environment_values_are_refused(name, raw):
    with pytest.raises(ValueError, match=f"URBAN_{name}"):
        coerce(name, raw)


def test_bad_clock_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="URBAN_CLOCK"):
        create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path), "ENGINE": None, "CLOCK": "sundial"})


@pytest.mark.parametrize("table", ["app.config", "app.sources.settings"])
def test_every_setting_is_documented_with_its_env_var_and_default(table):
    """One table documents every setting: the platform's rows and those a wing declares itself."""
    import importlib

    text = DOC.read_text(encoding="utf-8")
    for name, (default, _help) in importlib.import_module(table).SETTINGS.items():
        row = re.search(rf"^\|\s*`URBAN_{name}`\s*\|(.*)$", text, re.M)
        assert row, f"URBAN_{name} missing from docs/configuration.md"
        if isinstance(default, tuple):
            default = ",".join(f"{v:g}" for v in default)
        if default not in (None, "") and not isinstance(default, dict):
            assert f"`{str(default).lower()}`" in row.group(1).lower(), (name, row.group(0))


def test_missing_snapshot_refuses_to_start(tmp_path):
    with pytest.raises(Exception) as info:
        create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path), "DATA_DIR": str(tmp_path / "none")})
    assert "none" in str(info.value)


def test_create_app_opens_no_database(tmp_path):
    """With preload_app the factory runs in the gunicorn master: it must not open the stores."""
    app = create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path), "ENGINE": None})
    assert not any(p.suffix == ".sqlite" for p in tmp_path.iterdir())
    app.test_client().get("/api/v1/locations")
    assert (tmp_path / "urban.sqlite").exists() or (tmp_path / "ratelimit.sqlite").exists()


@pytest.mark.parametrize(
    "setting, value, match",
    [
        ("DATABASE_URL", "sqlite:///x.sqlite", "postgresql://"),
        ("DATABASE_URL", "/var/lib/urban.sqlite", "postgresql://"),
        ("DATABASE_URL", "mysql://db/urban", "postgresql://"),
        ("REDIS_URL", "memcached://x:11211", "redis://"),
        ("REDIS_URL", "localhost:6379", "redis://"),
    ],
)
def test_store_urls_of_another_kind_refuse_to_start(tmp_path, setting, value, match):
    with pytest.raises(ConfigurationError, match=match):
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None, "TESTING": True, setting: value})


def test_redis_url_selects_redis_for_the_per_ip_limits_unless_a_storage_is_named(tmp_path, redis_url):
    import redis

    app = create_app(
        {
            "INSTANCE_PATH": str(tmp_path),
            "ENGINE": None,
            "TESTING": True,
            "REDIS_URL": redis_url,
            "AUTH_FAILURE_LIMIT": "3 per hour",
        }
    )
    assert app.config["RATELIMIT_STORAGE_URI"] == redis_url
    client = app.test_client()
    assert [client.get("/api/v1/locations").headers["X-RateLimit-Remaining"] for _ in range(3)] == [
        "2",
        "1",
        "0",
    ]
    assert client.get("/api/v1/locations").status_code == 429
    stored = redis.Redis.from_url(redis_url).keys("*auth-failure*")
    assert stored, "the failed-authentication counter is not in Redis"
    assert not (tmp_path / "ratelimit.sqlite").exists()
    named = create_app(
        {
            "INSTANCE_PATH": str(tmp_path),
            "ENGINE": None,
            "TESTING": True,
            "REDIS_URL": redis_url,
            "RATELIMIT_STORAGE_URI": "memory://",
        }
    )
    assert named.config["RATELIMIT_STORAGE_URI"] == "memory://"
    assert (
        create_app({"INSTANCE_PATH": str(tmp_path), "ENGINE": None, "TESTING": True})
        .config["RATELIMIT_STORAGE_URI"]
        .startswith("urban-sqlite:///")
    )
