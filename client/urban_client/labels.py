"""The client's own words in nl, fr and en: one catalogue of labels and the formats of times and numbers.

Every label the ``urban`` summaries print comes from :data:`CATALOGUE` (the same keys in each language; a
test checks it), so one screen speaks one language: the texts the API generates are asked for in the same
language (``Accept-Language``) and data values (work descriptions, statuses, stop and station names) stay
as published, in Dutch. Times for people are Europe/Brussels local time with the zone's name
(``Mon 16 Nov 10:00 CET``); ISO 8601 stays for ``--json``.

A command picks the language once with :func:`use` (``urban --lang``, ``URBAN_LANG``, the config file's
``lang``, the locale, else English: :func:`choose_language`); renderers read it with :func:`current`.

Examples
--------
>>> labels = Labels("fr")
>>> labels("lez.title"), labels.moment("2026-11-16T07:00:00Z")
('Zone de basses émissions\\xa0: ', 'lun. 16 nov. 08:00 CET')
>>> Labels("nl").distance(1.5), Labels("en").number(66.1)
('1,50 km', '66.1')
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from urban_client.api import LANGUAGES

LOCAL_TZ = ZoneInfo("Europe/Brussels")
DEFAULT_LANGUAGE = "en"
NBSP = "\u00a0"  # French typography: a no-break space before ':' (and '%')

WEEKDAYS = {
    "en": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    "fr": ("lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim."),
    "nl": ("ma", "di", "wo", "do", "vr", "za", "zo"),
}
MONTHS = {
    "en": ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    "fr": ("janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc."),
    "nl": ("jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"),
}
DECIMAL = {"en": ".", "fr": ",", "nl": ","}

CATALOGUE: dict[str, dict[str, str]] = {
    "en": {
        "unknown": "unknown",
        "open_ended": "open-ended",
        "field": "{name}: {value}",
        "threshold.state": "{name} {value} {unit}: {state}",
        "locations.title": "Saved locations",
        "locations.none": "No saved locations. Use --lat and --lng with the other commands.",
        "col.id": "ID",
        "col.name": "Name",
        "col.address": "Address",
        "col.label": "Label",
        "col.lat": "Lat",
        "col.lng": "Lng",
        "col.primary": "Primary",
        "col.distance": "Distance",
        "col.status": "Status",
        "col.description": "Description",
        "col.from": "From",
        "col.until": "Until",
        "col.severity": "Severity",
        "col.lines": "Lines",
        "col.delay": "Delay",
        "col.title": "Title",
        "disruptions.near": "Disruptions near ",
        "disruptions.radius": " — works within {radius} km",
        "disruptions.summary": "Works running: {active} · planned: {planned} · starting within 14 days: "
        "{upcoming} · Transit detours: {transit} (high severity: {high})",
        "works.title": "Road works",
        "works.none": "No road works nearby.",
        "col.hindrance": "Hindrance",
        "hindrance.severe": "SEVERE",
        "hindrance.validated": "validated, no details",
        "transit.title": "Transit detours",
        "transit.none": "No transit detours.",
        "severity.high": "high",
        "severity.medium": "medium",
        "severity.low": "low",
        "retrieved": "Data retrieved {time}",
        "no2.none": " — no measured value in the last two hours",
        "measured": "measured {time}",
        "station": "Station {name} ({id}), {distance} away",
        "verdict": "Verdict: ",
        "threshold.who": "WHO",
        "threshold.eu": "EU",
        "exceeded": "exceeded",
        "not_exceeded": "not exceeded",
        "basis.annual": "annual figures",
        "lez.title": "Low-emission zone: ",
        "yes": "yes",
        "no": "no",
        "risk": "Risk: ",
        "risk.low": "LOW",
        "risk.moderate": "MODERATE",
        "risk.high": "HIGH",
        "best_window": "Best window",
        "worst_window": "Worst window",
        "rush_peak": "Next rush peak",
        "peak": "peak {time}",
        "rush.ochtendspits": "morning rush",
        "rush.avondspits": "evening rush",
        "rush.zaterdagspits": "Saturday rush",
        "quota": "{left} calls left today (resets {time})",
    },
    "fr": {
        "unknown": "inconnu",
        "open_ended": "sans date de fin",
        "field": "{name}\u00a0: {value}",
        "threshold.state": "{name} {value} {unit}\u00a0: {state}",
        "locations.title": "Lieux enregistrés",
        "locations.none": "Aucun lieu enregistré. Utilisez --lat et --lng avec les autres commandes.",
        "col.id": "ID",
        "col.name": "Nom",
        "col.address": "Adresse",
        "col.label": "Étiquette",
        "col.lat": "Lat.",
        "col.lng": "Long.",
        "col.primary": "Principal",
        "col.distance": "Distance",
        "col.status": "Statut",
        "col.description": "Description",
        "col.from": "Début",
        "col.until": "Fin",
        "col.severity": "Gravité",
        "col.lines": "Lignes",
        "col.delay": "Retard",
        "col.title": "Titre",
        "disruptions.near": "Perturbations près de ",
        "disruptions.radius": " — chantiers dans un rayon de {radius} km",
        "disruptions.summary": "Chantiers en cours\u00a0: {active} · prévus\u00a0: {planned} · débutant dans les "
        "14 jours\u00a0: {upcoming} · Déviations\u00a0: {transit} (à fort impact\u00a0: {high})",
        "works.title": "Chantiers",
        "works.none": "Aucun chantier à proximité.",
        "col.hindrance": "Gêne",
        "hindrance.severe": "FORTE GÊNE",
        "hindrance.validated": "validée, sans détail",
        "transit.title": "Déviations des transports en commun",
        "transit.none": "Aucune déviation des transports en commun.",
        "severity.high": "élevée",
        "severity.medium": "moyenne",
        "severity.low": "faible",
        "retrieved": "Données récupérées\u00a0: {time}",
        "no2.none": " — aucune mesure au cours des deux dernières heures",
        "measured": "mesuré\u00a0: {time}",
        "station": "Station {name} ({id}), à {distance}",
        "verdict": "Évaluation\u00a0: ",
        "threshold.who": "OMS",
        "threshold.eu": "UE",
        "exceeded": "dépassée",
        "not_exceeded": "non dépassée",
        "basis.annual": "valeurs annuelles",
        "lez.title": "Zone de basses émissions\u00a0: ",
        "yes": "oui",
        "no": "non",
        "risk": "Risque\u00a0: ",
        "risk.low": "FAIBLE",
        "risk.moderate": "MODÉRÉ",
        "risk.high": "ÉLEVÉ",
        "best_window": "Meilleur créneau",
        "worst_window": "Pire créneau",
        "rush_peak": "Prochaine pointe",
        "peak": "pic à {time}",
        "rush.ochtendspits": "pointe du matin",
        "rush.avondspits": "pointe du soir",
        "rush.zaterdagspits": "pointe du samedi",
        "quota": "{left} appels restants aujourd'hui (remise à zéro à {time})",
    },
    "nl": {
        "unknown": "onbekend",
        "open_ended": "geen einddatum",
        "field": "{name}: {value}",
        "threshold.state": "{name} {value} {unit}: {state}",
        "locations.title": "Opgeslagen locaties",
        "locations.none": "Geen opgeslagen locaties. Gebruik --lat en --lng bij de andere opdrachten.",
        "col.id": "ID",
        "col.name": "Naam",
        "col.address": "Adres",
        "col.label": "Etiket",
        "col.lat": "Breedte",
        "col.lng": "Lengte",
        "col.primary": "Hoofdlocatie",
        "col.distance": "Afstand",
        "col.status": "Status",
        "col.description": "Omschrijving",
        "col.from": "Van",
        "col.until": "Tot",
        "col.severity": "Ernst",
        "col.lines": "Lijnen",
        "col.delay": "Vertraging",
        "col.title": "Titel",
        "disruptions.near": "Hinder bij ",
        "disruptions.radius": " — werken binnen {radius} km",
        "disruptions.summary": "Werken in uitvoering: {active} · gepland: {planned} · starten binnen 14 dagen: "
        "{upcoming} · Omleidingen: {transit} (grote hinder: {high})",
        "works.title": "Wegenwerken",
        "works.none": "Geen wegenwerken in de buurt.",
        "col.hindrance": "Hinder",
        "hindrance.severe": "ERNSTIG",
        "hindrance.validated": "gevalideerd, zonder details",
        "transit.title": "Omleidingen openbaar vervoer",
        "transit.none": "Geen omleidingen van het openbaar vervoer.",
        "severity.high": "hoog",
        "severity.medium": "gemiddeld",
        "severity.low": "laag",
        "retrieved": "Gegevens opgehaald: {time}",
        "no2.none": " — geen meetwaarde in de laatste twee uur",
        "measured": "gemeten: {time}",
        "station": "Meetstation {name} ({id}), op {distance}",
        "verdict": "Oordeel: ",
        "threshold.who": "WHO",
        "threshold.eu": "EU",
        "exceeded": "overschreden",
        "not_exceeded": "niet overschreden",
        "basis.annual": "jaarwaarden",
        "lez.title": "Lage-emissiezone: ",
        "yes": "ja",
        "no": "nee",
        "risk": "Risico: ",
        "risk.low": "LAAG",
        "risk.moderate": "MATIG",
        "risk.high": "HOOG",
        "best_window": "Gunstigste periode",
        "worst_window": "Ongunstigste periode",
        "rush_peak": "Volgende spits",
        "peak": "piek om {time}",
        "rush.ochtendspits": "ochtendspits",
        "rush.avondspits": "avondspits",
        "rush.zaterdagspits": "zaterdagspits",
        "quota": "Nog {left} oproepen vandaag (teller terug op nul om {time})",
    },
}


def _parse(value) -> datetime | date | None:
    """A datetime (aware ones in Brussels time), a plain date, or ``None`` when absent or unparsable."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone(LOCAL_TZ) if moment.tzinfo else moment


