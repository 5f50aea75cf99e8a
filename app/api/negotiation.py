"""Content negotiation of the data endpoints: which representation of an answer the caller gets.

One place decides it, from the request headers listed in :data:`NEGOTIATED` (``Accept``, and
``Accept-Language`` on the endpoints whose generated texts are translated), and the same list is the data
responses' ``Vary``. See docs/api.md → Representations and → Languages.

Media type:

- no ``Accept``, an empty one, or ``*/*``: JSON, byte-identical to an answer without negotiation;
- otherwise RFC 9110 §12.5.1: each offered type gets the q of the most specific media range matching it;
  the highest q > 0 wins, ties go to the server's order (JSON first); media-range parameters other than
  ``q`` are ignored; a range that does not parse matches nothing;
- nothing acceptable: 406 ``not_acceptable`` (in the one JSON error shape).

Language (:func:`choose_language`), among ``nl``, ``fr``, ``en`` (:data:`geo.rules.texts.LANGUAGES`):

- no ``Accept-Language`` or an empty one: ``nl``, byte-identical to an answer without negotiation;
- each language gets the q of the range equal to it, else the highest q of the ranges with it as primary
  subtag (``fr-BE``, ``fr-CA`` → ``fr``), else that of ``*``; the highest q > 0 wins, ties go to the
  range listed first, then to nl, fr, en; elements that do not parse are ignored;
- nothing supported (``de``, ``*;q=0``, junk): ``nl`` (a language is a preference: never 406).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from flask import current_app, g, request

from app.web.conventions import GEOJSON, JSON, json_text
from app.web.errors import NotAcceptable

from .geojson import SERIALISERS
from .geojson import render as render_geojson

#: request headers that select the representation: the data responses' ``Vary`` (with Authorization)
NEGOTIATED = ("Accept",)
VARY = ", ".join(("Authorization", *NEGOTIATED))
#: ``Vary`` of the endpoints with translated texts (``Content-Language`` on their answers)
VARY_LANGUAGE = ", ".join((VARY, "Accept-Language"))
#: the languages of the generated texts, the default first (as geo.rules.texts.LANGUAGES; a test checks it)
LANGUAGES = ("nl", "fr", "en")

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_RANGE = re.compile(rf"^({_TOKEN})/({_TOKEN})$")
_QVALUE = re.compile(r"^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$")
_LANGUAGE_RANGE = re.compile(r"^(?:\*|[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)$")


def _weight(params: list[str], others: bool) -> float:
    """The ``q`` of an element's parameters (1 when absent), -1 when it does not parse or, unless
    ``others``, when another parameter is present."""
    q = 1.0
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            value = value.strip()
            if not _QVALUE.match(value):
                return -1.0
            q = float(value)
        elif not others:
            return -1.0
    return q


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
        q = _weight(params, others=True)
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


def parse_accept_language(header: str) -> list[tuple[str, float]]:
    """The language ranges of an ``Accept-Language`` value as ``(range, q)``, lower-cased, in the
    caller's order; elements that do not parse (bad range or q) are dropped.

    Examples
    --------
    >>> parse_accept_language("fr-BE, en;q=0.8, *;q=0.1, en_US, nl;q=2, 12")
    [('fr-be', 1.0), ('en', 0.8), ('*', 0.1)]
    """
    ranges = []
    for element in header.split(","):
        tag, *params = element.split(";")
        tag = tag.strip()
        if not _LANGUAGE_RANGE.match(tag):
            continue
        q = _weight(params, others=False)  # Accept-Language has no parameter but q
        if q >= 0:
            ranges.append((tag.lower(), q))
    return ranges


def language_quality(language: str, ranges: list[tuple[str, float]]) -> tuple[float, int]:
    """``(q, position of the deciding range)`` of one supported language (``(0, len)`` when none matches):
    the range equal to it, else the best of those with it as primary subtag, else ``*``.

    Examples
    --------
    >>> ranges = parse_accept_language("fr-BE;q=0.7, fr-FR;q=0.9, *;q=0.2, nl;q=0")
    >>> language_quality("fr", ranges), language_quality("en", ranges), language_quality("nl", ranges)
    ((0.9, 1), (0.2, 2), (0.0, 3))
    """
    exact = regional = wildcard = None
    for position, (tag, q) in enumerate(ranges):
        if tag == language:
            if exact is None:
                exact = (q, position)
        elif tag.split("-", 1)[0] == language:
            if regional is None or q > regional[0]:
                regional = (q, position)
        elif tag == "*" and wildcard is None:
            wildcard = (q, position)
    return exact or regional or wildcard or (0.0, len(ranges))


@lru_cache(maxsize=512)  # browsers repeat their Accept-Language value: parse each distinct one once
def choose_language(header: str | None) -> str:
    """The language of the generated texts for an ``Accept-Language`` value (``nl`` when nothing fits).

    Examples
    --------
    >>> choose_language(None), choose_language("fr-BE,fr;q=0.9,en;q=0.8"), choose_language("de, en;q=0.1")
    ('nl', 'fr', 'en')
    >>> choose_language("en, fr"), choose_language("*"), choose_language("de"), choose_language("nl;q=0, *")
    ('en', 'nl', 'nl', 'fr')
    """
    if header is None or not header.strip():
        return LANGUAGES[0]
    ranges = parse_accept_language(header)
    best, best_key = LANGUAGES[0], None
    for order, language in enumerate(LANGUAGES):
        q, position = language_quality(language, ranges)
        key = (-q, position, order)
        if q > 0 and (best_key is None or key < best_key):
            best, best_key = language, key
    return best


@dataclass(frozen=True)
class Representation:
    """What the caller gets: the media type and the function turning the JSON body into response text."""

    media_type: str
    render: Callable[[dict], str]


def offers(resource: str) -> tuple[str, ...]:
    """Media types a data resource (``locations``, ``disruptions``, ...) is offered in, JSON first."""
    return (JSON, GEOJSON) if resource in SERIALISERS else (JSON,)


def negotiate(resource: str, translated: bool = False) -> Representation | None:
    """Choose the representation of ``resource``'s answer (``g.representation``, also returned: None for
    JSON) or raise 406 ``not_acceptable``; when its texts are ``translated``, choose their language
    (``g.language``). The data views call it first, so 406 comes before any 400."""
    if translated:
        g.language = choose_language(request.environ.get("HTTP_ACCEPT_LANGUAGE"))
    offered = offers(resource)
    media = choose(request.environ.get("HTTP_ACCEPT"), offered)
    if media is None:
        raise NotAcceptable(
            f"/{resource} is available as {' or '.join(offered)}; send one of these in Accept (or */*)"
        )
    if media == GEOJSON:
        chosen = g.representation = Representation(GEOJSON, lambda body: render_geojson(resource, body))
        return chosen
    return None


def representation() -> Representation | None:
    """The representation :func:`negotiate` chose, None for JSON."""
    return g.get("representation")


def render(body: dict) -> tuple[str, str]:
    """``(text, media type)`` of a data body in the negotiated representation (JSON when none was)."""
    rep = representation()
    if rep is None:
        return json_text(body), JSON
    return rep.render(body), rep.media_type


def data_response(body: dict):
    """A cacheable data response in the negotiated representation: ``Cache-Control: private, max-age=N``
    and ``Vary: Authorization, Accept``; an answer with translated texts also ``Content-Language`` and
    ``Accept-Language`` in ``Vary``."""
    return data_text_response(*render(body))


def data_text_response(text: str, media_type: str = JSON):
    """:func:`data_response` of a body already rendered as ``text``."""
    language = g.get("language")
    headers = [
        ("Cache-Control", f"private, max-age={current_app.config['CACHE_MAX_AGE']}"),
        ("Vary", VARY if language is None else VARY_LANGUAGE),
    ]
    if language is not None:
        headers.append(("Content-Language", language))
    return current_app.response_class(text, mimetype=media_type, headers=headers)
