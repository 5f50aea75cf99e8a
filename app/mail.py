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

Headers never carry a user's value unchecked (docs/security.md, "Mail built from user data"): the subject goes
through :func:`header_text`, addresses through :func:`check_address`, ``List-Unsubscribe`` is written as
plain ASCII, and :func:`checked_bytes` reads the serialised message back with our own parser and refuses it
unless its header block is exactly the headers that were set. What is sent (or written to the outbox) is
those checked bytes. :meth:`Mail.init_app` runs :func:`self_test` and refuses to start when a hostile value
could still become a header line on this Python.

Every failure to hand a message over raises :class:`MailUnavailable`; callers turn it into
503 ``service_unavailable``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import smtplib
import ssl
import unicodedata
import uuid
from datetime import datetime, timezone
from email.header import decode_header, make_header
from email.headerregistry import HeaderRegistry, UnstructuredHeader
from email.message import EmailMessage
from email.policy import default as _default_policy
from email.utils import format_datetime, make_msgid

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
#: Longest subject (characters, after :func:`header_text`); a longer one is cut with "…".
SUBJECT_LIMIT = 180
#: RFC 5322 line limit (without CR LF)
_MAX_LINE = 998


class MailUnavailable(Exception):
    """The message could not be handed to the mail server (nothing was sent)."""


class UnsafeMessage(MailUnavailable):
    """A header would not be exactly what was set (a value or the serialised message failed a check);
    nothing was sent."""


# -- header values -----------------------------------------------------------------------------------------

#: Unicode categories never kept in a header: controls (CR, LF, NUL, TAB, U+0085 ...), format characters
#: (bidi overrides, zero-width), line and paragraph separators (U+2028, U+2029), surrogates, private use.
_DROPPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
#: the opening of an RFC 2047 encoded word; a header parser would decode what follows
_ENCODED_WORD_OPEN = "=?"


def header_text(value: str, limit: int = SUBJECT_LIMIT) -> str:
    """``value`` fit for a header's text: every control, format, line or paragraph separator character is
    a space, runs of white space are one space, an encoded-word opening ``=?`` becomes ``= ?`` (so no
    parser decodes an encoded word out of it), and it is cut to ``limit`` characters.

    Examples
    --------
    >>> header_text("Stad\\r\\nBcc: x@y.be")
    'Stad Bcc: x@y.be'
    >>> header_text("=?utf-8?q?x=0D=0ABcc:_x@y.be?=")
    '= ?utf-8?q?x=0D=0ABcc:_x@y.be?='
    >>> header_text("a\\u2028b\\u0085c\\x00d"), header_text("x" * 10, limit=5)
    ('a b c d', 'xxxx…')
    """
    text = "".join(" " if unicodedata.category(c) in _DROPPED else c for c in str(value))
    text = " ".join(text.split()).replace(_ENCODED_WORD_OPEN, "= ?")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


#: an address as it may stand in a header: printable ASCII without space, quotes, brackets, commas or
#: semicolons; one "@" with a non-empty local part and domain
_ADDRESS = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@[A-Za-z0-9.-]{1,253}")


def check_address(address: str) -> str:
    """``address`` when it is a bare address that is safe in a header; :class:`UnsafeMessage` otherwise.

    Examples
    --------
    >>> check_address("an@stad.be")
    'an@stad.be'
    >>> check_address("=?utf-8?q?a=0D=0A?=@stad.be")
    Traceback (most recent call last):
    ...
    app.mail.UnsafeMessage: the address is not one a mail header can carry
    """
    if (
        not isinstance(address, str)
        or not _ADDRESS.fullmatch(address)
        or _ENCODED_WORD_OPEN in address
        or ".." in address
    ):
        raise UnsafeMessage("the address is not one a mail header can carry")
    return address


_SENDER = re.compile(r"([^<>]*) <([^<>]*)>|([^<>]*)")


def sender_address(sender: str) -> str:
    """The address of a sender ``Name <address>`` or ``address``, whose display name :func:`header_text`
    leaves unchanged and holds no quote, bracket, comma, colon, semicolon or "@", and whose address
    :func:`check_address` accepts; :class:`UnsafeMessage` otherwise.

    Examples
    --------
    >>> sender_address("Urban Conditions <no-reply@localhost>"), sender_address("a@b.be")
    ('no-reply@localhost', 'a@b.be')
    """
    found = _SENDER.fullmatch(sender) if isinstance(sender, str) else None
    if found is None:
        raise UnsafeMessage("the sender is not 'Name <address>' or an address")
    name, address = (found.group(1), found.group(2)) if found.group(2) is not None else ("", found.group(3))
    if name != header_text(name) or any(c in name for c in '"\\,;:@()[]'):
        raise UnsafeMessage("the sender's display name is not plain text")
    return check_address(address)


