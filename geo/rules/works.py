"""Road-works rules (vectorised): status classes, collapse of recurring occurrences, hindrance, 14-day window.

A work is *running* when its status is ``In uitvoering`` (dates are not used for that), *planned* when its
status is ``Concreet gepland``; every other status (``Uitgevoerd``, ``Niet uitgevoerd``, unknown) is not listed.
Listed works with the same description (whitespace and case ignored) whose points are connected by steps of at
most :data:`COLLAPSE_KM` collapse into one item. See docs/rules.md.
"""

from __future__ import annotations

import re

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..index.spherical import chord_for_km, haversine_km, unit_vectors
from .timefmt import day_number, local_day
from ..data.upstream_gipod import STATUS_CLASSES

RUNNING_STATUSES = frozenset(s for s, c in STATUS_CLASSES.items() if c == "running")  # {"In uitvoering"}
PLANNED_STATUSES = frozenset(s for s, c in STATUS_CLASSES.items() if c == "planned")  # {"Concreet gepland"}
NOT_LISTED, RUNNING, PLANNED = 0, 1, 2

RADIUS_KM = 2.0  # works listed when they lie within 2 km of the point (their extent; boundary included)
RADIUS_TEXT = f"{RADIUS_KM:g} km"  # "2 km" in the texts
RADIUS_JSON = int(RADIUS_KM) if RADIUS_KM.is_integer() else RADIUS_KM  # the radiusKm member: 2
COLLAPSE_KM = 0.050  # recurring occurrences: same description within 50 m (single linkage)
UPCOMING_DAYS = 14  # upcomingWorks14d: start date in [today, today + 14] (Brussels dates)

_SPACES = re.compile(r"\s+")


def status_class(statuses) -> np.ndarray:
    """int8 array: RUNNING (1), PLANNED (2) or NOT_LISTED (0); surrounding whitespace is ignored.

    Examples
    --------
    >>> status_class(["In uitvoering", " Concreet gepland ", "Uitgevoerd", "Niet uitgevoerd", "Lopende"]).tolist()
    [1, 2, 0, 0, 0]
    """
    out = np.zeros(len(statuses), dtype=np.int8)
    for i, s in enumerate(statuses):
        s = s.strip() if isinstance(s, str) else ""
        if s in RUNNING_STATUSES:
            out[i] = RUNNING
        elif s in PLANNED_STATUSES:
            out[i] = PLANNED
    return out


def description_key(text) -> str:
    """The comparison key of a description: whitespace runs collapsed, trimmed, case-folded.

    Examples
    --------
    >>> description_key("  Heraanleg   RIOLERING ")
    'heraanleg riolering'
    """
    return _SPACES.sub(" ", text if isinstance(text, str) else "").strip().casefold()


def collapse_labels(descriptions, lat, lng, radius_km: float = COLLAPSE_KM, keys=None) -> np.ndarray:
    """Cluster label per work (0..k-1, numbered by first member in input order).

    Two works are linked when their description keys are equal and their haversine distance is at most
    ``radius_km``; clusters are the connected components of these links (single linkage). ``keys``: the
    descriptions' :func:`description_key`, when the caller holds them.

    Examples
    --------
    >>> collapse_labels(["Markt", "markt", "Markt", "Riolering"],
    ...                 [51.0, 51.0003, 51.01, 51.0], [4.0, 4.0, 4.0, 4.0]).tolist()
    [0, 0, 1, 2]
    """
    lat = np.asarray(lat, dtype=np.float64)
    lng = np.asarray(lng, dtype=np.float64)
    n = lat.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if keys is None:
        keys = np.array([description_key(d) for d in descriptions], dtype=object)
    _, key = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    pairs = cKDTree(unit_vectors(lat, lng)).query_pairs(chord_for_km(radius_km), output_type="ndarray")
    i, j = pairs[:, 0], pairs[:, 1]
    keep = (key[i] == key[j]) & (haversine_km(lat[i], lng[i], lat[j], lng[j]) <= radius_km)
    return _components(n, i[keep], j[keep])


