"""``urban history air-quality|works|detours``: the history resources (Enterprise) from the command line.

As thin as the other commands (:mod:`urban_client.cli`): the options go to ``GET /history/<resource>``
unchanged; the answer is printed as a readable summary, or as the API's body (``--json``, ``--geojson`` for
works, ``--csv``). ``--all`` follows the ``next`` cursors: JSON and GeoJSON become one body with every item
(``next`` null), CSV one header row and every page's rows.
"""

from __future__ import annotations

import csv
import io
import json

import click
from rich.console import Console
from rich.table import Table

from urban_client.api import CSV, GEOJSON, JSON, ApiError, NetworkError, history_params
from urban_client.cli import HINTS, Coordinate, _client, _fail, _settings, _write_body

MEMBER = {"air-quality": "values", "works": "works", "detours": "detours"}
HINTS.update(
    {
        "invalid_window": "Give --from (and --to) as RFC 3339 instants, e.g. 2026-11-01T00:00:00Z, --to after --from.",
        "window_too_long": "Ask for at most 366 days per call; split the window.",
        "window_out_of_range": "The history keeps the last 365 days, up to now.",
        "invalid_cursor": "Send --cursor with the same target, --from and --to as the page that gave it.",
        "history_unavailable": "The history store is unavailable; retry shortly.",
    }
)


def _pages(ctx, resource: str, params: dict[str, str], accept: str, follow: bool) -> list:
    """The answer's pages: the first, and with ``follow`` every next one (``Link: rel="next"``)."""
    settings = _settings(ctx)
    client = _client(settings)
    pages = []
    while True:
        try:
            response = client.get(f"history/{resource}", params, accept=accept)
        except ApiError as error:
            if accept == JSON and error.from_api and not pages:  # the API's error body, as --json does
                _write_body(error.body)
            _fail(error, settings)
        except NetworkError as error:
            _fail(error, settings)
        pages.append(response)
        if not follow or response.next_cursor is None:
            return pages
        params = {**params, "cursor": response.next_cursor}


def merged_csv(texts: list[str]) -> str:
    """One CSV of several pages: the first page's header row, every page's rows."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for k, text in enumerate(texts):
        rows = list(csv.reader(io.StringIO(text, newline="")))
        writer.writerows(rows if k == 0 else rows[1:])
    return out.getvalue()


def merged(resource: str, bodies: list[dict], accept: str) -> dict:
    """One body of several pages: the first page's members, every page's items, ``next`` null."""
    first = dict(bodies[0])
    if accept == GEOJSON:
        features = list(first["features"])
        for body in bodies[1:]:
            features += body["features"][1:]
        features[0] = {**features[0], "properties": {**features[0]["properties"], "next": None}}
        return {**first, "features": features}
    first[MEMBER[resource]] = [x for body in bodies for x in body[MEMBER[resource]]]
    first["next"] = None
    return first


def _summary(resource: str, body: dict, console: Console) -> None:
    window = body["window"]
    items = body[MEMBER[resource]]
    console.print(f"{resource} history {window['from']} – {window['to']}: {len(items)} on this page")
    if resource == "air-quality":
        measured = [v["value"] for v in items if v["value"] is not None]
        stations = sorted({v["stationId"] for v in items if v["stationId"]})
        if measured:
            console.print(
                f"NO2 {body['unit']}: {len(measured)} of {len(items)} hours measured, "
                f"min {min(measured):g}, mean {sum(measured) / len(measured):.1f}, max {max(measured):g}; "
                f"station(s) {', '.join(stations) or '-'}"
            )
        table = Table("hour (end)", "NO2", "station", "km")
        for v in items:
            value = "unknown" if v["value"] is None else f"{v['value']:g}"
            table.add_row(v["timestamp"], value, v["stationId"] or "-", f"{v['stationDistanceKm'] or 0:g}")
        console.print(table)
    elif resource == "works":
        for w in items:
            console.print(
                f"[bold]{w['id']}[/bold] {w['distanceKm']:g} km · {w['status']} · {w['description']} "
                f"(seen {w['firstSeen']} – {w['lastSeen']})"
            )
            for c in w["changes"]:
                what = c["change"] if c["field"] is None else f"{c['field']}: {c['from']} → {c['to']}"
                console.print(f"    {c['recordedAt']}  {what}")
    else:
        table = Table("id", "lines", "title", "listed from", "until")
        for d in items:
            table.add_row(d["id"], ", ".join(d["lines"]), d["title"] or "", d["listedFrom"], d["listedUntil"])
        console.print(table)
    if body["next"] is not None:
        console.print(f"more: --cursor {body['next']} (or --all)")


def _command(resource: str, summary: str, geojson: bool):
    def command(
        ctx, location_id, lat, lng, start, end, limit, cursor, follow, as_json, as_csv, as_geojson=False
    ):
        if sum((as_json, as_csv, as_geojson)) > 1:
            raise click.UsageError("give one of --json, --csv" + (", --geojson" if geojson else ""))
        accept = CSV if as_csv else GEOJSON if as_geojson else JSON
        params = history_params(start, end, location_id, lat, lng, limit, cursor)
        pages = _pages(ctx, resource, params, accept, follow)
        if len(pages) == 1 and (as_json or as_csv or as_geojson):
            _write_body(pages[0].body)
        elif as_csv:
            _write_body(merged_csv([p.data for p in pages]).encode("utf-8"))
        elif as_json or as_geojson:
            body = merged(resource, [p.data for p in pages], accept)
            _write_body(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        else:
            _summary(resource, merged(resource, [p.data for p in pages], accept), Console(highlight=False))

    for option in reversed(_options(geojson)):
        command = option(command)
    return click.command(resource, help=summary)(click.pass_context(command))


def _options(geojson: bool) -> list:
    options = [
        click.option(
            "--location-id", metavar="ID", help="One of your saved location ids; not with --lat/--lng."
        ),
        click.option("--lat", type=Coordinate(), metavar="DEGREES", help="Latitude in degrees (with --lng)."),
        click.option(
            "--lng", type=Coordinate(), metavar="DEGREES", help="Longitude in degrees (with --lat)."
        ),
        click.option(
            "--from",
            "start",
            required=True,
            metavar="INSTANT",
            help="Start of the window, RFC 3339 (e.g. 2026-11-01T00:00:00Z), within the last 365 days.",
        ),
        click.option("--to", "end", metavar="INSTANT", help="End of the window (exclusive); default now."),
        click.option(
            "--limit", type=click.IntRange(min=1), metavar="N", help="Items per page (API default)."
        ),
        click.option("--cursor", metavar="CURSOR", help="The `next` of a previous page."),
        click.option("--all", "follow", is_flag=True, help="Follow the pages to the last one."),
        click.option("--json", "as_json", is_flag=True, help="Print the API's JSON body."),
        click.option("--csv", "as_csv", is_flag=True, help="Print the API's CSV (for spreadsheets)."),
    ]
    if geojson:
        options.append(click.option("--geojson", "as_geojson", is_flag=True, help="Print GeoJSON (extents)."))
    return options


@click.group()
def history():
    """Enterprise: what the service recorded at a point over a past window (up to 366 days per call)."""


history.add_command(
    _command(
        "air-quality",
        "Hourly measured NO2 at a point (nearest station of each hour; unknown is not 0).",
        False,
    )
)
history.add_command(
    _command("works", "Road works within 2 km with their change logs (status, start, end).", True)
)
history.add_command(_command("detours", "De Lijn detours that hit a point over the window.", False))
