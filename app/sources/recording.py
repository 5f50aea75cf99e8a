"""Record every upstream response raw, and build a snapshot offline from such a recording.

``python -m app.sources record DIR`` runs the live adapters once (through the normal ``Upstream``, with a hook
that saves each accepted answer's body as received) and writes ``DIR/manifest.json``::

    {"format": "urban-recording/1", "recordedAt": "2026-11-24T08:00:00Z",
     "responses": [{"source": "delijn", "endpoint": "/entiteiten/{entiteitnummer}/lijnen",
                    "url": "https://…/entiteiten/1/lijnen", "status": 200,
                    "retrievedAt": "2026-11-24T08:00:01Z", "file": "delijn/0001.json"}]}

``python -m app.sources replay DIR --out SNAPSHOT`` runs the same adapters against :class:`ReplayUpstream`,
which answers from the recording by ``source`` and ``endpoint`` plus the path values the template names
(``/haltes/{entiteitnummer}/{haltenummer}`` → ``3``, ``308530``), never by exact URL: host, port and query
string may differ. Responses for the same key are served in recorded order (GIPOD pages). The snapshot's
``asOf`` is ``recordedAt`` and its upstream layers have kind ``recorded`` (never stale): it answers as of the
recording, the way the demo answers as of its ``asOf``. See docs/sources.md.
"""

from __future__ import annotations

import collections
import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from app.history.recorder import record_published
from geo.data.publish import write_and_publish
from geo.data.snapshot import build_layers, iso_ms

from .catalog import SOURCES
from .errors import MissingResponse, UpstreamError
from .http import Fetched, PayloadError
from .settings import SourceSettings

FORMAT = "urban-recording/1"
MANIFEST = "manifest.json"
#: sources whose layers come from the reference files when a recording has no response of theirs
REFERENCE_FALLBACK = {"lez", "boundary"}


class RecordingError(ValueError):
    """A recording directory cannot be read or replayed (the message says what is missing)."""


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Recorder:
    """``Upstream.on_response`` hook: saves each answer raw under ``DIR/<source>/NNNN.json``."""

    def __init__(self, directory, recorded_at: datetime):
        self.dir = Path(directory)
        self.recorded_at = recorded_at
        self.responses: list[dict] = []
        self._count: collections.Counter = collections.Counter()

    def __call__(self, source, endpoint, url, status, content, retrieved_at) -> None:
        self._count[source] += 1
        rel = f"{source}/{self._count[source]:04d}.json"
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content or b"")
        self.responses.append(
            {
                "source": source,
                "endpoint": endpoint,
                "url": url,
                "status": int(status),
                "retrievedAt": _stamp(retrieved_at),
                "file": rel,
            }
        )

    def manifest(self) -> dict:
        return {"format": FORMAT, "recordedAt": _stamp(self.recorded_at), "responses": self.responses}

    def write(self) -> dict:
        manifest = self.manifest()
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / MANIFEST).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        return manifest


def record(
    directory,
    upstream,
    settings: SourceSettings,
    *,
    now: datetime | None = None,
    adapters: dict | None = None,
) -> tuple[dict, dict]:
    """Run every (configured) adapter once through ``upstream`` and record its answers into ``directory``.

    Returns ``(manifest, failed)``: ``failed`` maps a source to its error message (its answers up to the
    failure are still recorded). Refuses a non-empty ``directory``.
    """
    from .refresher import ADAPTERS, OPTIONAL

    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise RecordingError(f"{directory} is not empty; record into a new directory")
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    recorder = Recorder(directory, now)
    previous, upstream.on_response = upstream.on_response, recorder
    failed = {}
    try:
        for name, fetch in (adapters or ADAPTERS).items():
            if name in OPTIONAL and not OPTIONAL[name](settings):
                continue
            try:
                fetch(upstream, settings, now)
            except UpstreamError as exc:
                failed[name] = str(exc)
    finally:
        upstream.on_response = previous
    return recorder.write(), failed


