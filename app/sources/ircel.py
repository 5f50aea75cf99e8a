"""IRCEL-CELINE SOS timeseries REST API: NO2 stations, their series, and the last hours of hourly values.

Requests: ``GET /stations?phenomenon=8&expanded=true`` and ``GET /timeseries?phenomenon=8&expanded=true``, each
paged with ``limit``/``offset`` (``URBAN_IRCEL_PAGE_SIZE`` per page, until a short or repeated page), then the
values of every NO2 series in one ``POST /timeseries/getData`` (``{"timeseries": [ids], "timespan":
"PT{hours}H/{end}"}``, answered as an object keyed by series id). ``end`` is the next full UTC hour, so the
request (and its cache entry) stays the same within an hour while the 60 s expiry still brings new values.
Timestamps are Unix milliseconds marking the end of the hour; ``null`` values stay unknown; only measured
series count (``geo.data.upstream.series_kind``). The SOS serves station measurements only (modelled products
are other services); the label check stays as a second guard. A failed request fails the source: no
half-written ``no2`` layer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from geo.data import upstream as normalise

from .errors import MissingResponse, UpstreamError
from .http import PayloadError, Upstream
from .payload import SourceData, array_of_objects, check_skipped, object_with
from .settings import SourceSettings

SOURCE = "ircel"
NO2 = 8
MAX_PAGES = 100  # of URBAN_IRCEL_PAGE_SIZE items each, per list
_ID = re.compile(r"\d{1,9}")


def values_by_series(payload: Any) -> None:
    """A check: the ``POST /timeseries/getData`` answer, an object of ``{"values": [...]}`` per series id.

    Examples
    --------
    >>> values_by_series({"6522": {"values": []}})
    >>> values_by_series({"6522": []})
    Traceback (most recent call last):
    ...
    app.sources.http.PayloadError: series '6522': expected an object with a 'values' array
    """
    if not isinstance(payload, dict):
        raise PayloadError(f"expected a JSON object keyed by series id, got {type(payload).__name__}")
    for ts_id, entry in payload.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("values"), list):
            raise PayloadError(f"series {ts_id!r}: expected an object with a 'values' array")


def _item_id(item: dict) -> str:
    props = item.get("properties")
    return str(item.get("id") if "id" in item else (props or {}).get("id") if isinstance(props, dict) else "")


def fetch(up: Upstream, settings: SourceSettings, now: datetime | None = None) -> SourceData:
    """Fetch NO2 stations, series and recent values; check they normalise into ``stations`` and ``no2``.

    Examples
    --------
    >>> data = fetch(Upstream(session, settings), settings, now)   # doctest: +SKIP
    >>> sorted(data.raw)                                            # doctest: +SKIP
    ['no2', 'stations', 'timeseries']
    """
    now = now or datetime.now(timezone.utc)
    base = settings.ircel_url
    data = SourceData(SOURCE)
    times: dict[str, list] = {"stations": [], "no2": []}

    def get(path, kind, check, layer, params=None, endpoint="", body=None):
        kwargs = dict(expire_after=settings.expiry(SOURCE, kind), check=check, endpoint=endpoint)
        if body is None:
            got = up.get_json(SOURCE, f"{base}{path}", params=params, **kwargs)
        else:
            got = up.post_json(SOURCE, f"{base}{path}", body=body, **kwargs)
        data.requests += 1
        data.from_cache += got.from_cache
        times[layer].append(got.retrieved_at)
        return got.payload

    def pages(path, kind, layer) -> list:
        """Every item of a paged list (a short page ends it; so does a page of items already read, from a
        server that ignores ``offset``, and the end of a recording)."""
        size = max(1, int(settings.ircel_page_size))
        items: list = []
        seen: set = set()
        for n in range(MAX_PAGES):
            params = {"phenomenon": NO2, "expanded": "true", "limit": size, "offset": n * size}
            try:
                page = get(path, kind, array_of_objects, layer, params, endpoint=path)
            except MissingResponse:
                if n == 0:
                    raise
                return items  # a recording made without paging holds one answer
            new = [item for item in page if _item_id(item) not in seen]
            seen.update(_item_id(item) for item in new)
            items += new
            if len(page) < size or not new:
                return items
        raise UpstreamError(
            SOURCE,
            f"IRCEL: {path} has more than {MAX_PAGES} pages of {size} (URBAN_IRCEL_PAGE_SIZE); "
            f"refusing an unbounded list",
        )

    try:
        stations = pages("/stations", "stations", "stations")
    except MissingResponse:
        stations = None  # replay of a recording without /stations: the reference station list is used
    series = pages("/timeseries", "timeseries", "no2")
    end = now.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    timespan = f"PT{int(settings.ircel_hours)}H/{end.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    ids = [str(item.get("id", "")) for item in series]
    ids = sorted({i for i, item in zip(ids, series) if _ID.fullmatch(i) and _is_no2(item)}, key=int)
    values: dict[str, dict] = {}
    if ids:
        try:
            values = get(
                "/timeseries/getData",
                "no2",
                values_by_series,
                "no2",
                endpoint="/timeseries/getData",
                body={"timeseries": ids, "timespan": timespan},
            )
        except MissingResponse:  # a recording made with one GET per series
            for ts_id in ids:
                values[ts_id] = get(
                    f"/timeseries/{ts_id}/getData",
                    "no2",
                    object_with("values", arrays=("values",)),
                    "no2",
                    {"timespan": timespan},
                    endpoint="/timeseries/{id}/getData",
                )
        wanted = set(ids)
        values = {k: v for k, v in values.items() if k in wanted}
    try:
        station_layer = normalise.normalise_stations(stations if stations is not None else [])
        no2_layer = normalise.normalise_no2(series, values, station_layer)
    except normalise.UpstreamFormatError as exc:
        raise UpstreamError(SOURCE, f"IRCEL: unusable payload ({exc})") from None
    if (stations is not None and len(station_layer) == 0) or len(no2_layer) == 0:
        raise UpstreamError(SOURCE, "IRCEL: no NO2 stations or values (refusing an empty network)")
    check_skipped(SOURCE, "IRCEL", {"stations": station_layer, "no2": no2_layer}, settings)
    data.raw.update({"stations": stations, "timeseries": series, "no2": values})
    data.retrieved_at.update({layer: min(t) for layer, t in times.items() if t})
    return data


def _is_no2(item: dict) -> bool:
    phen = ((item.get("parameters") or {}).get("phenomenon") or {}).get("id")
    return phen is None or str(phen) == str(NO2)
