r"""Private planar k-median from a private coreset (paper 002, App. A, Cor. A.1 and A.2).

.. code-block:: text

    Cor. A.1 (proof, App. A): each input point x_i is the indicator p_i = 1_{x_i}
        (one user = one point, snapped to its cell of G_Delta);
        run Algorithm 1 + RECONSTRUCT and output x = s^ UNNORMALISED:
        a (lambda, O(sqrt(k)/eps))-coreset for k-median, eps-DP.
    Cor. A.2: run any non-private k-median algorithm on the coreset (post-processing).

Cor. A.1 is :func:`~privot.heatmaps.measure.measure` and
:func:`~privot.heatmaps.reconstruct.reconstruct` applied to
:func:`~privot.heatmaps.aggregate.user_distributions_sum` with one user id per point, the
coreset being :attr:`Reconstruction.estimate <privot.heatmaps.reconstruct.Reconstruction>`
(cell centres weighted by :math:`\hat{\mathbf s}`). Lemma 3.3 asks
:math:`w = O(k/\lambda^2)`; the default here is :math:`w = \max(20, 4k)` (20 is the
paper's Sec. 4 value), a function of the public ``k`` only.

Cor. A.2 is :func:`weighted_kmedian`: Lloyd-style alternation for the L1 objective
:math:`\mathrm{cost}_C(\mathbf x) = \sum_u \mathbf x(u)\min_{c\in C}\|c-u\|_1`: assign
every point to its nearest centre (L1), then move each centre to the coordinate-wise
weighted median of its points (the exact minimiser of a weighted sum of L1 distances,
which separates over coordinates). Seeding is k-means++-style with
:math:`D^1` sampling (probability proportional to weight times L1 distance to the nearest
chosen centre), from an explicit generator; several restarts keep the cheapest. Each
step does not increase the cost, so the alternation stops at a fixed point. It is
post-processing of the private coreset: a seeded numpy generator is fine there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privot._validation import check_finite_array, check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.aggregate import user_distributions_sum
from privot.heatmaps.measure import DEFAULT_GAMMA, DEFAULT_W, Measurements, measure
from privot.heatmaps.reconstruct import Reconstruction, reconstruct
from privot.privacy.noise import check_rng
from privot.privacy.types import Spender

__all__ = ["KMedianFit", "KMedianResult", "kmedian_cost", "kmedian_default_w",
           "private_kmedian", "weighted_kmedian"]


def _points2(points: object, name: str = "points") -> np.ndarray:
    arr = check_finite_array(points, name, ndim=2)
    if arr.shape[1] != 2:
        raise InvalidDataError(f"{name} must have shape (n, 2), got {arr.shape}")
    return arr


def _weights(weights: object | None, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = check_finite_array(weights, "weights", ndim=1)
    if w.shape[0] != n:
        raise InvalidDataError(f"weights has length {w.shape[0]} but there are {n} points")
    if np.any(w < 0):
        raise InvalidDataError(f"weights must be non-negative; weights[{int(np.argmin(w))}]="
                               f"{float(w.min())!r}")
    return w


def _l1(points: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """``(n, k)`` L1 distances."""
    return (np.abs(points[:, None, 0] - centers[None, :, 0])
            + np.abs(points[:, None, 1] - centers[None, :, 1]))


def kmedian_cost(points: np.ndarray, centers: np.ndarray,
                 weights: np.ndarray | None = None) -> float:
    r"""The planar k-median cost :math:`\sum_i w_i\min_{c\in C}\|x_i - c\|_1` (App. A).

    Parameters
    ----------
    points : (n, 2) array
    centers : (k, 2) array
    weights : (n,) array, optional
        Non-negative; default 1 per point (the paper's :math:`\mathrm{cost}_C(X)`).
        With coreset weights it is :math:`\mathrm{cost}_C(\mathbf x)`.

    Returns
    -------
    float
    """
    p = _points2(points)
    c = _points2(centers, "centers")
    w = _weights(weights, p.shape[0])
    out = 0.0
    for start in range(0, p.shape[0], 65536):  # bounded memory: (chunk, k) distances
        blk = slice(start, start + 65536)
        out += float(w[blk] @ _l1(p[blk], c).min(axis=1))
    return out


def _weighted_median(v: np.ndarray, w: np.ndarray) -> float:
    """Smallest ``v`` whose cumulative weight reaches half the total (an exact L1 median)."""
    order = np.argsort(v, kind="stable")
    cw = np.cumsum(w[order])
    i = int(np.searchsorted(cw, 0.5 * cw[-1], side="left"))
    return float(v[order[min(i, v.size - 1)]])


def _seed(points: np.ndarray, w: np.ndarray, k: int, gen: np.random.Generator) -> np.ndarray:
    """k-means++-style seeding with D^1 sampling (k-median): P(x) ~ w(x) * d_1(x, C)."""
    n = points.shape[0]
    first = int(gen.choice(n, p=w / w.sum()))
    centers = [points[first]]
    dist = np.abs(points - points[first]).sum(axis=1)
    for _ in range(1, k):
        score = w * dist
        tot = float(score.sum())
        # every positive-weight point already is a centre: repeat one (cost unchanged)
        idx = int(gen.choice(n, p=score / tot)) if tot > 0 else first
        centers.append(points[idx])
        dist = np.minimum(dist, np.abs(points - points[idx]).sum(axis=1))
    return np.array(centers, dtype=np.float64)


def _lloyd(points: np.ndarray, w: np.ndarray, centers: np.ndarray,
           max_iter: int) -> tuple[np.ndarray, float, int]:
    k = centers.shape[0]
    labels = None
    it = 0
    for _ in range(max_iter):
        it += 1
        new = _l1(points, centers).argmin(axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            sel = labels == j
            if not np.any(w[sel] > 0):
                continue  # an empty cluster keeps its centre
            centers[j, 0] = _weighted_median(points[sel, 0], w[sel])
            centers[j, 1] = _weighted_median(points[sel, 1], w[sel])
    cost = float(w @ _l1(points, centers).min(axis=1))
    return centers, cost, it


@dataclass(frozen=True, repr=False)
class KMedianFit:
    """A (non-private) weighted k-median solution.

    Attributes
    ----------
    centers : (k, 2) float array
    cost : float
        :math:`\\sum_i w_i \\min_c \\|x_i - c\\|_1` on the points it was fitted to.
    n_iter : int
        Lloyd iterations of the best restart.
    n_init : int
        Restarts run.
    """

    centers: np.ndarray
    cost: float
    n_iter: int
    n_init: int

    def __repr__(self) -> str:
        return (f"KMedianFit(k={len(self.centers)}, cost={self.cost:.6g}, "
                f"n_iter={self.n_iter}, n_init={self.n_init})")


def weighted_kmedian(points: np.ndarray, weights: np.ndarray | None = None, *, k: int,
                     n_init: int = 8, max_iter: int = 100,
                     rng: np.random.Generator | int | None = None) -> KMedianFit:
    r"""Weighted planar k-median with the L1 distance (Lloyd alternation, D^1 seeding).

    Not private by itself: run it on a private coreset (Cor. A.2, :func:`private_kmedian`)
    or on raw points as the non-private reference.

    Parameters
    ----------
    points : (n, 2) array
    weights : (n,) array, optional
        Non-negative with a positive sum; default 1 per point.
    k : int
        Number of centres, >= 1.
    n_init : int, default 8
        Restarts (each seeded independently); the cheapest is returned.
    max_iter : int, default 100
        Lloyd iterations per restart.
    rng : numpy.random.Generator or int, optional
        Randomness of the seeding (post-processing: a seed is fine).

    Returns
    -------
    KMedianFit
    """
    p = _points2(points)
    w = _weights(weights, p.shape[0])
    k = check_int(k, "k", minimum=1)
    n_init = check_int(n_init, "n_init", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if not float(w.sum()) > 0:
        raise InvalidDataError("weights sum to 0; at least one point needs positive weight")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    keep = w > 0
    p, w = p[keep], w[keep]
    best = _lloyd(p, w, _seed(p, w, k, gen), max_iter)
    for _ in range(n_init - 1):
        cand = _lloyd(p, w, _seed(p, w, k, gen), max_iter)
        if cand[1] < best[1]:
            best = cand
    return KMedianFit(centers=best[0], cost=best[1], n_iter=best[2], n_init=n_init)


def kmedian_default_w(k: int) -> int:
    """``max(20, 4k)``: RECONSTRUCT's cells per level for a k-median coreset (Lemma 3.3
    asks :math:`w = O(k/\\lambda^2)`; 20 is the paper's Sec. 4 value). Public: depends
    on ``k`` only."""
    return max(DEFAULT_W, 4 * check_int(k, "k", minimum=1))


@dataclass(frozen=True, repr=False)
class KMedianResult:
    r"""Private k-median centres and the private coreset they were fitted to.

    Attributes
    ----------
    centers : (k, 2) float array
        In data units (the grid's coordinates).
    coreset : (Delta, Delta) float array
        :math:`\hat{\mathbf s}` of Cor. A.1 (unnormalised; its sum estimates the number
        of points inside the bounds).
    coreset_points : (m, 2) float array
        Centres of the cells with positive coreset weight, data units.
    coreset_weights : (m,) float array
        Their weights :math:`\hat{\mathbf s}(u) > 0`.
    coreset_cost : float
        :math:`\mathrm{cost}_C(\mathbf x)` of ``centers`` on the coreset (data units);
        computed from the release only.
    k : int
    epsilon : float
        Spent (pure DP).
    grid : Grid
    measurements : Measurements
        The release of Algorithm 1.
    reconstruction : Reconstruction
    fit : KMedianFit
        The non-private k-median run on the coreset.
    n_points_curator : int
        Points read. **Curator-only** (not private).
    n_outside_curator : int
        Points dropped outside the bounds. **Curator-only** (not private).
    """

    centers: np.ndarray
    coreset: np.ndarray
    coreset_points: np.ndarray
    coreset_weights: np.ndarray
    coreset_cost: float
    k: int
    epsilon: float
    grid: Grid
    measurements: Measurements
    reconstruction: Reconstruction
    fit: KMedianFit
    n_points_curator: int
    n_outside_curator: int

    @property
    def secure(self) -> bool:
        """False when a seeded generator was used (not fit for publication)."""
        return self.measurements.secure

    def cost(self, points: np.ndarray, weights: np.ndarray | None = None) -> float:
        """:func:`kmedian_cost` of ``centers`` on ``points`` (e.g. the raw data, to
        evaluate; that number is not private)."""
        return kmedian_cost(points, self.centers, weights)

    def __repr__(self) -> str:
        g = self.grid.resolution
        return (f"KMedianResult(k={self.k}, epsilon={self.epsilon:g}, grid={g}x{g}, "
                f"coreset={len(self.coreset_points)} points, "
                f"coreset_cost={self.coreset_cost:.6g}"
                + ("" if self.secure else ", SEEDED") + ")")


def private_kmedian(points: np.ndarray, *, grid: Grid, k: int, epsilon: float,
                    w: int | None = None, gamma: float = DEFAULT_GAMMA, lp: str = "compact",
                    n_init: int = 8, max_iter: int = 100, accountant: Spender | None = None,
                    rng: np.random.Generator | int | None = None,
                    cluster_rng: np.random.Generator | int | None = None) -> KMedianResult:
    r"""Private planar k-median (paper 002, Cor. A.2) via a private coreset (Cor. A.1).

    Parameters
    ----------
    points : (n, 2) array
        One point per user, ``(x, y)`` in the grid's units. Points outside the grid's
        bounds are dropped (grid rule: half-open cells); their count is curator-only.
    grid : Grid
        Public grid (bounds and resolution); never derived from the data.
    k : int
        Number of centres, >= 1 (public).
    epsilon : float
        > 0, spent by Algorithm 1.
    w : int, optional
        RECONSTRUCT's cells per level; default :func:`kmedian_default_w` ``(k)``.
    gamma : float, default 1/sqrt(2)
        Decay of the per-level budgets.
    lp : {"compact", "full"}
        RECONSTRUCT's LP.
    n_init, max_iter : int
        Restarts and Lloyd iterations of the k-median on the coreset.
    accountant : PrivacyAccountant, optional
        Charged per measured level (see :func:`~privot.heatmaps.measure.measure`).
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        Privacy noise. None: OS CSPRNG; a seeded generator marks the release
        ``secure=False``.
    cluster_rng : numpy.random.Generator or int, optional
        Seeding of the k-median on the coreset (post-processing). Default: ``rng`` when
        given (after the noise), else fresh OS entropy.

    Returns
    -------
    KMedianResult

    Privacy
    -------
    Unit: one point (= one user, each user holds one point). Relation: add/remove one
    point (``Neighbouring.ADD_REMOVE``). Each point is the indicator
    :math:`\mathbf p_i = \mathbf 1_{x_i}` of its cell, L1 norm 1 (0 when outside the
    bounds), so every level of Algorithm 1 has L1 sensitivity 1 and
    :func:`~privot.heatmaps.measure.measure` is pure :math:`\varepsilon`-DP (Thm 3.1,
    privacy analysis). The coreset (RECONSTRUCT) and the k-median on it are
    post-processing (Cor. A.1, A.2). ``docs/privacy/heatmaps_extensions.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    p = _points2(points)
    k = check_int(k, "k", minimum=1)
    w_cells = kmedian_default_w(k) if w is None else check_int(w, "w", minimum=1)
    n_init = check_int(n_init, "n_init", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    # Cor. A.1: one user id per point, p_i = 1_{x_i} (user_distributions_sum with n_u = 1)
    cells = user_distributions_sum(np.arange(p.shape[0]), p[:, 0], p[:, 1], grid)
    meas = measure(cells, epsilon=epsilon, w=w_cells, gamma=gamma, accountant=accountant,
                   rng=rng)  # Algorithm 1
    rec = reconstruct(meas, lp=lp, covered=grid.covered_mask())  # Algorithm 2: s^
    s_hat = rec.estimate
    # coreset weights: s^ unnormalised (Cor. A.1); a zero s^ falls back to the uniform
    # distribution over the covered cells (post-processing rule, stated in the docstring)
    weights = s_hat if float(s_hat.sum()) > 0 else rec.distribution
    xs, ys = grid.cell_centres()
    pos = weights.ravel() > 0
    core_pts = np.column_stack([xs.ravel()[pos], ys.ravel()[pos]])
    core_w = weights.ravel()[pos]
    gen = cluster_rng if cluster_rng is not None else rng
    fit = weighted_kmedian(core_pts, core_w, k=k, n_init=n_init, max_iter=max_iter,
                           rng=gen)  # Cor. A.2
    return KMedianResult(centers=fit.centers, coreset=s_hat, coreset_points=core_pts,
                         coreset_weights=core_w, coreset_cost=fit.cost, k=k,
                         epsilon=meas.epsilon, grid=grid, measurements=meas,
                         reconstruction=rec, fit=fit, n_points_curator=cells.n_points,
                         n_outside_curator=cells.n_outside)
