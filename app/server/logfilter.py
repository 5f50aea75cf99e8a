"""Log redaction: link tokens and API keys (in any encoding, :func:`app.web.redact.redact_text`) are removed from
every log record of the process — werkzeug and gunicorn request lines, gunicorn's error log, the app's own log."""

from __future__ import annotations

import logging

from app.web.redact import redact_text

LOGGERS = ("werkzeug", "gunicorn.access", "gunicorn.error")


def redact(text):
    """Replace the token in ``/portal/link/<token>`` (and any API key) by ``[redacted]``.

    Examples
    --------
    >>> redact('"GET /portal/link/AbC_-1 HTTP/1.1" 200')
    '"GET /portal/link/[redacted] HTTP/1.1" 200'
    """
    return redact_text(text)


class TokenRedactor(logging.Filter):
    """Rewrites a record's message (with its arguments applied) when it contains a link token."""

    def filter(self, record):
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is left for the handler to report
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if isinstance(record.args, dict):  # gunicorn's access logger passes a dict of atoms
            for k, v in list(record.args.items()):
                if isinstance(v, str):
                    record.args[k] = redact(v)
        return True


_FILTER = TokenRedactor()


def _redacting_factory(factory):
    """A log record factory: every record of the process (the app's loggers, libraries, gunicorn) leaves
    it with keys and link tokens replaced, whichever logger or handler it then reaches."""

    def make(*args, **kwargs):
        record = factory(*args, **kwargs)
        _FILTER.filter(record)
        return record

    make.redacts = True
    return make


def install():
    """Attach one redactor to each server logger and to the record factory (idempotent)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, TokenRedactor) for f in logger.filters):
            logger.addFilter(TokenRedactor())
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "redacts", False):
        logging.setLogRecordFactory(_redacting_factory(factory))
