"""The embedded engine: DuckDB (out-of-core, multi-threaded, 128-bit integers).

A step's SQL runs in a fresh in-memory DuckDB connection over a view ``{source}`` of
the input: ``read_csv`` (every column as text, gzip detected from the suffix),
``read_parquet`` (a file, or every ``*.parquet`` under a folder), or an in-memory table
scanned in place (``con.register``): a pandas or polars ``DataFrame``, a polars
``LazyFrame`` or a pyarrow ``Table`` (:mod:`privot.engines.tables`; a polars frame is
read through Arrow, so it needs pyarrow). DuckDB streams the input, aggregates with all the
threads it is given and spills to a temporary folder when an aggregate outgrows the
memory limit; only the query's result comes back.

DuckDB is a core dependency (imported when the engine is built). ``{wide}`` is
``HUGEINT`` and ``{div}`` is ``//``.

Output: a step writes nothing to stdout or stderr. DuckDB's Python client switches its
own progress bar on in interactive sessions (the REPL, IPython/Jupyter, ``python -c``)
and then prints it to **stdout** (a widget in Jupyter) for any query longer than
``progress_bar_time`` (2 s by default); the engine switches it off
(``SET enable_progress_bar = false``) on every connection it opens, whatever the
session. Those connections are private: the engine opens a fresh in-memory one per step
and closes it; it never takes, reuses or reconfigures a connection of the caller's (nor
DuckDB's default connection), so a caller's own DuckDB settings are left as they are.
"""

from __future__ import annotations

import inspect
import os
import re
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privot._optional import require
from privot._validation import check_int
from privot.engines.base import (
    VectorFunction,
    check_columns,
    check_names,
    resolve_file,
)
from privot.engines.tables import (
    TABLES,
    describe_table,
    is_table,
    select_columns,
    table_columns,
    table_kind,
)
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["DIALECT", "DuckDBEngine", "check_memory_limit"]

#: Dialect tokens of the step texts.
DIALECT = {"wide": "HUGEINT", "div": "//"}

_WIDEN = ("FLOAT", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
          "UINTEGER", "UBIGINT")
_VIA_TEXT = ("HUGEINT", "UHUGEINT")
_INPUT = "privot_input"


_SIZE = re.compile(r"\s*[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*",
                   re.IGNORECASE)


