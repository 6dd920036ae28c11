r"""The input of :func:`~privot.heatmaps.private_heatmap`: points to cell sums.

One column rule for every heatmap entry: a table of points has the columns
:data:`DEFAULT_USER_COLUMN`, :data:`DEFAULT_X_COLUMN`, :data:`DEFAULT_Y_COLUMN`
(``user_id``, ``longitude``, ``latitude``) unless the call names others, in
:func:`~privot.heatmaps.private_heatmap` (``user=``, ``x=``, ``y=``),
:func:`~privot.heatmaps.aggregate_user_cells` (``user_column=``, ``x_column=``,
``y_column=``) and ``privot heatmap`` (``--user-column``, ``--columns``). A table
without them is refused with a message naming its columns and how to pass them.

:func:`cell_sums_from_input` turns the three accepted inputs into the
:class:`~privot.heatmaps.aggregate.CellSums` :math:`\mathbf s = \sum_u \mathbf p_u` the
mechanisms read: a ``CellSums`` already aggregated on the grid (an engine's), a table
(a pandas or polars ``DataFrame``, a polars ``LazyFrame``, a pyarrow ``Table``, or a
mapping of columns; :mod:`privot.engines.tables`: the same cell sums, bit for bit,
whichever kind holds the rows), or ``(n,)`` arrays with ``data=None``.

Privacy
-------
Not a release: the exact aggregate, and exact counts for the curator (rows read, rows
dropped). Missing or non-numeric values make a row unusable; it is dropped and counted,
as on every other path (:mod:`privot._usable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from privot._usable import coordinate_column, swapped_axes_hint, usable_rows
from privot.engines.tables import TABLES, is_table, table_arrays, table_columns
from privot.errors import InvalidDataError, InvalidParameterError
from privot.grid import DEFAULT_USER_COLUMN, DEFAULT_X_COLUMN, DEFAULT_Y_COLUMN, Grid
from privot.heatmaps.aggregate import CellSums, user_distributions_sum

__all__ = ["DEFAULT_USER_COLUMN", "DEFAULT_X_COLUMN", "DEFAULT_Y_COLUMN",
           "cell_sums_from_input"]


_DEFAULTS = {"user": DEFAULT_USER_COLUMN, "x": DEFAULT_X_COLUMN, "y": DEFAULT_Y_COLUMN}
# coordinate column pairs a table commonly has instead of the defaults (for the hint)
_COMMON_XY = (("x", "y"), ("lon", "lat"), ("lng", "lat"), ("long", "lat"),
              ("Longitude", "Latitude"), ("LONGITUDE", "LATITUDE"))


def _how_to_name(name: str, columns: list[Any]) -> str:
    """The hint of a missing default column: the defaults and how to name others."""
    if name == "user":
        example = 'user="uid"'
    else:
        pair = next((p for p in _COMMON_XY if p[0] in columns and p[1] in columns),
                    ("x", "y"))
        example = f'x="{pair[0]}", y="{pair[1]}"'
    return (f"the default columns are {DEFAULT_USER_COLUMN}, {DEFAULT_X_COLUMN}, "
            f"{DEFAULT_Y_COLUMN} (as in aggregate_user_cells and privot heatmap); "
            f"name the table's own with user=, x=, y=, e.g. {example}")


def _column_name(name: str, value: object, columns: list[Any]) -> Any:
    """The column of ``name`` (``user``, ``x`` or ``y``), checked against ``columns``."""
    col = _DEFAULTS[name] if value is None else value
    if isinstance(col, np.ndarray) or (not isinstance(col, str) and hasattr(col, "__len__")):
        raise InvalidParameterError(name, type(col).__name__, "a column name of data (pass "
                                    "data=None to give arrays)")
    if col not in columns:
        allowed = f"a column of data; its columns are {columns}"
        if value is None:  # the default: say what it is and how to name another
            allowed += f"; {_how_to_name(name, columns)}"
        raise InvalidParameterError(name, col, allowed)
    return col


def _column(data: Any, name: str, value: object) -> np.ndarray:
    """The ``(n,)`` column ``name`` (``user``, ``x`` or ``y``) of a mapping or another
    DataFrame-like object."""
    columns = list(data.columns) if hasattr(data, "columns") else list(data.keys())
    v = data[_column_name(name, value, columns)]
    # missing values stay missing: user_distributions_sum drops such rows (the one rule)
    return v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v)


def _columns(data: Any, user: object, x: object, y: object) -> dict[str, np.ndarray]:
    """``{"user", "x", "y"}`` -> ``(n,)`` arrays from a table or from arrays."""
    given = (("user", user), ("x", x), ("y", y))
    if data is None:
        cols = {}
        for name, v in given:
            if v is None or isinstance(v, str):
                raise InvalidParameterError(
                    name, v, "an array when data is None (or pass a table (DataFrame, "
                    "pyarrow Table) or a CellSums as data)")
            cols[name] = np.asarray(v)
        return cols
    if is_table(data):  # pandas, polars, pyarrow: the same arrays from each
        columns = table_columns(data)
        names = {name: _column_name(name, v, columns) for name, v in given}
        arrays = table_arrays(data, list(names.values()))
        return {name: arrays[col] for name, col in names.items()}
    if hasattr(data, "columns") or isinstance(data, Mapping):
        return {name: _column(data, name, v) for name, v in given}
    raise InvalidParameterError("data", type(data).__name__,
                                f"{TABLES}, a mapping of columns, a CellSums "
                                "or None (with user=, x=, y= arrays)")


def cell_sums_from_input(data: Any, user: object, x: object, y: object, grid: Grid
                         ) -> tuple[CellSums, Callable[[], str] | None]:
    """The cell sums of ``data`` on ``grid``, and the curator's hint when most rows drop.

    Parameters
    ----------
    data : CellSums, table, mapping of columns, or None
        See :func:`~privot.heatmaps.private_heatmap`; a table is a pandas or polars
        ``DataFrame``, a polars ``LazyFrame`` or a pyarrow ``Table``.
    user, x, y : str, array or None
        Column names of a table (None: the defaults), ``(n,)`` arrays with
        ``data=None``, None with a ``CellSums``.
    grid : Grid
        The public grid; a ``CellSums`` must have its resolution.

    Returns
    -------
    cells : CellSums
    hint : callable () -> str, or None
        A hint naming swapped axes (curator-only; None for a ``CellSums``).

    Raises
    ------
    InvalidParameterError
        A missing column (naming the table's columns and how to name others), a column
        name where an array is expected or the reverse, an unsupported ``data``.
    InvalidDataError
        No rows, columns of different lengths or not 1-D, a ``CellSums`` of another
        resolution.
    """
    if isinstance(data, CellSums):
        for name, v in (("user", user), ("x", x), ("y", y)):
            if v is not None:
                raise InvalidParameterError(name, v, "None when data is a CellSums")
        if data.resolution != grid.resolution:
            raise InvalidDataError(f"data is a CellSums of resolution {data.resolution} but "
                                   f"grid has resolution {grid.resolution}")
        return data, None
    cols = _columns(data, user, x, y)
    for name, arr in cols.items():
        if arr.ndim != 1:
            raise InvalidDataError(f"{name} must be 1-D, got shape {arr.shape}")
    n = cols["user"].shape[0]
    if n == 0:
        raise InvalidDataError("the input has no points (0 rows); at least one is needed")
    for name in ("x", "y"):
        if cols[name].shape[0] != n:
            raise InvalidDataError(f"{name} has {cols[name].shape[0]} values but user has {n}")
    xy = np.column_stack([coordinate_column(cols["x"], "x"), coordinate_column(cols["y"], "y")])
    cells = user_distributions_sum(cols["user"], xy[:, 0], xy[:, 1], grid)

    def hint() -> str:
        return swapped_axes_hint(xy[usable_rows(xy)], grid.contains)
    return cells, hint
