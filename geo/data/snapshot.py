"""Snapshot directories: build the layers (reference files + live payloads or demo scenario), write, read.

Publishing (write aside, load a full engine from it, move into place) is :mod:`geo.data.publish`, the
module above both this one and :mod:`geo.data.engine`.

A snapshot is ``manifest.json`` plus one GeoParquet file per layer (see ``data/README.md``)::

    python -m geo.data build --reference ../shared/data --out data/snapshot
    python -m geo.data verify data/snapshot
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from ..errors import SnapshotError
from .layers import CRS, CRS_PROJJSON, LAYER_SOURCE, LAYERS, SCHEMAS

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DEMO_AS_OF = "2026-11-16T07:00:00.000Z"
DEFAULT_SEED = 20261116
#: ``recorded``: upstream payloads replayed from a recording (``app.sources.recording``), never stale
KINDS = ("reference", "live", "demo", "recorded")

#: raw payload keys accepted by :func:`geo.data.publish.build_snapshot` (and their CLI options)
RAW_KEYS = (
    "works",
    "hindrances",
    "stops",
    "stop_lines",
    "lines",
    "regions",
    "stop_details",
    "detours",
    "stations",
    "timeseries",
    "no2",
    "lez",
    "boundary",
)


def fix_hint(path) -> str:
    """The sentence every ``SnapshotError`` ends with."""
    return (
        f"rebuild it: run `make snapshot` or "
        f"`python -m geo.data build --reference ../shared/data --out {path}`"
    )


def iso_ms(ts) -> str:
    """UTC timestamp as ISO 8601 with milliseconds and ``Z``.

    Examples
    --------
    >>> iso_ms("2026-11-16T08:00:00+01:00")
    '2026-11-16T07:00:00.000Z'
    """
    t = pd.Timestamp(ts)
    t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot_id(files: dict[str, bytes]) -> str:
    """sha256 over the layer files, sorted by layer name, each contributing its name then its bytes."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode("utf-8"))
        h.update(files[name])
    return h.hexdigest()


def check_layer(name: str, layer) -> None:
    """Raise ``SnapshotError`` unless ``layer`` has exactly the schema's columns (plus geometry)."""
    want = list(SCHEMAS[name]) + ["geometry"]
    got = list(layer.columns)
    if got != want:
        raise SnapshotError(f"layer {name!r} has columns {got}, expected {want}")
    if layer.crs is None or layer.crs.to_string() != CRS:
        raise SnapshotError(f"layer {name!r} has CRS {layer.crs}, expected {CRS}")


def layer_bytes(layer) -> bytes:
    """GeoParquet bytes of one layer (deterministic for the same frame and library versions).

    The frame's ``attrs`` (build bookkeeping such as ``skipped``, already in the manifest ``note``) are not
    written, so a layer read back and written again gives the same bytes. A layer in :data:`CRS` is written
    with :data:`~geo.data.layers.CRS_PROJJSON` (:func:`layer_crs_object`), whatever its CRS object would
    serialise to: PROJ may drop the datum ensemble from an ``EPSG:4326`` made in a thread that identified a
    CRS read from a file before (docs/data.md, "Layer CRS").
    """
    buf = io.BytesIO()
    frame = layer.reset_index(drop=True)
    canonical = layer_crs_object()
    if frame.crs is not None and frame.crs is not canonical and frame.crs == canonical:
        frame = frame.set_crs(canonical, allow_override=True)
    frame.attrs = {}
    frame.to_parquet(buf, index=False, compression="zstd")
    return buf.getvalue()


