"""``Accept`` negotiation (app/api/negotiation.py): its examples, and a brute-force oracle over generated
headers: each offer's q is that of the most specific matching range, the best q > 0 wins, ties go to JSON."""

from __future__ import annotations

import doctest

from hypothesis import given
from hypothesis import strategies as st

import app.api.negotiation as negotiation
from app.api.negotiation import GEOJSON, JSON, choose

RANGES = [
    "*/*",
    "application/*",
    "application/json",
    "application/geo+json",
    "text/*",
    "text/html",
    "image/png",
    "json",
    "application/json; charset=utf-8",
]
QS = [None, "0", "0.1", "0.5", "0.500", "1", "1.0", "2", "x", ".5"]


def test_examples():
    result = doctest.testmod(negotiation, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def oracle(parts, offers):
    """Expand ranges to the offers they cover, least specific first, so a more specific range overrides."""
    valid = []
    for media, q in parts:
        base = media.split(";")[0].strip().lower()
        if base.count("/") != 1 or (q is not None and q not in ("0", "0.1", "0.5", "0.500", "1", "1.0")):
            continue
        valid.append((base, 1.0 if q is None else float(q)))
    quality = {}
    for level in (0, 1, 2):
        for base, q in valid:
            kind, sub = base.split("/")
            spec = 0 if base == "*/*" else 1 if sub == "*" else 2
            if spec != level:
                continue
            for offer in offers:
                o_kind, o_sub = offer.split("/")
                if spec == 0 or (o_kind == kind and (spec == 1 or o_sub == sub)):
                    if (offer, level) not in quality:  # the first range of that specificity counts
                        quality[(offer, level)] = q
    best, best_q = None, 0.0
    for offer in offers:
        levels = [lv for (o, lv) in quality if o == offer]
        q = quality[(offer, max(levels))] if levels else 0.0
        if q > best_q:
            best, best_q = offer, q
    return best


@given(
    st.lists(st.tuples(st.sampled_from(RANGES), st.sampled_from(QS)), min_size=1, max_size=5),
    st.sampled_from([(JSON, GEOJSON), (JSON,)]),
)
def test_choice_equals_the_oracle(parts, offers):
    header = ", ".join(m + ("" if q is None else f";q={q}") for m, q in parts)
    expected = offers[0] if header.strip() == "*/*" else oracle(parts, offers)
    assert choose(header, offers) == expected, header
