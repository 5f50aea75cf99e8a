"""IRCEL-CELINE SOS timeseries REST API: NO2 stations, their series, and the last hours of hourly values.

Requests: ``GET /stations?phenomenon=8&expanded=true``, ``GET /timeseries?phenomenon=8&expanded=true`` and per
series ``GET /timeseries/{id}/getData?timespan=PT{hours}H/{end}``. ``end`` is the next full UTC hour, so the URL
(and its cache entry) stays the same within an hour while the 60 s expiry still brings new values. Timestamps
are Unix milliseconds marking the end of the hour; ``null`` values stay unknown; only measured series count
(``geo.data.upstream.series_kind``). Any failed series fails the source: no half-written ``no2`` layer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from geo.data import upstream as normalise

from .errors import MissingResponse, UpstreamError
from .http import Upstream
from .payload import SourceData, array_of_objects, check_skipped, object_with
from .settings import SourceSettings

SOURCE = "ircel"
NO2 = 8
_ID = re.compile(r"\d{1,9}")


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

    def get(path, kind, check, layer, params=None, endpoint=""):
        got = up.get_json(
            SOURCE,
            f"{base}{path}",
            params=params,
            expire_after=settings.expiry(SOURCE, kind),
            check=check,
            endpoint=endpoint,
        )
        data.requests += 1
        data.from_cache += got.from_cache
        times[layer].append(got.retrieved_at)
        return got.payload

    expanded = {"phenomenon": NO2, "expanded": "true"}
    try:
        stations = get("/stations", "stations", array_of_objects, "stations", expanded, endpoint="/stations")
    except MissingResponse:
        stations = None  # replay of a recording without /stations: the reference station list is used
    series = get("/timeseries", "timeseries", array_of_objects, "no2", expanded, endpoint="/timeseries")
    end = now.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    timespan = f"PT{int(settings.ircel_hours)}H/{end.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    values: dict[str, dict] = {}
    for item in series:
        ts_id = str(item.get("id", ""))
        if not _ID.fullmatch(ts_id) or not _is_no2(item):
            continue
        values[ts_id] = get(
            f"/timeseries/{ts_id}/getData",
            "no2",
            object_with("values", arrays=("values",)),
            "no2",
            {"timespan": timespan},
            endpoint="/timeseries/{id}/getData",
        )
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
