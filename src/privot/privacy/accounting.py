"""Pure privacy accounting: composition, amplification, Gaussian DP, PLD, calibration.

Every function here is pure maths over numbers: no state, no randomness. The
derivations (statements, sources, neighbouring relations) are in
``docs/privacy/accounting.md``.

Conventions: a *noise multiplier* ``sigma`` is the Gaussian noise standard deviation
divided by the L2 sensitivity under the stated relation (add/remove for Poisson
sampling, replace-one for fixed-size sampling), so one unsampled step is
``1/sigma``-GDP. ``dp_accounting`` is imported lazily by the accountants that use it.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
)
from privot.errors import ConvergenceError, InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = [
    "ACCOUNTANTS",
    "SAMPLINGS",
    "NoiseCalibration",
    "amplify_fixed_size",
    "amplify_poisson",
    "calibrate_noise_multiplier",
    "compose_advanced",
    "compose_basic",
    "compose_parallel",
    "epsilon_for",
    "gdp_clt_epsilon",
    "gdp_clt_mu",
    "gdp_compose",
    "gdp_mu_for",
    "gdp_to_delta",
    "gdp_to_epsilon",
    "pld_epsilon",
    "pld_epsilon_curve",
    "rdp_epsilon",
]


def _phi(x: float) -> float:
    """Standard normal CDF, accurate in the tails."""
    return 0.5 * special.erfc(-x / math.sqrt(2.0))


def _gdp_delta_terms(mu: float, epsilon: float) -> tuple[float, float, float, float]:
    """``(a, b, Phi(a), log(e^eps Phi(b)))`` with ``a = mu/2 - eps/mu``, ``b = a - mu``."""
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    # e^eps * Phi(b) is kept in log space to avoid inf * 0.
    return a, b, _phi(a), epsilon + special.log_ndtr(b)


def gdp_to_delta(mu: float, epsilon: float) -> float:
    r"""The smallest delta such that a mu-GDP mechanism is (epsilon, delta)-DP.

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
              - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2)

    (Dong, Roth and Su 2022, Corollary 2.13; equivalently Balle and Wang 2018, Thm 8,
    for the Gaussian mechanism with sensitivity/sigma = mu). Evaluated in floating
    point: see :func:`_gdp_delta_upper` for a value that is never below the exact one.
    """
    mu = check_positive(mu, "mu")
    if not math.isfinite(epsilon) or epsilon < 0:
        raise InvalidParameterError("epsilon", epsilon, "a finite number >= 0")
    _, _, pa, log_b = _gdp_delta_terms(mu, epsilon)
    return max(0.0, pa - math.exp(log_b))


#: Unit roundoff of float64.
_U = 2.0**-53
#: Safety factor on the first-order rounding-error estimate of :func:`_gdp_delta_upper`:
#: against 50-digit mpmath the observed error was at most 1.23 times the estimate over
#: 20,000 random (mu, eps) (mu in [1e-6, 30], eps in [1e-8, 60]) and at most 1.37 times
#: over 15,000 points within 1e-9 of calibrated roots (eps in [1e-5, 50], delta in
#: [1e-16, 0.5]).
_ERROR_FACTOR = 8.0
#: Most steps :func:`_to_safe_side` takes before giving up (the step doubles each time).
_MAX_SAFE_STEPS = 200


def _gdp_delta_upper(mu: float, epsilon: float) -> float:
    r"""A float never below the *exact* :math:`\delta(\varepsilon)` of mu-GDP.

    The float value of :func:`gdp_to_delta` can be off by far more than an ulp: the
    arguments ``a`` and ``b`` carry a rounding error of about
    :math:`u(\mu/2 + \varepsilon/\mu)` that :math:`\Phi` amplifies by its hazard
    :math:`\approx|a|`, ``erfc`` and ``log_ndtr`` lose about :math:`a^2 u` in the tail,
    and the difference of the two terms cancels (for epsilon 0.01, delta 1e-12 the terms
    are ~5000 times delta). We add a first-order estimate of all of these, times
    :data:`_ERROR_FACTOR`. In a calibration this costs about
    :math:`16 u\,|a|\,(\mu/2 + \varepsilon/\mu)/\mu` relative in mu; measured for
    delta in [1e-15, 0.1]: at most 2e-13 at epsilon 1, 2e-11 at 0.01, 2e-10 at 0.001
    and 2e-9 at 1e-4 (the curve itself is that ill-conditioned in floating point).
    """
    a, b, pa, log_b = _gdp_delta_terms(mu, epsilon)
    pb = math.exp(log_b)
    s = mu / 2.0 + epsilon / mu  # |a|, |b| <= s; the absolute error of a and b is ~2us
    err = abs(pa - pb)
    if pa > 0.0:
        err += pa * (1.0 + a * a + (abs(a) + 1.0) * s)
    if pb > 0.0:
        err += pb * (1.0 + abs(log_b) + epsilon + b * b + (abs(b) + 1.0) * s)
    return max(0.0, pa - pb) + _ERROR_FACTOR * _U * err


def _to_safe_side(x: float, ok, *, up: bool, floor: float = 0.0, what: str) -> float:
    """Step ``x`` (> 0) away from a root until ``ok(x)`` holds, deterministically.

    A root finder stops within its tolerance of the root, on either side, and the curve
    it solves is itself rounded: the value it returns can claim slightly more privacy
    than the exact curve gives (up to 1.7e-11 relative in delta for the analytic
    Gaussian before this step). Steps start at one ulp relative and double until ``ok``
    holds; a short bisection between the last failing and the first passing value then
    brings the result back to within a few ulps of where ``ok`` starts to hold. Only
    values at which ``ok`` was seen to hold are returned. ``floor`` is an absolute scale
    for the steps of a value that may be ~0 (an epsilon).
    """
    step = 2.0**-52
    bad = None
    for _ in range(_MAX_SAFE_STEPS):
        if ok(x):
            break
        bad = x
        delta_x = step * max(abs(x), floor)
        x = x + delta_x if up else x - delta_x
        step = min(2.0 * step, 0.5)
    else:  # pragma: no cover - ok() never held
        raise ConvergenceError(f"could not round {what} to the safe side")
    if bad is not None:
        for _ in range(64):
            mid = 0.5 * (bad + x)
            if mid in (bad, x):
                break
            if ok(mid):
                x = mid
            else:
                bad = mid
    return x


def gdp_to_epsilon(mu: float, delta: float) -> float:
    r"""The smallest epsilon >= 0 such that a mu-GDP mechanism is (epsilon, delta)-DP.

    The root is rounded up: the exact :math:`\delta(\varepsilon)` at the returned
    epsilon is at most ``delta`` (``tests/privacy/test_calibration_safe_side.py``).
    """
    mu = check_positive(mu, "mu")
    delta = check_delta(delta, allow_zero=False)

    def excess(e: float) -> float:
        return _gdp_delta_upper(mu, e) - delta

    if excess(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0.0:
        hi *= 2.0
        if hi > 1e6:  # pragma: no cover - mu astronomically large
            return math.inf
    eps = float(optimize.brentq(excess, 0.0, hi, xtol=1e-15, rtol=1e-13))
    # brentq may stop just below the root: step up until the bound holds.
    return _to_safe_side(eps, lambda e: excess(e) <= 0.0, up=True, floor=1e-15,
                         what="epsilon")


def gdp_mu_for(epsilon: float, delta: float) -> float:
    r"""The largest mu such that mu-GDP implies (epsilon, delta)-DP.

    The analytic Gaussian mechanism (Balle and Wang 2018) uses
    ``sigma = sensitivity / gdp_mu_for(epsilon, delta)``. The root is rounded down: the
    exact :math:`\delta(\varepsilon)` of the returned mu is at most ``delta``
    (``tests/privacy/test_calibration_safe_side.py``); the rounding costs
    below 1e-9 relative for epsilon >= 0.001 (see :func:`_gdp_delta_upper`).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)

    def excess(m: float) -> float:
        return _gdp_delta_upper(m, epsilon) - delta

    lo, hi = 1e-12, 1.0
    while gdp_to_delta(hi, epsilon) < delta:
        hi *= 2.0
    mu = float(optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-13))
    # brentq may stop just above the root: step down until the bound holds.
    return _to_safe_side(mu, lambda m: excess(m) <= 0.0, up=False, what="mu")


