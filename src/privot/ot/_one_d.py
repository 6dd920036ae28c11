"""Closed-form 1-D W2 between empirical measures of unequal sizes (paper 004, Props 3.1, 3.2).

For :math:`P_U = \\sum_i a_i \\delta_{U_i}` and :math:`P_V = \\sum_j b_j \\delta_{V_j}`
on the real line, the optimal coupling is the monotone (quantile) coupling. With
:math:`A_k = \\sum_{i \\le k} a_{(i)}` and :math:`B_l = \\sum_{j \\le l} b_{(j)}` the
cumulative weights in sorted order, rank ``i`` and rank ``j`` share the mass

.. math::

    R_{ij} = \\lambda\\big((A_{i-1}, A_i] \\cap (B_{j-1}, B_j]\\big),

which for uniform weights is paper 004's
:math:`R_{ij} = \\lambda(((i-1)/n, i/n] \\cap ((j-1)/m, j/m])`. At most ``n + m - 1``
of the :math:`R_{ij}` are non-zero; they are found by merging the two sorted grids
:math:`\\{A_k\\}` and :math:`\\{B_l\\}`, never by forming an ``n x m`` matrix. The
derivation is in ``docs/ot.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privot.ot._common import check_mass_pair, check_samples_1d

__all__ = [
    "Coupling1D",
    "rank_coupling",
    "quantile_coupling",
    "w2_squared_1d",
    "w2_squared_1d_with_grad",
]


@dataclass(frozen=True, eq=False)
class Coupling1D:
    """Sparse monotone coupling between two 1-D samples (the merged quantile grid).

    Entry ``k`` sends mass ``mass[k]`` from ``x[i[k]]`` to ``y[j[k]]``. The entries
    are in increasing quantile order, so ``x[i]`` and ``y[j]`` are both
    non-decreasing along ``k``. ``K <= n + m - 1``.

    Attributes
    ----------
    i : (K,) int array
        Indices into the original (unsorted) ``x``.
    j : (K,) int array
        Indices into the original (unsorted) ``y``.
    mass : (K,) float array
        Positive masses :math:`R_{\\sigma(i_k), \\tau(j_k)}`; they sum to the total mass.
    n : int
        Number of points of ``x``.
    m : int
        Number of points of ``y``.
    """

    i: np.ndarray
    j: np.ndarray
    mass: np.ndarray
    n: int
    m: int

    def to_dense(self) -> np.ndarray:
        """The ``(n, m)`` plan as a dense array (for tests and small inputs only)."""
        plan = np.zeros((self.n, self.m))
        np.add.at(plan, (self.i, self.j), self.mass)
        return plan


def _merge_sorted(cum_a: np.ndarray, cum_b: np.ndarray) -> np.ndarray:
    """Sorted union without duplicates of two non-decreasing arrays.

    Same result as :func:`numpy.union1d`, which goes through :func:`numpy.unique`
    (hash-based for integers in recent numpy, about 200 times slower here). A stable
    sort of two concatenated sorted runs is a linear-time merge (timsort), then the
    duplicates are dropped.
    """
    grid = np.concatenate((cum_a, cum_b))
    if grid.size == 0:
        return grid
    grid.sort(kind="stable")
    keep = np.empty(grid.shape, dtype=bool)
    keep[0] = True
    np.not_equal(grid[1:], grid[:-1], out=keep[1:])
    return grid[keep]


def rank_coupling(cum_a: np.ndarray, cum_b: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Merge two cumulative-weight grids into ``(rank_i, rank_j, mass)``.

    Parameters
    ----------
    cum_a : (n,) array
        Non-decreasing cumulative weights :math:`A_1 \\le \\dots \\le A_n` (in sorted
        order of ``x``), integers or floats, with :math:`A_n` equal to :math:`B_m`.
    cum_b : (m,) array
        Non-decreasing cumulative weights :math:`B_1 \\le \\dots \\le B_m`.

    Returns
    -------
    rank_i, rank_j : (K,) int arrays
        Sorted ranks (0-based) of the pieces: piece ``k`` is the interval
        :math:`(t_{k-1}, t_k]` of the merged grid :math:`t`, and ``rank_i[k]`` is the
        first ``i`` with :math:`A_i \\ge t_k` (likewise ``rank_j``).
    mass : (K,) array
        :math:`t_k - t_{k-1} > 0`, same dtype as the grids.

    Notes
    -----
    ``O((n + m) log(n + m))`` time and ``O(n + m)`` memory. Integer grids give exact
    masses; this is what :func:`quantile_coupling` uses for uniform weights, with
    :math:`A_i = i m` and :math:`B_j = j n` (the grid of paper 004 scaled by ``n m``).
    """
    grid = _merge_sorted(cum_a, cum_b)  # sorted, without duplicates
    grid = grid[grid > 0]
    mass = np.diff(grid, prepend=grid.dtype.type(0))
    # piece (t_{k-1}, t_k] lies in atom i of x iff A_{i-1} < t_k <= A_i
    rank_i = np.searchsorted(cum_a, grid, side="left")
    rank_j = np.searchsorted(cum_b, grid, side="left")
    # float round-off can push the last grid point past A_n or B_m by one ulp
    np.minimum(rank_i, cum_a.shape[0] - 1, out=rank_i)
    np.minimum(rank_j, cum_b.shape[0] - 1, out=rank_j)
    return rank_i, rank_j, mass


