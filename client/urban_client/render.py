"""Readable summaries of the API's JSON bodies for the terminal (Rich).

Each ``render_*`` function takes the parsed body and a :class:`rich.console.Console`. Data text is always
passed as :class:`rich.text.Text`, never as markup, so a description containing ``[brackets]`` prints as is.
Every label comes from :mod:`urban_client.labels` in the language in use (``labels.use``); times are shown in
Europe/Brussels, the service area's local time, with the zone's name.
"""

from __future__ import annotations

from datetime import datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from urban_client.api import RateLimit
from urban_client.labels import LOCAL_TZ, _parse, current  # noqa: F401 (LOCAL_TZ: part of this API)

RUNNING = "In uitvoering"
TREND_ARROWS = {"rising": "↑", "falling": "↓", "stable": "→"}
RISK_STYLES = {"low": "bold green", "moderate": "bold yellow", "high": "bold red"}


def local_time(value) -> datetime | None:
    """Parse an ISO 8601 timestamp and convert it to Europe/Brussels (``None`` when absent or unparsable).

    Examples
    --------
    >>> local_time("2026-07-01T06:00:00.000Z").strftime("%H:%M")
    '08:00'
    """
    moment = _parse(value) if isinstance(value, str) and len(value.strip()) != 10 else None
    return moment if isinstance(moment, datetime) else None


def format_moment(value) -> str:
    """``Mon 16 Nov 10:00 CET`` in local time, or ``?``."""
    return current().moment(value)


def format_window(window) -> str:
    """``Mon 16 Nov 10:00–12:00 CET`` for a ``{"start", "end"}`` object (end's date added when it differs)."""
    return current().window(window)


def format_distance(km) -> str:
    """Metres below 1 km, else kilometres with two decimals.

    Examples
    --------
    >>> format_distance(0.123), format_distance(1.5), format_distance(None)
    ('123 m', '1.50 km', '?')
    """
    return current().distance(km)


def _distance_key(item):
    km = item.get("distanceKm")
    return (0, km) if isinstance(km, (int, float)) else (1, 0.0)


def sort_works(items):
    """Works nearest first (ties: running works first, then id)."""
    return sorted(items, key=lambda w: (_distance_key(w), w.get("status") != RUNNING, str(w.get("id"))))


def sort_transit(items):
    """Detours nearest first: by ``distanceKm`` when given, else in the API's order (which is by distance to
    the detour point, detours without a point last, as docs/api.md states)."""
    return sorted(items, key=_distance_key)


def hindrance_text(hindrance) -> Text:
    """A work's validated hindrance for its table cell: GIPOD's Dutch consequences as published (``; ``-joined),
    after our "severe" label when GIPOD flags it; "—" when the work has none.

    Examples
    --------
    >>> hindrance_text({"severe": True, "consequences": ["Geen doorgang voor fietsers"]}).plain
    'SEVERE: Geen doorgang voor fietsers'
    >>> hindrance_text(None).plain, hindrance_text({"severe": False, "consequences": []}).plain
    ('—', 'validated, no details')
    """
    if not isinstance(hindrance, dict):
        return Text("—")
    labels = current()
    consequences = "; ".join(str(c) for c in hindrance.get("consequences") or [])
    if not hindrance.get("severe"):
        return Text(consequences or labels("hindrance.validated"))
    out = Text(labels("hindrance.severe"), style="bold red")
    return out.append(f": {consequences}" if consequences else "")


def _text(value) -> Text:
    return Text("" if value is None else str(value))


def _target_title(location) -> Text:
    if not isinstance(location, dict):
        return Text("?")
    coords = f"{location.get('lat')}, {location.get('lng')}"
    if location.get("name"):
        return Text(f"{location['name']} ({coords})")
    return Text(coords)


def _fits(console: Console, table: Table, items) -> bool:
    """Whether ``table`` prints at the console's width with every id whole on one line and no cell cut
    short (Rich's ``…``)."""
    with console.capture() as capture:
        console.print(table)
    rendered = capture.get()
    lines = rendered.splitlines()
    ids_whole = all(any(str(loc.get("id")) in line for line in lines) for loc in items)
    return ids_whole and ("…" not in rendered or any("…" in str(v) for loc in items for v in loc.values()))


