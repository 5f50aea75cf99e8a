"""GIPOD road works: OGC API Features ``INNAME`` items (the occupations with their polygons) and ``HINDER_PUNT``
items (their hindrances) over the service-area bbox, ``links rel=next`` paging.

The server is asked only for what we list: ``filter=<CQL2 text>&filter-lang=cql2-text`` with
``Type IN ('Werk','Grondwerk') AND Status IN ('In uitvoering','Concreet gepland')``
(:func:`geo.data.upstream_gipod.cql2_filter`) for the works, ``HindranceStatus IN ('Gevalideerd')`` for the
hindrances. The page budget is ``URBAN_GIPOD_MAX_PAGES`` pages of ``URBAN_GIPOD_PAGE_SIZE`` features per
collection (one feature per record): when the first page's ``numberMatched`` already exceeds it, or paging goes
past it, the source fails with that reason. Only the configured base URL is ever requested; a ``next`` link
that leaves it is refused (SSRF guard).
"""

from __future__ import annotations

from datetime import datetime

from geo.data import upstream as normalise
from geo.data.upstream_gipod import HINDRANCE_COLLECTION, WORKS_COLLECTION, cql2_filter, hindrance_filter

from .errors import UpstreamError
from .http import Upstream, same_origin
from .payload import SourceData, check_skipped, feature_collection
from .settings import SourceSettings

SOURCE = "gipod"
COLLECTION = WORKS_COLLECTION


def fetch(up: Upstream, settings: SourceSettings, now: datetime | None = None) -> SourceData:
    """Fetch every page of works and of their validated hindrances in the bbox and check that they
    normalise into a ``works`` layer.

    Examples
    --------
    >>> data = fetch(Upstream(session, settings), settings)   # doctest: +SKIP
    >>> len(data.raw["works"]), len(data.raw["hindrances"]), data.retrieved_at["works"]    # doctest: +SKIP
    (3, 1, datetime.datetime(2026, 11, 16, 7, 0, tzinfo=datetime.timezone.utc))
    """
    data = SourceData(SOURCE)
    pages, retrieved = _collection(up, settings, data, WORKS_COLLECTION, cql2_filter())
    hindrances, retrieved_h = _collection(up, settings, data, HINDRANCE_COLLECTION, hindrance_filter())
    try:
        layer = normalise.normalise_works(pages, now=now, hindrance_pages=hindrances)
    except normalise.UpstreamFormatError as exc:
        raise UpstreamError(SOURCE, f"GIPOD: unusable payload ({exc})") from None
    if len(layer) == 0:
        raise UpstreamError(SOURCE, "GIPOD: no works in the service area (refusing an empty register)")
    check_skipped(SOURCE, "GIPOD", {"works": layer}, settings)
    data.raw["works"] = pages
    data.raw["hindrances"] = hindrances
    data.retrieved_at["works"] = min(retrieved + retrieved_h)  # the oldest page (each read one at least)
    return data


def _collection(
    up: Upstream, settings: SourceSettings, data: SourceData, collection: str, cql2: str
) -> tuple[list[dict], list[datetime]]:
    """(pages, retrieval times) of one collection's items in the bbox matching ``cql2``, every page."""
    base = settings.gipod_url
    url: str | None = f"{base}/collections/{collection}/items"
    params: dict | None = {
        "limit": settings.gipod_page_size,
        "bbox": ",".join(f"{v:g}" for v in settings.gipod_bbox),
        "filter": cql2,
        "filter-lang": "cql2-text",
    }
    budget = settings.gipod_max_pages * settings.gipod_page_size
    expiry = settings.expiry(SOURCE, "works")
    pages: list[dict] = []
    retrieved: list[datetime] = []
    seen: set[str] = set()
    while url is not None:
        if len(pages) >= settings.gipod_max_pages:
            raise UpstreamError(
                SOURCE,
                f"GIPOD {collection}: more than the page budget of {settings.gipod_max_pages} pages; "
                "raise URBAN_GIPOD_MAX_PAGES or the page size",
            )
        got = up.get_json(
            SOURCE,
            url,
            params=params,
            headers={"Accept": "application/geo+json, application/json"},
            expire_after=expiry,
            check=feature_collection,
            endpoint="/collections/{collection}/items",
        )
        matched = got.payload.get("numberMatched")
        if not pages and isinstance(matched, int) and matched > budget:
            raise UpstreamError(
                SOURCE,
                f"GIPOD {collection}: {matched} features match, more than the page budget of "
                f"{settings.gipod_max_pages} pages x {settings.gipod_page_size} "
                f"(URBAN_GIPOD_MAX_PAGES, URBAN_GIPOD_PAGE_SIZE)",
            )
        data.requests += 1
        data.from_cache += got.from_cache
        pages.append(got.payload)
        retrieved.append(got.retrieved_at)
        seen.add(got.url)
        url, params = _next_link(got.payload, base), None
        if url in seen:
            raise UpstreamError(SOURCE, f"GIPOD {collection}: paging loops back to a page already read")
    return pages, retrieved


def _next_link(payload: dict, base: str) -> str | None:
    for link in payload.get("links") or []:
        if isinstance(link, dict) and link.get("rel") == "next" and link.get("href"):
            href = str(link["href"])
            if not same_origin(href, base):
                raise UpstreamError(SOURCE, "GIPOD: a 'next' link points outside the configured base URL")
            return href
    return None
