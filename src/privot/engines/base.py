"""The engine interface: run one step's SQL over a source, return small columns.

A data-touching step of privot (the per-user cell sums of the heatmaps, the leaf counts
of the private coreset) is **one SQL text**, owned by the capability that needs it
(``privot.heatmaps.engine_step``, ``privot.barycenters.engine_step``), and an engine
runs it (:class:`Engine`). The text reads a relation named ``{source}`` whose columns
are the step's own names (aliases) for the caller's columns, converted by the rule
below, and it may call vectorised row functions (:class:`VectorFunction`, written once
in numpy) by ``{name}``. Dialect differences are two tokens: ``{wide}``, an exact
integer type of at least 126 bits (DuckDB ``HUGEINT``, Spark ``DECIMAL(38,0)``), and
``{div}``, exact integer division of non-negative integers (DuckDB ``//``, Spark
``div``). What comes back to the driver is the result of the query, an aggregate.

Sources
-------
A ``.csv``/``.tsv`` file (optionally gzip-compressed, ``.gz``), any delimited text
file when ``sep`` is given, a ``.parquet`` file or a folder of Parquet files, or an
in-memory table: a pandas or polars ``DataFrame``, a polars ``LazyFrame`` or a pyarrow
``Table`` (:mod:`privot.engines.tables`; the same values, bit for bit, whichever kind
holds them; Spark also takes a Spark ``DataFrame``). Delimited text is read with every
requested column as text (no type inference).

Conversion of ``float_columns`` (the same rule on every engine)
----------------------------------------------------------------
Numbers are widened or rounded to the nearest float64; decimals and 128-bit integers
go through their exact text, so the value is the correctly rounded one; text is parsed
as a decimal number, correctly rounded (surrounding blanks allowed; ``nan``, ``inf``,
``infinity`` in any case accepted); text that is not a number (including digit
separators such as ``1_000``), empty fields and nulls become missing (NULL); a
boolean, date or other non-numeric column is refused. Every other requested column
(a key: a user id, a group label) keeps its type; a NaN in a floating-point key
column is a missing key (NULL). Literal float constants are written into the SQL text
with :func:`double_literal` (the exact float64 on both engines).

Privacy
-------
Nothing here is private: the engines compute *exact* aggregates that must not be
published. Noise is added afterwards, once, on the driver, by the capability that
states the unit, the neighbouring relation, the sensitivity and the guarantee. A step's
row expressions and row functions read one row only, so one unit's rows change only
that unit's contributions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from privot.engines.tables import TABLES, is_table
from privot.errors import (
    EngineResultError,
    InvalidDataError,
    InvalidParameterError,
    SourceNotFoundError,
)

__all__ = [
    "Engine",
    "FileSource",
    "SourceNotFoundError",
    "VectorFunction",
    "check_columns",
    "check_names",
    "double_literal",
    "resolve_file",
]

_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".xz")
_DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}


@dataclass(frozen=True, eq=False)
class VectorFunction:
    """A row function written once in numpy, callable from a step's SQL on every engine.

    ``fn`` takes ``n_args`` float64 arrays of equal length (a missing value is NaN) and
    returns an int64 array of that length; it must read each row alone. DuckDB calls it
    on Arrow batches (``create_function(type="arrow")``), Spark as a pandas UDF: the
    same numpy operations, hence the same values.
    """

    fn: Callable[..., np.ndarray]
    n_args: int

    def __call__(self, *columns: np.ndarray) -> np.ndarray:
        out = np.asarray(self.fn(*columns), dtype=np.int64)
        if out.shape != (len(columns[0]) if columns else 0,):
            raise EngineResultError(f"a VectorFunction must return one int64 value per row "
                                    f"({len(columns[0]) if columns else 0}), got shape "
                                    f"{out.shape}")
        return out


@runtime_checkable
class Engine(Protocol):
    """Runs a step's SQL text over a source and returns the (small) result on the driver.

    Attributes
    ----------
    name : str
        ``"duckdb"`` or ``"spark"``.
    """

    name: str

    def query(self, sql: str, source: Any, *, columns: Mapping[str, str],
              float_columns: Sequence[str] = (), sep: str | None = None,
              names: Sequence[str] | None = None,
              functions: Mapping[str, VectorFunction] | None = None
              ) -> dict[str, np.ndarray]:
        """Run ``sql`` over ``source`` and return its result columns.

        Parameters
        ----------
        sql : str
            The step's text, with ``{source}`` (the input relation), ``{wide}``,
            ``{div}`` and one ``{name}`` per entry of ``functions``.
        source : str, path-like or table
            A file, or a pandas/polars ``DataFrame``, polars ``LazyFrame`` or pyarrow
            ``Table``; see the module docstring.
        columns : mapping of str to str
            ``{alias: column of the source}``; the relation ``{source}`` has exactly
            the aliases as columns (plain lowercase identifiers).
        float_columns : sequence of str
            Aliases converted to float64 (rule in the module docstring).
        sep : str, optional
            Field delimiter; default from the suffix (``,`` for ``.csv``, tab for
            ``.tsv``).
        names : sequence of str, optional
            Column names of a header-less delimited file (its first line is data).
        functions : mapping of str to VectorFunction, optional
            Row functions the text calls by ``{name}(...)``.

        Returns
        -------
        dict of str to (k,) ndarray
            Every result column: integers as int64 (no nulls allowed), other columns as
            object or float arrays with ``None``/NaN for a missing value.

        Raises
        ------
        SourceNotFoundError
            The path does not exist.
        InvalidDataError
            A missing column (the message names it and the columns there are), a
            non-numeric ``float_columns`` column, an unreadable file.
        """
        ...


# -- helpers shared by the engines -------------------------------------------------------


def double_literal(value: float) -> str:
    """A float64 constant as SQL text both engines parse to exactly ``value``.

    ``repr`` gives the shortest decimal that rounds back to the same double, and both
    engines parse decimal text correctly rounded (DuckDB: fast_float; Spark: Java).
    """
    v = float(value)
    if not np.isfinite(v):
        raise InvalidParameterError("value", value, "a finite number")
    return f"CAST('{v!r}' AS DOUBLE)"


@dataclass(frozen=True)
class FileSource:
    """A resolved input file: its path, format and (for text) delimiter."""

    path: Path
    format: Literal["csv", "parquet"]
    sep: str | None = None


def resolve_file(source: str | os.PathLike[str], sep: str | None,
                 names: Sequence[str] | None) -> FileSource:
    """Check that ``source`` exists and decide how to read it.

    Raises
    ------
    SourceNotFoundError
        If the path does not exist.
    InvalidParameterError
        If the format cannot be told from the suffix and no ``sep`` is given, or
        ``names``/``sep`` are given for Parquet.
    """
    path = Path(os.fspath(source))
    if not path.exists():
        raise SourceNotFoundError(
            f"source {str(path)!r} does not exist; give an existing CSV/TSV/Parquet file "
            "or folder of Parquet files")
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes.pop()
    last = suffixes[-1] if suffixes else ""
    if path.is_dir() or last in _PARQUET_SUFFIXES:
        if sep is not None:
            raise InvalidParameterError("sep", sep, "None for Parquet input")
        if names is not None:
            raise InvalidParameterError("names", names,
                                        "None for Parquet input (its columns are named)")
        return FileSource(path, "parquet")
    if sep is None:
        if last not in _DELIMITERS:
            raise InvalidParameterError(
                "source", str(path),
                "a .csv/.tsv/.parquet file or a folder of Parquet files; for another "
                "delimited text file pass sep=")
        sep = _DELIMITERS[last]
    if not isinstance(sep, str) or len(sep) != 1:
        raise InvalidParameterError("sep", sep, "a single character such as ',' or '\\t'")
    return FileSource(path, "csv", sep)


def check_names(names: Sequence[str] | None) -> list[str] | None:
    """Validate ``names`` (distinct strings) for a header-less text file."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InvalidParameterError("names", names, "a sequence of column names (str)")
    out = list(names)
    if not out or len(set(out)) != len(out):
        raise InvalidParameterError("names", names, "a non-empty list of distinct names")
    return out


def check_columns(wanted: Sequence[str], available: Sequence[str], where: str) -> None:
    """Raise :class:`InvalidDataError` naming the first missing column and the others."""
    have = list(available)
    if not have:
        raise InvalidDataError(
            f"{where} is empty: it has no columns (an empty file?); expected the columns "
            f"{list(wanted)}")
    for col in wanted:
        if col not in have:
            raise InvalidDataError(
                f"column {col!r} not found in {where}; available columns: {have}")


def check_source(source: object) -> None:
    """Refuse a source that is neither a path nor a table (pandas, polars, pyarrow) nor
    another DataFrame-like object (one with ``columns``, e.g. a Spark ``DataFrame``)."""
    if source is None or not (isinstance(source, (str, os.PathLike)) or is_table(source)
                              or hasattr(source, "columns")):
        raise InvalidParameterError("source", type(source).__name__,
                                    f"a path to a CSV/TSV/Parquet file, {TABLES}")
