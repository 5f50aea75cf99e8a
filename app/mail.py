"""Outgoing mail: real SMTP, or an outbox folder of ``.eml`` files for development.

Settings (``app.config``; environment ``URBAN_<NAME>``), documented in ``docs/signup.md``:

``MAIL_BACKEND``   ``"outbox"`` (default: write ``instance/outbox/*.eml`` and log the path) or ``"smtp"``.
``MAIL_HOST``      SMTP host (``localhost``).
``MAIL_PORT``      SMTP port (default 587 for ``starttls``, 465 for ``ssl``, 25 for ``none``).
``MAIL_SECURITY``  ``"starttls"`` (default), ``"ssl"`` (implicit TLS) or ``"none"`` (loopback relays only).
``MAIL_USERNAME``, ``MAIL_PASSWORD``  credentials; no login when the user name is empty.
``MAIL_SENDER``    ``From`` address (``Urban Conditions <no-reply@localhost>``).
``MAIL_TIMEOUT``   seconds for connect and every SMTP command (10).
``MAIL_OUTBOX``    outbox folder (``<instance>/outbox``).

Every failure to hand a message over raises :class:`MailUnavailable`; callers turn it into
503 ``service_unavailable``.
"""

from __future__ import annotations

import logging
import os
import smtplib
import ssl
import uuid
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from datetime import datetime, timezone

from flask import current_app

log = logging.getLogger(__name__)

DEFAULTS = {
    "MAIL_BACKEND": "outbox",
    "MAIL_HOST": "localhost",
    "MAIL_PORT": None,
    "MAIL_SECURITY": "starttls",
    "MAIL_USERNAME": "",
    "MAIL_PASSWORD": "",
    "MAIL_SENDER": "Urban Conditions <no-reply@localhost>",
    "MAIL_TIMEOUT": 10.0,
    "MAIL_OUTBOX": None,
}
_DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}


class MailUnavailable(Exception):
    """The message could not be handed to the mail server (nothing was sent)."""


def build_message(sender, to, subject, text, html, *, now=None):
    """Build a ``multipart/alternative`` message with a plain-text and an HTML part.

    Examples
    --------
    >>> m = build_message("a@x.be", "b@y.be", "Onderwerp", "tekst", "<p>tekst</p>")
    >>> m.get_content_type(), [p.get_content_type() for p in m.iter_parts()]
    ('multipart/alternative', ['text/plain', 'text/html'])
    """
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(now or datetime.now(timezone.utc))
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2].strip(">") or "localhost")
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(text)
    msg.add_alternative(html, subtype="html")
    return msg


class Mail:
    """Flask extension that sends :class:`email.message.EmailMessage` objects.

    Examples
    --------
    >>> mail = Mail()            # created unbound
    >>> # mail.init_app(app); mail.send(build_message(...))
    """

    def __init__(self, app=None):
        if app is not None:
            self.init_app(app)

    def init_app(self, app):
        for key, value in DEFAULTS.items():
            app.config.setdefault(key, value)
        if app.config["MAIL_SECURITY"] not in _DEFAULT_PORTS:
            raise ValueError("MAIL_SECURITY must be one of starttls, ssl, none")
        if app.config["MAIL_BACKEND"] not in ("outbox", "smtp"):
            raise ValueError("MAIL_BACKEND must be 'outbox' or 'smtp'")
        if not app.config["MAIL_OUTBOX"]:
            app.config["MAIL_OUTBOX"] = os.path.join(app.instance_path, "outbox")
        if (
            app.config["MAIL_BACKEND"] == "outbox"
            and app.config.get("ENV") == "production"
            and not app.testing
        ):
            log.warning(
                "MAIL_BACKEND=outbox in production: sign-up mails are written to %s, not sent; "
                "set URBAN_MAIL_BACKEND=smtp and URBAN_MAIL_HOST",
                app.config["MAIL_OUTBOX"],
            )
        app.extensions["mail"] = self

    def send(self, msg, config=None):
        """Hand ``msg`` over (settings from ``config``, default the current app's); raise on failure."""
        config = current_app.config if config is None else config
        if config["MAIL_BACKEND"] == "smtp":
            return _send_smtp(msg, config)
        return _write_outbox(msg, config)


def _send_smtp(msg, config):
    security = config["MAIL_SECURITY"]
    host = config["MAIL_HOST"]
    port = int(config["MAIL_PORT"] or _DEFAULT_PORTS[security])
    timeout = float(config["MAIL_TIMEOUT"])
    try:
        if security == "ssl":
            smtp = smtplib.SMTP_SSL(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            smtp = smtplib.SMTP(host, port, timeout=timeout)
        with smtp:
            if security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if config["MAIL_USERNAME"]:
                smtp.login(config["MAIL_USERNAME"], config["MAIL_PASSWORD"])
            refused = smtp.send_message(msg)
        if refused:
            raise MailUnavailable("the mail server refused the recipient")
    except (OSError, smtplib.SMTPException) as exc:
        # The exception text may quote the server's reply, never the message body.
        log.warning("mail not sent via %s:%s: %s", host, port, type(exc).__name__)
        raise MailUnavailable("the mail server is unavailable") from exc
    log.info("mail sent via %s:%s (%s)", host, port, msg["Message-ID"])


def _write_outbox(msg, config):
    folder = config["MAIL_OUTBOX"]
    try:
        os.makedirs(folder, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        path = os.path.join(folder, f"{stamp}-{uuid.uuid4().hex[:12]}.eml")
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(msg.as_bytes())
        os.replace(tmp, path)
    except OSError as exc:
        raise MailUnavailable("the outbox folder is not writable") from exc
    log.info("mail written to %s", path)
    return path
