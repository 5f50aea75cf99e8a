"""Shared assertions for the platform tests."""

from __future__ import annotations

import json

RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
INSIDE = (51.2194, 4.4025)
OUTSIDE = (52.3676, 4.9041)  # Amsterdam


def add_stadhuis(conn, account_id: int, **extra) -> dict:
    """Antwerp's town hall as the account's primary saved location ``loc_stadhuis`` (label ``kantoor``)."""
    from app.store.saved_locations import add_location

    return add_location(
        conn,
        account_id,
        name="Stadhuis",
        address="Grote Markt 1, 2000 Antwerpen",
        lat=51.2213,
        lng=4.3997,
        label="kantoor",
        is_primary=True,
        location_id="loc_stadhuis",
        **extra,
    )


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def assert_error(resp, status: int, code: str) -> dict:
    """The one error shape: JSON ``{"error", "message"}`` (+ ``requestId`` on 5xx) and the rate headers."""
    assert resp.status_code == status, (resp.status_code, resp.data[:300])
    assert resp.headers["Content-Type"].startswith("application/json")
    body = json.loads(resp.data)
    expected = {"error", "message"} | ({"requestId"} if status >= 500 else set())
    assert set(body) == expected, body
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    for name in RATE_HEADERS:
        assert name in resp.headers, (name, dict(resp.headers))
    return body