# ---------------------------------------------------------------------------
# Composition of PrivacyCost lists
# ---------------------------------------------------------------------------

ACCOUNTANTS = ("pld", "rdp", "gdp-clt")
SAMPLINGS = ("poisson", "fixed-size")

#: Default grid of privacy losses for the PLD accountant (dp_accounting's default).
DEFAULT_VALUE_DISCRETIZATION = 1e-4


def _check_costs(costs: Iterable[PrivacyCost], name: str = "costs") -> list[PrivacyCost]:
    if isinstance(costs, PrivacyCost):
        raise InvalidParameterError(name, costs, "a sequence of PrivacyCost, not a single one")
    try:
        out = list(costs)
    except TypeError as exc:
        raise InvalidParameterError(name, costs, "an iterable of PrivacyCost") from exc
    if not out:
        raise InvalidParameterError(name, out, "a non-empty sequence of PrivacyCost")
    for i, c in enumerate(out):
        if not isinstance(c, PrivacyCost):
            raise InvalidParameterError(f"{name}[{i}]", c, "a privot.privacy.types.PrivacyCost")
    return out


def _cost(epsilon: float, delta: float, mu: float | None) -> PrivacyCost:
    """Build a PrivacyCost, capping delta just below one (a vacuous but valid claim)."""
    if delta >= 1.0:
        raise InvalidParameterError(
            "delta", delta, "the composed delta reached 1: the guarantee is vacuous")
    if math.isinf(epsilon) and mu is None:
        raise InvalidParameterError(
            "costs", epsilon, "finite epsilons, or a GDP mu on every cost whose epsilon is inf")
    return PrivacyCost(epsilon, delta, mu)


