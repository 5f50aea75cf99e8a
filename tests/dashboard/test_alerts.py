"""The alert routes of before (``/dashboard/locations/<id>/alerts`` with the old kinds) on the change alerts
(docs/changes.md "From the old alerts"): bad webhook URLs and kinds are refused without a write, private
addresses are refused unless allowed, explorer plans cannot subscribe. Delivery itself (each event once,
retries, restarts) is tested in test_change_delivery.py and test_alert_isolation.py."""

from __future__ import annotations

import pytest

from .conftest import CSRF


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x.be/h",
        "javascript:alert(1)",
        "http://user:pw@x.be/h",
        "/relative",
        "http://x.be/" + "a" * 600,
        "http://x .be/",
    ],
)
def test_bad_webhook_urls_and_kinds_are_refused_without_a_write(user, url, store):
    _acc, _key, client = user("pro")
    client.post(
        "/dashboard/locations", data={"csrf_token": CSRF, "name": "X", "lat": "51.2194", "lng": "4.4025"}
    )
    loc = store.execute("SELECT id FROM locations").fetchone()["id"]
    resp = client.post(
        f"/dashboard/locations/{loc}/alerts",
        data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
        follow_redirects=True,
    )
    assert "webhook URL must be an absolute" in resp.get_data(as_text=True)
    for kinds in ([], ["nope"]):
        client.post(f"/dashboard/locations/{loc}/alerts", data={"csrf_token": CSRF, "kind": kinds})
    assert store.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 0


def test_webhooks_to_private_addresses_are_refused_unless_allowed(config):
    from app.dashboard.delivery import post_webhook

    with pytest.raises(OSError, match="non-public address 127.0.0.1: loopback"):
        post_webhook("http://127.0.0.1:9/hook", "s", b"{}", {**config, "ALERT_WEBHOOK_ALLOW_PRIVATE": False})


def test_explorer_plans_cannot_subscribe_or_download(user, store):
    from app.store.saved_locations import add_location

    account, _key, client = user("api")
    loc = add_location(store, account["id"], name="X", address="", lat=51.2194, lng=4.4025)
    resp = client.post(
        f"/dashboard/locations/{loc['id']}/alerts", data={"csrf_token": CSRF, "kind": "no2_eu"}
    )
    assert resp.status_code == 403
    assert client.get(f"/dashboard/locations/{loc['id']}/report.pdf").status_code == 403
    assert store.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 0
