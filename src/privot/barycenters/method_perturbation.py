r"""``method="perturbation"`` (paper 000 Alg. 1, paper 001 Thm 5 + Prop. 6), (eps, delta)-DP.

.. code-block:: text

    groups --> unit ball --> anchor a_0 (private coreset barycenter with a fraction of
    eps, or public atoms)
    step="lloyd" (default): --(power cells balanced on the coreset, B noisy count
    rounds, T noisy Lloyd steps (R counts, sums), Gaussian, Delta_2 = 2R)--> support
    step="anchored": --(split into k' parts; T noisy anchored steps, Gaussian,
    Delta_2 = sqrt(m) max beta_i / k')--> support

The steps themselves: :mod:`privot.barycenters.lloyd_perturbation` and
:mod:`privot.barycenters.perturbation`; the anchor:
:func:`~privot.barycenters.method_coreset.coreset_barycenter`.

Privacy
-------
Basic composition of the pure-DP coreset anchor (``anchor_fraction`` of the sample
epsilon; nothing with a public anchor) and the Gaussian steps calibrated to the rest
(:func:`~privot.barycenters.release.release_event`). Every check of the steps runs
before the charge, so that the release always answers.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._progress import progress_bar
from privot._validation import check_delta, check_int
from privot.barycenters.error import method_unstated
from privot.barycenters.inputs import Groups
from privot.barycenters.lloyd_perturbation import LloydPlan, lloyd_perturbation, plan_lloyd
from privot.barycenters.method_coreset import (
    coreset_barycenter,
    coreset_maker,
    coreset_options,
)
from privot.barycenters.params import BarycenterParams, changed_fields
from privot.barycenters.perturbation import (
    check_perturbation_inputs,
    output_perturbation,
    recommended_splits,
)
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
from privot.ot import gaussian_jl_matrix

__all__ = ["DEFAULT_ANCHOR_FRACTION", "DEFAULT_LLOYD_ANCHOR_FRACTION", "NOISE_WARNING_SHARE",
           "run_perturbation"]

#: Share of the sample budget the perturbation method spends on its coreset anchor.
#: Measured on population-weighted US places (k = 1, m = 48, eps = 1 on the population,
#: default k', 3 seeds): cost / non-private 1.58 with 0.2, 1.78 with 0.5, 2.0 with 0.8 at
#: n = 50,000; 3.5, 3.7, 6.2 at n = 5,000.
DEFAULT_ANCHOR_FRACTION = 0.25
#: Share of the sample budget the noisy Lloyd steps' coreset anchor gets (issue 15's
#: prototype: half; see benchmarks/README.md for the measurement).
DEFAULT_LLOYD_ANCHOR_FRACTION = 0.5
#: The non-private solver's options (read only to find the coreset anchor).
SOLVER_FIELDS = ("reg", "solver", "n_outer", "n_inner", "polish")
#: sigma * sqrt(d) above this share of the unit diameter triggers a warning.
NOISE_WARNING_SHARE = 0.1


@dataclass(frozen=True, eq=False)
class _Plan:
    """The public plan of one perturbation release, fixed before the charge."""

    anchor_epsilon: float
    lloyd: LloydPlan | None  # step="lloyd"
    splits: int | None  # step="anchored": k'
    units: list[np.ndarray] | None  # step="anchored": the rows, unusable ones NaN


def _check(groups: Groups, params: BarycenterParams) -> float:
    """The checks that need the groups' public shape; returns delta."""
    if params.delta is None:
        raise InvalidParameterError("delta", params.delta,
                                    "a number in (0, 1) for method='perturbation'")
    delta = check_delta(params.delta, allow_zero=False)
    refuse_options(params.subspace, changed_fields(params.subspace),
                   "omitted: it belongs to method='subspace' (this release runs "
                   "method='perturbation')")
    opts = params.perturbation
    if opts.anchor is not None and opts.anchor.shape != (params.m, groups.d):
        raise InvalidParameterError("anchor", opts.anchor.shape,
                                    f"an ({params.m}, {groups.d}) array")
    if opts.splits is not None:
        check_int(opts.splits, "splits", minimum=1, maximum=min(groups.sizes))
    public = opts.anchor is not None
    # a public anchor buys no coreset barycenter: its coreset, budget share and solver
    # options are not read (nor the JL map, but by the anchored step)
    top = [n for n in changed_fields(params) if n in SOLVER_FIELDS
           or (n == "projection_dim" and opts.step == "lloyd")]
    unused = [*(changed_fields(params.coreset) if public else []),
              *(["anchor_fraction"] if public and opts.anchor_fraction is not None else []),
              *(top if public else []),
              *([n for n in changed_fields(opts)
                 if n in ("balancing_rounds", "proxy_size", "shrinkage")]
                if opts.step == "anchored" else [])]
    warn_unused(unused, f"not read by method='perturbation' with step={opts.step!r}"
                + (" and a public anchor (no coreset is bought)" if public else ""),
                stacklevel=5)
    return delta


