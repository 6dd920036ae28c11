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

where :math:`T_P` is a transport plan between the uniform measure on the usable points of
:math:`P` and the uniform measure on the anchor atoms (computed, optionally, in a JL
projection). The plan is solved by POT's network simplex within a **public iteration
budget** (:func:`~privot.ot.plan_budget` of the part's row count and :math:`m`) and is
always a coupling of those two uniform measures (an element of the transport
polytope :math:`\Pi`): optimal
when the solver finishes, otherwise the solver's plan repaired into the transport
polytope (:func:`~privot.ot.budgeted_plan`). Its columns are normalised so that
:math:`m T_P[\cdot, j]` sums to one exactly (float rounding only).

The sensitivity argument holds for **any** coupling :math:`T_P` in that polytope, optimal
or not: :math:`m T_P[\cdot, j]` are convex weights, so each :math:`B_P(a)_j` is a convex
combination of points of :math:`P` and lies in the ball :math:`B_0(1/2)`. Optimality of
the plan is utility, not privacy. One changed point changes one part only, hence
:math:`\|F(D;a)_j - F(D';a)_j\| \le \max_i \beta_i / k'` and
:math:`\Delta_2 F \le \sqrt m \max_i \beta_i / k'` (:math:`= \sqrt m/(k k')` for
:math:`\beta_i = 1/k`): the paper's constant, now with a proof. ``iterations`` noisy
steps, each anchored at the previous release (post-processing), compose exactly as
Gaussian DP: :math:`T` steps of noise :math:`\sigma` are
:math:`\sqrt T \Delta_2/\sigma`-GDP.

**Unusable rows.** A row with a non-finite coordinate (a missing or non-numeric value
read as NaN, or an infinity) is *unusable*: it still counts in the public group size
:math:`n_i` and still takes its place in the split (the part of a row depends on its
index only), but the part's plan uses only the part's usable rows. A part with no
usable row contributes the centre :math:`0` of the unit ball. Replacing one row (by any
row, usable or not) changes one part, whose :math:`B_P(a)_j` is a point of
:math:`B_0(1/2)` before and after: the bound above is unchanged.

**Precondition, checked.** Every usable point must lie in the closed ball of radius 1/2
(tolerance ``BALL_TOLERANCE``); :func:`output_perturbation` refuses other data before
anything is charged (map it with
:meth:`PublicBounds.to_unit <privot.barycenters.geometry.PublicBounds.to_unit>`, which
clips and counts).

**Total.** After the budget is charged the release does a bounded amount of work fixed
by public sizes (``iterations`` steps, :math:`k k'` plans, each within its public
budget) and always answers; how many plans were not optimal depends on the data and is
reported only in :attr:`PerturbationRelease.curator_only`.

The first anchor comes from :mod:`privot.barycenters.api` (a private-coreset
barycenter bought with part of the budget, or public atoms given by the caller).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._usable import group_arrays, usable_rows
from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_points,
    check_positive,
    check_weights,
)
from privot.barycenters._repr import short_repr
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import budgeted_emd, plan_budget, squared_euclidean
from privot.privacy import accounting
from privot.privacy.mechanisms import gaussian_mechanism, gaussian_sigma
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender

__all__ = [
    "BALL_TOLERANCE",
    "CALIBRATIONS",
    "UNIT_RADIUS",
    "PerturbationRelease",
    "anchored_step",
    "check_perturbation_inputs",
    "check_unit_groups",
    "output_perturbation",
    "paper_sigma",
    "perturbation_sensitivity",
    "recommended_splits",
    "split_groups",
]

