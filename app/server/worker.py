"""gunicorn workers whose own error answers use the API's one JSON error shape (``worker_class``).

gunicorn rejects some requests before Flask sees them — a request line over ``limit_request_line`` (414),
too many or too large header fields (431), a malformed request line, header or chunked body (400) — and
answers them with an HTML page. :meth:`JsonErrorsMixin.handle_error` writes instead
``{"error": code, "message": text}`` with ``Cache-Control: no-store``, ``X-Content-Type-Options: nosniff``,
an ``X-Request-Id``, the CORS headers and the ``X-RateLimit-*`` headers of the client's failed-authentication
budget (read from the shared rate-limit store; a static full budget if the store cannot be read).
Messages are fixed texts: no request value is repeated.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from datetime import datetime

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi as gunicorn_wsgi
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.workers.gthread import ThreadWorker as _ThreadWorker
from gunicorn.workers.sync import SyncWorker as _SyncWorker

from app.web.redact import echo, redact_text

_REASONS = {
    400: "Bad Request",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}
_EXPOSED = "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, Retry-After, X-Request-Id"

#: exceptions raised while reading a request: the client's fault (gunicorn's own list)
_CLIENT_ERRORS = tuple(
    getattr(http_errors, name)
    for name in (
        "InvalidRequestLine",
        "InvalidRequestMethod",
        "InvalidHTTPVersion",
        "InvalidHeader",
        "InvalidHeaderName",
        "LimitRequestLine",
        "LimitRequestHeaders",
        "InvalidProxyLine",
        "InvalidProxyHeader",
        "ForbiddenProxyRequest",
        "InvalidSchemeHeaders",
        "UnsupportedTransferCoding",
        "ObsoleteFolding",
        "ExpectationFailed",
        "InvalidH2CPreface",
        "InvalidChunkSize",
        "ChunkMissingTerminator",
        "InvalidChunkExtension",
        "NoMoreData",
    )
    if hasattr(http_errors, name)
)


def classify(exc: BaseException) -> tuple[int, str, str]:
    """(status, error code, message) for an exception raised while gunicorn handled a request.

    Examples
    --------
    >>> classify(http_errors.LimitRequestLine(5000, 4094))
    (414, 'uri_too_long', 'the request line is over the limit of 4094 bytes')
    >>> classify(http_errors.InvalidRequestLine("GARBAGE"))[:2]
    (400, 'invalid_request')
    >>> classify(RuntimeError("boom"))[:2]
    (500, 'internal_error')
    """
    if isinstance(exc, http_errors.LimitRequestLine):
        return 414, "uri_too_long", f"the request line is over the limit of {exc.max_size or 4094} bytes"
    if isinstance(exc, http_errors.LimitRequestHeaders):
        return 431, "headers_too_large", "too many header fields, or a header field over the size limit"
    if not isinstance(exc, _CLIENT_ERRORS):
        return 500, "internal_error", "unexpected error; it has been logged"
    if isinstance(exc, (http_errors.InvalidHeader, http_errors.InvalidHeaderName)):
        name = getattr(exc, "hdr", "")
        named = f" {echo(name)}" if isinstance(name, str) and name else ""
        return 400, "invalid_request", f"malformed header field{named}"
    messages = {
        "InvalidRequestLine": "malformed request line",
        "InvalidRequestMethod": "invalid method",
        "InvalidHTTPVersion": "unsupported HTTP version",
        "ObsoleteFolding": "obsolete header line folding",
        "UnsupportedTransferCoding": "unsupported Transfer-Encoding",
        "ExpectationFailed": "unsupported Expect",
        "InvalidChunkSize": "malformed chunked body",
        "ChunkMissingTerminator": "malformed chunked body",
        "InvalidChunkExtension": "malformed chunked body",
        "NoMoreData": "incomplete request",
    }
    return 400, "invalid_request", messages.get(type(exc).__name__, "the request is malformed")


def _client_ip(req, addr, hops: int) -> str:
    """The client address: the socket peer, or with ``hops`` trusted proxies the matching
    ``X-Forwarded-For`` entry (as werkzeug's ProxyFix does for requests that reach the app)."""
    peer = (addr or ("",))[0] if isinstance(addr, tuple) else str(addr or "")
    if hops and req is not None:
        for name, value in getattr(req, "headers", []):
            if name.upper() == "X-FORWARDED-FOR":
                parts = [p.strip() for p in value.split(",")]
                if len(parts) >= hops and parts[-hops]:
                    return parts[-hops]
    return peer


def _flask_app(wsgi):
    return wsgi if hasattr(wsgi, "test_request_context") and hasattr(wsgi, "extensions") else None


def rate_headers(app, ip: str) -> dict[str, str]:
    """The ``X-RateLimit-*`` headers of ``ip``'s failed-authentication budget, as the app reports them for
    unauthenticated responses. Without the app or its store: the full budget of the default limit."""
    if app is not None:
        try:
            from app.web.ratelimit import peek

            with app.test_request_context("/", environ_base={"REMOTE_ADDR": ip}):
                return peek().headers()
        except Exception:
            pass
    from limits import parse

    spec = app.config.get("AUTH_FAILURE_LIMIT", "30 per minute") if app is not None else "30 per minute"
    item = parse(spec)
    reset = math.ceil(time.time() + item.get_expiry())
    return {
        "X-RateLimit-Limit": str(item.amount),
        "X-RateLimit-Remaining": str(item.amount),
        "X-RateLimit-Reset": str(reset),
    }


def error_bytes(status: int, code: str, message: str, headers: dict[str, str]) -> bytes:
    """A complete HTTP/1.1 response (``Connection: close``) carrying the JSON error."""
    body = {"error": code, "message": message}
    if status >= 500:
        body["requestId"] = headers["X-Request-Id"]
    payload = (json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
        "Server: urban",
        "Connection: close",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


class JsonErrorsMixin:
    """Replaces gunicorn's HTML error page by the API's JSON error (see the module docstring)."""

    def handle_error(self, req, client, addr, exc):
        started = datetime.now()
        status, code, message = classify(exc)
        if status >= 500:
            self.log.exception("Error handling request %s", redact_text(getattr(req, "uri", "") or ""))
        else:
            self.log.warning(
                "Invalid request from ip=%s: %s",
                (addr or ("",))[0] if isinstance(addr, tuple) else addr,
                redact_text(str(exc)),
            )
        app = _flask_app(getattr(self, "wsgi", None))
        config = app.config if app is not None else {}
        ip = _client_ip(req, addr, int(config.get("TRUSTED_PROXIES", 0) or 0))
        headers = {
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "X-Request-Id": uuid.uuid4().hex,
            "Access-Control-Allow-Origin": config.get("CORS_ALLOW_ORIGIN", "*"),
            "Access-Control-Expose-Headers": _EXPOSED,
            **rate_headers(app, ip),
        }
        data = error_bytes(status, code, message, headers)
        if req is not None:
            try:
                environ = default_environ(req, client, self.cfg)
                environ["REMOTE_ADDR"] = ip
                resp = Response(req, client, self.cfg)
                resp.status = f"{status} {_REASONS.get(status, 'Error')}"
                resp.headers = list(headers.items())
                resp.sent = len(data)
                self.log.access(resp, req, environ, datetime.now() - started)
            except Exception:
                self.log.debug("access log entry for an error answer failed")
        try:
            util.write_nonblock(client, data)
        except Exception:
            self.log.debug("Failed to send error message.")


class _Capture:
    """A stand-in socket that keeps what ``sendall`` is given."""

    def __init__(self):
        self.data = b""

    def sendall(self, data):
        self.data += bytes(data)


class CoalescingResponse(Response):
    """gunicorn's response writer, sending the status line and headers together with the first body bytes
    in one ``sendall`` (one system call and one segment instead of two; the client reads the response in
    one go). Bytes on the wire are unchanged. A response without body bytes (HEAD, 304, empty) sends its
    headers at ``close``; a file sent with ``sendfile`` sends them first, as gunicorn does."""

    _pending = b""
    _direct = False

    def send_headers(self):
        if self.headers_sent:
            return
        if self._direct:
            super().send_headers()
            return
        sock, capture = self.sock, _Capture()
        self.sock = capture
        try:
            super().send_headers()
        finally:
            self.sock = sock
        self._pending = capture.data

    def _flush(self):
        if self._pending:
            data, self._pending = self._pending, b""
            util.write(self.sock, data)

    def _emit_body(self, data):
        if self._pending and not self.chunked:
            data, self._pending = self._pending + data, b""
        else:
            self._flush()
        super()._emit_body(data)

    def sendfile(self, respiter):
        self._direct = True
        self._flush()
        return super().sendfile(respiter)

    def close(self):
        if not self.headers_sent:
            self.send_headers()
        self._flush()
        super().close()


class CoalescingMixin:
    """Workers whose requests are answered through :class:`CoalescingResponse` (set after fork, in the
    worker process only: gunicorn's ``wsgi.create`` builds the module's ``Response``)."""

    def init_process(self):
        gunicorn_wsgi.Response = CoalescingResponse
        super().init_process()


class SyncWorker(JsonErrorsMixin, CoalescingMixin, _SyncWorker):
    """gunicorn's ``sync`` worker with JSON error answers (the production worker)."""


class ThreadWorker(JsonErrorsMixin, CoalescingMixin, _ThreadWorker):
    """gunicorn's ``gthread`` worker with JSON error answers (comparison runs of ``make loadtest``)."""
