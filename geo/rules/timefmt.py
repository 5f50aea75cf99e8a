"""Time conversions shared by the data-endpoint rules: UTC milliseconds, ISO strings, Brussels dates.

Instants are carried as int64 milliseconds since the Unix epoch (UTC) inside the rules; strings are produced
only at the edge of a result. ``now`` always comes from the caller: nothing here reads the clock.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

BRUSSELS = ZoneInfo("Europe/Brussels")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000
NO_END_MS = np.iinfo(np.int64).max  # open-ended period


def to_ms(moment: datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (exact integer arithmetic).

    Examples
    --------
    >>> to_ms(datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
    1000
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
    return (moment - EPOCH) // timedelta(milliseconds=1)


def from_ms(ms: int) -> datetime:
    """Aware UTC datetime of epoch milliseconds.

    Examples
    --------
    >>> from_ms(1000).isoformat()
    '1970-01-01T00:00:01+00:00'
    """
    return EPOCH + timedelta(milliseconds=int(ms))


def iso_utc_ms(moment) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` of an aware datetime or epoch milliseconds.

    Examples
    --------
    >>> iso_utc_ms(1_700_000_000_123)
    '2023-11-14T22:13:20.123Z'
    """
    ms = int(moment) if isinstance(moment, (int, np.integer)) else to_ms(moment)
    return _utc_second(ms // 1000) + f"{ms % 1000:03d}Z"


@lru_cache(maxsize=4096)
def _utc_second(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.`` of whole epoch seconds (cached: requests share their second)."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.")


def iso_local(moment: datetime) -> str:
    """ISO 8601 local Brussels time with offset, seconds precision.

    Examples
    --------
    >>> iso_local(datetime(2026, 11, 16, 9, 0, tzinfo=timezone.utc))
    '2026-11-16T10:00:00+01:00'
    """
    return moment.astimezone(BRUSSELS).replace(microsecond=0).isoformat()


def local_day(moment: datetime) -> date:
    """Europe/Brussels calendar date of an aware instant.

    Examples
    --------
    >>> local_day(datetime(2026, 11, 15, 23, 30, tzinfo=timezone.utc))
    datetime.date(2026, 11, 16)
    """
    return moment.astimezone(BRUSSELS).date()


def day_number(day: date) -> int:
    """Days since 1970-01-01 of a calendar date (the integer form used in the day arrays).

    Examples
    --------
    >>> day_number(date(1970, 1, 11))
    10
    """
    return (day - date(1970, 1, 1)).days


def column_ms(values) -> tuple[np.ndarray, np.ndarray]:
    """int64 epoch milliseconds of a timestamp column; missing values (NaT) become -1 with a mask.

    Returns ``(ms, present)``. Naive timestamps are read as UTC.

    Examples
    --------
    >>> ms, ok = column_ms(pd.Series(pd.to_datetime(["1970-01-01T00:00:01Z", None], utc=True)))
    >>> ms.tolist(), ok.tolist()
    ([1000, -1], [True, False])
    """
    ts = pd.to_datetime(pd.Series(values), utc=True)
    present = ts.notna().to_numpy()
    ms = np.full(len(ts), -1, dtype=np.int64)
    if present.any():
        ms[present] = ts[present].dt.tz_localize(None).to_numpy().astype("datetime64[ms]").astype(np.int64)
    return ms, present


def local_day_numbers(ms: np.ndarray) -> np.ndarray:
    """Europe/Brussels calendar dates (days since epoch) of epoch-millisecond instants (vectorised).

    Examples
    --------
    >>> local_day_numbers(np.array([23 * MS_PER_HOUR + 30 * 60_000])).tolist()  # 1970-01-02 00:30 CET
    [1]
    """
    ms = np.asarray(ms, dtype=np.int64)
    if ms.size == 0:
        return np.zeros(0, dtype=np.int64)
    ts = pd.DatetimeIndex(ms.astype("datetime64[ms]")).tz_localize("UTC").tz_convert(BRUSSELS)
    local = ts.tz_localize(None).to_numpy().astype("datetime64[D]")
    return local.astype(np.int64)


def day_strings(days: np.ndarray) -> np.ndarray:
    """``YYYY-MM-DD`` strings (object array) of day numbers.

    Examples
    --------
    >>> day_strings(np.array([0, 365])).tolist()
    ['1970-01-01', '1971-01-01']
    """
    days = np.asarray(days, dtype=np.int64)
    return np.datetime_as_string(days.astype("datetime64[D]"), unit="D").astype(object)