def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """:func:`collapse_labels` of ``n`` works linked by the pairs ``(i, j)``: connected components, numbered
    by first member. Only the linked works form a graph (few: most works are alone); a component's first
    member is its least row, so the labels count those rows in order."""
    first = np.arange(n, dtype=np.int64)  # per work, its component's first member
    if i.size:
        nodes, inverse = np.unique(np.concatenate([i, j]), return_inverse=True)
        graph = coo_matrix(
            (np.ones(i.size, dtype=np.int8), (inverse[: i.size], inverse[i.size :])), shape=(nodes.size,) * 2
        )
        k, comp = connected_components(graph, directed=False)
        least = np.full(k, n, dtype=np.int64)
        np.minimum.at(least, comp, nodes)
        first[nodes] = least[comp]
    return (np.cumsum(first == np.arange(n)) - 1).astype(np.int64)[first]


class CollapseLinks:
    """The collapse links among rows appended in batches (a history's work versions,
    :meth:`geo.data.rows.RowSource.grown`): every pair ``(i, j)``, ``i < j``, whose description keys are equal
    and whose points lie at most :data:`COLLAPSE_KM` apart (haversine), the rule of :func:`collapse_labels`.
    A link depends on its two rows alone, so the works of one snapshot, some of these rows, collapse by the
    links among them (:meth:`labels`): the labels :func:`collapse_labels` gives, without a spatial query."""

    #: a batch up to this many rows is linked row by row against the rows of its key, a larger one by a k-d tree
    ROW_BY_ROW = 256

    def __init__(self):
        self.size = 0
        self.i = np.zeros(0, dtype=np.int64)
        self.j = np.zeros(0, dtype=np.int64)
        self._by_key: dict[str, list[int]] = {}

    def extend(self, stop: int, keys, lat, lng) -> "CollapseLinks":
        """Add the rows ``[size, stop)``; ``keys`` (description keys), ``lat``, ``lng``: over rows ``[0, stop)``."""
        start = self.size
        new = start + np.flatnonzero(np.isfinite(lat[start:stop]) & np.isfinite(lng[start:stop]))
        if new.size > self.ROW_BY_ROW:
            rows = np.flatnonzero(np.isfinite(lat[:stop]) & np.isfinite(lng[:stop]))
            tree = cKDTree(unit_vectors(lat[rows], lng[rows]))
            pairs = rows[tree.query_pairs(chord_for_km(COLLAPSE_KM), output_type="ndarray")]
            i, j = pairs[:, 0], pairs[:, 1]
            keep = np.maximum(i, j) >= start  # the pairs among earlier rows are held already
            i, j = i[keep], j[keep]
        else:
            found_i: list[int] = []
            found_j: list[int] = []
            for r in new.tolist():
                others = self._by_key.get(keys[r], ())
                found_i += others
                found_j += [r] * len(others)
                self._by_key.setdefault(keys[r], []).append(r)
            i, j = np.array(found_i, dtype=np.int64), np.array(found_j, dtype=np.int64)
        keep = (keys[i] == keys[j]) & (haversine_km(lat[i], lng[i], lat[j], lng[j]) <= COLLAPSE_KM)
        i, j = np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])
        if new.size > self.ROW_BY_ROW:
            for r in new.tolist():
                self._by_key.setdefault(keys[r], []).append(r)
        self.i, self.j = np.concatenate([self.i, i]), np.concatenate([self.j, j])
        self.size = stop
        return self

    def labels(self, rows: np.ndarray) -> np.ndarray | None:
        """:func:`collapse_labels` of the works at ``rows`` (in that order); None when a row is given twice
        (a link joins two rows, not a row to itself: the caller collapses those works on its own)."""
        n = rows.size
        local = np.full(self.size, -1, dtype=np.int64)
        local[rows] = np.arange(n)
        if n and np.count_nonzero(local >= 0) != n:
            return None
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        i, j = local[self.i], local[self.j]
        keep = (i >= 0) & (j >= 0)
        return _components(n, i[keep], j[keep])


