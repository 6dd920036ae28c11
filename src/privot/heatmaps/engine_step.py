r"""The data-touching step of private heatmaps: one SQL text for DuckDB and Spark.

Each user's points inside the public bounds become that user's distribution over the
grid cells (weight :math:`1/n_u` per point, :math:`n_u` = the user's number of points
inside; a user with no point inside contributes nothing), and the distributions are
summed per cell:

.. math:: s(c) = \sum_u \frac{k_{u,c}}{n_u}, \qquad
          k_{u,c} = \#\{\text{points of } u \text{ in } c\}.

:func:`aggregate_user_cells` computes :math:`s` with :data:`CELL_SUMS_SQL` on any
:class:`~privot.engines.base.Engine` and returns a
:class:`~privot.heatmaps.aggregate.CellSums`; noise and reconstruction then run once,
on the driver, so the same seed gives the same release on every engine.

Bit-identical sums on every engine
----------------------------------
Floating-point sums depend on the order of summation, which differs between engines,
threads and partitionings. Here every data-dependent quantity stays an **integer**
until the last step on the driver, and integer sums are exact in any order:

1. per (user, cell): the count :math:`k_{u,c}`; per user: :math:`n_u`;
2. per (user, cell) with a point inside: :math:`V = \lfloor 2^{96} k_{u,c}/n_u\rfloor`
   as three base-:math:`2^{32}` digits by long division, exact integer division
   throughout: :math:`d_1 = \lfloor 2^{32}k/n\rfloor`, :math:`r_1 = 2^{32}k \bmod n`,
   :math:`d_2 = \lfloor 2^{32}r_1/n\rfloor`, :math:`r_2 = 2^{32}r_1 \bmod n`,
   :math:`d_3 = \lfloor 2^{32}r_2/n\rfloor`, so :math:`V = 2^{64}d_1 + 2^{32}d_2 + d_3`.
   Every operand is below :math:`2^{63}` (BIGINT) when :math:`n < 2^{31}`; a user with
   more points inside is computed in the engine's wide integer (DuckDB ``HUGEINT``,
   Spark ``DECIMAL(38,0)``; operands below :math:`2^{95}`), same digits. (BIGINT is
   the fast path: DuckDB's 128-bit division is about 15 times slower.)
3. per cell: :math:`D_i(c) = \sum d_i` in the wide integer, exact, each returned as
   two 62-bit halves (int64);
4. on the driver: :math:`S(c) = 2^{64} D_1 + 2^{32} D_2 + D_3` as an exact Python
   integer and ``sums[c] = float(S) * 2**-96``, correctly rounded.

So ``sums`` is the float64 nearest to :math:`\sum_u \lfloor 2^{96} k_{u,c}/n_u\rfloor /
2^{96}`, within :math:`m_c 2^{-96}` of the exact rational :math:`s(c)` (:math:`m_c`
users in the cell), a function of the integer table only, hence **bit-identical on every
engine, thread count and partitioning**, and equal to what the in-memory
:func:`~privot.heatmaps.aggregate.user_distributions_sum` computes (the same digits,
:func:`~privot.heatmaps.aggregate.fixed_point_digits`). What reaches the driver is one
row per occupied cell (at most :math:`\Delta^2`, no user ids) and one row of totals.

Cost: nearly all of the step is the group-by over (user, cell) pairs, which the exact
digits need (:math:`\lfloor 2^{96} k/n \rfloor` is not linear in :math:`k`, so the
counts :math:`k_{u,c}` cannot be replaced by per-point weights :math:`1/n_u`). The
digits, the three wide sums and the totals row add a few percent to the same plan run
in float arithmetic (``benchmarks/compare/heatmap.py``).

The cell assignment performs the float64 operations of
:meth:`privot.grid.Grid.assign`, in the engine's IEEE double arithmetic:
``col = min(floor((x - x_min) / cell_width), Delta - 1)`` (same for rows with ``y``),
with half-open bounds ``x_min <= x < x_max``, ``y_min <= y < y_max``; the constants
are written as exact doubles (:func:`~privot.engines.base.double_literal`).

Dropped rows
------------
A row is kept when its user id is present and both coordinates are finite numbers
inside the half-open bounds. A row with a missing user id, or a missing, non-numeric,
NaN or infinite coordinate, is **treated as outside the bounds**: dropped and counted
in ``n_outside`` (a NaN or an infinity fails the bounds comparisons on both engines).
None of this is data-dependent preprocessing: the rule depends only on the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privot.engines import Engine, get_engine
from privot.engines.base import check_source
from privot.errors import EngineResultError, InvalidParameterError
from privot.grid import Grid, cell_sql, check_point_columns
from privot.heatmaps.aggregate import DIGIT_BITS as _DIGIT
from privot.heatmaps.aggregate import FRACTION_BITS, CellSums, fixed_point_to_float
from privot.heatmaps.points import DEFAULT_USER_COLUMN, DEFAULT_X_COLUMN, DEFAULT_Y_COLUMN

__all__ = ["CELL_SUMS_SQL", "FRACTION_BITS", "aggregate_user_cells", "cell_sums_sql"]

_HALF = 62  # the per-cell wide sums come back as two int64 halves of 62 bits

#: The step, for both engines: ``{source}`` has columns ``u``, ``x``, ``y``; the cell
#: assignment ``{cell}`` (:func:`cell_sql`) and the digits are filled by
#: :func:`cell_sums_sql`. The last row (``cell = -1``) holds the totals: rows read, rows
#: inside, users with a point inside, user ids.
CELL_SUMS_SQL = """
WITH pts AS (SELECT u, {cell} AS cell FROM {{source}}),
uc AS (SELECT u, cell, count(*) AS k FROM pts GROUP BY u, cell),
users AS (
  SELECT u, CAST(sum(CASE WHEN cell >= 0 THEN k ELSE 0 END) AS BIGINT) AS n
  FROM uc WHERE u IS NOT NULL GROUP BY u
),
terms AS (
  SELECT uc.cell AS cell, uc.k AS k, nu.n AS n
  FROM uc JOIN (SELECT u, n FROM users WHERE n > 0) nu ON uc.u = nu.u
  WHERE uc.cell >= 0
),
q1 AS (SELECT cell, n, {d1} AS d1, {r1} AS r1 FROM terms),
q2 AS (SELECT cell, n, d1, {d2} AS d2, {r2} AS r2 FROM q1),
cells AS (
  SELECT cell, sum(CAST(d1 AS {{wide}})) AS s1, sum(CAST(d2 AS {{wide}})) AS s2,
         sum(CAST({d3} AS {{wide}})) AS s3
  FROM q2 GROUP BY cell
)
SELECT cell,
       CAST(s1 {{div}} {half} AS BIGINT) AS a1, CAST(s1 % {half} AS BIGINT) AS a0,
       CAST(s2 {{div}} {half} AS BIGINT) AS b1, CAST(s2 % {half} AS BIGINT) AS b0,
       CAST(s3 {{div}} {half} AS BIGINT) AS c1, CAST(s3 % {half} AS BIGINT) AS c0