def _plan(release: Release) -> _Plan:
    """Every public choice of the steps, and every check they make (before the charge)."""
    opts, sample = release.params.perturbation, release.sample
    fraction = opts.anchor_fraction
    if fraction is None:
        fraction = (DEFAULT_LLOYD_ANCHOR_FRACTION if opts.step == "lloyd"
                    else DEFAULT_ANCHOR_FRACTION)
    eps_anchor = fraction * sample.epsilon if opts.anchor is None else 0.0
    if opts.step == "lloyd":
        # a public anchor has no private coreset to balance on: no balancing rounds, the
        # whole budget on the steps
        lplan = plan_lloyd(m=release.m, dim=release.groups.d,
                           epsilon=sample.epsilon - eps_anchor, delta=sample.delta,
                           balancing_rounds=opts.balancing_rounds if opts.anchor is None else 0,
                           proxy_size=opts.proxy_size, shrinkage=opts.shrinkage,
                           steps=opts.iterations)
        return _Plan(eps_anchor, lplan, None, None)
    groups, rows = release.groups, release.rows
    kp = (recommended_splits(min(groups.sizes), m=release.m, d=groups.d,
                             epsilon=sample.epsilon - eps_anchor, delta=sample.delta,
                             k=groups.k, p=release.params.p)
          if opts.splits is None else opts.splits)
    units = []
    for g, u, unit_rows in zip(groups.raw, rows.usable, rows.unit, strict=True):
        # unusable rows stay in place (NaN) so that the data-independent split into
        # parts sees every row index; they contribute nothing
        unit = np.full_like(g, np.nan)
        unit[u] = unit_rows
        units.append(unit)
    check_perturbation_inputs(units, m=release.m, epsilon=sample.epsilon - eps_anchor,
                              delta=sample.delta, splits=kp, iterations=opts.iterations,
                              group_weights=groups.beta, calibration=opts.calibration)
    return _Plan(eps_anchor, None, kp, units)


def _anchor(release: Release, plan: _Plan
            ) -> tuple[np.ndarray, dict[str, Any], bool, list | None]:
    """The anchor in unit coordinates: the caller's public atoms, or the private coreset
    barycenter bought with ``anchor_epsilon`` (its coresets are the Lloyd proxies)."""
    opts = release.params.perturbation
    if opts.anchor is not None:
        return release.groups.bounds.to_unit(opts.anchor)[0], {}, True, None
    groups = release.groups
    return coreset_barycenter(
        coreset_maker(groups), groups.sizes, m=release.m, epsilon=plan.anchor_epsilon,
        p=release.params.p, projection_dim=release.projection_dim(), beta=groups.beta,
        solver=release.solver_kw(), coreset=coreset_options(release), gen=release.gen,
        max_atoms=release.params.coreset.max_atoms, show=release.settings.show,
        label="anchor coresets",
        proxy_size=plan.lloyd.proxy_size if plan.lloyd is not None else None)


def _anchored(release: Release, plan: _Plan, anchor_u: np.ndarray, record: dict[str, Any],
              diag: dict[str, Any]) -> tuple[np.ndarray, bool]:
    """The anchored steps over ``k'`` parts (paper 000 Alg. 1 / paper 001 Thm 5)."""
    opts, sample, gen = release.params.perturbation, release.sample, release.gen
    dp, d = release.projection_dim(), release.groups.d
    proj = (None if dp is None else
            gaussian_jl_matrix(d, dim=dp, rng=gen if gen is not None
                               else np.random.default_rng()))
    rel = output_perturbation(plan.units, anchor_u, epsilon=sample.epsilon - plan.anchor_epsilon,
                              delta=sample.delta, splits=plan.splits,
                              iterations=opts.iterations, group_weights=release.groups.beta,
                              calibration=opts.calibration, projection=proj, rng=gen)
    diag["perturbation"] = rel.curator_only  # exact, data-dependent
    _warn_if_noise_dominates(rel.sigma, d, release.groups.k, plan.splits)
    record.update({"splits": plan.splits, "iterations": rel.iterations, "sigma": rel.sigma,
                   "sensitivity": rel.sensitivity, "calibration": opts.calibration})
    return rel.support, rel.secure


def run_perturbation(groups: Groups, params: BarycenterParams, settings: RunSettings
                     ) -> BarycenterResult:
    """``method="perturbation"``: checks and plan, the charge, the anchor, the steps."""
    delta = _check(groups, params)
    release = start_release(groups, params, "perturbation", delta, settings)
    plan = _plan(release)
    release.error = method_unstated("perturbation")  # public only, before the charge
    release.charge(release_event("perturbation", release.sample, plan.anchor_epsilon))
    record = release.record()
    started = time.perf_counter()
    anchor_u, diag, secure, proxies = _anchor(release, plan)
    opts = params.perturbation
    record.update({"step": opts.step,
                   "anchor": "public" if opts.anchor is not None else "coreset",
                   "anchor_epsilon": plan.anchor_epsilon,
                   "perturbation_epsilon": release.sample.epsilon - plan.anchor_epsilon})
    bar = progress_bar(settings.show, total=1, desc="output perturbation", unit="release")
    try:
        if plan.lloyd is not None:
            rel = lloyd_perturbation(release.rows.unit, anchor_u, plan=plan.lloyd,
                                     group_weights=groups.beta, proxies=proxies,
                                     rng=release.gen)
            support_u, secure = rel.support, secure and rel.secure
            record.update({"lloyd": plan.lloyd.to_dict(), "iterations": opts.iterations})
        else:
            support_u, step_secure = _anchored(release, plan, anchor_u, record, diag)
            secure = secure and step_secure
        bar.update(1)
    finally:
        bar.close()
    return release.finish(support_u, secure=secure, record=record, diagnostics=diag,
                          started=started)


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
            UserWarning, stacklevel=5)
