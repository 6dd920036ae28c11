r"""``method="subspace"`` (high dimension): eps-DP (Laplace) or (eps, delta)-DP (Gaussian).

Private projection (a DP second moment when ``d0 > d'``), DP Lloyd in the subspace, the
barycenter of the private summaries (post-processing), the lift through the released
basis: :mod:`privot.barycenters.subspace` has the steps and their calibration.

Privacy
-------
Pure epsilon-DP (Laplace noise, basic composition of its steps) without delta, or
(epsilon, delta)-DP (Gaussian steps composed as GDP, Dong, Roth and Su Cor. 3.3) with
it. The basis, ``d'``, the cells and rounds are public, fixed before the charge by
:func:`~privot.barycenters.subspace.plan_subspace`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from privot._progress import progress_bar
from privot._validation import check_delta
from privot.barycenters.error import subspace_statement
from privot.barycenters.inputs import Groups
from privot.barycenters.method_coreset import repeated_to
from privot.barycenters.params import BarycenterParams, changed_fields
from privot.barycenters.release import RunSettings, start_release, warn_unused
from privot.barycenters.result import BarycenterResult
from privot.barycenters.subspace import (
    SubspacePlan,
    check_basis,
    dct_basis,
    plan_subspace,
    subspace_release,
)
from privot.errors import InvalidParameterError
from privot.ot import free_support_barycenter

__all__ = ["resolve_basis", "run_subspace", "subspace_barycenter"]

#: The coreset and perturbation options this method refuses when set (the others it
#: does not read are warned about).
REFUSED = ("projection_dim", "depth", "region", "coreset_size", "anchor", "splits")


def resolve_basis(params: BarycenterParams, d: int) -> np.ndarray | None:
    """The public basis: None (identity), the DCT of ``image_shape`` or the caller's
    (checked orthonormal, ``d`` rows)."""
    opts = params.subspace
    if opts.basis is None:
        return None
    if isinstance(opts.basis, str):  # "dct" (SubspaceOptions checked it)
        image_shape = opts.image_shape
        shape = tuple(image_shape) if isinstance(image_shape, (tuple, list)) else None
        if shape is None or len(shape) != 2 or int(shape[0]) * int(shape[1]) != d:
            raise InvalidParameterError("image_shape", image_shape,
                                        f"(height, width) with height * width = d = {d}")
        return dct_basis(shape, opts.basis_dim)
    return check_basis(opts.basis, d)


def _check(groups: Groups, params: BarycenterParams, requested: str) -> float:
    """The checks that need the groups' public shape; returns delta (0: Laplace noise)."""
    d = groups.d
    why = f"chosen by method='auto' for d = {d}" if requested == "auto" else "asked"
    for options in (params, params.coreset, params.perturbation):
        names = [n for n in changed_fields(options) if n in REFUSED]
        if names:
            value = getattr(options, names[0])
            raise InvalidParameterError(
                names[0], value if not isinstance(value, np.ndarray) else value.shape,
                f"omitted: it belongs to the coreset and perturbation methods (this "
                f"release runs method='subspace', {why}; pass method='coreset' for them)")
    warn_unused([n for n in (*changed_fields(params.coreset),
                             *changed_fields(params.perturbation))
                 if n not in REFUSED and n != "max_atoms"],
                f"options of the coreset and perturbation methods (this release runs "
                f"method='subspace', {why})", stacklevel=5)
    # Laplace noise (pure) without delta, Gaussian noise with it
    return (0.0 if params.delta in (None, 0, 0.0)
            else check_delta(params.delta, allow_zero=False))


def run_subspace(groups: Groups, params: BarycenterParams, settings: RunSettings
                 ) -> BarycenterResult:
    """``method="subspace"``: checks and plan, the charge, the summaries, the lift."""
    basis = resolve_basis(params, groups.d)
    delta = _check(groups, params, settings.requested)
    release = start_release(groups, params, "subspace", delta, settings)
    opts = params.subspace
    # every public choice fixed before the charge
    plan = plan_subspace(sizes=groups.sizes, m=params.m,
                         d0=groups.d if basis is None else basis.shape[1],
                         budget=release.sample, subspace_dim=opts.subspace_dim,
                         cells=opts.cells, rounds=opts.rounds,
                         projection_share=opts.projection_share,
                         complement_mean=opts.complement_mean,
                         covariance=None if opts.covariance is None
                         else bool(opts.covariance))
    # the error statement (issue 28): public parameters only, before the charge
    release.error = subspace_statement(plan, sizes=groups.sizes, beta=groups.beta,
                                       bounds_scale=groups.bounds.scale,
                                       identity_basis=basis is None)
    release.charge(plan.event, mu=plan.mu)
    record = release.record()
    for unused in ("placement", "max_atoms"):  # the coreset's, not this method's
        record.pop(unused, None)
    record.update({"subspace": plan.to_dict(),
                   "basis": ("identity" if opts.basis is None else
                             opts.basis if isinstance(opts.basis, str) else "caller"),
                   "image_shape": None if opts.image_shape is None else list(opts.image_shape)})
    started = time.perf_counter()
    support_u, diag, secure = subspace_barycenter(
        release.rows.unit, plan, basis, groups.sizes, m=params.m, p=params.p,
        beta=groups.beta, solver=release.solver_kw(), gen=release.gen, show=settings.show)
    return release.finish(support_u, secure=secure, record=record, diagnostics=diag,
                          started=started)


def subspace_barycenter(units: list[np.ndarray], plan: SubspacePlan,
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
    pts, wts = repeated_to(m, rel.atoms, rel.weights)  # fewer atoms than m: repeated
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
