"""Saved (monitored) locations of an account: validation, add, list, remove, look-up.

Examples
--------
>>> from app.store.sqlite import connect
>>> from app.store.db import migrate
>>> conn = connect(":memory:"); _ = migrate(conn)
>>> _ = conn.execute("INSERT INTO accounts (id, email, plan, created_at) VALUES (1, 'a@b.be', 'api', '')")
>>> loc = add_location(conn, 1, name="Stadhuis", address="Grote Markt 1, 2000 Antwerpen",
...                    lat=51.2213, lng=4.3997, label="kantoor", is_primary=True, location_id="loc_stadhuis")
>>> as_json(get_location(conn, 1, "loc_stadhuis"))["isPrimary"]
True
>>> get_location(conn, 2, "loc_stadhuis") is None
True
"""

from __future__ import annotations

import math
import re
import secrets

from .accounts import StoreError, utc_stamp
from .apikeys import ALPHABET
from .db import write

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
MAX_TEXT = 200


def new_location_id() -> str:
    """A random, non-enumerable id such as ``loc_3fK9xQ2mPa7Z``."""
    return "loc_" + "".join(secrets.choice(ALPHABET) for _ in range(12))


def _text(field: str, value, *, required: bool) -> str:
    if not isinstance(value, str):
        raise StoreError(f"{field} must be a string")
    value = value.strip()
    if required and not value:
        raise StoreError(f"{field} must not be empty")
    if len(value) > MAX_TEXT or any(ord(c) < 32 for c in value):
        raise StoreError(f"{field} must be at most {MAX_TEXT} printable characters")
    return value


def validate_point(lat, lng) -> tuple[float, float]:
    """Finite numbers in range (the service area is the caller's check: it has the engine)."""
    try:
        lat, lng = float(lat), float(lng)
    except (TypeError, ValueError):
        raise StoreError("lat and lng must be numbers") from None
    if not (math.isfinite(lat) and math.isfinite(lng)) or abs(lat) > 90 or abs(lng) > 180:
        raise StoreError(f"lat={lat}, lng={lng} are not valid coordinates (lat -90..90, lng -180..180)")
    return lat, lng


def add_location(
    conn,
    account_id: int,
    *,
    name,
    address,
    lat,
    lng,
    label="",
    is_primary=False,
    location_id=None,
    max_locations: int = 100,
):
    """Validate and save a location; ``is_primary`` moves the primary mark to it. Returns the row."""
    location_id = location_id or new_location_id()
    if not valid_id(location_id):
        raise StoreError("id must be 1-64 characters of letters, digits, '_' or '-'")
    name = _text("name", name, required=True)
    address = _text("address", address, required=False)
    label = _text("label", label, required=False)
    lat, lng = validate_point(lat, lng)
    with write(conn, durable=True):
        if conn.execute("SELECT 1 FROM accounts WHERE id = ?", (account_id,)).fetchone() is None:
            raise StoreError(f"no account with id {account_id}")
        if conn.execute("SELECT 1 FROM locations WHERE id = ?", (location_id,)).fetchone() is not None:
            raise StoreError(f"a location with id {location_id!r} already exists")
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM locations WHERE account_id = ?", (account_id,)
        ).fetchone()
        if count >= max_locations:
            raise StoreError(f"this account already has the maximum of {max_locations} locations")
        if is_primary:
            conn.execute("UPDATE locations SET is_primary = 0 WHERE account_id = ?", (account_id,))
        conn.execute(
            "INSERT INTO locations (id, account_id, name, address, lat, lng, label, is_primary, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (location_id, account_id, name, address, lat, lng, label, int(bool(is_primary)), utc_stamp()),
        )
    return get_location(conn, account_id, location_id)


def list_locations(conn, account_id: int) -> list:
    """The account's locations: primary first, then in the order they were added."""
    return conn.execute(
        "SELECT * FROM locations WHERE account_id = ? ORDER BY is_primary DESC, created_at, rowid",
        (account_id,),
    ).fetchall()


def valid_id(location_id) -> bool:
    """Whether ``location_id`` has the shape of an id (1-64 of ``A-Za-z0-9_-``): checked before any SQL.

    Examples
    --------
    >>> valid_id("loc_3fK9xQ2mPa7Z"), valid_id("x" * 65), valid_id("' OR 1=1")
    (True, False, False)
    """
    return isinstance(location_id, str) and _ID.match(location_id) is not None


def get_location(conn, account_id: int, location_id: str):
    """The account's location ``location_id`` or None (also for another account's id, and without a
    query for a value that is not an id)."""
    if not valid_id(location_id):
        return None
    return conn.execute(
        "SELECT * FROM locations WHERE id = ? AND account_id = ?", (location_id, account_id)
    ).fetchone()


def remove_location(conn, account_id: int, location_id: str) -> None:
    """Delete one of the account's locations."""
    if not valid_id(location_id):
        raise StoreError("id must be 1-64 characters of letters, digits, '_' or '-'")
    with write(conn, durable=True):
        cur = conn.execute("DELETE FROM locations WHERE id = ? AND account_id = ?", (location_id, account_id))
        if cur.rowcount == 0:
            raise StoreError(f"no location with id {location_id!r} in this account")


def update_location(conn, account_id: int, location_id: str, *, name, address, label, is_primary):
    """Rename, re-address, re-label one of the account's locations and set or clear its primary mark
    (marking it primary clears the mark on the others). The coordinates and id never change."""
    name = _text("name", name, required=True)
    address = _text("address", address, required=False)
    label = _text("label", label, required=False)
    with write(conn, durable=True):
        if get_location(conn, account_id, location_id) is None:
            raise StoreError(f"no location with id {location_id!r} in this account")
        if is_primary:
            conn.execute(
                "UPDATE locations SET is_primary = 0 WHERE account_id = ? AND id != ?",
                (account_id, location_id),
            )
        conn.execute(
            "UPDATE locations SET name = ?, address = ?, label = ?, is_primary = ?"
            " WHERE id = ? AND account_id = ?",
            (name, address, label, int(bool(is_primary)), location_id, account_id),
        )
    return get_location(conn, account_id, location_id)


def as_json(row) -> dict:
    """The API's Location record (field order fixed)."""
    return {
        "id": row["id"],
        "name": row["name"],
        "address": row["address"],
        "lat": row["lat"],
        "lng": row["lng"],
        "label": row["label"],
        "isPrimary": bool(row["is_primary"]),
    }
