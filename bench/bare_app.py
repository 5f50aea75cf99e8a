"""The framework's ceiling for ``make loadtest``: a bare Flask app under plain gunicorn, nothing of ours.

``GET /`` answers ``{"status":"ok"}`` as the service's ``/_bench/ping`` does; served by
``gunicorn bench.bare_app:app`` with the same number of sync workers and driven by the same wrk script and
connections, it is what a request costs before any hook, extension or access log of the service.
"""

from __future__ import annotations

from flask import Flask

app = Flask(__name__)


@app.get("/")
def hello():
    return {"status": "ok"}
