"""The two clocks of the service.

- :func:`wall_now` — real UTC time; decides the quota day and the reset headers. Tests inject
  ``app.config["WALL_CLOCK"]`` (a callable returning an aware datetime).
- :func:`data_now` — the ``now`` handed to ``geo``: the snapshot's ``asOf`` (``URBAN_CLOCK=snapshot``, the
  default, so the demo answers are deterministic) or the system clock (``URBAN_CLOCK=system``, live data).
  Tests inject ``app.config["DATA_CLOCK"]``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import current_app


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("clocks must return timezone-aware datetimes")
    return value.astimezone(UTC)


def wall_now() -> datetime:
    """Current UTC time (injectable with ``WALL_CLOCK``)."""
    clock = current_app.config.get("WALL_CLOCK")
    return _aware(clock()) if clock else datetime.now(UTC)


def data_now(engine) -> datetime:
    """The data clock for ``engine`` (the request's pinned engine)."""
    clock = current_app.config.get("DATA_CLOCK")
    if clock:
        return _aware(clock())
    if current_app.config.get("CLOCK") == "system":
        return datetime.now(UTC)
    as_of = getattr(engine, "as_of", None)
    return _aware(as_of) if as_of is not None else datetime.now(UTC)
