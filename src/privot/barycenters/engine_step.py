r"""The data-touching step of the private coreset: one SQL text for DuckDB and Spark.

The Private Measure Mechanism (:mod:`privot.barycenters.coresets`) reads the data only
through the exact number of points of each group in each leaf of the public binary
partition. :func:`coreset_leaf_counts` computes those counts with
:data:`LEAF_COUNTS_SQL` on any :class:`~privot.engines.base.Engine`; the noise, the
consistency pass and the placement then run once on the driver
(:func:`~privot.barycenters.coresets.coreset_from_leaf_counts`), so a seeded release is
identical whichever engine counted, and identical to the in-memory
:func:`~privot.barycenters.coresets.private_coreset` on the same rows.

Two ways to find a row's leaf, both bit-identical to the in-memory path:

* **Box bounds: pure SQL** (:data:`BOX_CELLS_SQL`, :func:`box_cells_sql`). The engine
  computes, per coordinate, the float64 operations of
  :meth:`PublicBounds.unit_and_moved` and :func:`~privot.barycenters.coresets.leaf_index`
  in the same order (clip into the box, ``(x - centre) * scale``, clip into the cell
  box, ``(u - lo) / (hi - lo)``, times :math:`2^{m_c}`, floor, clip), each constant
  written as an exact double: IEEE double arithmetic gives the same bits in numpy,
  DuckDB and the JVM. It groups by the cell indices :math:`k_c`; the driver
  interleaves their bits into leaf ids
  (:func:`~privot.barycenters.coresets.interleave_cells`). Measured 8x faster than the
  row function on DuckDB (``benchmarks/README.md``): no Arrow batch crosses into
  Python.
* **Ball bounds: a numpy row function**, :func:`leaf_codes` (a
  :class:`~privot.engines.base.VectorFunction`: DuckDB calls it on Arrow batches, Spark
  as a pandas UDF), which calls :meth:`PublicBounds.unit_and_moved` (radial projection
  with a scaled norm) and :func:`~privot.barycenters.coresets.leaf_index`: the very
  functions of the in-memory path. Its text is :data:`LEAF_COUNTS_SQL`.

Either way one ``GROUP BY`` of integers, exact on every engine; what reaches the driver
is at most ``groups x 2^(depth + 1)`` rows of integers.

Rows with a missing, non-numeric, NaN or infinite coordinate
---------------------------------------------------------------
The one rule of :mod:`privot._usable`, as on the in-memory path: such a row is
*unusable*, counted in no leaf and in ``n_unusable`` (curator-only), and it still counts
in the public group size ``n`` (the replace-one relation keeps group sizes public;
replacing a usable row by an unusable one changes one leaf count by one, within the
sensitivity of the level counts). The rule reads only the row itself. A missing group
value is a group of its own (key ``None``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from privot._usable import usable_rows
from privot._validation import check_int, renamed_argument
from privot.barycenters.coresets import (
    MAX_DEPTH,
    PrivateCoreset,
    _splits,
    coreset_from_leaf_counts,
    interleave_cells,
    leaf_index,
)
from privot.barycenters.geometry import PublicBounds
from privot.engines import Engine, VectorFunction, get_engine
from privot.engines.base import check_source, double_literal
from privot.errors import InvalidParameterError

__all__ = ["BOX_CELLS_SQL", "LEAF_COUNTS_SQL", "CoresetLeafCounts", "box_cells_sql",
           "coreset_leaf_counts", "leaf_codes"]

#: Code of an unusable row (in no leaf); a usable row's code is ``2 * leaf + clipped``.
UNUSABLE = -1

#: The step, for both engines: ``{source}`` has the group column ``g`` (``{group}`` is
#: ``g``, or the constant ``0`` without groups) and the coordinates ``c0``...
#: (``{args}``), which the row function ``{leaf}`` (:func:`leaf_codes`) reads.
LEAF_COUNTS_SQL = """
SELECT g, code, count(*) AS k
FROM (SELECT {group} AS g, {{leaf}}({args}) AS code FROM {{source}}) r
GROUP BY g, code
"""

#: The pure-SQL step for box bounds: ``{usable}``, ``{cells}`` (the cell index of each
#: halved coordinate, ``k0``...) and ``{moved}`` are filled by :func:`box_cells_sql`; an
#: unusable row has every ``k`` equal to -1.
BOX_CELLS_SQL = """
SELECT g, {keys}, moved, count(*) AS k
FROM (
  SELECT {group} AS g, {cells},
         CASE WHEN {usable} AND ({moved}) THEN 1 ELSE 0 END AS moved
  FROM {{source}}
) r
GROUP BY g, {keys}, moved
"""

#: The largest finite double: ``x BETWEEN -MAX AND MAX`` is false for NULL, NaN (which
#: both engines order above every number) and the infinities.
_MAX = double_literal(np.finfo(np.float64).max)


def leaf_codes(*columns: np.ndarray, bounds: PublicBounds, depth: int) -> np.ndarray:
    """``2 * leaf + clipped`` of each row, or :data:`UNUSABLE` (-1).

    Parameters
    ----------
    *columns : (n,) float arrays
        The ``d`` coordinates (NaN where missing).
    bounds : PublicBounds
    depth : int

    Notes
    -----
    :meth:`PublicBounds.unit_and_moved` and :func:`leaf_index` on the usable rows, the
    very functions of the in-memory path, so the leaf ids agree bit for bit.
    """
    x = np.column_stack([np.asarray(c, dtype=np.float64) for c in columns])
    n = x.shape[0]
    bad = ~usable_rows(x)
    x[bad] = bounds.centre
    unit, moved = bounds.unit_and_moved(x)
    leaf = (leaf_index(unit, cell_box=bounds.cell_box(), depth=depth) if n
            else np.empty(0, dtype=np.int64))
    code = 2 * leaf + moved.astype(np.int64)
    code[bad] = UNUSABLE
    return code


@dataclass(frozen=True)
class CoresetLeafCounts:
    """Exact per-group leaf counts (the input of the private step; **not private**).

    Attributes
    ----------
    counts : dict
        ``{group: (leaf_ids, counts)}``, int64 arrays (non-empty leaves only). Without
        a group column the single key is ``None``.
    n : dict
        ``{group: number of rows}`` (the group sizes, public by assumption; unusable
        rows included).
    n_clipped : dict
        ``{group: usable rows clipped into the bounds}`` (curator-only).
    depth : int
    bounds : PublicBounds
    n_unusable : dict
        ``{group: rows with a missing or non-numeric coordinate, in no leaf}``
        (curator-only).
    """

    counts: dict[Any, tuple[np.ndarray, np.ndarray]]
    n: dict[Any, int]
    n_clipped: dict[Any, int]
    depth: int
    bounds: PublicBounds
    n_unusable: dict[Any, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"CoresetLeafCounts(groups={len(self.counts)}, depth={self.depth}, "
                f"bounds={self.bounds!r})")

    def coreset(self, group: Any = None, *, epsilon: float, **kwargs: Any) -> PrivateCoreset:
        """:func:`~privot.barycenters.coresets.coreset_from_leaf_counts` for one group
        (``kwargs``: ``schedule``, ``placement``, ``region``, ``size``, ``rng``,
        ``accountant``, ``max_tries``)."""
        if group not in self.counts:
            raise InvalidParameterError("group", group, f"one of {list(self.counts)[:20]}")
        ids, cnt = self.counts[group]
        return coreset_from_leaf_counts(ids, cnt, self.n[group], bounds=self.bounds,
                                        epsilon=epsilon, depth=self.depth,
                                        n_clipped=self.n_clipped[group], **kwargs)


def box_cells_sql(bounds: PublicBounds, depth: int, *, grouped: bool) -> tuple[str, list[int]]:
    """:data:`BOX_CELLS_SQL` for box ``bounds`` (engine tokens left) and the halved
    coordinates ``c`` (those with a column ``k{c}``).

    Each expression is the float64 operation of :meth:`PublicBounds.unit_and_moved` and
    :func:`~privot.barycenters.coresets.leaf_index`, in the same order, on the same
    exact constants (:func:`~privot.engines.base.double_literal`).
    """
    d = bounds.dim
    lo, hi = bounds.cell_box()
    m = _splits(depth, d)
    lit = double_literal
    usable = " AND ".join(f"c{c} BETWEEN -{_MAX} AND {_MAX}" for c in range(d))
    clip = [f"least(greatest(c{c}, {lit(bounds.lower[c])}), {lit(bounds.upper[c])})"
            for c in range(d)]
    moved = " OR ".join(f"c{c} <> {clip[c]}" for c in range(d))
    halved = np.flatnonzero(m > 0).tolist()
    cells = []
    for c in halved:
        unit = f"({clip[c]} - {lit(bounds.centre[c])}) * {lit(bounds.scale)}"
        unit = f"least(greatest({unit}, {lit(lo[c])}), {lit(hi[c])})"
        t = f"({unit} - {lit(lo[c])}) / {lit(hi[c] - lo[c])}"
        top = (1 << int(m[c])) - 1
        k = (f"least(greatest(CAST(floor(({t}) * {lit(2.0 ** int(m[c]))}) AS BIGINT), 0), "
             f"{top})")
        cells.append(f"CASE WHEN {usable} THEN {k} ELSE -1 END AS k{c}")
    sql = BOX_CELLS_SQL.format(group="g" if grouped else "0",
                               keys=", ".join(f"k{c}" for c in halved),
                               cells=",\n         ".join(cells), usable=usable, moved=moved)
    return sql, halved


def _box_codes(got: dict[str, np.ndarray], halved: list[int], depth: int,
               dim: int) -> dict[str, np.ndarray]:
    """The ``(g, code, k)`` rows of :data:`LEAF_COUNTS_SQL` from the ``(g, k0.., moved,
    k)`` rows of :data:`BOX_CELLS_SQL` (bits interleaved on the driver)."""
    k = {c: np.asarray(got[f"k{c}"], dtype=np.int64) for c in halved}
    bad = k[halved[0]] < 0
    ids = interleave_cells({c: np.where(bad, 0, v) for c, v in k.items()}, depth=depth,
                           dim=dim)
    code = 2 * ids + np.asarray(got["moved"], dtype=np.int64)
    code[bad] = UNUSABLE
    return {"g": got.get("g"), "code": code, "k": got["k"]}


def _key(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _collect(got: dict[str, np.ndarray], grouped: bool, bounds: PublicBounds,
             depth: int) -> CoresetLeafCounts:
    """Per-group tables from the query's ``(g, code, k)`` rows (driver side)."""
    code = np.asarray(got["code"], dtype=np.int64)
    count = np.asarray(got["k"], dtype=np.int64)
    by_group: dict[Any, Any] = {None: slice(None)}  # one group: every row, no loop
    if grouped:
        by_group = {}
        for i, g in enumerate(np.asarray(got["g"]).tolist()):
            by_group.setdefault(_key(g), []).append(i)
    counts, n, n_clipped, n_unusable = {}, {}, {}, {}
    for g in sorted(by_group, key=lambda v: (v is None, str(v))):
        idx = by_group[g]
        c, k = code[idx], count[idx]
        usable = c != UNUSABLE
        n[g] = int(k.sum())
        n_unusable[g] = int(k[~usable].sum())
        n_clipped[g] = int(k[usable & (c % 2 == 1)].sum())
        ids, inverse = np.unique(c[usable] // 2, return_inverse=True)
        cnt = np.zeros(ids.size, dtype=np.int64)
        np.add.at(cnt, inverse.reshape(-1), k[usable])  # exact integer sums
        counts[g] = (ids.astype(np.int64), cnt)
    return CoresetLeafCounts(counts=counts, n=n, n_clipped=n_clipped, depth=depth,
                             bounds=bounds, n_unusable=n_unusable)


def coreset_leaf_counts(source: Any, *, bounds: PublicBounds, depth: int,
                        coordinate_columns: Sequence[str], group_column: str | None = None,
                        engine: str | Engine | None = None, spark: Any = None,
                        sep: str | None = None,
                        names: Sequence[str] | None = None,
                        leaf_step: str = "auto",
                        backend: str | Engine | None = None) -> CoresetLeafCounts:
    r"""Exact per-(group, leaf) counts for the private coreset, on DuckDB or Spark.

    Parameters
    ----------
    source : str, path-like or table
        CSV/TSV (optionally ``.gz``)/Parquet file or folder, a pandas or polars
        ``DataFrame``, a polars ``LazyFrame`` or a pyarrow ``Table`` (the same counts,
        bit for bit, from each: :mod:`privot.engines.tables`; Spark: also a Spark
        ``DataFrame``). One row per point.
    bounds : PublicBounds
        Public bounds of the coordinates (``bounds.dim == len(coordinate_columns)``).
    depth : int
        Partition depth, 1..``MAX_DEPTH`` (public; e.g.
        :func:`~privot.barycenters.coresets.default_depth` of the public group size).
    coordinate_columns : sequence of str
        The ``d`` coordinate columns, in the order of ``bounds``.
    group_column : str, optional
        Column of the group (distribution) each row belongs to.
    engine : {"duckdb", "spark", "local"} or Engine, default "duckdb"
        The engine (``"local"`` = ``"duckdb"``), as everywhere in privot.
    spark : pyspark.sql.SparkSession, optional
    sep, names : optional
        Delimiter and column names of a header-less text file.
    leaf_step : {"auto", "sql", "row_function"}, default "auto"
        How rows find their leaf: ``"sql"`` (box bounds only, :data:`BOX_CELLS_SQL`) or
        the numpy ``"row_function"`` (:func:`leaf_codes`); ``"auto"`` takes SQL for a
        box. Same counts either way (tested bit for bit); kept for comparison.
    backend : optional
        Deprecated name of ``engine`` (a :class:`DeprecationWarning`; refused together
        with ``engine``).

    Returns
    -------
    CoresetLeafCounts
        Feed a group to :meth:`CoresetLeafCounts.coreset` (noise on the driver).

    Privacy
    -------
    Not a release: the exact aggregate the Private Measure Mechanism is applied to. Each
    row lands in exactly one leaf by a rule reading only that row and the public bounds,
    so replacing one row of a group moves one unit between two leaves of that group
    (``docs/privacy/barycenters.md``). The counts are curator-side values.
    """
    engine = renamed_argument("engine", engine, "backend", backend, default="duckdb")
    if not isinstance(bounds, PublicBounds):
        raise InvalidParameterError("bounds", bounds, "a privot PublicBounds")
    depth = check_int(depth, "depth", minimum=1, maximum=MAX_DEPTH)
    if isinstance(coordinate_columns, str):
        raise InvalidParameterError("coordinate_columns", coordinate_columns,
                                    "a sequence of column names")
    coords = list(coordinate_columns)
    if (not coords or not all(isinstance(c, str) and c for c in coords)
            or len(set(coords)) != len(coords)):
        raise InvalidParameterError("coordinate_columns", coordinate_columns,
                                    "a non-empty sequence of distinct column names")
    if len(coords) != bounds.dim:
        raise InvalidParameterError("coordinate_columns", coordinate_columns,
                                    f"{bounds.dim} columns (bounds.dim)")
    if group_column is not None and (not isinstance(group_column, str) or not group_column
                                     or group_column in coords):
        raise InvalidParameterError("group_column", group_column,
                                    "None or a column name not among the coordinates")
    if leaf_step not in ("auto", "sql", "row_function"):
        raise InvalidParameterError("leaf_step", leaf_step, "'auto', 'sql' or 'row_function'")
    if leaf_step == "sql" and bounds.kind != "box":
        raise InvalidParameterError("leaf_step", leaf_step,
                                    "'auto' or 'row_function' for ball bounds (SQL needs a box)")
    check_source(source)
    eng = get_engine(engine, spark=spark)
    aliases = {f"c{i}": c for i, c in enumerate(coords)}
    columns = ({"g": group_column} if group_column is not None else {}) | aliases
    grouped = group_column is not None
    read = {"columns": columns, "float_columns": list(aliases), "sep": sep, "names": names}
    if bounds.kind == "box" and leaf_step != "row_function":
        sql, halved = box_cells_sql(bounds, depth, grouped=grouped)
        got = _box_codes(eng.query(sql, source, **read), halved, depth, bounds.dim)
    else:
        sql = LEAF_COUNTS_SQL.format(group="g" if grouped else "0", args=", ".join(aliases))
        fn = VectorFunction(partial(leaf_codes, bounds=bounds, depth=depth), len(coords))
        got = eng.query(sql, source, functions={"leaf": fn}, **read)
    return _collect(got, grouped, bounds, depth)
