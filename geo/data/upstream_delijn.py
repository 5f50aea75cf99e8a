"""De Lijn Kern Open Data as the real service sends it: internal vs public line numbers, detour stops by key.

Real ``omleidingen`` name their lines by the internal ``lijnnummer`` only (``entiteitnummer`` + ``lijnnummer``,
no ``lijnNummerPubliek``) and their stops by ``entiteitnummer`` + ``haltenummer`` only (no coordinates, no name).
:class:`LineBook` maps ``(entity, internal)`` to the public number and the transport region
(``vervoerRegioCode``) from ``GET /entiteiten/{e}/lijnen``; :class:`StopBook` places a stop key from the stops
layer or from ``GET /haltes/{e}/{h}`` answers. Pure: no I/O.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Line:
    """One line of the ``lijnen`` list: public number and transport region."""

    public: str
    region: str


@dataclass
class LineBook:
    """``(entity, internal lijnnummer)`` -> :class:`Line`, from one or more ``/entiteiten/{e}/lijnen`` answers.

    Examples
    --------
    >>> book = LineBook.from_payloads({"lijnen": [{"entiteitnummer": "1", "lijnnummer": "908",
    ...                                             "lijnnummerPubliek": "8", "vervoerRegioCode": "ME"}]})
    >>> book.get("1", "908")
    Line(public='8', region='ME')
    >>> book.get("1", "9") is None
    True
    """

    lines: dict = field(default_factory=dict)
    entities: set = field(default_factory=set)

    @classmethod
    def from_payloads(cls, payloads) -> "LineBook":
        book = cls()
        if payloads is None:
            return book
        for page in payloads if isinstance(payloads, list) else [payloads]:
            if not isinstance(page, Mapping):
                continue
            for lijn in page.get("lijnen") or []:
                if not isinstance(lijn, Mapping) or lijn.get("lijnnummer") in (None, ""):
                    continue
                e = str(lijn.get("entiteitnummer", "")).strip()
                public = lijn.get("lijnnummerPubliek") or lijn.get("lijnNummerPubliek") or ""
                book.lines[(e, str(lijn["lijnnummer"]).strip())] = Line(
                    str(public).strip(), str(lijn.get("vervoerRegioCode") or "")
                )
                book.entities.add(e)
        return book

    def get(self, entity, internal) -> Line | None:
        return self.lines.get((str(entity).strip(), str(internal).strip()))

    def resolve(self, lijnrichting: Mapping) -> Line | None:
        """The public line of one ``lijnrichting``: its own ``lijnNummerPubliek`` when it carries one (the
        OpenAPI examples do), else the book's entry for its ``(entiteitnummer, lijnnummer)``; None when
        neither is known (the internal number is never passed off as the public one)."""
        own = lijnrichting.get("lijnNummerPubliek") or lijnrichting.get("lijnnummerPubliek")
        found = self.get(lijnrichting.get("entiteitnummer", ""), lijnrichting.get("lijnnummer", ""))
        if own:
            return Line(str(own).strip(), found.region if found else "")
        return found


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


def detour_entities(omleidingen) -> list[str]:
    """The entities named by the detours' line directions (whose ``lijnen`` lists the fetcher needs).

    Examples
    --------
    >>> detour_entities({"omleidingen": [{"lijnrichtingen": [{"entiteitnummer": "3", "lijnnummer": "620"}]}]})
    ['3']
    """
    from .payload import items as _items

    out = set()
    for o in _items(omleidingen, "omleidingen", "De Lijn Omleidingen"):
        for lr in (o.get("lijnrichtingen") or []) if isinstance(o, Mapping) else []:
            if isinstance(lr, Mapping) and str(lr.get("entiteitnummer", "")).strip():
                out.add(str(lr["entiteitnummer"]).strip())
    return sorted(out)
