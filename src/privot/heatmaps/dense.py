r"""Dense EMD aggregation (paper 002, App. D, Thm D.1): one Laplace release on a coarse grid.

.. code-block:: text

    Proof of Thm D.1 (paper 002, App. D.1), as implemented
    1: ell* <- ceil(log2 sqrt(eps n)),  Delta* = 2^ell*        (n PUBLIC: n_users_public)
    2: snap: user i's input becomes P_{ell*} p_i                 (block sums, pyramid.py)
    3: s <- sum_i P_{ell*} p_i  on G_{Delta*}
    4: s~ <- s + nu,  nu(a) ~ Lap(1/eps) for every a in G_{Delta*}   (laplace_mechanism)
    5: s^ <- argmin_{s' >= 0} || s' - s~ ||_EMD                   (LP on the grid graph)
    6: a^ <- s^ / ||s^||_1, upsampled to the caller's Delta (uniform inside each coarse cell)

Line 1: the paper writes :math:`\ell^* = \log\sqrt{\varepsilon n}`; an integer level is
needed and we round up, :math:`\ell^* =
\lceil\log_2\sqrt{\varepsilon n}\rceil`, computed exactly as the smallest
:math:`L \ge 0` with :math:`4^L \ge \varepsilon n`, then clamped to the caller's
:math:`\ell = \log_2\Delta` (the coarse grid cannot be finer than the data's grid).
:math:`n` must be the **public** number of users given by the caller, never the count
read from the data (``docs/DESIGN.md``: no data-dependent preprocessing): a grid chosen
from the true count would leak it.

Line 5: the EMD norm of Sec. 2.1,

.. math:: \|\mathbf w\|_{\rm EMD} = \min_{\mathbf p-\mathbf q+\mathbf r=\mathbf w,\
          \|\mathbf p\|_1=\|\mathbf q\|_1} \mathrm{EMD}(\mathbf p,\mathbf q)
          + \alpha\|\mathbf r\|_1, \qquad \alpha = 2

(the diameter of :math:`[0,1)^2` in L1), is a min-cost flow on the 4-neighbour grid
graph (the L1 distance between cell centres is the shortest-path length with edges of
length :math:`h = 1/\Delta^*`) plus unmatched mass at :math:`\alpha` per unit. The
projection :math:`\min_{s'\ge0}\|s'-\tilde s\|_{\rm EMD}` reduces to the LP

.. math:: \min_{f\ge0,\ r\ge0}\ h\,\mathbf 1^\top f + \alpha\,\mathbf 1^\top r
          \quad\text{s.t.}\quad \tilde s + A f + r \ge 0,
          \qquad \hat s = \tilde s + A f + r,

with :math:`A` the (in - out) incidence matrix of the directed grid edges: unmatched
mass is only ever *added* (removing some would lower :math:`\hat s` and cost
:math:`\alpha`, never helping feasibility). Derivation and proof of equivalence:
``docs/privacy/heatmaps_extensions.md``; :func:`emd_norm` solves the general form and the
tests check that both agree. Solved with HiGHS (``scipy.optimize.linprog``).

Distances here are in units of the unit square (the grid's side is 1), as in the paper;
multiply by the grid's side length for data units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from privot._validation import check_epsilon, check_int, check_positive
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.heatmaps.aggregate import CellSums
from privot.heatmaps.measure import _as_sums
from privot.heatmaps.pyramid import block_sums
from privot.heatmaps.reconstruct import lp_budget
from privot.privacy.budget import TaggedSpender, check_spender, ensure_affordable
from privot.privacy.mechanisms import laplace_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, Release, Spender

__all__ = ["EMD_ALPHA", "MAX_DENSE_LP_CELLS", "DenseHeatmapResult", "DenseRelease",
           "EMDProjection", "dense_coarse_level", "dense_heatmap", "dense_release", "emd_norm",
           "emd_projection"]

#: :math:`\alpha` of the EMD norm (paper 002, Sec. 2.1): the L1 diameter of [0, 1)^2.
EMD_ALPHA = 2.0
#: Largest coarse grid (cells) the projection LP is solved on by default
#: (:math:`\Delta^* \le 256`); about 0.26 M flow variables.
MAX_DENSE_LP_CELLS = 256 * 256


def dense_coarse_level(epsilon: float, n_users_public: int, levels: int) -> int:
    r""":math:`\ell^* = \lceil\log_2\sqrt{\varepsilon n}\rceil` clamped to ``[0, levels]``.

    Computed as the smallest integer :math:`L\ge0` with :math:`4^L \ge \varepsilon n`
    (no floating-point logarithm).

    Parameters
    ----------
    epsilon : float
        > 0.
    n_users_public : int
        >= 1, the **public** number of users (never the data's count).
    levels : int
        :math:`\ell = \log_2\Delta` of the caller's grid, >= 0.
    """
    eps = check_epsilon(epsilon)
    n = check_int(n_users_public, "n_users_public", minimum=1)
    ell = check_int(levels, "levels", minimum=0)
    target = eps * n
    lv = 0
    while lv < ell and 4.0 ** lv < target:
        lv += 1
    return lv


def _grid_edges(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Directed edges (tail, head) of the 4-neighbour graph on a ``d x d`` grid (flat
    indices), both directions of every adjacent pair."""
    idx = np.arange(d * d, dtype=np.int64).reshape(d, d)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])  # right / down pairs
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    return np.concatenate([a, b]), np.concatenate([b, a])


