"""Belgian public holidays and the rush-hour profile used by the briefing (Europe/Brussels local time).

Holidays are the ten legal public holidays of Belgium, computed in code (Easter by the anonymous Gregorian
algorithm plus fixed days). Every day falls in one of three kinds: a working day (Monday-Friday), a Saturday,
or a Sunday; a public holiday counts as a Sunday whatever weekday it falls on. Each kind has an hourly traffic
profile (0..1, index = local clock hour) and a list of rush periods. See docs/rules.md.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .timefmt import BRUSSELS, MS_PER_HOUR, day_number

WORKDAY, SATURDAY, SUNDAY = 0, 1, 2
DAY_KIND_NAMES = ("werkdag", "zaterdag", "zondag")

# Hourly traffic intensity per day kind, index = local hour 0..23 (1.0 = the weekday peak hour).
TRAFFIC_PROFILE = np.array(
    [
        # 0     1     2     3     4     5     6     7     8     9    10    11
        [
            0.05,
            0.03,
            0.02,
            0.02,
            0.05,
            0.15,
            0.45,
            0.90,
            1.00,
            0.70,
            0.50,
            0.50,
            # 12   13    14    15    16    17    18    19    20    21    22    23
            0.55,
            0.55,
            0.55,
            0.65,
            0.85,
            1.00,
            0.80,
            0.50,
            0.35,
            0.25,
            0.15,
            0.08,
        ],
        [
            0.08,
            0.05,
            0.03,
            0.02,
            0.02,
            0.04,
            0.08,
            0.15,
            0.25,
            0.40,
            0.50,
            0.55,
            0.55,
            0.55,
            0.65,
            0.70,
            0.65,
            0.55,
            0.45,
            0.35,
            0.30,
            0.25,
            0.18,
            0.12,
        ],
        [
            0.08,
            0.05,
            0.03,
            0.02,
            0.02,
            0.03,
            0.05,
            0.08,
            0.12,
            0.20,
            0.30,
            0.35,
            0.35,
            0.35,
            0.35,
            0.35,
            0.35,
            0.35,
            0.30,
            0.25,
            0.20,
            0.15,
            0.10,
            0.08,
        ],
    ]
)


class RushPeriod(NamedTuple):
    """A rush period of a day kind in local wall-clock time ((hour, minute) pairs)."""

    kind: str
    start: tuple
    peak: tuple
    end: tuple


RUSH_PERIODS = {
    WORKDAY: (
        RushPeriod("ochtendspits", (7, 0), (8, 0), (9, 30)),
        RushPeriod("avondspits", (16, 0), (17, 0), (18, 30)),
    ),
    SATURDAY: (RushPeriod("zaterdagspits", (14, 0), (15, 0), (17, 0)),),
    SUNDAY: (),
}


class RushPeak(NamedTuple):
    """One concrete rush period: aware Europe/Brussels datetimes."""

    kind: str
    start: datetime
    peak: datetime
    end: datetime


def easter_sunday(year):
    """Gregorian Easter Sunday as day numbers (days since 1970-01-01); scalar or array of years.

    Examples
    --------
    >>> from geo.rules.timefmt import day_strings
    >>> day_strings(easter_sunday([2024, 2025, 2026])).tolist()
    ['2024-03-31', '2025-04-20', '2026-04-05']
    """
    y = np.asarray(year, dtype=np.int64)
    a, b, c = y % 19, y // 100, y % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    n = h + l_ - 7 * m + 114
    month, day = n // 31, n % 31 + 1
    months = (y - 1970) * 12 + (month - 1)
    first = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return first + day - 1


def public_holidays(year: int) -> list:
    """The ten Belgian legal public holidays of ``year`` as sorted ``(date, Dutch name)`` pairs.

    Examples
    --------
    >>> [(str(d), n) for d, n in public_holidays(2026)][:2]
    [('2026-01-01', 'Nieuwjaar'), ('2026-04-06', 'Paasmaandag')]
    """
    easter = date(1970, 1, 1) + timedelta(days=int(easter_sunday(year)))
    days = [
        (date(year, 1, 1), "Nieuwjaar"),
        (easter + timedelta(days=1), "Paasmaandag"),
        (date(year, 5, 1), "Dag van de Arbeid"),
        (easter + timedelta(days=39), "Onze-Lieve-Heer-Hemelvaart"),
        (easter + timedelta(days=50), "Pinkstermaandag"),
        (date(year, 7, 21), "Nationale feestdag"),
        (date(year, 8, 15), "Onze-Lieve-Vrouw-Hemelvaart"),
        (date(year, 11, 1), "Allerheiligen"),
        (date(year, 11, 11), "Wapenstilstand"),
        (date(year, 12, 25), "Kerstmis"),
    ]
    return sorted(days)


@lru_cache(maxsize=512)
def holiday_days(year: int) -> frozenset:
    """Day numbers of the Belgian public holidays of ``year`` (cached per year).

    Examples
    --------
    >>> day_number(date(2026, 12, 25)) in holiday_days(2026)
    True
    """
    return frozenset(day_number(d) for d, _ in public_holidays(int(year)))


def is_public_holiday(days) -> np.ndarray:
    """bool array: the day numbers are Belgian public holidays.

    Examples
    --------
    >>> is_public_holiday([day_number(date(2026, 7, 21)), day_number(date(2026, 7, 22))]).tolist()
    [True, False]
    """
    days = np.atleast_1d(np.asarray(days, dtype=np.int64))
    if days.size == 0:
        return np.zeros(0, dtype=bool)
    years = days.astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970
    hol = [d for y in np.unique(years).tolist() for d in holiday_days(y)]
    return np.isin(days, np.asarray(hol, dtype=np.int64))


def day_kind(days) -> np.ndarray:
    """int8 array of WORKDAY / SATURDAY / SUNDAY for day numbers; public holidays count as SUNDAY.

    Examples
    --------
    >>> # Fri 2026-11-13, Sat 14, Sun 15, Wed 11 (Wapenstilstand)
    >>> day_kind([day_number(date(2026, 11, d)) for d in (13, 14, 15, 11)]).tolist()
    [0, 1, 2, 2]
    """
    days = np.atleast_1d(np.asarray(days, dtype=np.int64))
    weekday = (days + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    kind = np.where(weekday == 5, SATURDAY, np.where(weekday == 6, SUNDAY, WORKDAY)).astype(np.int8)
    kind[is_public_holiday(days)] = SUNDAY
    return kind


def day_kind_of(day: date) -> int:
    """Scalar :func:`day_kind` of one calendar date (the fast path of single requests).

    Examples
    --------
    >>> day_kind_of(date(2026, 4, 6))  # Paasmaandag
    2
    """
    if day_number(day) in holiday_days(day.year):
        return SUNDAY
    return (WORKDAY, WORKDAY, WORKDAY, WORKDAY, WORKDAY, SATURDAY, SUNDAY)[day.weekday()]


def local_hour_kind(instants_ms) -> tuple:
    """(local hour int64 array, day kind int8 array, local weekday int64 array) of epoch-ms instants.

    Examples
    --------
    >>> h, k, w = local_hour_kind([1_763_280_000_000])  # 2025-11-16T08:00Z, a Sunday
    >>> h.tolist(), k.tolist(), w.tolist()
    ([9], [2], [6])
    """
    ms = np.atleast_1d(np.asarray(instants_ms, dtype=np.int64))
    if ms.size:
        lo, hi = int(ms.min()), int(ms.max())
        off = datetime.fromtimestamp(lo / 1000.0, BRUSSELS).utcoffset()
        if (
            hi - lo <= 2 * 24 * MS_PER_HOUR
            and datetime.fromtimestamp(hi / 1000.0, BRUSSELS).utcoffset() == off
        ):
            # one UTC offset over a short span (no DST change in between): plain integer arithmetic
            local = ms + off // timedelta(milliseconds=1)  # type: ignore[operator]  # aware: never None
            days = local // (24 * MS_PER_HOUR)
            kind_of = {
                int(d): day_kind_of(date(1970, 1, 1) + timedelta(days=int(d))) for d in np.unique(days)
            }
            kinds = np.array([kind_of[d] for d in days.tolist()], dtype=np.int8)
            return (local // MS_PER_HOUR) % 24, kinds, (days + 3) % 7
    hours = np.empty(ms.size, dtype=np.int64)
    kinds = np.empty(ms.size, dtype=np.int8)
    weekdays = np.empty(ms.size, dtype=np.int64)
    kind_of_day: dict[date, int] = {}
    for i, t in enumerate(ms.tolist()):
        local = datetime.fromtimestamp(t / 1000.0, BRUSSELS)
        day = local.date()
        kind = kind_of_day.get(day)
        if kind is None:
            kind = kind_of_day[day] = day_kind_of(day)
        hours[i], kinds[i], weekdays[i] = local.hour, kind, day.weekday()
    return hours, kinds, weekdays


def traffic_intensity(instants_ms) -> np.ndarray:
    """Traffic profile value (0..1) of the local clock hour that contains each instant.

    Examples
    --------
    >>> traffic_intensity([1_763_280_000_000]).tolist()  # Sunday 09:00 local
    [0.2]
    """
    hours, kinds, _ = local_hour_kind(instants_ms)
    return TRAFFIC_PROFILE[kinds, hours]


def _at(day: date, hm: tuple) -> datetime:
    return datetime(day.year, day.month, day.day, hm[0], hm[1], tzinfo=BRUSSELS)


def next_rush_peak(now: datetime, horizon_days: int = 14) -> RushPeak:
    """The first rush period whose end lies after ``now`` (a period in progress is returned as is).

    Examples
    --------
    >>> from datetime import timezone
    >>> p = next_rush_peak(datetime(2026, 11, 14, 20, 0, tzinfo=timezone.utc))  # Saturday evening
    >>> p.kind, p.start.isoformat()
    ('ochtendspits', '2026-11-16T07:00:00+01:00')
    """
    today = now.astimezone(BRUSSELS).date()
    for offset in range(horizon_days + 1):
        day = today + timedelta(days=offset)
        for period in RUSH_PERIODS[day_kind_of(day)]:
            end = _at(day, period.end)
            if end > now:
                return RushPeak(period.kind, _at(day, period.start), _at(day, period.peak), end)
    raise ValueError(f"no rush period within {horizon_days} days of {now.isoformat()}")


def hour_starts(now_ms: int, hours: int = 24) -> np.ndarray:
    """Epoch-ms starts of the whole hours ``s`` with ``now <= s < now + hours`` (ascending).

    Examples
    --------
    >>> hour_starts(MS_PER_HOUR // 2, hours=3).tolist()
    [3600000, 7200000, 10800000]
    """
    first = -(-int(now_ms) // MS_PER_HOUR) * MS_PER_HOUR
    stop = int(now_ms) + hours * MS_PER_HOUR
    return np.arange(first, stop, MS_PER_HOUR, dtype=np.int64)