def quantile_coupling(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                      b: np.ndarray | None = None) -> Coupling1D:
    """Optimal (monotone) coupling between two 1-D weighted samples, in sparse form.

    Parameters
    ----------
    x : (n,) array
        First sample (``(n, 1)`` is accepted).
    y : (m,) array
        Second sample (``(m, 1)`` is accepted); ``m`` may differ from ``n``.
    a : (n,) array, optional
        Weights of ``x``; uniform ``1/n`` by default.
    b : (m,) array, optional
        Weights of ``y``; uniform ``1/m`` by default. Same total mass as ``a``.

    Returns
    -------
    Coupling1D
        The pieces of the merged quantile grid with indices into the original
        arrays. Ties are broken by a stable sort (the order of appearance), which
        defines the subgradient returned by :func:`w2_squared_1d_with_grad`.

    Notes
    -----
    With uniform weights the grid is built on integers (:math:`A_i = i m`,
    :math:`B_j = j n`, masses divided by ``n m`` at the end), so the masses
    :math:`R_{ij}` of paper 004 (Prop. 3.1) are exact up to one division.
    """
    xs = check_samples_1d(x, "x")
    ys = check_samples_1d(y, "y")
    return _coupling(xs, ys, a, b)


def _coupling(xs: np.ndarray, ys: np.ndarray, a, b) -> Coupling1D:
    n, m = xs.shape[0], ys.shape[0]
    order_x = np.argsort(xs, kind="stable")  # sigma^{-1}: rank -> index
    order_y = np.argsort(ys, kind="stable")
    if a is None and b is None:
        # exact integer grid: i/n = (i m)/(n m), j/m = (j n)/(n m)
        cum_a = np.arange(1, n + 1, dtype=np.int64) * m
        cum_b = np.arange(1, m + 1, dtype=np.int64) * n
        rank_i, rank_j, mass_int = rank_coupling(cum_a, cum_b)
        mass = mass_int / float(n * m)
    else:
        aa, bb = check_mass_pair(a, b, n, m)
        total = float(aa.sum())
        cum_a = _cumulative(aa[order_x], total)
        cum_b = _cumulative(bb[order_y], total)
        rank_i, rank_j, mass = rank_coupling(cum_a, cum_b)
    return Coupling1D(i=order_x[rank_i], j=order_y[rank_j], mass=mass, n=n, m=m)


def _cumulative(w_sorted: np.ndarray, total: float) -> np.ndarray:
    """Cumulative weights that end exactly at ``total`` and stay non-decreasing.

    ``np.cumsum`` adds sequentially while ``total`` is a pairwise sum, so the two
    can differ by a few ulps. Forcing only the last entry to ``total`` would then
    either break monotonicity (sequential sum above ``total``) or hand an ulp-sized
    piece of mass to trailing zero-weight atoms (sequential sum below it). Instead,
    clip at ``total`` and set the whole run from the last positive weight onwards to
    ``total``: trailing zero-weight atoms then share the last grid value and
    :func:`rank_coupling` (``side="left"``) never assigns them mass.
    """
    cum = np.cumsum(w_sorted)
    np.minimum(cum, total, out=cum)
    last = int(np.flatnonzero(w_sorted > 0)[-1])  # exists: check_weights refuses sum 0
    cum[last:] = total
    return cum