def write_snapshot(layers: dict, metas: dict, as_of, out_dir) -> dict:
    """Write ``layers`` and their manifest into ``out_dir`` (created; must not exist or be empty).

    ``metas[name]`` holds ``kind``, ``source``, ``licence`` and optionally ``retrievedAt`` (default ``as_of``)
    and ``note``. Returns the manifest. Use :func:`geo.data.publish.publish` to move a written directory into place.
    """
    manifest, files = snapshot_files(layers, metas, as_of)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / f"{name}.parquet").write_bytes(data)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def snapshot_files(layers: dict, metas: dict, as_of, encode=layer_bytes) -> tuple[dict, dict[str, bytes]]:
    """``(manifest, files)`` of a snapshot, in memory: what :func:`write_snapshot` writes (``files``: the
    GeoParquet bytes by layer name). ``encode(frame)`` gives a layer's bytes (default :func:`layer_bytes`;
    a caller that knows a frame unchanged may hand back the bytes it made before)."""
    missing = set(LAYERS) - set(layers)
    if missing:
        raise SnapshotError(f"cannot write a snapshot without the layers {sorted(missing)}")
    as_of = iso_ms(as_of)
    files, entries = {}, {}
    for name in LAYERS:
        check_layer(name, layers[name])
        meta = metas[name]
        if meta.get("kind") not in KINDS:
            raise SnapshotError(f"layer {name!r}: kind must be one of {KINDS}, got {meta.get('kind')!r}")
        data = encode(layers[name])
        files[name] = data
        entries[name] = {
            "file": f"{name}.parquet",
            "kind": meta["kind"],
            "source": meta["source"],
            "licence": meta["licence"],
            "records": int(len(layers[name])),
            "sha256": _sha256(data),
            "retrievedAt": iso_ms(meta.get("retrievedAt") or as_of),
        }
        if meta.get("note"):
            entries[name]["note"] = meta["note"]
        if meta.get("skipped"):
            entries[name]["skipped"] = dict(sorted(meta["skipped"].items()))
    manifest = {
        "formatVersion": FORMAT_VERSION,
        "snapshotId": snapshot_id(files),
        "asOf": as_of,
        "layers": entries,
        "skipped": skipped_by_source(entries),
    }
    return manifest, files


def skipped_by_source(entries: dict) -> dict:
    """``{source: {reason: count}}`` of the upstream layers' skipped records (manifest ``skipped``).

    Examples
    --------
    >>> skipped_by_source({"detours": {"kind": "live", "skipped": {"stop_not_found": 1}},
    ...                    "works": {"kind": "demo", "skipped": {"event": 40}}})
    {'delijn': {'stop_not_found': 1}}
    """
    out: dict = {}
    for name in sorted(entries):
        entry = entries[name]
        if entry.get("kind") not in ("live", "recorded") or not entry.get("skipped"):
            continue
        into = out.setdefault(LAYER_SOURCE.get(name, name), {})
        for reason, n in entry["skipped"].items():
            into[reason] = into.get(reason, 0) + int(n)
    return {src: dict(sorted(r.items())) for src, r in out.items()}


def staging_dir(out_dir) -> Path:
    """A fresh sibling directory of ``out_dir`` to write into before :func:`geo.data.publish.publish` (same filesystem)."""
    out = Path(out_dir)
    return out.parent / f"{out.name}.tmp-{uuid.uuid4().hex[:12]}"


def read_manifest(path) -> dict:
    """Parse and check ``manifest.json`` of the snapshot at ``path`` (raises ``SnapshotError``)."""
    root = Path(path)
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise SnapshotError(f"snapshot directory {root} {what}; {fix_hint(root)}")
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise SnapshotError(f"{mpath} is missing (incomplete snapshot); {fix_hint(root)}")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{mpath} is not valid JSON ({exc}); {fix_hint(root)}") from None
    if not isinstance(manifest, dict) or manifest.get("formatVersion") != FORMAT_VERSION:
        raise SnapshotError(f"{mpath} is not a format-version {FORMAT_VERSION} manifest; {fix_hint(root)}")
    for key in ("snapshotId", "asOf", "layers"):
        if key not in manifest:
            raise SnapshotError(f"{mpath} lacks {key!r}; {fix_hint(root)}")
    layers = manifest["layers"]
    missing = [n for n in LAYERS if not isinstance(layers, dict) or not isinstance(layers.get(n), dict)]
    if missing:
        raise SnapshotError(f"{mpath} lists no entry for the layers {missing}; {fix_hint(root)}")
    for name in LAYERS:
        for key in ("file", "kind", "records", "sha256", "source", "licence", "retrievedAt"):
            if key not in layers[name]:
                raise SnapshotError(f"{mpath}: layer {name!r} lacks {key!r}; {fix_hint(root)}")
        if layers[name]["kind"] not in KINDS or not isinstance(layers[name]["records"], int):
            raise SnapshotError(
                f"{mpath}: layer {name!r} has kind {layers[name]['kind']!r} and records "
                f"{layers[name]['records']!r}, expected one of {KINDS} and an integer; "
                f"{fix_hint(root)}"
            )
    return manifest


