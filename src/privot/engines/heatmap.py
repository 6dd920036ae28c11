r"""The data-touching step of private heatmaps, written once over the backend protocol.

Each user's points inside the public bounds become that user's distribution over the
grid cells (weight :math:`1/n_u` per point, :math:`n_u` = the user's number of points
inside; a user with no point inside contributes nothing), and the distributions are
summed per cell:

.. math:: s(c) = \sum_u \frac{k_{u,c}}{n_u}, \qquad
          k_{u,c} = \#\{\text{points of } u \text{ in } c\}.

:func:`aggregate_user_cells` computes :math:`s` on any
:class:`~privot.engines.base.Backend` and returns a
:class:`~privot.heatmaps.aggregate.CellSums`; noise and reconstruction then run once,
on the driver, so the same seed gives the same release on every backend.

Bit-identical sums on every backend
-----------------------------------
Floating-point sums depend on the order of summation, which differs between backends
(and between chunkings, and between Spark partitionings). Here every data-dependent
quantity stays an **integer** until the last step on the driver, and integer sums are
exact in any order:

1. per (user, cell): the count :math:`k_{u,c}` (integer); per user: :math:`n_u`;
2. per (user, cell) row: the quotient :math:`k_{u,c}/n_u` as a fixed-point number with
   96 fractional bits, truncated: the integer part :math:`q` and the fractional digits
   :math:`f_1, \dots, f_L` in base :math:`2^b` (:math:`bL = 96`; with :math:`n` the
   number of points inside, :math:`b` is the largest divisor of 96 with
   :math:`n\,2^b < 2^{63}`, so no remainder shift and no per-cell digit sum overflows
   int64), computed by exact integer division where the data is (executors);
3. per cell: the sums :math:`Q(c) = \sum q`, :math:`F_i(c) = \sum f_i` (int64, exact);
4. on the driver: :math:`V(c) = Q\,2^{96} + \sum_i F_i\, 2^{96 - ib}` as an exact Python
   integer and ``sums[c] = float(V) * 2**-96``, correctly rounded.

So ``sums`` is the float64 nearest to :math:`\sum_u \lfloor 2^{96} k_{u,c}/n_u\rfloor /
2^{96}`, which is within :math:`m_c 2^{-96}` of the exact rational :math:`s(c)`
(:math:`m_c` users in the cell): the correctly rounded :math:`s(c)` except in cases
closer than that to a rounding boundary. It is a function of the integer table only,
hence **bit-identical on every backend, chunk size and partitioning**. What reaches the
driver is that per-cell table: at most :math:`\Delta^2` rows of :math:`2 + L` integers
(no user ids), plus one row of totals.

The cell assignment uses the same float64 operations everywhere:
``col = min(floor((x - x_min) / cell_width), Delta - 1)`` (same for rows with ``y``)
with half-open bounds ``x_min <= x < x_max``, ``y_min <= y < y_max``, exactly as
:meth:`privot.heatmaps.grid.Grid.assign` (which the local engine calls); Spark
evaluates the same expression natively in IEEE double arithmetic.

Dropped rows
------------
A row is kept when its user id is present and both coordinates are finite numbers
inside the half-open bounds. A row with a missing user id, or a missing, non-numeric,
NaN or infinite coordinate, is **treated as outside the bounds**: dropped and counted
in ``n_outside`` (:meth:`Grid.assign` itself refuses NaN; at scale a documented drop
rule is more useful than an error on row 7,312,004). None of this is data-dependent
preprocessing: the rule depends only on the row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.engines import get_backend
from privot.engines.base import Backend, ColumnFunction, Compare, NotNull, Where, quote
from privot.errors import InvalidParameterError
from privot.heatmaps.aggregate import CellSums
from privot.heatmaps.grid import Grid

__all__ = ["FRACTION_BITS", "CellIndex", "FixedPointQuotient", "aggregate_user_cells"]

#: Fractional bits of the fixed-point quotients k/n_u (see the module docstring).
FRACTION_BITS = 96
#: Cell code of a row with a missing user id.
MISSING_USER = -2
#: Cell code of a row outside the bounds or with an unusable coordinate.
OUTSIDE = -1

_CELL = "_privot_cell"
_COUNT = "_privot_count"
_NU = "_privot_n_u"
_Q = "_privot_q"
_IN = "_privot_inside"
_ALL = "_privot_all"
_HAS = "_privot_has_inside"
_NAMED = "_privot_named"
_LIMB_BITS = (48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1)  # divisors of FRACTION_BITS


@dataclass(frozen=True)
class CellIndex(ColumnFunction):
    """Flat cell index ``row * Delta + col`` of each row, or a negative code.

    ``-1`` (:data:`OUTSIDE`): a coordinate is missing, NaN/inf or outside the
    half-open bounds; ``-2`` (:data:`MISSING_USER`): the user id is missing. The float
    arithmetic is that of :meth:`Grid.assign` on both the pandas and the Spark path.
    """

    grid: Grid
    user: str
    x: str
    y: str
    out: str = _CELL

    @property
    def outputs(self) -> Mapping[str, str]:  # type: ignore[override]
        return {self.out: "int64"}

    def pandas(self, frame: Any) -> dict[str, np.ndarray]:
        xs = np.asarray(frame[self.x].to_numpy(dtype=np.float64, na_value=np.nan))
        ys = np.asarray(frame[self.y].to_numpy(dtype=np.float64, na_value=np.nan))
        finite = np.isfinite(xs) & np.isfinite(ys)
        cell = np.full(xs.shape[0], OUTSIDE, dtype=np.int64)
        where = np.flatnonzero(finite)
        assigned = self.grid.assign(xs[where], ys[where])
        cell[where[assigned.kept]] = assigned.cells
        cell[np.asarray(frame[self.user].isna().to_numpy(), dtype=bool)] = MISSING_USER
        return {self.out: cell}

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> dict[str, Any]:
        F = functions
        x0, x1, y0, y1 = (float(v) for v in self.grid.bounds)
        d = self.grid.resolution
        x, y = F.col(quote(self.x)), F.col(quote(self.y))
        inside = (~F.isnan(x) & ~F.isnan(y) & (x >= F.lit(x0)) & (x < F.lit(x1))
                  & (y >= F.lit(y0)) & (y < F.lit(y1)))
        col = F.least(F.floor((x - F.lit(x0)) / F.lit(float(self.grid.cell_width))),
                      F.lit(d - 1).cast("long"))
        row = F.least(F.floor((y - F.lit(y0)) / F.lit(float(self.grid.cell_height))),
                      F.lit(d - 1).cast("long"))
        user = F.col(quote(self.user))
        missing = user.isNull()
        if dtypes.get(self.user) in ("double", "float"):
            missing = missing | F.isnan(user)
        cell = (F.when(missing, F.lit(MISSING_USER))
                .when(inside, row * F.lit(d).cast("long") + col)
                .otherwise(F.lit(OUTSIDE)).cast("long"))
        return {self.out: cell}


@dataclass(frozen=True)
class FixedPointQuotient(ColumnFunction):
    """``num / den`` as an integer part and base-``2**limb_bits`` fractional digits.

    The digits are those of the exact quotient truncated to ``FRACTION_BITS``
    fractional bits, computed by exact int64 division (``0 <= num``, ``1 <= den``,
    ``den * 2**limb_bits < 2**63``).
    """

    num: str
    den: str
    limb_bits: int
    prefix: str = _Q

    @property
    def n_limbs(self) -> int:
        return FRACTION_BITS // self.limb_bits

    @property
    def names(self) -> list[str]:
        """Integer part, then the digits, most significant first."""
        return [self.prefix] + [f"{self.prefix}_f{i}" for i in range(1, self.n_limbs + 1)]

    @property
    def outputs(self) -> Mapping[str, str]:  # type: ignore[override]
        return {name: "int64" for name in self.names}

    def pandas(self, frame: Any) -> dict[str, np.ndarray]:
        num = np.asarray(frame[self.num].to_numpy(), dtype=np.int64)
        den = np.asarray(frame[self.den].to_numpy(), dtype=np.int64)
        q, r = np.divmod(num, den)
        out = {self.names[0]: q}
        for name in self.names[1:]:
            digit, r = np.divmod(r << self.limb_bits, den)
            out[name] = digit
        return out

    def spark(self, functions: Any, dtypes: Mapping[str, str]) -> dict[str, Any]:
        F = functions
        num, den = quote(self.num), quote(self.den)
        out = {self.names[0]: F.expr(f"{num} div {den}")}
        rem = f"({num} % {den})"
        for name in self.names[1:]:
            shifted = f"shiftleft({rem}, {self.limb_bits})"
            out[name] = F.expr(f"{shifted} div {den}")
            rem = f"({shifted} % {den})"
        return out


def _limb_bits(bound: int) -> int:
    """Largest digit width with ``bound * 2**bits < 2**63`` (``bound`` >= every n_u
    and every per-cell row count)."""
    room = 63 - max(int(bound), 1).bit_length()
    for bits in _LIMB_BITS:
        if bits <= room:
            return bits
    raise InvalidParameterError("source", f"{bound} points",  # pragma: no cover
                                "fewer than 2**62 points inside the bounds")


def _to_float(parts: dict[str, np.ndarray], fn: FixedPointQuotient) -> np.ndarray:
    """Correctly rounded float64 of the exact fixed-point sums (driver side)."""
    names = fn.names
    total = np.asarray(parts[names[0]], dtype=np.int64).astype(object) << FRACTION_BITS
    for i, name in enumerate(names[1:], start=1):
        digits = np.asarray(parts[name], dtype=np.int64).astype(object)
        total = total + (digits << (FRACTION_BITS - i * fn.limb_bits))
    return np.ldexp(total.astype(np.float64), -FRACTION_BITS)


def cell_sums(backend: Backend, source: Any, *, grid: Grid, user_column: str,
              x_column: str, y_column: str, sep: str | None = None,
              names: Sequence[str] | None = None) -> CellSums:
    """:func:`aggregate_user_cells` on an explicit backend (no argument defaults).

    The raw rows are read once, into per-(user, cell) counts that are cached; all the
    rest works on aggregates (on Spark: two actions, the totals and the per-cell sums).
    """
    b = backend
    user = user_column
    rows = b.read(source, columns=[user, x_column, y_column],
                  float_columns=[x_column, y_column], sep=sep, names=names)
    rows = b.map_columns(rows, CellIndex(grid, user, x_column, y_column))
    # (user, cell) -> k_uc; cell < 0 for dropped rows. _IN: k_uc for kept rows, else 0
    per_user_cell = b.map_columns(b.count_per_key(rows, [user, _CELL], out=_COUNT),
                                  Where(_IN, Compare(_CELL, ">=", 0), _COUNT))
    per_user_cell = b.cache(per_user_cell)
    cached = [per_user_cell]
    try:
        # user -> n_u (points inside) and all their rows; the null id is one group
        per_user = b.sum_per_key(per_user_cell, [user], {_NU: _IN, _ALL: _COUNT})
        per_user = b.map_columns(per_user, Where(_HAS, Compare(_NU, ">", 0)))
        per_user = b.cache(b.map_columns(per_user, Where(_NAMED, NotNull(user))))
        cached.append(per_user)
        totals = b.collect_to_numpy(
            b.sum_per_key(per_user, (), {_ALL: _ALL, _NU: _NU, _HAS: _HAS, _NAMED: _NAMED}),
            [_ALL, _NU, _HAS, _NAMED])
        n_points, n_inside, n_users, n_ids = (
            int(totals[c][0]) if len(totals[c]) else 0 for c in (_ALL, _NU, _HAS, _NAMED))
        sums = np.zeros(grid.n_cells)
        if n_inside:
            quotient = FixedPointQuotient(_COUNT, _NU, _limb_bits(n_inside))
            kept = b.select(b.filter(per_user_cell, Compare(_CELL, ">=", 0)),
                            [user, _CELL, _COUNT])
            users = b.select(b.filter(per_user, Compare(_NU, ">", 0)), [user, _NU])
            terms = b.map_columns(b.join(kept, users, on=[user]), quotient)
            per_cell = b.sum_per_key(terms, [_CELL], quotient.names)
            got = b.collect_to_numpy(per_cell, [_CELL, *quotient.names])
            sums[np.asarray(got[_CELL], dtype=np.int64)] = _to_float(got, quotient)
    finally:
        for data in cached:
            b.release(data)
    d = grid.resolution
    return CellSums(sums=sums.reshape(d, d), n_users=n_users, n_points=n_points,
                    n_outside=n_points - n_inside, n_users_empty=n_ids - n_users)


def aggregate_user_cells(source: Any, *, grid: Grid, user_column: str = "user_id",
                         x_column: str = "longitude", y_column: str = "latitude",
                         engine: str | Backend = "local", chunk_size: int = 1_000_000,
                         spark: Any = None, sep: str | None = None,
                         names: Sequence[str] | None = None) -> CellSums:
    r"""Sum of the users' distributions over ``grid``, on a local or Spark engine.

    Parameters
    ----------
    source : str, path-like or DataFrame
        A ``.csv``/``.tsv`` file (header line unless ``names``), a ``.parquet`` file or
        folder, an in-memory pandas ``DataFrame``, or (Spark engine) a Spark
        ``DataFrame``. One row per point.
    grid : Grid
        The public grid (bounds and :math:`\Delta`).
    user_column, x_column, y_column : str
        Columns of the user id and of the coordinates (``x`` = longitude for
        geographic data). In text files the user id is the field's text.
    engine : {"local", "spark"} or Backend, default "local"
        Where to run; a :class:`~privot.engines.base.Backend` instance is used as is.
    chunk_size : int, default 1_000_000
        Rows per chunk for the local engine (memory bound); ignored otherwise.
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
        ``sums[row, col]`` = :math:`s(c)`, bit-identical on every engine and chunk size
        (module docstring); ``n_users`` users with a point inside (``sums`` adds up to
        it), ``n_points`` rows read, ``n_outside`` rows dropped (outside the bounds or
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
        Bad ``grid``, column names, ``engine``, ``chunk_size``, ``sep`` or ``names``.
    MissingExtraError
        pandas/pyarrow (extra ``datasets``) or pyspark (extra ``spark``) missing.

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
    cols = {"user_column": user_column, "x_column": x_column, "y_column": y_column}
    for name, value in cols.items():
        if not isinstance(value, str) or not value:
            raise InvalidParameterError(name, value, "a column name (non-empty str)")
        if value.startswith("_privot_"):
            raise InvalidParameterError(name, value, "a name not starting with '_privot_'")
    if len(set(cols.values())) != 3:
        raise InvalidParameterError("user_column/x_column/y_column", tuple(cols.values()),
                                    "three different columns")
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if source is None or not (isinstance(source, (str, os.PathLike))
                              or hasattr(source, "columns")):
        raise InvalidParameterError("source", type(source).__name__,
                                    "a path to a CSV/TSV/Parquet file or a DataFrame")
    backend = get_backend(engine, chunk_size=chunk_size, spark=spark)
    return cell_sums(backend, source, grid=grid, user_column=user_column,
                     x_column=x_column, y_column=y_column, sep=sep, names=names)