def check_memory_limit(value: object, name: str = "memory_limit") -> str:
    """A DuckDB size such as ``"4GB"``, ``"512MiB"`` or ``"1.5 GB"``."""
    if not isinstance(value, str) or not _SIZE.fullmatch(value):
        raise InvalidParameterError(name, value, "a size such as 4GB, 512MB or 1.5GiB "
                                    "(units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    return value.strip()


def _duckdb():
    return require("duckdb", "duckdb")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _to_double(col: str, dtype: str, name: str) -> str:
    """SQL of the float64 conversion rule (``privot.engines.base``)."""
    c = _ident(col)
    if dtype == "DOUBLE":
        return c
    if dtype in _WIDEN:
        return f"CAST({c} AS DOUBLE)"
    if dtype in _VIA_TEXT or dtype.startswith("DECIMAL"):
        return f"TRY_CAST(CAST({c} AS VARCHAR) AS DOUBLE)"
    if dtype == "VARCHAR":  # DuckDB also reads 1_000 as a number: the rule says no
        return f"CASE WHEN contains({c}, '_') THEN NULL ELSE TRY_CAST({c} AS DOUBLE) END"
    if dtype == '"NULL"' or dtype == "NULL":
        return "CAST(NULL AS DOUBLE)"
    raise InvalidDataError(
        f"column {name!r} has type {dtype}; it must hold numbers or numeric text")


def _key(col: str, dtype: str) -> str:
    c = _ident(col)
    if dtype in ("DOUBLE", "FLOAT"):  # a NaN key is a missing key
        return f"CASE WHEN isnan({c}) THEN NULL ELSE {c} END"
    return c


def _column(values: Any) -> np.ndarray:
    """A fetched column as a plain array (a masked one: NaN or None where missing)."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        if not mask.any():
            return np.asarray(values.data)
        if values.dtype.kind in "iuf":
            out = values.data.astype(np.float64)
            out[mask] = np.nan
            return out
        out = values.data.astype(object)
        out[mask] = None
        return out
    return np.asarray(values)


class DuckDBEngine:
    """The default engine: DuckDB in this process.

    Parameters
    ----------
    threads : int, optional
        Worker threads (default: DuckDB's, one per core).
    memory_limit : str, optional
        DuckDB's memory limit, e.g. ``"4GB"`` (default: DuckDB's, 80% of the RAM); above
        it aggregates spill to a temporary folder under the system's temporary folder.

    Notes
    -----
    Implements :class:`~privot.engines.base.Engine`. Text files are read with
    ``all_varchar`` (no type inference, so a user id is the field's text); a CSV quote
    is ``"`` and doubled to escape it.
    """

    name = "duckdb"

    def __init__(self, *, threads: int | None = None, memory_limit: str | None = None
                 ) -> None:
        self.threads = None if threads is None else check_int(threads, "threads", minimum=1)
        self.memory_limit = (None if memory_limit is None
                             else check_memory_limit(memory_limit, "memory_limit"))

    def __repr__(self) -> str:
        return f"DuckDBEngine(threads={self.threads}, memory_limit={self.memory_limit!r})"

    def _connect(self) -> Any:
        config = {"preserve_insertion_order": False,
                  "temp_directory": os.path.join(tempfile.gettempdir(), "privot-duckdb")}
        if self.threads is not None:
            config["threads"] = self.threads
        if self.memory_limit is not None:
            config["memory_limit"] = self.memory_limit
        con = _duckdb().connect(":memory:", config=config)
        try:
            # DuckDB's own progress bar (on in interactive sessions) prints to stdout:
            # library code never writes there. A connection option (DuckDB refuses it
            # in the connect config), set on this private connection only.
            con.execute("SET enable_progress_bar = false")
        except BaseException:
            con.close()
            raise
        return con

    # -- the input view ----------------------------------------------------------------

    def _input(self, con: Any, source: Any, wanted: list[str], sep: str | None,
               names: Sequence[str] | None) -> str:
        """Register the raw input as ``privot_input``; returns where it came from."""
        kind = table_kind(source)
        if kind is not None:
            if sep is not None or names is not None:
                raise InvalidParameterError("sep/names", (sep, names),
                                            "None for an in-memory table")
            where = describe_table(source)
            check_columns(wanted, table_columns(source), where)
            if kind in ("polars", "polars-lazy"):
                require("pyarrow", "datasets")  # DuckDB scans a polars frame as Arrow
            # scanned in place (a LazyFrame: DuckDB collects the selected columns)
            con.register(_INPUT, select_columns(source, wanted))
            return where
        if not isinstance(source, (str, os.PathLike)):
            raise InvalidParameterError(
                "source", type(source).__name__, f"a path to a CSV/TSV/Parquet file, {TABLES}")
        names = check_names(names)
        file = resolve_file(source, sep, names)
        path = str(file.path)
        if file.format == "parquet":
            target = os.path.join(path, "**", "*.parquet") if file.path.is_dir() else path
            scan = f"read_parquet({_literal(target)})"
        else:
            if file.path.stat().st_size == 0 and names is None:
                raise InvalidDataError(f"{path!r} is empty (no header line)")
            opts = [f"delim={_literal(file.sep or ',')}", "quote='\"'", "escape='\"'",
                    "all_varchar=true", f"header={'false' if names else 'true'}",
                    "auto_detect=true"]
            if names:
                opts.append("names=[" + ", ".join(_literal(n) for n in names) + "]")
            scan = f"read_csv({_literal(path)}, {', '.join(opts)})"
        con.execute(f"CREATE TEMP VIEW {_INPUT} AS SELECT * FROM {scan}")
        return repr(path)

    def _view(self, con: Any, source: Any, columns: Mapping[str, str],
              float_columns: Sequence[str], sep: str | None,
              names: Sequence[str] | None) -> str:
        duckdb = _duckdb()
        try:
            where = self._input(con, source, list(columns.values()), sep, names)
            described = con.execute(f"DESCRIBE {_INPUT}").fetchall()
        except duckdb.Error as exc:
            raise InvalidDataError(_read_error(source, exc)) from exc
        types = {str(row[0]): str(row[1]) for row in described}
        check_columns(list(columns.values()), list(types), where)
        exprs = []
        for alias, col in columns.items():
            sql = (_to_double(col, types[col], col) if alias in float_columns
                   else _key(col, types[col]))
            exprs.append(f"{sql} AS {alias}")
        view = f"privot_source_{uuid.uuid4().hex[:12]}"
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(exprs)} FROM {_INPUT}")
        return view

    # -- the query ---------------------------------------------------------------------

    def query(self, sql: str, source: Any, *, columns: Mapping[str, str],
              float_columns: Sequence[str] = (), sep: str | None = None,
              names: Sequence[str] | None = None,
              functions: Mapping[str, VectorFunction] | None = None
              ) -> dict[str, np.ndarray]:
        duckdb = _duckdb()
        con = self._connect()
        try:
            view = self._view(con, source, columns, float_columns, sep, names)
            tokens = {"source": view, **DIALECT}
            for name, fn in (functions or {}).items():
                registered = f"privot_fn_{name}_{uuid.uuid4().hex[:8]}"
                _register(con, registered, fn)
                tokens[name] = registered
            try:
                got = con.execute(sql.format(**tokens)).fetchnumpy()
            except duckdb.Error as exc:  # one line, as when the input is read
                raise InvalidDataError(_read_error(source, exc)) from exc
            return {str(k): _column(v) for k, v in got.items()}
        finally:
            con.close()


def _register(con: Any, name: str, fn: VectorFunction) -> None:
    """``fn`` as a vectorised DuckDB function over Arrow batches (NULL -> NaN)."""
    pa = require("pyarrow", "datasets")

    def call(*arrays: Any) -> Any:
        cols = [np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.float64)
                for a in arrays]
        return pa.array(fn(*cols), type=pa.int64())

    # DuckDB counts the parameters of the Python function: name them
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY)
         for i in range(fn.n_args)])
    con.create_function(name, call, ["DOUBLE"] * fn.n_args, "BIGINT", type="arrow",
                        null_handling="special", side_effects=False)


#: Bytes of a text file inspected to explain a read error (line endings).
_SNIFF_BYTES = 1 << 20


def _mixed_line_endings(path: str | os.PathLike[str]) -> bool:
    """Whether the first MiB of an uncompressed text file holds both CRLF and bare LF
    line endings (DuckDB's CSV reader refuses such a file in strict mode)."""
    import re

    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    return b"\r\n" in head and re.search(rb"(?<!\r)\n", head) is not None


def _read_error(source: Any, exc: Exception) -> str:
    """One line for a file DuckDB could not read: mixed line endings named with the
    command that fixes them; otherwise DuckDB's first line (its messages run to 1,500
    characters over many lines)."""
    if isinstance(source, (str, os.PathLike)) and os.path.isfile(source) and \
            not str(source).endswith(".gz") and _mixed_line_endings(source):
        return (f"could not read {source!s:.200}: it mixes Windows (CRLF) and Unix (LF) "
                f"line endings, which the CSV reader refuses; convert it first, e.g. "
                f"sed -i 's/\\r$//' {source!s:.200}")
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return f"could not read {_named(source)}: {lines[0][:300]}"


def _named(source: Any) -> str:
    """The source in a message: a path (200 characters at most) or the table's kind
    (never its rows)."""
    return describe_table(source) if is_table(source) else f"{source!s:.200}"