def read_layer(data: bytes):
    """GeoDataFrame from GeoParquet bytes: what ``geopandas.read_parquet`` gives, with the CRS parsed once.

    Building a pyproj CRS from the file's PROJJSON costs tens of milliseconds; every layer carries the same
    one, so it is parsed once per process (:func:`_crs`). Files this fast path does not cover (several
    geometry columns, a bbox covering column, non-WKB encodings) go through ``geopandas.read_parquet``.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import Point
    >>> frame = gpd.GeoDataFrame({"id": ["a"]}, geometry=[Point(4.4, 51.2)], crs="EPSG:4326")
    >>> buf = io.BytesIO(); frame.to_parquet(buf)
    >>> read_layer(buf.getvalue()).crs.to_string(), read_layer(buf.getvalue()).geometry.x.tolist()
    ('EPSG:4326', [4.4])
    """
    return _read_layer(data)[0]


def _read_layer(data: bytes):
    """``(frame, Arrow table)`` of :func:`read_layer`."""
    import geopandas as gpd
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    frame = layer_from_table(table)
    return (gpd.read_parquet(io.BytesIO(data)) if frame is None else frame), table


_COLLECTING = threading.local()


@contextmanager
def tables_read() -> Iterator[dict]:
    """Collect, in this thread, the Arrow table of every layer file :func:`read_snapshot` parses, by the
    file's sha256 (e.g. while a refresher verifies a version, for the history recorder that follows: the
    same bytes give the same table, so it need not parse the files again).

    Examples
    --------
    >>> with tables_read() as tables:
    ...     pass
    >>> tables
    {}
    """
    tables: dict = {}
    outer = getattr(_COLLECTING, "tables", None)
    _COLLECTING.tables = tables
    try:
        yield tables
    finally:
        _COLLECTING.tables = outer


def layer_from_table(table, geometry=None):
    """:func:`read_layer` of the Arrow table read from a GeoParquet file (its schema metadata included),
    without the file; None for a file the fast path does not cover.

    ``geometry``: the primary geometry column already parsed (a ``GeometryArray`` of the table's rows, in
    order, with the file's CRS), taken instead of parsing the table's WKB again.
    """
    import geopandas as gpd

    meta = json.loads((table.schema.metadata or {}).get(b"geo", b"{}"))
    col = meta.get("primary_column")
    info = (meta.get("columns") or {}).get(col) or {}
    if (
        len(meta.get("columns") or {}) != 1
        or col not in table.column_names
        or info.get("encoding") != "WKB"
        or "covering" in info
        or isinstance(info.get("crs"), str)
    ):
        return None
    if geometry is not None:
        return _with_geometry(table, col, geometry)
    crs = layer_crs(table.schema)  # a missing CRS means OGC:CRS84 (GeoParquet); null means none
    wkb = table[col].to_numpy(zero_copy_only=False)
    return _with_geometry(table, col, gpd.GeoSeries.from_wkb(wkb, crs=crs).values)