def w2_squared_1d(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                  b: np.ndarray | None = None) -> float:
    """Squared 2-Wasserstein distance between two 1-D samples, in closed form.

    Paper 004, Prop. 3.1 (generalised to arbitrary weights):

    .. math::

        W_2^2(P_U, P_V) = \\int_0^1 (F^{-1}(t) - G^{-1}(t))^2\\,dt
        = \\sum_{i=1}^n \\sum_{j=1}^m R_{\\sigma(i), \\tau(j)} (U_i - V_j)^2 ,

    evaluated on the ``<= n + m - 1`` non-zero :math:`R` only.

    Parameters
    ----------
    x : (n,) array
        First sample.
    y : (m,) array
        Second sample; ``m`` may differ from ``n``.
    a, b : (n,) and (m,) arrays, optional
        Weights (uniform by default), same total mass.

    Returns
    -------
    float
        :math:`W_2^2 \\ge 0` (the same quantity as ``ot.wasserstein_1d(x, y, p=2)``).
    """
    xs = check_samples_1d(x, "x")
    ys = check_samples_1d(y, "y")
    if a is None and b is None:
        # value only: sorted values suffice, no stable argsort (issue 27: half the time)
        return _w2_uniform_sorted(np.sort(xs), np.sort(ys))
    cp = _coupling(xs, ys, a, b)
    diff = xs[cp.i] - ys[cp.j]
    return float(np.dot(cp.mass, diff * diff))


def _w2_uniform_sorted(xs: np.ndarray, ys: np.ndarray) -> float:
    """:math:`W_2^2` of two sorted samples ``(n,)``, ``(m,)`` with uniform weights.

    The same pieces, masses and sum as the coupling path (:func:`quantile_coupling`
    then the dot product), so the same float: the integer grid :math:`A_i = i m`,
    :math:`B_j = j n` is merged as in :func:`rank_coupling`, whose ``searchsorted``
    ranks are, on these grids, the integer divisions :math:`\\lceil t/m \\rceil - 1
    = (t - 1) // m`. Sorted values equal the values gathered through a stable argsort
    (tied points have equal values), so no argsort is needed.
    """
    n, m = xs.shape[0], ys.shape[0]
    grid = _merge_sorted(np.arange(1, n + 1, dtype=np.int64) * m,
                         np.arange(1, m + 1, dtype=np.int64) * n)  # all > 0
    mass = np.diff(grid, prepend=grid.dtype.type(0)) / float(n * m)
    grid -= 1
    diff = xs[grid // m] - ys[grid // n]
    return float(np.dot(mass, diff * diff))


def w2_squared_1d_with_grad(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                            b: np.ndarray | None = None
                            ) -> tuple[float, np.ndarray, np.ndarray]:
    """:math:`W_2^2` between two 1-D samples and its gradients (paper 004, Prop. 3.2).

    .. math::

        \\frac{\\partial W_2^2}{\\partial U_i}
            = 2 \\sum_{j=1}^m R_{\\sigma(i), \\tau(j)} (U_i - V_j), \\qquad
        \\frac{\\partial W_2^2}{\\partial V_j}
            = 2 \\sum_{i=1}^n R_{\\sigma(i), \\tau(j)} (V_j - U_i).

    These are gradients where the points of each sample are distinct (ranks locally
    constant); at ties they are the subgradients defined by the stable-sort coupling.

    Parameters
    ----------
    x : (n,) array
        First sample.
    y : (m,) array
        Second sample.
    a, b : (n,) and (m,) arrays, optional
        Weights (uniform by default), same total mass. The gradients are with
        respect to the positions, weights held fixed.

    Returns
    -------
    value : float
        :math:`W_2^2`.
    grad_x : (n,) array
        Gradient with respect to ``x``.
    grad_y : (m,) array
        Gradient with respect to ``y``.
    """
    cp = quantile_coupling(x, y, a=a, b=b)
    xs = np.asarray(x, dtype=np.float64).reshape(-1)
    ys = np.asarray(y, dtype=np.float64).reshape(-1)
    diff = xs[cp.i] - ys[cp.j]
    value = float(np.dot(cp.mass, diff * diff))
    w = 2.0 * cp.mass * diff
    grad_x = np.bincount(cp.i, weights=w, minlength=cp.n)
    grad_y = -np.bincount(cp.j, weights=w, minlength=cp.m)
    return value, grad_x, grad_y