class Labels:
    """The labels and formats of one language (``nl``, ``fr`` or ``en``)."""

    def __init__(self, lang: str = DEFAULT_LANGUAGE):
        if lang not in CATALOGUE:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {lang!r}")
        self.lang = lang
        self._messages = CATALOGUE[lang]

    def __repr__(self):
        return f"Labels({self.lang!r})"

    def __call__(self, key: str, **values) -> str:
        """The label ``key``, with ``values`` filled in."""
        text = self._messages[key]
        return text.format(**values) if values else text

    def get(self, key: str, default: str) -> str:
        """The label ``key``, or ``default`` (e.g. a code the catalogue does not know: shown as is)."""
        return self._messages.get(key, default)

    def number(self, value, digits: int | None = None) -> str:
        """A number with this language's decimal separator (``digits`` fixed decimals, else as given)."""
        text = (
            f"{value:.{digits}f}"
            if digits is not None
            else f"{value:g}"
            if isinstance(value, float)
            else str(value)
        )
        return text.replace(".", DECIMAL[self.lang])

    def distance(self, km) -> str:
        """Metres below 1 km, else kilometres with two decimals (``?`` when absent)."""
        if not isinstance(km, (int, float)) or isinstance(km, bool):
            return "?"
        return f"{km * 1000:.0f} m" if km < 1 else f"{self.number(km, 2)} km"

    def percent(self, value) -> str:
        """A signed percentage, e.g. ``+12.5%`` (``+12,5 %`` in French)."""
        sign = "+" if value >= 0 else "-"
        return f"{sign}{self.number(abs(value))}{NBSP if self.lang == 'fr' else ''}%"

    def date(self, value, fallback: str = "?") -> str:
        """``Fri 27 Nov 2026`` for a date (or the local date of an instant)."""
        day = _parse(value)
        if day is None:
            return fallback
        if isinstance(day, datetime):
            day = day.date()
        return f"{WEEKDAYS[self.lang][day.weekday()]} {day.day} {MONTHS[self.lang][day.month - 1]} {day.year}"

    def _day(self, moment: datetime) -> str:
        return f"{WEEKDAYS[self.lang][moment.weekday()]} {moment.day} {MONTHS[self.lang][moment.month - 1]}"

    def moment(self, value, with_day: bool = True) -> str:
        """``Mon 16 Nov 10:00 CET``: an instant in Brussels time with the zone's name (``?`` when absent)."""
        moment = _parse(value)
        if not isinstance(moment, datetime):
            return "?"
        clock = f"{moment:%H:%M}" + (f" {moment.tzname()}" if moment.tzinfo else "")
        return f"{self._day(moment)} {clock}" if with_day else clock

    def window(self, window) -> str:
        """``Mon 16 Nov 10:00–12:00 CET`` for a ``{"start", "end"}`` object (the end's day when it differs,
        each zone name when a clock change falls inside)."""
        if not isinstance(window, dict):
            return "—"
        start, end = _parse(window.get("start")), _parse(window.get("end"))
        if not isinstance(start, datetime):
            return "—"
        if not isinstance(end, datetime):
            return self.moment(window["start"])
        same_zone = start.tzname() == end.tzname()
        text = f"{self._day(start)} {start:%H:%M}" + ("" if same_zone else f" {start.tzname()}")
        if end.date() != start.date():
            text += f"–{self._day(end)}"
            return f"{text} {end:%H:%M} {end.tzname() or ''}".rstrip()
        return f"{text}–{end:%H:%M} {end.tzname() or ''}".rstrip()

    def quota_reset(self, now: datetime | None = None) -> str:
        """When the daily quota resets (00:00 UTC) in Brussels time, e.g. ``01:00 CET``."""
        now = now or datetime.now(timezone.utc)
        midnight = datetime.combine(
            now.astimezone(timezone.utc).date() + timedelta(days=1), datetime.min.time()
        )
        local = midnight.replace(tzinfo=timezone.utc).astimezone(LOCAL_TZ)
        return f"{local:%H:%M} {local.tzname()}"


