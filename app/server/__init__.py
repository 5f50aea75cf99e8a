"""The gunicorn process: worker, access log, log filter (see README.md in this folder)."""
