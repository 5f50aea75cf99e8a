"""GIPOD as the real service sends it: one feature per occurrence, grouped into one work per GipodId.

The OGC API Features collections return a feature per occurrence of an occupation: feature id
``INNAME_PUNT.<GipodId>-<yyMMddHHmm>`` (the occurrence's UTC start), the same ``GipodId`` and point repeated
with shifted ``Start``/``End``. A work is its ``GipodId``; the row shows the occurrence that runs at ``now``,
else the next one to start, else the last one, and how many occurrences there are. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: the status vocabulary we handle and what each value means for the answer (docs/sources.md explains it)
STATUS_CLASSES = {
    "In uitvoering": "running",  # contract: running now, whatever the dates
    "Concreet gepland": "planned",
    "Gepland": "planned",
    "Voorlopig gepland": "planned",
    "Lopende": "planned",  # seen on every occurrence of a series, weeks ahead: not "running now"
    "Uitgevoerd": "ended",
    "Afgewerkt": "ended",
    "Geannuleerd": "ended",
    "Niet uitgevoerd": "ended",
}

#: statuses the GIPOD request asks for (CQL2 ``Status IN (...)``): the listed ones
REQUESTED_STATUSES = tuple(s for s, c in STATUS_CLASSES.items() if c in ("running", "planned"))

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


def cql2_filter(exclude_types=("Evenement",), statuses=REQUESTED_STATUSES) -> str:
    """The CQL2-text ``filter`` of the works request: no events, only the statuses we list.

    Examples
    --------
    >>> cql2_filter(statuses=("In uitvoering", "Lopende"))
    "Type <> 'Evenement' AND Status IN ('In uitvoering','Lopende')"
    """

    def quote(v):
        return "'" + str(v).replace("'", "''") + "'"

    parts = [f"Type <> {quote(t)}" for t in exclude_types]
    parts.append(f"Status IN ({','.join(quote(s) for s in statuses)})")
    return " AND ".join(parts)
