r"""Public entry point of papers 000 and 001: :func:`private_barycenter`.

.. code-block:: text

    method="coreset" (paper 000 Alg. 2), epsilon-DP:
      groups --(PublicBounds)--> unit ball --(private coreset per group, eps each;
      parallel composition)--> mu'_i --(weighted atoms: the coreset merged by the cells
      of its public partition, max_atoms)--> mu'_i --(JL Pi)--> mu^_i
      --(free-support barycenter)--> nu^
      --(Alg. 3 SolutionWeights: plans mu^_i -> nu^)--> (S, w)
      --(Alg. 4 SupportPoints with mu'_i in R^d)--> nu --(from_unit)--> support

    method="perturbation" (paper 000 Alg. 1, paper 001 Thm 5 + Prop. 6), (eps, delta)-DP:
      groups --> unit ball --> anchor a_0 (private coreset barycenter with a fraction of
      eps, or public atoms)
      step="lloyd" (default): --(power cells balanced on the coreset, B noisy count
      rounds, T noisy Lloyd steps (R counts, sums), Gaussian, Delta_2 = 2R)--> support
      step="anchored": --(split into k' parts; T noisy anchored steps, Gaussian,
      Delta_2 = sqrt(m) max beta_i / k')--> support

    method="subspace" (high dimension), eps-DP or (eps, delta)-DP: see
    :mod:`privot.barycenters.subspace`.

With ``population_size`` the groups are a uniform sample (without replacement) of a
larger population and the budget is stated on the population: the mechanism runs at
the larger sample budget that amplification by subsampling (Balle, Barthe and
Gaboardi 2018) brings back to it (paper 000 Remark 1 and Sec. 6).
Everything after the noisy leaf counts (consistency, placement, the merge into weighted
atoms, the solver, its progress bars) reads only the released counts, public parameters
and public randomness: post-processing. Derivations: ``docs/privacy/barycenters.md``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privot._progress import progress_bar, show_progress
from privot._usable import (
    AXES_HINT,
    check_usable,
    group_arrays,
    swapped_axes_hint,
    usable_rows,
)
from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_points,
    check_positive,
    check_weights,
)
from privot.barycenters.coresets import (
    PrivateCoreset,
    cell_atoms,
    coreset_from_leaf_counts,
    default_depth,
    private_coreset,
)
from privot.barycenters.engine_step import CoresetLeafCounts
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.lloyd_perturbation import (
    DEFAULT_BALANCING_ROUNDS,
    DEFAULT_PROXY_SIZE,
    lloyd_perturbation,
    plan_lloyd,
)
from privot.barycenters.perturbation import (
    CALIBRATIONS,
    check_perturbation_inputs,
    output_perturbation,
    recommended_splits,
)
from privot.barycenters.regions import Region
from privot.barycenters.result import BarycenterResult
from privot.barycenters.subspace import (
    SubspacePlan,
    check_basis,
    dct_basis,
    plan_subspace,
    subspace_release,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import (
    BARYCENTER_METHODS,
    free_support_barycenter,
    gaussian_jl_matrix,
    solution_weights,
    support_points,
)
from privot.privacy import accounting
from privot.privacy.events import ComposedEvent, GaussianEvent, PrivacyEvent, PureEvent
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender

__all__ = ["METHODS", "choose_method", "default_projection_dim", "private_barycenter",
           "release_event"]

METHODS = ("auto", "coreset", "perturbation", "subspace")
#: ``method="auto"`` runs the coreset in at most this many dimensions and the subspace
#: method above (public: ``d``). Measured: the coreset keeps 1.03x the non-private cost on
#: the US maps (d = 2) and carries little signal from d = 3 on (benchmarks/README.md,
#: "Barycenters in high dimension").
AUTO_CORESET_MAX_DIM = 2
#: Share of the sample budget the perturbation method spends on its coreset anchor.
#: Measured on population-weighted US places (k = 1, m = 48, eps = 1 on the population,
#: default k', 3 seeds): cost / non-private 1.58 with 0.2, 1.78 with 0.5, 2.0 with 0.8 at
#: n = 50,000; 3.5, 3.7, 6.2 at n = 5,000.
DEFAULT_ANCHOR_FRACTION = 0.25
#: Share of the sample budget the noisy Lloyd steps' coreset anchor gets (issue 15's
#: prototype: half; see benchmarks/README.md for the measurement).
DEFAULT_LLOYD_ANCHOR_FRACTION = 0.5
#: The released statistics of ``method="perturbation"``.
PERTURBATION_STEPS = ("lloyd", "anchored")
#: Default cap on each group's coreset size (the paper subsamples its coresets "which
#: increases cost by a negligible amount, but significantly improves the runtime"):
#: US places, n = 200,000: cost 2.348 with 50,000 points against 2.353 with all of them,
#: and 16 s instead of minutes (benchmarks/results/barycenter_us.json).
DEFAULT_MAX_CORESET = 50_000
#: Default cap on the weighted atoms each group's coreset is given to the solver as
#: (``max_atoms``; :func:`~privot.barycenters.coresets.cell_atoms`). Measured on US
#: places (benchmarks/bench_barycenter_scale.py, k = 3, n = 109,000 per group, m = 32,
#: eps = 1): see ``benchmarks/README.md``, section "Barycenters at scale".
DEFAULT_MAX_ATOMS = 4096
#: With ``max_atoms``, at most this many coreset points per group are placed before they
#: are merged into atoms (placement is cheap; the cap only bounds memory at 10^7 rows).
DEFAULT_MAX_PLACED = 1_000_000
#: Exact polishing steps after Sinkhorn on weighted atoms (``polish=None`` with
#: ``max_atoms``): the exact fixed point run to its tolerance (it stops early), affordable
#: on a few thousand atoms. US places, k = 3, n = 109,000, m = 32, three releases: true
#: cost 212.56 / 212.38 / 212.45 with 1 step, 212.46 / 212.36 / 212.36 with 10, the same
#: with 50 (squared degrees).
DEFAULT_ATOMS_POLISH = 10
#: Noisy steps of the perturbation method (Lloyd or anchored).
DEFAULT_ITERATIONS = 1


def default_projection_dim(n: int, d: int, *, p: float = 2, gamma: float = 0.5,
                           xi: float = 0.1) -> int | None:
    r"""Theorem 5.4's order :math:`d' = \lceil p^4 \gamma^{-2} \ln(n/(\gamma\xi)) \rceil`.

    The theorem gives :math:`d' = O(p^4\gamma^{-2}\log(n/(\gamma\xi)))`; privot takes the
    constant 1 with distortion :math:`\gamma = 1/2` and failure probability
    :math:`\xi = 1/10`. Returns ``None`` (no projection) when that is not below ``d``.
    """
    dp = math.ceil(p**4 / gamma**2 * math.log(n / (gamma * xi)))
    return dp if dp < d else None




def choose_method(d: int) -> str:
    """What ``method="auto"`` runs for data in ``d`` dimensions (a public rule).

    ``"coreset"`` (paper 000 Alg. 2) for ``d <= AUTO_CORESET_MAX_DIM``, ``"subspace"``
    above it.
    """
    return "coreset" if d <= AUTO_CORESET_MAX_DIM else "subspace"


def _resolve_basis(basis: object, d: int, image_shape: object, basis_dim: int | None
                   ) -> np.ndarray | None:
    """The public basis of the subspace method: None (identity), "dct" or an array."""
    if basis is None:
        if basis_dim is not None:
            raise InvalidParameterError("basis_dim", basis_dim,
                                        "omitted unless basis='dct'")
        return None
    if isinstance(basis, str):
        if basis != "dct":
            raise InvalidParameterError("basis", basis, "None, 'dct' or a (d, d0) array")
        if image_shape is None:
            raise InvalidParameterError("image_shape", None,
                                        "(height, width) with height * width = d for "
                                        "basis='dct'")
        shape = tuple(image_shape) if isinstance(image_shape, (tuple, list)) else None
        if shape is None or len(shape) != 2 or int(shape[0]) * int(shape[1]) != d:
            raise InvalidParameterError("image_shape", image_shape,
                                        f"(height, width) with height * width = d = {d}")
        return dct_basis(shape, basis_dim)
    if basis_dim is not None:
        raise InvalidParameterError("basis_dim", basis_dim, "omitted unless basis='dct'")
    return check_basis(basis, d)


def release_event(method: str, sample: PrivacyCost, anchor_epsilon: float = 0.0
                  ) -> PrivacyEvent:
    r"""What a private barycenter runs, in the form a budget ledger composes.

    ``"coreset"``: Laplace counts on the levels of the partitions, pure
    ``sample.epsilon``-DP in all (:class:`~privot.privacy.events.PureEvent`).
    ``"perturbation"``: the coreset anchor (pure ``anchor_epsilon``) and Gaussian steps
    calibrated to :math:`(\varepsilon - \varepsilon_a, \delta)`. Gaussian steps compose
    to a :math:`\mu`-GDP release (Dong, Roth and Su, Cor. 3.3) that meets that pair, so
    :math:`\mu \le \mu(\varepsilon - \varepsilon_a, \delta)`, the GDP parameter whose
    curve passes through it: a valid, public description.

    Parameters
    ----------
    method : {"coreset", "perturbation"}
    sample : PrivacyCost
        The budget the release runs with (after amplification, if any).
    anchor_epsilon : float
        The perturbation method's coreset anchor budget (0 for a public anchor).
    """
    if method == "coreset":
        return PureEvent(sample.epsilon, "laplace-coreset")
    parts: list[PrivacyEvent] = []
    if anchor_epsilon > 0:
        parts.append(PureEvent(anchor_epsilon, "laplace-coreset-anchor"))
    eps_g = sample.epsilon - anchor_epsilon
    # gdp_mu_for rounds down (the calibration's safe side); up by 1e-8 here (the
    # description's safe side) to cover that rounding
    mu = accounting.gdp_mu_for(eps_g, sample.delta) * (1.0 + 1e-8)
    parts.append(GaussianEvent(1.0 / mu, eps_g, sample.delta))
    return ComposedEvent(tuple(parts))


def _sample_budget(epsilon: float, delta: float, sizes: list[int],
                   population_size: int | Sequence[int] | None) -> PrivacyCost:
    target = PrivacyCost(epsilon, delta)
    if population_size is None:
        return target
    pops = ([population_size] * len(sizes) if isinstance(population_size, (int, np.integer))
            else list(population_size))
    return accounting.sample_cost_for(target, sample_size=sizes, population_size=pops)


#: ``make(i, epsilon, options) -> PrivateCoreset``: the private coreset of group ``i``.
CoresetMaker = Callable[[int, float, dict[str, Any]], PrivateCoreset]


def _coresets_of_points(raw: list[np.ndarray], bounds: PublicBounds) -> CoresetMaker:
    # private_coreset leaves unusable (non-finite) rows out of the counts and keeps them
    # in the public size n = len(raw[i])
    def make(i: int, epsilon: float, options: dict[str, Any]) -> PrivateCoreset:
        return private_coreset(raw[i], bounds=bounds, epsilon=epsilon, **options)
    return make


def _check_groups(groups: Any, bounds: PublicBounds) -> list[np.ndarray]:
    """``k >= 1`` float ``(n_i, d)`` arrays with ``d == bounds.dim`` and ``n_i >= 1``.

    Non-finite coordinates are allowed here: such rows are unusable
    (:mod:`privot._usable`), left out of the mechanism, and kept in the public sizes.
    """
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        groups = [groups]  # one group (k = 1)
    out = group_arrays(groups, "groups")
    if out[0].shape[1] != bounds.dim:
        raise InvalidDataError(
            f"groups have dimension {out[0].shape[1]} but bounds has {bounds.dim}")
    return out


def _row_counts(raw: list[np.ndarray], bounds: PublicBounds
                ) -> tuple[list[np.ndarray], list[np.ndarray], list[int], list[int]]:
    """Per group: the usable-row mask, the usable rows in unit coordinates (clipped),
    the unusable rows and the usable rows clipped (outside the bounds), mapped once."""
    usable = [usable_rows(g) for g in raw]
    mapped = [bounds.unit_and_moved(g[u]) for g, u in zip(raw, usable, strict=True)]
    return (usable, [unit for unit, _ in mapped], [int(len(u) - u.sum()) for u in usable],
            [int(np.count_nonzero(moved)) for _, moved in mapped])


def _check_usable_groups(names: list[str], sizes: list[int], unusable: list[int],
                         outside: list[int], hint: Callable[[int], str]) -> None:
    """Refuse a group with no usable row inside the bounds; warn when most are not
    (curator decisions, before anything is charged)."""
    for i, name in enumerate(names):
        check_usable(n_rows=sizes[i], n_unusable=unusable[i], n_outside=outside[i],
                     what=f"group {name}", outside="outside the bounds (clipped into them)",
                     hint=lambda i=i: hint(i))


def _coresets_of_counts(counts: Any, keys: list[Any]) -> CoresetMaker:
    """Coresets from exact leaf counts computed by an engine at ``counts.depth``; a group
    whose depth is smaller uses the ancestors ``id >> (D - depth)`` (prefix codes)."""
    def make(i: int, epsilon: float, options: dict[str, Any]) -> PrivateCoreset:
        key = keys[i]
        n = counts.n[key]
        ids, cnt = counts.counts[key]
        depth = options.pop("depth", None) or default_depth(epsilon, n)
        depth = min(depth, counts.depth)
        ids, inverse = np.unique(ids >> (counts.depth - depth), return_inverse=True)
        cnt = np.bincount(inverse.reshape(-1), weights=cnt, minlength=ids.size)
        return coreset_from_leaf_counts(ids, cnt.astype(np.int64), n, bounds=counts.bounds,
                                        epsilon=epsilon, depth=depth,
                                        n_clipped=counts.n_clipped[key], **options)
    return make



def _coreset_barycenter(make: CoresetMaker, sizes: list[int], *, m: int, epsilon: float,
                        p: float, projection_dim: int | None, beta: np.ndarray,
                        solver: dict[str, Any], coreset: dict[str, Any],
                        gen: np.random.Generator | None, max_atoms: int | None = None,
                        show: bool = False, label: str = "private coresets",
                        proxy_size: int | None = None
                        ) -> tuple[np.ndarray, dict[str, Any], bool,
                                   list[tuple[np.ndarray, np.ndarray]]]:
    """Paper 000 Alg. 2 in unit coordinates.

    Returns the support, diagnostics, whether all noise was secure, and each group's
    *proxy* for the noisy Lloyd step: with ``proxy_size`` an int, at most that many of
    the group's placed coreset points (a public uniform subsample, drawn after the
    solver so that the support is unchanged), weights 1; else an empty list. Released
    values only. ``gen`` None: secure noise, and an OS-seeded generator for the public
    randomness (JL map, solver initialisation, proxy subsample).

    ``max_atoms`` None: one solver atom per coreset point, the coreset subsampled to
    ``coreset["size"]`` (default at most :data:`DEFAULT_MAX_CORESET`), as before.
    ``max_atoms`` an int: each coreset (subsampled only to an explicit ``size``, else
    to at most :data:`DEFAULT_MAX_PLACED`) is merged by the cells of its public
    partition into at most ``max_atoms`` weighted atoms
    (:func:`~privot.barycenters.coresets.cell_atoms`) and the solver runs on those.
    Either way everything after the noisy counts reads only the released counts, public
    parameters and public randomness: post-processing.
    """
    public = gen if gen is not None else np.random.default_rng()
    t0 = time.perf_counter()
    cores = []
    bar = progress_bar(show, total=len(sizes), desc=label, unit="group")
    try:
        for i, n in enumerate(sizes):  # Alg. 2 lines 2-5: one eps-DP coreset per group
            size = coreset.get("size") or (min(n, DEFAULT_MAX_CORESET) if max_atoms is None
                                           else min(n, DEFAULT_MAX_PLACED))
            options = {"depth": coreset.get("depth"), "placement": coreset.get("placement"),
                       "region": coreset.get("region"), "size": size, "rng": gen}
            cores.append(make(i, epsilon, options))
            bar.update(1)
    finally:
        bar.close()
    t1 = time.perf_counter()
    pts = placed = [c.points for c in cores]
    d = pts[0].shape[1] if len(pts[0]) else cores[0].bounds.dim
    n_points = [len(x) for x in pts]
    if max_atoms is None:
        wts: list[np.ndarray] | None = None
        levels = None
    else:  # step 7: weighted atoms by public cells (post-processing)
        reduced = [cell_atoms(x, bounds=c.bounds, depth=c.depth, max_atoms=max_atoms)
                   for x, c in zip(pts, cores, strict=True)]
        pts = [a for a, _, _ in reduced]
        wts = [w.astype(np.float64) for _, w, _ in reduced]
        levels = [lvl for _, _, lvl in reduced]
    t_atoms = time.perf_counter()
    # A release path is total: a coreset left empty by the region (every noisy point
    # fell outside it) becomes the public centre of the bounds. Which groups are empty
    # is a function of the release, so it may be said (warning and diagnostics).
    empty = [i for i, x in enumerate(pts) if len(x) == 0]
    for i in empty:
        pts[i] = np.zeros((1, d))
        if wts is not None:
            wts[i] = np.ones(1)
    if empty:
        warnings.warn(f"the private coreset of group(s) {empty} is empty (every point fell "
                      "outside the region); the centre of the bounds stands in for it. "
                      "Widen the region or the bounds.", UserWarning, stacklevel=3)
    proj = None
    if projection_dim is not None and projection_dim < d:
        # Alg. 2 line 1: a data-independent Gaussian JL map
        proj = gaussian_jl_matrix(d, dim=projection_dim, rng=public)
    # fewer private points than atoms (a small region): the same measures, repeated
    pts, wts = _repeated_to(m, pts, wts)
    low = pts if proj is None else [x @ proj.T for x in pts]
    # Alg. 2 line 6 (post-processing); total: a numerical failure falls back by a
    # public rule instead of raising after the budget is charged
    fit = free_support_barycenter(low, m=m, p=p, measure_weights=wts, group_weights=beta,
                                  rng=public, on_failure="fallback", progress=show,
                                  **solver)
    if proj is None:
        support = fit.support
    else:
        plans = solution_weights(fit.support, low, measure_weights=wts, p=p,
                                 on_failure="fallback")  # Alg. 3
        support = support_points(pts, plans, p=p, group_weights=beta)  # Alg. 4, in R^d
    t2 = time.perf_counter()
    proxies = [] if proxy_size is None else [_subsample(x, proxy_size, public)
                                             for x in placed]
    diag = {"coreset_sizes": n_points,
            "solver_atoms": [len(x) for x in pts],
            "atom_levels": levels,
            "coreset_depths": [c.depth for c in cores],
            "n_outside_region": [c.n_outside_region for c in cores],
            "empty_coresets": empty, "solver_fallback": fit.fallback,
            "solver_failure": fit.failure, "solver_non_optimal_plans": fit.non_optimal_plans,
            "solver_converged": bool(fit.converged), "solver_outer_iterations": fit.n_outer,
            "projection_dim": None if proj is None else int(proj.shape[0]),
            "seconds_coreset": t1 - t0, "seconds_atoms": t_atoms - t1,
            "seconds_barycenter": t2 - t_atoms}
    return support, diag, all(c.secure for c in cores), proxies


def _subsample(points: np.ndarray, size: int, gen: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """At most ``size`` of ``points`` (a public uniform draw without replacement), weights 1."""
    if len(points) > size:
        points = points[np.sort(gen.choice(len(points), size=size, replace=False))]
    return points, np.ones(len(points))


def private_barycenter(groups: Sequence[np.ndarray] | np.ndarray | Any, *,
                       bounds: PublicBounds | None = None,
                       m: int, epsilon: float, delta: float | None = None,
                       method: str = "auto", p: float = 2,
                       group_weights: Sequence[float] | None = None,
                       population_size: int | Sequence[int] | None = None,
                       projection_dim: int | str | None = "auto",
                       splits: int | None = None, iterations: int = DEFAULT_ITERATIONS,
                       anchor: np.ndarray | None = None,
                       anchor_fraction: float | None = None,
                       step: str = "lloyd",
                       balancing_rounds: int = DEFAULT_BALANCING_ROUNDS,
                       proxy_size: int = DEFAULT_PROXY_SIZE, shrinkage: bool = True,
                       calibration: str = "analytic",
                       reg: float = 1e-3, solver: str = "sinkhorn", n_outer: int = 50,
                       n_inner: int = 100, polish: int | None = None,
                       placement: str = "scaled",
                       region: Region | None = None, coreset_size: int | None = None,
                       depth: int | None = None,
                       max_atoms: int | None = DEFAULT_MAX_ATOMS,
                       basis: np.ndarray | str | None = None,
                       image_shape: tuple[int, int] | None = None,
                       basis_dim: int | None = None, subspace_dim: int | None = None,
                       cells: int | None = None, rounds: int | None = None,
                       projection_share: float | None = None,
                       complement_mean: bool | None = None,
                       rng: np.random.Generator | int | None = None,
                       accountant: Spender | None = None,
                       progress: bool | None = None) -> BarycenterResult:
    r"""A differentially private Wasserstein barycenter of ``k`` sensitive groups.

    Finds :math:`m` equally weighted points :math:`\nu` minimising
    :math:`\sum_i \beta_i W_p^p(\mu_i, \nu)` (paper 000 Def. 3, Assumption 2).

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays, one (n, d) array for ``k = 1``, or CoresetLeafCounts
        The sensitive points; one person contributes one point to one group. For data
        too large for memory, the exact leaf counts computed by an engine
        (:func:`privot.barycenters.coreset_leaf_counts`, on DuckDB or Spark; counted at a
        depth at least the one wanted, e.g. ``MAX_DEPTH``) with ``method="coreset"``.
    bounds : PublicBounds
        Public box or ball holding the data (never derived from the data); points
        outside are clipped and counted. Taken from the leaf counts when those are given.
    m : int
        Support size, ``1 <= m <= min_i n_i``.
    epsilon : float
        The privacy budget (on the population when ``population_size`` is given).
    delta : float, optional
        Required in (0, 1) by ``method="perturbation"``; must be omitted or 0 for the
        pure-DP ``"coreset"`` method. ``"subspace"``: omitted or 0 for pure epsilon-DP
        (Laplace noise), in (0, 1) for (epsilon, delta)-DP (Gaussian noise, GDP
        composition). ``"auto"`` choosing the coreset runs it pure and charges no delta.
    method : {"auto", "coreset", "perturbation", "subspace"}
        ``"auto"`` (default): :func:`choose_method` of the public dimension ``d`` (the
        coreset for ``d <= 2``, the subspace method above); the result's ``method``
        says which ran and ``params["method_requested"]`` what was asked.
        ``"subspace"``: private projection, DP Lloyd in the subspace, the barycenter
        of the private summaries, the lift (:mod:`privot.barycenters.subspace`).
    p : float
        Order of the Wasserstein cost, ``>= 1``.
    group_weights : sequence of float, optional
        :math:`\beta_i` (normalised to sum to one), default ``1/k``.
    population_size : int or sequence of int, optional
        Size of the population each group was sampled from uniformly without
        replacement (public). The budget is then met on the population by amplification.
    projection_dim : int, "auto" or None
        :math:`d'` of the JL map (paper 000 Alg. 2 / 001 Thm 5). ``"auto"``:
        :func:`default_projection_dim` (Thm 5.4's order); ``None``: no projection.
    splits : int, optional
        ``k'`` for ``"perturbation"``: parts per group (paper 001 Prop. 6). Default:
        :func:`~privot.barycenters.perturbation.recommended_splits` (Thm 8's
        :math:`k'_*`).
    iterations : int
        Noisy steps of ``"perturbation"`` (Lloyd steps, each after its balancing
        rounds, or anchored steps), 1 to 100 with ``step="lloyd"``.
    anchor : (m, d) array, optional
        Public anchor atoms for ``"perturbation"`` (caller coordinates). Default: a
        private-coreset barycenter bought with ``anchor_fraction`` of the sample epsilon.
    anchor_fraction : float, optional
        In (0, 1); default :data:`DEFAULT_LLOYD_ANCHOR_FRACTION` for ``step="lloyd"``,
        :data:`DEFAULT_ANCHOR_FRACTION` for ``step="anchored"`` (both measured).
    step : {"lloyd", "anchored"}
        ``"perturbation"``'s released statistic. ``"lloyd"`` (default): noisy Lloyd
        steps on each group's power cells, balanced on the private coreset
        (:mod:`privot.barycenters.lloyd_perturbation`); ``"anchored"``: the anchored
        barycentric step over ``splits`` parts (:mod:`privot.barycenters.perturbation`).
    balancing_rounds : int
        ``step="lloyd"``: private balancing rounds of the cell counts before each step
        (0 to 10; default :data:`~privot.barycenters.lloyd_perturbation.DEFAULT_BALANCING_ROUNDS`).
    proxy_size : int
        ``step="lloyd"``: at most this many of each group's placed anchor-coreset points
        (a public subsample) stand for the group in the power-weight OT solves, 100 to
        :data:`DEFAULT_MAX_PLACED` (default
        :data:`~privot.barycenters.lloyd_perturbation.DEFAULT_PROXY_SIZE`). Larger is
        more faithful and slower (an OT solve of ``proxy_size`` x ``m``).
    shrinkage : bool
        ``step="lloyd"``: shrink each step's moves toward the previous atoms by
        empirical Bayes, from the step's known noise
        (:func:`~privot.barycenters.lloyd_perturbation.shrunk_step`; post-processing).
        Default True; False releases the raw noisy step.
    calibration : {"analytic", "classic"}
        Gaussian calibration of ``"perturbation"`` (``"classic"`` is the paper's
        :math:`\sigma^2 = 2m\ln(1.25/\delta)/(\varepsilon k)^2`).
    reg, solver, n_outer, n_inner, polish :
        The non-private free-support barycenter (post-processing):
        :func:`privot.ot.free_support_barycenter` (``polish``: exact steps after
        Sinkhorn; when None, :data:`DEFAULT_ATOMS_POLISH` with ``max_atoms`` and the
        solver's default without).
    placement : {"scaled", "uniform", "centre"}
        Where coreset points go in their leaf cell (paper 000 App. F.2).
    region : Region, optional
        Public region the coreset points are restricted to (e.g.
        :func:`~privot.barycenters.regions.continental_us`).
    coreset_size : int, optional
        Subsample each coreset to this many points (post-processing). Default: the
        group size, at most :data:`DEFAULT_MAX_CORESET` when ``max_atoms`` is None and
        at most :data:`DEFAULT_MAX_PLACED` otherwise.
    depth : int, optional
        Depth of the coreset partition (default about :math:`\log_2(\varepsilon n)`).
    max_atoms : int or None
        The solver sees each group's coreset as at most this many weighted atoms: its
        points merged by the cells of its own public partition, at the deepest level
        with at most ``max_atoms`` non-empty cells, each atom at the mean of its cell's
        points with their number as weight
        (:func:`~privot.barycenters.coresets.cell_atoms`). Default
        :data:`DEFAULT_MAX_ATOMS`. None: one solver atom per coreset point, subsampled
        to ``coreset_size`` (the behaviour before; much slower for large groups).
        Post-processing either way: reads only the released counts, the public
        partition and public parameters.
    basis : None, "dct" or (d, d0) array
        ``"subspace"``: a public orthonormal basis the data is expressed in first
        (None: the identity). ``"dct"``: the 2-D DCT of images of ``image_shape``, its
        ``basis_dim`` lowest frequencies
        (:func:`~privot.barycenters.subspace.dct_basis`). An array must have
        orthonormal columns (checked).
    image_shape : (height, width), optional
        With ``basis="dct"``: the images' shape, ``height * width = d`` (row-major).
    basis_dim : int, optional
        With ``basis="dct"``: ``d0``, default
        :data:`~privot.barycenters.subspace.DEFAULT_BASIS_DIM` (at most ``d``).
    subspace_dim, cells, rounds : int, optional
        ``"subspace"``: ``d'`` (the DP second moment's top eigenvectors, when
        ``d0 > d'``), Lloyd centres per group and Lloyd rounds. Defaults, from public
        quantities only (the smallest group size, epsilon, delta, ``m``, ``d0``):
        :func:`~privot.barycenters.subspace.default_subspace_dim`,
        :func:`~privot.barycenters.subspace.default_cells` (each cell should hold six
        deviations of its noisy count) and one round (none with one cell).
    projection_share : float, optional
        ``"subspace"``: the share of the budget (of :math:`\mu^2` with Gaussian noise,
        of epsilon with Laplace noise) spent on the DP second moment, in (0, 1); default
        :data:`~privot.barycenters.subspace.DEFAULT_PROJECTION_SHARE` of the noise.
    complement_mean : bool, optional
        ``"subspace"`` with a DP second moment: the moment round releases each group's
        sum in the whole basis, and the atoms' component outside the subspace is the
        groups' weighted DP mean (True), or only in the subspace, that component being
        the public centre (False). Default
        :data:`~privot.barycenters.subspace.DEFAULT_COMPLEMENT_MEAN` (measured: False
        with Gaussian noise, True with Laplace noise).
    rng : Generator or int, optional
        Seeded randomness for experiments (``secure=False``); default OS CSPRNG noise.
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``); a BitSource is refused here, as the public
        randomness (projections, subsampling) is drawn from a numpy generator.
    accountant : Spender, optional
        Charged the sample budget once, before anything is released.
    progress : bool, optional
        Progress bars on stderr (``tqdm.auto``): one over the groups' coresets, one over
        the solver's outer iterations. None (default): only when stderr is a terminal;
        True / False force them on / off. Nothing is printed when off. The bars show
        public quantities and iteration counts only (iterations to convergence depend on
        the released coresets, like the support itself).

    Returns
    -------
    BarycenterResult

    Privacy
    -------
    Unit: one point of one group; relation: replace one point (paper 000 Def. 4),
    group sizes public. ``"coreset"``: epsilon-DP (each group's coreset is epsilon-DP,
    the groups are disjoint). ``"perturbation"``: (epsilon, delta)-DP (basic
    composition of the pure-DP anchor and the Gaussian steps). ``"subspace"``: pure
    epsilon-DP (Laplace, basic composition of its steps) or (epsilon, delta)-DP
    (Gaussian steps composed as GDP, Dong, Roth and Su Cor. 3.3); the basis, ``d'``,
    the cells and rounds are public. Derivations: ``docs/privacy/barycenters.md``.
    """
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"one of {METHODS}")
    requested = method
    if isinstance(groups, CoresetLeafCounts) and method == "auto":
        method = "coreset"  # engine leaf counts: the coreset is the only method on them
    if isinstance(groups, CoresetLeafCounts):
        # exact leaf counts from an engine (DuckDB or Spark): coreset method only
        if method != "coreset":
            raise InvalidParameterError(
                "method", method, "'coreset' or 'auto' when groups are engine leaf counts "
                "(the other methods need the points themselves)")
        if bounds is not None and not groups.bounds.same_as(bounds):
            raise InvalidParameterError("bounds", bounds,
                                        "omitted or the bounds the leaf counts were made with")
        bounds = groups.bounds
        keys = list(groups.counts)
        raw = None
        sizes = [int(groups.n[key]) for key in keys]
        group_keys: list[Any] = keys
    else:
        if not isinstance(bounds, PublicBounds):
            raise InvalidParameterError("bounds", bounds,
                                        "a privot.barycenters.PublicBounds")
        raw = _check_groups(groups, bounds)
        beta = check_weights(group_weights, len(raw), "group_weights")
        sizes = [len(g) for g in raw]  # rows, unusable ones included: public
        group_keys = list(range(len(raw)))
    k = len(sizes)
    mm = check_int(m, "m", minimum=1, maximum=min(sizes))
    eps = check_epsilon(epsilon)
    if method == "auto":
        method = choose_method(bounds.dim)
    if method == "coreset" and requested == "auto":
        dlt = 0.0  # pure epsilon-DP: a delta the caller allowed is not needed
    elif method == "subspace":
        # Laplace noise (pure) without delta, Gaussian noise with it
        dlt = 0.0 if delta in (None, 0, 0.0) else check_delta(delta, allow_zero=False)
    elif method == "coreset":
        if delta not in (None, 0, 0.0):
            raise InvalidParameterError(
                "delta", delta, "omitted or 0: the coreset method is pure epsilon-DP")
        dlt = 0.0
    else:
        if delta is None:
            raise InvalidParameterError("delta", delta,
                                        "a number in (0, 1) for method='perturbation'")
        dlt = check_delta(delta, allow_zero=False)
    if not (isinstance(p, (int, float)) and not isinstance(p, bool) and p >= 1):
        raise InvalidParameterError("p", p, "a number >= 1")
    if raw is None:  # leaf counts: the weights are validated here
        beta = check_weights(group_weights, k, "group_weights")
    if calibration not in CALIBRATIONS:
        raise InvalidParameterError("calibration", calibration, f"one of {CALIBRATIONS}")
    if step not in PERTURBATION_STEPS:
        raise InvalidParameterError("step", step, f"one of {PERTURBATION_STEPS}")
    if anchor_fraction is None:
        anchor_fraction = (DEFAULT_LLOYD_ANCHOR_FRACTION if step == "lloyd"
                           else DEFAULT_ANCHOR_FRACTION)
    if not (isinstance(anchor_fraction, (int, float)) and 0 < anchor_fraction < 1):
        raise InvalidParameterError("anchor_fraction", anchor_fraction, "a number in (0, 1)")
    check_int(balancing_rounds, "balancing_rounds", minimum=0, maximum=10)
    check_int(proxy_size, "proxy_size", minimum=100, maximum=DEFAULT_MAX_PLACED)
    if not isinstance(shrinkage, (bool, np.bool_)):
        raise InvalidParameterError("shrinkage", shrinkage, "True or False")
    d = bounds.dim
    if projection_dim == "auto":
        dp = default_projection_dim(min(sizes), d, p=p)
    elif projection_dim is None:
        dp = None
    else:
        dp = check_int(projection_dim, "projection_dim", minimum=1)
        dp = dp if dp < d else None
    if coreset_size is not None:
        check_int(coreset_size, "coreset_size", minimum=1)
    if max_atoms is not None:
        check_int(max_atoms, "max_atoms", minimum=1)
    show = show_progress(progress)
    subspace_basis = None
    if method == "subspace":
        subspace_basis = _resolve_basis(basis, d, image_shape, basis_dim)
        why = f"chosen by method='auto' for d = {d}" if requested == "auto" else "asked"
        for name, value, default in (("projection_dim", projection_dim, "auto"),
                                     ("depth", depth, None), ("region", region, None),
                                     ("coreset_size", coreset_size, None),
                                     ("anchor", anchor, None), ("splits", splits, None)):
            if not (value is default or (isinstance(value, str) and value == default)):
                raise InvalidParameterError(
                    name, value if not isinstance(value, np.ndarray) else value.shape,
                    f"omitted: it belongs to the coreset and perturbation methods (this "
                    f"release runs method='subspace', {why}; pass method='coreset' for "
                    "them)")
    elif any(v is not None for v in (basis, image_shape, basis_dim, subspace_dim, cells,
                                     rounds, projection_share, complement_mean)):
        given = next(name for name, v in (("basis", basis), ("image_shape", image_shape),
                                          ("basis_dim", basis_dim),
                                          ("subspace_dim", subspace_dim),
                                          ("cells", cells), ("rounds", rounds),
                                          ("projection_share", projection_share),
                                          ("complement_mean", complement_mean))
                     if v is not None)
        raise InvalidParameterError(given, locals()[given],
                                    f"omitted: it belongs to method='subspace' (this "
                                    f"release runs method={method!r})")
    if method == "perturbation":  # checked before anything is charged
        if anchor is not None:
            anchor = check_points(anchor, "anchor")
            if anchor.shape != (mm, d):
                raise InvalidParameterError("anchor", anchor.shape, f"an ({mm}, {d}) array")
        if step == "lloyd":  # the anchored step's parameters have no meaning here
            if splits is not None:
                raise InvalidParameterError("splits", splits, "omitted with step='lloyd' "
                                            "(it belongs to step='anchored')")
            if calibration != "analytic":
                raise InvalidParameterError("calibration", calibration,
                                            "'analytic' with step='lloyd' (GDP calibration)")
            check_int(iterations, "iterations", minimum=1, maximum=100)
        if splits is not None:
            splits = check_int(splits, "splits", minimum=1, maximum=min(sizes))

    # curator decisions on the exact data, made before anything is charged
    if raw is not None:
        usable, unit_rows, n_unusable, n_outside = _row_counts(raw, bounds)
        def hint(i: int) -> str:
            return swapped_axes_hint(raw[i][usable[i]], lambda x: ~bounds.clip(x)[1])
    else:
        n_unusable = [int(groups.n_unusable.get(key, 0)) for key in group_keys]
        n_outside = [int(groups.n_clipped[key]) for key in group_keys]
        def hint(i: int) -> str:
            return AXES_HINT
    _check_usable_groups([repr(key) for key in group_keys], sizes, n_unusable, n_outside,
                         hint)

    _check_solver(solver, reg, n_outer, n_inner, polish)  # before any charge
    sample = _sample_budget(eps, dlt, sizes, population_size)
    gen = check_rng(rng, bits=False)  # the one rng rule (an int seed: default_rng(seed))
    plan: SubspacePlan | None = None
    if method == "subspace":  # every public choice fixed before the charge
        plan = plan_subspace(sizes=sizes, m=mm,
                             d0=d if subspace_basis is None else subspace_basis.shape[1],
                             budget=sample, subspace_dim=subspace_dim, cells=cells,
                             rounds=rounds, projection_share=projection_share,
                             complement_mean=complement_mean)
    lplan = None
    if method == "perturbation":
        # every check of the Gaussian steps runs before the charge (all public but the
        # ball precondition, which to_unit guarantees), so that the release always answers
        eps_anchor = anchor_fraction * sample.epsilon if anchor is None else 0.0
    if method == "perturbation" and step == "lloyd":
        # a public anchor has no private coreset to balance on: no balancing rounds, the
        # whole budget on the steps
        lplan = plan_lloyd(m=mm, dim=d, epsilon=sample.epsilon - eps_anchor,
                           delta=sample.delta,
                           balancing_rounds=balancing_rounds if anchor is None else 0,
                           proxy_size=proxy_size, shrinkage=shrinkage,
                           steps=iterations)
    elif method == "perturbation":
        kp = (recommended_splits(min(sizes), m=mm, d=d, epsilon=sample.epsilon - eps_anchor,
                                 delta=sample.delta, k=k, p=p) if splits is None else splits)
        units = []
        for g, u, rows in zip(raw, usable, unit_rows, strict=True):
            # unusable rows stay in place (NaN) so that the data-independent split into
            # parts sees every row index; they contribute nothing
            unit = np.full_like(g, np.nan)
            unit[u] = rows
            units.append(unit)
        check_perturbation_inputs(units, m=mm, epsilon=sample.epsilon - eps_anchor,
                                  delta=sample.delta, splits=kp, iterations=iterations,
                                  group_weights=beta, calibration=calibration)
    if accountant is not None:
        ran = (plan.event if plan is not None else
               release_event(method, sample, eps_anchor if method == "perturbation" else 0.0))
        accountant.spend(PrivacyCost(sample.epsilon, sample.delta,
                                     mu=plan.mu if plan is not None else None, event=ran),
                         mechanism=f"private-barycenter-{method}",
                         relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                         params={"m": mm, "k": k, "population_size": population_size})
    make = (_coresets_of_points(raw, bounds) if raw is not None
            else _coresets_of_counts(groups, group_keys))
    solver_kw = {"method": solver, "reg": reg, "n_outer": n_outer, "n_inner": n_inner}
    if polish is not None:
        solver_kw["polish"] = polish
    elif max_atoms is not None and solver == "sinkhorn":
        solver_kw["polish"] = DEFAULT_ATOMS_POLISH
    coreset_kw = {"size": coreset_size, "depth": depth, "placement": placement,
                  "region": region}
    params: dict[str, Any] = {"m": mm, "k": k, "p": p, "d": d,
                              "method_requested": requested,
                              "projection_dim": dp if method != "subspace" else None,
                              "solver": solver, "reg": reg, "n_outer": n_outer,
                              "n_inner": n_inner, "placement": placement,
                              "max_atoms": max_atoms, "polish": solver_kw.get("polish"),
                              "group_sizes": sizes, "population_size": population_size,
                              "group_weights": beta.tolist()}
    t0 = time.perf_counter()
    if method == "subspace":
        support_u, diag, secure = _subspace_barycenter(
            unit_rows, plan, subspace_basis, sizes, m=mm, p=p, beta=beta, solver=solver_kw,
            gen=gen, show=show)
        for unused in ("placement", "max_atoms"):  # the coreset's, not this method's
            params.pop(unused, None)
        params.update({"subspace": plan.to_dict(),
                       "basis": ("identity" if basis is None else
                                 basis if isinstance(basis, str) else "caller"),
                       "image_shape": None if image_shape is None else list(image_shape)})
    elif method == "coreset":
        support_u, diag, secure = _coreset_barycenter(
            make, sizes, m=mm, epsilon=sample.epsilon, p=p, projection_dim=dp, beta=beta,
            solver=solver_kw, coreset=coreset_kw, gen=gen, max_atoms=max_atoms, show=show)[:3]
    else:
        diag = {}
        secure = True
        proxies = None
        if anchor is None:
            # the anchor's coresets (released with it) are the Lloyd step's proxies
            anchor_u, diag, secure, proxies = _coreset_barycenter(
                make, sizes, m=mm, epsilon=eps_anchor, p=p, projection_dim=dp, beta=beta,
                solver=solver_kw, coreset=coreset_kw, gen=gen, max_atoms=max_atoms,
                show=show, label="anchor coresets",
                proxy_size=lplan.proxy_size if lplan is not None else None)
        else:
            anchor_u, _ = bounds.to_unit(anchor)
        params.update({"step": step, "anchor": "public" if anchor is not None else "coreset",
                       "anchor_epsilon": eps_anchor,
                       "perturbation_epsilon": sample.epsilon - eps_anchor})
        bar = progress_bar(show, total=1, desc="output perturbation", unit="release")
        try:
            if lplan is not None:
                rel_l = lloyd_perturbation(unit_rows, anchor_u, plan=lplan,
                                           group_weights=beta, proxies=proxies, rng=gen)
                support_u, secure = rel_l.support, secure and rel_l.secure
                params.update({"lloyd": lplan.to_dict(), "iterations": iterations})
            else:
                proj = (None if dp is None else
                        gaussian_jl_matrix(d, dim=dp, rng=gen if gen is not None
                                           else np.random.default_rng()))
                rel = output_perturbation(units, anchor_u,
                                          epsilon=sample.epsilon - eps_anchor,
                                          delta=sample.delta, splits=kp,
                                          iterations=iterations, group_weights=beta,
                                          calibration=calibration, projection=proj, rng=gen)
                support_u, secure = rel.support, secure and rel.secure
                diag["perturbation"] = rel.curator_only  # exact, data-dependent
                _warn_if_noise_dominates(rel.sigma, d, k, kp)
                params.update({"splits": kp, "iterations": rel.iterations,
                               "sigma": rel.sigma, "sensitivity": rel.sensitivity,
                               "calibration": calibration})
            bar.update(1)
        finally:
            bar.close()
    # the bounds are convex and public: projecting the atoms onto them is post-processing
    # and never moves an atom away from any point inside them
    support, _ = bounds.clip(bounds.from_unit(support_u))
    diag["seconds_total"] = time.perf_counter() - t0
    return BarycenterResult(
        support=support, weights=np.full(mm, 1.0 / mm), method=method,
        cost=PrivacyCost(eps, dlt), sample_cost=sample,
        relation=Neighbouring.REPLACE_ONE_IN_GROUP,
        secure=secure, bounds=bounds, n_clipped=tuple(n_outside),
        n_unusable=tuple(n_unusable), params=params, diagnostics=diag)


def _repeated_to(m: int, pts: list[np.ndarray], wts: list[np.ndarray] | None
                 ) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Every point (and weight) repeated ``r`` times when the measures hold fewer than
    ``m`` points in all: the same measures (the solver normalises the weights), on which
    the solver can place ``m`` atoms. A public rule on released sizes."""
    total = sum(len(x) for x in pts)
    if total >= m:
        return pts, wts
    r = -(-m // total)
    return ([np.repeat(x, r, axis=0) for x in pts],
            None if wts is None else [np.repeat(w, r) for w in wts])


def _check_solver(solver: object, reg: object, n_outer: object, n_inner: object,
                  polish: object) -> None:
    """The barycenter solver's parameters, as the solver checks them, before the charge
    (a refusal after it would spend the budget and release nothing)."""
    if not isinstance(solver, str) or solver not in BARYCENTER_METHODS:
        raise InvalidParameterError("solver", solver, f"one of {BARYCENTER_METHODS}")
    check_positive(reg, "reg")
    check_int(n_outer, "n_outer", minimum=1)
    check_int(n_inner, "n_inner", minimum=1)
    if polish is not None:
        check_int(polish, "polish", minimum=0)


def _subspace_barycenter(units: list[np.ndarray], plan: SubspacePlan,
                         basis: np.ndarray | None, sizes: list[int], *, m: int, p: float,
                         beta: np.ndarray, solver: dict[str, Any],
                         gen: np.random.Generator | None, show: bool = False
                         ) -> tuple[np.ndarray, dict[str, Any], bool]:
    """The subspace method in unit coordinates: private summaries, their barycenter in
    the subspace (post-processing), the lift through the released basis."""
    bar = progress_bar(show, total=1, desc="subspace summaries", unit="release")
    try:
        rel = subspace_release(units, plan=plan, basis=basis, sizes=sizes, m=m, rng=gen)
        bar.update(1)
    finally:
        bar.close()
    if plan.subspace_dim == 0:  # the mean only: every atom at the groups' weighted mean
        support = np.repeat((beta @ rel.complements)[None], m, axis=0)
        return support, {"summary_atoms": [1] * len(units),
                         "seconds_summaries": rel.seconds}, rel.secure
    public = gen if gen is not None else np.random.default_rng()
    pts, wts = _repeated_to(m, rel.atoms, rel.weights)  # fewer atoms than m: repeated
    t0 = time.perf_counter()
    fit = free_support_barycenter(pts, m=m, p=p, measure_weights=wts, group_weights=beta,
                                  rng=public, on_failure="fallback", progress=show,
                                  **solver)
    # the lift (step 5): the subspace through the released basis, plus the groups'
    # weighted DP mean outside it (the barycenter of point masses is their mean)
    support = fit.support @ rel.projection.T + beta @ rel.complements
    diag = {"solver_fallback": fit.fallback, "solver_failure": fit.failure,
            "solver_converged": bool(fit.converged), "solver_outer_iterations": fit.n_outer,
            "summary_atoms": [len(x) for x in rel.atoms],
            "seconds_summaries": rel.seconds,
            "seconds_barycenter": time.perf_counter() - t0}
    return support, diag, rel.secure


#: sigma * sqrt(d) above this share of the unit diameter triggers a warning.
NOISE_WARNING_SHARE = 0.1


def _warn_if_noise_dominates(sigma: float, d: int, k: int, splits: int) -> None:
    """Warn when the Gaussian noise is a large share of the domain (public quantities only)."""
    spread = sigma * math.sqrt(d)
    if spread > NOISE_WARNING_SHARE:
        warnings.warn(
            f"output perturbation noise is large: sigma * sqrt(d) = {spread:.3g} of the "
            f"bounds' diameter 1 (k = {k} groups, k' = {splits} parts); the support will be "
            "mostly noise. The coreset method is likely better here (paper 000 Remark 2: "
            "perturbation needs m d << (eps k k')^2); more data per part, a larger "
            "epsilon, population_size (amplification) or fewer iterations also help.",
            UserWarning, stacklevel=3)