def check_sender(sender: str) -> str:
    """The ``MAIL_SENDER`` setting when :func:`sender_address` accepts it; ``ValueError`` otherwise (a
    setting: the app refuses to start)."""
    try:
        sender_address(sender)
    except UnsafeMessage as exc:
        raise ValueError(f"MAIL_SENDER must be 'Name <address>' or an address: {exc}") from None
    return sender


class _VerbatimHeader(UnstructuredHeader):
    """A header written exactly as given, on one line: never folded nor RFC 2047-encoded. Only values of
    printable ASCII are accepted (``List-Unsubscribe`` must stay plain ``<https://...>``, RFC 2369)."""

    max_count = 1

    @classmethod
    def parse(cls, value, kwds):
        value = str(value)
        if not re.fullmatch(r"[ -~]+", value):
            raise UnsafeMessage(f"{kwds.get('name', 'the header')} must be printable ASCII")
        super().parse(value, kwds)
        kwds["decoded"] = value

    def fold(self, *, policy):
        line = f"{self.name}: {self}"
        if len(line) > _MAX_LINE:
            raise UnsafeMessage(f"the {self.name} header is longer than a mail line may be")
        return line + policy.linesep


_registry = HeaderRegistry()
for _name in ("list-unsubscribe", "list-unsubscribe-post"):
    # a mix-in, as the registry's own header classes: it adds BaseHeader itself (typeshed does not say so)
    _registry.map_to_type(_name, _VerbatimHeader)  # type: ignore[arg-type]
#: the standard policy (78-column folding, RFC 2047 for non-ASCII text) with the verbatim list headers
POLICY = _default_policy.clone(header_factory=_registry)
#: RFC 8058: the one value of ``List-Unsubscribe-Post``
ONE_CLICK = "List-Unsubscribe=One-Click"


def build_message(sender, to, subject, text, html, *, now=None, unsubscribe_url=None):
    """Build a ``multipart/alternative`` message with a plain-text and an HTML part.

    ``subject`` passes through :func:`header_text`, ``to`` through :func:`check_address` and ``sender``
    through :func:`sender_address` (:class:`UnsafeMessage` when they fail). ``unsubscribe_url`` (an absolute
    ``http(s)`` URL of printable ASCII) adds ``List-Unsubscribe: <url>``, and for an ``https`` URL the
    RFC 8058 one-click ``List-Unsubscribe-Post``.

    Examples
    --------
    >>> m = build_message("a@x.be", "b@y.be", "Onderwerp", "tekst", "<p>tekst</p>")
    >>> m.get_content_type(), [p.get_content_type() for p in m.iter_parts()]
    ('multipart/alternative', ['text/plain', 'text/html'])
    """
    from_address = sender_address(sender)
    msg = EmailMessage(policy=POLICY)
    try:
        msg["From"] = sender
        msg["To"] = check_address(to)
        msg["Subject"] = header_text(subject)
        msg["Date"] = format_datetime(now or datetime.now(timezone.utc))
        msg["Message-ID"] = make_msgid(domain=from_address.rpartition("@")[2])
        msg["Auto-Submitted"] = "auto-generated"
        if unsubscribe_url is not None:
            if not re.fullmatch(r"https?://[!-~]+", unsubscribe_url) or any(
                c in unsubscribe_url for c in "<>"
            ):
                raise UnsafeMessage("the unsubscribe URL must be an absolute http(s) URL of printable ASCII")
            msg["List-Unsubscribe"] = f"<{unsubscribe_url}>"
            if unsubscribe_url.startswith("https://"):
                msg["List-Unsubscribe-Post"] = ONE_CLICK
        msg.set_content(text)
        msg.add_alternative(html, subtype="html")
    except (ValueError, TypeError) as exc:  # the email package refused a value (UnicodeError included)
        raise UnsafeMessage(f"a value was refused: {type(exc).__name__}") from None
    return msg


# -- the check of what is sent -----------------------------------------------------------------------------

_FIELD_NAME = re.compile(rb"([!-9;-~]+):")


