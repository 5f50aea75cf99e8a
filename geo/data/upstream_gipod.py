"""GIPOD as the real service sends it: several records per work, grouped into one work per GipodId, and the
validated hindrance of each work.

The OGC API Features collections return a record per occurrence or part of an occupation ("deelrecords"):
feature id ``INNAME.<GipodId>-<yyMMddHHmm>`` (the record's UTC start), the same ``GipodId`` repeated with
shifted ``Start``/``End`` and its own geometry. A work is its ``GipodId``. ``INNAME`` carries the occupation's
polygon (its extent), ``INNAME_PUNT`` a point; ``HINDER_PUNT`` the hindrance (``HindranceStatus``,
``SevereHindrance``, ``Consequences``) of an occupation. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

#: the work statuses GIPOD publishes and what each means for the answer (docs/sources.md explains it)
STATUS_CLASSES = {
    "In uitvoering": "running",  # contract: running now, whatever the dates
    "Concreet gepland": "planned",
    "Uitgevoerd": "ended",
    "Niet uitgevoerd": "ended",
}

#: the ``Type`` values of works (``Evenement`` is an event or market, not a work)
WORK_TYPES = ("Werk", "Grondwerk")

#: statuses the GIPOD request asks for (CQL2 ``Status IN (...)``): the listed ones
REQUESTED_STATUSES = tuple(s for s, c in STATUS_CLASSES.items() if c in ("running", "planned"))

#: collections read: the occupations with their polygons, and the hindrances (no geometry needed)
WORKS_COLLECTION = "INNAME"
HINDRANCE_COLLECTION = "HINDER_PUNT"
#: the hindrance status whose records are read (``HindranceStatus``)
VALIDATED = "Gevalideerd"

_OCCURRENCE_ID = re.compile(r"^(?:[A-Z_]+\.)?(\d+)-(\d{10})$")


def gipod_id(feature: Mapping) -> str | None:
    """The work id of a feature: ``properties.GipodId``, else the GipodId inside an occurrence id.

    Examples
    --------
    >>> gipod_id({"id": "INNAME_PUNT.12350257-2609280600", "properties": {}})
    '12350257'
    >>> gipod_id({"id": "1143473", "properties": {"GipodId": 1143473}})
    '1143473'
    """
    props = feature.get("properties") or {}
    gid = props.get("GipodId") if isinstance(props, Mapping) else None
    if gid not in (None, ""):
        return str(gid).strip()
    fid = feature.get("id")
    if fid in (None, ""):
        return None
    m = _OCCURRENCE_ID.match(str(fid))
    return m.group(1) if m else str(fid).strip()


def choose(occurrences: list, now_ms: int | None) -> int:
    """Index of the occurrence to show among ``(start_ms, end_ms, key)`` tuples (None = unknown/open).

    The one running at ``now`` (``start <= now < end``, an open end never ends; the latest such start wins),
    else the next to start (earliest start after ``now``), else the last one (latest start); without ``now``
    the earliest. Ties break on ``key`` (the occurrence id), so the choice is deterministic.

    Examples
    --------
    >>> occ = [(0, 10, "a"), (20, 30, "b"), (40, 50, "c")]
    >>> choose(occ, 25), choose(occ, 15), choose(occ, 99), choose(occ, None)
    (1, 1, 2, 0)
    """
    big = 1 << 62

    def s(o):
        return o[0] if o[0] is not None else -big

    def e(o):
        return o[1] if o[1] is not None else big

    idx = range(len(occurrences))
    if now_ms is None:
        return min(idx, key=lambda i: (s(occurrences[i]), occurrences[i][2]))
    running = [i for i in idx if s(occurrences[i]) <= now_ms < e(occurrences[i])]
    if running:
        return max(running, key=lambda i: (s(occurrences[i]), occurrences[i][2]))
    ahead = [i for i in idx if s(occurrences[i]) > now_ms]
    if ahead:
        return min(ahead, key=lambda i: (s(occurrences[i]), occurrences[i][2]))
    return max(idx, key=lambda i: (s(occurrences[i]), occurrences[i][2]))


def _quote(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _in(name: str, values) -> str:
    return f"{name} IN ({','.join(_quote(v) for v in values)})"


def cql2_filter(types=WORK_TYPES, statuses=REQUESTED_STATUSES) -> str:
    """The CQL2-text ``filter`` of the works request: works only, in the statuses we list (``IN`` and
    ``AND``, as the consumers seen in 2026 send them).

    Examples
    --------
    >>> cql2_filter()
    "Type IN ('Werk','Grondwerk') AND Status IN ('In uitvoering','Concreet gepland')"
    """
    return f"{_in('Type', types)} AND {_in('Status', statuses)}"


def hindrance_filter() -> str:
    """The CQL2-text ``filter`` of the hindrance request: validated hindrances only.

    Examples
    --------
    >>> hindrance_filter()
    "HindranceStatus IN ('Gevalideerd')"
    """
    return _in("HindranceStatus", (VALIDATED,))


class Hindrance(NamedTuple):
    """The validated hindrance of one work: ``severe`` (any record's ``SevereHindrance``) and the
    ``consequences`` (Dutch, as published, each once, in alphabetical order)."""

    severe: bool
    consequences: tuple[str, ...]


_TRUE = frozenset({"true", "1", "ja", "yes"})


def _flag(value) -> bool:
    return (
        value is True
        or (isinstance(value, (int, float)) and value == 1)
        or str(value).strip().lower() in _TRUE
    )


def _consequences(value) -> list[str]:
    """``Consequences`` as a list: a ``;``-joined string (as seen) or a list of strings."""
    items = value if isinstance(value, list) else str(value or "").split(";")
    return [str(c).strip() for c in items if c is not None and str(c).strip()]


def hindrance_work_id(props: Mapping) -> str | None:
    """The work (occupation) a hindrance record belongs to: ``GipodId``, else ``HindranceConsequenceOf``
    (a number, or a URI ending in it).

    Examples
    --------
    >>> hindrance_work_id({"GipodId": 1143473, "HindranceGipodId": 1200456})
    '1143473'
    >>> hindrance_work_id({"HindranceConsequenceOf": "https://gipod.api.vlaanderen.be/x/1143473"})
    '1143473'
    """
    for key in ("GipodId", "HindranceConsequenceOf"):
        value = props.get(key)
        if value in (None, ""):
            continue
        m = re.search(r"(\d+)\s*$", str(value))
        if m:
            return m.group(1)
    return None


def hindrances(features, skipped: dict | None = None) -> dict[str, Hindrance]:
    """Work id -> :class:`Hindrance` from ``HINDER``/``HINDER_PUNT`` features: only records whose
    ``HindranceStatus`` is ``Gevalideerd``; several records of one work are merged (severe if any is).
    Records left out are counted in ``skipped``: ``hindrance_not_validated``, ``hindrance_no_work``.

    Examples
    --------
    >>> f = {"properties": {"GipodId": 7, "HindranceStatus": "Gevalideerd", "SevereHindrance": True,
    ...      "Consequences": "Geen doorgang voor fietsers;Versmalde rijstroken"}}
    >>> hindrances([f])["7"]
    Hindrance(severe=True, consequences=('Geen doorgang voor fietsers', 'Versmalde rijstroken'))
    """
    merged: dict[str, tuple[bool, set]] = {}
    skipped = {} if skipped is None else skipped
    for feat in features:
        props = feat.get("properties") if isinstance(feat, Mapping) else None
        props = props if isinstance(props, Mapping) else {}
        if str(props.get("HindranceStatus") or "").strip() != VALIDATED:
            skipped["hindrance_not_validated"] = skipped.get("hindrance_not_validated", 0) + 1
            continue
        work = hindrance_work_id(props)
        if work is None:
            skipped["hindrance_no_work"] = skipped.get("hindrance_no_work", 0) + 1
            continue
        severe, seen = merged.get(work, (False, set()))
        merged[work] = (
            severe or _flag(props.get("SevereHindrance")),
            seen | set(_consequences(props.get("Consequences"))),
        )
    return {w: Hindrance(severe, tuple(sorted(seen))) for w, (severe, seen) in merged.items()}