def record_live(directory, environ=None) -> tuple[dict, dict]:
    """``python -m app.sources record DIR``: settings from the ``URBAN_*`` environment, a fresh HTTP cache
    (every answer comes from the network); returns ``(manifest, failed)`` like :func:`record`."""
    import tempfile

    from .http import Upstream, build_session

    settings = SourceSettings.from_mapping({}, environ)
    with tempfile.TemporaryDirectory() as tmp:
        session = build_session(Path(tmp) / "http_cache.sqlite", settings)
        try:
            manifest, failed = record(directory, Upstream(session, settings), settings)
        finally:
            session.close()
    return manifest, failed


def summary_line(directory, manifest: dict) -> str:
    """The one line ``record`` prints on success: what was recorded, where, and how to serve it.

    Examples
    --------
    >>> m = {"recordedAt": "2026-11-16T07:00:00Z", "responses": [{"source": "gipod"}, {"source": "ircel"}]}
    >>> summary_line("rec", m)
    'recorded 2 answers (gipod 1, ircel 1) at 2026-11-16T07:00:00Z into rec; serve them with: make serve RECORDING=rec'
    """
    counts = collections.Counter(str(r.get("source")) for r in manifest.get("responses", []))
    per_source = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
    return (
        f"recorded {sum(counts.values())} answers ({per_source}) at {manifest.get('recordedAt')} into "
        f"{directory}; serve them with: make serve RECORDING={directory}"
    )


def _template(endpoint: str) -> re.Pattern:
    """Regex matching the end of a URL path for an endpoint template (placeholders = one path segment)."""
    if endpoint.startswith("{") and endpoint.endswith("}") and "/" not in endpoint:
        return re.compile(r"$")  # a whole configured URL (the boundary): nothing to match
    parts = re.split(r"(\{[^}]+\})", endpoint)
    return re.compile("".join("([^/]+)" if p.startswith("{") else re.escape(p) for p in parts) + "$")


def key_of(source: str, endpoint: str, url: str) -> tuple:
    """The replay key of a request: (source, endpoint, path values named by the template).

    Examples
    --------
    >>> key_of("delijn", "/haltes/{entiteitnummer}/{haltenummer}", "https://x/api/v1/haltes/3/308530?a=1")
    ('delijn', '/haltes/{entiteitnummer}/{haltenummer}', ('3', '308530'))
    """
    m = _template(endpoint).search(urlsplit(url).path)
    return source, endpoint, m.groups() if m else None


