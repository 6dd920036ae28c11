r"""Per-user distributions and their sum over the grid (paper 002, Algorithm 1 line 3).

Each user :math:`u` with :math:`n_u \ge 1` points inside the public bounds has the
distribution :math:`\mathbf{p}_u` putting mass :math:`1/n_u` on the cell of each of
those points (the empirical distribution of the user's points, restricted to the
grid). The aggregate is

.. math:: \mathbf{s} = \sum_u \mathbf{p}_u \in \mathbb{R}_{\ge 0}^{\Delta\times\Delta},

the only data-dependent quantity the private algorithms read. Every user's
:math:`\mathbf{p}_u` has L1 norm exactly 1 (or 0 for a user with no point inside the
bounds: such a user contributes nothing), which is what bounds the sensitivity of every
query made on :math:`\mathbf{s}` (``docs/privacy/heatmaps.md``).

This module is the local, in-memory implementation (numpy, vectorised). The engines
package computes the same :class:`CellSums` on other backends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privot._usable import usable_user_points
from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.grid import Grid

__all__ = ["CellSums", "FRACTION_BITS", "fixed_point_digits", "fixed_point_to_float",
           "user_distributions_sum"]

#: Fractional bits of the fixed-point quotients ``k / n_u``: each user's mass in a cell
#: is :math:`\lfloor 2^{96} k_{u,c} / n_u \rfloor / 2^{96}`, as three base-``2^32``
#: digits (the engines compute the same digits in SQL, ``heatmaps/engine_step.py``).
FRACTION_BITS = 96
DIGIT_BITS = 32


@dataclass(frozen=True, repr=False)
class CellSums:
    r"""The sum of the users' distributions over the grid, with curator-only counts.

    Attributes
    ----------
    sums : (Delta, Delta) float array
        :math:`\mathbf{s} = \sum_u \mathbf{p}_u`, non-negative; entry ``[row, col]`` is
        the cell ``(row, col)`` of :class:`~privot.grid.Grid`. Sensitive: it is
        released only through a mechanism.
    n_users : int
        Users with at least one point inside the bounds (``sums.sum() == n_users`` up to
        rounding). **Curator-only** (not differentially private).
    n_points : int
        Points read, inside and outside the bounds. **Curator-only.**
    n_outside : int
        Points dropped because they fall outside the bounds. **Curator-only.**
    n_users_empty : int
        Users all of whose points fall outside the bounds; they contribute nothing to
        ``sums``. **Curator-only.**

    Notes
    -----
    The counts are diagnostics for the data holder. They are computed without noise
    and must not be published alongside a release.
    """

    sums: np.ndarray
    n_users: int
    n_points: int
    n_outside: int
    n_users_empty: int

    def __post_init__(self) -> None:
        arr = np.asarray(self.sums, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise InvalidDataError(
                f"sums must be a square (Delta, Delta) array, got shape {arr.shape}")
        d = arr.shape[0]
        if d < 1 or d & (d - 1):
            raise InvalidDataError(f"sums has side {d}; it must be a power of two")
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError("sums has non-finite entries; all must be finite")
        if np.any(arr < 0):
            raise InvalidDataError("sums has negative entries; a sum of distributions is >= 0")
        object.__setattr__(self, "sums", arr)
        for name in ("n_users", "n_points", "n_outside", "n_users_empty"):
            object.__setattr__(self, name, check_int(getattr(self, name), name, minimum=0))
        if self.n_outside > self.n_points:
            raise InvalidParameterError("n_outside", self.n_outside,
                                        f"at most n_points={self.n_points}")

    @property
    def resolution(self) -> int:
        r""":math:`\Delta`, the side of ``sums``."""
        return int(self.sums.shape[0])

    def __repr__(self) -> str:
        # exact counts of the data: curator-only, like the object
        d = self.resolution
        return (f"CellSums({d}x{d}, n_users={self.n_users}, n_points={self.n_points}, "
                f"n_outside={self.n_outside}, n_users_empty={self.n_users_empty}; "
                "exact, curator-only)")


def fixed_point_digits(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    r"""The three base-:math:`2^{32}` digits of :math:`\lfloor 2^{96} k / n \rfloor`.

    Long division in exact integers, as the engines' SQL does:
    :math:`d_1 = \lfloor 2^{32}k/n\rfloor`, :math:`r_1 = 2^{32}k \bmod n`,
    :math:`d_2 = \lfloor 2^{32}r_1/n\rfloor`, :math:`r_2 = 2^{32}r_1 \bmod n`,
    :math:`d_3 = \lfloor 2^{32}r_2/n\rfloor`.

    Parameters
    ----------
    k, n : (m,) int64 arrays
        ``0 <= k <= n``, ``n >= 1``.

    Returns
    -------
    d1, d2, d3 : (m,) int64 arrays, ``d1 <= 2^32`` and ``d2, d3 < 2^32``.
    """
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if n.size and int(n.max()) >= 1 << 31:  # operands past int64: exact Python integers
        k, n = k.astype(object), n.astype(object)
    a = k << DIGIT_BITS
    d1, r1 = a // n, a % n
    a = r1 << DIGIT_BITS
    d2, r2 = a // n, a % n
    d3 = (r2 << DIGIT_BITS) // n
    return tuple(np.asarray(d, dtype=np.int64) for d in (d1, d2, d3))


def fixed_point_to_float(d1: np.ndarray, d2: np.ndarray, d3: np.ndarray) -> np.ndarray:
    """Correctly rounded float64 of :math:`(2^{64} D_1 + 2^{32} D_2 + D_3) / 2^{96}`.

    ``D_i`` are exact per-cell digit sums: int64 arrays or object arrays of Python
    integers (any size).
    """
    total = ((np.asarray(d1).astype(object) << (2 * DIGIT_BITS))
             + (np.asarray(d2).astype(object) << DIGIT_BITS) + np.asarray(d3).astype(object))
    return np.ldexp(total.astype(np.float64), -FRACTION_BITS)


def _exact_bincount(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Exact integer ``bincount`` of values in ``[0, 2^33)``: float sums of 16-bit pieces
    (each exact below 2^53, i.e. for fewer than 2^37 values per bin), recombined as
    Python integers (object array)."""
    values = np.asarray(values, dtype=np.int64)
    out = np.zeros(size, dtype=object)
    for shift in (0, 16, 32):
        piece = (values >> shift) & 0xFFFF
        part = np.bincount(index, weights=piece, minlength=size).astype(np.int64)
        out += part.astype(object) << shift
    return out


