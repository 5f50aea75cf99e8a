"""gunicorn workers whose own error answers are the app's answers (``worker_class``).

gunicorn rejects some requests before Flask sees them — a request line over ``limit_request_line`` (414),
too many or too large header fields (431), a malformed request line, header or chunked body (400) — and
answers them with an HTML page. :meth:`JsonErrorsMixin.handle_error` answers instead with what the app
answers for the same error: :func:`app.web.errors.error_response` (the one JSON error shape,
``Cache-Control: no-store``) finished by :func:`app.web.conventions.finalize` (``X-Request-Id``,
``nosniff``, the client's ``X-RateLimit-*`` budget and the API's CORS headers: no route is known yet, so
the answer is an API answer). Messages are fixed texts: no request value is repeated.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from http import HTTPStatus

from flask import g
from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.workers.gthread import ThreadWorker as _ThreadWorker
from gunicorn.workers.sync import SyncWorker as _SyncWorker

from app.web.conventions import finalize
from app.web.errors import (
    ApiError,
    HeadersTooLarge,
    InternalError,
    InvalidRequest,
    UriTooLong,
    error_response,
)
from app.web.redact import echo, redact_text

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
_MESSAGES = {
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


def error_for(exc: BaseException) -> ApiError:
    """The API error of an exception raised while gunicorn handled a request.

    Examples
    --------
    >>> e = error_for(http_errors.LimitRequestLine(5000, 4094))
    >>> (e.status, e.code, e.message)
    (414, 'uri_too_long', 'the request line is over the limit of 4094 bytes')
    >>> error_for(http_errors.InvalidRequestLine("GARBAGE")).code, error_for(RuntimeError("boom")).status
    ('invalid_request', 500)
    """
    if isinstance(exc, http_errors.LimitRequestLine):
        return UriTooLong(f"the request line is over the limit of {exc.max_size or 4094} bytes")
    if isinstance(exc, http_errors.LimitRequestHeaders):
        return HeadersTooLarge("too many header fields, or a header field over the size limit")
    if not isinstance(exc, _CLIENT_ERRORS):
        return InternalError()
    if isinstance(exc, (http_errors.InvalidHeader, http_errors.InvalidHeaderName)):
        name = getattr(exc, "hdr", "")
        named = f" {echo(name)}" if isinstance(name, str) and name else ""
        return InvalidRequest(f"malformed header field{named}")
    return InvalidRequest(_MESSAGES.get(type(exc).__name__, "the request is malformed"))


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


def answer(app, err: ApiError, ip: str):
    """The app's response to ``err`` for a client at ``ip``, as every response of the app is finished."""
    with app.test_request_context("/api/", environ_base={"REMOTE_ADDR": ip}):
        g.request_id = uuid.uuid4().hex
        return finalize(error_response(err))


def http_bytes(response) -> bytes:
    """A complete HTTP/1.1 response closing the connection."""
    lines = [
        f"HTTP/1.1 {response.status_code} {HTTPStatus(response.status_code).phrase}",
        "Server: urban",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + response.get_data()


class JsonErrorsMixin:
    """Replaces gunicorn's HTML error page by the app's JSON error (see the module docstring)."""

    def handle_error(self, req, client, addr, exc):
        app = getattr(self, "wsgi", None)
        if not hasattr(app, "test_request_context"):  # not our Flask app: gunicorn's own answer
            return super().handle_error(req, client, addr, exc)  # type: ignore[misc]
        started = datetime.now()
        err = error_for(exc)
        if err.status >= 500:
            self.log.exception("Error handling request %s", redact_text(getattr(req, "uri", "") or ""))
        else:
            self.log.warning(
                "Invalid request from ip=%s: %s",
                (addr or ("",))[0] if isinstance(addr, tuple) else addr,
                redact_text(str(exc)),
            )
        ip = _client_ip(req, addr, int(app.config.get("TRUSTED_PROXIES", 0) or 0))
        try:
            response = answer(app, err, ip)
        except Exception:  # the app cannot answer: gunicorn's own answer, never nothing
            self.log.exception("the app's answer to a rejected request failed")
            return super().handle_error(req, client, addr, exc)  # type: ignore[misc]
        data = http_bytes(response)
        if req is not None:
            try:
                environ = default_environ(req, client, self.cfg)
                environ["REMOTE_ADDR"] = ip
                resp = Response(req, client, self.cfg)
                resp.status = f"{response.status_code} {HTTPStatus(response.status_code).phrase}"
                resp.headers = list(response.headers.items())
                resp.sent = len(data)
                self.log.access(resp, req, environ, datetime.now() - started)
            except Exception:
                self.log.debug("access log entry for an error answer failed")
        try:
            util.write_nonblock(client, data)
        except Exception:
            self.log.debug("Failed to send error message.")


class ReopenBetweenRequestsMixin:
    """``SIGUSR1`` (log rotation) reopens the log files in the worker's main loop, between requests, not in
    the signal handler: gunicorn's handler closes the file the interrupted code may be writing to
    ("reentrant call inside BufferedWriter": a logging error, the reopen left half done). The wake-up fd
    gunicorn gives the signal module ends the loop's wait at once."""

    _reopen_pending = False

    def handle_usr1(self, sig, frame):
        self._reopen_pending = True

    def notify(self):
        if self._reopen_pending:
            self._reopen_pending = False
            self.log.reopen_files()
        super().notify()


class SyncWorker(JsonErrorsMixin, ReopenBetweenRequestsMixin, _SyncWorker):
    """gunicorn's ``sync`` worker with JSON error answers (the production worker)."""


class ThreadWorker(JsonErrorsMixin, ReopenBetweenRequestsMixin, _ThreadWorker):
    """gunicorn's ``gthread`` worker with JSON error answers (comparison runs of ``make loadtest``)."""
