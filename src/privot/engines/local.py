"""The embedded local engine: pandas chunks streamed from CSV/Parquet, bounded memory.

A collection is a :class:`LocalFrame`: either a *lazy* stream of pandas chunks of at
most ``chunk_size`` rows (what :meth:`LocalBackend.read`, ``map_columns``, ``filter``
and ``join`` give), or one in-memory ``DataFrame`` (what aggregations, ``cache`` and a
join with an in-memory left side give). Reading streams the file with pyarrow
(``pyarrow.csv.open_csv`` / ``pyarrow.dataset`` batches) and only the requested
columns are kept, so memory is bounded by one chunk plus the aggregates; a stream is
read again each time it is consumed, hence :meth:`LocalBackend.cache` for a
collection used more than once.

Aggregations are mergeable: each chunk is reduced with a pandas ``groupby`` and the
partial results are merged (summed per key) whenever they outgrow the merged part, so
the peak memory is proportional to the number of distinct keys, not to the input.

pandas and pyarrow are optional dependencies (extra ``datasets`` or ``spark``),
imported when the engine is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privot._optional import require
from privot._validation import check_int
from privot.engines.base import (
    ColumnFunction,
    FileSource,
    Predicate,
    check_columns,
    check_names,
    normalise_values,
    resolve_file,
)
from privot.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = ["LocalBackend", "LocalFrame"]

_EXTRA = "datasets"


def _pd():
    return require("pandas", _EXTRA)


def _pa():
    return require("pyarrow", _EXTRA)


class LocalFrame:
    """A local collection: a lazy stream of pandas chunks or one in-memory DataFrame.

    Parameters
    ----------
    columns : sequence of str
        Column names (known even when the stream turns out to be empty).
    chunks : callable, optional
        Returns a fresh iterator over the chunks (a lazy frame).
    frame : pandas.DataFrame, optional
        The rows (an in-memory frame). Exactly one of ``chunks`` and ``frame``.
    """

    __slots__ = ("columns", "_chunks", "_frame")

    def __init__(self, columns: Sequence[str], *,
                 chunks: Callable[[], Iterator[pd.DataFrame]] | None = None,
                 frame: pd.DataFrame | None = None) -> None:
        if (chunks is None) == (frame is None):
            raise ValueError("LocalFrame takes exactly one of chunks and frame")
        self.columns = tuple(columns)
        self._chunks = chunks
        self._frame = frame

    @property
    def in_memory(self) -> bool:
        """Whether the rows are held as one ``DataFrame``."""
        return self._frame is not None

    def iter_chunks(self) -> Iterator[pd.DataFrame]:
        """The chunks (one chunk for an in-memory frame, possibly none when lazy)."""
        if self._frame is not None:
            yield self._frame
        else:
            yield from self._chunks()  # type: ignore[misc]

    def to_pandas(self) -> pd.DataFrame:
        """All rows as one ``DataFrame`` (materialises a lazy frame)."""
        if self._frame is not None:
            return self._frame
        pd = _pd()
        parts = list(self.iter_chunks())
        if not parts:
            return pd.DataFrame({c: np.empty(0, dtype=object) for c in self.columns})
        if len(parts) == 1:
            return parts[0].reset_index(drop=True)
        return pd.concat(parts, ignore_index=True)

    def __repr__(self) -> str:
        kind = f"{len(self._frame)} rows in memory" if self._frame is not None else "lazy"
        return f"LocalFrame(columns={list(self.columns)}, {kind})"


# -- conversion of columns ---------------------------------------------------------------


def _parse_text(value: object) -> float:
    """Slow path of text -> float: the values arrow's cast refused become NaN."""
    if value is None:
        return float("nan")
    s = str(value).strip()
    if not s or not s.isascii() or "_" in s:  # Python's float() also takes 1_0 and ４２
        return float("nan")
    try:
        return float(s)  # correctly rounded
    except ValueError:
        return float("nan")


def _arrow_to_float64(col: Any, name: str) -> np.ndarray:
    """float64 values of an arrow (chunked) array by the engines' rule (base module)."""
    pa = _pa()
    pc = require("pyarrow.compute", _EXTRA)
    t = col.type
    if pa.types.is_null(t):
        return np.full(len(col), np.nan)
    if pa.types.is_decimal(t):  # via the exact decimal text: correctly rounded
        col = pc.cast(col, pa.string())
        t = col.type
    if pa.types.is_floating(t) or pa.types.is_integer(t):
        out = pc.cast(col, pa.float64(), safe=False)  # widen / round to nearest
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)):
        try:
            out = pc.cast(col, pa.float64())  # correctly rounded decimal parsing
        except pa.ArrowInvalid:
            return np.array([_parse_text(v) for v in col.to_pylist()], dtype=np.float64)
    else:
        raise InvalidDataError(
            f"column {name!r} has type {t}; it must hold numbers or numeric text")
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)