FROM cells
UNION ALL
SELECT CAST(-1 AS BIGINT) AS cell, a.rows AS a1, b.inside AS a0, b.users AS b1,
       b.ids AS b0, CAST(0 AS BIGINT) AS c1, CAST(0 AS BIGINT) AS c0
FROM (SELECT CAST(coalesce(sum(k), 0) AS BIGINT) AS rows FROM uc) a
CROSS JOIN (
  SELECT CAST(coalesce(sum(n), 0) AS BIGINT) AS inside,
         CAST(coalesce(sum(CASE WHEN n > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS users,
         CAST(count(*) AS BIGINT) AS ids
  FROM users
) b
"""


def _digit(x: str, op: str) -> str:
    """SQL of ``floor(x * 2**32 / n)`` (``op = "{div}"``) or ``x * 2**32 mod n``
    (``op = "%"``) for ``0 <= x <= n``: in BIGINT when ``n < 2**31`` (then
    ``x * 2**32 < 2**63``), else in the engine's wide integer; both exact."""
    p = str(1 << _DIGIT)
    return (f"CASE WHEN n < {1 << 31} THEN ({x} * {p}) {op} n "
            f"ELSE CAST((CAST({x} AS {{wide}}) * {p}) {op} n AS BIGINT) END")


def cell_sums_sql(grid: Grid) -> str:
    """:data:`CELL_SUMS_SQL` with the constants of ``grid`` (engine tokens left)."""
    return CELL_SUMS_SQL.format(
        cell=cell_sql(grid),
        d1=_digit("k", "{div}"), r1=_digit("k", "%"), d2=_digit("r1", "{div}"),
        r2=_digit("r1", "%"), d3=_digit("r2", "{div}"), half=str(1 << _HALF))


def _exact(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Python integers ``hi * 2**62 + lo`` (object array)."""
    return (np.asarray(hi, dtype=np.int64).astype(object) << _HALF) + np.asarray(
        lo, dtype=np.int64).astype(object)


def _to_float(got: dict[str, np.ndarray]) -> np.ndarray:
    """Correctly rounded float64 of the exact fixed-point cell sums (driver side)."""
    return fixed_point_to_float(_exact(got["a1"], got["a0"]), _exact(got["b1"], got["b0"]),
                                _exact(got["c1"], got["c0"]))


def aggregate_user_cells(source: Any, *, grid: Grid, user_column: str = DEFAULT_USER_COLUMN,
                         x_column: str = DEFAULT_X_COLUMN, y_column: str = DEFAULT_Y_COLUMN,
                         engine: str | Engine = "duckdb", spark: Any = None,
                         sep: str | None = None,
                         names: Sequence[str] | None = None) -> CellSums:
    r"""Sum of the users' distributions over ``grid``, on DuckDB or Spark.

    Parameters
    ----------
    source : str, path-like or table
        A ``.csv``/``.tsv`` file, optionally ``.gz`` (header line unless ``names``), a
        ``.parquet`` file or folder, an in-memory table (a pandas or polars
        ``DataFrame``, a polars ``LazyFrame`` or a pyarrow ``Table``: the same sums, bit
        for bit, from each; :mod:`privot.engines.tables`), or (Spark engine) a Spark
        ``DataFrame``. One row per point.
    grid : Grid
        The public grid (bounds and :math:`\Delta`).
    user_column, x_column, y_column : str
        Columns of the user id and of the coordinates (``x`` = longitude for
        geographic data), by default ``user_id``, ``longitude``, ``latitude``: the one
        column rule of :mod:`privot.heatmaps.points`, shared with
        :func:`~privot.heatmaps.private_heatmap`. In text files the user id is the
        field's text.
    engine : {"duckdb", "spark", "local"} or Engine, default "duckdb"
        Where to run (``"local"`` = ``"duckdb"``); an
        :class:`~privot.engines.base.Engine` instance is used as is.
    spark : pyspark.sql.SparkSession, optional
        Session for ``engine="spark"`` (default: the active one, else a new one).
    sep : str, optional
        Delimiter of a text file (default from the suffix).
    names : sequence of str, optional
        Column names of a header-less text file, e.g.
        :data:`privot.datasets.GOWALLA_NYC_COLUMNS` for the Gowalla check-ins.

    Returns
    -------
    CellSums
        ``sums[row, col]`` = :math:`s(c)`, bit-identical on every engine (module
        docstring); ``n_users`` users with a point inside (``sums`` adds up to it),
        ``n_points`` rows read, ``n_outside`` rows dropped (outside the bounds or
        unusable, see the module docstring), ``n_users_empty`` user ids with no point
        inside. The counts are curator-only diagnostics, not private.

    Raises
    ------
    SourceNotFoundError
        If the file does not exist.
    InvalidDataError
        A column is missing (the message names it and the columns there are), a
        coordinate column is not numeric, the file cannot be parsed.
    InvalidParameterError
        Bad ``grid``, column names, ``engine``, ``sep`` or ``names``.
    MissingExtraError
        pyspark (extra ``spark``) missing for the Spark engine.

    Privacy
    -------
    Not a release: the exact aggregate that the heatmap mechanisms are applied to.
    Unit of privacy: a user (all of their rows). Each user's distribution has L1 norm 1
    (or 0 with no point inside), so under add/remove-one-user any block sum of
    ``sums`` has L1 sensitivity 1; the bounds and :math:`\Delta` are public
    parameters, and the drop rule depends on each row alone.
    ``docs/privacy/heatmaps.md``.

    Examples
    --------
    >>> from privot.datasets import GOWALLA_NYC_COLUMNS, data_file
    >>> grid = Grid(bounds=(-74.26, -73.70, 40.48, 40.92), resolution=256)
    >>> cs = aggregate_user_cells(data_file("gowalla_nyc/checkins.tsv"), grid=grid,
    ...                           names=GOWALLA_NYC_COLUMNS)  # doctest: +SKIP
    """
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    columns = check_point_columns(user_column, x_column, y_column)
    check_source(source)
    eng = get_engine(engine, spark=spark)
    got = eng.query(cell_sums_sql(grid), source, columns=columns,
                    float_columns=("x", "y"), sep=sep, names=names)
    cell = np.asarray(got["cell"], dtype=np.int64)
    total = np.flatnonzero(cell < 0)
    if total.size != 1:  # pragma: no cover - the query always ends with one totals row
        raise EngineResultError(f"aggregate_user_cells: the cell-sums query returned "
                                f"{total.size} totals rows, expected 1")
    t = int(total[0])
    n_points, n_inside, n_users, n_ids = (int(got[c][t]) for c in ("a1", "a0", "b1", "b0"))
    keep = cell >= 0
    sums = np.zeros(grid.n_cells)
    if keep.any():
        sums[cell[keep]] = _to_float({k: np.asarray(v)[keep] for k, v in got.items()})
    d = grid.resolution
    return CellSums(sums=sums.reshape(d, d), n_users=n_users, n_points=n_points,
                    n_outside=n_points - n_inside, n_users_empty=n_ids - n_users)
