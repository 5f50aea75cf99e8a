"""gunicorn settings for the Urban Conditions Service (``python -m app.serve``, ``make serve``, Dockerfile).

The choices and the measurements behind them are in docs/operations.md (``make loadtest``):

- ``sync`` workers, ``WEB_CONCURRENCY`` (default 2: one per core): a call is CPU-bound Python, NumPy and one
  store statement, with no I/O wait worth overlapping; put a buffering proxy (nginx) in front, sync workers
  must not face slow clients directly.
- ``preload_app``: ``wsgi:app`` (and the snapshot engine) is built once in the master and shared
  copy-on-write by the forked workers. The master opens no store: the account and rate-limit stores are
  opened lazily per request/process, after fork (tests/ops checks the master's fds).
- ``SIGHUP``: gunicorn re-reads this file, starts new workers (forked from the preloaded master) and stops the
  old ones gracefully (``graceful_timeout``); requests in flight finish. A new snapshot is picked up without
  any signal by the reload watcher (docs/sources.md).
- Access log: JSON lines from :class:`app.server.accesslog.JsonAccessLogger`, no request headers (no
  ``Authorization``), link tokens and key-like query values redacted.
- ``Server: urban`` (no product version); request line, header count/size limits; worker ``timeout``.
- ``worker_class``: :mod:`app.server.worker` — requests gunicorn rejects itself (request line over
  ``limit_request_line`` → 414, headers over the limits → 431, malformed → 400) get the app's JSON error
  and headers instead of gunicorn's HTML page.
"""

import os
import sys

import gunicorn.http.wsgi

wsgi_app = "wsgi:app"
bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# gunicorn's sync/gthread workers with JSON error answers for requests gunicorn itself rejects (414, 431,
# malformed request line or header): the API's one error shape and headers, never HTML
# (sync with threads > 1 is gthread, as gunicorn itself decides, but ours)
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
_worker = os.environ.get("GUNICORN_WORKER_CLASS", "sync")
if _worker == "gthread" or (_worker == "sync" and threads > 1):
    worker_class = "app.server.worker.ThreadWorker"
elif _worker == "sync":
    worker_class = "app.server.worker.SyncWorker"
else:
    worker_class = _worker
preload_app = True
backlog = 512
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))  # a worker silent this long is killed and replaced
graceful_timeout = 20
keepalive = 2
limit_request_line = 4094
limit_request_fields = 50
limit_request_field_size = 8190
max_requests = 0  # no periodic recycling: workers hold no per-request state and the engine is shared
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
logger_class = "app.server.accesslog.JsonAccessLogger"
proc_name = "urban-conditions"
control_socket_disable = True  # no shared ~/.gunicorn/gunicorn.ctl between instances; signals suffice

# No server product or version in responses (gunicorn sends "Server: gunicorn" otherwise).
gunicorn.http.wsgi.SERVER = "urban"


def when_ready(server):
    """``python -m app.serve`` (``make serve``): say where to open the browser once the workers start."""
    url = os.environ.get("URBAN_SERVE_URL")
    if url:
        print(
            f"\nUrban Conditions Service is running: open {url} in your browser "
            f"(dashboard {url}dashboard/, API docs {url}api/v1/docs). Ctrl-C stops it.\n",
            file=sys.stderr,
            flush=True,
        )


def on_starting(server):
    """Refuse a debug app in production before any worker starts."""
    if os.environ.get("URBAN_ENV", "production") == "production" and os.environ.get("FLASK_DEBUG") in {
        "1",
        "true",
    }:
        raise SystemExit("FLASK_DEBUG is set with URBAN_ENV=production: debug is never allowed in production")