def locale_language(environ=None) -> str | None:
    """The language of the POSIX locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``) when it is nl, fr or en.

    Examples
    --------
    >>> locale_language({"LANG": "nl_BE.UTF-8"}), locale_language({"LC_ALL": "C.UTF-8", "LANG": "fr_BE"})
    ('nl', None)
    """
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            lang = value.split(".")[0].split("_")[0].split("@")[0].lower()
            return lang if lang in LANGUAGES else None
    return None


def chosen_language(option: str | None, stored: dict | None = None, environ=None) -> str | None:
    """The language the user chose explicitly: ``--lang``, then ``URBAN_LANG``, then the config file's
    ``lang`` (``None`` when none; an unknown value raises ``ValueError``)."""
    env = os.environ if environ is None else environ
    for value, where in (
        (option, "--lang"),
        (env.get("URBAN_LANG"), "URBAN_LANG"),
        ((stored or {}).get("lang"), "the config file's lang"),
    ):
        if value:
            if value not in LANGUAGES:
                raise ValueError(f"{where} must be one of {', '.join(LANGUAGES)}, not {value!r}")
            return value
    return None


def choose_language(option: str | None, stored: dict | None = None, environ=None) -> str:
    """The language of a screen: the explicit choice (:func:`chosen_language`), else the locale's, else
    English."""
    return chosen_language(option, stored, environ) or locale_language(environ) or DEFAULT_LANGUAGE


_DEFAULT = Labels(DEFAULT_LANGUAGE)
_current: ContextVar[Labels | None] = ContextVar("urban_labels", default=None)


def current() -> Labels:
    """The labels of the language in use (English unless :func:`use` chose another)."""
    return _current.get() or _DEFAULT


@contextmanager
def use(lang: str):
    """Render in ``lang`` inside the ``with`` block."""
    token = _current.set(Labels(lang))
    try:
        yield current()
    finally:
        _current.reset(token)