def header_fields(data: bytes) -> list[tuple[str, str]]:
    """(name, unfolded raw value) of each field in the top header block of a serialised message (CR LF
    line ends), by our own reading of RFC 5322; :class:`UnsafeMessage` when the block is not well formed
    (a bare CR or LF, a control or non-ASCII byte, a line over 998 characters, a line that is neither a
    field nor a continuation)."""
    head, blank, _body = data.partition(b"\r\n\r\n")
    if not blank:
        raise UnsafeMessage("the message has no end of its header block")
    fields: list[list[bytes]] = []
    for line in head.split(b"\r\n"):
        if len(line) > _MAX_LINE or any(not (32 <= b < 127 or b == 9) for b in line):
            raise UnsafeMessage("a header line holds a control character, non-ASCII or is too long")
        if line[:1] in (b" ", b"\t"):
            if not fields:
                raise UnsafeMessage("the header block starts with a continuation line")
            fields[-1][1] += line
            continue
        found = _FIELD_NAME.match(line)
        if found is None:
            raise UnsafeMessage("a header line is not a field")
        fields.append([found.group(1), line[found.end() :]])
    return [(name.decode(), value.decode().strip()) for name, value in fields]


def _decoded(raw: str) -> str:
    return str(make_header(decode_header(raw)))


def _without_space(text: str) -> str:
    """``text`` without white space: the folder may move or drop a space between encoded words."""
    return "".join(text.split())


def checked_bytes(msg: EmailMessage) -> bytes:
    """The message serialised for SMTP (CR LF), after our own check that its header block holds exactly
    the fields that were set, in order, each decoding to the value that was set and to no control or
    line-separator character; :class:`UnsafeMessage` otherwise (also when the email package refuses to
    write a header)."""
    try:
        data = msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))
    except (ValueError, TypeError, UnicodeError) as exc:  # e.g. email.errors.HeaderWriteError
        raise UnsafeMessage(f"the message could not be written: {type(exc).__name__}") from None
    fields = header_fields(data)
    expected = list(msg.items())
    if [n.lower() for n, _ in fields] != [n.lower() for n, _ in expected]:
        raise UnsafeMessage("the written headers are not the headers that were set")
    for (name, raw), (_name, value) in zip(fields, expected):
        try:
            decoded = _decoded(raw)
        except Exception:  # noqa: BLE001 - a value the decoder cannot read is not the value we set
            raise UnsafeMessage(f"the {name} header cannot be read back") from None
        if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in decoded) or _without_space(
            decoded
        ) != _without_space(str(value)):
            raise UnsafeMessage(f"the {name} header does not read back as the value that was set")
    return data


# -- the self-test at start-up -----------------------------------------------------------------------------

#: what an attacker puts where user text reaches a header: raw line breaks, RFC 2047 encoded CR LF (Q and
#: B, lower and upper case, after a long word so the folder re-encodes it), Unicode line separators, NUL
HOSTILE_TEXTS = (
    "x\r\nBcc: probe@example.invalid",
    "x\nBcc: probe@example.invalid",
    "x\rBcc: probe@example.invalid",
    "=?utf-8?q?x=0D=0ABcc:_probe@example.invalid?=",
    "=?UTF-8?Q?x=0d=0aBcc=3A_probe=40example.invalid?=",
    "=?utf-8?b?eA0KQmNjOiBwcm9iZUBleGFtcGxlLmludmFsaWQ=?=",
    "Stad " + "x" * 80 + " =?utf-8?q?x=0D=0ABcc:_probe@example.invalid?=",
    "Stad =?utf-8?q?=0D=0A?= =?utf-8?q?Bcc:_probe@example.invalid?=",
    "x\u2028Bcc: probe@example.invalid",
    "x\u2029Bcc: probe@example.invalid",
    "x\u0085Bcc: probe@example.invalid",
    "x\x00Bcc: probe@example.invalid",
    "x\x0b\x0c\x1c\x1d\x1eBcc: probe@example.invalid",
    "\ud800 lone surrogate",
    "é" * 400 + " Bcc: probe@example.invalid",
)


def _raw_message(subject: str) -> EmailMessage:
    """A message with ``subject`` set straight through the email package (none of our value checks)."""
    msg = EmailMessage(policy=POLICY)
    msg["From"] = "probe@example.invalid"
    msg["To"] = "probe@example.invalid"
    msg["Subject"] = subject
    msg.set_content("probe")
    return msg


