"""Pure privacy accounting: composition, amplification, Gaussian DP, PLD, calibration.

Every function here is pure maths over numbers: no state, no randomness.
"""

from __future__ import annotations

import math

from scipy import optimize, special

from privot._validation import check_delta, check_epsilon, check_positive

__all__ = ["gdp_to_delta", "gdp_to_epsilon", "gdp_mu_for"]


def _phi(x: float) -> float:
    """Standard normal CDF, accurate in the tails."""
    return 0.5 * special.erfc(-x / math.sqrt(2.0))


def gdp_to_delta(mu: float, epsilon: float) -> float:
    r"""The smallest delta such that a mu-GDP mechanism is (epsilon, delta)-DP.

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
              - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2)

    (Dong, Roth and Su 2022, Corollary 2.13; equivalently Balle and Wang 2018, Thm 8,
    for the Gaussian mechanism with sensitivity/sigma = mu).
    """
    mu = check_positive(mu, "mu")
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon={epsilon!r} must be a finite number >= 0")
    a = _phi(-epsilon / mu + mu / 2.0)
    # e^eps * Phi(-eps/mu - mu/2) computed in log space to avoid inf * 0.
    log_b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2.0)
    return max(0.0, a - math.exp(log_b))


def gdp_to_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon >= 0 such that a mu-GDP mechanism is (epsilon, delta)-DP."""
    mu = check_positive(mu, "mu")
    delta = check_delta(delta, allow_zero=False)
    if gdp_to_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_to_delta(mu, hi) > delta:
        hi *= 2.0
        if hi > 1e6:  # pragma: no cover - mu astronomically large
            return math.inf
    return float(optimize.brentq(lambda e: gdp_to_delta(mu, e) - delta, 0.0, hi,
                                 xtol=1e-12, rtol=1e-12))


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP.

    The analytic Gaussian mechanism (Balle and Wang 2018) uses
    ``sigma = sensitivity / gdp_mu_for(epsilon, delta)``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    lo, hi = 1e-12, 1.0
    while gdp_to_delta(hi, epsilon) < delta:
        hi *= 2.0
    return float(optimize.brentq(lambda m: gdp_to_delta(m, epsilon) - delta, lo, hi,
                                 xtol=1e-14, rtol=1e-13))
