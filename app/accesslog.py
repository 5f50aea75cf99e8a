"""gunicorn access log as JSON lines, with secrets removed (``logger_class`` in ``gunicorn.conf.py``).

One object per request: ``time``, ``pid``, ``remote``, ``method``, ``path``, ``query``, ``status``, ``bytes``,
``duration_us``, ``request_id``. Request headers are never logged (so no ``Authorization``), link tokens in
paths and any key-, token- or address-like query value are replaced by ``[redacted]``.
"""

from __future__ import annotations

import json
import os
import re
import time
from urllib.parse import parse_qsl, urlencode

from gunicorn.glogging import Logger

REDACTED = "[redacted]"
_SECRET_NAMES = {"key", "apikey", "api_key", "token", "access_token", "auth", "authorization", "password",
                 "secret", "email", "e-mail", "mail"}
_SECRET_VALUE = re.compile(r"uc_live_|^[A-Za-z0-9_-]{40,}$|@")
_LINK = re.compile(r"(/portal/link/)[^/?#]+")
_KEY_IN_PATH = re.compile(r"uc_live_[A-Za-z0-9]*")


def redact_path(path: str) -> str:
    """The path with link tokens and API keys replaced.

    Examples
    --------
    >>> redact_path("/portal/link/AbC_-1xyz")
    '/portal/link/[redacted]'
    >>> redact_path("/api/v1/uc_live_abc/x")
    '/api/v1/[redacted]/x'
    """
    return _KEY_IN_PATH.sub(REDACTED, _LINK.sub(r"\1" + REDACTED, path or ""))


def redact_query(query: str) -> str:
    """The query string with secret-looking parameters replaced (names kept, order kept).

    Examples
    --------
    >>> redact_query("lat=51.2&lng=4.4&api_key=uc_live_x")
    'lat=51.2&lng=4.4&api_key=%5Bredacted%5D'
    >>> redact_query("locationId=a%40b.be")
    'locationId=%5Bredacted%5D'
    """
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    out = [(name, REDACTED if name.lower() in _SECRET_NAMES or _SECRET_VALUE.search(value) else value)
           for name, value in pairs]
    return urlencode(out)


def entry(status, method, path, query, remote, nbytes, duration_us, request_id) -> str:
    """One access log line (compact JSON, keys in a fixed order)."""
    return json.dumps({
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pid": os.getpid(), "remote": remote, "method": method,
        "path": redact_path(path), "query": redact_query(query), "status": status,
        "bytes": nbytes, "duration_us": duration_us, "request_id": request_id,
    }, ensure_ascii=True, separators=(",", ":"))


class JsonAccessLogger(Logger):
    """gunicorn's logger with :meth:`access` replaced by :func:`entry` lines."""

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        try:
            status = resp.status
            status = int(status.split(None, 1)[0]) if isinstance(status, str) else int(status)
            request_id = ""
            for name, value in resp.headers:
                if name.lower() == "x-request-id":
                    request_id = value
            line = entry(status, environ.get("REQUEST_METHOD", "-"), environ.get("PATH_INFO", ""),
                         environ.get("QUERY_STRING", ""), environ.get("REMOTE_ADDR", "-"),
                         getattr(resp, "sent", None), request_time.seconds * 1_000_000 + request_time.microseconds,
                         request_id)
            self.access_log.info(line)
        except Exception:
            self.exception("access log entry failed")
