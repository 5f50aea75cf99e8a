"""De Lijn Kern Open Data: the stops of one entity, the lines serving each stop, and all current detours.

Requests (subscription key in the ``Ocp-Apim-Subscription-Key`` header, from ``URBAN_DELIJN_KEY``):

- ``GET /entiteiten/{e}/haltes`` — the stops of entity ``e`` (1 = Antwerpen);
- ``GET /entiteiten/{e}/lijnen`` then ``GET /lijnen/{e}/{lijn}/lijnrichtingen/{HEEN|TERUG}/haltes`` — the
  stops of each line direction, inverted into the stop → lines relation (one request per line direction
  instead of one per stop; a direction that does not exist answers 404 and is skipped). A line is its
  ``(entiteitnummer, lijnnummer)``; the list holds lines valid today or later, so a line whose every version
  starts after today (``lijnGeldigVan``) is not asked for: it serves no stop yet;
- ``GET /vervoerregios`` — the names of the transport regions;
- ``GET /omleidingen?startDatum=…&eindDatum=…&taalCode=NEDERLANDS`` — detours of the next 28 days (the API
  accepts a window of at most one month; both ends are Europe/Brussels wall-clock times without a zone, as
  the service reads them);
- ``GET /entiteiten/{e}/lijnen`` for every other entity the detours name, then ``GET /lijnen/{e}/{l}`` once
  for each line a detour names that no list holds (a 404 leaves the line unknown: counted, never guessed);
- ``GET /haltes/{e}/{h}`` for every detour stop that is not in the stop list (detour stops carry no
  coordinates); a 404 leaves the stop unknown, and a detour none of whose stops can be placed is skipped.

Path segments taken from payloads (entity, line and stop numbers) must be plain digits, or they are skipped.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from geo.data import upstream as normalise
from geo.data.upstream_delijn import LineBook, detour_entities, unknown_lines, unknown_stops

from .errors import UpstreamError
from .http import Upstream
from .payload import SourceData, check_skipped, object_with
from .settings import SourceSettings

SOURCE = "delijn"
DIRECTIONS = ("HEEN", "TERUG")
DETOUR_DAYS = 28  # the API accepts a window of at most one month
_DIGITS = re.compile(r"\d{1,7}")
_LOCAL = ZoneInfo("Europe/Brussels")


def fetch(up: Upstream, settings: SourceSettings, now: datetime | None = None) -> SourceData:
    """Fetch stops, stop lines and detours; check they normalise into ``stops`` and ``detours``.

    Examples
    --------
    >>> data = fetch(Upstream(session, settings), settings, now)   # doctest: +SKIP
    >>> sorted(data.raw)                                            # doctest: +SKIP
    ['detours', 'lines', 'regions', 'stop_details', 'stop_lines', 'stops']
    """
    if not settings.delijn_key:
        raise UpstreamError(SOURCE, "De Lijn: no subscription key configured (set URBAN_DELIJN_KEY)")
    now = now or datetime.now(timezone.utc)
    base, entity = settings.delijn_url, int(settings.delijn_entity)
    headers = {"Ocp-Apim-Subscription-Key": settings.delijn_key}
    data = SourceData(SOURCE)
    times: dict[str, list] = {"stops": [], "detours": []}

    # the layer whose retrievedAt a request counts for: the detour list makes the detours' age; the lists,
    # regions and stop lookups the detours are read with (cached for a day) count for the stops
    def get(path, kind, check, params=None, missing_ok=False, endpoint="", layer="stops"):
        got = up.get_json(
            SOURCE,
            f"{base}{path}",
            params=params,
            headers=headers,
            expire_after=settings.expiry(SOURCE, kind),
            check=check,
            missing_ok=missing_ok,
            endpoint=endpoint,
        )
        data.requests += 1
        if got is None:
            return None
        data.from_cache += got.from_cache
        times[layer].append(got.retrieved_at)
        return got.payload

    lines_check = object_with("lijnen", arrays=("lijnen",))
    haltes = get(
        f"/entiteiten/{entity}/haltes",
        "stops",
        object_with("haltes", arrays=("haltes",)),
        endpoint="/entiteiten/{entiteitnummer}/haltes",
    )
    lijnen = get(
        f"/entiteiten/{entity}/lijnen",
        "lines",
        lines_check,
        endpoint="/entiteiten/{entiteitnummer}/lijnen",
    )
    stop_lines: dict[str, dict] = {}
    book = LineBook.from_payloads(lijnen, now)
    asked: set[tuple[str, str]] = set()
    for lijn in lijnen.get("lijnen") or []:
        if not isinstance(lijn, dict):
            continue
        e, nr = str(lijn.get("entiteitnummer", entity)).strip(), str(lijn.get("lijnnummer", "")).strip()
        if not (_DIGITS.fullmatch(e) and _DIGITS.fullmatch(nr)) or (e, nr) in asked:
            continue
        asked.add((e, nr))
        if book.not_yet_valid(e, nr):
            continue
        for richting in DIRECTIONS:
            page = get(
                f"/lijnen/{e}/{nr}/lijnrichtingen/{richting}/haltes",
                "lines",
                object_with("haltes", arrays=("haltes",)),
                missing_ok=True,
                endpoint="/lijnen/{entiteitnummer}/{lijnnummer}/lijnrichtingen/{richting}/haltes",
            )
            for halte in (page or {}).get("haltes") or []:
                if not isinstance(halte, dict) or not halte.get("haltenummer"):
                    continue
                key = f"{halte.get('entiteitnummer', e)}_{halte['haltenummer']}"
                entry = stop_lines.setdefault(key, {"lijnrichtingen": []})
                entry["lijnrichtingen"].append({"entiteitnummer": e, "lijnnummer": nr, "richting": richting})
    regions = get(
        "/vervoerregios",
        "lines",
        object_with("vervoerRegios", arrays=("vervoerRegios",)),
        missing_ok=True,
        endpoint="/vervoerregios",
    )
    start = now.astimezone(_LOCAL).replace(second=0, microsecond=0)
    window = {
        "startDatum": start.strftime("%Y-%m-%dT%H:%M:%S"),
        "eindDatum": (start + timedelta(days=DETOUR_DAYS)).strftime("%Y-%m-%dT%H:%M:%S"),
        "taalCode": "NEDERLANDS",
    }
    omleidingen = get(
        "/omleidingen",
        "detours",
        object_with("omleidingen", arrays=("omleidingen",)),
        params=window,
        endpoint="/omleidingen",
        layer="detours",
    )
    try:
        lines = [lijnen]
        for e in detour_entities(omleidingen):
            if e != str(entity) and _DIGITS.fullmatch(e):
                lines.append(
                    get(
                        f"/entiteiten/{e}/lijnen",
                        "lines",
                        lines_check,
                        endpoint="/entiteiten/{entiteitnummer}/lijnen",
                    )
                )
        for e, nr in unknown_lines(omleidingen, LineBook.from_payloads(lines, now)):
            if _DIGITS.fullmatch(e) and _DIGITS.fullmatch(nr):
                found = get(
                    f"/lijnen/{e}/{nr}",
                    "lines",
                    object_with("lijnnummer"),
                    missing_ok=True,
                    endpoint="/lijnen/{entiteitnummer}/{lijnnummer}",
                )
                if found is not None:
                    lines.append({"lijnen": [found]})
        stops = normalise.normalise_stops(haltes, stop_lines, lines, on=now)
        details: dict[str, dict | None] = {}
        for e, h in unknown_stops(omleidingen, stops):
            if _DIGITS.fullmatch(e) and _DIGITS.fullmatch(h):
                details[f"{e}_{h}"] = get(
                    f"/haltes/{e}/{h}",
                    "stops",
                    object_with("haltenummer"),
                    missing_ok=True,
                    endpoint="/haltes/{entiteitnummer}/{haltenummer}",
                )
        detours = normalise.normalise_detours(omleidingen, lines, stops, details, regions, on=now)
    except normalise.UpstreamFormatError as exc:
        raise UpstreamError(SOURCE, f"De Lijn: unusable payload ({exc})") from None
    if len(stops) == 0:
        raise UpstreamError(SOURCE, f"De Lijn: no stops for entity {entity} (refusing an empty stop list)")
    check_skipped(SOURCE, "De Lijn", {"stops": stops, "detours": detours}, settings)
    data.raw.update(
        {
            "stops": haltes,
            "stop_lines": stop_lines,
            "lines": lines,
            "stop_details": details,
            "regions": regions,
            "detours": omleidingen,
        }
    )
    data.retrieved_at.update({layer: min(t) for layer, t in times.items()})
    return data
