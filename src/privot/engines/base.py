"""The backend protocol: a few columnar operations that every engine implements.

In the spirit of PipelineDP's ``PipelineBackend``, a data-touching step (the per-user
cell sums of the heatmaps, for instance) is written **once** against
:class:`Backend`, and runs unchanged on the embedded local engine
(:class:`~privot.engines.local.LocalBackend`) or on Apache Spark
(:class:`~privot.engines.spark.SparkBackend`). Unlike PipelineDP's element-wise
``map``, the operations here are **columnar**: a backend holds a collection of rows with
named columns (a stream of pandas chunks locally, a Spark ``DataFrame`` on Spark), and
per-row work is a vectorised :class:`ColumnFunction` applied to whole columns.

Operations
----------
``read``            CSV/TSV/Parquet path, a pandas ``DataFrame`` (or a Spark ``DataFrame``
                    on Spark) -> collection with the requested columns
``map_columns``     add the columns computed by a :class:`ColumnFunction`
``filter``          keep the rows where a :class:`Predicate` holds
``select``          keep only the named columns
``count_per_key``   rows per distinct key -> ``keys + [out]``
``sum_per_key``     column sums per distinct key -> ``keys + outs``
``join``            inner equi-join on key columns (missing keys never match)
``cache``/``release``  keep a collection that is used more than once / free it
``count``           number of rows (an int on the driver)
``collect_to_numpy``  bring a *small aggregate* to the driver as numpy arrays

Conventions shared by every backend, so that results agree exactly:

* A missing key value (null/NaN) is a key of its own in ``count_per_key`` and
  ``sum_per_key`` (Spark's ``groupBy`` semantics) and never matches in ``join`` (SQL
  semantics).
* Columns named in ``float_columns`` of ``read`` are converted to float64 by the same
  rule everywhere: numbers are widened or rounded to nearest, text is parsed as a decimal
  number correctly rounded, text that is not a number and empty fields become missing
  (NaN). Delimited text files are read with every other requested column as text.
* Integer aggregates (counts and sums of integer columns) are exact on every backend, so
  a step that keeps its data-dependent arithmetic in integers until the final driver-side
  step produces bit-identical output whichever backend ran it.

Privacy
-------
Nothing here is private: the backends compute *exact* aggregates (counts, sums) that
must not be published. Noise is added afterwards, once, on the driver, by the
capability that states the unit, the neighbouring relation, the sensitivity of the
aggregate and the guarantee (e.g. ``privot.heatmaps.measure``: user-level, add/remove;
``privot.barycenters.coresets``: one point, replace-one). A per-row function reads its
own row only, so one unit's rows change only that unit's contributions.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from privot.errors import InvalidDataError, InvalidParameterError, PrivotError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = [
    "DTYPES",
    "Backend",
    "ColumnFunction",
    "Compare",
    "FileSource",
    "NotNull",
    "Predicate",
    "SourceNotFoundError",
    "Where",
    "check_columns",
    "check_names",
    "normalise_values",
    "quote",
    "resolve_file",
]

#: Column dtypes a :class:`ColumnFunction` may produce.
DTYPES = ("int64", "float64", "bool")

_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".xz")
_DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}


class SourceNotFoundError(PrivotError, FileNotFoundError):
    """The input file or folder given to an engine does not exist.

    Subclasses :class:`~privot.errors.PrivotError` (the CLI reports it on one line) and
    :class:`FileNotFoundError` (``except FileNotFoundError`` catches it).
    """


# -- per-row functions -------------------------------------------------------------------


class ColumnFunction(ABC):
    """A vectorised per-row function: some columns in, new named columns out.

    It is defined once for pandas chunks (:meth:`pandas`, used by the local engine and
    by Spark's ``mapInPandas`` fallback) and optionally as native Spark column
    expressions (:meth:`spark`). When both exist they must perform the *same*
    floating-point and integer operations, so both engines give identical columns.

    Attributes
    ----------
    outputs : mapping of str to str
        Name and dtype (one of :data:`DTYPES`) of every column produced.
    """

    outputs: Mapping[str, str]

    @abstractmethod
    def pandas(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """The new columns for one chunk, each an ``(len(frame),)`` array."""

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> dict[str, Any] | None:
        """Native Spark column expressions, or ``None`` to use :meth:`pandas`.

        Parameters
        ----------
        functions : module
            ``pyspark.sql.functions``.
        dtypes : mapping of str to str
            Spark SQL type name of every input column (``"bigint"``, ``"string"``...).
        """
        return None


class Predicate(ABC):
    """A vectorised row filter, defined for pandas chunks and optionally for Spark."""

    @abstractmethod
    def pandas(self, frame: pd.DataFrame) -> np.ndarray:
        """``(len(frame),)`` bool mask of the rows to keep."""

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> Any | None:
        """A native Spark boolean column expression, or ``None`` to use :meth:`pandas`."""
        return None


_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Compare(Predicate):
    """``column <op> value`` for a numeric column; missing values (null, NaN) never pass.

    Parameters
    ----------
    column : str
    op : {"==", "!=", "<", "<=", ">", ">="}
    value : int or float
    """

    column: str
    op: str
    value: float

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise InvalidParameterError("op", self.op, f"one of {_OPS}")

    def pandas(self, frame: pd.DataFrame) -> np.ndarray:
        col = frame[self.column]
        out = _apply_op(col, self.op, self.value)
        return np.asarray(out.fillna(False) if hasattr(out, "fillna") else out, dtype=bool)

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> Any:
        col = functions.col(quote(self.column))
        cond = functions.coalesce(_apply_op(col, self.op, functions.lit(self.value)),
                                  functions.lit(False))
        if dtypes.get(self.column) in ("double", "float"):  # Spark orders NaN above all
            cond = cond & ~functions.isnan(col)
        return cond


@dataclass(frozen=True)
class NotNull(Predicate):
    """``column`` holds a value (not null, not NaN)."""

    column: str

    def pandas(self, frame: pd.DataFrame) -> np.ndarray:
        return ~np.asarray(frame[self.column].isna().to_numpy(), dtype=bool)

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> Any:
        col = functions.col(quote(self.column))
        cond = col.isNotNull()
        if dtypes.get(self.column) in ("double", "float"):
            cond = cond & ~functions.isnan(col)
        return cond


@dataclass(frozen=True)
class Where(ColumnFunction):
    """int64 column ``out``: ``value`` (an integer column) where ``predicate`` holds,
    else 0; with ``value=None``, the indicator 1/0.

    Parameters
    ----------
    out : str
    predicate : Predicate
    value : str, optional
    """

    out: str
    predicate: Predicate
    value: str | None = None

    @property
    def outputs(self) -> Mapping[str, str]:  # type: ignore[override]
        return {self.out: "int64"}

    def pandas(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        mask = np.asarray(self.predicate.pandas(frame), dtype=bool)
        if self.value is None:
            return {self.out: mask.astype(np.int64)}
        values = np.asarray(frame[self.value].to_numpy(), dtype=np.int64)
        return {self.out: np.where(mask, values, np.int64(0))}

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> dict[str, Any] | None:
        cond = self.predicate.spark(functions, dtypes)
        if cond is None:
            return None
        then = (functions.lit(1) if self.value is None
                else functions.col(quote(self.value)).cast("long"))
        return {self.out: functions.when(cond, then).otherwise(functions.lit(0))
                .cast("long")}


def quote(name: str) -> str:
    """A column name quoted for Spark SQL (backticks)."""
    return "`" + name.replace("`", "``") + "`"


def _apply_op(left: Any, op: str, right: Any) -> Any:
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


# -- the protocol ------------------------------------------------------------------------


@runtime_checkable
class Backend(Protocol):
    """Operations over a backend-specific collection of rows with named columns.

    Every data-touching step of privot is written against this protocol only. A
    collection is opaque to the caller: it is created by :meth:`read` and transformed
    by the other methods; only :meth:`count` and :meth:`collect_to_numpy` bring values
    to the driver, and the latter only for aggregates.
    """

    name: str

    def read(self, source: Any, *, columns: Sequence[str],
             float_columns: Sequence[str] = (), sep: str | None = None,
             names: Sequence[str] | None = None) -> Any:
        """Rows of ``source`` restricted to ``columns``.

        Parameters
        ----------
        source : str, path-like or DataFrame
            A ``.csv``/``.tsv`` file (optionally compressed, ``.gz``...), any delimited
            text file when ``sep`` is given, a ``.parquet`` file or a folder of Parquet
            files, or an in-memory pandas ``DataFrame`` (Spark also takes a Spark
            ``DataFrame``).
        columns : sequence of str
            Columns to keep. A missing one raises
            :class:`~privot.errors.InvalidDataError` naming it and the columns there are.
        float_columns : sequence of str
            Subset of ``columns`` converted to float64 (rule in the module docstring).
        sep : str, optional
            Field delimiter; default from the suffix (``,`` for ``.csv``, tab for
            ``.tsv``).
        names : sequence of str, optional
            Column names of a header-less delimited file (its first line is data).

        Raises
        ------
        SourceNotFoundError
            The path does not exist.
        InvalidDataError
            A missing column, a non-numeric ``float_columns`` column, unreadable file.
        """
        ...

    def map_columns(self, data: Any, fn: ColumnFunction) -> Any:
        """``data`` with the columns ``fn`` computes added (or replaced)."""
        ...

    def filter(self, data: Any, predicate: Predicate) -> Any:
        """The rows of ``data`` where ``predicate`` holds."""
        ...

    def select(self, data: Any, columns: Sequence[str]) -> Any:
        """``data`` with only ``columns`` (in that order)."""
        ...

    def count_per_key(self, data: Any, keys: Sequence[str], *, out: str = "count") -> Any:
        """One row per distinct ``keys`` value: the keys and the number of rows (int64).

        With ``keys=()`` a single row with the total number of rows.
        """
        ...

    def sum_per_key(self, data: Any, keys: Sequence[str],
                    values: Mapping[str, str] | Sequence[str]) -> Any:
        """One row per distinct ``keys`` value: the keys and column sums.

        ``values`` maps each output name to the column it sums (a sequence keeps the
        names). With ``keys=()`` a single row (sums of an empty collection are 0).
        Integer sums are exact (int64).
        """
        ...

    def join(self, left: Any, right: Any, *, on: Sequence[str]) -> Any:
        """Inner equi-join on ``on``; ``right`` should be the smaller (an aggregate)."""
        ...

    def cache(self, data: Any) -> Any:
        """``data`` kept for reuse (materialised locally, persisted on Spark)."""
        ...

    def release(self, data: Any) -> None:
        """Free what :meth:`cache` kept (no-op where nothing is kept)."""
        ...

    def count(self, data: Any) -> int:
        """Number of rows."""
        ...

    def collect_to_numpy(self, data: Any, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """The named columns of a small aggregate as numpy arrays on the driver."""
        ...


# -- helpers shared by the backends ------------------------------------------------------


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
    for col in wanted:
        if col not in have:
            raise InvalidDataError(
                f"column {col!r} not found in {where}; available columns: {have}")


def normalise_values(values: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """``{output: input}`` from a mapping or a sequence of column names."""
    if isinstance(values, Mapping):
        return dict(values)
    if isinstance(values, str):
        return {values: values}
    return {v: v for v in values}