def gdp_compose(mus: Iterable[float]) -> float:
    r"""Exact composition of Gaussian DP guarantees.

    .. math:: G_{\mu_1} \otimes \cdots \otimes G_{\mu_k} = G_{\sqrt{\mu_1^2 + \cdots + \mu_k^2}}

    (Dong, Roth and Su 2022, Corollary 3.3). Holds under any neighbouring relation, as
    long as every mechanism is stated for the same one.

    Parameters
    ----------
    mus : iterable of float
        The GDP parameters, each > 0.

    Returns
    -------
    float
        The composed ``mu``.
    """
    vals = [check_positive(m, f"mus[{i}]") for i, m in enumerate(mus)]
    if not vals:
        raise InvalidParameterError("mus", vals, "a non-empty sequence of numbers > 0")
    return math.sqrt(math.fsum(m * m for m in vals))


def compose_basic(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    r"""Basic (sequential) composition of releases on the same data.

    .. math:: \Big(\sum_i \varepsilon_i,\ \sum_i \delta_i\Big)

    (Dwork and Roth 2014, Theorem 3.16). When *every* cost carries a GDP ``mu`` the
    result also carries the exact GDP composition ``sqrt(sum mu_i^2)``
    (:func:`gdp_compose`), which is usually much tighter once converted with
    :func:`gdp_to_epsilon`.

    Parameters
    ----------
    costs : sequence of PrivacyCost
        Non-empty; all stated for the same neighbouring relation and unit of privacy.

    Returns
    -------
    PrivacyCost

    Privacy
    -------
    Valid for any neighbouring relation shared by the inputs and for adaptively
    chosen mechanisms.
    """
    cs = _check_costs(costs)
    eps = math.fsum(c.epsilon for c in cs)
    delta = math.fsum(c.delta for c in cs)
    mu = gdp_compose(c.mu for c in cs) if all(c.mu is not None for c in cs) else None
    return _cost(eps, delta, mu)


def compose_parallel(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    r"""Parallel composition: mechanisms applied to *disjoint* parts of the data.

    .. math:: \Big(\max_i \varepsilon_i,\ \max_i \delta_i\Big)

    (McSherry 2009, Theorem 4). The partition must be chosen without looking at the
    data (e.g. by a public key of each unit), and each unit must fall in one part.

    Parameters
    ----------
    costs : sequence of PrivacyCost

    Returns
    -------
    PrivacyCost

    Privacy
    -------
    Under add/remove one unit only one part changes, so the guarantee is the worst
    part's. Under replace-one, a unit that moves between two parts changes two parts:
    use :func:`compose_basic` on the two worst parts in that case.
    """
    cs = _check_costs(costs)
    eps = max(c.epsilon for c in cs)
    delta = max(c.delta for c in cs)
    mu = max(c.mu for c in cs) if all(c.mu is not None for c in cs) else None  # type: ignore
    return _cost(eps, delta, mu)


def compose_advanced(cost: PrivacyCost, *, k: int, delta_slack: float) -> PrivacyCost:
    r"""Advanced composition (Dwork, Rothblum and Vadhan 2010) of ``k`` copies of ``cost``.

    .. math::
        \varepsilon' = \varepsilon\sqrt{2k\ln(1/\delta')} + k\varepsilon(e^{\varepsilon}-1),
        \qquad \delta_{\text{total}} = k\delta + \delta'

    (Dwork and Roth 2014, Theorem 3.20). The result is ``min`` of this and basic
    composition ``(k eps, k delta + delta')`` is not taken: call :func:`compose_basic`
    too if ``k`` is small.

    Parameters
    ----------
    cost : PrivacyCost
        The per-step cost, finite epsilon.
    k : int
        Number of (possibly adaptive) steps, >= 1.
    delta_slack : float
        The extra :math:`\delta'` in (0, 1).

    Returns
    -------
    PrivacyCost
    """
    if not isinstance(cost, PrivacyCost):
        raise InvalidParameterError("cost", cost, "a privot.privacy.types.PrivacyCost")
    if math.isinf(cost.epsilon):
        raise InvalidParameterError("cost.epsilon", cost.epsilon, "a finite epsilon")
    k = check_int(k, "k", minimum=1)
    slack = check_delta(delta_slack, "delta_slack", allow_zero=False)
    e = cost.epsilon
    eps = e * math.sqrt(2.0 * k * math.log(1.0 / slack)) + k * e * math.expm1(e)
    return _cost(eps, k * cost.delta + slack, None)


# ---------------------------------------------------------------------------
# Amplification by subsampling
# ---------------------------------------------------------------------------


def _float_up(x: Fraction) -> float:
    """The smallest float >= the exact rational ``x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _float_down(x: Fraction) -> float:
    """The largest float <= the exact rational ``x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


#: Relative rounding applied to the closed-form amplification (and its inverse): each
#: of expm1, the product or quotient and log1p is within about one ulp (<= 2u), so
#: 8u (resp. 32u for the inverse, which must also absorb the forward rounding) puts
#: the float on the safe side of the exact value.
_AMPLIFY_UP = 2.0**-50
_AMPLIFY_INVERSE_DOWN = 2.0**-48


def _amplify(cost: PrivacyCost, p: Fraction) -> PrivacyCost:
    if not isinstance(cost, PrivacyCost):
        raise InvalidParameterError("cost", cost, "a privot.privacy.types.PrivacyCost")
    if math.isinf(cost.epsilon):
        raise InvalidParameterError(
            "cost.epsilon", cost.epsilon,
            "a finite epsilon (a GDP-only cost is amplified by the accountants, not here)")
    # eps' = log(1 + p (e^eps - 1)), computed stably, with p rounded up and the result
    # moved up by a few ulps so that it is never below the exact eps' (the amplified
    # claim must not be stronger than the lemma gives); eps' <= eps exactly, hence min.
    eps = math.log1p(_float_up(p) * math.expm1(cost.epsilon))
    eps = min(eps * (1.0 + _AMPLIFY_UP), cost.epsilon)
    # Underflow guard: a positive epsilon stays positive (PrivacyCost refuses 0).
    return PrivacyCost(max(eps, math.ulp(0.0)), _float_up(p * Fraction(cost.delta)))


def amplify_poisson(cost: PrivacyCost, *, sampling_rate: float) -> PrivacyCost:
    r"""Amplification by Poisson subsampling, add/remove relation.

    Each unit is kept independently with probability ``q``; the mechanism runs on the
    kept units. If the mechanism is :math:`(\varepsilon,\delta)`-DP then

    .. math:: \varepsilon' = \ln\big(1 + q(e^{\varepsilon}-1)\big), \qquad \delta' = q\delta

    (Li, Qardaji and Su 2012; Balle, Barthe and Gaboardi 2018, Theorem 8).

    Parameters
    ----------
    cost : PrivacyCost
        The guarantee of the mechanism on the sample (finite epsilon).
    sampling_rate : float
        ``q`` in (0, 1].

    Returns
    -------
    PrivacyCost
        Never larger than ``cost`` (equal when ``q = 1``).

    Privacy
    -------
    Add/remove one unit (:attr:`Neighbouring.ADD_REMOVE`). The sample must be drawn
    with fresh randomness, independent of the data.
    """
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    return _amplify(cost, Fraction(q))


def amplify_fixed_size(cost: PrivacyCost, *, sample_size: int | Sequence[int],
                       population_size: int | Sequence[int]) -> PrivacyCost:
    r"""Amplification by fixed-size sampling without replacement, replace-one relation.

    ``n'_i`` of the ``n_i`` units of each category ``i`` are drawn uniformly without
    replacement; the mechanism runs on the sample. If it is :math:`(\varepsilon,\delta)`-DP
    on samples then (Lemma 5.1 of Rodriguez-Vitores, Lalanne and Loubes; Balle, Barthe
    and Gaboardi 2018, Theorem 10 for one category)

    .. math::
        \varepsilon' = \ln\big(1 + p(e^{\varepsilon}-1)\big), \quad \delta' = p\delta,
        \quad p = \max_i n'_i / n_i .

    Parameters
    ----------
    cost : PrivacyCost
        The guarantee of the mechanism on samples of the given sizes.
    sample_size : int or sequence of int
        ``n'_i >= 1`` per category (one int for a single category).
    population_size : int or sequence of int
        ``n_i >= n'_i`` per category, public.

    Returns
    -------
    PrivacyCost

    Privacy
    -------
    Replace-one (k-end replace-one with categories, Definition 2.1 of paper 004):
    the dataset sizes are public. The worst case is the category with the largest
    sampling fraction, hence the max.
    """
    return _amplify(cost, _largest_fraction(sample_size, population_size))


def _largest_fraction(sample_size: int | Sequence[int],
                      population_size: int | Sequence[int]) -> Fraction:
    """``max_i n'_i / n_i``, exact, after validating both (one int means one category)."""
    sizes = [sample_size] if not isinstance(sample_size, Sequence) else list(sample_size)
    pops = ([population_size] if not isinstance(population_size, Sequence)
            else list(population_size))
    if len(sizes) != len(pops) or not sizes:
        raise InvalidParameterError(
            "sample_size", sample_size,
            f"as many categories as population_size ({len(pops)}), at least one")
    p = Fraction(0)
    for i, (m, n) in enumerate(zip(sizes, pops, strict=True)):
        n = check_int(n, f"population_size[{i}]", minimum=1)
        m = check_int(m, f"sample_size[{i}]", minimum=1, maximum=n)
        p = max(p, Fraction(m, n))
    return p


def sample_cost_for(target: PrivacyCost, *, sample_size: int | Sequence[int],
                    population_size: int | Sequence[int]) -> PrivacyCost:
    r"""The budget a mechanism may spend on a sample so that it meets ``target`` on the population.

    The inverse of :func:`amplify_fixed_size`: with :math:`p = \max_i n'_i/n_i`,

    .. math:: \varepsilon_0 = \ln\big(1 + (e^{\varepsilon} - 1)/p\big), \qquad
              \delta_0 = \delta / p,

    so that ``amplify_fixed_size(sample_cost_for(t, ...), ...)`` is ``t`` (up to
    rounding, never above it: with the exact ``p``, :math:`\varepsilon_0` and
    :math:`\delta_0` are rounded down, checked against the exact amplification by
    ``tests/privacy/test_calibration_safe_side.py``). Used by the
    barycenter experiments of paper 000 (Sec. 6), which run on a uniform sample of a
    larger population.

    Raises
    ------
    InvalidParameterError
        When :math:`\delta/p \ge 1` (the target delta is too large for this sampling
        rate).
    """
    if not isinstance(target, PrivacyCost):
        raise InvalidParameterError("target", target, "a privot.privacy.types.PrivacyCost")
    if math.isinf(target.epsilon):
        raise InvalidParameterError("target.epsilon", target.epsilon, "a finite epsilon")
    p = _largest_fraction(sample_size, population_size)
    # Rounded down by a few ulps (with the exact p): one ulp is not enough, expm1, the
    # quotient and log1p each round, and amplify_fixed_size rounds its result up.
    eps0 = math.log1p(float(Fraction(math.expm1(target.epsilon)) / p))
    eps0 = eps0 * (1.0 - _AMPLIFY_INVERSE_DOWN)
    delta0 = _float_down(Fraction(target.delta) / p)
    if delta0 >= 1.0:
        raise InvalidParameterError(
            "target.delta", target.delta,
            f"below the sampling fraction {float(p):.3g} (delta / p must stay below 1)")
    return PrivacyCost(eps0, delta0)


# ---------------------------------------------------------------------------
# Subsampled Gaussian: GDP central limit theorem, PLD, RDP
# ---------------------------------------------------------------------------


def _check_common(noise_multiplier: object, sampling_rate: object, steps: object,
                  sampling: object) -> tuple[float, float, int, str]:
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    q = check_probability(sampling_rate, "sampling_rate", open_left=True)
    t = check_int(steps, "steps", minimum=1)
    if sampling not in SAMPLINGS:
        raise InvalidParameterError("sampling", sampling, f"one of {SAMPLINGS}")
    return sigma, q, t, str(sampling)


def gdp_clt_mu(*, noise_multiplier: float, sampling_rate: float, steps: int) -> float:
    r"""The GDP central-limit approximation for ``T`` subsampled Gaussian steps.

    .. math:: \mu = p\,\sqrt{T\,\big(e^{1/\sigma^2} - 1\big)}

    (Dong, Roth and Su 2022, Corollary 5.4, for :math:`C_p(G_{1/\sigma})^{\otimes T}`
    with :math:`p\sqrt{T}` held fixed as :math:`T\to\infty`). Paper 004 (Section 5.2)
    shows its fixed-size, replace-one scheme is :math:`C_p(G_{\Delta/\sigma})^{\otimes T}`-DP
    with :math:`p = \max_i n'_i/n_i`, so the same formula applies with that ``p``.

    This is an *approximation*, not an upper bound: for finite ``T`` it can
    under-state the privacy loss (see ``docs/privacy/accounting.md``).

    Parameters
    ----------
    noise_multiplier : float
        ``sigma``: noise standard deviation divided by the sensitivity.
    sampling_rate : float
        ``p`` in (0, 1].
    steps : int
        ``T >= 1``.
    """
    sigma, q, t, _ = _check_common(noise_multiplier, sampling_rate, steps, "poisson")
    x = 1.0 / (sigma * sigma)
    if x > 700:
        return math.inf
    return q * math.sqrt(t * math.expm1(x))


def _relation(sampling: str):
    import dp_accounting

    nr = dp_accounting.NeighboringRelation
    return nr.ADD_OR_REMOVE_ONE if sampling == "poisson" else nr.REPLACE_ONE


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    """dp_accounting's RDP logs a warning per order it skips; keep the caller's log clean."""
    logger = logging.getLogger("absl")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def _fixed_size_pld(sigma: float, p: float, vdi: float):
    r"""PLD of :math:`C_p(G_{1/\sigma})`, the f-DP guarantee of one fixed-size step.

    dp_accounting's PLD accountant has no sampling-without-replacement event, so we
    build the dominating pair ourselves (derivation in docs/privacy/accounting.md):
    the remove-direction PLD :math:`\omega` of :math:`(1-p)N(1/\sigma,1)+pN(0,1)` vs
    :math:`N(0,1)` gives :math:`f_p = pG_{1/\sigma}+(1-p)\mathrm{Id}`; for
    :math:`\varepsilon\ge 0` the privacy profile of :math:`C_p(f)` equals that of
    :math:`f_p`; since :math:`C_p(f)` is symmetric its PLD satisfies
    :math:`\omega(-l)=e^{-l}\omega(l)`, which fixes the negative losses, and the
    remaining mass sits at loss 0 (the linear piece of :math:`C_p(f)`).
    Pessimistic rounding of the positive losses keeps the result an upper bound.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    base = pld_mod.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=1.0, sampling_prob=p,
        value_discretization_interval=vdi, neighboring_relation=_relation("poisson"))
    pmf = base._pmf_remove.to_dense_pmf()  # noqa: SLF001 - no public accessor
    idx = pmf._lower_loss + np.arange(pmf._probs.size)  # noqa: SLF001
    probs = np.asarray(pmf._probs, dtype=float)  # noqa: SLF001
    inf_mass = float(pmf._infinity_mass)  # noqa: SLF001
    keep = (idx > 0) & (probs > 0)
    idx, probs = idx[keep], probs[keep]
    neg = probs * np.exp(-idx * vdi)
    rounded: dict[int, float] = {}
    for i, m, mn in zip(idx.tolist(), probs.tolist(), neg.tolist(), strict=True):
        rounded[int(i)] = m
        if mn > 0:
            rounded[-int(i)] = mn
    zero = 1.0 - math.fsum(probs) - math.fsum(neg) - inf_mass
    rounded[0] = max(zero, 0.0)
    return pld_mod.PrivacyLossDistribution.create_from_rounded_probability(
        rounded, inf_mass, vdi, pessimistic_estimate=True, symmetric=True)


def _fixed_size_event_sizes(q: float) -> tuple[int, int]:
    """Integers (n, m) with m/n = q to 1e-12 for dp_accounting's without-replacement event."""
    frac = Fraction(q).limit_denominator(10**12)
    return frac.denominator, frac.numerator


def subsampled_gaussian_dp_event(sigma: float, q: float, sampling: str):
    """dp-accounting's event of one subsampled Gaussian step: ``PoissonSampledDpEvent``
    (``"poisson"``) or ``SampledWithoutReplacementDpEvent`` (``"fixed-size"``)."""
    import dp_accounting

    gauss = dp_accounting.GaussianDpEvent(sigma)
    if sampling == "poisson":
        return dp_accounting.PoissonSampledDpEvent(q, gauss)
    n, m = _fixed_size_event_sizes(q)
    return dp_accounting.SampledWithoutReplacementDpEvent(n, m, gauss)


def subsampled_gaussian_step_pld(sigma: float, q: float, sampling: str, vdi: float):
    """The PLD of one subsampled Gaussian step (dp-accounting's for Poisson sampling,
    :func:`_fixed_size_pld` for fixed-size); compose it ``T`` times for a run."""
    if sampling == "fixed-size":
        return _fixed_size_pld(sigma, q, vdi)
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    return pld_mod.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=1.0, sampling_prob=q,
        value_discretization_interval=vdi, neighboring_relation=_relation(sampling))


def pld_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                sampling: str = "poisson",
                value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION) -> float:
    r"""Tight epsilon of ``T`` subsampled Gaussian steps by privacy loss distributions.

    ``"poisson"``: dp_accounting's ``PLDAccountant(ADD_OR_REMOVE_ONE)`` composing
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), T)``
    (Koskela et al. 2020; Doroshenko et al. 2022). ``"fixed-size"``: the PLD of
    :math:`C_q(G_{1/\sigma})` (paper 004, Section 5.2) self-composed ``T`` times;
    see :func:`_fixed_size_pld`.

    Parameters
    ----------
    noise_multiplier : float
        ``sigma``, noise standard deviation over the sensitivity under the relation
        (add/remove for Poisson, replace-one for fixed-size).
    sampling_rate : float
        ``q`` (Poisson) or ``m/n`` (fixed-size), in (0, 1].
    steps : int
        ``T >= 1``.
    delta : float
        Target delta in (0, 1).
    sampling : {"poisson", "fixed-size"}
    value_discretization_interval : float
        Grid step of privacy losses: smaller is tighter and slower. The result is an
        upper bound for any value (pessimistic rounding).

    Returns
    -------
    float
        The smallest epsilon (up to discretisation) at which the composition is
        (epsilon, delta)-DP.
    """
    sigma, q, t, sampling = _check_common(noise_multiplier, sampling_rate, steps, sampling)
    delta = check_delta(delta, allow_zero=False)
    vdi = check_positive(value_discretization_interval, "value_discretization_interval")
    if sampling == "poisson":
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant

        acct = pld_privacy_accountant.PLDAccountant(_relation(sampling), vdi)
        acct.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), t))
        return float(acct.get_epsilon(delta))
    pld = _fixed_size_pld(sigma, q, vdi)
    return float(pld.self_compose(t).get_epsilon_for_delta(delta))


