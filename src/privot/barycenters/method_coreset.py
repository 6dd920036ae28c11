r"""``method="coreset"`` (paper 000 Alg. 2), epsilon-DP, and the coreset barycenter
the perturbation method uses as its anchor.

.. code-block:: text

    groups --(PublicBounds)--> unit ball --(private coreset per group, eps each;
    parallel composition)--> mu'_i --(weighted atoms: the coreset merged by the cells
    of its public partition, max_atoms)--> mu'_i --(JL Pi)--> mu^_i
    --(free-support barycenter)--> nu^
    --(Alg. 3 SolutionWeights: plans mu^_i -> nu^)--> (S, w)
    --(Alg. 4 SupportPoints with mu'_i in R^d)--> nu --(from_unit)--> support

Privacy
-------
Each group's coreset is epsilon-DP (Laplace counts on the levels of its public
partition); the groups are disjoint, so the release is epsilon-DP (parallel
composition). Everything after the noisy leaf counts (consistency, placement, the merge
into weighted atoms, the JL map, the solver, its progress bars) reads only the released
counts, public parameters and public randomness: post-processing.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from privot._progress import progress_bar
from privot.barycenters.coresets import (
    PrivateCoreset,
    cell_atoms,
    coreset_from_leaf_counts,
    default_depth,
    private_coreset,
)
from privot.barycenters.error import method_unstated
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.inputs import Groups
from privot.barycenters.params import DEFAULT_MAX_PLACED, BarycenterParams, changed_fields
from privot.barycenters.release import (
    Release,
    RunSettings,
    refuse_options,
    release_event,
    start_release,
    warn_unused,
)
from privot.barycenters.result import BarycenterResult
from privot.errors import InvalidParameterError
from privot.ot import (
    free_support_barycenter,
    gaussian_jl_matrix,
    solution_weights,
    support_points,
)

__all__ = ["DEFAULT_MAX_CORESET", "CoresetMaker", "coreset_barycenter", "coreset_maker",
           "repeated_to", "run_coreset"]

#: Default cap on each group's coreset size (the paper subsamples its coresets "which
#: increases cost by a negligible amount, but significantly improves the runtime"):
#: US places, n = 200,000: cost 2.348 with 50,000 points against 2.353 with all of them,
#: and 16 s instead of minutes (benchmarks/results/barycenter_us.json).
DEFAULT_MAX_CORESET = 50_000


#: ``make(i, epsilon, options) -> PrivateCoreset``: the private coreset of group ``i``.
CoresetMaker = Callable[[int, float, dict[str, Any]], PrivateCoreset]


def _coresets_of_points(raw: list[np.ndarray], bounds: PublicBounds) -> CoresetMaker:
    # private_coreset leaves unusable (non-finite) rows out of the counts and keeps them
    # in the public size n = len(raw[i])
    def make(i: int, epsilon: float, options: dict[str, Any]) -> PrivateCoreset:
        return private_coreset(raw[i], bounds=bounds, epsilon=epsilon, **options)
    return make



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




def coreset_barycenter(make: CoresetMaker, sizes: list[int], *, m: int, epsilon: float,
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
                      "Widen the region or the bounds.", UserWarning, stacklevel=4)
    proj = None
    if projection_dim is not None and projection_dim < d:
        # Alg. 2 line 1: a data-independent Gaussian JL map
        proj = gaussian_jl_matrix(d, dim=projection_dim, rng=public)
    # fewer private points than atoms (a small region): the same measures, repeated
    pts, wts = repeated_to(m, pts, wts)
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



def repeated_to(m: int, pts: list[np.ndarray], wts: list[np.ndarray] | None
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


def coreset_maker(groups: Groups) -> CoresetMaker:
    """The private coreset of each group: from its points, or from the engine's counts."""
    if groups.raw is not None:
        return _coresets_of_points(groups.raw, groups.bounds)
    return _coresets_of_counts(groups.counts, groups.keys)


def coreset_options(release: Release) -> dict[str, Any]:
    """The coreset keywords of :func:`coreset_barycenter` (public choices)."""
    c = release.params.coreset
    return {"size": c.coreset_size, "depth": c.depth, "placement": c.placement,
            "region": c.region}


def run_coreset(groups: Groups, params: BarycenterParams, settings: RunSettings
                ) -> BarycenterResult:
    """``method="coreset"``: checks, the charge (pure epsilon on the sample), Alg. 2."""
    refuse_options(params.subspace, changed_fields(params.subspace),
                   "omitted: it belongs to method='subspace' (this release runs "
                   "method='coreset')")
    if settings.requested != "auto" and params.delta not in (None, 0, 0.0):
        raise InvalidParameterError(
            "delta", params.delta, "omitted or 0: the coreset method is pure epsilon-DP")
    # auto: pure epsilon-DP, a delta the caller allowed is not needed (nor charged)
    warn_unused(changed_fields(params.perturbation),
                "options of method='perturbation' (this release runs method='coreset')")
    release = start_release(groups, params, "coreset", 0.0, settings)
    release.error = method_unstated("coreset")  # public parameters only, before the charge
    release.charge(release_event("coreset", release.sample))
    record = release.record()
    started = time.perf_counter()
    support_u, diag, secure = coreset_barycenter(
        coreset_maker(groups), groups.sizes, m=params.m, epsilon=release.sample.epsilon,
        p=params.p, projection_dim=release.projection_dim(), beta=groups.beta,
        solver=release.solver_kw(), coreset=coreset_options(release), gen=release.gen,
        max_atoms=params.coreset.max_atoms, show=settings.show)[:3]
    return release.finish(support_u, secure=secure, record=record, diagnostics=diag,
                          started=started)