def render_locations(data, console: Console) -> None:
    """Table of saved locations, primary location marked with ``*``. The id (the value a user copies) is
    never cut: when the table cannot show every id and cell whole at the terminal's width, each location is
    printed as a block that starts with its id on a line of its own."""
    labels = current()
    items = data.get("locations", []) if isinstance(data, dict) else data
    if not items:
        console.print(labels("locations.none"))
        return
    keys = ("name", "address", "label", "lat", "lng")
    table = Table(title=labels("locations.title"), title_justify="left")
    table.add_column("")
    table.add_column(labels("col.id"), no_wrap=True, overflow="ignore")
    for key in keys:
        table.add_column(labels(f"col.{key}"))
    for loc in items:
        values = [_text(loc.get(k)) for k in keys]  # coordinates keep their point: a value for --lat
        table.add_row("*" if loc.get("isPrimary") else "", _text(loc.get("id")), *values)
    if _fits(console, table, items):
        console.print(table)
        return
    console.print(Text(labels("locations.title"), style="italic"))
    for loc in items:
        console.print(
            Text(("* " if loc.get("isPrimary") else "  ") + str(loc.get("id")), style="bold"),
            soft_wrap=True,
        )
        for key in keys:
            value = loc.get(key)
            if value not in (None, ""):
                console.print(Text("    " + labels("field", name=labels(f"col.{key}"), value=value)))


def render_disruptions(data, console: Console) -> None:
    """Summary counts, then works and transit detours as tables, nearest first."""
    labels = current()
    header = Text(labels("disruptions.near"), style="bold")
    header.append_text(_target_title(data.get("location")))
    header.append(labels("disruptions.radius", radius=labels.number(data.get("radiusKm", "?"))))
    console.print(header)
    s = data.get("summary") or {}
    console.print(
        labels(
            "disruptions.summary",
            active=s.get("activeWorks", 0),
            planned=s.get("plannedWorks", 0),
            upcoming=s.get("upcomingWorks14d", 0),
            transit=s.get("transitDisruptions", 0),
            high=s.get("highSeverityTransit", 0),
        )
    )
    works = sort_works(data.get("construction") or [])
    if works:
        table = Table(title=labels("works.title"), title_justify="left")
        for column in ("distance", "status", "description", "hindrance", "from", "until", "id"):
            table.add_column(
                labels(f"col.{column}"),
                justify="right" if column == "distance" else "left",
                no_wrap=column == "id",
            )
        for w in works:
            status = Text(str(w.get("status", "")), style="bold yellow" if w.get("status") == RUNNING else "")
            table.add_row(
                format_distance(w.get("distanceKm")),
                status,
                _text(w.get("description")),
                hindrance_text(w.get("hindrance")),
                _text(labels.date(w.get("startDate"), "—")),
                _text(labels.date(w.get("endDate"), labels("open_ended"))),
                _text(w.get("id")),
            )
        console.print(table)
    else:
        console.print(labels("works.none"))
    transit = sort_transit(data.get("transit") or [])
    if transit:
        table = Table(title=labels("transit.title"), title_justify="left")
        has_distance = any(isinstance(t.get("distanceKm"), (int, float)) for t in transit)
        columns = ["distance"] if has_distance else []
        columns += ["severity", "lines", "delay", "title", "until", "id"]
        for column in columns:
            table.add_column(
                labels(f"col.{column}"),
                justify="right" if column in ("distance", "delay") else "left",
                no_wrap=column == "id",
            )
        for t in transit:
            sev = str(t.get("severity", ""))
            delay = t.get("estimatedDelayMin")
            row = [
                Text(labels.get(f"severity.{sev}", sev), style="bold red" if sev == "high" else ""),
                _text(", ".join(map(str, t.get("lines") or []))),
                _text(f"{delay} min" if delay is not None else "?"),
                _text(t.get("title")),
                _text(labels.date(t.get("endDate"), labels("open_ended"))),
                _text(t.get("id")),
            ]
            if has_distance:
                row.insert(0, _text(format_distance(t.get("distanceKm"))))
            table.add_row(*row)
        console.print(table)
    else:
        console.print(labels("transit.none"))
    if data.get("retrievedAt"):
        console.print(labels("retrieved", time=format_moment(data["retrievedAt"])), style="dim")


def _reading_line(reading) -> Text:
    labels = current()
    pollutant = reading.get("pollutant", "NO2")
    value, unit = reading.get("value"), reading.get("unit", "µg/m³")
    line = Text(f"{pollutant} ", style="bold")
    if value is None:
        line.append(labels("unknown"), style="bold")
        line.append(labels("no2.none"))
        return line
    line.append(f"{labels.number(value)} {unit}", style="bold")
    trend = reading.get("trend")
    arrow = TREND_ARROWS.get(trend, "?")
    pct = reading.get("trendPercent")
    line.append(f"  {arrow} ")
    line.append(labels.percent(pct) if isinstance(pct, (int, float)) else labels("unknown"))
    if reading.get("measuredAt"):
        line.append("  " + labels("measured", time=format_moment(reading["measuredAt"])))
    return line