def pld_epsilon_curve(*, noise_multiplier: float, sampling_rate: float,
                      steps: Sequence[int], delta: float, sampling: str = "poisson",
                      value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
                      ) -> np.ndarray:
    """:func:`pld_epsilon` after each of several step counts, sharing one step's PLD.

    Building the one-step PLD is the expensive part; composing it ``t`` times is cheap,
    so a curve of 20 points costs about one :func:`pld_epsilon`. Same parameters, with
    ``steps`` a sequence of integers >= 1.

    Returns
    -------
    float array, shape (len(steps),)
    """
    ts = [check_int(t, "steps", minimum=1) for t in steps]
    if not ts:
        return np.zeros(0)
    sigma, q, _, sampling = _check_common(noise_multiplier, sampling_rate, max(ts), sampling)
    delta = check_delta(delta, allow_zero=False)
    vdi = check_positive(value_discretization_interval, "value_discretization_interval")
    base = subsampled_gaussian_step_pld(sigma, q, sampling, vdi)
    return np.array([float(base.self_compose(t).get_epsilon_for_delta(delta)) for t in ts])


def rdp_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                sampling: str = "poisson") -> float:
    r"""Epsilon of ``T`` subsampled Gaussian steps by Renyi DP (an upper bound, looser than PLD).

    ``"poisson"``: ``RdpAccountant(ADD_OR_REMOVE_ONE)`` with ``PoissonSampledDpEvent``
    (Mironov, Talwar and Zhang 2019). ``"fixed-size"``: ``RdpAccountant(REPLACE_ONE)``
    with ``SampledWithoutReplacementDpEvent`` (Wang, Balle and Kasiviswanathan 2019,
    Theorem 27). Same parameters as :func:`pld_epsilon`.
    """
    sigma, q, t, sampling = _check_common(noise_multiplier, sampling_rate, steps, sampling)
    delta = check_delta(delta, allow_zero=False)
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant

    event = subsampled_gaussian_dp_event(sigma, q, sampling)
    acct = rdp_privacy_accountant.RdpAccountant(neighboring_relation=_relation(sampling))
    with _quiet_absl():
        acct.compose(dp_accounting.SelfComposedDpEvent(event, t))
        return float(acct.get_epsilon(delta))