class ReplayUpstream:
    """Answers the adapters' ``get_json`` calls from a recording directory (see the module docstring)."""

    on_response = None

    def __init__(self, directory):
        self.dir = Path(directory)
        path = self.dir / MANIFEST
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RecordingError(f"{path} cannot be read ({exc}); a recording needs its manifest") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise RecordingError(f"{path} is not an {FORMAT} manifest")
        try:
            self.recorded_at = datetime.fromisoformat(str(manifest["recordedAt"]).replace("Z", "+00:00"))
            responses = list(manifest["responses"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"{path}: 'recordedAt' and 'responses' are required ({exc})") from None
        self.manifest = manifest
        self.responses = responses
        self._queues: dict = collections.defaultdict(collections.deque)
        for entry in responses:
            for field in ("source", "endpoint", "url", "status", "file"):
                if field not in entry:
                    raise RecordingError(f"{path}: a response lacks {field!r}: {entry}")
            self._queues[key_of(entry["source"], entry["endpoint"], entry["url"])].append(entry)

    @property
    def sources(self) -> set:
        return {e["source"] for e in self.responses}

    def settings(self, base: SourceSettings) -> SourceSettings:
        """``base`` with each recorded source's base URL (and De Lijn entity) taken from the recording."""
        urls, entity = {}, None
        for e in self.responses:
            parts = urlsplit(e["url"])
            if e["source"] == "boundary":
                urls["boundary_url"] = e["url"]
                continue
            m = _template(e["endpoint"]).search(parts.path)
            if m is None:
                continue
            urls.setdefault(f"{e['source']}_url", f"{parts.scheme}://{parts.netloc}{parts.path[: m.start()]}")
            if e["source"] == "delijn" and e["endpoint"] == "/entiteiten/{entiteitnummer}/haltes":
                entity = int(m.group(1))
        fields = {
            k: v
            for k, v in urls.items()
            if k in ("gipod_url", "delijn_url", "ircel_url", "lez_url", "boundary_url")
        }
        if "boundary_url" not in fields:
            fields["boundary_url"] = ""
        if entity is not None:
            fields["delijn_entity"] = entity
        return replace(base, delijn_key=base.delijn_key or "recorded", **fields)

    def post_json(
        self,
        source: str,
        url: str,
        *,
        body=None,
        headers=None,
        expire_after=None,
        check=None,
        endpoint: str = "",
    ) -> Fetched:
        """The recorded answer of a POST (found by endpoint, like a GET; the body is not part of the key)."""
        got = self.get_json(source, url, check=check, endpoint=endpoint)
        assert got is not None
        return got

    def get_json(
        self,
        source: str,
        url: str,
        *,
        params=None,
        headers=None,
        expire_after=None,
        check=None,
        missing_ok: bool = False,
        endpoint: str = "",
        json_body=None,
    ) -> Fetched | None:
        key = key_of(source, endpoint, url)
        queue = self._queues.get(key)
        label = SOURCES[source].label if source in SOURCES else source
        what = f"{endpoint}" + (f" ({'/'.join(key[2])})" if key[2] else "")
        if not queue:
            if missing_ok:
                return None
            raise MissingResponse(source, f"{label}: the recording {self.dir} has no response for {what}")
        entry = queue.popleft()
        retrieved = datetime.fromisoformat(
            str(entry.get("retrievedAt") or self.manifest["recordedAt"]).replace("Z", "+00:00")
        )
        if entry["status"] == 404 and missing_ok:
            return None
        if entry["status"] != 200:
            raise UpstreamError(source, f"{label}: recorded HTTP {entry['status']} for {what}")
        try:
            payload = json.loads((self.dir / entry["file"]).read_bytes())
            if check is not None:
                check(payload)
        except OSError as exc:
            raise RecordingError(f"{self.dir / entry['file']} cannot be read ({exc})") from None
        except (ValueError, TypeError, KeyError, PayloadError) as exc:
            raise UpstreamError(source, f"{label}: recorded answer for {what} is unusable ({exc})") from None
        return Fetched(payload, entry["url"], retrieved, False)


def replay(directory, out, reference_dir, *, base: SourceSettings | None = None) -> dict:
    """Build the snapshot of a recording at ``out`` (atomic publish); returns its manifest.

    Sources without any response: LEZ and boundary come from the reference files; any other is an error
    naming it. A response an adapter needs that is not recorded is an error naming the endpoint (a missing
    ``/haltes/{e}/{h}`` answer is not: the stop stays unknown and its detour is counted as skipped). Without
    ``/stations`` the IRCEL stations come from the reference file.
    """
    from .refresher import ADAPTERS

    rec = ReplayUpstream(directory)
    settings = rec.settings(base or SourceSettings.from_mapping({}, {}))
    now = rec.recorded_at
    raw, retrieved = {}, {}
    for name, fetch in ADAPTERS.items():
        if name not in rec.sources:
            if name in REFERENCE_FALLBACK:
                continue
            raise RecordingError(
                f"the recording {directory} has no responses for {name} "
                f"({SOURCES[name].label}); it cannot be replayed without them"
            )
        try:
            data = fetch(rec, settings, now)
        except UpstreamError as exc:
            raise RecordingError(f"replay of {directory} failed: {exc}") from None
        raw.update(data.raw)
        retrieved.update(data.retrieved_at)
    layers, metas = build_layers(reference_dir, as_of=now, raw=raw, retrieved_at=retrieved)
    for meta in metas.values():
        if meta["kind"] == "live":
            meta["kind"] = "recorded"
            meta["note"] = "; ".join(
                x for x in (meta.get("note"), f"replayed from a recording made at {iso_ms(now)}") if x
            )
    manifest = write_and_publish(layers, metas, now, out)
    record_published(out, base.history_url if base else None)
    return manifest
