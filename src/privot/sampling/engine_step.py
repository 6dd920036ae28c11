r"""The data-touching step of private sampling: each user's distribution over a grid.

In the local model every user privatises their own distribution :math:`\mu_u` over the
:math:`k = \Delta^2` cells of a public grid; a population run (``privot sample``)
computes all of them from one table of points. :func:`user_cell_counts` runs
:data:`USER_CELLS_SQL` on any :class:`~privot.engines.base.Engine` (DuckDB by default,
Spark for clusters) and returns the integer counts :math:`k_{u,c}` in compressed rows,
so :math:`\mu_u(c) = k_{u,c} / n_u`:

* the cell of a row is the heatmap step's (:func:`~privot.heatmaps.engine_step.cell_sql`:
  the float64 operations of :meth:`~privot.grid.Grid.assign` on exact
  constants), so the counts are **bit-identical on every engine** and equal to the
  in-memory :func:`user_cell_counts_in_memory`;
* rows with a missing user id or a missing, non-numeric, NaN or infinite coordinate, and
  rows outside the half-open bounds, are dropped (the rule reads only the row); a user
  id with no row inside has no distribution: it is listed apart, in
  :attr:`UserCellCounts.empty_user_ids` (the user list is every distinct id of the
  table; :func:`~privot.sampling.population.sample_population` gives such a user a
  report of the public default, so the number of reports is the length of the list);
* users are ordered by their id, cells increasingly within a user: the order does not
  depend on the engine or its partitioning.

What reaches the driver is one row per (user, occupied cell): at most the number of
rows, integers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._usable import usable_user_points
from privot.engines import Engine, get_engine
from privot.engines.base import check_source
from privot.errors import EngineResultError, InvalidParameterError
from privot.grid import (
    DEFAULT_USER_COLUMN,
    DEFAULT_X_COLUMN,
    DEFAULT_Y_COLUMN,
    Grid,
    cell_sql,
    check_point_columns,
)

__all__ = ["USER_CELLS_SQL", "UserCellCounts", "dense_distributions", "user_cell_counts",
           "user_cell_counts_in_memory"]

#: The step, for both engines: ``{source}`` has columns ``u``, ``x``, ``y``; ``{cell}``
#: is :func:`~privot.heatmaps.engine_step.cell_sql`. A row with ``cell = -2`` names a
#: user id with no row inside (no distribution); the row with ``cell = -1`` carries the
#: totals (rows read in ``k``, distinct user ids in ``u_count``).
USER_CELLS_SQL = """
WITH pts AS (SELECT u, {cell} AS cell FROM {{source}})
SELECT u, cell, count(*) AS k, CAST(0 AS BIGINT) AS u_count
FROM pts WHERE cell >= 0 GROUP BY u, cell
UNION ALL
SELECT u, CAST(-2 AS BIGINT) AS cell, CAST(0 AS BIGINT) AS k, CAST(0 AS BIGINT) AS u_count
FROM pts WHERE u IS NOT NULL GROUP BY u HAVING max(cell) < 0
UNION ALL
SELECT NULL AS u, CAST(-1 AS BIGINT) AS cell, CAST(count(*) AS BIGINT) AS k,
       CAST(count(DISTINCT u) AS BIGINT) AS u_count
