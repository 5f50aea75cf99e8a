"""Issue 31, class 5: every URL that carries a secret token (an alert's unsubscribe link, a sign-in link, a
token in the query) stays out of the access log and every other log record, in every encoding a request or a
log line may give it. The real-gunicorn counterpart is in ``test_hostile_gunicorn.py``."""

from __future__ import annotations

import json
import logging

import pytest
import requests

from app.server.accesslog import entry
from tests.portal.helpers import LiveServer

#: shaped as our tokens (URL-safe base64: "-" and "_" cut it into runs shorter than 16 characters)
TOKEN = "Tok3nQz7-Xk9Wvb_" * 2
FRAGMENTS = ("Tok3nQz7", "Xk9Wvb")


def token_forms(token: str) -> list[str]:
    """The token as a request target or log line may carry it: plain, upper and lower case, its "-" and "_"
    percent-encoded (upper and lower hex, double-encoded), every character percent-encoded, repr escapes."""
    every = "".join(f"%{ord(c):02X}" for c in token)
    return [
        token,
        token.upper(),
        token.lower(),
        token.replace("-", "%2D").replace("_", "%5F"),
        token.replace("-", "%2d").replace("_", "%5f"),
        token.replace("-", "%252D").replace("_", "%255F"),
        every,
        every.lower(),
        token.replace("-", "\\x2d").replace("_", "\\x5f"),
        token.replace("-", "\\u002d").replace("_", "\\u005f"),
        token.replace("_", "\\\\x5f"),
        "".join(f"\\x{ord(c):02x}" for c in token),
    ]


#: every place a request puts a token: the three secret paths (and a calendar feed's ``.ics``), their slashes repeated, encoded or in other
#: case, a path after the token, and the token in the query (named, or as a path value)
SECRET_URLS = [
    "/dashboard/unsubscribe/{}",
    "/portal/link/{}",
    "//dashboard//unsubscribe//{}",
    "/portal//link/{}",
    "/DASHBOARD/Unsubscribe/{}",
    "%2Fdashboard%2Funsubscribe%2F{}",
    "/dashboard%2funsubscribe%2F{}",
    "%252Fportal%252Flink%252F{}",
    "/dashboard/unsubscribe/{}/x",
    "/dashboard/unsubscribe/{};x=1",
    "/x?token={}",
    "/x?next=/dashboard/unsubscribe/{}&y=1",
    "/x?next=%2Fportal%2Flink%2F{}",
    "/calendar/{}.ics",
    "//calendar//{}.ics",
    "/Calendar/{}.ICS",
    "%2Fcalendar%2F{}.ics",
    "/x?next=/calendar/{}.ics",
]


def needles(fragment: str) -> list[str]:
    """What must not be in a log (compared lower-cased): the fragment plain and percent- or \\x-encoded."""
    return [
        fragment.lower(),
        "".join(f"%{ord(c):02x}" for c in fragment),
        "".join(f"\\x{ord(c):02x}" for c in fragment),
    ]


def leaked(text: str) -> list[str]:
    low = text.lower()
    return [n for f in FRAGMENTS for n in needles(f) if n in low]


def cases():
    return [url.format(form) for url in SECRET_URLS for form in token_forms(TOKEN)]


def test_the_cases_hold_the_token_before_redaction():
    """The check would see a leak: every case names the token (in some encoding) before redaction."""
    assert all(leaked(case) for case in cases())


@pytest.mark.parametrize("url", SECRET_URLS)
def test_secret_urls_stay_out_of_the_access_log(url):
    for form in token_forms(TOKEN):
        path, _, query = url.format(form).partition("?")
        line = entry(200, "POST", path, query, "127.0.0.1", 10, 1000, "r1")
        assert not leaked(line), line
        assert json.loads(line)["path"].startswith(("/", "%"))


@pytest.mark.parametrize(
    "logger", ["app", "app.web.errors", "werkzeug", "gunicorn.error", "gunicorn.access", "someone.else"]
)
def test_secret_urls_stay_out_of_every_log_record(app, caplog, logger):
    caplog.set_level(logging.DEBUG)
    for target in cases():
        logging.getLogger(logger).warning('"POST %s HTTP/1.1" 200 -', target)
        logging.getLogger(logger).warning(f"Invalid HTTP request line: 'GET {target} HTTP/9.9'")
    assert not leaked(caplog.text), leaked(caplog.text)
    assert caplog.text.count("[redacted]") >= 2 * len(cases())


def test_unsubscribe_and_link_requests_to_a_real_server_leave_no_token_in_its_log(make_app, caplog):
    """werkzeug's server logs each request line (as gunicorn's error log repeats a bad one)."""
    app = make_app()
    caplog.set_level(logging.DEBUG)
    with LiveServer(app) as server:
        for form in token_forms(TOKEN)[:6]:
            for path in (
                "/dashboard/unsubscribe/",
                "/portal/link/",
                "//dashboard//unsubscribe/",
                "/calendar/",
            ):
                requests.get(server.url + path + form, timeout=10, allow_redirects=False)
                requests.post(server.url + path + form, data={"List-Unsubscribe": "One-Click"}, timeout=10)
    assert "/dashboard/unsubscribe/[redacted]" in caplog.text  # the request lines were logged
    assert not leaked(caplog.text), leaked(caplog.text)