def representatives(labels, status, start_ms, ids) -> np.ndarray:
    """Row of the representative of each cluster (index = label).

    The representative is the running member if any, else a planned one; among those the earliest start,
    then the smallest id (string order).

    Examples
    --------
    >>> representatives(np.array([0, 0, 0]), np.array([2, 1, 1]), np.array([5, 9, 7]),
    ...                 np.array(["a", "b", "c"], dtype=object)).tolist()
    [2]
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    priority = np.where(np.asarray(status) == RUNNING, 0, 1)
    id_rank = np.unique(np.asarray(ids, dtype=object).astype(str), return_inverse=True)[1]
    order = np.lexsort((id_rank, np.asarray(start_ms), priority, labels))
    first = np.r_[True, labels[order][1:] != labels[order][:-1]]
    return order[first]


def cluster_hindrance(labels, k: int, hindrance, consequences) -> list:
    """Per cluster, its validated hindrance: None when no member has one, else ``(severe, consequences)``:
    severe when any member's is, every member's consequences once, sorted. Per member ``hindrance`` is -1
    (none), 0 (hindrance) or 1 (severe) and ``consequences`` ``;``-joined.

    Examples
    --------
    >>> cluster_hindrance(np.array([0, 0, 1]), 2, [0, 1, -1], ["Versmalde rijstroken", "Geen doorgang voor fietsers", ""])
    [(True, ('Geen doorgang voor fietsers', 'Versmalde rijstroken')), None]
    """
    own = []
    for h, text in zip(hindrance, consequences):
        h = int(h) if h is not None and h == h else -1
        own.append(
            None
            if h < 0
            else (h == 1, tuple(sorted({x.strip() for x in str(text or "").split(";") if x.strip()})))
        )
    return merged_hindrance(labels, k, own)


def merged_hindrance(labels, k: int, members) -> list:
    """:func:`cluster_hindrance` from each member's own (its value as a cluster of one, None: none).

    Examples
    --------
    >>> merged_hindrance(np.array([0, 0, 1]), 2, [(False, ("b",)), (True, ("a", "b")), None])
    [(True, ('a', 'b')), None]
    """
    severe: list = [None] * k
    seen: list[set] = [set() for _ in range(k)]
    for c, own in zip(np.asarray(labels).tolist(), members):
        if own is None:
            continue
        severe[c] = bool(severe[c]) or own[0]
        seen[c].update(own[1])
    return [None if s is None else (s, tuple(sorted(seen[c]))) for c, s in enumerate(severe)]


def hindrance_json(hindrance) -> dict | None:
    """The ``hindrance`` member of a construction item (a new object each call) from a cluster's
    :func:`cluster_hindrance` value.

    Examples
    --------
    >>> hindrance_json((False, ("Versmalde rijstroken",)))
    {'severe': False, 'consequences': ['Versmalde rijstroken']}
    """
    if hindrance is None:
        return None
    return {"severe": hindrance[0], "consequences": list(hindrance[1])}


def upcoming_mask(start_day, today, days: int = UPCOMING_DAYS) -> np.ndarray:
    """bool array: local start date within ``[today, today + days]`` (both ends included).

    Examples
    --------
    >>> upcoming_mask([99, 100, 114, 115], 100).tolist()
    [False, True, True, False]
    """
    start_day = np.asarray(start_day, dtype=np.int64)
    return (start_day >= today) & (start_day <= today + days)


def upcoming_clusters(works, now) -> np.ndarray:
    """bool per prepared works cluster (:class:`geo.rules.prepared.Works`): a planned member starts within
    :func:`upcoming_mask` of the Europe/Brussels date of ``now`` (only planned clusters can be True).

    The rule behind ``upcomingWorks14d``, shared by ``/disruptions`` and batch scoring.

    Examples
    --------
    >>> upcoming_clusters(prepare(engine).works, now).sum()  # doctest: +SKIP
    41
    """
    return upcoming_clusters_on(works, day_number(local_day(now)))


def upcoming_clusters_on(works, today: int) -> np.ndarray:
    """:func:`upcoming_clusters` for the Brussels date ``today`` (days since 1970-01-01).

    Examples
    --------
    >>> upcoming_clusters_on(prepare(engine).works, day_number(local_day(now))).sum()  # doctest: +SKIP
    41
    """
    hit = np.zeros(works.ids.size, dtype=bool)
    hit[works.member_cluster[upcoming_mask(works.member_start_day, today)]] = True
    return hit
