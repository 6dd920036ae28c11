r"""The public grid in the engines' SQL: :func:`cell_sql`, and :class:`Grid` re-exported.

:class:`~privot.bounds.Grid` (a caller's rectangle mapped to a
:math:`\Delta\times\Delta` grid of cells) lives in :mod:`privot.bounds` beside
:class:`~privot.bounds.PublicBounds`; this module keeps its import path and holds the
grid's cell assignment written once as SQL (:data:`CELL_SQL`, :func:`cell_sql`), for the
engine steps of the capabilities that read user points over public cells (heatmaps and
sampling), and the check of their point columns.

Privacy
-------
No release here. The grid is public by assumption; the SQL assigns each row by a rule
reading that row alone (the float operations of :meth:`Grid.assign`).
"""

from __future__ import annotations

from privot.bounds import ASPECTS, CellAssignment, Grid
from privot.engines.base import double_literal
from privot.errors import InvalidParameterError

__all__ = ["ASPECTS", "CELL_SQL", "DEFAULT_USER_COLUMN", "DEFAULT_X_COLUMN", "DEFAULT_Y_COLUMN",
           "Grid", "CellAssignment", "cell_sql", "check_point_columns"]

# -- the one column rule of a table of user points (heatmaps, sampling, the CLI) --------

#: The user-id column of a table of points, unless named (library, engines and CLI).
DEFAULT_USER_COLUMN = "user_id"
#: The x column (longitude for geographic data), unless named.
DEFAULT_X_COLUMN = "longitude"
#: The y column (latitude for geographic data), unless named.
DEFAULT_Y_COLUMN = "latitude"


# -- the same assignment in SQL, for the engine steps over a grid (heatmaps, sampling) --


#: The cell of a row (columns ``u``, ``x``, ``y``): the float64 operations of
#: :meth:`Grid.assign`; -1 for a row outside the bounds or unusable.
CELL_SQL = """CASE WHEN u IS NOT NULL AND x >= {x0} AND x < {x1} AND y >= {y0} AND y < {y1}
              THEN least(CAST(floor((y - {y0}) / {h}) AS BIGINT), {dm1}) * {d}
                   + least(CAST(floor((x - {x0}) / {w}) AS BIGINT), {dm1})
              ELSE -1 END"""


def cell_sql(grid: Grid) -> str:
    """:data:`CELL_SQL` with the constants of ``grid`` (exact doubles): the one cell
    assignment of every engine step over a grid (heatmaps, sampling)."""
    x0, x1, y0, y1 = (float(v) for v in grid.bounds)
    d = grid.resolution
    return CELL_SQL.format(
        x0=double_literal(x0), x1=double_literal(x1), y0=double_literal(y0),
        y1=double_literal(y1), w=double_literal(grid.cell_width),
        h=double_literal(grid.cell_height), d=int(d), dm1=int(d) - 1)


def check_point_columns(user_column: str, x_column: str, y_column: str) -> dict[str, str]:
    """``{"u": user_column, "x": x_column, "y": y_column}`` after checking the names."""
    cols = {"user_column": user_column, "x_column": x_column, "y_column": y_column}
    for name, value in cols.items():
        if not isinstance(value, str) or not value:
            raise InvalidParameterError(name, value, "a column name (non-empty str)")
    if len(set(cols.values())) != 3:
        raise InvalidParameterError("user_column/x_column/y_column", tuple(cols.values()),
                                    "three different columns")
    return {"u": user_column, "x": x_column, "y": y_column}
