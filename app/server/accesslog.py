"""gunicorn access log as JSON lines, with secrets removed (``logger_class`` in ``gunicorn.conf.py``).

One object per request: ``time``, ``pid``, ``remote``, ``method``, ``path``, ``query``, ``status``, ``bytes``,
``duration_us``, ``request_id``. Request headers are never logged (so no ``Authorization``), link tokens in
paths and any key-, token- or address-like query value are replaced by ``[redacted]``.
"""

from __future__ import annotations

import json
import logging
import os
import time

from gunicorn.glogging import Logger

from app.web.redact import redact_path, redact_query


class _Stamp:
    """The epoch second last formatted and its ISO text (formatted once per second)."""

    __slots__ = ("second", "text")

    def __init__(self) -> None:
        self.second, self.text = 0, ""


_stamp = _Stamp()
_pid = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _pid.__setitem__(0, os.getpid()))


def _now_iso() -> str:
    second = int(time.time())
    if _stamp.second != second:
        _stamp.second, _stamp.text = second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return _stamp.text


#: the line's encoder, made once (``json.dumps`` with keyword arguments makes one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def entry(status, method, path, query, remote, nbytes, duration_us, request_id) -> str:
    """One access log line (compact JSON, keys in a fixed order)."""
    return _ENCODER.encode(
        {
            "time": _now_iso(),
            "pid": _pid[0],
            "remote": remote,
            "method": method,
            "path": redact_path(path),
            "query": redact_query(query),
            "status": status,
            "bytes": nbytes,
            "duration_us": duration_us,
            "request_id": request_id,
        }
    )


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
            line = entry(
                status,
                environ.get("REQUEST_METHOD", "-"),
                environ.get("PATH_INFO", ""),
                environ.get("QUERY_STRING", ""),
                environ.get("REMOTE_ADDR", "-"),
                getattr(resp, "sent", None),
                request_time.seconds * 1_000_000 + request_time.microseconds,
                request_id,
            )
            self._write(line)
        except Exception:
            self.exception("access log entry failed")

    def _write(self, line: str) -> None:
        """``access_log.info(line)`` without building a LogRecord when only gunicorn's own stream handlers
        (format: the bare message, no level, no filter) would see it: the line goes straight to their
        streams. Any other set-up (``--log-config``, syslog, propagation to root) goes through logging.
        gunicorn marks its own handlers ``_gunicorn``: the gain is in docs/operations.md (Access log), and
        tests/app/test_accesslog.py::test_gunicorn_marks_its_own_access_handlers pins the mark."""
        log = self.access_log
        handlers = log.handlers
        direct = (
            bool(handlers)
            and not log.propagate
            and not log.filters
            and all(
                getattr(h, "_gunicorn", False)
                and getattr(h, "stream", None) is not None
                and not h.filters
                and h.level == logging.NOTSET
                for h in handlers
            )
        )
        if not direct:
            log.info(line)
            return
        for handler in handlers:
            handler.acquire()
            try:
                handler.stream.write(line + handler.terminator)
                handler.flush()
            finally:
                handler.release()
