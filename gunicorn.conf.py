"""gunicorn settings for the Urban Conditions Service (``python -m app.serve`` / ``make serve``).

- Sync workers: requests are short, CPU-bound NumPy work plus one SQLite statement; on a 2-core machine
  ``WEB_CONCURRENCY`` (default 4) sync workers keep both cores busy while one waits on SQLite.
- ``preload_app``: the snapshot is loaded once in the master and shared copy-on-write by the workers. No
  SQLite connection exists in the master: the account store is opened per request, after fork.
- Access log: one JSON object per line, without the Authorization header (keys never reach a log).
"""

import os

wsgi_app = "wsgi:app"
bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "4"))
worker_class = "sync"
preload_app = True
timeout = 30
graceful_timeout = 20
keepalive = 2
limit_request_line = 4094
limit_request_fields = 50
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
access_log_format = (
    '{"time":"%(t)s","pid":"%(p)s","remote":"%(h)s","method":"%(m)s","path":"%(U)s","query":"%(q)s",'
    '"status":%(s)s,"bytes":"%(B)s","duration_us":%(D)s,"request_id":"%({x-request-id}o)s"}'
)
