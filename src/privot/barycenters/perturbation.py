r"""Output perturbation for Wasserstein barycenters (paper 000 Alg. 1; paper 001 Thm 5, Prop. 6).

The paper releases :math:`\tilde\nu = \nu + \mathcal N(0, \sigma^2 I_{md})` where
:math:`\nu = (\nu^{(1)}, \dots, \nu^{(m)})` is the concatenated support of a
*non-private* barycenter and

.. math:: \sigma^2 = \frac{2 m \ln(1.25/\delta)}{(\varepsilon k)^2},

i.e. the classic Gaussian mechanism for L2 sensitivity :math:`\sqrt m / k`. Its proof
(000, App. E; 001, Thm 14) says that one changed point moves each atom by at most
:math:`1/k` because "only the couplings of its own group change". That holds for a map
in which every group contributes through its own term only; it does not hold for an
iterative barycenter solver, whose every atom depends on every group through the joint
fixed point (the paper's own Prop. D.3 shows one point moving all atoms by
:math:`\Omega(1)`). ``docs/privacy/barycenters.md`` gives the details.

privot therefore releases a map for which the bound is *proved*, the **anchored
barycentric step**: given anchor atoms :math:`a \in \mathbb{R}^{m \times d}` that are
public or already private, split every group :math:`i` at random (data-independently)
into :math:`k'` disjoint parts :math:`P` (paper 001's splitting, "Algorithm 9") and
release

.. math::

    F(D; a)_j = \sum_{P} w_P\, B_P(a)_j, \qquad
    B_P(a)_j = m \sum_{x \in P} T_P[x, j]\, x, \qquad w_P = \beta_i / k'

where :math:`T_P` is an exact optimal plan between the uniform measure on :math:`P` and
the uniform measure on the anchor atoms (computed, optionally, in a JL projection). Each
:math:`B_P(a)_j` is a convex combination of points of :math:`P`, so it lies in the
ball :math:`B_0(1/2)`; one changed point changes one part only, hence
:math:`\|F(D;a)_j - F(D';a)_j\| \le \max_i \beta_i / k'` and
:math:`\Delta_2 F \le \sqrt m \max_i \beta_i / k'` (:math:`= \sqrt m/(k k')` for
:math:`\beta_i = 1/k`): the paper's constant, now with a proof. ``iterations`` noisy
steps, each anchored at the previous release (post-processing), compose exactly as
Gaussian DP: :math:`T` steps of noise :math:`\sigma` are
:math:`\sqrt T \Delta_2/\sigma`-GDP.

The first anchor comes from :mod:`privot.barycenters.api` (a private-coreset
barycenter bought with part of the budget, or public atoms given by the caller).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_points,
    check_positive,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import optimal_plan
from privot.ot._barycenter_steps import check_measures
from privot.ot._common import as_generator
from privot.privacy import accounting
from privot.privacy.mechanisms import gaussian_mechanism, gaussian_sigma
from privot.privacy.types import Neighbouring, PrivacyCost, Spender

__all__ = [
    "CALIBRATIONS",
    "PerturbationRelease",
    "anchored_step",
    "output_perturbation",
    "paper_sigma",
    "perturbation_sensitivity",
    "recommended_splits",
    "split_groups",
]

CALIBRATIONS = ("analytic", "classic")


#: The constant of paper 001's Theta(...) for k'* (Thm 8 leaves it open). Measured on
#: population-weighted US places (k = 1, m = 48, eps = 1 on the population): the cost is
#: lowest near k' = 100 at n = 2,000 (c ~ 11), near 300 at n = 20,000 (c ~ 16), and
#: k' = 1000 beats k' = 283 at n = 200,000 (c > 35; benchmarks/results/barycenter_us.json).
#: With c = 1 the noise dominates (cost 40-50x the non-private one). c = 20 is the
#: compromise; pass ``splits=`` to choose.
SPLITS_CONSTANT = 20.0


def recommended_splits(n: int, *, m: int, d: int, epsilon: float, delta: float, k: int,
                       p: float = 2, constant: float = SPLITS_CONSTANT) -> int:
    r"""Paper 001's :math:`k'_*` (Thm 8), the number of parts per group, with its delta factor.

    Thm 8 bounds the excess cost by the noise term
    :math:`A/k'^p`, :math:`A = (m d L/(\varepsilon k)^2)^{p/2}`,
    :math:`L = 2\ln(1.25/\delta)`, plus the splitting term :math:`\sqrt{m k'/n}` of
    clusterable data. Equating them gives

    .. math:: k'_* = c\, n^{\frac{1}{2p+1}} m^{\frac{p-1}{2p+1}} d^{\frac{p}{2p+1}}
              L^{\frac{p}{2p+1}} (\varepsilon k)^{-\frac{2p}{2p+1}},

    the paper's expression with the :math:`\log(1/\delta)` factor it suppresses kept
    (it matters: :math:`L^{2/5} \approx 3.5` at :math:`\delta = 10^{-5}`). ``constant``
    is the :math:`c` of the paper's :math:`\Theta` (default 1). The result is rounded
    and clipped to ``[1, n]``.

    Parameters
    ----------
    n : int
        Points per group (the smallest group when sizes differ), ``>= 1``.
    m, d, k : int
        Support size, dimension, number of groups.
    epsilon, delta : float
        The budget of the perturbation steps.
    p : float
        Order of the Wasserstein cost.
    constant : float
        :math:`c > 0`.

    Returns
    -------
    int
    """
    nn = check_int(n, "n", minimum=1)
    mm = check_int(m, "m", minimum=1)
    dd = check_int(d, "d", minimum=1)
    kk = check_int(k, "k", minimum=1)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 1:
        raise InvalidParameterError("p", p, "a number >= 1")
    c = check_positive(constant, "constant")
    e = 2 * p + 1
    log_term = 2 * math.log(1.25 / dlt)
    value = (c * nn ** (1 / e) * mm ** ((p - 1) / e) * dd ** (p / e) * log_term ** (p / e)
             * (eps * kk) ** (-2 * p / e))
    return int(min(nn, max(1, round(value))))


def paper_sigma(*, m: int, k: int, epsilon: float, delta: float, splits: int = 1) -> float:
    r"""The paper's noise level :math:`\sigma = \sqrt{2 m \ln(1.25/\delta)} / (\varepsilon k k')`.

    Paper 000 Alg. 1 (``splits=1``) and paper 001 Prop. 6 (``splits=k'``): the classic
    Gaussian calibration for L2 sensitivity :math:`\sqrt m/(k k')`.
    """
    return gaussian_sigma(perturbation_sensitivity(m, [1.0 / k] * k, splits), epsilon, delta,
                          calibration="classic")


def perturbation_sensitivity(m: int, group_weights: Sequence[float], splits: int) -> float:
    r"""L2 sensitivity :math:`\sqrt m \max_i \beta_i / k'` of one anchored step.

    Derivation in ``docs/privacy/barycenters.md`` (unit: one point of one group,
    replaced; data in the ball of radius 1/2).
    """
    mm = check_int(m, "m", minimum=1)
    kp = check_int(splits, "splits", minimum=1)
    return math.sqrt(mm) * float(max(group_weights)) / kp


def split_groups(groups: Sequence[np.ndarray], splits: int,
                 rng: np.random.Generator) -> list[list[np.ndarray]]:
    """Split every group into ``splits`` disjoint parts by a data-independent random permutation.

    The part a point lands in depends on its index only (a uniformly random permutation
    of ``range(n_i)``, dealt round-robin), never on its value, so replacing one point
    changes exactly one part. Part sizes differ by at most one.

    Returns
    -------
    list of list of (n_P, d) arrays
        ``parts[i][j]`` is part ``j`` of group ``i``.
    """
    kp = check_int(splits, "splits", minimum=1)
    out = []
    for i, g in enumerate(groups):
        if kp > len(g):
            raise InvalidParameterError(
                "splits", splits, f"at most the size of the smallest group (group {i} has "
                f"{len(g)} points); each part needs at least one point")
        order = rng.permutation(len(g))
        out.append([g[order[j::kp]] for j in range(kp)])
    return out


def anchored_step(parts: Sequence[Sequence[np.ndarray]], anchor: np.ndarray, *,
                  group_weights: np.ndarray, projection: np.ndarray | None = None) -> np.ndarray:
    r"""The anchored barycentric step :math:`F(D; a) = \sum_P w_P B_P(a)` (module docstring).

    Parameters
    ----------
    parts : list of list of (n_P, d) arrays
        From :func:`split_groups`.
    anchor : (m, d) array
        Anchor atoms (public or already private), uniform weights.
    group_weights : (k,) array
        :math:`\beta_i`, summing to one.
    projection : (d', d) array, optional
        A JL matrix: plans are computed between projected points (paper 001 Thm 5);
        the barycentric means are taken in :math:`\mathbb{R}^d`.

    Returns
    -------
    (m, d) array
        Each row a convex combination of input points.
    """
    m = anchor.shape[0]
    anchor_plan = anchor if projection is None else anchor @ projection.T
    out = np.zeros_like(anchor, dtype=np.float64)
    for beta, group_parts in zip(group_weights, parts, strict=True):
        w = beta / len(group_parts)
        for part in group_parts:
            x_plan = part if projection is None else part @ projection.T
            plan = optimal_plan(x_plan, anchor_plan, p=2)
            # column j of the plan carries mass 1/m: m * plan[:, j] are convex weights
            out += w * (m * plan.T) @ part
    return out


@dataclass(frozen=True, eq=False)
class PerturbationRelease:
    """What :func:`output_perturbation` released.

    Attributes
    ----------
    support : (m, d) array
        The private support, in unit coordinates (not clipped: clipping to the ball is
        the caller's choice of post-processing).
    cost : PrivacyCost
        Spent by the Gaussian steps on this data: ``(epsilon, delta)`` and the GDP
        ``mu`` they compose to.
    sigma : float
        Noise standard deviation per coordinate and step.
    sensitivity : float
        L2 sensitivity of one step.
    splits : int
        :math:`k'`.
    iterations : int
    secure : bool
    trajectory : list of (m, d) arrays
        The released anchors after each step (all private).
    params : dict
    """

    support: np.ndarray
    cost: PrivacyCost
    sigma: float
    sensitivity: float
    splits: int
    iterations: int
    secure: bool
    trajectory: list[np.ndarray] = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict)




def output_perturbation(groups: Sequence[np.ndarray], anchor: np.ndarray, *, epsilon: float,
                        delta: float, splits: int = 1, iterations: int = 1,
                        group_weights: np.ndarray | None = None, calibration: str = "analytic",
                        projection: np.ndarray | None = None,
                        rng: np.random.Generator | int | None = None,
                        accountant: Spender | None = None) -> PerturbationRelease:
    r"""Release a barycenter support by noisy anchored steps; :math:`(\varepsilon,\delta)`-DP.

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays
        The sensitive groups **in unit coordinates** (inside the ball of radius 1/2;
        :class:`~privot.barycenters.geometry.PublicBounds` maps and clips them).
    anchor : (m, d) array
        Initial anchor atoms: public, or the output of an earlier private release.
    epsilon, delta : float
        Budget of all the Gaussian steps together; ``delta`` in (0, 1).
    splits : int
        :math:`k'` parts per group (paper 001 Prop. 6), ``1 <= k' <= min_i n_i``.
    iterations : int
        Number :math:`T` of noisy steps.
    group_weights : (k,) array, optional
        :math:`\beta_i` (normalised to sum to one), default ``1/k``.
    calibration : {"analytic", "classic"}
        ``"analytic"`` (default): :math:`T` steps of :math:`\sigma = \Delta\sqrt T/\mu`
        where :math:`\mu` is the GDP parameter of :math:`(\varepsilon, \delta)`
        (exact composition, Balle-Wang for :math:`T = 1`). ``"classic"``: the paper's
        :math:`\sigma = \Delta\sqrt{2\ln(1.25 T/\delta)}\, T/\varepsilon` per step
        (basic composition of :math:`T` steps of :math:`(\varepsilon/T, \delta/T)`;
        for :math:`T = 1` exactly paper 000's
        :math:`\sigma^2 = 2m\ln(1.25/\delta)/(\varepsilon k)^2`), valid for
        :math:`\varepsilon/T < 1`.
    projection : (d', d) array, optional
        JL matrix for computing the plans (paper 001 Thm 5).
    rng : Generator or int, optional
        Seeded randomness (splitting and noise) for experiments: ``secure=False``.
        Default: the OS CSPRNG for the noise.
    accountant : Spender, optional
        Charged the total before any noise is drawn.

    Returns
    -------
    PerturbationRelease

    Privacy
    -------
    Unit: one point of one group; relation: replace one point
    (:attr:`Neighbouring.REPLACE_ONE`, paper 000 Def. 4); group sizes are public.
    """
    gs, _, beta = check_measures(groups, None, group_weights, name="groups")
    k = len(gs)
    a0 = check_points(anchor, "anchor")
    m, d = a0.shape
    if d != gs[0].shape[1]:
        raise InvalidDataError(f"anchor has dimension {d}, the groups have {gs[0].shape[1]}")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    kp = check_int(splits, "splits", minimum=1)
    T = check_int(iterations, "iterations", minimum=1)
    if calibration not in CALIBRATIONS:
        raise InvalidParameterError("calibration", calibration, f"one of {CALIBRATIONS}")
    if projection is not None:
        projection = np.asarray(projection, dtype=np.float64)
        if projection.ndim != 2 or projection.shape[1] != d:
            raise InvalidParameterError("projection", projection.shape, f"a (d', {d}) matrix")

    sens = perturbation_sensitivity(m, beta, kp)
    if calibration == "analytic":
        # T steps that are each mu_T-GDP compose to sqrt(T) mu_T-GDP exactly (Dong, Roth
        # and Su 2022, Cor. 3.3). A Gaussian step is released through the secure
        # mechanism at a point (eps_t, delta) of the mu_T curve, so that its calibration
        # gives sigma = Delta' / mu_T.
        mu_step = accounting.gdp_mu_for(eps, dlt) / math.sqrt(T)
        step_eps = accounting.gdp_to_epsilon(mu_step, dlt)
        if not step_eps > 0:
            raise InvalidParameterError(
                "iterations", iterations, f"fewer steps: {T} steps leave each one mu = "
                f"{mu_step:.3g}, below what delta={dlt:g} alone already covers")
        step_delta = dlt
    else:
        step_eps, step_delta = eps / T, dlt / T  # basic composition of T classic steps
    gen = as_generator(rng) if rng is not None else np.random.default_rng()
    noise_rng = gen if rng is not None else None  # None: the OS CSPRNG
    parts = split_groups(gs, kp, gen)  # data-independent, so its randomness need not be secret

    if accountant is not None:
        accountant.spend(PrivacyCost(eps, dlt), mechanism=f"barycenter-perturbation-{calibration}",
                         relation=Neighbouring.REPLACE_ONE,
                         params={"sensitivity": sens, "splits": kp, "iterations": T, "m": m})
    a = a0
    trajectory = []
    releases = []
    for _ in range(T):
        exact = anchored_step(parts, a, group_weights=beta, projection=projection)
        rel = gaussian_mechanism(exact, sensitivity=sens, epsilon=step_eps, delta=step_delta,
                                 calibration=calibration, rng=noise_rng,
                                 relation=Neighbouring.REPLACE_ONE)
        releases.append(rel)
        a = np.asarray(rel.value)
        trajectory.append(a)
    sigma = releases[-1].params["sigma"]
    mu = (math.sqrt(T) * releases[-1].params["effective_sensitivity"] / sigma
          if calibration == "analytic" else None)
    return PerturbationRelease(
        support=a, cost=PrivacyCost(eps, dlt, mu), sigma=sigma, sensitivity=sens, splits=kp,
        iterations=T, secure=all(r.secure for r in releases), trajectory=trajectory,
        params={"calibration": calibration, "m": m, "k": k,
                "projection_dim": None if projection is None else projection.shape[0]})
