"""Readable summaries of the API's JSON bodies for the terminal (Rich).

Each ``render_*`` function takes the parsed body and a :class:`rich.console.Console`. Data text is always
passed as :class:`rich.text.Text`, never as markup, so a description containing ``[brackets]`` prints as is.
Times are shown in Europe/Brussels, the service area's local time.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.table import Table
from rich.text import Text

from urban_client.api import RateLimit

LOCAL_TZ = ZoneInfo("Europe/Brussels")
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
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.astimezone(LOCAL_TZ) if moment.tzinfo else moment


def format_moment(value) -> str:
    """``Mon 16 Nov 10:00`` in local time, or ``?``."""
    moment = local_time(value)
    return moment.strftime("%a %d %b %H:%M") if moment else "?"


def format_window(window) -> str:
    """``Mon 16 Nov 10:00–12:00`` for a ``{"start", "end"}`` object (end's date added when it differs)."""
    if not isinstance(window, dict):
        return "—"
    start, end = local_time(window.get("start")), local_time(window.get("end"))
    if not start:
        return "—"
    text = start.strftime("%a %d %b %H:%M")
    if end:
        same_day = end.date() == start.date()
        text += "–" + end.strftime("%H:%M" if same_day else "%a %d %b %H:%M")
    return text


def format_distance(km) -> str:
    """Metres below 1 km, else kilometres with two decimals.

    Examples
    --------
    >>> format_distance(0.123), format_distance(1.5), format_distance(None)
    ('123 m', '1.50 km', '?')
    """
    if not isinstance(km, (int, float)):
        return "?"
    return f"{km * 1000:.0f} m" if km < 1 else f"{km:.2f} km"


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


def _text(value) -> Text:
    return Text("" if value is None else str(value))


def _target_title(location) -> Text:
    if not isinstance(location, dict):
        return Text("?")
    coords = f"{location.get('lat')}, {location.get('lng')}"
    if location.get("name"):
        return Text(f"{location['name']} ({coords})")
    return Text(coords)


def render_locations(data, console: Console) -> None:
    """Table of saved locations, primary location marked with ``*``."""
    items = data.get("locations", []) if isinstance(data, dict) else data
    if not items:
        console.print("No saved locations. Use --lat and --lng with the other commands.")
        return
    table = Table(title="Saved locations", title_justify="left")
    for column in ("", "ID", "Name", "Address", "Label", "Lat", "Lng"):
        table.add_column(column)
    for loc in items:
        table.add_row(
            "*" if loc.get("isPrimary") else "",
            _text(loc.get("id")),
            _text(loc.get("name")),
            _text(loc.get("address")),
            _text(loc.get("label")),
            _text(loc.get("lat")),
            _text(loc.get("lng")),
        )
    console.print(table)


def render_disruptions(data, console: Console) -> None:
    """Summary counts, then works and transit detours as tables, nearest first."""
    header = Text("Disruptions near ", style="bold")
    header.append_text(_target_title(data.get("location")))
    header.append(f" — works within {data.get('radiusKm', '?')} km")
    console.print(header)
    s = data.get("summary") or {}
    console.print(
        f"{s.get('activeWorks', 0)} works running · {s.get('plannedWorks', 0)} planned · "
        f"{s.get('upcomingWorks14d', 0)} starting within 14 days · {s.get('transitDisruptions', 0)} transit "
        f"disruptions ({s.get('highSeverityTransit', 0)} high severity)"
    )
    works = sort_works(data.get("construction") or [])
    if works:
        table = Table(title="Road works", title_justify="left")
        for column in ("Distance", "Status", "Description", "From", "Until", "ID"):
            table.add_column(column, justify="right" if column == "Distance" else "left")
        for w in works:
            status = Text(str(w.get("status", "")), style="bold yellow" if w.get("status") == RUNNING else "")
            table.add_row(
                format_distance(w.get("distanceKm")),
                status,
                _text(w.get("description")),
                _text(w.get("startDate") or "—"),
                _text(w.get("endDate") or "open-ended"),
                _text(w.get("id")),
            )
        console.print(table)
    else:
        console.print("No road works nearby.")
    transit = sort_transit(data.get("transit") or [])
    if transit:
        table = Table(title="Transit disruptions", title_justify="left")
        has_distance = any(isinstance(t.get("distanceKm"), (int, float)) for t in transit)
        columns = ["Distance"] if has_distance else []
        columns += ["Severity", "Lines", "Delay", "Title", "Until", "ID"]
        for column in columns:
            table.add_column(column, justify="right" if column in ("Distance", "Delay") else "left")
        for t in transit:
            sev = str(t.get("severity", ""))
            delay = t.get("estimatedDelayMin")
            row = [
                Text(sev, style="bold red" if sev == "high" else ""),
                _text(", ".join(map(str, t.get("lines") or []))),
                _text(f"{delay} min" if delay is not None else "?"),
                _text(t.get("title")),
                _text(t.get("endDate") or "open-ended"),
                _text(t.get("id")),
            ]
            if has_distance:
                row.insert(0, _text(format_distance(t.get("distanceKm"))))
            table.add_row(*row)
        console.print(table)
    else:
        console.print("No transit disruptions.")
    if data.get("retrievedAt"):
        console.print(f"Data retrieved {format_moment(data['retrievedAt'])} (Brussels time)", style="dim")


def _reading_line(reading) -> Text:
    pollutant = reading.get("pollutant", "NO2")
    value, unit = reading.get("value"), reading.get("unit", "µg/m³")
    line = Text(f"{pollutant} ", style="bold")
    if value is None:
        line.append("unknown", style="bold")
        line.append(" — no measured value in the last two hours")
        return line
    line.append(f"{value} {unit}", style="bold")
    trend = reading.get("trend")
    arrow = TREND_ARROWS.get(trend, "?")
    pct = reading.get("trendPercent")
    line.append(f"  {arrow} ")
    line.append(f"{pct:+g}%" if isinstance(pct, (int, float)) else str(trend or "unknown"))
    if reading.get("measuredAt"):
        line.append(f"  measured {format_moment(reading['measuredAt'])}")
    return line


def render_air_quality(data, console: Console) -> None:
    """Latest NO2 value with unit and trend arrow, threshold verdict, station and LEZ status."""
    reading = data.get("reading") or {}
    console.print(_reading_line(reading))
    station = reading.get("station") or {}
    if station:
        console.print(
            Text(
                f"Station {station.get('name', '?')} ({station.get('id', '?')}), "
                f"{format_distance(station.get('distanceKm'))} away"
            )
        )
    compliance = data.get("compliance") or {}
    verdict = Text("Verdict: ", style="bold")
    status = compliance.get("status")
    style = {"above_eu": "bold red", "above_who": "yellow", "below_who": "green"}.get(status, "")
    verdict.append(str(compliance.get("label") or status or "unknown"), style=style)
    console.print(verdict)
    thresholds = data.get("thresholds") or {}
    parts = []
    for key, name in (("who", "WHO"), ("eu", "EU")):
        t = thresholds.get(key)
        if isinstance(t, dict):
            state = {True: "exceeded", False: "not exceeded"}.get(t.get("exceeded"), "unknown")
            parts.append(f"{name} {t.get('value')} {t.get('unit', 'µg/m³')}: {state}")
    if parts:
        basis = thresholds.get("basis")
        console.print(Text(" · ".join(parts) + (f" ({basis} figures)" if basis else "")))
    lez = data.get("lez") or {}
    inside = lez.get("inside")
    line = Text("Low-emission zone: ", style="bold")
    line.append({True: "yes", False: "no"}.get(inside, "unknown"), style="bold" if inside else "")
    if inside and lez.get("name"):
        line.append(f" ({lez['name']})")
    console.print(line)


def render_briefing(data, console: Console) -> None:
    """Risk, headline, key facts and the windows of the next 24 hours in local time."""
    risk = str(data.get("risk", "unknown"))
    line = Text("Risk: ", style="bold")
    line.append(risk.upper(), style=RISK_STYLES.get(risk, "bold"))
    console.print(line)
    if data.get("headline"):
        console.print(Text(str(data["headline"])))
    facts = data.get("keyFacts") or []
    for fact in facts:
        console.print(Text("  • " + str(fact.get("text") if isinstance(fact, dict) else fact)))
    console.print(Text(f"Best window:    {format_window(data.get('bestWindow'))}"))
    console.print(Text(f"Worst window:   {format_window(data.get('worstWindow'))}"))
    rush = data.get("nextRushPeak")
    rush_text = format_window(rush)
    if isinstance(rush, dict):
        if rush.get("peak"):
            rush_text += f" (peak {format_moment(rush['peak'])[-5:]})"
        if rush.get("kind"):
            rush_text = f"{rush['kind']} {rush_text}"
    console.print(Text(f"Next rush peak: {rush_text}"))
    console.print("Times in Brussels local time.", style="dim")


def render_quota(rate_limit: RateLimit, console: Console) -> None:
    """One dim line with the calls left today, when the API reported them."""
    if rate_limit.remaining is None:
        return
    of = f"/{rate_limit.limit}" if rate_limit.limit is not None else ""
    console.print(f"{rate_limit.remaining}{of} calls left today (resets 00:00 UTC)", style="dim")


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
