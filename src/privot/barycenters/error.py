r"""The error a private barycenter will have, stated from its public parameters (issue 28).

:func:`barycenter_error` (the API: callable before anything is released) and the
statements each method attaches to its release before the charge
(:func:`subspace_statement`, :func:`unstated`). The metric is the excess cost

.. math:: \mathrm{excess}(\hat\nu) = \sum_i \beta_i W_2^2(\mu_i, \hat\nu)
          - \min_{\nu} \sum_i \beta_i W_2^2(\mu_i, \nu)

(the minimum over ``m``-atom uniform measures, the non-private barycenter of the same
data, as the mechanism sees it: rows moved into the bounds), in squared caller units.

Covered: the subspace method's mean-only plan (``subspace_dim = 0``: every atom at the
groups' weighted DP mean; the default in high dimension for ``eps n < 800`` with Laplace
noise), with a high-probability bound of its noise term from the plan's noise scales
(a moment bound for the Laplace noise, Laurent and Massart for the Gaussian noise).
The subspace one-cell plan (``rounds = 0``, no DP projection: each group released as its
DP Gaussian) states another metric, :data:`GAUSSIAN_METRIC` (the released Gaussians'
W2^2 to the groups' exact-moment Gaussians; :func:`gaussian_summary_statement`).
Not covered (``bound = inf``, said in ``not_covered``): the coreset and perturbation
methods (papers 000 and 001 state their utility with unspecified constants, and privot's
anchored or Lloyd steps are not the papers' output perturbation), and subspace plans
with Lloyd rounds or a DP projection (PCA, Lloyd cells and the solver).
Derivation: ``docs/errors/barycenters.md``.

Privacy
-------
No release here: every figure is a function of public parameters (the plan, the group
sizes and weights, the bounds, ``d``), never of the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privot._validation import check_weights
from privot.barycenters.params import BarycenterParams, choose_method
from privot.barycenters.release import sample_budget
from privot.barycenters.subspace import (
    DEFAULT_BASIS_DIM,
    RADIUS,
    VARIANCE_FLOOR,
    SubspacePlan,
    plan_subspace,
)
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError

__all__ = ["DEFAULT_CONFIDENCE", "GAUSSIAN_METRIC", "METRIC", "barycenter_error",
           "gaussian_square_tail", "gaussian_summary_statement",
           "laplace_square_tail", "method_unstated",
           "subspace_statement", "unstated"]

#: Confidence of the stated bounds (the release path's; :func:`barycenter_error` takes
#: another). 0.95: the moment bound of the Laplace noise is about twice its true
#: quantile, and at 0.95 it stays within 4x the median excess from about 15 coordinates.
DEFAULT_CONFIDENCE = 0.95
METRIC = ("excess W2^2 cost: sum_i beta_i W2^2(group i, release) - the same for the "
          "best m-atom barycenter of the groups (rows moved into the bounds)")
DERIVATION = "docs/errors/barycenters.md"
#: Highest moment the Laplace tail bound tries (higher ones gain nothing at the stated
#: confidences and would overflow float64).
MAX_MOMENT = 24
#: The Laplace sampler's calibration slack and grid: b = Delta (1 + s) / eps with
#: s <= 2^-20, outputs on 2^-k with 2^-k sum_j 1/Delta_j <= 2^-20 (privot.privacy).
LAPLACE_SLACK = 2.0**-20


def _series_power(coefs: np.ndarray, power: int) -> np.ndarray:
    """``coefs`` (a truncated power series) to the integer ``power``, same length."""
    out = np.zeros_like(coefs)
    out[0] = 1.0
    base = coefs.copy()
    while power:
        if power & 1:
            out = np.convolve(out, base)[:len(coefs)]
        base = np.convolve(base, base)[:len(coefs)]
        power >>= 1
    return out


def laplace_square_tail(weights: Sequence[float], dims: Sequence[int], alpha: float) -> float:
    r"""A bound ``t`` with :math:`P(Q > t) \le \alpha`, :math:`Q = \sum_g w_g \sum_{j <
    D_g} E_{gj}^2`, the :math:`E_{gj}` independent standard exponentials.

    Markov's inequality on :math:`E[Q^p]`, the best of :math:`p = 1..`
    :data:`MAX_MOMENT`: :math:`t = \min_p (E[Q^p]/\alpha)^{1/p}`. The moments are exact:
    the exponential generating function of :math:`wE^2` is
    :math:`\sum_a w^a (2a)!/a!\, x^a` (:math:`E[E^{2a}] = (2a)!`), that of a sum of
    independent terms is the product. (:math:`E^2` has no moment generating function, so
    a Chernoff bound is not available.) Public.
    """
    w = np.asarray(weights, dtype=np.float64)
    scale = float(w.max())
    a = np.arange(MAX_MOMENT + 1)
    log_ratio = np.array([math.lgamma(2 * i + 1) - math.lgamma(i + 1) for i in a])
    total = np.zeros(MAX_MOMENT + 1)
    total[0] = 1.0
    for wg, dg in zip(w / scale, dims, strict=True):
        coefs = np.exp(log_ratio + a * math.log(wg)) if wg > 0 else (a == 0).astype(float)
        total = np.convolve(total, _series_power(coefs, int(dg)))[:MAX_MOMENT + 1]
    best = math.inf
    for p in range(1, MAX_MOMENT + 1):
        moment = total[p] * math.factorial(p)
        if math.isfinite(moment) and moment > 0:
            best = min(best, (moment / alpha) ** (1.0 / p))
    return best * scale


def gaussian_square_tail(weights: Sequence[float], dims: Sequence[int], alpha: float
                         ) -> float:
    r"""A bound ``t`` with :math:`P(Q > t) \le \alpha`, :math:`Q = \sum_g w_g \sum_{j<D_g}
    Z_{gj}^2`, :math:`Z` 1-sub-Gaussian (the secure sampler's discrete Gaussians are:
    Canonne, Kamath and Steinke 2020): Laurent and Massart (2000) Lemma 1,
    :math:`Q \le \sum a + 2|a|_2\sqrt x + 2|a|_\infty x`, :math:`x = \ln(1/\alpha)`. Public.
    """
    a = np.repeat(np.asarray(weights, dtype=np.float64), np.asarray(dims, dtype=int))
    x = math.log(1.0 / alpha)
    return float(a.sum() + 2.0 * np.linalg.norm(a) * math.sqrt(x) + 2.0 * a.max() * x)


def _mean_noise(plan: SubspacePlan, sizes: Sequence[int]
                ) -> tuple[str, np.ndarray, float, np.ndarray]:
    """Per group: the noise scale of the released mean per coordinate (Gaussian sigma or
    Laplace scale, over ``n_i``), its tail family, and the per-group deterministic part
    (grid rounding) of its norm. Returns (family, scales, D, shifts)."""
    step = plan.noise["moments"]
    dims = plan.basis_dim  # the mean-only plan releases the sum in the whole basis
    n = np.asarray(sizes, dtype=np.float64)
    if plan.mechanism == "gaussian":
        # the statistic is rounded to the grid 2^-k (at most half a step per entry)
        shift = 0.5 * 2.0 ** -int(step["grid_exponent"]) * math.sqrt(dims)
        return "gaussian", step["sigma"] / n, dims, shift / n
    scale = step["sensitivity"] * (1.0 + LAPLACE_SLACK) / step["epsilon"]
    # a discrete Laplace on 2^-k is stochastically below |L_b| + 2^-k, plus half a step
    # of rounding; 2^-k <= 2^-20 Delta / D for the scalar sensitivity of this statistic
    grid = LAPLACE_SLACK * step["sensitivity"] / dims
    return "laplace", scale / n, dims, 1.5 * grid * math.sqrt(dims) / n


def subspace_statement(plan: SubspacePlan, *, sizes: Sequence[int], beta: np.ndarray,
                       bounds_scale: float | None, identity_basis: bool,
                       confidence: float = DEFAULT_CONFIDENCE) -> ErrorStatement:
    r"""The subspace method's statement: a bound for the mean-only plan, else ``inf``.

    Mean-only plan (``plan.subspace_dim == 0``): every atom at :math:`c = \sum_i\beta_i
    \hat m_i`, :math:`\hat m_i` the group's DP mean projected onto the ball. Then
    :math:`\mathrm{excess} = |c - \bar m|^2 + [C(\delta_{\bar m}) - C(\nu^*)]` and
    :math:`|c - \bar m|^2 \le \sum_i \beta_i |e_i/n_i|^2` (Jensen, and the projection
    moves no point away from :math:`m_i`), bounded at ``confidence`` from the plan's
    noise. The bracket (the cost of one point against ``m`` atoms) is data-dependent and
    0 when every group is a point mass: named in ``not_covered``. Units: squared caller
    units (unit coordinates divided by ``bounds_scale``), or squared unit coordinates
    when ``bounds_scale`` is None.
    """
    beta = np.asarray(beta, dtype=np.float64)
    units = ("squared caller units" if bounds_scale is not None
             else "squared unit coordinates")
    to_caller = 1.0 if bounds_scale is None else 1.0 / bounds_scale**2
    details: dict[str, Any] = {"method": "subspace", "mechanism": plan.mechanism,
                               "subspace_dim": plan.subspace_dim}
    if plan.subspace_dim != 0 and plan.rounds == 0 and not plan.pca:
        return gaussian_summary_statement(plan, sizes=sizes, beta=beta,
                                          bounds_scale=bounds_scale, confidence=confidence)
    if plan.subspace_dim != 0:
        return unstated("subspace", confidence, details, why=(
            f"the plan with d' = {plan.subspace_dim} (a DP projection, DP Gaussian "
            "summaries or Lloyd cells, then the free-support solver): no bound is derived "
            "for it; only the mean-only plan (subspace_dim = 0) and the one-cell plan "
            "without a DP projection (rounds = 0, d' = d0) are covered"))
    family, scales, dims, shifts = _mean_noise(plan, sizes)
    alpha = 1.0 - confidence
    weights = beta * scales**2
    tail = (laplace_square_tail if family == "laplace" else gaussian_square_tail)(
        weights, [dims] * len(beta), alpha)
    # Minkowski in the beta-weighted L2: the grid's deterministic part adds to the norm
    bound_unit = (math.sqrt(tail) + math.sqrt(float(beta @ shifts**2))) ** 2
    not_covered = ("the cost of one point mass at the groups' weighted mean against the "
                   "best m-atom barycenter (data-dependent; 0 when every group is a point "
                   "mass); rows outside the bounds (moved onto them) and unusable rows (the means "
                   "divide by the public group sizes)")
    if not identity_basis:
        not_covered += "; the weighted mean's squared part outside the public basis"
    details.update({"bound_unit_coordinates": bound_unit, "noise_family": family,
                    "noise_scale_per_group_mean": scales.tolist(),
                    "coordinates": dims, "grid_term_unit": float(beta @ shifts**2)})
    return ErrorStatement(
        metric=METRIC, bound=bound_unit * to_caller, confidence=confidence, units=units,
        covers=(f"the {family} noise of each group's DP mean (mean-only subspace plan: "
                "every atom at the groups' weighted DP mean)"),
        not_covered=not_covered, derivation=DERIVATION, details=details)


GAUSSIAN_METRIC = (
    "summary W2^2: sum_i beta_i W2^2(N(m_i, S_i), N(m_hat_i, S_hat_i)), N(m_hat_i, S_hat_i) "
    "group i's released DP Gaussian summary and N(m_i, S_i) the Gaussian of the group's "
    "exact mean and covariance (its diagonal for a diagonal plan), of the rows as the "
    "mechanism sees them (moved into the bounds, divided by the public n_i)")


def _entry_noise(plan: SubspacePlan) -> tuple[str, float, float]:
    """The moment round's noise per released entry: (family, scale, grid term), each
    entry's noise at most ``scale * X + grid`` in absolute value, ``X`` a standard
    exponential (Laplace) or 1-sub-Gaussian (Gaussian) (docs section 2)."""
    step = plan.noise["moments"]
    dim = plan.subspace_dim
    size = plan.basis_dim + (dim * (dim + 1) // 2 if plan.covariance else dim)
    if plan.mechanism == "gaussian":
        return "gaussian", step["sigma"], 0.5 * 2.0 ** -int(step["grid_exponent"])
    scale = step["sensitivity"] * (1.0 + LAPLACE_SLACK) / step["epsilon"]
    return "laplace", scale, 1.5 * LAPLACE_SLACK * step["sensitivity"] / size


def _norm_tail(family: str, scale: float, grid: float, weights: list[float],
               dims: list[int], alpha: float) -> float:
    r"""A bound on :math:`(\sum_g w_g \sum_{j<D_g} N_{gj}^2)^{1/2}` at level ``alpha``,
    :math:`|N_{gj}| \le` ``scale`` :math:`X_{gj} +` ``grid`` (Minkowski)."""
    tail = (laplace_square_tail if family == "laplace" else gaussian_square_tail)(
        [w * scale**2 for w in weights], dims, alpha)
    return math.sqrt(tail) + grid * math.sqrt(float(np.dot(weights, dims)))


def gaussian_summary_statement(plan: SubspacePlan, *, sizes: Sequence[int], beta: np.ndarray,
                               bounds_scale: float | None,
                               confidence: float = DEFAULT_CONFIDENCE) -> ErrorStatement:
    r"""The one-cell plan's statement (``rounds = 0``, no DP projection): each group is
    released as :math:`N(\hat m_i, \hat S_i)`; bounded is :data:`GAUSSIAN_METRIC`.

    Per group (docs section 4), :math:`\delta = \hat m - m`, :math:`E` the second
    moment's noise, :math:`d'` coordinates, floor :math:`f`:
    :math:`W_2^2 \le |\delta|^2 + c(2R|\delta| + \sqrt{d'}\|E\|_F/n) + d'f`
    (Bures :math:`\le \|S - \hat S\|_*`, Powers-Stormer; :math:`c = 1` diagonal,
    2 full), then Jensen over the groups and a union bound (``alpha / 2`` each) on
    :math:`U = \sum\beta_i|e_i|^2/n_i^2` and :math:`V = \sum\beta_i\|E_i\|_F^2/n_i^2`.
    """
    dim = plan.subspace_dim
    family, scale, grid = _entry_noise(plan)
    alpha = 1.0 - confidence
    n = np.asarray(sizes, dtype=np.float64)
    w = [float(b) for b in np.asarray(beta, dtype=np.float64) / n**2]
    root_u = _norm_tail(family, scale, grid, w, [plan.basis_dim] * len(w), alpha / 2)
    # ||E||_F^2: the diagonal entries once, the upper triangle's off-diagonal twice
    off = dim * (dim - 1) // 2 if plan.covariance else 0
    wv = w + ([2.0 * x for x in w] if off else [])
    root_v = _norm_tail(family, scale, grid, wv,
                        [dim] * len(w) + ([off] * len(w) if off else []), alpha / 2)
    c = 2.0 if plan.covariance else 1.0
    bound_unit = (root_u**2 + c * (2.0 * RADIUS * root_u + math.sqrt(dim) * root_v)
                  + dim * VARIANCE_FLOOR)
    units = ("squared caller units" if bounds_scale is not None
             else "squared unit coordinates")
    to_caller = 1.0 if bounds_scale is None else 1.0 / bounds_scale**2
    return ErrorStatement(
        metric=GAUSSIAN_METRIC, bound=bound_unit * to_caller, confidence=confidence,
        units=units,
        covers=(f"the {family} noise of each group's DP mean and "
                f"{'full' if plan.covariance else 'diagonal'} second moment (one-cell "
                "subspace plan: each group released as its DP Gaussian)"),
        not_covered=(
            "the barycenter's excess cost: the groups not being Gaussian, the public "
            "sample of atoms drawn from the released Gaussians and the free-support solver "
            "(data-dependent or not bounded); for a diagonal plan, the groups' "
            "correlations; rows outside the bounds (moved onto them) and unusable rows "
            "(the moments divide by the public group sizes)"),
        derivation=DERIVATION,
        details={"method": "subspace", "mechanism": plan.mechanism, "subspace_dim": dim,
                 "covariance": plan.covariance, "bound_unit_coordinates": bound_unit,
                 "noise_family": family, "noise_scale_per_entry": scale,
                 "mean_noise_norm_unit": root_u, "second_moment_noise_norm_unit": root_v})


#: What papers 000 and 001 state for the methods privot cannot bound (orders only).
PAPER_RATES = {
    "coreset": ("paper 001 Thm 4 (000 Alg. 2): excess O_{p,gamma}((eps n)^(-1/d) "
                "polylog(k/xi)) with probability 1 - xi, constants unspecified"),
    "perturbation": ("paper 001 Thm 5 proof, eq. (10): excess <= p 2^(p-1) (2 m "
                     "ln(1.25/delta) / (eps k))^(p/2) (sqrt(d) + sqrt(2p))^p for the "
                     "paper's Gaussian output perturbation of the exact barycenter; "
                     "privot's steps (anchored or Lloyd, with a coreset anchor) differ"),
}


def unstated(method: str, confidence: float, details: dict[str, Any], *,
             why: str) -> ErrorStatement:
    """A statement with ``bound = inf``: ``why`` no bound holds, the paper's rate."""
    rate = PAPER_RATES.get(method)
    return ErrorStatement(
        metric=METRIC, bound=math.inf, confidence=confidence,
        units="squared caller units", covers="nothing (no bound is stated for this plan)",
        not_covered=why, derivation=DERIVATION,
        details={**details, **({"paper": rate} if rate else {})})


def method_unstated(method: str, confidence: float = DEFAULT_CONFIDENCE) -> ErrorStatement:
    """The statement of ``"coreset"`` or ``"perturbation"``: ``bound = inf``, why, and
    the paper's rate in ``details`` (public)."""
    return unstated(method, confidence, {"method": method}, why=_WHY[method])


def _basis_dim(params: BarycenterParams, d: int) -> int:
    """``d0``, the public basis's columns, without building it (as ``resolve_basis``)."""
    basis = params.subspace.basis
    if basis is None:
        return d
    if isinstance(basis, str):  # "dct": its lowest frequencies
        dim = params.subspace.basis_dim
        return min(d, DEFAULT_BASIS_DIM if dim is None else int(dim))
    return int(np.asarray(basis).shape[1])


def barycenter_error(params: BarycenterParams, group_sizes: Sequence[int], d: int, *,
                     confidence: float = DEFAULT_CONFIDENCE) -> ErrorStatement:
    """The error a private barycenter with these public parameters will have.

    Parameters
    ----------
    params : BarycenterParams
        The release's public choices (``bounds`` gives the caller units).
    group_sizes : sequence of int
        The public group sizes ``n_i`` (rows, unusable ones included).
    d : int
        The data's dimension (public).
    confidence : float
        In (0, 1): the probability over the noise with which the bound holds.

    Returns
    -------
    ErrorStatement
        What :func:`~privot.barycenters.private_barycenter` states in ``result.error``
        (at :data:`DEFAULT_CONFIDENCE`); ``bound = inf`` for the plans not covered.
    """
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise InvalidParameterError("confidence", confidence, "a float in (0, 1)")
    sizes = [int(n) for n in group_sizes]
    method = params.method
    if method == "auto":
        method = choose_method(int(d))
    if method != "subspace":
        return method_unstated(method, confidence)
    delta = 0.0 if params.delta in (None, 0, 0.0) else float(params.delta)
    budget = sample_budget(params.epsilon, delta, sizes, params.population_size)
    opts = params.subspace
    plan = plan_subspace(sizes=sizes, m=params.m, d0=_basis_dim(params, int(d)),
                         budget=budget, subspace_dim=opts.subspace_dim, cells=opts.cells,
                         rounds=opts.rounds, projection_share=opts.projection_share,
                         complement_mean=opts.complement_mean,
                         covariance=None if opts.covariance is None else bool(opts.covariance))
    beta = check_weights(params.group_weights, len(sizes), "group_weights")
    scale = None if params.bounds is None else params.bounds.scale
    return subspace_statement(plan, sizes=sizes, beta=beta, bounds_scale=scale,
                              identity_basis=opts.basis is None, confidence=confidence)


_WHY = {
    "coreset": ("the whole error: the private coreset's W1 error per group depends on "
                "the data's spread over the cells, and papers 000/001 give only its order "
                "(Thm 2 / Thm 4, constants unspecified); not bounded here"),
    "perturbation": ("the whole error: privot's perturbation steps (a private-coreset "
                     "anchor, then anchored or Lloyd noisy steps with shrinkage) are not "
                     "the papers' output perturbation of the exact barycenter, so paper "
                     "001 Thm 5 eq. (10) does not apply; not bounded here"),
}
