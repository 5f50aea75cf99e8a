"""De Lijn detour rules (vectorised): line identities and numbers, severity, delay, validity in time.

See docs/rules.md for the reasoning behind every constant.
"""

from __future__ import annotations

import json

import numpy as np

ANTWERP_ENTITY = "1"  # De Lijn entiteitnummer of the province of Antwerp (its stops are fetched)
ANTWERP_REGION = "AN"  # vervoerRegioCode of the Antwerp transport region (detour scope)
STOP_RADIUS_KM = 0.400  # stops "near the point"
LOW, MEDIUM, HIGH = 0, 1, 2
SEVERITY_NAMES = ("low", "medium", "high")
DAY_NAMES = ("MAANDAG", "DINSDAG", "WOENSDAG", "DONDERDAG", "VRIJDAG", "ZATERDAG", "ZONDAG")
ALL_DAYS = 0b1111111

BASE_DELAY_MIN = 3  # any detour
DELAY_PER_UNSERVED_STOP = 2  # each stop not served adds a walk / a longer route
MAX_DELAY_MIN = 30
HIGH_UNSERVED, HIGH_LINES, HIGH_DELAY_MIN = 4, 4, 15
MEDIUM_DELAY_MIN = 5


def normalise_line(line) -> str:
    """Public line number with whitespace and leading zeros removed (``"007"`` -> ``"7"``, ``"0"`` stays).

    Examples
    --------
    >>> [normalise_line(x) for x in ("007", " 12", "0", "N1", "000")]
    ['7', '12', '0', 'N1', '0']
    """
    s = str(line).strip()
    stripped = s.lstrip("0")
    return stripped if stripped or not s else "0"


def split_lines(joined) -> tuple:
    """Normalised, de-duplicated line numbers of a comma-joined field, in published order.

    Examples
    --------
    >>> split_lines("007,7, 12,,")
    ('7', '12')
    """
    if not isinstance(joined, str):
        return ()
    seen: dict[str, None] = {}
    for part in joined.split(","):
        if part.strip():
            seen.setdefault(normalise_line(part), None)
    return tuple(seen)


def line_details(text) -> list[dict]:
    """The parsed ``line_details`` of a detour row (a JSON array of objects); [] when absent or unusable.

    Examples
    --------
    >>> line_details('[{"line":"2","entity":"1","number":"948"}]'), line_details(""), line_details(None)
    ([{'line': '2', 'entity': '1', 'number': '948'}], [], [])
    """
    if not isinstance(text, str) or not text.strip():
        return []
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def identity_key(entity, number) -> str:
    """Matching key of a line known by its identity (entity, internal number).

    Examples
    --------
    >>> identity_key("1", "948")
    'id:1_948'
    """
    return f"id:{str(entity).strip()}_{str(number).strip()}"


def public_key(public) -> str:
    """Matching key of a line known only by its public number (leading zeros removed: the contract's rule).

    Examples
    --------
    >>> public_key("007") == public_key("7")
    True
    """
    return f"pub:{normalise_line(public)}"


def detour_keys(details: list, lines) -> tuple:
    """Matching keys of a detour's lines: the identity of each line in ``details`` that has one, its public
    number otherwise; without ``details`` (a layer that carries no identities) the public numbers of
    ``lines``. One key per distinct line, in published order.

    Examples
    --------
    >>> detour_keys([{"line": "2", "entity": "1", "number": "948"}, {"line": "007"}], "")
    ('id:1_948', 'pub:7')
    >>> detour_keys([], "007,7,12")
    ('pub:7', 'pub:12')
    """
    if not details:
        return tuple(public_key(x) for x in split_lines(lines))
    keys = (
        identity_key(d["entity"], d["number"])
        if d.get("entity") and d.get("number")
        else public_key(d.get("line"))
        for d in details
        if d.get("number") or d.get("line")
    )
    return tuple(dict.fromkeys(keys))