def user_distributions_sum(user_ids: np.ndarray, x: np.ndarray, y: np.ndarray,
                           grid: Grid) -> CellSums:
    r"""Sum of the users' empirical distributions over ``grid`` (local, vectorised).

    Each point of user :math:`u` inside the bounds weighs :math:`1/n_u`, with
    :math:`n_u` the number of the user's points *inside* the bounds; points outside
    are dropped (grid rule: half-open cells, see :class:`~privot.grid.Grid`).
    The sums are the engines' fixed-point sums (:func:`fixed_point_digits`, exact
    integer sums, one rounding), so they equal
    :func:`~privot.heatmaps.engine_step.aggregate_user_cells` bit for bit.

    Unusable rows follow the one rule of :mod:`privot._usable`, as on the engines: a
    row with a missing user id, or a missing, non-numeric, NaN or infinite coordinate,
    is dropped and counted in ``n_outside`` (curator-only).

    Parameters
    ----------
    user_ids : (n,) array
        The user of each point (any sortable ids: integers, strings).
    x, y : (n,) arrays
        Coordinates (``x`` = longitude for geographic data).
    grid : Grid
        The public grid.

    Returns
    -------
    CellSums

    Raises
    ------
    InvalidDataError
        Mismatched lengths or shapes, user ids of mixed types.

    Privacy
    -------
    Not a release: this is the exact aggregate the mechanisms are applied to. Unit of
    privacy: a user (all of their points). Every user's distribution has L1 norm 1
    (or 0), so for the add/remove-one-user relation any block-sum query of ``sums``
    has L1 sensitivity 1. Which rows are dropped depends on each row alone.
    ``docs/privacy/heatmaps.md``.
    """
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    pts = usable_user_points(user_ids, x, y)
    n = pts.n_rows
    cell = grid.assign(pts.x, pts.y)
    kept_codes = pts.codes[cell.kept]
    n_ids = pts.n_ids
    per_user = np.bincount(kept_codes, minlength=n_ids)  # n_u (points inside)
    # per (user, cell): k_{u,c}; the fixed-point digits of k/n_u summed exactly per
    # cell, then rounded once: the engines' arithmetic, so the same bits
    pair, k = np.unique(kept_codes * np.int64(grid.n_cells) + cell.cells, return_counts=True)
    pair_cell = pair % grid.n_cells
    digits = fixed_point_digits(k, per_user[pair // grid.n_cells])
    sums = fixed_point_to_float(*(_exact_bincount(pair_cell, d, grid.n_cells)
                                  for d in digits))
    n_users = int(np.count_nonzero(per_user))
    n_kept = int(cell.kept.sum())
    return CellSums(sums=sums.reshape(grid.resolution, grid.resolution), n_users=n_users,
                    n_points=n, n_outside=n - n_kept, n_users_empty=n_ids - n_users)
