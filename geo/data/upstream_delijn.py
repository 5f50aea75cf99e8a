"""De Lijn Kern Open Data as the real service sends it: lines by identity, detour stops by key, regions.

A line **is** its ``(entiteitnummer, lijnnummer)``: the internal number, unique per entity. The public number
(``lijnnummerPubliek``) is what people see, and it repeats: in the Antwerp region public ``2`` is tram 2
(internal 2), bus 40 and bus 948. Real ``omleidingen`` name their lines by ``entiteitnummer`` + internal
``lijnnummer`` only and their stops by ``entiteitnummer`` + ``haltenummer`` only (no coordinates, no name).
:class:`LineBook` maps a line's identity to its public number, transport region (``vervoerRegioCode``),
``vervoertype``, ``vervoerslaag`` and validity (``lijnGeldigVan`` / ``lijnGeldigTot``) from
``GET /entiteiten/{e}/lijnen`` and ``GET /lijnen/{e}/{l}`` answers; :class:`StopBook` places a stop key from the
stops layer or from ``GET /haltes/{e}/{h}`` answers; :func:`region_names` reads ``GET /vervoerregios``.
Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

#: ``vervoerRegioCode`` of the Antwerp transport region (Vervoerregio Antwerpen)
ANTWERP_REGION = "AN"


def stop_key(entity, number) -> str:
    """``"{entiteitnummer}_{haltenummer}"``, the id of a stop in the ``stops`` layer.

    Examples
    --------
    >>> stop_key("3", 308530)
    '3_308530'
    """
    return f"{str(entity).strip()}_{str(number).strip()}"


def line_key(entity, number) -> str:
    """``"{entiteitnummer}_{lijnnummer}"``: a line's identity (its internal number within its entity).

    Examples
    --------
    >>> line_key("1", 948), line_key(" 1", "2 ")
    ('1_948', '1_2')
    """
    return f"{str(entity).strip()}_{str(number).strip()}"


def local_date(moment) -> dt.date | None:
    """The Europe/Brussels calendar date of an instant (ISO text, datetime or Timestamp; naive = UTC), or a
    date as given; None for None.

    Examples
    --------
    >>> local_date("2026-03-31T22:30:00Z"), local_date(dt.date(2026, 1, 2))
    (datetime.date(2026, 4, 1), datetime.date(2026, 1, 2))
    """
    if moment is None or (isinstance(moment, dt.date) and not isinstance(moment, dt.datetime)):
        return moment
    import pandas as pd

    t = pd.Timestamp(moment)
    t = t.tz_localize("UTC") if t.tzinfo is None else t
    return t.tz_convert("Europe/Brussels").date()


def _date(value) -> dt.date | None:
    """The date of ``lijnGeldigVan`` / ``lijnGeldigTot`` (``2024-03-31`` or a date-time); None when unusable."""
    try:
        return dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


@dataclass(frozen=True)
class Line:
    """One version of a line of the ``lijnen`` list."""

    public: str
    region: str
    entity: str = ""
    number: str = ""  # internal lijnnummer
    mode: str = ""  # vervoertype: BUS, TRAM, ...
    network: str = ""  # vervoerslaag: Kernnet, Aanvullend net, Flex, ... ("" when not sent)
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None

    @property
    def key(self) -> str:
        return line_key(self.entity, self.number)

    def valid_on(self, day: dt.date) -> bool:
        """``lijnGeldigVan <= day <= lijnGeldigTot`` (an absent bound does not limit)."""
        return (self.valid_from is None or self.valid_from <= day) and (
            self.valid_to is None or day <= self.valid_to
        )


def _pick(versions: list[Line], day: dt.date | None) -> Line:
    """The version valid on ``day``, else the next one to become valid, else the last to end (the list
    holds lines valid today or later, so an ended version only comes from a copy older than a timetable
    change); the last one read when ``day`` is None."""
    if day is None or len(versions) == 1:
        return versions[-1]
    valid = [v for v in versions if v.valid_on(day)]
    if valid:
        return valid[-1]
    later = [v for v in versions if v.valid_from is not None and v.valid_from > day]
    if later:
        return min(later, key=lambda v: v.valid_from or dt.date.max)
    return max(versions, key=lambda v: v.valid_to or dt.date.min)


@dataclass
class LineBook:
    """``(entity, internal lijnnummer)`` -> :class:`Line`, from ``/entiteiten/{e}/lijnen`` answers (and single
    ``/lijnen/{e}/{l}`` answers, a ``Lijn`` object each).

    ``on`` (a date) chooses between versions of one line (validity) and tells which lines do not run yet.

    Examples
    --------
    >>> book = LineBook.from_payloads({"lijnen": [{"entiteitnummer": "1", "lijnnummer": "908",
    ...                                             "lijnnummerPubliek": "8", "vervoerRegioCode": "ME"}]})
    >>> (book.get("1", "908").public, book.get("1", "908").region)
    ('8', 'ME')
    >>> book.get("1", "9") is None
    True
    """

    versions: dict = field(default_factory=dict)
    entities: set = field(default_factory=set)
    on: dt.date | None = None

    @classmethod
    def from_payloads(cls, payloads, on=None) -> "LineBook":
        book = cls(on=local_date(on))
        if payloads is None:
            return book
        for page in payloads if isinstance(payloads, list) else [payloads]:
            if not isinstance(page, Mapping):
                continue
            lijnen = page.get("lijnen") if "lijnen" in page else [page] if "lijnnummer" in page else []
            for lijn in lijnen or []:
                if not isinstance(lijn, Mapping) or lijn.get("lijnnummer") in (None, ""):
                    continue
                e, nr = str(lijn.get("entiteitnummer", "")).strip(), str(lijn["lijnnummer"]).strip()
                public = lijn.get("lijnnummerPubliek") or lijn.get("lijnNummerPubliek") or ""
                line = Line(
                    str(public).strip(),
                    str(lijn.get("vervoerRegioCode") or "").strip(),
                    e,
                    nr,
                    str(lijn.get("vervoertype") or "").strip(),
                    str(lijn.get("vervoerslaag") or "").strip(),
                    _date(lijn.get("lijnGeldigVan")),
                    _date(lijn.get("lijnGeldigTot")),
                )
                known = book.versions.setdefault((e, nr), [])
                if line not in known:
                    known.append(line)
                book.entities.add(e)
        return book

    @property
    def lines(self) -> dict:
        """``(entity, internal)`` -> the chosen :class:`Line` of every line in the book."""
        return {k: _pick(v, self.on) for k, v in self.versions.items()}

    def get(self, entity, internal) -> Line | None:
        versions = self.versions.get((str(entity).strip(), str(internal).strip()))
        return _pick(versions, self.on) if versions else None

    def not_yet_valid(self, entity, internal) -> bool:
        """True when every known version of the line starts after ``on`` (it does not run yet)."""
        versions = self.versions.get((str(entity).strip(), str(internal).strip())) or []
        return bool(self.on and versions) and all(
            v.valid_from is not None and v.valid_from > self.on for v in versions
        )

    def resolve(self, lijnrichting: Mapping) -> Line | None:
        """The line of one ``lijnrichting``: the book's entry for its ``(entiteitnummer, lijnnummer)``, with the
        direction's own ``lijnNummerPubliek`` when it carries one (the OpenAPI examples do); None when the
        public number is unknown (the internal number is never passed off as the public one)."""
        e = str(lijnrichting.get("entiteitnummer", "")).strip()
        nr = str(lijnrichting.get("lijnnummer", "") or "").strip()
        own = lijnrichting.get("lijnNummerPubliek") or lijnrichting.get("lijnnummerPubliek")
        found = self.get(e, nr) if nr else None
        if own:
            base = found or Line("", "", e, nr)
            return Line(
                str(own).strip(),
                base.region,
                e,
                nr,
                base.mode,
                base.network,
                base.valid_from,
                base.valid_to,
            )
        return found


def region_names(payload) -> dict[str, str]:
    """``vervoerRegioCode`` -> name from a ``GET /vervoerregios`` answer (or one ``/vervoerregios/{code}``).

    Examples
    --------
    >>> region_names({"vervoerRegios": [{"code": "AN", "naam": "Antwerpen", "nr": "02"}]})
    {'AN': 'Antwerpen'}
    """
    if not isinstance(payload, Mapping):
        return {}
    regions = payload.get("vervoerRegios") if "vervoerRegios" in payload else [payload]
    out = {}
    for r in regions or []:
        if isinstance(r, Mapping) and r.get("code") and r.get("naam"):
            out[str(r["code"]).strip()] = str(r["naam"]).strip()
    return out


@dataclass
class StopBook:
    """Stop key -> (lon, lat): the stops layer plus ``GET /haltes/{e}/{h}`` answers (``details``).

    ``details`` maps a stop key to the ``Halte`` answer, or to None when the service answered 404.

    Examples
    --------
    >>> book = StopBook.from_sources(None, {"3_308530": {"entiteitnummer": "3", "haltenummer": "308530",
    ...                                     "geoCoordinaat": {"latitude": 50.83, "longitude": 4.30}}})
    >>> book.place("3", "308530")
    (4.3, 50.83)
    """

    points: dict = field(default_factory=dict)

    @classmethod
    def from_sources(cls, stops=None, details: Mapping | None = None) -> "StopBook":
        from .payload import parse_geo_coordinaat

        book = cls()
        if stops is not None and len(stops):
            for key, x, y in zip(stops["id"].tolist(), stops.geometry.x.tolist(), stops.geometry.y.tolist()):
                book.points[str(key)] = (float(x), float(y))
        for key, halte in (details or {}).items():
            if isinstance(halte, Mapping):
                ll = parse_geo_coordinaat(halte.get("geoCoordinaat"))
                if ll is not None:
                    book.points.setdefault(str(key), (ll[1], ll[0]))
        return book

    def place(self, entity, number):
        return self.points.get(stop_key(entity, number))


def unknown_stops(omleidingen, stops=None) -> list[tuple[str, str]]:
    """(entity, haltenummer) of the detour stops that carry no coordinates and are not in ``stops``:
    the ones the fetcher must look up with ``GET /haltes/{e}/{h}``; sorted, without duplicates.

    Examples
    --------
    >>> unknown_stops({"omleidingen": [{"haltes": [{"entiteitnummer": "3", "haltenummer": "308530"}]}]})
    [('3', '308530')]
    """
    from .payload import items as _items, parse_geo_coordinaat

    known = StopBook.from_sources(stops)
    out = set()
    for o in _items(omleidingen, "omleidingen", "De Lijn Omleidingen"):
        for h in (o.get("haltes") or []) if isinstance(o, Mapping) else []:
            if not isinstance(h, Mapping) or not h.get("haltenummer"):
                continue
            if (
                parse_geo_coordinaat(h.get("geoCoordinaat")) is None
                and known.place(h.get("entiteitnummer", ""), h["haltenummer"]) is None
            ):
                out.add((str(h.get("entiteitnummer", "")).strip(), str(h["haltenummer"]).strip()))
    return sorted(out)


def detour_lines(omleidingen) -> list[tuple[str, str]]:
    """``(entity, internal lijnnummer)`` of every line the detours' line directions name; sorted, unique.

    Examples
    --------
    >>> detour_lines({"omleidingen": [{"lijnrichtingen": [{"entiteitnummer": "3", "lijnnummer": "620"},
    ...                                                  {"entiteitnummer": "3", "lijnnummer": "620"}]}]})
    [('3', '620')]
    """
    from .payload import items as _items

    out = set()
    for o in _items(omleidingen, "omleidingen", "De Lijn Omleidingen"):
        for lr in (o.get("lijnrichtingen") or []) if isinstance(o, Mapping) else []:
            if isinstance(lr, Mapping) and str(lr.get("entiteitnummer", "")).strip():
                out.add((str(lr["entiteitnummer"]).strip(), str(lr.get("lijnnummer") or "").strip()))
    return sorted(out)


def detour_entities(omleidingen) -> list[str]:
    """The entities named by the detours' line directions (whose ``lijnen`` lists the fetcher needs).

    Examples
    --------
    >>> detour_entities({"omleidingen": [{"lijnrichtingen": [{"entiteitnummer": "3", "lijnnummer": "620"}]}]})
    ['3']
    """
    return sorted({e for e, _ in detour_lines(omleidingen)})


def unknown_lines(omleidingen, book: LineBook) -> list[tuple[str, str]]:
    """The detours' lines that ``book`` lacks: the ones the fetcher looks up with ``GET /lijnen/{e}/{l}``.

    Examples
    --------
    >>> unknown_lines({"omleidingen": [{"lijnrichtingen": [{"entiteitnummer": "1", "lijnnummer": "948"}]}]},
    ...               LineBook())
    [('1', '948')]
    """
    return [(e, nr) for e, nr in detour_lines(omleidingen) if nr and book.get(e, nr) is None]