FROM pts
"""


@dataclass(frozen=True)
class UserCellCounts:
    r"""Per-user cell counts in compressed rows (**not private**: the curator's input).

    Attributes
    ----------
    user_ids : (n_users,) array
        The users with at least one point inside, sorted.
    indptr : (n_users + 1,) int64 array
        User ``i``'s entries are ``cells[indptr[i]:indptr[i+1]]``.
    cells : (nnz,) int64 array
        Flat cell index ``row * Delta + col`` (row = ``y``), increasing within a user.
    counts : (nnz,) int64 array
        :math:`k_{u,c} \ge 1`.
    grid : Grid
    n_points : int
        Rows read. **Curator-only**, as the two counts below.
    n_outside : int
        Rows dropped (outside the bounds or unusable).
    n_users_empty : int
        User ids with no row inside (no distribution).
    empty_user_ids : (n_users_empty,) array
        Those user ids, sorted (default: none). With :attr:`user_ids` they make the user
        list, every distinct user id of the table: public in the local model (each user
        sends one report, :func:`~privot.sampling.population.sample_population`).
    """

    user_ids: np.ndarray
    indptr: np.ndarray
    cells: np.ndarray
    counts: np.ndarray
    grid: Grid
    n_points: int
    n_outside: int
    n_users_empty: int
    empty_user_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_users(self) -> int:
        """Users with a distribution."""
        return int(self.indptr.size - 1)

    def sizes(self) -> np.ndarray:
        """``(n_users,)`` :math:`n_u`, each user's number of rows inside."""
        return np.add.reduceat(self.counts, self.indptr[:-1]) if self.n_users else (
            np.zeros(0, dtype=np.int64))

    def distributions(self, rows: slice | np.ndarray | None = None) -> np.ndarray:
        r"""Dense distributions :math:`\mu_u(c) = k_{u,c}/n_u`, shape ``(m, Delta^2)``.

        ``rows`` picks users (a slice or indices; default all): at 8 bytes per entry a
        whole population may not fit, so callers go in batches.
        """
        users = np.arange(self.n_users)[rows if rows is not None else slice(None)]
        k, sizes = self.grid.n_cells, self.sizes()
        if users.size == 0:
            return np.zeros((0, k))
        if np.all(np.diff(users) == 1):  # a contiguous block (the usual batch): one call
            blocks = [(int(users[0]), int(users[-1]) + 1)]
        else:
            blocks = [(i, i + 1) for i in users.tolist()]
        return np.concatenate([dense_distributions(self.indptr, self.cells, self.counts,
                                                   sizes, a, b, k) for a, b in blocks])


def dense_distributions(indptr: np.ndarray, cells: np.ndarray, counts: np.ndarray,
                        sizes: np.ndarray, start: int, stop: int, k: int) -> np.ndarray:
    r""":math:`\mu_u = k_{u,\cdot} / n_u` for users ``start..stop-1`` of compressed rows,
    dense ``(stop - start, k)`` (vectorised)."""
    a, b = int(indptr[start]), int(indptr[stop])
    rows = np.repeat(np.arange(stop - start), np.diff(indptr[start:stop + 1]))
    out = np.zeros((stop - start, k))
    out[rows, cells[a:b]] = counts[a:b] / sizes[start:stop][rows]
    return out


def _compress(user: np.ndarray, cell: np.ndarray, count: np.ndarray, grid: Grid,
              n_points: int, n_ids: int, empty: np.ndarray) -> UserCellCounts:
    """Sort ``(user, cell, count)`` rows by user then cell and compress them; ``empty``:
    the user ids with no row inside."""
    ids, code = (np.unique(user, return_inverse=True) if user.size
                 else (user[:0], np.zeros(0, dtype=np.int64)))
    code = code.reshape(-1).astype(np.int64)
    order = np.lexsort((cell, code))
    code, cell, count = code[order], cell[order], count[order]
    indptr = np.searchsorted(code, np.arange(ids.size + 1)).astype(np.int64)
    inside = int(count.sum())
    empty = np.unique(empty) if empty.size else empty[:0]
    if ids.size + empty.size != n_ids:  # pragma: no cover (the step's own consistency)
        raise EngineResultError(f"user_cell_counts: {ids.size} users with a point inside and "
                           f"{empty.size} without, but {n_ids} distinct user ids")
    return UserCellCounts(user_ids=ids, indptr=indptr, cells=cell.astype(np.int64),
                          counts=count.astype(np.int64), grid=grid, n_points=n_points,
                          n_outside=n_points - inside, n_users_empty=n_ids - ids.size,
                          empty_user_ids=empty)


def user_cell_counts(source: Any, *, grid: Grid, user_column: str = DEFAULT_USER_COLUMN,
                     x_column: str = DEFAULT_X_COLUMN, y_column: str = DEFAULT_Y_COLUMN,
                     engine: str | Engine = "duckdb", spark: Any = None,
                     sep: str | None = None,
                     names: Sequence[str] | None = None) -> UserCellCounts:
    r"""Each user's cell counts over ``grid``, on DuckDB or Spark.

    Parameters
    ----------
    source : str, path-like or table
        CSV/TSV (optionally ``.gz``), Parquet, a pandas or polars ``DataFrame``, a polars
        ``LazyFrame`` or a pyarrow ``Table`` (the same counts, bit for bit, from each:
        :mod:`privot.engines.tables`; Spark: also a Spark ``DataFrame``). One row per
        point.
    grid : Grid
        The public grid; its cells are the :math:`k` input points of the mechanism.
    user_column, x_column, y_column : str
        Columns of the user id and the coordinates.
    engine : {"duckdb", "spark", "local"} or Engine, default "duckdb"
    spark : pyspark.sql.SparkSession, optional
    sep, names : optional
        Delimiter and column names of a header-less text file.

    Returns
    -------
    UserCellCounts

    Privacy
    -------
    Not a release: the exact per-user input of a local-DP mechanism, which in the
    local model each user computes alone. Unit: one user's whole distribution. The grid
    is public; the drop rule reads only the row. ``docs/privacy/sampling.md``.
    """
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    columns = check_point_columns(user_column, x_column, y_column)
    check_source(source)
    eng = get_engine(engine, spark=spark)
    got = eng.query(USER_CELLS_SQL.format(cell=cell_sql(grid)), source, columns=columns,
                    float_columns=("x", "y"), sep=sep, names=names)
    cell = np.asarray(got["cell"], dtype=np.int64)
    total = int(np.flatnonzero(cell == -1)[0])
    keep = cell >= 0
    users = np.asarray(got["u"])
    return _compress(users[keep], cell[keep],
                     np.asarray(got["k"], dtype=np.int64)[keep], grid,
                     n_points=int(got["k"][total]), n_ids=int(got["u_count"][total]),
                     empty=users[cell == -2])


def user_cell_counts_in_memory(user_ids: object, x: object, y: object,
                               grid: Grid) -> UserCellCounts:
    """:func:`user_cell_counts` on in-memory arrays (numpy; the same counts)."""
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    pts = usable_user_points(user_ids, x, y)
    assigned = grid.assign(pts.x, pts.y)
    key = pts.codes[assigned.kept] * np.int64(grid.n_cells) + assigned.cells
    pair, count = np.unique(key, return_counts=True)
    inside = np.zeros(pts.n_ids, dtype=bool)
    inside[pair // grid.n_cells] = True
    return _compress(pts.unique_ids[pair // grid.n_cells], pair % grid.n_cells, count, grid,
                     n_points=pts.n_rows, n_ids=pts.n_ids, empty=pts.unique_ids[~inside])