def layer_crs(schema):
    """The CRS :func:`layer_from_table` gives a table of ``schema`` (a ``pyarrow.Schema`` with its GeoParquet
    metadata): a pyproj CRS, ``"OGC:CRS84"`` when the file names none, or None (null: no CRS)."""
    meta = json.loads((schema.metadata or {}).get(b"geo", b"{}"))
    info = (meta.get("columns") or {}).get(meta.get("primary_column")) or {}
    crs = info.get("crs", "OGC:CRS84")
    return _crs(json.dumps(crs, sort_keys=True)) if isinstance(crs, dict) else crs


def _with_geometry(table, col, geometry):
    import geopandas as gpd

    names = _pandas_columns(table.schema)
    frame = table.drop([col]).to_pandas()
    frame.insert(names.index(col), col, geometry)
    return gpd.GeoDataFrame(frame, geometry=col)


def _pandas_columns(schema) -> list:
    """The columns (in order) of a table of ``schema`` read into pandas: the schema and its pandas metadata
    decide them, so they are read once per schema (a conversion costs as much empty as with a few thousand
    rows). Keyed by the serialised schema: ``pyarrow.Schema`` equality ignores the metadata."""
    return list(_columns_of(schema.serialize().to_pybytes()))


def pandas_dtypes(serialised: bytes) -> tuple:
    """``(column, dtype text)`` of each column of a table of the serialised schema read into pandas (once per
    schema, with :func:`_pandas_columns`)."""
    return _empty_of(serialised)[1]


def _columns_of(serialised: bytes) -> tuple:
    return _empty_of(serialised)[0]


@functools.lru_cache(maxsize=64)
def _empty_of(serialised: bytes) -> tuple:
    import pyarrow as pa

    empty = pa.ipc.read_schema(pa.py_buffer(serialised)).empty_table().to_pandas()
    return tuple(empty.columns), tuple((str(c), str(t)) for c, t in empty.dtypes.items())


def layer_crs_object():
    """The pyproj CRS of :data:`~geo.data.layers.CRS_PROJJSON`: one object per process, the one
    :func:`read_layer` gives a layer file's geometry; it serialises to that PROJJSON in any thread.

    Examples
    --------
    >>> layer_crs_object().to_json_dict()["datum_ensemble"]["name"]
    'World Geodetic System 1984 ensemble'
    """
    return _crs(json.dumps(CRS_PROJJSON, sort_keys=True))


@functools.lru_cache(maxsize=8)
def _crs(projjson: str):
    """pyproj CRS of a GeoParquet PROJJSON (ids of datum-ensemble members dropped, as geopandas does)."""
    import pyproj

    def strip(node):
        for key, value in node.items():
            if isinstance(value, dict):
                strip(value)
            elif key == "members" and isinstance(value, list):
                for member in value:
                    member.pop("id", None)
        return node

    return pyproj.CRS.from_user_input(strip(json.loads(projjson)))


def read_snapshot(path):
    """Load and validate a snapshot directory.

    Returns ``(layers, manifest)``: ``layers`` maps each layer name to a GeoDataFrame (schema of
    ``data/README.md``), ``manifest`` is the parsed ``manifest.json``. A missing directory or file, bad JSON,
    a truncated or altered layer file (sha256 mismatch), wrong columns or record counts raise
    ``SnapshotError`` naming the file and the fix.

    Examples
    --------
    >>> read_snapshot("/nonexistent")
    Traceback (most recent call last):
    ...
    geo.errors.SnapshotError: snapshot directory /nonexistent does not exist; rebuild it: ...
    """
    root = Path(path)
    manifest = read_manifest(root)
    files, layers = {}, {}
    for name in LAYERS:
        entry = manifest["layers"][name]
        fpath = root / str(entry["file"])
        try:
            data = fpath.read_bytes()
        except OSError:
            raise SnapshotError(f"{fpath} is missing (incomplete snapshot); {fix_hint(root)}") from None
        if _sha256(data) != entry["sha256"]:
            raise SnapshotError(
                f"{fpath} is corrupt or truncated (sha256 differs from {root / MANIFEST}); {fix_hint(root)}"
            )
        try:
            layer, table = _read_layer(data)
        except Exception as exc:  # pyarrow/geopandas raise many types for unreadable files
            raise SnapshotError(
                f"{fpath} is not a readable GeoParquet file ({exc}); {fix_hint(root)}"
            ) from None
        try:
            check_layer(name, layer)
        except SnapshotError as exc:
            raise SnapshotError(f"{fpath}: {exc}; {fix_hint(root)}") from None
        if len(layer) != entry["records"]:
            raise SnapshotError(
                f"{fpath} has {len(layer)} records, the manifest says {entry['records']}; {fix_hint(root)}"
            )
        files[name], layers[name] = data, layer
        collecting = getattr(_COLLECTING, "tables", None)
        if collecting is not None:
            collecting[entry["sha256"]] = table
    if snapshot_id(files) != manifest["snapshotId"]:
        raise SnapshotError(f"{root / MANIFEST}: snapshotId does not match the layer files; {fix_hint(root)}")
    return layers, manifest