def _incidence(d: int) -> sparse.csc_matrix:
    """``A`` (``d^2 x n_edges``): +1 at the head (inflow), -1 at the tail (outflow)."""
    tail, head = _grid_edges(d)
    n_e = tail.size
    cols = np.arange(n_e)
    return sparse.csc_matrix(
        (np.concatenate([np.ones(n_e), -np.ones(n_e)]),
         (np.concatenate([head, tail]), np.concatenate([cols, cols]))),
        shape=(d * d, n_e))


def _square(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 1:
        raise InvalidDataError(f"{name} must be a square (D, D) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(f"{name} has non-finite entries; all must be finite")
    return arr


def _linprog(c: np.ndarray, **kw: object) -> optimize.OptimizeResult:
    res = optimize.linprog(c, method="highs", bounds=(0, None), **kw)
    if res.status != 0 or res.x is None:
        raise ConvergenceError(f"the EMD linear program failed (HiGHS status {res.status}: "
                               f"{res.message})")
    return res


def emd_norm(w: np.ndarray, *, alpha: float = EMD_ALPHA) -> float:
    r""":math:`\|\mathbf w\|_{\rm EMD}` of paper 002, Sec. 2.1, on the unit square.

    Solves the general form: :math:`\min h\mathbf 1^\top f + \alpha(\mathbf 1^\top r^+ +
    \mathbf 1^\top r^-)` s.t. :math:`A f + r^+ - r^- = \mathbf w`, all variables
    :math:`\ge 0`, on the 4-neighbour graph of the ``(D, D)`` grid with edge length
    :math:`h = 1/D`. For two distributions of equal mass this is their EMD with L1
    ground distance (``alpha = 2`` is never cheaper than transport on the unit square).

    Parameters
    ----------
    w : (D, D) array
        Any real grid vector (e.g. a difference of two distributions).
    alpha : float, default 2
        Cost per unit of unmatched mass, > 0.

    Returns
    -------
    float
        In units of the unit square's side.
    """
    arr = _square(w, "w")
    a = check_positive(alpha, "alpha")
    d = arr.shape[0]
    n = d * d
    inc = _incidence(d)
    n_e = inc.shape[1]
    eye = sparse.identity(n, format="csc")
    a_eq = sparse.hstack([inc, eye, -eye], format="csc")
    c = np.concatenate([np.full(n_e, 1.0 / d), np.full(2 * n, a)])
    res = _linprog(c, A_eq=a_eq, b_eq=arr.ravel())
    return float(res.fun)


@dataclass(frozen=True, repr=False)
class EMDProjection:
    r""":math:`\hat s = \arg\min_{s'\ge0}\|s' - \tilde s\|_{\rm EMD}` and its LP.

    Attributes
    ----------
    estimate : (D, D) float array
        :math:`\hat s \ge 0`.
    objective : float
        :math:`\|\hat s - \tilde s\|_{\rm EMD}` (unit-square units).
    transport_cost : float
        The flow part :math:`h\mathbf 1^\top f`.
    mass_added : float
        :math:`\mathbf 1^\top r`, unmatched mass created (costing :math:`\alpha` each).
    n_variables, n_constraints : int
    solver_message : str
    lp_fallback : bool
        HiGHS gave no optimum within its public iteration budget and
        :math:`\hat s = \max(\tilde s, 0)` stands in (a feasible point of the LP).
    """

    estimate: np.ndarray
    objective: float
    transport_cost: float
    mass_added: float
    n_variables: int
    n_constraints: int
    solver_message: str
    lp_fallback: bool = False

    def __repr__(self) -> str:
        d = self.estimate.shape[0]
        return (f"EMDProjection({d}x{d}, objective={self.objective:.6g}, "
                f"transport_cost={self.transport_cost:.6g}, "
                f"mass_added={self.mass_added:.6g}, variables={self.n_variables}, "
                f"lp_fallback={self.lp_fallback})")


def emd_projection(noisy: np.ndarray, *, alpha: float = EMD_ALPHA,
                   max_cells: int = MAX_DENSE_LP_CELLS) -> EMDProjection:
    r"""The non-negative vector nearest to ``noisy`` in the EMD norm (Thm D.1, line 5).

    Solves :math:`\min h\mathbf 1^\top f + \alpha\mathbf 1^\top r` s.t.
    :math:`\tilde s + Af + r \ge 0`, :math:`f, r \ge 0` and returns
    :math:`\hat s = \tilde s + A f + r` (clipped at 0 against solver round-off). The
    equivalence with :math:`\min_{s'\ge0}\|s'-\tilde s\|_{\rm EMD}` is derived in
    ``docs/privacy/heatmaps_extensions.md``.

    Parameters
    ----------
    noisy : (D, D) array
        :math:`\tilde s` (any real values).
    alpha : float, default 2
        Cost of one unit of unmatched mass.
    max_cells : int
        Refuse grids with more than this many cells (LP size guard).

    Returns
    -------
    EMDProjection

    Privacy
    -------
    Post-processing of a released vector: no privacy cost.
    """
    s_t = _square(noisy, "noisy")
    a = check_positive(alpha, "alpha")
    cap = check_int(max_cells, "max_cells", minimum=1)
    d = s_t.shape[0]
    n = d * d
    if n > cap:
        raise InvalidParameterError("max_cells", max_cells,
                                    f"at least {n} for a {d} x {d} grid (or use a coarser grid)")
    inc = _incidence(d)
    n_e = inc.shape[1]
    # -(A f) - r <= s~  <=>  s~ + A f + r >= 0
    a_ub = sparse.hstack([-inc, -sparse.identity(n, format="csc")], format="csc")
    c = np.concatenate([np.full(n_e, 1.0 / d), np.full(n, a)])
    # A release path is total: HiGHS runs under an iteration budget set by the LP's size
    # (public), and if it gives no optimum the feasible point f = 0, r = max(-s~, 0)
    # stands in (s^ = max(s~, 0)): post-processing of the release either way.
    res = optimize.linprog(c, method="highs", bounds=(0, None), A_ub=a_ub, b_ub=s_t.ravel(),
                           options={"presolve": n > 4096,
                                    "maxiter": lp_budget(n, n_e + n)})
    fallback = res.status != 0 or res.x is None
    if fallback:
        f, r = np.zeros(n_e), np.maximum(-s_t.ravel(), 0.0)
        objective = float(a * r.sum())
    else:
        f, r = res.x[:n_e], res.x[n_e:]
        objective = float(res.fun)
    s_hat = np.maximum(s_t.ravel() + inc @ f + r, 0.0).reshape(d, d)
    return EMDProjection(estimate=s_hat, objective=objective,
                         transport_cost=float(f.sum() / d), mass_added=float(r.sum()),
                         n_variables=n_e + n, n_constraints=n, solver_message=str(res.message),
                         lp_fallback=bool(fallback))


@dataclass(frozen=True, repr=False)
class DenseRelease:
    r"""The one release of Thm D.1: the coarse cell sums plus Laplace noise.

    Attributes
    ----------
    noisy : (Delta*, Delta*) float array
        :math:`\tilde{\mathbf s} = \mathbf P_{\ell^*}\mathbf s + \nu`.
    coarse_level : int
        :math:`\ell^*`.
    coarse_resolution : int
        :math:`\Delta^* = 2^{\ell^*}`.
    resolution : int
        The caller's :math:`\Delta`.
    n_users_public : int
        The public :math:`n` that fixed :math:`\ell^*`.
    epsilon : float
        Spent (pure DP).
    release : Release
        The Laplace release (scale, grid exponent, ``secure``).
    """

    noisy: np.ndarray
    coarse_level: int
    coarse_resolution: int
    resolution: int
    n_users_public: int
    epsilon: float
    release: Release

    @property
    def secure(self) -> bool:
        """False when a seeded generator was used (not fit for publication)."""
        return self.release.secure

    def __repr__(self) -> str:
        c = self.coarse_resolution
        return (f"DenseRelease(epsilon={self.epsilon:g}, coarse {c}x{c} (level "
                f"{self.coarse_level}) of {self.resolution}x{self.resolution}, "
                f"n_users_public={self.n_users_public}"
                + ("" if self.secure else ", SEEDED") + ")")


def dense_release(sums: np.ndarray | CellSums, *, epsilon: float, n_users_public: int,
                  accountant: Spender | None = None, rng: np.random.Generator | int | None = None,
                  max_lp_cells: int = MAX_DENSE_LP_CELLS) -> DenseRelease:
    r"""Lines 1-4 of Thm D.1: snap to :math:`G_{\Delta^*}` and add Laplace(1/eps) per cell.

    Parameters and privacy as :func:`dense_heatmap` (which calls this, then projects);
    ``max_lp_cells`` is checked here so that a release is never drawn for a coarse grid
    whose projection would be refused.

    Returns
    -------
    DenseRelease

    Privacy
    -------
    Unit: one user; relation: add/remove one user. The coarse sums change by
    :math:`\mathbf P_{\ell^*}\mathbf p_u` (L1 norm <= 1) when user :math:`u` is added
    or removed: one :func:`~privot.privacy.mechanisms.laplace_mechanism` call with
    sensitivity 1, pure :math:`\varepsilon`-DP. ``docs/privacy/heatmaps_extensions.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    eps = check_epsilon(epsilon)
    n_pub = check_int(n_users_public, "n_users_public", minimum=1)
    cap = check_int(max_lp_cells, "max_lp_cells", minimum=1)
    check_spender(accountant)
    s = _as_sums(sums)
    d = s.shape[0]
    lv = dense_coarse_level(eps, n_pub, d.bit_length() - 1)  # line 1 (public n only)
    dc = 1 << lv
    if dc * dc > cap:
        raise InvalidParameterError(
            "max_lp_cells", max_lp_cells,
            f"at least {dc * dc}: epsilon * n_users_public = {eps * n_pub:.6g} gives a "
            f"{dc} x {dc} coarse grid; raise max_lp_cells or use a coarser grid")
    ensure_affordable(accountant, eps, "the dense heatmap (Thm D.1)")
    coarse = block_sums(s, lv)  # lines 2-3: P_{ell*} s (snap to G_{Delta*})
    spender = (None if accountant is None else
               TaggedSpender(accountant, {"release": "heatmap-dense", "level": lv,
                                          "query": f"P_{lv} s (coarse cell sums, Thm D.1)",
                                          "n_users_public": n_pub}))
    # line 4: nu(a) ~ Lap(1/eps) on every coarse cell; L1 sensitivity 1 per user
    rel = laplace_mechanism(coarse, sensitivity=1.0, epsilon=eps, accountant=spender, rng=rng,
                            relation=Neighbouring.ADD_REMOVE)
    return DenseRelease(noisy=np.asarray(rel.value, dtype=np.float64), coarse_level=lv,
                        coarse_resolution=dc, resolution=d, n_users_public=n_pub,
                        epsilon=rel.cost.epsilon, release=rel)


@dataclass(frozen=True, repr=False)
class DenseHeatmapResult:
    r"""A dense EMD aggregation (Thm D.1).

    Attributes
    ----------
    distribution : (Delta, Delta) float array
        :math:`\hat{\mathbf a}` upsampled to the caller's grid (uniform inside each coarse
        cell); sums to 1.
    coarse_distribution : (Delta*, Delta*) float array
        :math:`\hat{\mathbf a} = \hat{\mathbf s}/\|\hat{\mathbf s}\|_1`.
    estimate : (Delta*, Delta*) float array
        :math:`\hat{\mathbf s}`, unnormalised (its sum estimates the number of users).
    noisy : (Delta*, Delta*) float array
        The release :math:`\tilde{\mathbf s} = \mathbf s + \nu`.
    coarse_level : int
        :math:`\ell^*`.
    coarse_resolution : int
        :math:`\Delta^* = 2^{\ell^*}`.
    resolution : int
        The caller's :math:`\Delta`.
    epsilon : float
        Spent (pure DP).
    n_users_public : int
        The public :math:`n` that fixed :math:`\ell^*`.
    release : Release
        The Laplace release (scale, grid exponent, ``secure``).
    projection : EMDProjection
        The LP of line 5.
    fallback_uniform : bool
        :math:`\hat{\mathbf s} = 0` and ``distribution`` is uniform over the covered cells.
    """

    distribution: np.ndarray
    coarse_distribution: np.ndarray
    estimate: np.ndarray
    noisy: np.ndarray
    coarse_level: int
    coarse_resolution: int
    resolution: int
    epsilon: float
    n_users_public: int
    release: Release
    projection: EMDProjection
    fallback_uniform: bool

    @property
    def secure(self) -> bool:
        """False when a seeded generator was used (not fit for publication)."""
        return self.release.secure

    def __repr__(self) -> str:
        c, d = self.coarse_resolution, self.resolution
        return (f"DenseHeatmapResult(epsilon={self.epsilon:g}, {d}x{d} from coarse "
                f"{c}x{c}, n_users_public={self.n_users_public}, "
                f"mass={float(self.distribution.sum()):.4g}, "
                f"fallback_uniform={self.fallback_uniform}"
                + ("" if self.secure else ", SEEDED") + ")")


def dense_heatmap(sums: np.ndarray | CellSums, *, epsilon: float, n_users_public: int,
                  accountant: Spender | None = None, rng: np.random.Generator | int | None = None,
                  covered: np.ndarray | None = None,
                  max_lp_cells: int = MAX_DENSE_LP_CELLS) -> DenseHeatmapResult:
    r"""Dense EMD aggregation (paper 002, Thm D.1): Laplace on a coarse grid, EMD projection.

    Parameters
    ----------
    sums : (Delta, Delta) array or CellSums
        :math:`\mathbf s = \sum_u\mathbf p_u`, each user's distribution of L1 norm <= 1
        (:func:`~privot.heatmaps.aggregate.user_distributions_sum`); ``Delta`` a power of
        two.
    epsilon : float
        > 0.
    n_users_public : int
        >= 1. The **public** number of users :math:`n` that fixes
        :math:`\Delta^* = 2^{\lceil\log_2\sqrt{\varepsilon n}\rceil}` (clamped to
        ``Delta``). Never pass the count read from the data: the grid would then depend
        on it. A wrong value costs accuracy only, never privacy.
    accountant : PrivacyAccountant, optional
        Charged ``epsilon`` once (mechanism ``"laplace"``), checked to fit before noise.
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS CSPRNG. A seeded generator marks the release ``secure=False``.
    covered : (Delta, Delta) bool array, optional
        Cells of the uniform fallback when :math:`\hat{\mathbf s} = 0`
        (:meth:`Grid.covered_mask() <privot.grid.Grid.covered_mask>`).
    max_lp_cells : int
        Refuse coarse grids above this many cells (LP size), default
        :data:`MAX_DENSE_LP_CELLS`; a coarser caller grid caps :math:`\Delta^*`.

    Returns
    -------
    DenseHeatmapResult

    Raises
    ------
    InvalidParameterError
        ``epsilon <= 0``, ``n_users_public < 1``, a coarse grid above ``max_lp_cells``.
    InvalidDataError
        ``sums`` not a non-negative finite square power-of-two array.
    BudgetExceededError
        The accountant cannot afford ``epsilon`` (nothing charged, no noise drawn).

    Privacy
    -------
    Unit: one user (all of their points). Relation: add/remove one user
    (``Neighbouring.ADD_REMOVE``). Snapping is the linear map :math:`\mathbf P_{\ell^*}`,
    chosen from public parameters only; adding or removing user :math:`u` changes the
    coarse sums by :math:`\mathbf P_{\ell^*}\mathbf p_u`, non-negative with L1 norm
    :math:`\le 1`, so one :func:`~privot.privacy.mechanisms.laplace_mechanism` call with
    sensitivity 1 is pure :math:`\varepsilon`-DP (Lemma 2.2). The EMD projection,
    normalisation and upsampling are post-processing. Derivation:
    ``docs/privacy/heatmaps_extensions.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    s = _as_sums(sums)
    d = s.shape[0]
    if covered is not None:
        mask = np.asarray(covered, dtype=bool)
        if mask.shape != (d, d) or not mask.any():
            raise InvalidDataError(f"covered must be a ({d}, {d}) bool array with a True cell")
    cap = check_int(max_lp_cells, "max_lp_cells", minimum=1)
    out = dense_release(s, epsilon=epsilon, n_users_public=n_users_public,
                        accountant=accountant, rng=rng, max_lp_cells=cap)  # lines 1-4
    lv, dc, noisy, rel = out.coarse_level, out.coarse_resolution, out.noisy, out.release
    proj = emd_projection(noisy, max_cells=cap)  # line 5
    s_hat = proj.estimate
    total = float(s_hat.sum())
    fallback = not total > 0
    b = d // dc
    if fallback:
        mask = np.ones((d, d), dtype=bool) if covered is None else np.asarray(covered, bool)
        dist = mask / float(np.count_nonzero(mask))
        coarse_dist = block_sums(dist, lv)
    else:
        coarse_dist = s_hat / total  # line 6
        # uniform inside each coarse cell: each of its b*b leaves gets 1/(b*b) of its mass
        dist = np.kron(coarse_dist, np.full((b, b), 1.0 / (b * b)))
    return DenseHeatmapResult(distribution=dist, coarse_distribution=coarse_dist,
                              estimate=s_hat, noisy=noisy, coarse_level=lv,
                              coarse_resolution=dc, resolution=d, epsilon=rel.cost.epsilon,
                              n_users_public=out.n_users_public, release=rel,
                              projection=proj,
                              fallback_uniform=fallback)