def gdp_clt_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int,
                    delta: float, sampling: str = "poisson") -> float:
    """Epsilon from the GDP central limit theorem (:func:`gdp_clt_mu` then
    :func:`gdp_to_epsilon`). An approximation, not a bound. ``sampling`` only selects
    the relation; the formula is the same for both."""
    _check_common(noise_multiplier, sampling_rate, steps, sampling)
    delta = check_delta(delta, allow_zero=False)
    mu = gdp_clt_mu(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                    steps=steps)
    return math.inf if math.isinf(mu) else gdp_to_epsilon(mu, delta)


def epsilon_for(*, noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                accountant: str = "pld", sampling: str = "poisson",
                value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION) -> float:
    """Epsilon of ``T`` subsampled Gaussian steps with the chosen accountant.

    Dispatches to :func:`pld_epsilon`, :func:`rdp_epsilon` or :func:`gdp_clt_epsilon`.
    """
    if accountant not in ACCOUNTANTS:
        raise InvalidParameterError("accountant", accountant, f"one of {ACCOUNTANTS}")
    kw = dict(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps,
              delta=delta, sampling=sampling)
    if accountant == "pld":
        return pld_epsilon(**kw, value_discretization_interval=value_discretization_interval)
    if accountant == "rdp":
        return rdp_epsilon(**kw)
    return gdp_clt_epsilon(**kw)


