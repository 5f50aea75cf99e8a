"""Streaming readers and writers of ``urban-score``: CSV, Parquet, GeoParquet and GeoJSON, by extension.

A reader yields :class:`Chunk` objects (input columns carried through as an Arrow table, plus lat/lng as
float arrays with NaN for unusable values); a writer appends the input columns and the score columns chunk by
chunk into a temporary file that replaces the output only when everything succeeded. Memory is bounded by
the chunk size. Problems with the input file raise :class:`InputError` naming the row and/or column.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import InputError

FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".geoparquet": "geoparquet",
    ".geojson": "geojson",
    ".json": "geojson",
}  # and "*.geo.parquet": GeoParquet
GEOMETRY = "geometry"


@dataclass
class Chunk:
    """One block of input rows."""

    first_row: int  # 1-based data row number of the first row (header excluded)
    columns: pa.Table  # the input columns, carried through to the output
    lat: np.ndarray
    lng: np.ndarray
    progress: int  # reader position after this chunk (rows or bytes, see Reader.unit)


def file_format(path, *, geo: bool | None = None) -> str:
    """The format name of a path by extension; ``.parquet`` with GeoParquet metadata is ``geoparquet``.

    Examples
    --------
    >>> file_format("points.csv"), file_format("x.GeoJSON")
    ('csv', 'geojson')
    """
    name = Path(path).name.lower()
    if name.endswith(".geo.parquet"):
        return "geoparquet"
    ext = Path(path).suffix.lower()
    if ext not in FORMATS:
        raise InputError(
            f"{path}: unknown file type {ext or '(none)'!r}; use one of {', '.join(sorted(FORMATS))}"
        )
    kind = FORMATS[ext]
    if kind == "parquet" and geo:
        return "geoparquet"
    return kind


def to_float(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """float64 array of a column; text that is not a number (or empty / null) becomes NaN.

    Examples
    --------
    >>> to_float(pa.array(["51.2", "x", None])).tolist()[0], np.isnan(to_float(pa.array(["x"])))[0]
    (51.2, True)
    """
    try:
        return pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        text = pd.Series(values.to_pandas(), dtype=object)
        return pd.to_numeric(text.str.strip() if hasattr(text, "str") else text, errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )


def _need(names, lat, lng, path):
    missing = [c for c in (lat, lng) if c not in names]
    if missing:
        raise InputError(
            f"{path}: column {missing[0]!r} not found; columns are {list(names)} "
            f"(choose them with --lat / --lng)"
        )


# --- readers ----------------------------------------------------------------------------------------
class Reader:
    """Base reader: ``total`` and ``unit`` ('rows' or 'bytes') for the progress bar; iterate for chunks."""

    total: int = 0
    unit: str = "rows"

    def __iter__(self) -> Iterator[Chunk]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the file and any reader threads (idempotent)."""


DELIMITERS = (",", ";", "\t")


def sniff_delimiter(header_line: str) -> str:
    """The delimiter of a CSV from its header row: the one of ``, ; TAB`` that splits it into the most
    fields (a comma on a tie). A semicolon file is what Excel writes where the decimal separator is a comma.

    Examples
    --------
    >>> sniff_delimiter("id;lat;lng"), sniff_delimiter("id,lat,lng"), sniff_delimiter("lat")
    (';', ',', ',')
    """
    counts = {d: len(next(csv.reader([header_line], delimiter=d), [])) for d in DELIMITERS}
    return max(DELIMITERS, key=lambda d: (counts[d], -DELIMITERS.index(d)))


