"""Secrets out of logs and error messages: API keys, link tokens, addresses and long token-like values.

One helper for every place that writes request data somewhere a person reads it: the JSON access log
(:mod:`app.server.accesslog`), the werkzeug/gunicorn log filter (:mod:`app.server.logfilter`), gunicorn's own error
answers (:mod:`app.server.worker`) and every error message (:func:`echo`, :func:`redact_path`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

REDACTED = "[redacted]"
#: Longest request value an error message repeats (longer ones are never echoed).
ECHO_LIMIT = 32

_SECRET_NAMES = {
    "key",
    "apikey",
    "api_key",
    "token",
    "access_token",
    "auth",
    "authorization",
    "password",
    "secret",
    "email",
    "e-mail",
    "mail",
}


def _any_encoding(text: str) -> str:
    """A pattern matching ``text`` with each character as itself or escaped: percent-encoded (also
    double-encoded, ``%255F``), ``\\xHH`` or ``\\u00HH`` (as log lines and reprs show bytes, with their
    backslashes escaped again or not). Used with
    IGNORECASE, so mixed case and lower/upper hex digits match too."""
    parts = []
    for ch in text:
        hh = f"{ord(ch):02x}"
        parts.append(rf"(?:{re.escape(ch)}|%(?:25)*{hh}|\\+x{hh}|\\+u00{hh})")
    return "".join(parts)


#: a character of a key's body in any of those encodings (any percent-escape counts: over-redaction is fine)
_BODY_CHAR = r"(?:[A-Za-z0-9]|%(?:25)*[0-9A-Fa-f]{2}|\\+x[0-9A-Fa-f]{2}|\\+u00[0-9A-Fa-f]{2})"
_KEY = re.compile(_any_encoding("uc_live_") + _BODY_CHAR + "*", re.IGNORECASE)
#: paths whose next segment is a secret: a sign-in link's token, an alert's unsubscribe token, a calendar
#: feed's token
SECRET_PATHS = (("portal", "link"), ("dashboard", "unsubscribe"), ("calendar",))


def _secret_path(slash: str, word) -> re.Pattern:
    """``(<a secret path, each slash repeated or not>)<its secret segment>``: the token is every character
    up to the next slash, query, fragment, space, quote or ``&`` (in an escaped path that includes any
    escaped slash: over-redaction is fine)."""
    slashes = f"(?:{slash})+"
    paths = "|".join(slashes + slashes.join(word(w) for w in words) + slashes for words in SECRET_PATHS)
    return re.compile(f"({paths})" + r"[^/?#\s\"'&]+", re.IGNORECASE)


def _secret_param(separator: str, word) -> re.Pattern:
    """``(<separator><a secret parameter's name>=)<its value>`` in a query inside free text (a request line):
    the value is every character up to the next ``&``, ``;``, fragment, space or quote."""
    names = "|".join(word(n) for n in sorted(_SECRET_NAMES, key=len, reverse=True))
    return re.compile(f"((?:{separator})(?:{names}){word('=')})" + r"[^&;#\s\"']+", re.IGNORECASE)


_LINK = _secret_path(_any_encoding("/"), _any_encoding)
_PARAM = _secret_param("[;]|" + _any_encoding("?") + "|" + _any_encoding("&"), _any_encoding)
#: the same for text without any escape (most request lines): a cheaper scan, the same matches
_KEY_PLAIN = re.compile(r"uc_live_[A-Za-z0-9]*", re.IGNORECASE)
_LINK_PLAIN = _secret_path("/", re.escape)
_PARAM_PLAIN = _secret_param(r"[?&;]", re.escape)
_ADDRESS = re.compile(r"[^\s/?&=@'\"]*@[^\s/?&'\"]*")
_LONG_RUN = re.compile(r"[A-Za-z0-9]{16,}")  # a key or token fragment; location ids have 12 random characters
_SECRET_VALUE = re.compile(
    _any_encoding("uc_live_") + r"|@|%40|[A-Za-z0-9]{16,}|^[A-Za-z0-9_-]{40,}$", re.IGNORECASE
)


def redact_text(text: str) -> str:
    """``text`` (a log message, request line) with API keys, the tokens of :data:`SECRET_PATHS` and the values
    of secret query parameters (``token=``, ``key=``, ``password=`` ...) replaced.

    Examples
    --------
    >>> redact_text('"GET /portal/link/AbC_-1 HTTP/1.1" 200')
    '"GET /portal/link/[redacted] HTTP/1.1" 200'
    >>> redact_text("POST //dashboard//Unsubscribe/Ab3_k9-Z HTTP/1.1")
    'POST //dashboard//Unsubscribe/[redacted] HTTP/1.1'
    >>> redact_text("GET %2Fdashboard%2Funsubscribe%2FAb3%5Fk9%2DZ")
    'GET %2Fdashboard%2Funsubscribe%2F[redacted]'
    >>> redact_text("GET /x?a=1&Token=Ab3_k9-Z&b=2 HTTP/1.1")
    'GET /x?a=1&Token=[redacted]&b=2 HTTP/1.1'
    >>> redact_text("GET /api/v1/locations?k=uc_live_abc")
    'GET /api/v1/locations?k=[redacted]'
    >>> redact_text("GET /x?key=Uc%5FLIVE%255fAbC HTTP/1.1")
    'GET /x?key=[redacted] HTTP/1.1'
    >>> redact_text("GET /calendar/cal_Ab3_k9-Z.ics HTTP/1.1")
    'GET /calendar/[redacted] HTTP/1.1'
    """
    text = text or ""
    if "%" in text or "\\" in text:
        return _KEY.sub(REDACTED, _PARAM.sub(r"\1" + REDACTED, _LINK.sub(r"\1" + REDACTED, text)))
    lowered = text.lower()  # without escapes, each pattern needs a plain word of it in the text
    if "/link/" in lowered or "unsubscribe" in lowered or "calendar" in lowered:
        text = _LINK_PLAIN.sub(r"\1" + REDACTED, text)
    if "=" in text:
        text = _PARAM_PLAIN.sub(r"\1" + REDACTED, text)
    if "uc_live_" in lowered:
        text = _KEY_PLAIN.sub(REDACTED, text)
    return text


def redact_path(path: str, limit: int = 120) -> str:
    """A request path fit to log or to repeat in a message: keys, link tokens, addresses and long
    token-like segments replaced, cut to ``limit`` characters.

    Examples
    --------
    >>> redact_path("/portal/link/AbC_-1xyz")
    '/portal/link/[redacted]'
    >>> redact_path("/api/v1/uc_live_abc/x")
    '/api/v1/[redacted]/x'
    >>> redact_path("/api/v1/locations/Zq81Kd0aLm29Xc7BvN4p")
    '/api/v1/locations/[redacted]'
    """
    text = redact_text(path)
    if "@" in text:  # an address has one (the pattern scans every start position for it otherwise)
        text = _ADDRESS.sub(REDACTED, text)
    text = _LONG_RUN.sub(REDACTED, text)
    return text if len(text) <= limit else text[:limit] + "…"


def is_secret_like(value: str) -> bool:
    """Whether ``value`` looks like a key, token or address, or holds a secret path with its token (never
    to be logged or echoed).

    Examples
    --------
    >>> is_secret_like("loc_3fK9xQ2mPa7Z"), is_secret_like("a@b.be"), is_secret_like("uc_live_x")
    (False, True, True)
    >>> is_secret_like("/dashboard/unsubscribe/Ab3_k9-Z")
    True
    """
    return bool(_SECRET_VALUE.search(value or "") or _LINK.search(value or ""))


def echo(value: str) -> str:
    """``value`` quoted for an error message, or ``[redacted]`` when it is long or secret-like.

    Examples
    --------
    >>> echo("51,2")
    "'51,2'"
    >>> echo("uc_live_" + "a" * 38)
    '[redacted]'
    >>> echo("x" * 33)
    '[redacted]'
    """
    if len(value) > ECHO_LIMIT or is_secret_like(value) or not value.isprintable():
        return REDACTED
    return repr(value)


#: name=value pairs of characters that parse_qsl and urlencode give back unchanged
_PLAIN_QUERY = re.compile(r"^[A-Za-z0-9_.~-]+=[A-Za-z0-9_.~-]*(?:&[A-Za-z0-9_.~-]+=[A-Za-z0-9_.~-]*)*$")


#: a value of such a query that :func:`is_secret_like` holds secret-like: with none of ``%``, ``\\``, ``/`` or
#: ``@`` in it, no escaped form and no secret path can match, only these plain forms
_PLAIN_SECRET_VALUE = re.compile(r"uc_live_|[A-Za-z0-9]{16,}|^[A-Za-z0-9_-]{40,}$", re.IGNORECASE)


def _plain_query_secret(query: str) -> bool:
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name.lower() in _SECRET_NAMES or _PLAIN_SECRET_VALUE.search(value):
            return True
    return False


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
    if _PLAIN_QUERY.match(query) and not _plain_query_secret(query):
        return query  # what parse_qsl + urlencode would give back unchanged
    pairs = parse_qsl(query, keep_blank_values=True)
    out = [
        (name, REDACTED if name.lower() in _SECRET_NAMES or is_secret_like(value) else value)
        for name, value in pairs
    ]
    return urlencode(out)
