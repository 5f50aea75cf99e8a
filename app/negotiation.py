"""Content negotiation of the data endpoints: which representation of an answer the caller gets.

One place decides it, from the request headers listed in :data:`NEGOTIATED` (today ``Accept``; a language
chosen from ``Accept-Language`` joins here as a second field of :class:`Representation`), and the same
list is the data responses' ``Vary``. See docs/api.md → Representations.

- no ``Accept``, an empty one, or ``*/*``: JSON, byte-identical to an answer without negotiation;
- otherwise RFC 9110 §12.5.1: each offered type gets the q of the most specific media range matching it;
  the highest q > 0 wins, ties go to the server's order (JSON first); media-range parameters other than
  ``q`` are ignored; a range that does not parse matches nothing;
- nothing acceptable: 406 ``not_acceptable`` (in the one JSON error shape).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from flask import current_app, g, request

from .errors import NotAcceptable

JSON = "application/json"
GEOJSON = "application/geo+json"
#: request headers that select the representation: the data responses' ``Vary`` (with Authorization)
NEGOTIATED = ("Accept",)
VARY = ", ".join(("Authorization", *NEGOTIATED))

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_RANGE = re.compile(rf"^({_TOKEN})/({_TOKEN})$")
_QVALUE = re.compile(r"^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$")


def parse_accept(header: str) -> list[tuple[str, str, float]]:
    """The media ranges of an ``Accept`` value as ``(type, subtype, q)``, lower-cased; elements that do
    not parse (bad range or q) are dropped.

    Examples
    --------
    >>> parse_accept("application/geo+json;q=0.9, */*;q=0.1, json, text/html;q=2")
    [('application', 'geo+json', 0.9), ('*', '*', 0.1)]
    """
    ranges = []
    for element in header.split(","):
        media, *params = element.split(";")
        match = _RANGE.match(media.strip())
        if not match:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                value = value.strip()
                q = float(value) if _QVALUE.match(value) else -1.0
        if q >= 0:
            ranges.append((match.group(1).lower(), match.group(2).lower(), q))
    return ranges


def quality(offer: str, ranges: list[tuple[str, str, float]]) -> float:
    """The q the caller gives ``offer``: that of the most specific matching range, 0 when none matches.

    Examples
    --------
    >>> quality("application/json", parse_accept("application/*;q=0.5, application/json;q=0"))
    0.0
    >>> quality("application/geo+json", parse_accept("application/*;q=0.5, application/json;q=0"))
    0.5
    """
    kind, sub = offer.split("/")
    best, q = -1, 0.0
    for r_kind, r_sub, r_q in ranges:
        if (r_kind, r_sub) == (kind, sub):
            specificity = 2
        elif r_kind == kind and r_sub == "*":
            specificity = 1
        elif r_kind == "*" and r_sub == "*":
            specificity = 0
        else:
            continue
        if specificity > best:
            best, q = specificity, r_q
    return q


@lru_cache(maxsize=512)  # clients repeat their Accept value: parse each distinct one once per process
def choose(header: str | None, offers: tuple[str, ...]) -> str | None:
    """The offer to send for an ``Accept`` value (None: nothing acceptable).

    Examples
    --------
    >>> choose(None, (JSON, GEOJSON)), choose("*/*", (JSON, GEOJSON))
    ('application/json', 'application/json')
    >>> choose("application/geo+json", (JSON, GEOJSON)), choose("application/geo+json", (JSON,))
    ('application/geo+json', None)
    >>> choose("application/json;q=0.5, application/geo+json;q=0.8", (JSON, GEOJSON))
    'application/geo+json'
    """
    if header is None or not header.strip() or header.strip() == "*/*":
        return offers[0]
    ranges = parse_accept(header)
    best, best_q = None, 0.0
    for offer in offers:
        q = quality(offer, ranges)
        if q > best_q:
            best, best_q = offer, q
    return best


@dataclass(frozen=True)
class Representation:
    """What the caller gets: the media type and the function turning the JSON body into response text."""

    media_type: str
    render: Callable[[dict], str]


def offers(resource: str) -> tuple[str, ...]:
    """Media types a data resource (``locations``, ``disruptions``, ...) is offered in, JSON first."""
    from .api.geojson import SERIALISERS

    return (JSON, GEOJSON) if resource in SERIALISERS else (JSON,)


def negotiate() -> None:
    """``before_request`` of the data endpoints (after authentication, plan and quota): choose the
    representation (``g.representation``) or raise 406 ``not_acceptable``."""
    resource = request.path.rsplit("/", 1)[-1]
    offered = offers(resource)
    media = choose(request.environ.get("HTTP_ACCEPT"), offered)
    if media is None:
        raise NotAcceptable(f"/{resource} is available as {' or '.join(offered)}; "
                            "send one of these in Accept (or */*)")
    if media == GEOJSON:
        from .api.geojson import render

        g.representation = Representation(GEOJSON, lambda body: render(resource, body))


def render(body: dict) -> tuple[str, str]:
    """``(text, media type)`` of a data body in the negotiated representation (JSON when none was)."""
    rep = g.get("representation")
    if rep is None:
        return current_app.json.body(body), JSON
    return rep.render(body), rep.media_type