def decimal_comma(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Coordinates written with a decimal comma (``51,2194``) as ``51.2194``; anything else unchanged."""
    return pc.replace_substring(values, ",", ".")


class CsvReader(Reader):
    """CSV with a header row; every column is read as text (carried through exactly as written). The
    delimiter (comma, semicolon or tab) is found from the header row; in a semicolon file a coordinate may
    use a decimal comma."""

    unit = "bytes"

    def __init__(self, path, lat, lng, chunk_rows):
        import pyarrow.csv as pcsv

        self.path, self.lat, self.lng = Path(path), lat, lng
        with open(path, newline="", encoding="utf-8-sig") as fh:
            first = fh.readline()
            if not first:
                raise InputError(f"{path}: empty file, expected a header row")
            self.delimiter = sniff_delimiter(first)
            fh.seek(0)
            header = next(csv.reader(fh, delimiter=self.delimiter))
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise InputError(f"{path}: header row: column {dup!r} appears twice")
        _need(header, lat, lng, path)
        self.total = os.path.getsize(path)
        self._bad = None
        self._header, self._chunk_rows = header, chunk_rows

        def invalid(row):
            self._bad = row
            return "error"

        try:
            self._reader = self._open(pcsv, path, header, chunk_rows, invalid)
        except pa.ArrowInvalid as exc:
            raise InputError(self._describe(exc, 1)) from None

    def _open(self, pcsv, path, header, chunk_rows, invalid, threads=True):
        """Arrow's streaming CSV reader (multi-threaded: blocks are parsed and converted in parallel)."""
        self._fh = fh = open(path, "rb")
        return pcsv.open_csv(
            fh,
            read_options=pcsv.ReadOptions(block_size=max(1 << 16, chunk_rows * 48), use_threads=threads),
            parse_options=pcsv.ParseOptions(
                delimiter=self.delimiter, invalid_row_handler=invalid, newlines_in_values=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={h: pa.string() for h in header},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )

    def __iter__(self):
        row, approx = 1, 0
        while True:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                if row == 1:  # header only: one empty chunk so that the output still gets its header
                    table = self._reader.schema.empty_table()
                    yield Chunk(1, table, np.zeros(0), np.zeros(0), self.total)
                return
            except pa.ArrowInvalid as exc:
                raise InputError(self._describe(exc, row)) from None
            table = pa.Table.from_batches([batch])
            approx = max(approx, min(self.total, self._fh.tell()))
            lat, lng = table[self.lat], table[self.lng]
            if self.delimiter == ";":
                lat, lng = decimal_comma(lat), decimal_comma(lng)
            yield Chunk(row, table, to_float(lat), to_float(lng), approx)
            row += batch.num_rows

    def close(self) -> None:
        """Stop Arrow's reader threads and close the file: a process must not exit with them running."""
        self._reader.close()
        self._fh.close()

    def _describe(self, exc, row):
        bad = self._bad
        if bad is not None and bad.number is None:
            bad = self._locate() or bad
        if bad is not None:
            where = (
                f"line {bad.number} (data row {bad.number - 1})"
                if bad.number is not None
                else f"a row after data row {row - 1}"
            )
            hint = ""
            if self.delimiter == "," and bad.actual_columns > bad.expected_columns:
                hint = (
                    " (a decimal comma in a comma-separated file? Separate the fields with semicolons, "
                    "as Excel does in Belgium: 51,2194 is then read as 51.2194)"
                )
            return (
                f"{self.path}: {where} has {bad.actual_columns} fields, the header has "
                f"{bad.expected_columns}: {bad.text[:80]!r}{hint}"
            )
        return f"{self.path}: unreadable CSV after data row {row - 1}: {exc}"

    def _locate(self):
        """The bad row with its line number: the threaded parser does not count lines, so the file is
        parsed again on one thread up to the first bad row (on the error path only)."""
        import pyarrow.csv as pcsv

        found = []

        def invalid(row):
            found.append(row)
            return "error"

        fh = self._fh
        try:
            reader = self._open(pcsv, self.path, self._header, self._chunk_rows, invalid, threads=False)
            for _ in reader:
                pass
        except pa.ArrowInvalid:
            pass
        finally:
            self._fh.close()
            self._fh = fh
        return found[0] if found else None


class ParquetReader(Reader):
    """Parquet (lat/lng columns) or GeoParquet (point geometry column, any CRS; lat/lng columns win)."""

    def __init__(self, path, lat, lng, chunk_rows):
        try:
            self._file = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
        self.path, self.lat, self.lng, self.chunk_rows = Path(path), lat, lng, chunk_rows
        self.total = self._file.metadata.num_rows
        schema = self._file.schema_arrow
        meta = (schema.metadata or {}).get(b"geo")
        self.geo = json.loads(meta) if meta else None
        names = schema.names
        self.geometry = None
        if not (lat in names and lng in names):
            if self.geo is None:
                _need(names, lat, lng, path)
            self.geometry = self.geo.get("primary_column", GEOMETRY)
            self._transform = _transformer((self.geo.get("columns", {}).get(self.geometry) or {}).get("crs"))

    def __iter__(self):
        import shapely

        row = 1
        if self.total == 0:
            table = self._file.schema_arrow.empty_table()
            drop = [c for c in (self.geo or {}).get("columns", {}) if c in table.column_names]
            yield Chunk(1, table.drop_columns(drop), np.zeros(0), np.zeros(0), 0)
            return
        for batch in self._file.iter_batches(batch_size=self.chunk_rows):
            table = pa.Table.from_batches([batch])
            if self.geometry is None:
                lat, lng = to_float(table[self.lat]), to_float(table[self.lng])
                drop = [c for c in (self.geo or {}).get("columns", {}) if c in table.column_names]
            else:
                try:
                    geom = shapely.from_wkb(table[self.geometry].to_numpy(zero_copy_only=False))
                except shapely.errors.GEOSException as exc:
                    raise InputError(
                        f"{self.path}: column {self.geometry!r}, rows {row}-"
                        f"{row + table.num_rows - 1}: bad WKB geometry: {exc}"
                    ) from None
                point = shapely.get_type_id(geom) == 0
                x = np.where(point, shapely.get_x(geom), np.nan)
                y = np.where(point, shapely.get_y(geom), np.nan)
                if self._transform is not None:
                    x, y = self._transform(x, y)
                lat, lng = np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64)
                drop = [c for c in self.geo.get("columns", {}) if c in table.column_names]
            table = table.drop_columns(drop) if drop else table
            yield Chunk(row, table, lat, lng, row + batch.num_rows - 1)
            row += batch.num_rows


def _transformer(crs):
    """None for lon/lat WGS84 (GeoParquet default), else a vectorised (x, y) -> (lng, lat) transform."""
    if crs is None:
        return None
    from pyproj import CRS, Transformer

    src = CRS.from_user_input(crs)
    if src.equals(CRS.from_epsg(4326), ignore_axis_order=True):
        return None
    t = Transformer.from_crs(src, "EPSG:4326", always_xy=True)
    return lambda x, y: t.transform(x, y)


class GeoJsonReader(Reader):
    """A GeoJSON FeatureCollection, parsed feature by feature (the file is never loaded whole).

    Point features give the coordinates; other or missing geometries are invalid coordinates. Properties
    become columns; their names and types are fixed by the first chunk.
    """

    unit = "bytes"
    BLOCK = 1 << 20

    def __init__(self, path, lat, lng, chunk_rows):
        self.path, self.chunk_rows = Path(path), chunk_rows
        self.total = os.path.getsize(path)
        self.schema = None

    def __iter__(self):
        import shapely  # noqa: F401  (keeps the import cost out of the loop)

        row = 1
        props, lat, lng = [], [], []
        for feature, pos in self._features():
            where = f"{self.path}: feature {row + len(props)}"
            if not isinstance(feature, dict) or feature.get("type") != "Feature":
                raise InputError(f"{where}: not a GeoJSON Feature object")
            geom = feature.get("geometry")
            x = y = float("nan")
            if isinstance(geom, dict) and geom.get("type") == "Point":
                c = geom.get("coordinates")
                if isinstance(c, list) and len(c) >= 2:
                    x, y = _num(c[0]), _num(c[1])
            p = feature.get("properties") or {}
            if not isinstance(p, dict):
                raise InputError(f"{where}: properties must be an object")
            props.append(p)
            lat.append(y)
            lng.append(x)
            if len(props) >= self.chunk_rows:
                yield self._chunk(row, props, lat, lng, pos)
                row += len(props)
                props, lat, lng = [], [], []
        if props or row == 1:
            yield self._chunk(row, props, lat, lng, self.total)

    def _chunk(self, row, props, lat, lng, pos):
        if self.schema is None:
            self.schema = pa.Table.from_pylist(props).schema if props else pa.schema([])
        names = set(self.schema.names)
        for i, p in enumerate(props):
            extra = set(p) - names
            if extra:
                raise InputError(
                    f"{self.path}: feature {row + i}: property {sorted(extra)[0]!r} does not "
                    f"occur in the first {self.chunk_rows} features (properties must have the "
                    f"same names throughout; or raise --chunk-size)"
                )
        try:
            table = pa.Table.from_pylist(props, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputError(
                f"{self.path}: features {row}-{row + len(props) - 1}: a property changes type: {exc}"
            ) from None
        return Chunk(row, table, np.array(lat, dtype=np.float64), np.array(lng, dtype=np.float64), pos)

    def _features(self):
        """Yield (feature dict, byte position) of the top-level ``features`` array."""
        dec = json.JSONDecoder()
        with open(self.path, "rb") as fh:
            buf, pos, done = "", 0, [0]

            def more():
                data = fh.read(self.BLOCK)
                done[0] += len(data)
                return data.decode("utf-8", errors="strict") if data else ""

            def skip_ws(buf, pos):
                while True:
                    while pos < len(buf) and buf[pos] in " \t\r\n":
                        pos += 1
                    if pos < len(buf):
                        return buf, pos
                    extra = more()
                    if not extra:
                        return buf, pos
                    buf, pos = buf[pos:] + extra, 0

            def value(buf, pos):
                buf, pos = skip_ws(buf, pos)
                while True:
                    try:
                        obj, end = dec.raw_decode(buf, pos)
                        if end < len(buf) or not isinstance(obj, (int, float)):
                            return obj, buf, end
                    except json.JSONDecodeError:
                        pass
                    extra = more()
                    if not extra:
                        try:
                            obj, end = dec.raw_decode(buf, pos)
                            return obj, buf, end
                        except json.JSONDecodeError as exc:
                            at = done[0] - len(buf) + pos
                            raise InputError(f"{self.path}: invalid JSON near byte {at}: {exc.msg}") from None
                    buf, pos = buf[pos:] + extra, 0

            def expect(buf, pos, chars):
                buf, pos = skip_ws(buf, pos)
                if pos >= len(buf) or buf[pos] not in chars:
                    got = buf[pos : pos + 20] if pos < len(buf) else "end of file"
                    raise InputError(
                        f"{self.path}: not a GeoJSON FeatureCollection: expected {chars!r} near "
                        f"byte {done[0] - len(buf) + pos}, got {got!r}"
                    )
                return buf, pos + 1, buf[pos]

            buf = more()
            if buf.startswith("\ufeff"):
                buf = buf[1:]
            buf, pos, _ = expect(buf, 0, "{")
            seen = False
            while True:
                buf, pos = skip_ws(buf, pos)
                if pos < len(buf) and buf[pos] == "}":
                    break
                key, buf, pos = value(buf, pos)
                buf, pos, _ = expect(buf, pos, ":")
                if key != "features":
                    _, buf, pos = value(buf, pos)
                else:
                    seen = True
                    buf, pos, _ = expect(buf, pos, "[")
                    buf, pos = skip_ws(buf, pos)
                    if pos < len(buf) and buf[pos] == "]":
                        pos += 1
                    else:
                        while True:
                            feature, buf, pos = value(buf, pos)
                            yield feature, done[0] - len(buf) + pos
                            buf, pos, ch = expect(buf, pos, ",]")
                            if ch == "]":
                                break
                            if pos > self.BLOCK:
                                buf, pos = buf[pos:], 0
                buf, pos, ch = expect(buf, pos, ",}")
                if ch == "}":
                    break
            if not seen:
                raise InputError(f"{self.path}: not a GeoJSON FeatureCollection: no 'features' member")


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")


def open_reader(path, lat="lat", lng="lng", chunk_rows=250_000) -> Reader:
    """The streaming reader for ``path`` (format by extension).

    Examples
    --------
    >>> reader = open_reader("points.csv", lat="latitude", lng="longitude")  # doctest: +SKIP
    """
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file")
    kind = file_format(path)
    cls = {"csv": CsvReader, "parquet": ParquetReader, "geoparquet": ParquetReader, "geojson": GeoJsonReader}[
        kind
    ]
    return cls(path, lat, lng, chunk_rows)


# --- writers ----------------------------------------------------------------------------------------
def score_table(frame: pd.DataFrame) -> pa.Table:
    """The score frame as an Arrow table: categories as dictionary-encoded text (the smallest index type;
    a few bytes per row between processes, and Parquet stores them as dictionaries without
    re-hashing), nullable numbers and booleans as they are. No Python object per row."""
    cols = {}
    for name in frame.columns:
        s = frame[name]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cols[name] = _dictionary(s.cat.codes.to_numpy(), s.cat.categories)
        else:
            cols[name] = pa.array(s.array)
    return pa.table(cols)


def score_arrow(points, engine, now=None) -> pa.Table:
    """``score_table(score(points, engine, now))`` built from the score columns' arrays, without the
    DataFrame in between (what ``urban-score`` writes; the same table, column for column).

    Examples
    --------
    >>> score_arrow((np.array([51.2194]), np.array([4.4025])), engine).column_names[:2]  # doctest: +SKIP
    ['status', 'in_service_area']
    """
    from .score import COLUMNS, score_columns

    columns, _ = score_columns(points, engine, now)
    return pa.table({name: _arrow(columns[name]) for name in COLUMNS})


def _dictionary(codes: np.ndarray, categories) -> pa.DictionaryArray:
    cats = pa.array(np.asarray(categories, dtype=object), type=pa.string())
    index = pa.int8() if len(cats) < 128 else pa.int16() if len(cats) < 32768 else pa.int32()
    return pa.DictionaryArray.from_arrays(
        pa.array(codes.astype(index.to_pandas_dtype()), mask=codes < 0, type=index), cats
    )


def _arrow(c) -> pa.Array:
    """The Arrow array of a :class:`geo.batch.score.Column`, as ``pa.array`` makes it of the pandas array
    :func:`geo.batch.score.score` holds (a nullable array's values with its mask)."""
    if c.kind == "cat":
        return _dictionary(c.values, c.categories)
    missing = np.asarray(c.missing, dtype=bool)
    if c.kind == "float":
        values = np.asarray(c.values, dtype=np.float64)
        missing = missing | np.isnan(values)
        return pa.array(np.where(missing, 0.0, values), mask=missing)
    return pa.array(np.asarray(c.values, dtype=np.int64 if c.kind == "int" else bool), mask=missing)


class Writer:
    """Writes chunks into ``<output>.partial`` and renames it onto ``output`` in :meth:`close`."""

    def __init__(self, path):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.rows = 0

    def abort(self):
        self._close_quietly()
        self.tmp.unlink(missing_ok=True)

    def close(self):
        self._finish()
        os.replace(self.tmp, self.path)

    def _close_quietly(self):
        try:
            self._finish()
        except Exception:  # noqa: BLE001  (already failing: keep the first error)
            pass


def _merge(columns: pa.Table, scores: pa.Table) -> pa.Table:
    clash = set(columns.column_names) & set(scores.column_names)
    if clash:
        columns = columns.rename_columns([f"input_{c}" if c in clash else c for c in columns.column_names])
    return pa.Table.from_arrays(columns.columns + scores.columns, columns.column_names + scores.column_names)


class TableWriter(Writer):
    """CSV or (Geo)Parquet through Arrow's streaming writers."""

    def __init__(self, path, kind, carry: bool = True):
        super().__init__(path)
        self.kind, self.carry = kind, carry
        self._w: Any = None  # pyarrow's CSVWriter or ParquetWriter, opened on the first chunk
        self._schema: pa.Schema | None = None

    def _open(self, schema: pa.Schema, keys: list[str]) -> tuple[Any, pa.Schema]:
        """The streaming writer for this file's kind, and the schema every chunk is cast to; ``keys``: the
        columns given Parquet statistics."""
        if self.kind == "csv":
            import pyarrow.csv as pcsv

            return pcsv.CSVWriter(
                str(self.tmp), schema, write_options=pcsv.WriteOptions(quoting_style="needed")
            ), schema
        if self.kind == "geoparquet":
            schema = schema.with_metadata({b"geo": json.dumps(_geo_metadata()).encode()})
        # dictionary-encode the category columns, the computed counts and the few-valued floats (a third of
        # the bytes at the same CPU or less); trying it on unique input text (ids, coordinates) or distances
        # and falling back costs more than the whole write
        from .score import FEW_VALUES

        coded = [
            f.name
            for f in schema
            if pa.types.is_dictionary(f.type)
            or (pa.types.is_integer(f.type) and f.name not in keys)
            or (f.name in FEW_VALUES and f.name not in keys)
        ]
        # min/max statistics only on the keys (the input's own columns, the pairs' input row), which follow
        # the input's order and can skip row groups; every row group of a computed value spans about the
        # same range, so its statistics would skip nothing and cost a fifth of the write (docs/scoring.md)
        return pq.ParquetWriter(
            str(self.tmp), schema, use_dictionary=coded or False, write_statistics=keys or False
        ), schema

    def write(self, chunk: Chunk, scores: pa.Table):
        table = _merge(chunk.columns, scores) if self.carry else scores
        if self.kind == "geoparquet":
            table = table.append_column(GEOMETRY, _wkb_points(chunk.lat, chunk.lng))
        if self._w is None or self._schema is None:
            keys = table.column_names[: chunk.columns.num_columns] if self.carry else ["input_row"]
            self._w, self._schema = self._open(table.schema, [k for k in keys if k in table.column_names])
        table = table.cast(self._schema)
        if self.kind == "csv":
            self._w.write_table(table)
        else:  # one row group per chunk
            self._w.write_table(table, row_group_size=max(1, table.num_rows))
        self.rows += table.num_rows

    def _finish(self):
        if self._w is None:  # no rows at all: still write a valid empty file
            return
        self._w.close()
        self._w = None


def _wkb_points(lat, lng) -> pa.Array:
    import shapely

    ok = np.isfinite(lat) & np.isfinite(lng) & (np.abs(lat) <= 90) & (np.abs(lng) <= 180)
    wkb = np.full(lat.size, None, dtype=object)
    if ok.any():
        wkb[ok] = shapely.to_wkb(shapely.points(lng[ok], lat[ok]))
    return pa.array(wkb, type=pa.binary())


def _geo_metadata() -> dict:
    return {
        "version": "1.0.0",
        "primary_column": GEOMETRY,
        "columns": {GEOMETRY: {"encoding": "WKB", "geometry_types": ["Point"], "edges": "planar"}},
    }


class GeoJsonWriter(Writer):
    """A FeatureCollection; each row a Point feature (null geometry for unusable coordinates)."""

    def __init__(self, path):
        super().__init__(path)
        self._fh = open(self.tmp, "w", encoding="utf-8")
        self._fh.write('{"type": "FeatureCollection", "features": [\n')

    def write(self, chunk: Chunk, scores: pa.Table):
        table = _merge(chunk.columns, scores)
        rows = table.to_pylist()
        ok = (
            np.isfinite(chunk.lat)
            & np.isfinite(chunk.lng)
            & (np.abs(chunk.lat) <= 90)
            & (np.abs(chunk.lng) <= 180)
        )
        out = []
        for i, props in enumerate(rows):
            geom = (
                {"type": "Point", "coordinates": [float(chunk.lng[i]), float(chunk.lat[i])]}
                if ok[i]
                else None
            )
            out.append(
                json.dumps(
                    {"type": "Feature", "geometry": geom, "properties": props},
                    ensure_ascii=False,
                    default=str,
                )
            )
        if out:
            self._fh.write((",\n" if self.rows else "") + ",\n".join(out))
        self.rows += len(out)

    def _finish(self):
        if not self._fh.closed:
            self._fh.write("\n]}\n")
            self._fh.close()


def open_writer(path, *, pairs: bool = False) -> Writer:
    """The writer for ``path`` by extension (``.parquet`` plain Parquet, ``.geo.parquet`` GeoParquet);
    ``pairs``: a writer of the long pair table alone (CSV or plain Parquet).

    Examples
    --------
    >>> writer = open_writer("scores.parquet")  # doctest: +SKIP
    """
    kind = file_format(path)
    if pairs:
        if kind not in ("csv", "parquet"):
            raise InputError(f"{path}: the pair table is written as .csv or .parquet")
        return TableWriter(path, kind, carry=False)
    if kind == "geojson":
        return GeoJsonWriter(path)
    return TableWriter(path, kind)
