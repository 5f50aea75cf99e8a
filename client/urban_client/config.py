"""Client settings: base URL, key and timeout from the environment, then the config file, then defaults.

The config file is INI (``[urban]`` section with ``base_url``, ``api_key``, ``timeout``) at
``$URBAN_CONFIG``, else ``$XDG_CONFIG_HOME/urban/config.ini``, else ``~/.config/urban/config.ini``.
It is written with mode 0600 (directory 0700) because it holds the key.
"""

from __future__ import annotations

import configparser
import math
import os
from dataclasses import dataclass
from pathlib import Path

from urban_client.api import DEFAULT_BASE_URL, DEFAULT_TIMEOUT

SECTION = "urban"


class ConfigError(Exception):
    """The configuration cannot be read or is invalid."""


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``key_source`` says where the key came from (``env``, ``file`` or ``None``),
    ``base_url_source`` where the base URL came from (``option``, ``env``, ``file`` or ``default``)."""

    base_url: str
    api_key: str | None
    timeout: float
    key_source: str | None
    config_path: Path
    base_url_source: str = "default"

    def __repr__(self):  # never shows the key
        return (
            f"Settings(base_url={self.base_url!r}, api_key={'***' if self.api_key else None}, "
            f"timeout={self.timeout!r}, key_source={self.key_source!r}, "
            f"config_path={str(self.config_path)!r}, base_url_source={self.base_url_source!r})"
        )


def config_path(environ=None) -> Path:
    """Where the config file lives.

    Examples
    --------
    >>> str(config_path({"URBAN_CONFIG": "/tmp/u.ini"}))
    '/tmp/u.ini'
    >>> str(config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}))
    '/x/urban/config.ini'
    """
    env = os.environ if environ is None else environ
    if env.get("URBAN_CONFIG"):
        return Path(env["URBAN_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "urban" / "config.ini"


def read_file(path: Path) -> dict[str, str]:
    """The ``[urban]`` section of the config file as a dict (empty when the file does not exist)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except FileNotFoundError:
        return {}
    except (OSError, configparser.Error) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    return dict(parser[SECTION]) if parser.has_section(SECTION) else {}


def write_file(path: Path, values: dict[str, str]) -> None:
    """Write the ``[urban]`` section atomically with mode 0600 (parent directory created with 0700)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser[SECTION] = {k: v for k, v in values.items() if v not in (None, "")}
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            parser.write(fh)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def parse_timeout(value) -> float:
    """A positive, finite number of seconds, or ConfigError."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"timeout must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"timeout must be a positive number of seconds, not {value!r}")
    return seconds


def resolve(base_url: str | None = None, timeout: float | None = None, environ=None) -> Settings:
    """Settings by precedence: explicit argument, ``URBAN_*`` environment, config file, default."""
    env = os.environ if environ is None else environ
    path = config_path(env)
    stored = read_file(path)
    key, source = env.get("URBAN_API_KEY") or None, "env"
    if key is None:
        key, source = stored.get("api_key") or None, "file"
    url, url_source = next(
        (value, name)
        for value, name in (
            (base_url, "option"),
            (env.get("URBAN_BASE_URL"), "env"),
            (stored.get("base_url"), "file"),
            (DEFAULT_BASE_URL, "default"),
        )
        if value
    )
    raw_timeout = timeout if timeout is not None else env.get("URBAN_TIMEOUT") or stored.get("timeout")
    seconds = DEFAULT_TIMEOUT if raw_timeout in (None, "") else parse_timeout(raw_timeout)
    return Settings(url.rstrip("/"), key, seconds, source if key else None, path, url_source)
