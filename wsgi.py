"""WSGI entry point: ``gunicorn wsgi:app`` (the only module that builds an app at import)."""

from app import create_app

app = create_app()