def _arrow_to_series(col: Any) -> Any:
    """A pandas Series of an arrow column; integers with nulls stay exact (Int64)."""
    pa = _pa()
    pd = _pd()
    if pa.types.is_integer(col.type) and col.null_count:
        mapping = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
                   pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                   pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                   pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype()}
        return col.to_pandas(types_mapper=mapping.get)
    return col.to_pandas()


def _table_to_chunk(table: Any, float_columns: Sequence[str]) -> pd.DataFrame:
    pd = _pd()
    data = {}
    for name in table.column_names:
        col = table.column(name)
        if name in float_columns:
            data[name] = _arrow_to_float64(col, name)
        else:
            data[name] = _arrow_to_series(col).reset_index(drop=True)
    return pd.DataFrame(data)


def _series_to_float64(series: Any, name: str) -> np.ndarray:
    if series.dtype == np.float64:
        return series.to_numpy()
    if series.dtype.kind in "iuf" and not isinstance(series.dtype, np.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)  # nullable Int64...
    if series.dtype.kind in "iuf":
        return series.to_numpy().astype(np.float64)  # round to nearest
    pa = _pa()
    try:
        arr = pa.Array.from_pandas(series)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InvalidDataError(
            f"column {name!r} (dtype {series.dtype}) must hold numbers or numeric "
            "text") from exc
    return _arrow_to_float64(arr, name)


