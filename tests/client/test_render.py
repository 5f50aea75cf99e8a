"""Readable summaries on constructed bodies (expected text worked out by hand)."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from urban_client.api import RateLimit
from urban_client.render import (
    format_distance,
    format_window,
    local_time,
    render_air_quality,
    render_briefing,
    render_disruptions,
    render_quota,
    sort_transit,
    sort_works,
)


def plain(render, data):
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    render(data, console)
    return console.export_text()


def test_local_time_is_brussels_summer_and_winter():
    assert local_time("2026-07-01T06:00:00.000Z").strftime("%H:%M %z") == "08:00 +0200"
    assert local_time("2026-11-16T06:00:00Z").strftime("%H:%M %z") == "07:00 +0100"
    assert local_time("2026-11-16T10:00:00+01:00").strftime("%H:%M") == "10:00"
    assert local_time(None) is None and local_time("not a time") is None


def test_window_spanning_midnight_shows_both_dates():
    assert (
        format_window({"start": "2026-11-16T22:00:00Z", "end": "2026-11-17T01:00:00Z"})
        == "Mon 16 Nov 23:00–Tue 17 Nov 02:00 CET"
    )
    window = {"start": "2026-11-16T09:00:00Z", "end": "2026-11-16T11:00:00Z"}
    assert format_window(window) == "Mon 16 Nov 10:00–12:00 CET"
    assert format_window(None) == "—"


def test_distance_formatting():
    assert format_distance(0.0) == "0 m"
    assert format_distance(0.9994) == "999 m"
    assert format_distance(1.0) == "1.00 km"
    assert format_distance(1.996) == "2.00 km"


def test_works_sorted_by_distance_then_running_first():
    works = [
        {"id": "c", "distanceKm": 1.2, "status": "Gepland"},
        {"id": "b", "distanceKm": 0.3, "status": "Gepland"},
        {"id": "a", "distanceKm": 0.3, "status": "In uitvoering"},
        {"id": "d", "status": "In uitvoering"},
    ]
    assert [w["id"] for w in sort_works(works)] == ["a", "b", "c", "d"]


def test_transit_keeps_the_api_distance_order_unless_distances_are_given():
    items = [
        {"id": "9", "severity": "medium"},
        {"id": "2", "severity": "high"},
        {"id": "5", "severity": "high"},
    ]
    assert [t["id"] for t in sort_transit(items)] == ["9", "2", "5"]
    items = [{"id": "a", "distanceKm": 0.9}, {"id": "b"}, {"id": "c", "distanceKm": 0.1}]
    assert [t["id"] for t in sort_transit(items)] == ["c", "a", "b"]


def test_disruptions_summary_and_markup_is_not_interpreted():
    data = {
        "location": {"id": "loc_1", "name": "Stadhuis", "lat": 51.2213, "lng": 4.3997},
        "radiusKm": 2,
        "summary": {
            "activeWorks": 1,
            "plannedWorks": 1,
            "upcomingWorks14d": 0,
            "transitDisruptions": 1,
            "highSeverityTransit": 1,
        },
        "construction": [
            {
                "id": "far",
                "description": "Gepland [bold]werk[/bold]",
                "status": "Gepland",
                "lat": 0,
                "lng": 0,
                "distanceKm": 1.5,
                "startDate": "2026-12-01",
                "endDate": None,
            },
            {
                "id": "near",
                "description": "Heraanleg riolering",
                "status": "In uitvoering",
                "lat": 0,
                "lng": 0,
                "distanceKm": 0.12,
                "startDate": "2025-03-01",
                "endDate": "2027-12-31",
            },
        ],
        "transit": [
            {
                "id": "30506",
                "title": "Werken Brabo",
                "lines": ["7", "12"],
                "severity": "high",
                "estimatedDelayMin": 15,
                "endDate": None,
            }
        ],
        "retrievedAt": "2026-11-16T07:00:00.000Z",
    }
    out = plain(render_disruptions, data)
    assert "Disruptions near Stadhuis (51.2213, 4.3997) — works within 2 km" in out
    assert (
        "Works running: 1 · planned: 1 · starting within 14 days: 0 · Transit detours: 1 (high severity: 1)"
    ) in out
    assert out.index("near") < out.index("far")
    assert "120 m" in out and "1.50 km" in out and "open-ended" in out
    assert "Sat 1 Mar 2025" in out and "Fri 31 Dec 2027" in out and "2025-03-01" not in out
    assert "Gepland [bold]werk[/bold]" in out
    assert "7, 12" in out and "15 min" in out
    assert "Data retrieved Mon 16 Nov 08:00 CET" in out


def test_air_quality_known_and_unknown():
    known = {
        "reading": {
            "pollutant": "NO2",
            "unit": "µg/m³",
            "value": 23.4,
            "trend": "falling",
            "trendPercent": -12.5,
            "measuredAt": "2026-11-16T07:00:00.000Z",
            "station": {"id": "42R801", "name": "Borgerhout", "distanceKm": 1.234},
        },
        "thresholds": {
            "basis": "annual",
            "who": {"value": 10, "unit": "µg/m³", "exceeded": True},
            "eu": {"value": 40, "unit": "µg/m³", "exceeded": False},
        },
        "compliance": {"status": "above_who", "label": "Boven de WHO-richtlijn"},
        "lez": {"inside": True, "name": "Lage-emissiezone Antwerpen"},
    }
    out = plain(render_air_quality, known)
    assert "NO2 23.4 µg/m³  ↓ -12.5%  measured Mon 16 Nov 08:00 CET" in out
    assert "Station Borgerhout (42R801), 1.23 km away" in out
    assert "Verdict: Boven de WHO-richtlijn" in out
    assert "WHO 10 µg/m³: exceeded · EU 40 µg/m³: not exceeded (annual figures)" in out
    assert "Low-emission zone: yes (Lage-emissiezone Antwerpen)" in out
    unknown = {
        "reading": {"value": None, "unit": "µg/m³", "trend": "unknown", "trendPercent": None},
        "thresholds": {"who": {"value": 10, "exceeded": None}, "eu": {"value": 40, "exceeded": None}},
        "compliance": {"status": "unknown", "label": "Onbekend"},
        "lez": {"inside": False},
    }
    out = plain(render_air_quality, unknown)
    assert "NO2 unknown" in out and " 0 " not in out
    assert "WHO 10 µg/m³: unknown" in out
    assert "Low-emission zone: no" in out


def test_briefing_windows_in_local_time():
    data = {
        "risk": "high",
        "headline": "Zware hinder",
        "keyFacts": [{"key": "x", "text": "3 werken", "value": 3}],
        "bestWindow": {"start": "2026-11-16T09:00:00Z", "end": "2026-11-16T11:00:00Z"},
        "worstWindow": {"start": "2026-11-16T16:00:00+01:00", "end": "2026-11-16T18:00:00+01:00"},
        "nextRushPeak": {
            "start": "2026-11-16T16:00:00+01:00",
            "end": "2026-11-16T18:30:00+01:00",
            "peak": "2026-11-16T17:00:00+01:00",
            "kind": "avondspits",
        },
    }
    out = plain(render_briefing, data)
    assert "Risk: HIGH" in out and "Zware hinder" in out and "• 3 werken" in out
    assert "Best window:    Mon 16 Nov 10:00–12:00 CET" in out
    assert "Worst window:   Mon 16 Nov 16:00–18:00 CET" in out
    assert "Next rush peak: evening rush Mon 16 Nov 16:00–18:30 CET (peak 17:00 CET)" in out


def test_quota_line_only_when_reported():
    console = Console(record=True, width=100, force_terminal=False)
    render_quota(RateLimit(limit=100, remaining=7), console, now=datetime(2026, 11, 16, 23, 59, tzinfo=UTC))
    render_quota(RateLimit(), console)
    render_quota(RateLimit(limit=100, remaining=6), console, now=datetime(2026, 7, 1, 0, 0, tzinfo=UTC))
    assert console.export_text() == (
        "7/100 calls left today (resets 01:00 CET)\n6/100 calls left today (resets 02:00 CEST)\n"
    )
