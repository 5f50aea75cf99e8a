"""Where Flask-Limiter runs (app/web/ratelimit.py, docs/architecture.md → What one request costs).

Limits are checked only on the blueprints they are declared on, by that blueprint's first
``before_request``: every other request (the data endpoints, health, a 404) never enters Flask-Limiter,
yet still reports its per-IP budget; on the sign-up blueprints the limit is charged before the
blueprint's own hooks (the portal's CSRF check), so a refused form still spends the budget.
"""

from __future__ import annotations

import sys
from functools import partial

from platform_helpers import RATE_HEADERS, bearer


def _functions_entered(call):
    """``call()``'s result and the (top-level package, function name) of every Python frame it enters."""
    seen: set[tuple[str, str]] = set()

    def profile(frame, event, _arg):
        if event == "call":
            seen.add((frame.f_globals.get("__name__", "").partition(".")[0], frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, seen


def test_requests_outside_the_limited_blueprints_never_enter_flask_limiter(client, account):
    _row, key = account()
    for path, headers in (
        ("/api/v1/locations", bearer(key)),
        ("/api/v1/locations", bearer("no-such-key")),
        ("/healthz", {}),
        ("/no/such/page", {}),
    ):
        answer, entered = _functions_entered(partial(client.get, path, headers=headers))
        assert ("flask", "wsgi_app") in entered  # the profile saw the request
        # only its storage, strategy and client address, which the per-IP budget reads (no hook, no context)
        assert {name for package, name in entered if package == "flask_limiter"} <= {
            "limiter",
            "get_remote_address",
            "storage",
        }, path
        if path != "/healthz":  # /healthz reports no budget only when its storage read fails
            assert all(name in answer.headers for name in RATE_HEADERS), path


def test_the_signup_limit_is_charged_before_the_portal_checks_its_form(app, client):
    app.config["SIGNUP_LIMIT_PER_IP"] = "2 per hour"
    forged = [client.post("/portal/signin", data={"email": "a@stad.be"}) for _ in range(3)]
    assert [r.status_code for r in forged] == [400, 400, 429]  # no CSRF token: refused, yet counted
    assert forged[1].headers["X-RateLimit-Remaining"] == "0"
    elsewhere = client.post(
        "/api/v1/signup", json={"email": "a@stad.be"}, environ_base={"REMOTE_ADDR": "127.0.0.1"}
    )
    assert elsewhere.status_code == 429  # the API draws from the same per-IP bucket