def _rebatch(batches: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """Regroup arrow record batches into lists of exactly ``size`` rows (last: fewer)."""
    buf: list[Any] = []
    n = 0
    for batch in batches:
        while batch.num_rows:
            take = min(size - n, batch.num_rows)
            buf.append(batch.slice(0, take))
            n += take
            batch = batch.slice(take)
            if n == size:
                yield buf
                buf, n = [], 0
    if buf:
        yield buf


# -- aggregation helpers -----------------------------------------------------------------


def _groups(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Dense group code of every row (0..G-1) and the key values of each group."""
    fast = _int_groups(frame, keys)
    return fast if fast is not None else _hash_groups(frame, keys)


def _int_groups(frame: pd.DataFrame,
                keys: list[str]) -> tuple[np.ndarray, pd.DataFrame] | None:
    """Grouping of integer keys without missing values by packing (else ``None``).

    The keys are packed into one int64 in lexicographic order. A small packed range is
    grouped by direct addressing (a lookup table, no hashing); a large one by a stable
    sort, which merges presorted runs quickly: its groups come out sorted by key, so
    the partial results that an aggregation merges later are sorted runs already.
    """
    cols = [frame[k].to_numpy() for k in keys]
    if not all(isinstance(c, np.ndarray) and c.dtype.kind in "iu" for c in cols):
        return None
    n = len(frame)
    if n == 0:
        return np.zeros(0, dtype=np.int64), frame[keys].iloc[:0].reset_index(drop=True)
    lows = [int(c.min()) for c in cols]
    spans = [int(c.max()) - lo + 1 for c, lo in zip(cols, lows, strict=True)]
    span = 1
    for v in spans:
        span *= v
    if span >= 2**62:
        return None
    packed = np.zeros(n, dtype=np.int64)
    for col, lo, width in zip(cols, lows, spans, strict=True):
        packed *= np.int64(width)
        packed += (col - lo).astype(np.int64, copy=False)
    if span <= max(4 * n, 1 << 20):  # direct addressing
        present = np.bincount(packed, minlength=span) > 0
        lookup = np.cumsum(present, dtype=np.int64) - 1
        codes = lookup[packed]
        del lookup
        first = np.empty(int(present.sum()), dtype=np.int64)
        first[codes[::-1]] = np.arange(n - 1, -1, -1)  # first row of each group
    else:
        order = np.argsort(packed, kind="stable")
        ordered = packed[order]
        del packed
        starts = np.empty(n, dtype=bool)
        starts[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        del ordered
        begin = np.flatnonzero(starts)
        del starts
        codes = np.empty(n, dtype=np.int64)
        codes[order] = np.repeat(np.arange(begin.size, dtype=np.int64),
                                 np.diff(np.append(begin, n)))
        first = order[begin]
        del order
    pd = _pd()
    key_values = pd.DataFrame({k: frame[k].take(first).reset_index(drop=True) for k in keys})
    return codes, key_values


def _hash_groups(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Hash factorisation of each key column (a missing value is a key of its own),
    the codes combined into one int64 and factorised again."""
    pd = _pd()
    combined = np.zeros(len(frame), dtype=np.int64)
    for i, key in enumerate(keys):
        codes, uniques = pd.factorize(frame[key], use_na_sentinel=False)
        codes = np.asarray(codes, dtype=np.int64)
        if i == 0:
            combined = codes
        else:  # both dense: the product stays below len(frame) * len(uniques) < 2**63
            combined, _ = pd.factorize(combined * np.int64(len(uniques)) + codes)
            combined = np.asarray(combined, dtype=np.int64)
    n_groups = int(combined.max()) + 1 if combined.size else 0
    first = np.empty(n_groups, dtype=np.int64)
    first[combined[::-1]] = np.arange(combined.size - 1, -1, -1)  # first row of a group
    key_values = pd.DataFrame({k: frame[k].take(first).reset_index(drop=True) for k in keys})
    return combined, key_values


def _sum_into(codes: np.ndarray, n_groups: int, values: Any) -> np.ndarray:
    """Per-group sums of one column: exact int64 for integers, float64 otherwise."""
    if values.dtype.kind in "iub":
        arr = np.asarray(values.to_numpy(dtype=np.int64, na_value=0), dtype=np.int64)
        out = np.zeros(n_groups, dtype=np.int64)
    else:
        arr = np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        out = np.zeros(n_groups, dtype=np.float64)
    np.add.at(out, codes, arr)
    return out


def _group_sum(frame: pd.DataFrame, keys: list[str], values: dict[str, str]) -> pd.DataFrame:
    """Per-key sums of ``values`` (``{out: column}``), null keys kept as a key."""
    pd = _pd()
    if not keys:
        return pd.DataFrame({out: [_column_sum(frame[src])] for out, src in values.items()})
    codes, out = _groups(frame, keys)
    for name, src in values.items():
        out[name] = _sum_into(codes, len(out), frame[src])
    return out


def _column_sum(series: Any) -> Any:
    if series.dtype.kind in "iub":
        return int(series.to_numpy(dtype=np.int64, na_value=0).sum())
    return float(series.to_numpy(dtype=np.float64, na_value=np.nan).sum())


def _group_count(frame: pd.DataFrame, keys: list[str], out: str) -> pd.DataFrame:
    pd = _pd()
    if not keys:
        return pd.DataFrame({out: np.array([len(frame)], dtype=np.int64)})
    codes, result = _groups(frame, keys)
    result[out] = np.bincount(codes, minlength=len(result)).astype(np.int64)
    return result


def _merge_partials(parts: list[pd.DataFrame], keys: list[str],
                    outs: list[str]) -> pd.DataFrame:
    """Merge partial aggregates; empties ``parts`` so they can be freed early."""
    pd = _pd()
    if len(parts) == 1:
        return parts.pop()
    both = pd.concat(parts, ignore_index=True)
    parts.clear()
    return _group_sum(both, keys, {o: o for o in outs})


def _empty(keys: list[str], outs: list[str]) -> pd.DataFrame:
    pd = _pd()
    if not keys:
        return pd.DataFrame({o: np.zeros(1, dtype=np.int64) for o in outs})
    cols = {k: np.empty(0, dtype=object) for k in keys}
    cols.update({o: np.empty(0, dtype=np.int64) for o in outs})
    return pd.DataFrame(cols)


class LocalBackend:
    """The embedded engine: pandas chunks, mergeable per-key aggregations.

    Parameters
    ----------
    chunk_size : int, default 1_000_000
        Rows per chunk when streaming an input (>= 1). Memory is about ``chunk_size``
        rows of the requested columns plus the aggregates.

    Notes
    -----
    Implements :class:`~privot.engines.base.Backend`; see that protocol for the
    semantics of every operation. The right side of :meth:`join` is held in memory
    (it is an aggregate); the left side may be a stream.
    """

    name = "local"

    def __init__(self, chunk_size: int = 1_000_000) -> None:
        self.chunk_size = check_int(chunk_size, "chunk_size", minimum=1)

    def __repr__(self) -> str:
        return f"LocalBackend(chunk_size={self.chunk_size})"

    # -- reading -----------------------------------------------------------------------

    def read(self, source: Any, *, columns: Sequence[str],
             float_columns: Sequence[str] = (), sep: str | None = None,
             names: Sequence[str] | None = None) -> LocalFrame:
        columns = list(dict.fromkeys(columns))
        floats = [c for c in float_columns if c in columns]
        pd = _pd()
        if isinstance(source, pd.DataFrame):
            if sep is not None or names is not None:
                raise InvalidParameterError("sep/names", (sep, names),
                                            "None for an in-memory DataFrame")
            check_columns(columns, [str(c) for c in source.columns], "the DataFrame")
            return self._read_pandas(source, columns, floats)
        if not isinstance(source, (str, os.PathLike)):
            raise InvalidParameterError(
                "source", type(source).__name__,
                "a path to a CSV/TSV/Parquet file or a pandas DataFrame")
        names = check_names(names)
        file = resolve_file(source, sep, names)
        if file.format == "parquet":
            return self._read_parquet(file, columns, floats)
        return self._read_csv(file, columns, floats, names)

    def _read_pandas(self, df: pd.DataFrame, columns: list[str],
                     floats: list[str]) -> LocalFrame:
        size = self.chunk_size

        def chunks() -> Iterator[pd.DataFrame]:
            pd = _pd()
            for start in range(0, len(df), size):
                part = df.iloc[start:start + size]
                data = {}
                for c in columns:
                    series = part[c].reset_index(drop=True)
                    data[c] = _series_to_float64(series, c) if c in floats else series
                yield pd.DataFrame(data)

        return LocalFrame(columns, chunks=chunks)

    def _read_parquet(self, file: FileSource, columns: list[str],
                      floats: list[str]) -> LocalFrame:
        pa = _pa()
        ds = require("pyarrow.dataset", _EXTRA)
        try:
            dataset = ds.dataset(str(file.path), format="parquet")
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidDataError(f"could not read Parquet {str(file.path)!r}: {exc}") from exc
        check_columns(columns, dataset.schema.names, f"{str(file.path)!r}")
        size = self.chunk_size

        def chunks() -> Iterator[pd.DataFrame]:
            batches = dataset.to_batches(columns=columns, batch_size=min(size, 1 << 20))
            for group in _rebatch(iter(batches), size):
                yield _table_to_chunk(pa.Table.from_batches(group), floats)

        return LocalFrame(columns, chunks=chunks)

    def _read_csv(self, file: FileSource, columns: list[str], floats: list[str],
                  names: list[str] | None) -> LocalFrame:
        pa = _pa()
        pcsv = require("pyarrow.csv", _EXTRA)
        path = str(file.path)
        empty = _is_empty_text(file)
        available = names if names is not None else ([] if empty else _csv_header(file))
        check_columns(columns, available, f"{path!r}")
        size = self.chunk_size
        block = int(min(max(size * 64, 1 << 16), 1 << 26))

        def chunks() -> Iterator[pd.DataFrame]:
            if empty:
                return
            try:
                reader = pcsv.open_csv(
                    path,
                    read_options=pcsv.ReadOptions(column_names=names, block_size=block),
                    parse_options=pcsv.ParseOptions(delimiter=file.sep),
                    convert_options=pcsv.ConvertOptions(
                        include_columns=columns,
                        column_types={c: pa.string() for c in columns},
                        null_values=[""], strings_can_be_null=True,
                        quoted_strings_can_be_null=True))
                for group in _rebatch(iter(reader), size):
                    yield _table_to_chunk(pa.Table.from_batches(group), floats)
            except pa.ArrowInvalid as exc:
                raise InvalidDataError(f"could not read {path!r}: {exc}") from exc

        return LocalFrame(columns, chunks=chunks)

    # -- transformations ---------------------------------------------------------------

    def map_columns(self, data: LocalFrame, fn: ColumnFunction) -> LocalFrame:
        def apply(chunk: pd.DataFrame) -> pd.DataFrame:
            out = chunk.copy(deep=False)
            for name, values in fn.pandas(chunk).items():
                out[name] = values
            return out

        columns = list(data.columns) + [c for c in fn.outputs if c not in data.columns]
        return _lazy_or_now(data, columns, apply)

    def filter(self, data: LocalFrame, predicate: Predicate) -> LocalFrame:
        def apply(chunk: pd.DataFrame) -> pd.DataFrame:
            mask = np.asarray(predicate.pandas(chunk), dtype=bool)
            return chunk if mask.all() else chunk[mask].reset_index(drop=True)

        return _lazy_or_now(data, data.columns, apply)

    def select(self, data: LocalFrame, columns: Sequence[str]) -> LocalFrame:
        columns = list(columns)
        check_columns(columns, data.columns, "the collection")
        return _lazy_or_now(data, columns, lambda chunk: chunk[columns])

    def join(self, left: LocalFrame, right: LocalFrame, *, on: Sequence[str]) -> LocalFrame:
        keys = list(on)
        clash = (set(left.columns) & set(right.columns)) - set(keys)
        if clash:
            raise InvalidParameterError("right", sorted(clash),
                                        "no column other than the join keys in common")
        pd = _pd()
        rframe = _drop_null_keys(right.to_pandas(), keys)

        def apply(chunk: pd.DataFrame) -> pd.DataFrame:
            return pd.merge(_drop_null_keys(chunk, keys), rframe, on=keys, how="inner",
                            sort=False)

        columns = list(left.columns) + [c for c in right.columns if c not in keys]
        return _lazy_or_now(left, columns, apply)

    # -- aggregations ------------------------------------------------------------------

    def count_per_key(self, data: LocalFrame, keys: Sequence[str], *,
                      out: str = "count") -> LocalFrame:
        keys = list(keys)
        check_columns(keys, data.columns, "the collection")
        return self._aggregate(data, keys, [out], lambda c: _group_count(c, keys, out))

    def sum_per_key(self, data: LocalFrame, keys: Sequence[str],
                    values: Mapping[str, str] | Sequence[str]) -> LocalFrame:
        keys = list(keys)
        vals = normalise_values(values)
        check_columns(keys + list(vals.values()), data.columns, "the collection")
        return self._aggregate(data, keys, list(vals), lambda c: _group_sum(c, keys, vals))

    def _aggregate(self, data: LocalFrame, keys: list[str], outs: list[str],
                   partial: Callable[[pd.DataFrame], pd.DataFrame]) -> LocalFrame:
        parts: list[pd.DataFrame] = []  # parts[0] is the merged part, if any
        merged_rows = pending_rows = 0
        for chunk in data.iter_chunks():
            part = partial(chunk)
            del chunk
            parts.append(part)
            pending_rows += len(part)
            # merge when the partial results outgrow the merged part (amortised cost)
            if pending_rows > max(2 * merged_rows, 4 * self.chunk_size):
                parts = [_merge_partials(parts, keys, outs)]
                merged_rows, pending_rows = len(parts[0]), 0
        frame = _merge_partials(parts, keys, outs) if parts else _empty(keys, outs)
        return LocalFrame(keys + outs, frame=frame.reset_index(drop=True))

    # -- materialisation ---------------------------------------------------------------

    def cache(self, data: LocalFrame) -> LocalFrame:
        if data.in_memory:
            return data
        return LocalFrame(data.columns, frame=data.to_pandas())

    def release(self, data: LocalFrame) -> None:
        return None

    def count(self, data: LocalFrame) -> int:
        return int(sum(len(chunk) for chunk in data.iter_chunks()))

    def collect_to_numpy(self, data: LocalFrame,
                         columns: Sequence[str]) -> dict[str, np.ndarray]:
        frame = data.to_pandas()
        check_columns(columns, [str(c) for c in frame.columns], "the collection")
        return {c: frame[c].to_numpy() for c in columns}


def _lazy_or_now(data: LocalFrame, columns: Sequence[str],
                 apply: Callable[[pd.DataFrame], pd.DataFrame]) -> LocalFrame:
    """Apply a per-chunk function now (in-memory frame) or on reading (stream)."""
    if data.in_memory:
        return LocalFrame(columns, frame=apply(data.to_pandas()))
    return LocalFrame(columns, chunks=lambda: (apply(c) for c in data.iter_chunks()))


def _drop_null_keys(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    null = frame[keys].isna().to_numpy().any(axis=1)
    return frame[~null] if null.any() else frame


def _is_empty_text(file: FileSource) -> bool:
    """True for a 0-byte file (or a compressed one holding nothing)."""
    if file.path.stat().st_size == 0:
        return True
    pa = _pa()
    with pa.input_stream(str(file.path), compression="detect") as stream:
        return len(stream.read(1)) == 0


def _csv_header(file: FileSource) -> list[str]:
    """Column names in the first line of a delimited text file."""
    import csv
    import io

    pa = _pa()
    with pa.input_stream(str(file.path), compression="detect") as stream:
        head = stream.read(1 << 20)
    text = io.StringIO(head.decode("utf-8", errors="replace"))
    row = next(csv.reader(text, delimiter=file.sep or ","), [])
    return [c.strip("\r\n") for c in row]