def build_layers(
    reference_dir,
    *,
    as_of=DEMO_AS_OF,
    raw: dict | None = None,
    seed: int = DEFAULT_SEED,
    retrieved_at: dict | None = None,
    keep: dict | None = None,
):
    """All layers and their manifest metadata: reference files, live payloads in ``raw``, demo for the rest.

    ``raw`` maps keys of :data:`RAW_KEYS` to parsed payloads (see :func:`geo.data.upstream` normalisers):
    ``works`` GIPOD ``INNAME`` FeatureCollection page(s) + optional ``hindrances`` (``HINDER_PUNT`` pages);
    ``stops`` De Lijn Haltes + optional ``stop_lines``
    (``{"e_h": Lijnrichtingen}``) and ``lines`` (``/entiteiten/{e}/lijnen`` and ``/lijnen/{e}/{l}`` answers);
    ``detours`` Omleidingen + optional ``stop_details`` and ``regions`` (``/vervoerregios``); ``stations`` IRCEL ``/stations`` features;
    ``timeseries`` + ``no2`` IRCEL ``/timeseries`` items and ``getData`` values; ``lez`` ArcGIS GeoJSON;
    ``boundary`` a GeoJSON of the Flemish and Brussels regions (``service_area``).
    Layers given that way get kind ``live`` (``retrieved_at[layer]`` or ``as_of``). ``keep`` maps dynamic
    layers the caller already has (a refresh keeps a failed source's last good layers) to their frames: used
    as they are and never built (nor the demo scenario for them); their metadata is the caller's.
    """
    from . import demo, reference, river, upstream

    raw = {k: v for k, v in (raw or {}).items() if v is not None}
    unknown = set(raw) - set(RAW_KEYS)
    if unknown:
        raise ValueError(f"unknown raw payload keys {sorted(unknown)}; expected some of {RAW_KEYS}")
    retrieved_at = retrieved_at or {}
    as_of = iso_ms(as_of)
    layers, metas = {}, {}

    def ref(name, relpath, layer):
        layers[name] = layer
        metas[name] = {"kind": "reference", **reference.META[relpath]}

    def live(name, layer, source, licence):
        layers[name] = layer
        metas[name] = {
            "kind": "live",
            "source": source,
            "licence": licence,
            "retrievedAt": retrieved_at.get(name, as_of),
        }
        skipped = layer.attrs.get("skipped") or {}
        if skipped:
            metas[name]["skipped"] = dict(skipped)
            metas[name]["note"] = (
                f"{sum(skipped.values())} upstream records skipped ("
                + ", ".join(f"{r}: {n}" for r, n in sorted(skipped.items()))
                + ")"
            )

    if "boundary" in raw:
        live(
            "service_area",
            upstream.normalise_boundary(raw["boundary"]),
            "regional boundary GeoJSON (URBAN_BOUNDARY_URL, Flemish + Brussels-Capital regions)",
            "licence of the configured boundary source (see docs/sources.md)",
        )
    else:
        ref("service_area", reference.SERVICE_AREA, reference.service_area(reference_dir))
    ref("river", reference.CENTERLINE, river.reference_river_layer(reference_dir))
    ref_stations = reference.stations(reference_dir)
    if "lez" in raw:
        live(
            "lez",
            upstream.normalise_lez(raw["lez"]),
            "Stad Antwerpen ArcGIS REST (portal_publiek4/MapServer/283, f=geojson)",
            reference.META[reference.LEZ]["licence"],
        )
    else:
        ref("lez", reference.LEZ, reference.lez(reference_dir))
    if "stations" in raw:
        live(
            "stations",
            upstream.normalise_stations(raw["stations"], ref_stations),
            "IRCEL-CELINE SOS timeseries REST API /stations?phenomenon=8",
            "CC BY 4.0, IRCEL-CELINE",
        )
    else:
        ref("stations", reference.STATIONS, ref_stations)

    @functools.cache
    def scenario() -> demo.Scenario:
        """The demo scenario, made on first use: only a dynamic layer without a live payload needs it."""
        return demo.Scenario(reference_dir, as_of=as_of, seed=seed)

    demo_note = "no live payload given: deterministic demo scenario" if raw else None

    keep = keep or {}

    def dynamic(name, live_layer, source, licence, demo_layer):
        if name in keep:
            layers[name] = keep[name]
        elif live_layer is not None:
            live(name, live_layer(), source, licence)
        else:
            layers[name] = demo_layer()
            layers[name].attrs.pop("skipped", None)  # generated on purpose (e.g. events), not upstream loss
            metas[name] = {
                "kind": "demo",
                "source": f"demo scenario (geo.data.demo, seed {seed}) in the {source} format",
                "licence": "generated data, no restrictions",
                "retrievedAt": as_of,
                "note": demo_note,
            }

    dynamic(
        "works",
        (lambda: upstream.normalise_works(raw["works"], now=as_of, hindrance_pages=raw.get("hindrances")))
        if "works" in raw
        else None,
        "GIPOD OGC API Features INNAME + HINDER_PUNT",
        "Modellicentie Gratis Hergebruik v1.0; Bron: GIPOD, Digitaal Vlaanderen",
        lambda: upstream.normalise_works(
            scenario().works_pages(), now=as_of, hindrance_pages=scenario().hindrance_pages()
        ),
    )
    dynamic(
        "stops",
        (lambda: upstream.normalise_stops(raw["stops"], raw.get("stop_lines"), raw.get("lines"), on=as_of))
        if "stops" in raw
        else None,
        "De Lijn Kern Open Data v1 haltes + lijnrichtingen",
        "De Lijn open data (licence per the De Lijn data portal terms)",
        lambda: upstream.normalise_stops(*scenario().stops_payloads(), scenario().lines_payload(), on=as_of),
    )
    dynamic(
        "detours",
        (
            lambda: upstream.normalise_detours(
                raw["detours"],
                raw.get("lines"),
                layers["stops"],
                raw.get("stop_details"),
                raw.get("regions"),
                on=as_of,
            )
        )
        if "detours" in raw
        else None,
        "De Lijn Kern Open Data v1 omleidingen",
        "De Lijn open data (licence per the De Lijn data portal terms)",
        lambda: upstream.normalise_detours(
            scenario().detours_payload(layers["stops"]),
            scenario().lines_payload(),
            layers["stops"],
            regions=scenario().regions_payload(),
            on=as_of,
        ),
    )
    dynamic(
        "no2",
        (lambda: upstream.normalise_no2(raw.get("timeseries") or [], raw["no2"], layers["stations"]))
        if "no2" in raw
        else None,
        "IRCEL-CELINE SOS timeseries REST API /timeseries + getData (NO2, phenomenon 8)",
        "CC BY 4.0, IRCEL-CELINE",
        lambda: upstream.normalise_no2(*scenario().no2_payloads(layers["stations"]), layers["stations"]),
    )
    return layers, metas