# ---------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiseCalibration:
    """The noise multiplier found for a target (epsilon, delta) over ``steps`` steps.

    Attributes
    ----------
    noise_multiplier : float
        ``sigma`` (noise std / sensitivity). The achieved epsilon is <= the target
        (for ``"gdp-clt"``: by the approximation).
    epsilon : float
        Epsilon achieved by ``noise_multiplier`` with this accountant.
    target_epsilon, delta : float
        What was asked.
    steps : int
    sampling_rate : float
    accountant : str
        ``"pld"``, ``"rdp"`` or ``"gdp-clt"``.
    sampling : str
        ``"poisson"`` or ``"fixed-size"``.
    relation : Neighbouring
        ``ADD_REMOVE`` for Poisson, ``REPLACE_ONE`` for fixed-size.
    is_upper_bound : bool
        False for ``"gdp-clt"``, whose epsilon is an approximation.
    """

    noise_multiplier: float
    epsilon: float
    target_epsilon: float
    delta: float
    steps: int
    sampling_rate: float
    accountant: str
    sampling: str
    relation: Neighbouring
    is_upper_bound: bool


def calibrate_noise_multiplier(epsilon: float, delta: float, *, steps: int,
                               sampling_rate: float, accountant: str = "pld",
                               sampling: str = "poisson", rtol: float = 1e-4,
                               value_discretization_interval: float =
                               DEFAULT_VALUE_DISCRETIZATION) -> NoiseCalibration:
    r"""The smallest noise multiplier making ``T`` subsampled Gaussian steps (eps, delta)-DP.

    Bisection on :math:`\log\sigma` (epsilon decreases in sigma), started from the
    closed-form GDP-CLT answer

    .. math:: \sigma_{\text{CLT}} = \Big(\ln\big(1 + \mu^2/(q^2 T)\big)\Big)^{-1/2},
              \quad \mu = \texttt{gdp\_mu\_for}(\varepsilon, \delta),

    and stopped when the bracket is narrower than ``rtol`` relative; the *upper* end
    is returned so that the achieved epsilon never exceeds the target.

    Parameters
    ----------
    epsilon : float
        Target epsilon > 0.
    delta : float
        Target delta in (0, 1).
    steps : int
        ``T >= 1``.
    sampling_rate : float
        ``q`` in (0, 1].
    accountant : {"pld", "rdp", "gdp-clt"}
    sampling : {"poisson", "fixed-size"}
    rtol : float
        Relative width of the final bracket, in (0, 0.5).
    value_discretization_interval : float
        PLD grid step (ignored by the other accountants).

    Returns
    -------
    NoiseCalibration

    Privacy
    -------
    Unit: one record (one row). Poisson sampling is accounted under add/remove,
    fixed-size sampling without replacement under replace-one (paper 004, Lemma 5.1).
    ``sigma`` is relative to the sensitivity under that relation.
    """
    target = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    _, q, t, sampling = _check_common(1.0, sampling_rate, steps, sampling)
    if accountant not in ACCOUNTANTS:
        raise InvalidParameterError("accountant", accountant, f"one of {ACCOUNTANTS}")
    rtol = check_positive(rtol, "rtol")
    if rtol >= 0.5:
        raise InvalidParameterError("rtol", rtol, "a number in (0, 0.5)")
    vdi = check_positive(value_discretization_interval, "value_discretization_interval")
    relation = Neighbouring.ADD_REMOVE if sampling == "poisson" else Neighbouring.REPLACE_ONE

    mu = gdp_mu_for(target, delta)
    sigma_clt = 1.0 / math.sqrt(math.log1p(mu * mu / (q * q * t)))
    if accountant == "gdp-clt":
        def clt_ok(s: float) -> bool:
            # The closed form round-trips mu only to a few ulps; require the achieved
            # epsilon <= target and the CLT mu (its float, moved up by a bound on its
            # rounding error: expm1 amplifies the error of 1/s^2 by about 1/s^2) to meet
            # delta at the target, so the answer is on the safe side of the exact formula.
            x = 1.0 / (s * s)
            m = gdp_clt_mu(noise_multiplier=s, sampling_rate=q, steps=t)
            if math.isinf(m):
                return False
            m_hi = m * (1.0 + 8.0 * _U * (2.0 + x))
            return (_gdp_delta_upper(m_hi, target) <= delta
                    and gdp_clt_epsilon(noise_multiplier=s, sampling_rate=q, steps=t,
                                        delta=delta) <= target)

        sigma = _to_safe_side(sigma_clt, clt_ok, up=True, what="the noise multiplier")
        achieved = gdp_clt_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=t,
                                   delta=delta)
        return NoiseCalibration(sigma, achieved, target, delta, t, q, accountant, sampling,
                                relation, False)

    def eps_at(s: float) -> float:
        return epsilon_for(noise_multiplier=s, sampling_rate=q, steps=t, delta=delta,
                           accountant=accountant, sampling=sampling,
                           value_discretization_interval=vdi)

    # Bracket [lo, hi] with eps(lo) > target >= eps(hi), growing geometrically.
    lo = hi = sigma_clt
    e_hi = eps_at(hi)
    while e_hi > target:
        lo, hi = hi, hi * 1.25
        if hi > 1e6:
            raise ConvergenceError(f"no noise multiplier below 1e6 reaches epsilon={target}")
        e_hi = eps_at(hi)
    while lo == hi:
        cand = hi / 1.25
        e_cand = eps_at(cand)
        if e_cand > target:
            lo = cand
        elif cand < 1e-3:  # almost no noise already meets the target
            return NoiseCalibration(cand, e_cand, target, delta, t, q, accountant, sampling,
                                    relation, True)
        else:
            lo = hi = cand
            e_hi = e_cand
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        e_mid = eps_at(mid)
        if e_mid > target:
            lo = mid
        else:
            hi, e_hi = mid, e_mid
    return NoiseCalibration(hi, e_hi, target, delta, t, q, accountant, sampling, relation,
                            True)
