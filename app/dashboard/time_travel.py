"""The map's "as of" control (Enterprise): a point's figures as the service gave them at a past instant.

The instant comes as ``at`` (the form's field: a Europe/Brussels wall-clock time) or ``asOf`` (an RFC 3339
instant, the API's spelling, for links). It is answered by the API's own ``asOf`` path
(:func:`app.history.asof.pin`: plan, window, the snapshot served then, its clock), so the figures are the
API's ``asOf`` bodies. What the page says about it (banner, friendly messages) is here; docs/dashboard.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from flask import current_app

from app.history.asof import PLANS, AsOf, iso, pin
from app.history.errors import InvalidAsOf
from app.web.clock import wall_now
from app.web.errors import ApiError
from app.web.redact import echo

from . import i18n

LOCAL = ZoneInfo("Europe/Brussels")
LOCAL_NAME = "Europe/Brussels"
WALL_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?")
#: what the page says for each refusal of the API's asOf (the API's own message is shown beside it): the
#: catalogue's ``asof.err.<code>``, ``asof.err.other`` for any other code
FRIENDLY = ("invalid_as_of", "as_of_in_future", "as_of_out_of_window", "plan_required", "history_unavailable")


def offered(viewer) -> bool:
    """True when the viewer's plan has the history (the control is shown)."""
    return viewer is not None and viewer.account["plan"] in PLANS


def local_time(moment: datetime, lang: str = "en") -> str:
    """An instant for people in ``lang``: the date with its year (the history reaches a year back), Brussels
    wall-clock time (seconds only when there are some) and the zone's name, as :mod:`app.dashboard.i18n` writes
    them.

    Examples
    --------
    >>> local_time(datetime(2026, 11, 10, 7, 30, tzinfo=UTC)), local_time(datetime(2026, 7, 1, 10, 0, 5, tzinfo=UTC), "fr")
    ('10 Nov 2026 08:30 CET', '1 juil. 2026 12:00:05 CEST')
    """
    here = moment.astimezone(LOCAL)
    clock = "%H:%M:%S" if here.second or here.microsecond else "%H:%M"
    return f"{i18n.local_date(here.date().isoformat(), lang)} {here.strftime(clock)} {here.tzname()}"


def wall_value(moment: datetime) -> str:
    """The ``datetime-local`` field's value of ``moment``: Brussels wall-clock time to the minute."""
    return moment.astimezone(LOCAL).strftime("%Y-%m-%dT%H:%M")


def from_wall_time(raw: str) -> datetime:
    """A Brussels wall-clock time ``YYYY-MM-DDTHH:MM[:SS]`` as a UTC instant; ``InvalidAsOf`` when it is malformed
    or does not exist (the hour the clocks skip in spring). In the autumn hour that happens twice, the first
    (summer time) is meant.

    Examples
    --------
    >>> from_wall_time("2026-11-10T08:30").isoformat()
    '2026-11-10T07:30:00+00:00'
    >>> from_wall_time("2026-10-25T02:30").isoformat()
    '2026-10-25T00:30:00+00:00'
    """
    text = raw.strip()
    try:
        naive = datetime.fromisoformat(text) if WALL_TIME.fullmatch(text) else None
    except ValueError:
        naive = None
    if naive is None:
        raise InvalidAsOf(f"{echo(raw)} is not a date and time like 2026-11-10T08:30 (Brussels time)")
    moment = naive.replace(tzinfo=LOCAL, fold=0).astimezone(UTC)
    if moment.astimezone(LOCAL).replace(tzinfo=None) != naive:
        raise InvalidAsOf(f"{naive:%Y-%m-%d %H:%M} does not exist in Brussels: the clocks skip that hour")
    return moment


def requested(args) -> str | None:
    """The RFC 3339 instant the page asks for (``asOf`` as given, or ``at`` converted), None without one."""
    raw = (args.get("asOf") or "").strip()
    if raw:
        return raw
    wall = (args.get("at") or "").strip()
    return iso(from_wall_time(wall)) if wall else None


@dataclass
class Control:
    """What the partial template ``dashboard/_as_of.html`` shows."""

    offered: bool
    value: str = ""  # the field's value (Brussels wall time)
    least: str = ""  # the field's bounds: the history window
    most: str = ""
    answer: AsOf | None = None
    banner: str = ""  # "as of …" in Brussels time
    snapshot_time: str = ""
    error: str = ""  # the friendly sentence
    detail: str = ""  # the API's message and code
    code: str = ""
    status: int = 200

    @property
    def active(self) -> bool:
        return self.answer is not None


def control(viewer) -> Control:
    """The control without an instant: offered or not, its bounds the plan's history window."""
    found = Control(offered(viewer))
    if found.offered:
        now = wall_now()
        days = int(current_app.config.get("HISTORY_DAYS", 365))
        found.least, found.most = wall_value(now - timedelta(days=days)), wall_value(now)
    return found


def answer(found: Control, raw: str, plan: str, lang: str = "en") -> Control:
    """``found`` with the answer at ``raw`` (its engine pinned for the request), or the friendly refusal
    (in ``lang``): the API's errors are caught and said, never raised."""
    try:
        found.answer = pin(raw, plan)
    except ApiError as exc:
        return refused(found, exc, lang)
    found.banner = local_time(found.answer.instant, lang)
    found.snapshot_time = local_time(found.answer.publish.as_of, lang)
    found.value = wall_value(found.answer.instant)
    return found


def refused(found: Control, exc: ApiError, lang: str = "en") -> Control:
    """``found`` carrying the friendly refusal of ``exc`` in ``lang`` (and its status for the page); the API's
    message and code stay as the API gives them (a technical detail)."""
    found.error = i18n.Labels(lang)(f"asof.err.{exc.code}" if exc.code in FRIENDLY else "asof.err.other")
    found.detail, found.code, found.status = exc.message, exc.code, exc.status
    return found
