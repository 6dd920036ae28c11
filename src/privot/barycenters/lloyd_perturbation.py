r"""Output perturbation by noisy Lloyd steps on power cells (issue 15).

privot's anchored step (:mod:`privot.barycenters.perturbation`) splits each group into
:math:`k'` parts to keep its sensitivity small, and the split itself costs accuracy. This
module releases what a barycenter's fixed point needs from each group directly, with
cells that are public given earlier releases:

.. code-block:: text

    anchor a (m atoms; the private-coreset barycenter, pure eps_a) and each group's proxy
    (a public subsample of its anchor coreset's placed points, released with it)
      --(power weights psi_i splitting the proxy into equal masses: the entropic
         semi-dual by Newton steps, privot.ot.power_diagram_weights; post-processing)-->
         power cells C_ij = {x: j = argmin |x - a_j|^2 - psi_ij}
      --(B balancing rounds, per group: noisy cell counts; the proxy re-weighted to them,
         psi_i re-solved; post-processing)-->
      --(T Lloyd steps, per group: (R counts, sums) of its cells + Gaussian noise;
         a'_j = sum_i beta_i s_ij / c_ij; the moves a' - a shrunk by empirical Bayes
         from the known noise, shrunk_step; post-processing)--> support

Sensitivity (replace-one, points in the ball :math:`B_0(R)`, :math:`R = 1/2`): the cells
of group :math:`i` are a function of the released anchor, coreset and earlier rounds
only, so they are a fixed partition when the statistic is computed. A balancing round's
counts change in at most two cells by one each: L2 :math:`\sqrt2`. A step releases
:func:`~privot.barycenters.subspace.lloyd_statistic` (counts scaled by :math:`R`, and
sums): L2 :math:`2R = 1` (``lloyd_sensitivity``). Groups are disjoint (parallel), rounds
and steps compose adaptively as GDP (Dong, Roth and Su 2022, Cor. 3.3):
:math:`\mu^2 = T(\mu_s^2 + B\mu_b^2)`. With the pure anchor (basic composition) the
release is :math:`(\varepsilon, \delta)`-DP. Derivation: ``docs/privacy/barycenters.md``,
section "Noisy Lloyd steps on power cells". The work after the charge is fixed by public sizes
(``B``, ``T``, ``k``, ``m``) and the release always answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.barycenters._repr import short_repr
from privot.barycenters.subspace import (
    RADIUS,
    check_noise_drawable,
    gaussian_noise,
    gaussian_step,
    into_ball,
    lloyd_sensitivity,
    lloyd_statistic,
    nearest_cells,
)
from privot.errors import InvalidParameterError
from privot.ot import power_diagram_weights
from privot.privacy import accounting
from privot.privacy.noise import check_rng, resolve_rng

__all__ = [
    "DEFAULT_BALANCING_ROUNDS",
    "DEFAULT_LLOYD_STEPS",
    "DEFAULT_PROXY_SIZE",
    "DEFAULT_STEP_SHARE",
    "LloydPlan",
    "LloydRelease",
    "balancing_sensitivity",
    "cell_counts",
    "lloyd_perturbation",
    "plan_lloyd",
    "power_weights",
    "prior_variance",
    "shrunk_step",
]

#: Private balancing rounds of the cell counts before the steps (issue 15's prototype).
DEFAULT_BALANCING_ROUNDS = 2
#: Noisy Lloyd steps (more steps add noise faster than they remove the anchor's error).
DEFAULT_LLOYD_STEPS = 1
#: Share of the GDP budget (of mu^2) the steps get; the balancing rounds share the rest.
DEFAULT_STEP_SHARE = 0.5
#: Placed coreset points per group in the proxy (a public subsample). A proxy of weighted
#: cell atoms (the solver's ``max_atoms``) is too sparse: its optimal duals are far from
#: unique, and POT returns a vertex of that set whose cells, though balanced, can be
#: shifted across a sparse region (US places, k = 1, n = 200,000: releases at 1.74x and
#: 1.20x). Points placed uniformly in the coreset's leaves pin the weights down. The
#: size was chosen on the tuning sets of ``benchmarks/bench_barycenter_lloyd.py``
#: (``benchmarks/README.md``, issue 15): 5,000 to 40,000 cost the same within noise,
#: and the solves take time in proportion.
DEFAULT_PROXY_SIZE = 10_000
#: Cap on proxy points x atoms (each power-weight solve holds a few (P, m) float arrays:
#: 160 MB each at the cap), checked by the plan, before the charge.
MAX_PROXY_CELLS = 20_000_000
#: A cell whose noisy count is below this many count deviations keeps its atom.
MIN_COUNT_DEVIATIONS = 2.0


def power_weights(proxy: np.ndarray, proxy_weights: np.ndarray, atoms: np.ndarray
                  ) -> np.ndarray:
    r"""Power-diagram weights :math:`\psi` that give the atoms equal shares of a proxy.

    :func:`privot.ot.power_diagram_weights` from ``proxy`` (weighted points, (p, d) and
    (p,)) to the uniform measure on ``atoms`` (m, d): the cells
    :math:`\arg\min_j |x - a_j|^2 - \psi_j` split the proxy into equal masses (within
    2% where the proxy's resolution allows: a clump of near-coincident points is split
    only as finely as the solver's last converged regularisation), with the central
    weights of the entropic limit rather than an arbitrary vertex of the exact LP's
    optimal set. Post-processing of released values; the work is
    bounded by the public sizes.
    """
    return power_diagram_weights(proxy, proxy_weights, atoms)


def shrunk_step(anchor: np.ndarray, step: np.ndarray, variance: np.ndarray) -> np.ndarray:
    r"""The step's moves shrunk by empirical Bayes (James-Stein with unequal variances).

    ``step - anchor`` is :math:`D_j = \delta_j + e_j`, the move a noiseless step would
    make plus the step's noise, of (known, public) total variance :math:`v_j` over the
    :math:`d` coordinates. With the moves a priori :math:`N(0, \tau^2 I_d)`, the
    :math:`D_j` are independent :math:`N(0, (\tau^2 + s_j) I_d)`, :math:`s_j = v_j/d`;
    :math:`\hat\tau^2` maximises that marginal likelihood (:func:`prior_variance`) and
    each move is scaled by :math:`\hat\tau^2/(\hat\tau^2 + s_j)`: where the noise
    dominates (small groups, small eps) the anchor stays, where the moves dominate
    (large groups) they are kept. With equal variances this is positive-part
    James-Stein (:math:`\hat\tau^2 = \max(0, \sum_j |D_j|^2/(md) - s)`); unlike that
    pooled moment estimate, the likelihood gives an atom whose cell count was small (huge
    :math:`s_j`) little say in :math:`\hat\tau^2`. Post-processing of released values.

    Parameters
    ----------
    anchor, step : (m, d) arrays
    variance : (m,) array
        :math:`v_j`, 0 for atoms the step kept.
    """
    move = step - anchor
    m, dim = move.shape
    s = np.asarray(variance, dtype=np.float64) / dim
    tau2 = prior_variance((move**2).sum(axis=1), s, dim)
    if not np.isfinite(tau2):  # a move without noise: keep the step
        return np.array(step, dtype=np.float64)
    denom = tau2 + s
    factor = np.divide(tau2, denom, out=np.ones(m), where=denom > 0)
    return anchor + factor[:, None] * move


def prior_variance(squares: np.ndarray, noise: np.ndarray, dim: int) -> float:
    r"""Marginal maximum likelihood of :math:`\tau^2` given :math:`|D_j|^2` and :math:`s_j`.

    The score :math:`\sum_j (|D_j|^2 - d(\tau^2 + s_j))/(\tau^2 + s_j)^2` is positive at
    0 unless :math:`\hat\tau^2 = 0`, and negative beyond :math:`\max_j |D_j|^2/d`: a
    root is found by 100 bisections (a fixed amount of work). Atoms with neither noise
    nor move (kept by the step) carry no information and are left out.
    """
    used = (noise > 0) | (squares > 0)
    sq, sn = squares[used], noise[used]
    if sq.size == 0:
        return 0.0

    def score(t: float) -> float:
        v = t + sn
        return float(np.sum((sq - dim * v) / v**2))

    with np.errstate(all="ignore"):
        if not np.all(sn > 0):  # a noiseless move: nothing to shrink toward
            return float(np.inf)
        if not score(0.0) > 0:
            return 0.0
        lo, hi = 0.0, float(sq.max()) / dim
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if score(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def cell_counts(x: np.ndarray, atoms: np.ndarray, power: np.ndarray) -> np.ndarray:
    """Points per power cell: (m,) floats. Replace-one L2 sensitivity ``sqrt(2)``."""
    return np.bincount(nearest_cells(x, atoms, power), minlength=len(atoms)).astype(float)


def balancing_sensitivity() -> float:
    """L2 sensitivity of :func:`cell_counts` under replace-one: two counts move by 1."""
    return math.sqrt(2.0)


@dataclass(frozen=True)
class LloydPlan:
    """Public parameters and noise of the noisy Lloyd steps (fixed before the data)."""

    m: int
    dim: int
    balancing_rounds: int
    steps: int
    step_share: float
    mu: float
    balancing: dict[str, float] | None
    step: dict[str, float]
    proxy_size: int = DEFAULT_PROXY_SIZE
    shrinkage: bool = True

    def __repr__(self) -> str:
        return short_repr(self, ("m", "dim", "balancing_rounds", "steps", "mu", "proxy_size",
                                 "shrinkage"))

    def to_dict(self) -> dict[str, Any]:
        """Public parameters, JSON-ready."""
        return {"balancing_rounds": self.balancing_rounds, "steps": self.steps,
                "step_share": self.step_share, "mu": self.mu,
                "proxy_size": self.proxy_size, "shrinkage": self.shrinkage,
                "balancing_noise": self.balancing, "step_noise": self.step}


def plan_lloyd(*, m: int, dim: int, epsilon: float, delta: float,
               balancing_rounds: int = DEFAULT_BALANCING_ROUNDS,
               steps: int = DEFAULT_LLOYD_STEPS,
               step_share: float = DEFAULT_STEP_SHARE,
               proxy_size: int = DEFAULT_PROXY_SIZE, shrinkage: bool = True
               ) -> LloydPlan:
    r"""Calibrate to :math:`\mu` = ``gdp_mu_for(epsilon, delta)`` (public quantities).

    Each of the ``steps`` steps gets :math:`\mu^2/T`: ``step_share`` of it for its
    Lloyd statistic, the rest split over its ``balancing_rounds`` count releases:
    :math:`\mu^2 = T(\mu_s^2 + B\mu_b^2)`. ``proxy_size``: at most this many placed
    coreset points per group stand for it in the OT solves (public). ``shrinkage``: the
    steps' moves are shrunk by :func:`shrunk_step` (post-processing).
    """
    check_int(proxy_size, "proxy_size", minimum=1)
    if proxy_size * m > MAX_PROXY_CELLS:
        raise InvalidParameterError(
            "proxy_size", proxy_size,
            f"at most {MAX_PROXY_CELLS // m:,} with m = {m} (proxy points x atoms <= "
            f"{MAX_PROXY_CELLS:,}, the memory of one power-weight solve)")
    mu = accounting.gdp_mu_for(epsilon, delta)
    share = 1.0 if balancing_rounds == 0 else step_share
    mu_step = mu * math.sqrt(share / steps)
    step = gaussian_step(lloyd_sensitivity(dim, "l2"), m + m * dim, mu_step)
    bal = None
    per_step = step["mu"] ** 2
    if balancing_rounds:
        mu_bal = mu * math.sqrt((1.0 - share) / (steps * balancing_rounds))
        bal = gaussian_step(balancing_sensitivity(), m, mu_bal)
        per_step += balancing_rounds * bal["mu"] ** 2
    total = steps * per_step
    # the secure sampler's limits, on public shapes, before the caller charges
    check_noise_drawable("gaussian", step, m + m * dim)
    if bal is not None:
        check_noise_drawable("gaussian", bal, m)
    return LloydPlan(m=m, dim=dim, balancing_rounds=balancing_rounds, steps=steps,
                     step_share=share, mu=math.nextafter(math.sqrt(total), math.inf),
                     balancing=bal, step=step, proxy_size=int(proxy_size),
                     shrinkage=bool(shrinkage))


@dataclass
class LloydRelease:
    """The released support (unit coordinates) and what is public about it."""

    support: np.ndarray
    trajectory: list[np.ndarray]
    secure: bool
    curator_only: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return short_repr(self, ("support", "trajectory", "secure"))


def _reweighted(proxy: np.ndarray, weights: np.ndarray, atoms: np.ndarray, power: np.ndarray,
                counts: np.ndarray) -> np.ndarray:
    """The proxy's weights rescaled cell by cell to the released counts' shares."""
    cell = nearest_cells(proxy, atoms, power)
    mass = np.bincount(cell, weights=weights, minlength=len(atoms))
    target = np.maximum(counts, 0.0)
    if target.sum() <= 0:
        return weights
    target = target / target.sum()
    factor = np.where(mass > 0, target / np.where(mass > 0, mass, 1.0), 1.0)
    out = weights * factor[cell]
    return out if out.sum() > 0 else weights


def _balanced_power(x: np.ndarray, atoms: np.ndarray, proxy: np.ndarray,
                    weights: np.ndarray, plan: LloydPlan,
                    rng: np.random.Generator | None) -> np.ndarray:
    """One group's power weights: balanced on its proxy, then re-balanced after each of
    the plan's noisy count releases (the only reads of ``x``, each noised)."""
    power = power_weights(proxy, weights, atoms)
    for _ in range(plan.balancing_rounds):
        counts = gaussian_noise(cell_counts(x, atoms, power), plan.balancing, rng)
        weights = _reweighted(proxy, weights, atoms, power, counts)
        power = power_weights(proxy, weights, atoms)
    return power


def lloyd_perturbation(units: Sequence[np.ndarray], anchor: np.ndarray, *,
                       plan: LloydPlan, group_weights: np.ndarray,
                       proxies: Sequence[tuple[np.ndarray, np.ndarray]] | None,
                       rng: np.random.Generator | None = None) -> LloydRelease:
    r"""Noisy Lloyd steps from ``anchor`` on each group's power cells.

    Parameters
    ----------
    units : sequence of (n_i, d) arrays
        Each group's usable points in unit coordinates (inside :math:`B_0(R)`).
    anchor : (m, d) array
        Released or public atoms.
    plan : LloydPlan
        From :func:`plan_lloyd` (already charged by the caller).
    group_weights : (k,) array
        :math:`\beta_i`, summing to one.
    proxies : sequence of (points, weights), optional
        Each group's proxy (released values: a public subsample of its anchor coreset's
        placed points) for the power weights and the balancing; None (a public anchor):
        Voronoi cells, no balancing.
    rng : Generator, optional
        Seeded noise (not secure); default the OS CSPRNG.

    Privacy
    -------
    Unit: one point of one group, replace-one, group sizes public. Each balancing
    round releases :func:`cell_counts` (L2 sensitivity :math:`\sqrt2`), each step
    :func:`~privot.barycenters.subspace.lloyd_statistic` on the power cells (L2
    :math:`2R`), with the plan's Gaussian noise; cells are functions of earlier releases.
    The plan's ``mu`` is the GDP parameter of the whole (adaptive composition).
    """
    rng = check_rng(rng)
    secure = resolve_rng(rng)[1]
    a = np.array(anchor, dtype=np.float64)
    m, dim = a.shape
    k = len(units)
    count_sd = plan.step["sigma"] / RADIUS
    trajectory = []
    for _ in range(plan.steps):
        new = np.zeros_like(a)
        variance = np.zeros(m)
        for i, x in enumerate(units):
            power = (np.zeros(m) if proxies is None
                     else _balanced_power(x, a, *proxies[i], plan, rng))
            stat = gaussian_noise(lloyd_statistic(x, a, power=power), plan.step, rng)
            counts = stat[:m] / RADIUS
            sums = stat[m:].reshape(m, dim)
            means = a.copy()
            ok = counts > MIN_COUNT_DEVIATIONS * count_sd
            means[ok] = sums[ok] / counts[ok, None]
            means = into_ball(means)
            new += group_weights[i] * means
            # the delta-method variance of each noisy mean, sigma^2 (d + |mean|^2 / R^2)
            # / count^2 (released values and the public sigma only)
            spread = dim + (means**2).sum(axis=1) / RADIUS**2
            variance[ok] += (group_weights[i] * plan.step["sigma"] / counts[ok])**2 \
                * spread[ok]
        a = shrunk_step(a, new, variance) if plan.shrinkage else new
        trajectory.append(a.copy())
    return LloydRelease(support=a, trajectory=trajectory, secure=secure,
                        curator_only={"groups": k})
