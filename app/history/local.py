"""A cold ``asOf`` answer from the rows near its point: an engine of one publish built from only the rows an
answer at that point can depend on (docs/history.md → "A cold answer from the rows near the point").

The layers a publish shares with an engine in memory are taken as they are (as :func:`app.history.asof.engine_of`
does); of the others, the works and the NO2 hours are read near the point (:data:`NEAR_LAYERS`): the works
whose bounding box meets the box :data:`geo.service.local.FETCH_KM` around it (``history_extent``), and the
NO2 hours of the station nearest to it in the reading windows the publish can answer, plus one row that
witnesses each newest measured hour of any station (``history_series``). Every other changed layer (the
detours) is taken whole. Once built, ``geo`` checks that the works' clusters listed there are whole
(:func:`geo.service.local.works_closed`) and the witnessed hours measured; where a rule's dependency is not
provably local (a column whose reading depends on the other rows, a station layer not in memory, an hour
witnessed only by a repeated key, a cluster reaching the edge of what was read) :class:`NotLocal` is raised
and the caller rebuilds the whole publish.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from geo.data.rows import RowSource
from geo.rules.airrules import WINDOW_MS
from geo.service import local as near
from geo.service.air import nearest_no2_station
from geo.service.loaded import held_layers, prepare, rebuild

from . import rows as rowcodec
from .store import ROWS, HistoryStore, Publish

#: the layers read near the point (every other changed layer is read whole)
NEAR_LAYERS = ("works", "no2")
#: integer and boolean columns (whose pandas type depends on the other rows' nulls) that ``geo`` reads the
#: same either way (``geo.rules.prepared.occurrences_of``, ``works.cluster_hindrance``); another such column
#: makes a layer not local
ROW_WISE_NUMBERS = {"works": frozenset({"occurrences", "hindrance"}), "no2": frozenset()}
#: rounds of boxes read around the members of the works clusters near the point, and boxes per round
ROUNDS, BOXES = 6, 24
#: how far before the publish's ``asOf`` the newest measured NO2 hour of any station is looked for
LOOKBACK_MS = 6 * 3_600_000

_schemas: dict[str, tuple[bytes, pa.Schema]] = {}
_orders: dict[str, dict[str, int]] = {}


class NotLocal(Exception):
    """The answer at this point may depend on rows not read near it: rebuild the whole publish."""


def engine_near(
    history: HistoryStore, publish: Publish, donors: list, lat: float, lng: float, until_ms: int | None
):
    """The engine of ``publish`` for answers at ``(lat, lng)`` at instants before ``until_ms`` (the next
    publish's ``asOf``; None: no later publish), built from the rows near the point; ``donors``: engines
    in memory whose layers are shared. Raises :class:`NotLocal`."""
    stored = history.manifest(publish.seq)
    meta = stored["history"]
    held = held_layers(donors)
    frames: dict = {}
    hours: list[int] = []
    for layer in NEAR_LAYERS:
        if layer not in meta or held(layer, stored["layers"][layer]["sha256"]) is not None:
            continue
        schema_bytes = _schema(history, meta[layer]["schema"], layer)
        if layer == "works":
            frames[layer] = _works(history, publish.seq, meta[layer], schema_bytes, lat, lng)
        else:
            picked, hours = _no2_rows(history, publish, stored, donors, lat, lng, until_ms)
            frames[layer] = _frame(history, meta[layer], schema_bytes, picked)

    def taken(layer: str, sha256: str):
        return frames.get(layer) if layer in frames else held(layer, sha256)

    sources: dict = {}
    layers, manifest = history.snapshot(
        publish.seq, taken, in_memory=True, sources=sources, deferred=True, donors=donors
    )
    # as a history's rows: the engine builds their indexes on first query
    for layer, frame in frames.items():
        source = RowSource()
        source.append(frame)
        sources[layer] = (source, np.arange(len(frame), dtype=np.int64))
    engine = rebuild(layers, manifest, donors, sources)
    if "no2" in frames and not near.hours_measured(engine, hours):
        raise NotLocal("a witnessed NO2 hour is not measured in the rows read")
    return engine


def _works(history: HistoryStore, seq: int, info: dict, schema_bytes: bytes, lat: float, lng: float):
    """The works of publish ``seq`` whose bounding box meets the box read around the point, grown by the
    boxes ``geo`` asks for until every cluster that can be listed there is whole
    (:func:`geo.service.local.works_to_read`); :class:`NotLocal` after :data:`ROUNDS` rounds or when a round
    asks for more than :data:`BOXES` boxes."""
    read = [near.box(lat, lng, near.FETCH_KM)]
    picked = dict(history.rows_in_box("works", seq, read))
    for _round in range(ROUNDS):
        table = rowcodec.decode_table(schema_bytes, ROWS.rows(list(picked.values()), history._blobs))
        more = near.works_to_read(table, lat, lng, read)
        if not more:
            return _frame(history, info, schema_bytes, picked.items())
        if len(more) > BOXES:
            break
        picked.update(history.rows_in_box("works", seq, more))
        read += more
    raise NotLocal("the works clusters near the point reach beyond what is read near it")


def _schema(history: HistoryStore, hashed: str, layer: str) -> bytes:
    """The schema blob ``hashed``, refused (:class:`NotLocal`) when a column's pandas type depends on the
    other rows (an integer or boolean column ``geo`` does not read row-wise) or is not a plain type."""
    found = _schemas.get(hashed)
    if found is None:
        data = history._blob(hashed)
        found = _schemas[hashed] = (data, pa.ipc.read_schema(pa.py_buffer(data)))
    data, schema = found
    for field in schema:
        kind = field.type
        if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
            if field.name not in ROW_WISE_NUMBERS[layer]:
                raise NotLocal(f"{layer}.{field.name} is read differently when another row is null")
        elif not (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_floating(kind)
            or pa.types.is_timestamp(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
        ):
            raise NotLocal(f"{layer}.{field.name} has a type not read row by row ({kind})")
    return data


def _frame(history: HistoryStore, info: dict, schema_bytes: bytes, picked) -> object:
    """The frame of the rows ``picked`` (``(key, hash, …)``) in the publish's order (its recorded order,
    else the key order), decoded as the store decodes a layer."""
    chosen = {row[0]: row[1] for row in picked}
    if info.get("order"):
        position = _orders.get(info["order"])
        if position is None:
            keys = rowcodec.unpack_order(history._blob(info["order"]))
            if len(_orders) >= 64:
                _orders.clear()
            position = _orders[info["order"]] = {k: i for i, k in enumerate(keys)}
        keys = sorted(chosen, key=position.__getitem__)
    else:
        keys = sorted(chosen)
    hashes = [chosen[k] for k in keys]
    return rowcodec.decode_layer(schema_bytes, ROWS.rows(hashes, history._blobs))


def _no2_rows(history, publish, stored, donors, lat, lng, until_ms):
    """``(rows, hours)``: the NO2 rows an answer at the point can read at an instant the publish answers
    (``asOf`` ≤ now < ``until_ms``) — the nearest station's hours in its reading windows, and per newest
    measured hour of any station one row that witnesses it — and those witnessed hours."""
    sha = stored["layers"]["stations"]["sha256"] if "stations" in stored["layers"] else None
    donor = next(
        (
            e
            for e in donors
            if (((getattr(e, "manifest", None) or {}).get("layers") or {}).get("stations") or {}).get(
                "sha256"
            )
            == sha
            is not None
        ),
        None,
    )
    if donor is None:
        raise NotLocal("the publish's stations are not in memory")
    as_of = publish.as_of_ms
    ids = [str(s) for s in prepare(donor).air.station_ids.tolist()]
    station, _km = nearest_no2_station(donor, lat, lng)
    rows = []
    if station >= 0:
        rows = history.series_rows("no2", publish.seq, [ids[station]], as_of - WINDOW_MS, until_ms)
    # the newest hour measured at or before asOf, and every later one, each by one unrepeated row
    groups: dict[tuple[str, int], list] = {}
    for row in history.series_rows("no2", publish.seq, sorted(set(ids)), as_of - LOOKBACK_MS, until_ms):
        groups.setdefault((row[2], int(row[3])), []).append(row)
    witness: dict[int, tuple] = {}
    valued: set[int] = set()
    for (_series, t), group in sorted(groups.items()):
        if any(row[4] for row in group):
            valued.add(t)
            if len(group) == 1 and t not in witness:
                witness[t] = group[0]
    before = [t for t in valued if t <= as_of]
    hours = sorted({max(before)} if before else set()) + sorted(t for t in valued if t > as_of)
    if not before or any(t not in witness for t in hours):
        raise NotLocal("the newest measured NO2 hour is not witnessed by one row")
    return rows + [witness[t] for t in hours], hours
