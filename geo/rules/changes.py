"""Change-feed rules: what counts as a change of a location's answer between two publishes.

Pure decisions, no storage and no clock (docs/changes.md, decision tables in docs/rules.md):

- :func:`work_changes`: the event types of one work between two publishes (appeared, started, rescheduled,
  description changed, ended, cancelled, removed);
- :class:`Hysteresis` / :func:`advance`: NO2 above or below a figure (EU 40, WHO 10 µg/m³) with a margin
  and a dwell, so a series hovering around the figure gives one event per real crossing;
- :func:`stale_sources`: the live sources whose data is past its freshness limit at a publish.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..data.layers import LAYER_SOURCE
from .airrules import EU_NO2, WHO_NO2
from .timefmt import MS_PER_HOUR

# --- event types (the feed's vocabulary, in the order a location's events of one publish are listed) ---
WORK_APPEARED = "work.appeared"
WORK_STARTED = "work.started"
WORK_RESCHEDULED = "work.rescheduled"
WORK_DESCRIPTION = "work.description_changed"
WORK_ENDED = "work.ended"
WORK_CANCELLED = "work.cancelled"
WORK_REMOVED = "work.removed"
DETOUR_STARTED = "detour.started"
DETOUR_STOPPED = "detour.stopped"
STATION_CHANGED = "station.changed"
NO2_ABOVE_EU, NO2_BELOW_EU = "no2.above_eu", "no2.below_eu"
NO2_ABOVE_WHO, NO2_BELOW_WHO = "no2.above_who", "no2.below_who"
SOURCE_STALE, SOURCE_RECOVERED = "source.stale", "source.recovered"

EVENT_TYPES = (
    WORK_APPEARED,
    WORK_STARTED,
    WORK_RESCHEDULED,
    WORK_DESCRIPTION,
    WORK_ENDED,
    WORK_CANCELLED,
    WORK_REMOVED,
    DETOUR_STARTED,
    DETOUR_STOPPED,
    STATION_CHANGED,
    NO2_ABOVE_EU,
    NO2_BELOW_EU,
    NO2_ABOVE_WHO,
    NO2_BELOW_WHO,
    SOURCE_STALE,
    SOURCE_RECOVERED,
)
TYPE_RANK = {t: i for i, t in enumerate(EVENT_TYPES)}

#: GIPOD statuses of a work that left the answer because it was done, or because it will not be done
ENDED_STATUSES = frozenset({"Uitgevoerd"})
CANCELLED_STATUSES = frozenset({"Geannuleerd", "Niet uitgevoerd"})
RUNNING_STATUS = "In uitvoering"


@dataclass(frozen=True)
class WorkState:
    """A work as a location's ``/disruptions`` answer lists it (the fields the feed compares)."""

    status: str
    start: str | None  # ``startDate`` (YYYY-MM-DD)
    end: str | None  # ``endDate``
    description: str


def work_changes(before: WorkState | None, after: WorkState | None, feed_status: str | None) -> list[str]:
    """The event types of one work at a location between two publishes.

    ``before``/``after``: the work as listed for the location (None: not listed); ``feed_status``: its
    status in the newer publish's works layer when it is no longer listed (None: gone from the feed).

    Examples
    --------
    >>> from dataclasses import replace
    >>> planned = WorkState("Concreet gepland", "2026-07-05", "2026-08-26", "Riolering")
    >>> work_changes(None, planned, None)
    ['work.appeared']
    >>> work_changes(planned, replace(planned, status="In uitvoering", start="2026-07-06"), None)
    ['work.started', 'work.rescheduled']
    >>> work_changes(planned, None, "Niet uitgevoerd"), work_changes(planned, None, None)
    (['work.cancelled'], ['work.removed'])
    """
    if before is None and after is None:
        return []
    if before is None:
        return [WORK_APPEARED]
    if after is None:
        if feed_status in CANCELLED_STATUSES:
            return [WORK_CANCELLED]
        if feed_status in ENDED_STATUSES:
            return [WORK_ENDED]
        return [WORK_REMOVED]
    out = []
    if after.status == RUNNING_STATUS and before.status != RUNNING_STATUS:
        out.append(WORK_STARTED)
    if (before.start, before.end) != (after.start, after.end):
        out.append(WORK_RESCHEDULED)
    if before.description != after.description:
        out.append(WORK_DESCRIPTION)
    return out


# --- NO2 hysteresis ------------------------------------------------------------------------------------
UNKNOWN, BELOW, ABOVE = -1, 0, 1
STATE_NAMES = {UNKNOWN: "unknown", BELOW: "below", ABOVE: "above"}


