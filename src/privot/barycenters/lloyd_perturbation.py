r"""Output perturbation by noisy Lloyd steps on power cells (issue 15).

privot's anchored step (:mod:`privot.barycenters.perturbation`) splits each group into
:math:`k'` parts to keep its sensitivity small, and the split itself costs accuracy. This
module releases what a barycenter's fixed point needs from each group directly, with
cells that are public given earlier releases:

.. code-block:: text

    anchor a (m atoms; the private-coreset barycenter, pure eps_a) and each group's private
    coreset (weighted atoms, released with it)
      --(power weights psi_i: the discrete OT duals from group i's coreset to the uniform
         measure on a; post-processing)--> power cells C_ij = {x: j = argmin |x - a_j|^2 - psi_ij}
      --(B balancing rounds, per group: noisy cell counts; the coreset re-weighted to them,
         psi_i re-solved; post-processing)-->
      --(T Lloyd steps, per group: (R counts, sums) of its cells + Gaussian noise;
         a_j <- sum_i beta_i s_ij / c_ij)--> support

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
from privot.privacy import accounting, noise

__all__ = [
    "DEFAULT_BALANCING_ROUNDS",
    "DEFAULT_LLOYD_STEPS",
    "DEFAULT_STEP_SHARE",
    "LloydPlan",
    "LloydRelease",
    "balancing_sensitivity",
    "cell_counts",
    "lloyd_perturbation",
    "plan_lloyd",
    "power_weights",
]

#: Private balancing rounds of the cell counts before the steps (issue 15's prototype).
DEFAULT_BALANCING_ROUNDS = 2
#: Noisy Lloyd steps (more steps add noise faster than they remove the anchor's error).
DEFAULT_LLOYD_STEPS = 1
#: Share of the GDP budget (of mu^2) the steps get; the balancing rounds share the rest.
DEFAULT_STEP_SHARE = 0.5
#: A cell whose noisy count is below this many count deviations keeps its atom.
MIN_COUNT_DEVIATIONS = 2.0


def power_weights(proxy: np.ndarray, proxy_weights: np.ndarray, atoms: np.ndarray
                  ) -> np.ndarray:
    r"""Power-diagram weights :math:`\psi` that give the atoms equal shares of a proxy.

    The duals of the discrete optimal transport (squared Euclidean cost, POT's network
    simplex) from ``proxy`` (weighted points, (p, d) and (p,)) to the uniform measure on
    ``atoms`` (m, d): the cells :math:`\arg\min_j |x - a_j|^2 - \psi_j` split the proxy
    into (nearly) equal masses. Post-processing of released values.
    """
    import warnings

    import ot  # POT: an optional dependency of the barycenter solvers

    m = len(atoms)
    w = np.asarray(proxy_weights, dtype=np.float64)
    if len(proxy) == 0 or not w.sum() > 0:
        return np.zeros(m)  # no proxy mass: the Voronoi cells (public rule)
    w = w / w.sum()
    # |p - a|^2 = |p|^2 + |a|^2 - 2 p.a: (p, m) memory, not (p, m, d)
    cost = np.maximum((proxy**2).sum(axis=1)[:, None] + (atoms**2).sum(axis=1)[None, :]
                      - 2.0 * proxy @ atoms.T, 0.0)
    with warnings.catch_warnings():
        # POT warns when its public iteration cap is reached; the duals are still finite
        # and the cells still a partition: utility, not privacy (and never an error
        # after the charge)
        warnings.simplefilter("ignore")
        _, log = ot.emd(w, np.full(m, 1.0 / m), cost, log=True, numItermax=1_000_000)
    v = np.asarray(log["v"], dtype=np.float64)
    if not np.all(np.isfinite(v)):
        return np.zeros(m)
    return v - v.mean()


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

    def to_dict(self) -> dict[str, Any]:
        """Public parameters, JSON-ready."""
        return {"balancing_rounds": self.balancing_rounds, "steps": self.steps,
                "step_share": self.step_share, "mu": self.mu,
                "balancing_noise": self.balancing, "step_noise": self.step}


def plan_lloyd(*, m: int, dim: int, epsilon: float, delta: float,
               balancing_rounds: int = DEFAULT_BALANCING_ROUNDS,
               steps: int = DEFAULT_LLOYD_STEPS,
               step_share: float = DEFAULT_STEP_SHARE) -> LloydPlan:
    r"""Calibrate to :math:`\mu` = ``gdp_mu_for(epsilon, delta)`` (public quantities).

    Each of the ``steps`` steps gets :math:`\mu^2/T`: ``step_share`` of it for its
    Lloyd statistic, the rest split over its ``balancing_rounds`` count releases:
    :math:`\mu^2 = T(\mu_s^2 + B\mu_b^2)`.
    """
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
                     balancing=bal, step=step)


@dataclass
class LloydRelease:
    """The released support (unit coordinates) and what is public about it."""

    support: np.ndarray
    trajectory: list[np.ndarray]
    secure: bool
    curator_only: dict[str, Any] = field(default_factory=dict)


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
        Each group's released private coreset (weighted atoms), the proxy for the power
        weights and the balancing; None (a public anchor): Voronoi cells, no balancing.
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
    secure = noise.resolve_rng(rng)[1]
    a = np.array(anchor, dtype=np.float64)
    m, dim = a.shape
    k = len(units)
    count_sd = plan.step["sigma"] / RADIUS
    trajectory = []
    bal_rounds = plan.balancing_rounds if proxies is not None else 0
    for _ in range(plan.steps):
        new = np.zeros_like(a)
        for i, x in enumerate(units):
            if proxies is None:
                power = np.zeros(m)
            else:
                proxy, weights = proxies[i]
                power = power_weights(proxy, weights, a)
                w = weights
                for _ in range(bal_rounds):
                    counts = gaussian_noise(cell_counts(x, a, power), plan.balancing, rng)
                    w = _reweighted(proxy, w, a, power, counts)
                    power = power_weights(proxy, w, a)
            stat = gaussian_noise(lloyd_statistic(x, a, power=power), plan.step, rng)
            counts = stat[:m] / RADIUS
            sums = stat[m:].reshape(m, dim)
            means = a.copy()
            ok = counts > MIN_COUNT_DEVIATIONS * count_sd
            means[ok] = sums[ok] / counts[ok, None]
            new += group_weights[i] * into_ball(means)
        a = new
        trajectory.append(a.copy())
    return LloydRelease(support=a, trajectory=trajectory, secure=secure,
                        curator_only={"groups": k})
