"""The groups of a private barycenter, checked: point arrays or engine leaf counts.

:func:`read_groups` checks the shapes and the public sizes (never the values). A group
is an ``(n_i, d)`` array or a table whose ``d`` columns are the coordinates, in order (a
pandas or polars ``DataFrame``, a polars ``LazyFrame``, a pyarrow ``Table``:
:mod:`privot.engines.tables`; the same points, bit for bit, whichever kind holds them);
one array or one table alone is one group (``k = 1``). Rows of one table split by a
group column are the engines' input (:func:`~privot.barycenters.coreset_leaf_counts`
with ``group_column=``, then the leaf counts as ``groups``);
:func:`usable_rows_of` then makes the curator decisions on the exact rows (unusable
rows left out, rows outside the bounds clipped, a group with no usable row inside them
refused, rows that clearly fit the bounds with their first two coordinates swapped
refused, most rows outside warned about), before anything is charged.

Privacy
-------
The group sizes (rows, unusable ones included), ``k`` and ``d`` are public by the
neighbouring relation (replace one row of a group). The usable-row masks, the unit
coordinates and the clipped / unusable counts are exact statistics of the data:
curator-only (they go into the curator report, never a release).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._usable import (
    AXES_HINT,
    check_usable,
    group_arrays,
    swapped_axes_hint,
    usable_rows,
)
from privot._usable import refuse_swapped_axes as refuse_axes
from privot._validation import check_group_sequence, check_int, check_weights
from privot.barycenters.engine_step import CoresetLeafCounts
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.params import BarycenterParams
from privot.engines.tables import is_table, table_matrix
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["Groups", "Rows", "read_groups", "refuse_swapped_axes", "usable_rows_of"]


@dataclass(frozen=True, eq=False)
class Groups:
    """``k`` groups with their public sizes.

    Attributes
    ----------
    bounds : PublicBounds
    keys : list
        Group keys: ``0 .. k-1`` for point arrays, the engine's group values otherwise.
    sizes : list of int
        Rows per group, unusable ones included (public).
    beta : (k,) array
        The group weights, normalised.
    raw : list of (n_i, d) arrays or None
        The points (None: engine leaf counts).
    counts : CoresetLeafCounts or None
        The engine's exact leaf counts (None: point arrays).
    """

    bounds: PublicBounds
    keys: list[Any]
    sizes: list[int]
    beta: np.ndarray
    raw: list[np.ndarray] | None
    counts: CoresetLeafCounts | None

    @property
    def k(self) -> int:
        return len(self.sizes)

    @property
    def d(self) -> int:
        return self.bounds.dim


@dataclass(frozen=True, eq=False)
class Rows:
    """The curator's view of the rows (exact; never published).

    ``usable`` and ``unit`` are None for engine leaf counts (the engine mapped the rows).
    """

    usable: list[np.ndarray] | None
    unit: list[np.ndarray] | None
    n_unusable: list[int]
    n_outside: list[int]


def _check_point_groups(groups: Any, bounds: PublicBounds) -> list[np.ndarray]:
    """``k >= 1`` float ``(n_i, d)`` arrays with ``d == bounds.dim`` and ``n_i >= 1``;
    a table (pandas, polars, pyarrow) is read column by column, in its order.

    Non-finite coordinates are allowed here: such rows are unusable
    (:mod:`privot._usable`), left out of the mechanism, and kept in the public sizes.
    """
    if is_table(groups) or (isinstance(groups, np.ndarray) and groups.ndim == 2):
        groups = [groups]  # one group (k = 1)
    if not isinstance(groups, np.ndarray):  # a table per group: its columns, in order
        groups = [table_matrix(g) if is_table(g) else g
                  for g in check_group_sequence(groups, "groups")]
    out = group_arrays(groups, "groups")
    if out[0].shape[1] != bounds.dim:
        raise InvalidDataError(
            f"groups have dimension {out[0].shape[1]} but bounds has {bounds.dim}")
    return out


def read_groups(groups: Any, params: BarycenterParams) -> Groups:
    """The groups, their public sizes and weights; ``m`` checked against the sizes."""
    if isinstance(groups, CoresetLeafCounts):
        # exact leaf counts from an engine (DuckDB or Spark): coreset method only
        if params.method not in ("auto", "coreset"):
            raise InvalidParameterError(
                "method", params.method, "'coreset' or 'auto' when groups are engine leaf "
                "counts (the other methods need the points themselves)")
        if params.bounds is not None and not groups.bounds.same_as(params.bounds):
            raise InvalidParameterError("bounds", params.bounds,
                                        "omitted or the bounds the leaf counts were made with")
        keys = list(groups.counts)
        sizes = [int(groups.n[key]) for key in keys]
        out = Groups(groups.bounds, keys, sizes,
                     check_weights(params.group_weights, len(sizes), "group_weights"),
                     None, groups)
    else:
        if not isinstance(params.bounds, PublicBounds):
            raise InvalidParameterError("bounds", params.bounds,
                                        "a privot.barycenters.PublicBounds")
        raw = _check_point_groups(groups, params.bounds)
        beta = check_weights(params.group_weights, len(raw), "group_weights")
        out = Groups(params.bounds, list(range(len(raw))), [len(g) for g in raw], beta,
                     raw, None)
    check_int(params.m, "m", minimum=1, maximum=min(out.sizes))
    return out


def refuse_swapped_axes(points: list[np.ndarray], bounds: PublicBounds, *,
                        n_outside: int) -> None:
    """Refuse, before anything is charged, rows that clearly fit the bounds with their
    first two coordinates swapped (a curator decision on the exact rows).

    :func:`privot._usable.refuse_swapped_axes`, the rule of every capability, on the
    usable rows of all groups together. Clipping such rows would release a barycenter of
    the wrong data. Raises :class:`~privot.errors.InvalidDataError`.
    """
    pooled = np.concatenate(points, axis=0) if points else np.zeros((0, 0))
    if pooled.ndim != 2 or pooled.shape[1] < 2:
        return

    def outside_swapped() -> int:
        swapped = pooled.copy()
        swapped[:, [0, 1]] = swapped[:, [1, 0]]
        return int(np.count_nonzero(bounds.clip(swapped)[1]))

    refuse_axes(n_rows=len(pooled), n_outside=n_outside, n_outside_swapped=outside_swapped,
                what="the rows")


def usable_rows_of(groups: Groups) -> Rows:
    """The usable rows in unit coordinates (clipped into the bounds) and the counts of
    the unusable and clipped rows; refuses a group with no usable row inside the bounds
    and warns when most are not (curator decisions, before anything is charged)."""
    bounds = groups.bounds
    hint: Callable[[int], str]
    if groups.raw is not None:
        raw = groups.raw
        usable = [usable_rows(g) for g in raw]
        mapped = [bounds.unit_and_moved(g[u]) for g, u in zip(raw, usable, strict=True)]
        rows = Rows(usable, [unit for unit, _ in mapped],
                    [int(len(u) - u.sum()) for u in usable],
                    [int(np.count_nonzero(moved)) for _, moved in mapped])

        def hint(i: int) -> str:
            return swapped_axes_hint(raw[i][usable[i]], lambda x: ~bounds.clip(x)[1])

        refuse_swapped_axes([g[u] for g, u in zip(raw, usable, strict=True)], bounds,
                            n_outside=sum(rows.n_outside))
    else:
        counts = groups.counts
        rows = Rows(None, None, [int(counts.n_unusable.get(key, 0)) for key in groups.keys],
                    [int(counts.n_clipped[key]) for key in groups.keys])

        def hint(i: int) -> str:
            return AXES_HINT
    for i, key in enumerate(groups.keys):
        check_usable(n_rows=groups.sizes[i], n_unusable=rows.n_unusable[i],
                     n_outside=rows.n_outside[i], what=f"group {key!r}",
                     outside="outside the bounds (clipped into them)",
                     hint=lambda i=i: hint(i))
    return rows