def stop_keys(line_ids, lines, entity) -> tuple:
    """Matching keys of the lines serving a stop: the identity of each line (``line_ids``, every entity),
    plus the public numbers of the lines of an entity-1 stop, which only a detour line without a known
    identity can match (public numbers repeat, also within entity 1).

    Examples
    --------
    >>> stop_keys("1_2,1_948", "2", "1")
    ('id:1_2', 'id:1_948', 'pub:2')
    >>> stop_keys("3_620", "620", "3")
    ('id:3_620',)
    """
    ids = [x.strip() for x in line_ids.split(",") if x.strip()] if isinstance(line_ids, str) else []
    keys = [f"id:{x}" for x in ids]
    if str(entity).strip() == ANTWERP_ENTITY:
        keys += [public_key(x) for x in split_lines(lines)]
    return tuple(dict.fromkeys(keys))


def count_items(joined) -> int:
    """Number of non-empty items of a comma-joined field.

    Examples
    --------
    >>> count_items("1_101,1_102,"), count_items(None)
    (2, 0)
    """
    if not isinstance(joined, str):
        return 0
    return sum(1 for part in joined.split(",") if part.strip())


def day_mask(joined) -> int:
    """Bit mask of the detour days (bit 0 = Monday); empty or unknown text means every day.

    Examples
    --------
    >>> day_mask("MAANDAG,DINSDAG"), day_mask(""), day_mask("zondag")
    (3, 127, 64)
    """
    mask = 0
    if isinstance(joined, str):
        for part in joined.split(","):
            name = part.strip().upper()
            if name in DAY_NAMES:
                mask |= 1 << DAY_NAMES.index(name)
    return mask or ALL_DAYS


def delay_minutes(n_unserved, published=None) -> np.ndarray:
    """Estimated extra travel time (int64 minutes): the delay De Lijn publishes in the detour text when
    there is one (rounded), else 3 min + 2 min per unserved stop, capped at 30.

    Examples
    --------
    >>> delay_minutes([0, 1, 4, 20]).tolist()
    [3, 5, 11, 30]
    >>> delay_minutes([0, 1], published=[np.nan, 10.0]).tolist()
    [3, 10]
    """
    n = np.asarray(n_unserved, dtype=np.int64)
    rule = np.minimum(BASE_DELAY_MIN + DELAY_PER_UNSERVED_STOP * n, MAX_DELAY_MIN)
    if published is None:
        return rule
    pub = np.asarray(published, dtype=np.float64)
    ok = np.isfinite(pub) & (pub >= 0)
    return np.where(ok, np.rint(np.where(ok, pub, 0.0)), rule).astype(np.int64)


def severity(n_unserved, n_lines, delay_min=0) -> np.ndarray:
    """int8 severity: HIGH when >= 4 unserved stops, >= 4 lines or >= 15 min delay; MEDIUM when >= 1
    unserved stop, >= 2 lines or >= 5 min delay; LOW otherwise (a short re-route of one line).

    Examples
    --------
    >>> severity([0, 1, 0, 4, 0, 0, 0], [1, 1, 2, 1, 4, 1, 1], [3, 5, 3, 11, 3, 15, 5]).tolist()
    [0, 1, 1, 2, 2, 2, 1]
    """
    n_u = np.asarray(n_unserved, dtype=np.int64)
    n_l = np.asarray(n_lines, dtype=np.int64)
    d = np.asarray(delay_min, dtype=np.int64)
    high = (n_u >= HIGH_UNSERVED) | (n_l >= HIGH_LINES) | (d >= HIGH_DELAY_MIN)
    medium = (n_u >= 1) | (n_l >= 2) | (d >= MEDIUM_DELAY_MIN)
    return np.where(high, HIGH, np.where(medium, MEDIUM, LOW)).astype(np.int8)


def in_force(start_ms, end_ms, t_ms) -> np.ndarray:
    """bool (broadcasting): ``start <= t < end``; ``end_ms`` is :data:`geo.rules.timefmt.NO_END_MS` when open.

    Examples
    --------
    >>> in_force(np.array([0, 0, 6]), np.array([10, 5, 10]), 5).tolist()
    [True, False, False]
    """
    return (np.asarray(start_ms) <= t_ms) & (t_ms < np.asarray(end_ms))


