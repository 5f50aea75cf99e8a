"""WSGI entry point: ``gunicorn wsgi:app`` (the only module that builds an app at import).

A missing or corrupt snapshot or unsafe settings stop the process here with one clear line naming the file or
setting (gunicorn exits non-zero; with ``preload_app`` before any worker starts).
"""

from app import create_app
from app.config import ConfigurationError
from geo.errors import SnapshotError

try:
    app = create_app()
except (SnapshotError, ConfigurationError) as exc:
    raise SystemExit(f"urban-conditions refuses to start: {exc}") from None
