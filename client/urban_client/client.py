"""The Python client: ``Client(key).air_quality(lat=…, lng=…)`` returns the API's JSON body, parsed.

Every method returns the body exactly as the API sends it (a ``dict``); with ``geojson=True`` the GeoJSON
FeatureCollection of the same answer. Failures raise the typed errors of :mod:`urban_client.api`
(:class:`~urban_client.api.ApiError` subclasses carrying the API's ``error`` code, message and status, or
:class:`~urban_client.api.NetworkError`). The rate-limit headers of the last answer are in ``rate_limit``.

Examples
--------
>>> client = Client("uc_live_…", base_url="http://127.0.0.1:8000/api/v1")
>>> client
Client('http://127.0.0.1:8000/api/v1', api_key=set)
>>> client.air_quality(lat=51.2194, lng=4.4025)["compliance"]["status"]  # doctest: +SKIP
'above_eu'
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from urban_client.api import (
    CSV,
    GEOJSON,
    HISTORY_RESOURCES,
    JSON,
    ApiClient,
    RateLimit,
    changes_params,
    changes_path,
    history_params,
    target_params,
)
from urban_client.config import resolve

Body = dict[str, Any]


class Client:
    """A client bound to one key and base URL.

    Parameters
    ----------
    api_key : str, optional
        The ``uc_live_…`` key; default ``URBAN_API_KEY`` or the key stored by ``urban configure``.
    base_url : str, optional
        API root with the version; default ``URBAN_BASE_URL``, the config file, or
        ``http://127.0.0.1:8000/api/v1``.
    timeout : float, optional
        Seconds for connecting and for each read (default ``URBAN_TIMEOUT``, the config file, or 10).
    lang : str, optional
        ``nl``, ``fr`` or ``en``, sent as ``Accept-Language``: the language of the texts the API generates
        (headline, key facts, labels); data values stay Dutch. Default: no header (Dutch).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | None = None,
        lang: str | None = None,
    ):
        settings = resolve(base_url=base_url, timeout=timeout)
        self._api = ApiClient(
            settings.base_url,
            api_key if api_key is not None else settings.api_key,
            settings.timeout,
            language=lang,
        )
        self.rate_limit: RateLimit = RateLimit()
        self.last_cursor: str | None = None  # after iter_changes: where the next poll starts

    def __repr__(self):  # never shows the key
        return f"Client({self._api.base_url!r}, api_key={'set' if self._api._api_key else None})"

    def _get(self, path: str, params: dict[str, str] | None, geojson: bool) -> Body:
        response = self._api.get(path, params, accept=GEOJSON if geojson else JSON)
        self.rate_limit = response.rate_limit
        return response.data

    def locations(self, *, geojson: bool = False) -> Body:
        """``GET /locations``: ``{"locations": [...]}``, or a FeatureCollection of the saved points."""
        return self._get("locations", None, geojson)

    def disruptions(
        self,
        *,
        location_id: str | None = None,
        lat: float | None = None,
        lng: float | None = None,
        geojson: bool = False,
        as_of: str | datetime | None = None,
    ) -> Body:
        """``GET /disruptions``: road works within 2 km and De Lijn detours at a saved location or a point
        (``as_of``: the answer at that past instant, Enterprise)."""
        return self._get("disruptions", target_params(location_id, lat, lng, as_of), geojson)

    def air_quality(
        self,
        *,
        location_id: str | None = None,
        lat: float | None = None,
        lng: float | None = None,
        geojson: bool = False,
        as_of: str | datetime | None = None,
    ) -> Body:
        """``GET /air-quality``: latest measured NO2, thresholds, compliance and low-emission zone
        (``as_of``: the answer at that past instant, Enterprise)."""
        return self._get("air-quality", target_params(location_id, lat, lng, as_of), geojson)

    def briefing(
        self,
        *,
        location_id: str | None = None,
        lat: float | None = None,
        lng: float | None = None,
        as_of: str | datetime | None = None,
    ) -> Body:
        """``GET /briefing``: risk, headline, key facts and the windows of the next 24 hours (JSON only;
        ``as_of``: the answer at that past instant, Enterprise)."""
        return self._get("briefing", target_params(location_id, lat, lng, as_of), False)

    def changes(
        self, *, location_id: str | None = None, since: str | None = None, limit: int | None = None
    ) -> Body:
        """``GET /locations/{id}/changes`` (or ``GET /changes``: every saved location): one page of change
        events after the cursor ``since``, ``{"events": [...], "nextCursor": ..., "hasMore": ...}``."""
        return self._get(changes_path(location_id), changes_params(since, limit), False)

    def iter_changes(
        self, *, location_id: str | None = None, since: str | None = None, limit: int | None = None
    ) -> Iterator[Body]:
        """Every change event after ``since``, page after page, until the feed has no more; then
        ``last_cursor`` holds the cursor to poll from next time (an empty poll costs no quota).

        Examples
        --------
        >>> for event in client.iter_changes(location_id="loc_3fK9xQ2mPa7Z"):  # doctest: +SKIP
        ...     print(event["type"], event["subject"])
        >>> client.last_cursor  # doctest: +SKIP
        'cur_…'
        """
        cursor = since
        while True:
            page = self.changes(location_id=location_id, since=cursor, limit=limit)
            cursor = self.last_cursor = page["nextCursor"]
            yield from page["events"]
            if not page["hasMore"]:
                return

    # --- history (Enterprise) ------------------------------------------------------------------------
    def history(
        self,
        resource: str,
        *,
        start: str | datetime,
        end: str | datetime | None = None,
        location_id: str | None = None,
        lat: float | None = None,
        lng: float | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        geojson: bool = False,
        csv: bool = False,
    ) -> Any:
        """``GET /history/<resource>`` (``air-quality``, ``works`` or ``detours``) over the window ``start``
        to ``end`` (default now): one page, the JSON body (``next``: the cursor of the next page), a
        FeatureCollection with ``geojson=True`` (works), or the CSV text with ``csv=True``."""
        if resource not in HISTORY_RESOURCES:
            raise ValueError(f"resource must be one of {', '.join(HISTORY_RESOURCES)}, not {resource!r}")
        if geojson and csv:
            raise ValueError("ask for geojson or csv, not both")
        params = history_params(start, end, location_id, lat, lng, limit, cursor)
        response = self._api.get(
            f"history/{resource}", params, accept=CSV if csv else GEOJSON if geojson else JSON
        )
        self.rate_limit = response.rate_limit
        return response.data

    def history_items(self, resource: str, **kwargs) -> Iterator[dict]:
        """Every item of a history answer (``values``, ``works`` or ``detours``), following ``next`` page
        by page; ``kwargs`` as :meth:`history` (JSON only)."""
        member = {"air-quality": "values", "works": "works", "detours": "detours"}[resource]
        cursor = kwargs.pop("cursor", None)
        while True:
            page = self.history(resource, **kwargs, cursor=cursor)
            yield from page[member]
            cursor = page["next"]
            if cursor is None:
                return

    def no2_history(self, **kwargs) -> Body:
        """``GET /history/air-quality``: the hourly measured NO2 at a point over a window (:meth:`history`)."""
        return self.history("air-quality", **kwargs)

    def works_history(self, **kwargs) -> Body:
        """``GET /history/works``: works within 2 km with their change logs (:meth:`history`)."""
        return self.history("works", **kwargs)

    def detours_history(self, **kwargs) -> Body:
        """``GET /history/detours``: the detours that hit a point over a window (:meth:`history`)."""
        return self.history("detours", **kwargs)