def active_detours(detours, now_ms: int) -> np.ndarray:
    """bool per prepared detour (:class:`geo.rules.prepared.Detours`): in force at ``now_ms`` on one of its days.

    The rule of ``/disruptions`` and of batch scoring: ``start <= now < end`` and the Europe/Brussels weekday
    of ``now`` is one of the detour's ``omleidingsDagen`` (an empty list means every day).

    Examples
    --------
    >>> active_detours(prepare(engine).detours, to_ms(now))  # doctest: +SKIP
    array([ True, False, ...])
    """
    from .calendar import local_hour_kind

    weekday = int(local_hour_kind([now_ms])[2][0])
    return active_at(detours.start_ms, detours.end_ms, detours.days, now_ms, weekday)


def active_at(start_ms, end_ms, days, t_ms, t_weekday) -> np.ndarray:
    """bool (broadcasting): ``start <= t < end`` and the local weekday of ``t`` is one of the detour days.

    ``end_ms`` uses :data:`geo.rules.timefmt.NO_END_MS` for open-ended detours.

    Examples
    --------
    >>> active_at(np.array([0, 0, 0]), np.array([10, 5, 10]), np.array([127, 127, 1]), 5, 2).tolist()
    [True, False, False]
    """
    return in_force(start_ms, end_ms, t_ms) & ((np.asarray(days) >> np.asarray(t_weekday)) & 1).astype(bool)


def turned_at(start_ms: int, end_ms: int, days: int, before_ms: int, after_ms: int) -> int | None:
    """The last instant in ``(before_ms, after_ms]`` at which :func:`active_at` of one detour changed (its
    start, its end, or a Europe/Brussels midnight where its weekday begins or ends), or None when it did not.

    The valid time of the change feed's ``detour.started`` / ``detour.stopped`` (docs/changes.md).

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> from geo.rules.timefmt import NO_END_MS as NO_END
    >>> ms = lambda *a: int(datetime(*a, tzinfo=timezone.utc).timestamp() * 1000)
    >>> fri, sat = ms(2026, 11, 20, 12), ms(2026, 11, 21, 12)  # Friday, Saturday noon
    >>> turned_at(0, NO_END, 0b0011111, fri, sat) == ms(2026, 11, 20, 23)  # Saturday 00:00 in Brussels
    True
    >>> turned_at(0, NO_END, ALL_DAYS, fri, sat) is None
    True
    """
    from datetime import datetime, timedelta

    from .calendar import local_hour_kind
    from .timefmt import BRUSSELS, to_ms

    breaks = {t for t in (int(start_ms), int(end_ms)) if before_ms < t <= after_ms}
    day = datetime.fromtimestamp(before_ms / 1000.0, BRUSSELS).date() + timedelta(days=1)
    while (midnight := to_ms(datetime(day.year, day.month, day.day, tzinfo=BRUSSELS))) <= after_ms:
        breaks.add(midnight)
        day += timedelta(days=1)
    if not breaks:
        return None
    ordered = sorted(breaks)
    instants = np.array([t for b in ordered for t in (b - 1, b)], dtype=np.int64)
    state = active_at(start_ms, end_ms, days, instants, local_hour_kind(instants)[2])
    changed = [b for k, b in enumerate(ordered) if state[2 * k] != state[2 * k + 1]]
    return changed[-1] if changed else None


def antwerp_region(regions, entities) -> np.ndarray:
    """bool per detour: one of its lines belongs to the Antwerp transport region (``vervoerRegioCode``
    ``AN``); a detour without region data (no ``lijnen`` list was given) falls back to entity ``1``.

    Examples
    --------
    >>> antwerp_region(["AN", "KE,ME", "", ""], ["1", "1", "1", "3"]).tolist()
    [True, False, True, False]
    """
    out = []
    for reg, ent in zip(regions, entities):
        codes = {c.strip() for c in reg.split(",")} if isinstance(reg, str) and reg.strip() else set()
        out.append(ANTWERP_REGION in codes if codes else str(ent).strip() == ANTWERP_ENTITY)
    return np.array(out, dtype=bool)
