"""In-memory tables as inputs: pandas, polars and pyarrow, recognised by duck typing.

Every entry point that reads a table of rows (the engines' ``source``, the heatmaps'
``data``, the barycenters' groups) accepts

* a pandas ``DataFrame`` (or a subclass, e.g. a GeoPandas ``GeoDataFrame``),
* a polars ``DataFrame`` or ``LazyFrame`` (a lazy frame is collected, only the columns
  the step reads),
* a pyarrow ``Table`` or ``RecordBatch``,

and reads the same values from each: a polars or Arrow table gives the same release,
bit for bit, as the pandas ``DataFrame`` holding the same columns (a null is a missing
value, as a pandas ``NaN``/``None`` is).

An object is recognised by the module of its class (``pandas``, ``polars``,
``pyarrow``), so nothing here imports pandas, polars or pyarrow: a library is only used
through the object the caller passed, which it already imported. DuckDB scans all
three in place (``con.register``; a polars frame goes through Arrow, so it needs
pyarrow); the in-memory paths take one numpy array per column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from privot._optional import require

__all__ = ["TABLES", "TableKind", "describe_table", "is_table", "select_columns",
           "table_arrays", "table_columns", "table_kind", "table_matrix", "to_pandas"]

#: What the table inputs are, for messages listing the accepted inputs.
TABLES = "a pandas or polars DataFrame (or polars LazyFrame) or a pyarrow Table"

TableKind = Literal["pandas", "polars", "polars-lazy", "arrow"]

# (top-level module, class name) -> kind; the class or one of its bases must match
_KINDS: dict[tuple[str, str], TableKind] = {
    ("pandas", "DataFrame"): "pandas",
    ("polars", "DataFrame"): "polars",
    ("polars", "LazyFrame"): "polars-lazy",
    ("pyarrow", "Table"): "arrow",
    ("pyarrow", "RecordBatch"): "arrow",
}
_NAMES = {"pandas": "the DataFrame", "polars": "the polars DataFrame",
          "polars-lazy": "the polars LazyFrame", "arrow": "the pyarrow {}"}


def table_kind(obj: object) -> TableKind | None:
    """``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"arrow"``, or None for anything
    else (never imports pandas, polars or pyarrow)."""
    for cls in type(obj).__mro__:
        kind = _KINDS.get((cls.__module__.partition(".")[0], cls.__name__))
        if kind is not None:
            return kind
    return None


def is_table(obj: object) -> bool:
    """Whether ``obj`` is one of the accepted in-memory tables (module docstring)."""
    return table_kind(obj) is not None


def describe_table(obj: object) -> str:
    """How messages name the table: ``"the DataFrame"`` (pandas), ``"the polars
    DataFrame"``, ``"the polars LazyFrame"``, ``"the pyarrow Table"``."""
    kind = table_kind(obj)
    if kind is None:
        return f"the {type(obj).__name__}"
    return _NAMES[kind].format(type(obj).__name__)


def table_columns(table: Any) -> list[str]:
    """The column names of a table (a LazyFrame's from its schema, without collecting)."""
    kind = table_kind(table)
    if kind == "polars-lazy":
        return [str(c) for c in table.collect_schema().names()]
    if kind == "arrow":
        return [str(c) for c in table.schema.names]
    return [str(c) for c in table.columns]


def select_columns(table: Any, columns: Sequence[str]) -> Any:
    """The table restricted to ``columns`` (distinct, in that order), of the same kind
    (a LazyFrame stays lazy)."""
    cols = list(dict.fromkeys(columns))
    kind = table_kind(table)
    # polars (lazy or not) and pyarrow Tables/RecordBatches all select by name
    return table[cols] if kind == "pandas" else table.select(cols)


def _collected(table: Any, columns: Sequence[str]) -> Any:
    """``columns`` of a table, a LazyFrame collected (an eager table as it is)."""
    if table_kind(table) == "polars-lazy":
        return table.select(list(dict.fromkeys(columns))).collect()
    return table


def table_arrays(table: Any, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """``{column: (n,) array}``, as pandas' ``df[column].to_numpy()`` gives it.

    Numbers keep their numpy type (an integer column with nulls becomes float64 with
    NaN, as in pandas), text is an object array; a null is ``None`` or NaN, a missing
    value either way (:mod:`privot._usable`).
    """
    kind = table_kind(table)
    table = _collected(table, columns)
    out = {}
    for col in dict.fromkeys(columns):
        if kind == "pandas":
            out[col] = table[col].to_numpy()
        elif kind in ("polars", "polars-lazy"):
            out[col] = table.get_column(col).to_numpy()
        else:  # pyarrow: a ChunkedArray (Table) or an Array (RecordBatch)
            out[col] = table.column(col).to_numpy(zero_copy_only=False)
    return out


def table_matrix(table: Any) -> Any:
    """Every column of a table side by side, ``(n, d)``, as ``numpy.array`` reads it.

    A pandas ``DataFrame`` is returned as it is (numpy reads it); a polars or pyarrow
    table becomes ``numpy.column_stack`` of its columns (:func:`table_arrays`'s arrays,
    in the table's order), which numpy then converts as it converts the pandas frame.
    """
    kind = table_kind(table)
    if kind == "pandas":
        return table
    if kind == "polars-lazy":
        table = table.collect()
    if kind in ("polars", "polars-lazy"):
        cols = [s.to_numpy() for s in table.get_columns()]
    else:  # by position: an Arrow table may repeat a name
        cols = [table.column(i).to_numpy(zero_copy_only=False)
                for i in range(table.num_columns)]
    if not cols:
        return np.zeros((table.height if kind != "arrow" else table.num_rows, 0))
    return np.column_stack(cols)


def to_pandas(table: Any, columns: Sequence[str]) -> Any:
    """``columns`` of a table as a pandas ``DataFrame`` (for engines that take pandas
    only, e.g. Spark); polars and pyarrow convert through Arrow."""
    kind = table_kind(table)
    selected = select_columns(table, columns)
    if kind == "pandas":
        return selected
    require("pandas", "spark")
    if kind in ("polars", "polars-lazy"):
        require("pyarrow", "spark")
        return _collected(selected, columns).to_pandas()
    return selected.to_pandas()
