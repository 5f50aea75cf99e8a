"""compose.yaml checked without Docker: parsed, and held consistent with the Dockerfile, deploy/nginx.conf and
the app's settings (services, images, environment, volumes, health checks, start order)."""

from __future__ import annotations

import re
import shlex
from urllib.parse import urlsplit

import pytest
import yaml

from app.config import NOT_SETTINGS, SETTINGS
from app.sources.settings import SETTINGS as SOURCE_SETTINGS
from bench.deploy import ROOT

COMPOSE = ROOT / "compose.yaml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def dockerfile_env() -> dict:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    env = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(part.split("=", 1) for part in shlex.split(line[4:]))
    return env


def _mounts(service: dict) -> dict[str, tuple[str, bool]]:
    """container path → (source, read-only); a source may be a ``${VAR:?message}`` holding colons."""
    out = {}
    for spec in service.get("volumes", []):
        read_only = spec.endswith(":ro")
        source, target = spec.removesuffix(":ro").rsplit(":", 1)
        out[target] = (source, read_only)
    return out


def test_the_topology(compose):
    assert set(compose["services"]) == {"nginx", "app1", "app2", "postgres", "redis", "refresher"}
    for name, service in compose["services"].items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert service.get("restart") == "unless-stopped"
        for dep, cond in service.get("depends_on", {}).items():
            assert dep in compose["services"] and cond == {"condition": "service_healthy"}
    images = {n: s.get("image", "") for n, s in compose["services"].items()}
    assert images["nginx"].startswith("nginx:") and images["postgres"].startswith("postgres:")
    assert images["redis"].startswith("redis:")
    assert images["app1"] == images["app2"] == images["refresher"] == "urban-conditions:latest"
    assert compose["services"]["app1"]["build"] == "."  # the repository's Dockerfile


def test_apps_share_postgres_and_redis_and_trust_exactly_nginx(compose):
    pg_env = compose["services"]["postgres"]["environment"]
    for name in ("app1", "app2"):
        env = compose["services"][name]["environment"]
        db = urlsplit(re.sub(r"\$\{[^}]*\}", "password", env["URBAN_DATABASE_URL"]))
        assert db.scheme == "postgresql" and db.hostname == "postgres" and db.port == 5432
        assert db.path == "/" + pg_env["POSTGRES_DB"] and db.username == pg_env["POSTGRES_USER"]
        assert (
            "${POSTGRES_PASSWORD:?" in env["URBAN_DATABASE_URL"]
            and "POSTGRES_PASSWORD:?" in pg_env["POSTGRES_PASSWORD"]
        )
        assert env["URBAN_SECRET_KEY"].startswith("${URBAN_SECRET_KEY:?")  # required, never a default
        assert urlsplit(env["URBAN_REDIS_URL"]).hostname == "redis"
        assert env["URBAN_TRUSTED_PROXIES"] == "1"  # one hop: nginx
    assert (
        compose["services"]["refresher"]["environment"]["URBAN_REDIS_URL"]
        == compose["services"]["app1"]["environment"]["URBAN_REDIS_URL"]
    )


def test_every_urban_variable_is_a_known_setting(compose):
    known = {f"URBAN_{n}" for n in SETTINGS} | {f"URBAN_{n}" for n in SOURCE_SETTINGS} | NOT_SETTINGS
    for name, service in compose["services"].items():
        for key in service.get("environment", {}) or {}:
            if key.startswith("URBAN_"):
                assert key in known, f"{name}: {key} is not a setting"


def test_nginx_conf_is_mounted_and_its_upstreams_are_the_app_services(compose, dockerfile_env):
    nginx = compose["services"]["nginx"]
    assert _mounts(nginx)["/etc/nginx/nginx.conf"] == ("./deploy/nginx.conf", True)
    conf = (ROOT / "deploy/nginx.conf").read_text()
    upstream = re.search(r"upstream urban_app \{(.*?)\}", conf, re.S).group(1)
    servers = re.findall(r"^\s*server (\S+?)(?: [^;]*)?;", upstream, re.M)
    assert servers == [f"{name}:{dockerfile_env['PORT']}" for name in ("app1", "app2")]
    assert re.search(r"listen 80 default_server;", conf) and re.search(
        r"listen 443 ssl default_server;", conf
    )
    assert nginx["ports"] == ["80:80", "443:443"]
    # the certificate and key the conf names lie in a directory the operator must give, mounted read-only
    tls_dir = {path.rsplit("/", 1)[0] for path in re.findall(r"ssl_certificate(?:_key)? (\S+);", conf)}
    assert len(tls_dir) == 1 and _mounts(nginx)[tls_dir.pop()] == (
        "${URBAN_TLS_DIR:?set URBAN_TLS_DIR to the directory of fullchain.pem and privkey.pem}",
        True,
    )
    assert "https://127.0.0.1/healthz" in nginx["healthcheck"]["test"]  # plain HTTP only redirects
    assert re.search(r"^user nginx;", conf, re.M)  # the official image's user
    for name in ("app1", "app2"):  # the apps' own health check probes the Dockerfile's port
        probe = " ".join(compose["services"][name]["healthcheck"]["test"])
        assert f"127.0.0.1:{dockerfile_env['PORT']}/healthz" in probe


def test_the_refresher_publishes_where_the_apps_read(compose, dockerfile_env):
    refresher = compose["services"]["refresher"]
    assert refresher["command"][:4] == ["python", "-m", "app.sources", "refresh"]
    r_mounts = _mounts(refresher)
    r_data = refresher["environment"]["URBAN_DATA_DIR"]
    volume_root = next(path for path, (src, ro) in r_mounts.items() if src == "snapshots" and not ro)
    assert r_data.startswith(volume_root + "/")
    # the volume is mounted where the Dockerfile gives the app user write access
    assert volume_root == dockerfile_env["URBAN_INSTANCE_PATH"]
    for name in ("app1", "app2"):
        app = compose["services"][name]
        mount = next(path for path, (src, ro) in _mounts(app).items() if src == "snapshots")
        assert _mounts(app)[mount][1], "apps mount the snapshots read-only"
        assert app["environment"]["URBAN_DATA_DIR"] == mount + r_data[len(volume_root) :]
        assert _mounts(app)[dockerfile_env["URBAN_INSTANCE_PATH"]][0] == f"{name}-instance"
        assert app["depends_on"]["refresher"] == {"condition": "service_healthy"}
    assert r_data + "/manifest.json" in " ".join(refresher["healthcheck"]["test"])
    assert set(compose["volumes"]) == {"snapshots", "app1-instance", "app2-instance", "pgdata"}


def test_the_dockerfile_stays_the_single_host_default(dockerfile_env):
    text = (ROOT / "Dockerfile").read_text()
    assert "DATABASE_URL" not in text and "REDIS_URL" not in text
    assert dockerfile_env["PORT"] == "8000" and dockerfile_env["URBAN_DATA_DIR"] == "/data/snapshot"
