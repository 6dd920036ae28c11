r"""The data-touching step of the private coreset, written once over the backend protocol.

The Private Measure Mechanism (:mod:`privot.barycenters.coresets`) reads the data only
through the exact number of points of each group in each leaf of the public binary
partition. :func:`coreset_leaf_counts` computes those counts on any
:class:`~privot.engines.base.Backend` (local chunks or Spark); the noise, the
consistency pass and the placement then run once on the driver
(:func:`~privot.barycenters.coresets.coreset_from_leaf_counts`), so a seeded release is
identical whichever engine counted.

Per row (a :class:`CoresetLeaf` column function, numpy on pandas chunks; on Spark
through ``mapInPandas``, so both engines run the very same float operations): the
coordinates are mapped into unit coordinates by the public
:class:`~privot.barycenters.geometry.PublicBounds` (clipped into the bounds, counted),
and the leaf id is computed by :func:`~privot.barycenters.coresets.leaf_index`. Then
one ``count_per_key`` over ``(group, leaf, clipped)``: integer counts, exact on every
backend. What reaches the driver is at most ``groups x 2^depth x 2`` rows of integers.

Rows with a missing, non-numeric, NaN or infinite coordinate
---------------------------------------------------------------
The one rule of :mod:`privot._usable`, as on the in-memory path: such a row is
*unusable*, counted in no leaf and in ``n_unusable`` (curator-only), and it still counts
in the public group size ``n`` (the replace-one relation keeps group sizes public;
replacing a usable row by an unusable one changes one leaf count by one, within the
sensitivity of the level counts). The rule reads only the row itself. A missing group
value is a group of its own (key ``None``), as ``count_per_key`` does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.barycenters.coresets import (
    MAX_DEPTH,
    PrivateCoreset,
    coreset_from_leaf_counts,
    leaf_index,
)
from privot.barycenters.geometry import PublicBounds
from privot.engines import get_backend
from privot.engines.base import Backend, ColumnFunction
from privot.errors import InvalidParameterError

__all__ = ["CoresetLeaf", "CoresetLeafCounts", "coreset_leaf_counts", "leaf_counts_on"]

_LEAF = "_privot_leaf"
_CLIPPED = "_privot_clipped"  # row status: 0 inside, 1 clipped, 2 unusable
_INSIDE, _MOVED, _UNUSABLE = 0, 1, 2
#: Leaf id of an unusable row (in no leaf).
_NO_LEAF = -1
_COUNT = "_privot_count"


@dataclass(frozen=True, eq=False)
class CoresetLeaf(ColumnFunction):
    """int64 columns: the leaf id of each row (-1: unusable) and its status (0 inside the
    bounds, 1 clipped into them, 2 unusable)."""

    bounds: PublicBounds
    depth: int
    columns: tuple[str, ...]

    @property
    def outputs(self) -> Mapping[str, str]:  # type: ignore[override]
        return {_LEAF: "int64", _CLIPPED: "int64"}

    def pandas(self, frame: Any) -> dict[str, np.ndarray]:
        n = len(frame)
        x = np.empty((n, len(self.columns)), dtype=np.float64)
        for i, c in enumerate(self.columns):
            x[:, i] = np.asarray(frame[c].to_numpy(dtype=np.float64, na_value=np.nan))
        bad = ~np.all(np.isfinite(x), axis=1)
        x[bad] = self.bounds.centre
        clipped, moved = self.bounds.clip(x)
        unit = (clipped - self.bounds.centre) * self.bounds.scale
        lo, hi = self.bounds.cell_box()
        np.maximum(unit, lo, out=unit)
        np.minimum(unit, hi, out=unit)
        leaf = (leaf_index(unit, cell_box=(lo, hi), depth=self.depth) if n
                else np.empty(0, dtype=np.int64))
        leaf[bad] = _NO_LEAF
        status = np.where(bad, _UNUSABLE, np.where(moved, _MOVED, _INSIDE))
        return {_LEAF: leaf, _CLIPPED: status.astype(np.int64)}


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


def _key(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def leaf_counts_on(backend: Backend, source: Any, *, bounds: PublicBounds, depth: int,
                   coordinate_columns: Sequence[str], group_column: str | None = None,
                   sep: str | None = None, names: Sequence[str] | None = None
                   ) -> CoresetLeafCounts:
    """:func:`coreset_leaf_counts` on an explicit backend (no argument defaults)."""
    b = backend
    coords = tuple(coordinate_columns)
    keys = [group_column] if group_column is not None else []
    rows = b.read(source, columns=[*keys, *coords], float_columns=list(coords), sep=sep,
                  names=names)
    rows = b.map_columns(rows, CoresetLeaf(bounds, depth, coords))
    agg = b.count_per_key(rows, [*keys, _LEAF, _CLIPPED], out=_COUNT)
    got = b.collect_to_numpy(agg, [*keys, _LEAF, _CLIPPED, _COUNT])
    leaf = np.asarray(got[_LEAF], dtype=np.int64)
    clipped = np.asarray(got[_CLIPPED], dtype=np.int64)
    count = np.asarray(got[_COUNT], dtype=np.int64)
    groups = ([_key(v) for v in got[group_column].tolist()] if group_column is not None
              else [None] * leaf.size)
    by_group: dict[Any, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    counts, n, n_clipped, n_unusable = {}, {}, {}, {}
    for g in sorted(by_group, key=lambda v: (v is None, str(v))):
        idx = np.asarray(by_group[g], dtype=np.int64)
        n[g] = int(count[idx].sum())
        n_clipped[g] = int(count[idx][clipped[idx] == _MOVED].sum())
        n_unusable[g] = int(count[idx][clipped[idx] == _UNUSABLE].sum())
        idx = idx[leaf[idx] != _NO_LEAF]
        ids, inverse = np.unique(leaf[idx], return_inverse=True)
        cnt = np.zeros(ids.size, dtype=np.int64)
        np.add.at(cnt, inverse.reshape(-1), count[idx])  # exact integer sums
        counts[g] = (ids, cnt)
    return CoresetLeafCounts(counts=counts, n=n, n_clipped=n_clipped, depth=depth,
                             bounds=bounds, n_unusable=n_unusable)


def coreset_leaf_counts(source: Any, *, bounds: PublicBounds, depth: int,
                        coordinate_columns: Sequence[str], group_column: str | None = None,
                        backend: str | Backend = "local", chunk_size: int = 1_000_000,
                        spark: Any = None, sep: str | None = None,
                        names: Sequence[str] | None = None) -> CoresetLeafCounts:
    r"""Exact per-(group, leaf) counts for the private coreset, on a local or Spark engine.

    Parameters
    ----------
    source : str, path-like or DataFrame
        CSV/TSV/Parquet file or folder, pandas ``DataFrame`` (Spark: also a Spark
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
    backend : {"local", "spark"} or Backend
    chunk_size : int
        Rows per chunk of the local engine.
    spark : pyspark.sql.SparkSession, optional
    sep, names : optional
        Delimiter and column names of a header-less text file.

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
    for c in [*coords, *([group_column] if group_column else [])]:
        if c.startswith("_privot_"):
            raise InvalidParameterError("coordinate_columns/group_column", c,
                                        "names not starting with '_privot_'")
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    if source is None or not (isinstance(source, (str, os.PathLike))
                              or hasattr(source, "columns")):
        raise InvalidParameterError("source", type(source).__name__,
                                    "a path to a CSV/TSV/Parquet file or a DataFrame")
    b = get_backend(backend, chunk_size=chunk_size, spark=spark)
    return leaf_counts_on(b, source, bounds=bounds, depth=depth, coordinate_columns=coords,
                          group_column=group_column, sep=sep, names=names)
