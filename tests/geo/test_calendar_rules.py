"""Belgian public holidays, day kinds and rush peaks (Europe/Brussels), with hand-checked dates."""

import doctest
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geo.rules import calendar as cal
from geo.rules.timefmt import day_number

UTC = timezone.utc


@pytest.mark.parametrize(
    "year, expected",
    [
        (1818, "1818-03-22"),  # earliest possible Easter
        (1943, "1943-04-25"),  # latest possible Easter
        (2000, "2000-04-23"),
        (2019, "2019-04-21"),
        (2024, "2024-03-31"),
        (2025, "2025-04-20"),
        (2026, "2026-04-05"),
        (2027, "2027-03-28"),
        (2038, "2038-04-25"),
    ],
)
def test_easter_sunday_known_dates(year, expected):
    assert str(date(1970, 1, 1) + timedelta(days=int(cal.easter_sunday(year)))) == expected


@given(st.integers(1583, 4099))
def test_easter_is_a_sunday_between_22_march_and_25_april(year):
    d = date(1970, 1, 1) + timedelta(days=int(cal.easter_sunday(year)))
    assert d.year == year and d.weekday() == 6
    assert date(year, 3, 22) <= d <= date(year, 4, 25)


def test_easter_vectorised_equals_scalar():
    years = np.arange(1990, 2060)
    assert cal.easter_sunday(years).tolist() == [int(cal.easter_sunday(int(y))) for y in years]


def test_public_holidays_2026_by_hand():
    assert [(str(d), n) for d, n in cal.public_holidays(2026)] == [
        ("2026-01-01", "Nieuwjaar"),
        ("2026-04-06", "Paasmaandag"),
        ("2026-05-01", "Dag van de Arbeid"),
        ("2026-05-14", "Onze-Lieve-Heer-Hemelvaart"),
        ("2026-05-25", "Pinkstermaandag"),
        ("2026-07-21", "Nationale feestdag"),
        ("2026-08-15", "Onze-Lieve-Vrouw-Hemelvaart"),
        ("2026-11-01", "Allerheiligen"),
        ("2026-11-11", "Wapenstilstand"),
        ("2026-12-25", "Kerstmis"),
    ]


def test_regional_days_are_not_public_holidays():
    # 11 July (Flemish Community) and 27 September (French Community) are not legal public holidays
    days = [day_number(date(2026, 7, 11)), day_number(date(2026, 9, 27)), day_number(date(2026, 7, 21))]
    assert cal.is_public_holiday(days).tolist() == [False, False, True]


def test_day_kind_weekend_and_holidays():
    days = [
        date(2026, 11, 9),
        date(2026, 11, 14),
        date(2026, 11, 15),
        date(2026, 11, 11),
        date(2026, 8, 15),  # Saturday that is a public holiday -> Sunday kind
        date(2026, 4, 6),
    ]  # Easter Monday
    expected = [cal.WORKDAY, cal.SATURDAY, cal.SUNDAY, cal.SUNDAY, cal.SUNDAY, cal.SUNDAY]
    assert cal.day_kind([day_number(d) for d in days]).tolist() == expected
    assert [cal.day_kind_of(d) for d in days] == expected


@given(st.dates(date(1990, 1, 1), date(2100, 12, 31)))
def test_day_kind_scalar_equals_vectorised(day):
    assert cal.day_kind_of(day) == int(cal.day_kind(day_number(day))[0])


def _peak(now):
    p = cal.next_rush_peak(now)
    return p.kind, p.start.isoformat(), p.peak.isoformat(), p.end.isoformat()


@pytest.mark.parametrize(
    "now, expected",
    [
        # Monday 08:30 CET: the morning rush in progress is the next peak
        (
            datetime(2026, 11, 16, 7, 30, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-11-16T07:00:00+01:00",
                "2026-11-16T08:00:00+01:00",
                "2026-11-16T09:30:00+01:00",
            ),
        ),
        # exactly at the end of the morning rush (09:30 CET): the evening rush
        (
            datetime(2026, 11, 16, 8, 30, tzinfo=UTC),
            (
                "avondspits",
                "2026-11-16T16:00:00+01:00",
                "2026-11-16T17:00:00+01:00",
                "2026-11-16T18:30:00+01:00",
            ),
        ),
        # Friday 20:00 CET -> Saturday afternoon
        (
            datetime(2026, 11, 13, 19, 0, tzinfo=UTC),
            (
                "zaterdagspits",
                "2026-11-14T14:00:00+01:00",
                "2026-11-14T15:00:00+01:00",
                "2026-11-14T17:00:00+01:00",
            ),
        ),
        # Saturday 21:00 CET -> no Sunday rush -> Monday morning
        (
            datetime(2026, 11, 14, 20, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-11-16T07:00:00+01:00",
                "2026-11-16T08:00:00+01:00",
                "2026-11-16T09:30:00+01:00",
            ),
        ),
        # Tuesday 19:00 CET before Wapenstilstand (Wednesday 11 Nov) -> Thursday morning
        (
            datetime(2026, 11, 10, 18, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-11-12T07:00:00+01:00",
                "2026-11-12T08:00:00+01:00",
                "2026-11-12T09:30:00+01:00",
            ),
        ),
        # Easter Sunday 2026 (Monday 6 April is a holiday) -> Tuesday 7 April, summer time
        (
            datetime(2026, 4, 5, 10, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-04-07T07:00:00+02:00",
                "2026-04-07T08:00:00+02:00",
                "2026-04-07T09:30:00+02:00",
            ),
        ),
        # Friday 14 Aug 19:00 CEST; Saturday 15 Aug is a holiday (no Saturday rush) -> Monday 17 Aug
        (
            datetime(2026, 8, 14, 17, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-08-17T07:00:00+02:00",
                "2026-08-17T08:00:00+02:00",
                "2026-08-17T09:30:00+02:00",
            ),
        ),
        # Saturday 28 March 2026 20:00 CET, clocks go forward on Sunday 29 -> Monday in CEST
        (
            datetime(2026, 3, 28, 19, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-03-30T07:00:00+02:00",
                "2026-03-30T08:00:00+02:00",
                "2026-03-30T09:30:00+02:00",
            ),
        ),
        # Saturday 24 Oct 2026 20:00 CEST, clocks go back on Sunday 25 -> Monday in CET
        (
            datetime(2026, 10, 24, 18, 0, tzinfo=UTC),
            (
                "ochtendspits",
                "2026-10-26T07:00:00+01:00",
                "2026-10-26T08:00:00+01:00",
                "2026-10-26T09:30:00+01:00",
            ),
        ),
        # Christmas Friday 2026 -> Saturday 26 December afternoon
        (
            datetime(2026, 12, 24, 20, 0, tzinfo=UTC),
            (
                "zaterdagspits",
                "2026-12-26T14:00:00+01:00",
                "2026-12-26T15:00:00+01:00",
                "2026-12-26T17:00:00+01:00",
            ),
        ),
    ],
)
def test_next_rush_peak(now, expected):
    assert _peak(now) == expected