def render_air_quality(data, console: Console) -> None:
    """Latest NO2 value with unit and trend arrow, threshold verdict, station and LEZ status."""
    labels = current()
    reading = data.get("reading") or {}
    console.print(_reading_line(reading))
    station = reading.get("station") or {}
    if station:
        console.print(
            Text(
                labels(
                    "station",
                    name=station.get("name", "?"),
                    id=station.get("id", "?"),
                    distance=format_distance(station.get("distanceKm")),
                )
            )
        )
    compliance = data.get("compliance") or {}
    verdict = Text(labels("verdict"), style="bold")
    status = compliance.get("status")
    style = {"above_eu": "bold red", "above_who": "yellow", "below_who": "green"}.get(status, "")
    verdict.append(str(compliance.get("label") or labels("unknown")), style=style)
    console.print(verdict)
    thresholds = data.get("thresholds") or {}
    parts = []
    for key in ("who", "eu"):
        t = thresholds.get(key)
        if isinstance(t, dict):
            state = {True: labels("exceeded"), False: labels("not_exceeded")}.get(
                t.get("exceeded"), labels("unknown")
            )
            name, unit = labels(f"threshold.{key}"), t.get("unit", "µg/m³")
            parts.append(labels("threshold.state", name=name, value=t.get("value"), unit=unit, state=state))
    if parts:
        basis = thresholds.get("basis")
        basis_text = f" ({labels.get(f'basis.{basis}', str(basis))})" if basis else ""
        console.print(Text(" · ".join(parts) + basis_text))
    lez = data.get("lez") or {}
    inside = lez.get("inside")
    line = Text(labels("lez.title"), style="bold")
    line.append(
        {True: labels("yes"), False: labels("no")}.get(inside, labels("unknown")),
        style="bold" if inside else "",
    )
    if inside and lez.get("name"):
        line.append(f" ({lez['name']})")
    console.print(line)


def render_briefing(data, console: Console) -> None:
    """Risk, headline, key facts and the windows of the next 24 hours in local time."""
    labels = current()
    risk = str(data.get("risk", "unknown"))
    line = Text(labels("risk"), style="bold")
    line.append(labels.get(f"risk.{risk}", risk.upper()), style=RISK_STYLES.get(risk, "bold"))
    console.print(line)
    if data.get("headline"):
        console.print(Text(str(data["headline"])))
    facts = data.get("keyFacts") or []
    for fact in facts:
        console.print(Text("  • " + str(fact.get("text") if isinstance(fact, dict) else fact)))
    names = [
        labels("field", name=labels(k), value="").rstrip()
        for k in ("best_window", "worst_window", "rush_peak")
    ]
    width = max(map(len, names)) + 1
    rush = data.get("nextRushPeak")
    rush_text = format_window(rush)
    if isinstance(rush, dict):
        if rush.get("peak"):
            rush_text += f" ({labels('peak', time=labels.moment(rush['peak'], with_day=False))})"
        if rush.get("kind"):
            rush_text = f"{labels.get('rush.' + str(rush['kind']), str(rush['kind']))} {rush_text}"
    values = [format_window(data.get("bestWindow")), format_window(data.get("worstWindow")), rush_text]
    for name, value in zip(names, values):
        console.print(Text(name.ljust(width) + value))


def render_quota(rate_limit: RateLimit, console: Console, now: datetime | None = None) -> None:
    """One dim line with the calls left today, when the API reported them (the reset in Brussels time)."""
    if rate_limit.remaining is None:
        return
    labels = current()
    of = f"/{rate_limit.limit}" if rate_limit.limit is not None else ""
    console.print(
        labels("quota", left=f"{rate_limit.remaining}{of}", time=labels.quota_reset(now)), style="dim"
    )


def _value_text(value) -> str:
    if not value:
        return "—"
    if "status" in value:
        dates = f"{value.get('startDate') or '?'} – {value.get('endDate') or '…'}"
        return f"{value['status']}, {dates}: {value.get('description', '')}"
    if "title" in value:
        return f"{value['title']} (line(s) {', '.join(value.get('lines') or [])})"
    if "state" in value:
        reading = f" {value['value']} µg/m³" if value.get("value") is not None else ""
        return f"{value['state']} {value['figure']:g} µg/m³ at {value.get('station')}{reading}"
    if "station" in value:
        return f"station {value['station']}"
    if "stale" in value:
        return "stale" if value["stale"] else "fresh"
    return ", ".join(f"{k}={v}" for k, v in value.items())


def render_event(event: dict, console: Console) -> None:
    """One line per change event: when it was recorded, its type and subject, then what it is now."""
    shown = event.get("after") or event.get("before")
    console.print(
        f"{event['recordedAt']}  [bold]{event['type']}[/bold]  {event['subject']}  {event['locationId']}",
        markup=True,
    )
    console.print(f"    {_value_text(shown)}", markup=False)


RENDERERS = {
    "locations": render_locations,
    "disruptions": render_disruptions,
    "air-quality": render_air_quality,
    "briefing": render_briefing,
}