@functools.cache
def self_test() -> bool:
    """Check that no hostile text becomes a header line on this Python: each of :data:`HOSTILE_TEXTS`
    built by :func:`build_message` must pass :func:`checked_bytes` with exactly the fields that were set, and
    set straight through the email package it must be refused by it or by :func:`checked_bytes` unless the
    result has no extra field. Raises ``RuntimeError`` otherwise; returns whether the email package itself
    refuses them (CVE-2024-6923 fixed: 3.11.10+, 3.12.5+, 3.13+ or a distribution backport), with a
    warning (once per process) when it does not."""
    from email.parser import BytesHeaderParser

    library_safe = True
    for text in HOSTILE_TEXTS:
        try:
            msg = build_message(
                "probe@example.invalid", "probe@example.invalid", f"Alert for {text}", "x", "x"
            )
            data = checked_bytes(msg)
        except UnsafeMessage as exc:
            raise RuntimeError(
                f"outgoing mail refuses a hostile subject it should have cleaned: {exc}"
            ) from None
        if BytesHeaderParser(policy=POLICY).parsebytes(data).get_all("Bcc"):
            raise RuntimeError("a hostile subject became a Bcc header in outgoing mail")
        try:
            raw = _raw_message(text)
            data = raw.as_bytes(policy=raw.policy.clone(linesep="\r\n"))
        except (ValueError, TypeError, UnicodeError):
            continue  # the email package refused it
        injected = bool(BytesHeaderParser(policy=POLICY).parsebytes(data).get_all("Bcc"))
        library_safe = library_safe and not injected
        try:
            checked_bytes(raw)
        except UnsafeMessage:
            continue
        if injected:
            raise RuntimeError("the mail header check let a hostile header line through")
    if not library_safe:
        log.warning(
            "this Python's email package writes RFC 2047-encoded line breaks into headers (CVE-2024-6923); "
            "our own header checks hold, but use a Python with the fix (make install picks one)"
        )
    return library_safe


# -- sending -----------------------------------------------------------------------------------------------


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
        check_sender(app.config["MAIL_SENDER"])
        self_test()
        if not app.config["MAIL_OUTBOX"]:
            app.config["MAIL_OUTBOX"] = os.path.join(app.instance_path, "outbox")
        if app.config["MAIL_BACKEND"] == "outbox" and not app.config.get("COMMANDS_ONLY"):
            log.info(
                "MAIL_BACKEND=outbox: mail is not sent; each message is written to %s (its path is logged)",
                app.config["MAIL_OUTBOX"],
            )
        if (
            app.config["MAIL_BACKEND"] == "outbox"
            and app.config.get("ENV") == "production"
            and not app.testing
            and not app.config.get("COMMANDS_ONLY")  # admin commands send no mail
        ):
            log.warning(
                "MAIL_BACKEND=outbox in production: sign-up mails are written to %s, not sent; "
                "set URBAN_MAIL_BACKEND=smtp and URBAN_MAIL_HOST",
                app.config["MAIL_OUTBOX"],
            )
        app.extensions["mail"] = self

    def send(self, msg, config=None):
        """Hand ``msg`` over (settings from ``config``, default the current app's); raise on failure.
        Only the bytes :func:`checked_bytes` passed are sent."""
        config = current_app.config if config is None else config
        try:
            data = checked_bytes(msg)
        except UnsafeMessage as exc:  # the reason names a header, never its value
            log.warning("mail not sent (%s): %s", msg.get("Message-ID", "no id"), exc)
            raise
        if config["MAIL_BACKEND"] == "smtp":
            return _send_smtp(msg, data, config)
        return _write_outbox(data, config)


def _envelope(msg) -> tuple[str, list[str]]:
    """(sender, recipients) of the envelope: the addresses of ``From`` and ``To`` only."""
    return (
        msg["From"].addresses[0].addr_spec,
        [address.addr_spec for address in msg["To"].addresses],
    )


def _send_smtp(msg, data, config):
    security = config["MAIL_SECURITY"]
    host = config["MAIL_HOST"]
    port = int(config["MAIL_PORT"] or _DEFAULT_PORTS[security])
    timeout = float(config["MAIL_TIMEOUT"])
    sender, recipients = _envelope(msg)
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
            refused = smtp.sendmail(sender, recipients, data)
        if refused:
            raise MailUnavailable("the mail server refused the recipient")
    except (OSError, smtplib.SMTPException) as exc:
        # The exception text may quote the server's reply, never the message body.
        log.warning("mail not sent via %s:%s: %s", host, port, type(exc).__name__)
        raise MailUnavailable("the mail server is unavailable") from exc
    log.info("mail sent via %s:%s (%s)", host, port, msg["Message-ID"])


def _write_outbox(data, config):
    folder = config["MAIL_OUTBOX"]
    try:
        os.makedirs(folder, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        path = os.path.join(folder, f"{stamp}-{uuid.uuid4().hex[:12]}.eml")
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise MailUnavailable("the outbox folder is not writable") from exc
    log.info("mail written to %s", path)
    return path
