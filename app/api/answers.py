"""The JSON text of a data answer, with what depends only on the snapshot encoded once per snapshot.

Byte for byte :func:`app.web.conventions.json_text` of the answer's dict (``tests/app/test_answer_text.py``
compares them), made faster where most of that text is the same from request to request:

- a ``construction`` item (:class:`geo.service.disruptions.WorkItem`) is its cluster's template with its own
  ``distanceKm``: the text before and after that number is encoded once per snapshot and cluster, the
  number per request (``float.__repr__``, what the JSON encoder writes for a float);
- a ``transit`` item (:class:`geo.service.disruptions.DetourItem`) is its detour's template: its whole text
  is encoded once per snapshot and detour;
- the ``sources`` member is given as text (:func:`app.sources.provenance.sources_text`);
- every other member is encoded per request, consecutive members in one encoder call.

The texts of a snapshot live as long as its loaded snapshot (``LoadedSnapshot.derived``): a new snapshot, a
reload or an ``asOf`` engine has its own, made on first use.
"""

from __future__ import annotations

from geo.service.disruptions import DetourItem, WorkItem
from geo.service.loaded import loaded
from geo.rules.works import hindrance_json

from app.web.conventions import encode_json as json_dumps

_float_text = float.__repr__


class SnapshotTexts:
    """The encoded item texts of one loaded snapshot, each made on first use (a list slot written once:
    threads that race write the same text)."""

    def __init__(self, engine):
        lk = loaded(engine).lookups
        self._works, self._detours = lk.work_items, lk.detour_items
        self._work_halves: list = [None] * len(self._works)
        self._detour_texts: list = [None] * len(self._detours)

    def work(self, item: WorkItem) -> str:
        """The text of a construction item: its template's halves around its own ``distanceKm``."""
        halves = self._work_halves[item.cluster]
        if halves is None:
            halves = self._work_halves[item.cluster] = _halves(self._works[item.cluster])
        km = item["distanceKm"]
        return halves[0] + (_float_text(km) if type(km) is float else json_dumps(km)) + halves[1]

    def detour(self, item: DetourItem) -> str:
        """The text of a transit item (its template's)."""
        text = self._detour_texts[item.detour]
        if text is None:
            text = self._detour_texts[item.detour] = json_dumps(self._detours[item.detour])
        return text


def _halves(template: dict) -> tuple[str, str]:
    """The item's text before its ``distanceKm`` value (``{…,"distanceKm":``) and after it (``,…}``)."""
    parts: list[str] = []
    head = None
    for name, value in template.items():
        if name == "hindrance":
            value = hindrance_json(value)
        if name == "distanceKm":
            head = "{" + ",".join(parts) + ("," if parts else "") + json_dumps(name) + ":"
            parts = []
            continue
        parts.append(json_dumps(name) + ":" + json_dumps(value))
    if head is None:
        raise ValueError("a construction item template without distanceKm")
    return head, "".join("," + p for p in parts) + "}"


def texts(engine) -> SnapshotTexts:
    """The :class:`SnapshotTexts` of ``engine``'s loaded snapshot."""
    return loaded(engine).derived("app.api.answers", SnapshotTexts)


def _member_value(engine, value) -> str | None:
    """The text of a list of snapshot items, or None for any other value (encoded with its neighbours)."""
    if type(value) is not list or not value:
        return None
    kind = type(value[0])
    if kind is WorkItem:
        t = texts(engine)
        return "[" + ",".join(t.work(x) if type(x) is WorkItem else json_dumps(x) for x in value) + "]"
    if kind is DetourItem:
        t = texts(engine)
        return "[" + ",".join(t.detour(x) if type(x) is DetourItem else json_dumps(x) for x in value) + "]"
    return None


def answer_text(engine, body: dict, sources: str) -> str:
    """``json_text({**body, "sources": <the list whose text is sources>})`` of an answer computed by
    ``engine``'s snapshot (its items are that snapshot's)."""
    out: list[str] = []
    plain: dict = {}
    for name, value in body.items():
        text = _member_value(engine, value)
        if text is None:
            plain[name] = value
            continue
        if plain:
            out.append(json_dumps(plain)[1:-1])
            plain = {}
        out.append(json_dumps(name) + ":" + text)
    if plain:
        out.append(json_dumps(plain)[1:-1])
    out.append('"sources":' + sources)
    return "{" + ",".join(out) + "}\n"