@given(st.datetimes(datetime(2000, 1, 1), datetime(2060, 1, 1), timezones=st.just(UTC)))
def test_next_rush_peak_properties(now):
    p = cal.next_rush_peak(now)
    assert p.start < p.peak < p.end and p.end > now
    assert cal.day_kind_of(p.start.date()) != cal.SUNDAY
    # brute force: no period of the days up to the answer's day ends after now and before the answer
    day = now.astimezone(cal.BRUSSELS).date()
    while day <= p.start.date():
        for period in cal.RUSH_PERIODS[cal.day_kind_of(day)]:
            end = datetime(day.year, day.month, day.day, *period.end, tzinfo=cal.BRUSSELS)
            assert not (now < end < p.end)
        day += timedelta(days=1)


def test_traffic_profile_follows_local_time_across_dst():
    # 2026-03-29 01:00Z = 03:00 CEST (Sunday); 2026-10-25 00:00Z and 01:00Z are both 02:00 local (Sunday)
    ms = [
        datetime(2026, 3, 29, 1, tzinfo=UTC),
        datetime(2026, 10, 25, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 1, tzinfo=UTC),
        datetime(2026, 11, 16, 7, tzinfo=UTC),
    ]
    ms = [int(m.timestamp() * 1000) for m in ms]
    hours, kinds, weekdays = cal.local_hour_kind(ms)
    assert hours.tolist() == [3, 2, 2, 8]
    assert kinds.tolist() == [cal.SUNDAY, cal.SUNDAY, cal.SUNDAY, cal.WORKDAY]
    assert weekdays.tolist() == [6, 6, 6, 0]
    assert cal.traffic_intensity(ms).tolist() == [0.02, 0.03, 0.03, 1.0]


def test_hour_starts_on_and_off_the_hour():
    h = 3_600_000
    assert cal.hour_starts(0, 3).tolist() == [0, h, 2 * h]
    assert cal.hour_starts(1, 3).tolist() == [h, 2 * h, 3 * h]
    assert cal.hour_starts(h, 2).tolist() == [h, 2 * h]


def test_profile_peaks_match_rush_periods():
    assert cal.TRAFFIC_PROFILE.shape == (3, 24)
    assert cal.TRAFFIC_PROFILE[cal.WORKDAY].argmax() == 8
    assert cal.TRAFFIC_PROFILE[cal.WORKDAY][17] == 1.0
    assert cal.TRAFFIC_PROFILE[cal.SATURDAY].argmax() == 15
    assert (cal.TRAFFIC_PROFILE >= 0).all() and (cal.TRAFFIC_PROFILE <= 1).all()


@pytest.mark.parametrize(
    "module",
    [
        "geo.rules.calendar",
        "geo.rules.timefmt",
        "geo.rules.works",
        "geo.rules.transit",
        "geo.rules.airrules",
        "geo.service.briefing",
        "geo.rules.selection",
        "geo.rules.tally",
        "geo.rules.windows",
    ],
)
def test_doctests(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@given(st.datetimes(datetime(2000, 1, 1), datetime(2060, 1, 1), timezones=st.just(UTC)))
def test_local_hour_kind_equals_zoneinfo_per_instant(now):
    starts = cal.hour_starts(int(now.timestamp() * 1000), 24)  # the briefing's slots, DST days included
    hours, kinds, weekdays = cal.local_hour_kind(starts)
    for t, h, k, w in zip(starts.tolist(), hours.tolist(), kinds.tolist(), weekdays.tolist()):
        local = datetime.fromtimestamp(t / 1000, UTC).astimezone(cal.BRUSSELS)
        assert (h, k, w) == (local.hour, cal.day_kind_of(local.date()), local.weekday())