CALIBRATIONS = ("analytic", "classic")
#: Radius of the ball :math:`B_0(1/2)` the sensitivity argument assumes (unit coordinates).
UNIT_RADIUS = 0.5
#: Usable points up to this far outside the ball are accepted (float rounding of
#: :meth:`PublicBounds.to_unit`) and scaled back onto its sphere.
BALL_TOLERANCE = 1e-9


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

    Derivation in ``docs/privacy/barycenters.md`` (unit: one row of one group,
    replaced; usable rows in the ball of radius 1/2, checked by
    :func:`output_perturbation`; unusable rows and empty parts contribute the centre).
    """
    mm = check_int(m, "m", minimum=1)
    kp = check_int(splits, "splits", minimum=1)
    return math.sqrt(mm) * float(max(group_weights)) / kp


def check_unit_groups(groups: object, *, name: str = "groups"
                      ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    r"""Validate groups in unit coordinates for output perturbation; unusable rows allowed.

    Each group is converted to a float ``(n_i, d)`` array with ``n_i >= 1`` rows (the
    public group size) and a common ``d``. A row with a non-finite coordinate (NaN for a
    missing or non-numeric value, or an infinity) is *unusable*: it is kept (it counts in
    ``n_i`` and takes its place in the split) and ignored by the anchored step. Every
    usable row must lie in the closed ball of radius :data:`UNIT_RADIUS` = 1/2, up to
    :data:`BALL_TOLERANCE`; rows within the tolerance outside are scaled back onto the
    sphere (float rounding of :meth:`PublicBounds.to_unit`).

    Call it before anything is charged: it is the precondition the sensitivity
    :math:`\sqrt m \max_i \beta_i / k'` relies on.

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays
    name : str
        The caller's name for ``groups`` in error messages.

    Returns
    -------
    groups : list of (n_i, d) float arrays
        Copies (unusable rows unchanged).
    usable : list of (n_i,) bool arrays
        Which rows are usable (curator-only information).

    Raises
    ------
    InvalidDataError
        Not a sequence of 2-D numeric arrays, no group, an empty group, mismatched
        dimensions, or a usable point outside the ball (the message names the group and
        the largest norm found).
    """
    out, masks = [], []
    for i, arr in enumerate(group_arrays(groups, name)):
        ok = usable_rows(arr)
        if np.any(ok):
            norms = np.linalg.norm(arr[ok], axis=1)
            largest = float(norms.max())
            if not largest <= UNIT_RADIUS + BALL_TOLERANCE:
                raise InvalidDataError(
                    f"{name}[{i}] has a point of norm {largest:.6g} outside the ball of "
                    f"radius {UNIT_RADIUS} that the sensitivity of output perturbation "
                    "assumes (unit coordinates); map the data with PublicBounds.to_unit "
                    "(which clips, and counts what it clipped) or clip it to the ball "
                    "first. Nothing was charged")
            over = norms > UNIT_RADIUS
            if np.any(over):
                idx = np.flatnonzero(ok)[over]
                arr[idx] *= (UNIT_RADIUS / norms[over])[:, None]
        out.append(arr)
        masks.append(ok)
    return out, masks


def split_groups(groups: Sequence[np.ndarray], splits: int,
                 rng: np.random.Generator) -> list[list[np.ndarray]]:
    """Split every group into ``splits`` disjoint parts by a data-independent random permutation.

    The part a row lands in depends on its index only (a uniformly random permutation
    of ``range(n_i)`` over **all** rows, unusable ones included, dealt round-robin), never
    on its value, so replacing one row changes exactly one part. Part sizes (in rows)
    differ by at most one and are public; unusable rows (a non-finite coordinate) stay
    in their part and are ignored by :func:`anchored_step`.

    Returns
    -------
    list of list of (n_P, d) arrays
        ``parts[i][j]`` is part ``j`` of group ``i``.
    """
    kp = check_int(splits, "splits", minimum=1)
    out = []
    for i, g in enumerate(groups):
        g = np.asarray(g)
        if kp > len(g):
            raise InvalidParameterError(
                "splits", splits, f"at most the size of the smallest group (group {i} has "
                f"{len(g)} rows); each part needs at least one row")
        order = rng.permutation(len(g))
        out.append([g[order[j::kp]] for j in range(kp)])
    return out


@dataclass(frozen=True)
class _Part:
    """One part, ready for every anchored step: its usable rows, the same in the space
    the plans are solved in (JL-projected or not) and its public plan budget."""

    points: np.ndarray
    planned: np.ndarray
    budget: int


def _prepare_parts(parts: Sequence[Sequence[np.ndarray]], m: int,
                   projection: np.ndarray | None, max_iter: int | None
                   ) -> list[list[_Part | None]]:
    """The parts as :class:`_Part` (None: no usable row), computed once for all steps."""
    out = []
    for group_parts in parts:
        ready: list[_Part | None] = []
        for part in group_parts:
            rows = np.asarray(part, dtype=np.float64)
            x = rows[usable_rows(rows)]
            # public budget: the part's row count (unusable rows included) and m
            budget = plan_budget(rows.shape[0], m) if max_iter is None else max_iter
            ready.append(None if x.shape[0] == 0 else _Part(
                x, x if projection is None else x @ projection.T, budget))
        out.append(ready)
    return out


def _anchored_step(parts: list[list[_Part | None]], anchor: np.ndarray, beta: np.ndarray,
                   projection: np.ndarray | None) -> tuple[np.ndarray, int]:
    """One step on prepared parts; returns it and the number of non-optimal plans
    (curator-only). Never raises on the values: the plans come from the unvalidated
    budgeted solver (the inputs were validated before the charge)."""
    m = anchor.shape[0]
    anchor_plan = anchor if projection is None else anchor @ projection.T
    b = np.full(m, 1.0 / m)
    out = np.zeros(anchor.shape, dtype=np.float64)
    non_optimal = 0
    for beta_i, group_parts in zip(beta, parts, strict=True):
        w = beta_i / len(group_parts)
        for part in group_parts:
            if part is None:  # no usable row: the part contributes the centre 0
                continue
            n = part.points.shape[0]
            plan, optimal = budgeted_emd(np.full(n, 1.0 / n), b,
                                         squared_euclidean(part.planned, anchor_plan),
                                         part.budget)
            non_optimal += int(not optimal)
            # any coupling works: column j carries mass 1/m, so its normalised column is a
            # vector of convex weights (normalised again so that it sums to one exactly)
            cols = plan.sum(axis=0)
            weights = np.divide(plan, cols, out=np.full_like(plan, 1.0 / n), where=cols > 0)
            out += w * (weights.T @ part.points)
    return out, non_optimal


def anchored_step(parts: Sequence[Sequence[np.ndarray]], anchor: np.ndarray, *,
                  group_weights: np.ndarray, projection: np.ndarray | None = None,
                  max_iter: int | None = None) -> np.ndarray:
    r"""The anchored barycentric step :math:`F(D; a) = \sum_P w_P B_P(a)` (module docstring).

    Total: every plan is solved within a public iteration budget and is a coupling
    (optimal or repaired), so the step always answers; it never raises on the values.

    Parameters
    ----------
    parts : list of list of (n_P, d) arrays
        From :func:`split_groups`. Rows with a non-finite coordinate are unusable and
        ignored; a part with no usable row contributes the centre 0.
    anchor : (m, d) array
        Anchor atoms (public or already private), uniform weights.
    group_weights : (k,) array
        :math:`\beta_i`, summing to one.
    projection : (d', d) array, optional
        A JL matrix: plans are computed between projected points (paper 001 Thm 5);
        the barycentric means are taken in :math:`\mathbb{R}^d`.
    max_iter : int, optional
        Network-simplex budget of every plan. Default
        :func:`~privot.ot.plan_budget` ``(n_P, m)`` with ``n_P`` the part's row count
        (unusable rows included): a function of public sizes only.

    Returns
    -------
    (m, d) array
        Each row a weighted sum, with weights :math:`\beta_i/k'`, of convex combinations
        of usable points (or 0) of each part.
    """
    anchor = np.asarray(anchor, dtype=np.float64)
    beta = np.asarray(group_weights, dtype=np.float64)
    budget = None if max_iter is None else check_int(max_iter, "max_iter", minimum=1)
    ready = _prepare_parts(parts, anchor.shape[0], projection, budget)
    return _anchored_step(ready, anchor, beta, projection)[0]


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
        Public parameters (``calibration``, ``m``, ``k``, ``projection_dim``,
        ``plan_max_iter``, ``group_sizes``: the public row counts).
    curator_only : dict
        **Curator-only, not publishable** (exact values computed from the raw data, no
        noise): ``"non_optimal_plans"``, per step, the plans whose network simplex
        stopped at its public budget and were repaired into a coupling (privacy is
        unaffected; utility may be); ``"unusable_rows"``, per group, the rows with a
        non-finite coordinate; ``"empty_parts"``, per group, the parts with no usable
        row (they contributed the centre 0).
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
    curator_only: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return short_repr(self, ("support", "sigma", "splits", "iterations", "secure"))


@dataclass(frozen=True)
class _Checked:
    groups: list[np.ndarray]
    usable: list[np.ndarray]
    beta: np.ndarray
    epsilon: float
    delta: float
    splits: int
    iterations: int
    step_epsilon: float
    step_delta: float
    budget: int | None


def _check_inputs(groups: object, *, m: int | None, epsilon: float, delta: float,
                  splits: int, iterations: int, group_weights: object | None,
                  calibration: str, plan_max_iter: int | None) -> _Checked:
    gs, usable = check_unit_groups(groups, name="groups")
    beta = check_weights(group_weights, len(gs), "group_weights")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    kp = check_int(splits, "splits", minimum=1)
    smallest = min(g.shape[0] for g in gs)
    if kp > smallest:
        raise InvalidParameterError(
            "splits", splits, f"at most the size of the smallest group ({smallest} rows); "
            "each part needs at least one row")
    T = check_int(iterations, "iterations", minimum=1)
    if calibration not in CALIBRATIONS:
        raise InvalidParameterError("calibration", calibration, f"one of {CALIBRATIONS}")
    budget = (None if plan_max_iter is None
              else check_int(plan_max_iter, "plan_max_iter", minimum=1))
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
    if m is not None:
        mm = check_int(m, "m", minimum=1)
        gaussian_sigma(perturbation_sensitivity(mm, beta, kp), step_eps, step_delta,
                       calibration=calibration)
    return _Checked(gs, usable, beta, eps, dlt, kp, T, step_eps, step_delta, budget)


def check_perturbation_inputs(groups: Sequence[np.ndarray], *, m: int, epsilon: float,
                              delta: float, splits: int = 1, iterations: int = 1,
                              group_weights: np.ndarray | None = None,
                              calibration: str = "analytic",
                              plan_max_iter: int | None = None) -> None:
    """Every check :func:`output_perturbation` makes on its data and parameters, alone.

    For a caller that charges its accountant itself before calling
    :func:`output_perturbation` (e.g. :func:`privot.barycenters.private_barycenter`): run
    this first, before the charge, so that nothing can be refused afterwards. The
    anchor and the projection are checked by :func:`output_perturbation` on their shapes
    only (public), and the release then always answers.

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays
        As in :func:`output_perturbation` (unit coordinates; unusable rows allowed).
    m : int
        Number of anchor atoms.
    epsilon, delta, splits, iterations, group_weights, calibration, plan_max_iter
        As in :func:`output_perturbation`.

    Raises
    ------
    InvalidDataError, InvalidParameterError
        As :func:`output_perturbation`.
    """
    _check_inputs(groups, m=m, epsilon=epsilon, delta=delta, splits=splits,
                  iterations=iterations, group_weights=group_weights,
                  calibration=calibration, plan_max_iter=plan_max_iter)


def output_perturbation(groups: Sequence[np.ndarray], anchor: np.ndarray, *, epsilon: float,
                        delta: float, splits: int = 1, iterations: int = 1,
                        group_weights: np.ndarray | None = None, calibration: str = "analytic",
                        projection: np.ndarray | None = None,
                        rng: np.random.Generator | int | None = None,
                        accountant: Spender | None = None,
                        plan_max_iter: int | None = None) -> PerturbationRelease:
    r"""Release a barycenter support by noisy anchored steps; :math:`(\varepsilon,\delta)`-DP.

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays
        The sensitive groups **in unit coordinates**: every usable row inside the closed
        ball of radius 1/2 (checked, tolerance :data:`BALL_TOLERANCE`;
        :meth:`PublicBounds.to_unit <privot.barycenters.geometry.PublicBounds.to_unit>`
        maps and clips them). A row with a non-finite coordinate is unusable: it counts
        in the public size ``n_i`` and in the split, and is otherwise ignored.
    anchor : (m, d) array
        Initial anchor atoms: public, or the output of an earlier private release.
    epsilon, delta : float
        Budget of all the Gaussian steps together; ``delta`` in (0, 1).
    splits : int
        :math:`k'` parts per group (paper 001 Prop. 6), ``1 <= k' <= min_i n_i`` (rows,
        unusable ones included).
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
        Charged the total before any noise is drawn, after every check.
    plan_max_iter : int, optional
        Network-simplex budget of every plan. Default
        :func:`~privot.ot.plan_budget` ``(n_P, m)`` per part (``n_P`` its row count):
        public sizes only. A plan that reaches the budget is repaired into a coupling
        (counted in ``curator_only``); the release is still made.

    Returns
    -------
    PerturbationRelease

    Raises
    ------
    InvalidDataError
        Bad groups or anchor, or a usable point outside the ball of radius 1/2 (the
        message names the group and the largest norm); raised before anything is
        charged.
    InvalidParameterError
        A parameter outside its range, before anything is charged.

    Privacy
    -------
    Unit: one row of one group; relation: replace one row
    (:attr:`Neighbouring.REPLACE_ONE_IN_GROUP`, paper 000 Def. 4), usable or not; the
    group sizes
    ``n_i`` (rows, unusable included) are public. Sensitivity
    :math:`\sqrt m \max_i \beta_i / k'` per step for any coupling (module docstring,
    ``docs/privacy/barycenters.md``). Total: once charged, the release always answers
    after a bounded amount of work fixed by public sizes.
    """
    chk = _check_inputs(groups, m=None, epsilon=epsilon, delta=delta, splits=splits,
                        iterations=iterations, group_weights=group_weights,
                        calibration=calibration, plan_max_iter=plan_max_iter)
    gs, usable, beta, k = chk.groups, chk.usable, chk.beta, len(chk.groups)
    eps, dlt, kp, T, budget = chk.epsilon, chk.delta, chk.splits, chk.iterations, chk.budget
    a0 = check_points(anchor, "anchor")
    m, d = a0.shape
    if d != gs[0].shape[1]:
        raise InvalidDataError(f"anchor has dimension {d}, the groups have {gs[0].shape[1]}")
    if projection is not None:
        projection = np.asarray(projection, dtype=np.float64)
        if (projection.ndim != 2 or projection.shape[1] != d
                or not np.all(np.isfinite(projection))):
            raise InvalidParameterError("projection", projection.shape,
                                        f"a finite (d', {d}) matrix")
    sens = perturbation_sensitivity(m, beta, kp)
    step_eps, step_delta = chk.step_epsilon, chk.step_delta
    # the Gaussian calibration's own checks (e.g. classic needs eps < 1), before the charge
    gaussian_sigma(sens, step_eps, step_delta, calibration=calibration)
    noise_rng = check_rng(rng, bits=False)  # None: the OS CSPRNG
    gen = noise_rng if noise_rng is not None else np.random.default_rng()
    parts = split_groups(gs, kp, gen)  # data-independent, so its randomness need not be secret

    if accountant is not None:
        accountant.spend(PrivacyCost(eps, dlt), mechanism=f"barycenter-perturbation-{calibration}",
                         relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                         params={"sensitivity": sens, "splits": kp, "iterations": T, "m": m})
    a = a0
    trajectory = []
    releases = []
    non_optimal = []
    ready = _prepare_parts(parts, m, projection, budget)  # once for all T steps
    for _ in range(T):
        exact, n_non_optimal = _anchored_step(ready, a, beta, projection)
        non_optimal.append(n_non_optimal)
        rel = gaussian_mechanism(exact, sensitivity=sens, epsilon=step_eps, delta=step_delta,
                                 calibration=calibration, rng=noise_rng,
                                 relation=Neighbouring.REPLACE_ONE_IN_GROUP)
        releases.append(rel)
        a = np.asarray(rel.value)
        trajectory.append(a)
    sigma = releases[-1].params["sigma"]
    # rounded up, as gaussian_mechanism rounds each step's mu: never understated
    mu = (math.nextafter(math.sqrt(T) * releases[-1].params["effective_sensitivity"] / sigma,
                         math.inf) if calibration == "analytic" else None)
    return PerturbationRelease(
        support=a, cost=PrivacyCost(eps, dlt, mu), sigma=sigma, sensitivity=sens, splits=kp,
        iterations=T, secure=all(r.secure for r in releases), trajectory=trajectory,
        params={"calibration": calibration, "m": m, "k": k,
                "projection_dim": None if projection is None else projection.shape[0],
                "plan_max_iter": budget, "group_sizes": [int(g.shape[0]) for g in gs]},
        curator_only={"non_optimal_plans": non_optimal,
                      "unusable_rows": [int(np.count_nonzero(~u)) for u in usable],
                      "empty_parts": [sum(p is None for p in gp) for gp in ready]})