@dataclass(frozen=True)
class Hysteresis:
    """When NO2 at a station counts as above ``figure`` (µg/m³), and when back below.

    Above: ``dwell`` consecutive hourly values strictly above the figure. Back below: ``dwell``
    consecutive hourly values at or below ``figure * (1 - margin)``. Consecutive means hour after hour:
    a missing hour breaks a run (an unknown value confirms nothing). The first value of a station sets its
    state without an event.
    """

    figure: float
    margin: float = 0.10
    dwell: int = 2

    @property
    def lower(self) -> float:
        """The value at or below which an hour counts towards going back below (36 for EU, 9 for WHO)."""
        return round(self.figure * (1.0 - self.margin), 6)


EU = Hysteresis(EU_NO2)
WHO = Hysteresis(WHO_NO2)
#: the two figures, with their event types (above, below)
FIGURES = {"eu": (EU, NO2_ABOVE_EU, NO2_BELOW_EU), "who": (WHO, NO2_ABOVE_WHO, NO2_BELOW_WHO)}


@dataclass(frozen=True)
class Level:
    """A station's hysteresis state for one figure: ``state`` (UNKNOWN, BELOW, ABOVE), the current run
    towards the other state (its length and first hour), and the last hour read (epoch ms)."""

    state: int = UNKNOWN
    run: int = 0
    run_from: int = -1
    last_hour: int = -1


@dataclass(frozen=True)
class Crossing:
    """A confirmed crossing: the new state, the hour that confirmed it (valid time), the run's first hour,
    and the confirming value."""

    state: int
    hour: int
    since: int
    value: float


def advance(rule: Hysteresis, level: Level, hours, values) -> tuple[Level, list[Crossing]]:
    """Read a station's hourly values (ascending epoch-ms hours, NaN/None: not measured) after
    ``level.last_hour``; returns the new level and the crossings confirmed on the way.

    Examples
    --------
    >>> h = [k * 3_600_000 for k in range(8)]
    >>> lvl, xs = advance(EU, Level(), h, [39, 41, 39, 41, 42, 38, 36, 35])
    >>> [(STATE_NAMES[x.state], x.hour // 3_600_000) for x in xs], STATE_NAMES[lvl.state]
    ([('above', 4), ('below', 7)], 'below')
    """
    state, run, run_from, last = level.state, level.run, level.run_from, level.last_hour
    figure, lower = rule.figure, rule.lower
    out = []
    for hour, value in zip(hours, values):
        hour = int(hour)
        if hour <= last:
            continue
        if value is None or value != value:  # not measured: breaks a run, changes nothing else
            run, run_from, last = 0, -1, hour
            continue
        value = float(value)
        if run and hour != last + MS_PER_HOUR:
            run, run_from = 0, -1  # a gap before this value
        last = hour
        if state == UNKNOWN:
            state, run, run_from = (ABOVE if value > figure else BELOW), 0, -1
            continue
        towards = value <= lower if state == ABOVE else value > figure
        if not towards:
            run, run_from = 0, -1
            continue
        run, run_from = run + 1, run_from if run else hour
        if run >= rule.dwell:
            state = BELOW if state == ABOVE else ABOVE
            out.append(Crossing(state, hour, run_from, value))
            run, run_from = 0, -1
    return Level(state, run, run_from, last), out


# --- sources -------------------------------------------------------------------------------------------
def stale_sources(manifest: dict, at: datetime, limits: dict[str, float]) -> dict[str, bool]:
    """Per live source of a publish's manifest: is one of its layers past its freshness limit (seconds,
    per layer) at ``at`` (the publish's ``asOf``)? Sources without a live layer are not listed.

    Examples
    --------
    >>> from datetime import UTC
    >>> m = {"layers": {"no2": {"kind": "live", "retrievedAt": "2026-11-16T07:00:00Z"},
    ...                 "lez": {"kind": "reference"}}}
    >>> stale_sources(m, datetime(2026, 11, 16, 11, tzinfo=UTC), {"no2": 3 * 3600})
    {'ircel': True}
    """
    out: dict[str, bool] = {}
    for layer, entry in sorted((manifest.get("layers") or {}).items()):
        if entry.get("kind") != "live" or layer not in limits:
            continue
        retrieved = datetime.fromisoformat(str(entry["retrievedAt"]).replace("Z", "+00:00"))
        source = LAYER_SOURCE.get(layer, layer)
        out[source] = out.get(source, False) or (at - retrieved).total_seconds() > limits[layer]
    return out
