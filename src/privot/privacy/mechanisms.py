r"""DP mechanisms: calibrate, charge the budget, add secure noise, say what was spent.

Every mechanism here

1. validates its parameters (``epsilon``, ``delta``, ``sensitivity``...);
2. calibrates the noise to the sensitivity *after* rounding to the release grid
   (the rounding of :func:`~privot.privacy.noise.secure_laplace` can move a changed
   coordinate by up to one grid step; the calibration includes that);
3. charges the caller's :class:`~privot.privacy.budget.PrivacyAccountant`, if one is
   given, **before** any noise is drawn: a refused charge releases nothing;
4. draws the noise from :mod:`privot.privacy.noise` only (OS CSPRNG unless a seeded
   generator is passed, which marks the release ``secure=False``);
5. returns a :class:`~privot.privacy.types.Release` with the value, the cost, the
   relation and the calibration.

Mechanisms
----------
* :func:`laplace_mechanism` -- pure epsilon-DP for real values with L1 sensitivity
  (scalar, vector, or per-coordinate sensitivities).
* :func:`gaussian_mechanism` -- (epsilon, delta)-DP and mu-GDP for real values with
  L2 sensitivity; ``calibration="analytic"`` (Balle and Wang 2018, the default) or
  ``"classic"`` (Dwork and Roth 2014, Thm A.1, epsilon < 1).
* :func:`discrete_laplace_mechanism` -- pure epsilon-DP for integer values (exact,
  no rounding).
* :func:`exponential_mechanism` -- pure epsilon-DP selection of an index from scores
  (McSherry and Talwar 2007), sampled exactly by rejection with
  :func:`~privot.privacy.noise.bernoulli_exp_parts`.
* :func:`gaussian_sigma` -- the calibration alone, as a pure function.

The noise layer
---------------
Releases whose calibration and charge are made elsewhere, by an accountant that
composes many draws (DP-SGD's Renyi/PLD accounting, the subspace barycenter's composed
Gaussian steps), still draw here, so that this module is the one place a release's
randomness comes from:

* :func:`add_gaussian_noise` -- values plus float-attack-safe Gaussian noise of a
  given ``sigma`` (the caller has calibrated and charged it).
* :func:`polya_laplace_shares` -- per-party shares whose sum is a discrete Laplace (the
  users' noise of the shuffle-model heatmap, calibrated and charged by
  :mod:`privot.heatmaps.shuffle`).
* :func:`secret_uniform_integers` -- uniform integers whose secrecy the privacy claim
  rests on without being noise: secret shares, shuffle keys, subsampling keys.

The derivations are in ``docs/privacy/laplace.md``, ``docs/privacy/gaussian.md``,
``docs/privacy/discrete.md`` and ``docs/privacy/exponential.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from privot._validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_int,
    check_positive,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy import noise
from privot.privacy.accounting import gdp_mu_for
from privot.privacy.noise._scales import _dyadic
from privot.privacy.types import Neighbouring, PrivacyCost, Release, Spender, check_spender

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "add_gaussian_noise",
    "discrete_laplace_mechanism",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "laplace_mechanism",
    "polya_laplace_shares",
    "secret_uniform_integers",
]

GAUSSIAN_CALIBRATIONS = ("analytic", "classic")

#: Denominator exponent of the exact rational used for the exponential mechanism.
_EXP_DEN_BITS = 62


# ---------------------------------------------------------------------------------------
# Shared steps
# ---------------------------------------------------------------------------------------


def _relation(relation: object) -> Neighbouring:
    if isinstance(relation, Neighbouring):
        return relation
    try:
        return Neighbouring(relation)
    except ValueError as exc:
        raise InvalidParameterError(
            "relation", relation, f"one of {[r.value for r in Neighbouring]}") from exc


def _charge(accountant: Spender | None, cost: PrivacyCost, mechanism: str,
            relation: Neighbouring, params: Mapping[str, Any]) -> None:
    """Charge the accountant first; it raises BudgetExceededError before any noise."""
    check_spender(accountant)
    if accountant is None:
        return
    accountant.spend(cost, mechanism=mechanism, relation=relation, params=dict(params))


def _round_up(x: float) -> float:
    """The float just above ``x``: a noise scale computed in floating point may be one ulp
    short of the real quotient; rounding up keeps the claim true."""
    return math.nextafter(x, math.inf)


def _output(value: np.ndarray, scalar: bool) -> Any:
    return float(value.reshape(())) if scalar else value


def _scalar_input(values: object) -> bool:
    return np.ndim(values) == 0


# ---------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------


def laplace_mechanism(values: float | np.ndarray, *, sensitivity: float | np.ndarray,
                      epsilon: float, accountant: Spender | None = None,
                      rng: np.random.Generator | None = None,
                      relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
                      grid_exponent: int | None = None) -> Release:
    r"""Release ``values + Laplace(scale)`` with pure epsilon-DP, float-attack safe.

    .. math:: \tilde x_i = 2^{-k}\bigl(\mathrm{round}(2^k x_i) + N_i\bigr), \quad
              N_i \sim \mathcal{L}_\mathbb{Z}(2^k b_i), \quad
              b_i = \frac{\Delta_i\,(1 + s)}{\varepsilon}, \quad
              s = 2^{-k}\sum_j \frac{1}{\Delta_j}

    Parameters
    ----------
    values : float or array, any shape
        The exact query answer ``f(D)``; finite.
    sensitivity : float or array broadcastable to ``values``
        A scalar :math:`\Delta` is the L1 sensitivity:
        :math:`\|f(D) - f(D')\|_1 \le \Delta` for neighbours. An array
        :math:`(\Delta_i)` states the weighted bound
        :math:`\sum_i |f_i(D) - f_i(D')| / \Delta_i \le 1` (per-coordinate scales; a
        scalar is the special case :math:`\Delta_i = \Delta`).
    epsilon : float
        > 0.
    accountant : PrivacyAccountant, optional
        Charged ``PrivacyCost(epsilon)`` before noise is drawn.
    rng : numpy.random.Generator, optional
        None (default): OS CSPRNG. A seeded generator gives a reproducible release
        marked ``secure=False``.
    relation : Neighbouring, default ADD_REMOVE
        The relation under which ``sensitivity`` holds (recorded, not checked).
    grid_exponent : int, optional
        ``k``: outputs are multiples of :math:`2^{-k}`. Default: the largest ``k``
        step with :math:`2^{-k}\sum_j 1/\Delta_j \le 2^{-20}`, so the calibration
        slack ``s`` is at most :math:`2^{-20}`.

    Returns
    -------
    Release
        ``value`` (float for a scalar input, else an array of the input's shape),
        ``cost = PrivacyCost(epsilon)``, ``params`` with ``scale`` (array or float),
        ``grid_exponent`` and ``slack``.

    Privacy
    -------
    Unit and relation: those for which the caller's ``sensitivity`` holds
    (``relation``). Rounding moves each changed coordinate by at most :math:`2^{-k}`,
    so the rounded query has weighted sensitivity at most :math:`1 + s`; the discrete
    Laplace with scale :math:`2^k b_i` on integer shifts then gives privacy loss at most
    :math:`\sum_i |\Delta n_i| / (2^k b_i) \le \varepsilon`. Pure
    :math:`\varepsilon`-DP, exact sampler. Derivation: ``docs/privacy/laplace.md``.
    """
    eps = check_epsilon(epsilon)
    rel = _relation(relation)
    x = check_finite_array(values, "values", allow_empty=False)
    sens = _check_sensitivity(sensitivity, x.shape)
    inv_sum = float(np.sum(1.0 / sens)) if sens.ndim else x.size / float(sens)
    if grid_exponent is None:
        k = noise.grid_exponent(1.0 / inv_sum)
    else:
        k = check_int(grid_exponent, "grid_exponent", minimum=-1000, maximum=1000)
    slack = math.ldexp(inv_sum, -k)
    factor = _round_up((1.0 + slack) / eps)
    scale = (np.nextafter(sens * factor, np.inf) if sens.ndim
             else _round_up(float(sens) * factor))
    params = {"scale": scale if np.ndim(scale) == 0 else np.asarray(scale).copy(),
              "grid_exponent": k, "slack": slack, "sensitivity": _sens_param(sens)}
    cost = PrivacyCost(eps)
    _charge(accountant, cost, "laplace", rel, params)
    secure = noise.resolve_rng(rng)[1]
    out = noise.secure_laplace(x, scale, rng=rng, grid_exponent=k)
    return Release(value=_output(out, _scalar_input(values)), cost=cost, mechanism="laplace",
                   relation=rel, sensitivity=_sens_param(sens), secure=secure, params=params)


def _check_sensitivity(sensitivity: object, shape: tuple[int, ...]) -> np.ndarray:
    if np.ndim(sensitivity) == 0:
        return np.asarray(check_positive(sensitivity, "sensitivity"))
    s = check_finite_array(sensitivity, "sensitivity")
    if np.any(s <= 0):
        raise InvalidParameterError("sensitivity", s[s <= 0].flat[0], "every entry > 0")
    try:
        return np.broadcast_to(s, shape).astype(np.float64)
    except ValueError as exc:
        raise InvalidDataError(f"sensitivity of shape {s.shape} does not broadcast to "
                               f"values of shape {shape}") from exc


def _sens_param(sens: np.ndarray) -> float:
    """The scalar recorded in ``Release.sensitivity`` (the smallest per-coordinate one)."""
    return float(sens) if sens.ndim == 0 else float(np.min(sens))


# ---------------------------------------------------------------------------------------
# Gaussian
# ---------------------------------------------------------------------------------------


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, *,
                   calibration: str = "analytic") -> float:
    r"""Noise standard deviation for (epsilon, delta)-DP with L2 sensitivity ``Delta``.

    ``"analytic"`` (Balle and Wang 2018, Thm 8 and Alg. 1): the smallest
    :math:`\sigma` with

    .. math:: \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
              - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma}
              - \frac{\varepsilon\sigma}{\Delta}\Big) \le \delta,

    i.e. :math:`\sigma = \Delta/\mu` with :math:`\mu` the GDP parameter whose
    (epsilon, delta) curve passes through the target
    (:func:`~privot.privacy.accounting.gdp_mu_for`). Valid for every epsilon > 0. The
    root is rounded on the safe side: at the returned :math:`\sigma` the *exact* left
    side is at most :math:`\delta` (Brent's method alone overshot it by up to 1.7e-11
    relative), at a cost below 1e-9 relative in :math:`\sigma`
    (``tests/privacy/test_calibration_safe_side.py``).

    ``"classic"`` (Dwork and Roth 2014, Thm A.1):
    :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`, proved for
    :math:`\varepsilon < 1` only; larger epsilons are refused.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity > 0.
    epsilon : float
        > 0 (< 1 for ``"classic"``).
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic"}

    Returns
    -------
    float
        :math:`\sigma`, rounded up to the next float.
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    if calibration == "analytic":
        return _round_up(sens / gdp_mu_for(eps, dlt))
    if calibration == "classic":
        if eps >= 1.0:
            raise InvalidParameterError(
                "epsilon", epsilon, "< 1 for the classic Gaussian calibration (Dwork and "
                "Roth, Thm A.1); use calibration='analytic' for larger epsilons")
        return _round_up(sens * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps)
    raise InvalidParameterError("calibration", calibration, f"one of {GAUSSIAN_CALIBRATIONS}")


def gaussian_grid(sensitivity: float, size: int, grid_exponent: int | None = None
                  ) -> tuple[int, float]:
    r"""The secure Gaussian's grid exponent ``k`` and the rounded query's sensitivity.

    Default ``k``: :math:`2^{-k}\sqrt{N} \le 2^{-20}\Delta` for ``size`` :math:`N`
    values; rounding each to :math:`2^{-k}\mathbb{Z}` moves the query by at most
    :math:`\sqrt N 2^{-k-1}`, so :math:`\Delta' = \Delta + \sqrt N 2^{-k}` (rounded up).
    ``docs/privacy/gaussian.md``.
    """
    root = math.sqrt(size)
    k = noise.grid_exponent(sensitivity / root) if grid_exponent is None else grid_exponent
    return k, _round_up(sensitivity + math.ldexp(root, -k))


def gaussian_mechanism(values: float | np.ndarray, *, sensitivity: float, epsilon: float,
                       delta: float, calibration: str = "analytic",
                       accountant: Spender | None = None,
                       rng: np.random.Generator | None = None,
                       relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
                       grid_exponent: int | None = None) -> Release:
    r"""Release ``values + N(0, sigma^2 I)`` with (epsilon, delta)-DP, float-attack safe.

    .. math:: \tilde x = 2^{-k}\bigl(\mathrm{round}(2^k x) + N\bigr), \quad
              N \sim \mathcal{N}_\mathbb{Z}(0, (2^k\sigma)^2)^{\otimes m}, \quad
              \sigma = \texttt{gaussian\_sigma}\big(\Delta + \sqrt{m}\,2^{-k},
              \varepsilon, \delta\big)

    Parameters
    ----------
    values : float or array, any shape (``m`` entries)
        Exact query answer; finite.
    sensitivity : float
        L2 sensitivity :math:`\Delta`: :math:`\|f(D)-f(D')\|_2 \le \Delta`.
    epsilon, delta : float
        Target guarantee; delta in (0, 1).
    calibration : {"analytic", "classic"}
        See :func:`gaussian_sigma`.
    accountant : PrivacyAccountant, optional
        Charged ``PrivacyCost(epsilon, delta, mu=Delta'/sigma)`` before noise is drawn;
        an accountant with ``composition="gdp"`` composes ``mu`` exactly.
    rng : numpy.random.Generator, optional
    relation : Neighbouring, default ADD_REMOVE
    grid_exponent : int, optional
        Default: :math:`2^{-k}\sqrt{m} \le 2^{-20}\Delta`.

    Returns
    -------
    Release
        ``params`` has ``sigma``, ``grid_exponent``, ``calibration`` and
        ``effective_sensitivity`` :math:`\Delta' = \Delta + \sqrt{m}2^{-k}`.

    Privacy
    -------
    Unit and relation: those of the caller's ``sensitivity``. The rounded query has L2
    sensitivity at most :math:`\Delta'`; the Gaussian with that sensitivity and
    :math:`\sigma` is :math:`(\varepsilon,\delta)`-DP and :math:`\Delta'/\sigma`-GDP.
    The discrete Gaussian on the grid has :math:`2^k\sigma \ge 2^{20}`, where its
    privacy curve equals the continuous one up to a term below
    :math:`10 e^{-2\pi^2 2^{40}}` (Canonne, Kamath and Steinke 2020, Sec. 2 and 4).
    Derivation: ``docs/privacy/gaussian.md``.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    sens = check_positive(sensitivity, "sensitivity")
    rel = _relation(relation)
    x = check_finite_array(values, "values", allow_empty=False)
    if grid_exponent is not None:
        grid_exponent = check_int(grid_exponent, "grid_exponent", minimum=-1000, maximum=1000)
    k, effective = gaussian_grid(sens, x.size, grid_exponent)
    sigma = gaussian_sigma(effective, eps, dlt, calibration=calibration)
    # Rounded up: the ledger's mu must not be half an ulp below the true Delta'/sigma.
    mu = _round_up(effective / sigma)
    params = {"sigma": sigma, "grid_exponent": k, "calibration": calibration,
              "effective_sensitivity": effective, "sensitivity": sens}
    cost = PrivacyCost(eps, dlt, mu)
    _charge(accountant, cost, f"gaussian-{calibration}", rel, params)
    secure = noise.resolve_rng(rng)[1]
    out = noise.secure_gaussian(x, sigma, rng=rng, grid_exponent=k)
    return Release(value=_output(out, _scalar_input(values)), cost=cost,
                   mechanism=f"gaussian-{calibration}", relation=rel, sensitivity=sens,
                   secure=secure, params=params)


# ---------------------------------------------------------------------------------------
# Discrete Laplace on integers
# ---------------------------------------------------------------------------------------


def discrete_laplace_mechanism(counts: int | np.ndarray, *, sensitivity: int, epsilon: float,
                               accountant: Spender | None = None,
                               rng: np.random.Generator | None = None,
                               relation: Neighbouring | str = Neighbouring.ADD_REMOVE
                               ) -> Release:
    r"""Release integer ``counts + L_Z(Delta/epsilon)`` with pure epsilon-DP (exact).

    .. math:: P[N = z] \propto e^{-\varepsilon |z| / \Delta}, \quad z\in\mathbb{Z}

    Parameters
    ----------
    counts : int or int array
        Exact integer answers (e.g. histogram counts).
    sensitivity : int
        L1 sensitivity :math:`\Delta \ge 1` of the integer query.
    epsilon : float
        > 0.
    accountant, rng, relation
        As in :func:`laplace_mechanism`.

    Returns
    -------
    Release
        ``value`` an int (scalar input) or an int64 array; ``params["scale"]``.

    Privacy
    -------
    For integer shifts with :math:`\sum_i|\Delta n_i| \le \Delta` the privacy loss is
    at most :math:`\sum_i |\Delta n_i|\,\varepsilon/\Delta \le \varepsilon`. Pure
    :math:`\varepsilon`-DP (Ghosh, Roughgarden and Sundararajan 2009; CKS 2020),
    sampled exactly with no rounding. ``docs/privacy/discrete.md``.
    """
    eps = check_epsilon(epsilon)
    sens = check_int(sensitivity, "sensitivity", minimum=1)
    rel = _relation(relation)
    arr = np.asarray(counts)
    if arr.size == 0:
        raise InvalidDataError("counts is empty; at least one value is needed")
    if not np.issubdtype(arr.dtype, np.integer):
        raise InvalidDataError(f"counts must be integers, got dtype {arr.dtype}; use "
                               "laplace_mechanism for real values")
    scale = _round_up(sens / eps)
    try:  # the sampler reads the scale as an exact dyadic ratio: check it before charging
        _dyadic(scale, "scale")
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            "epsilon", eps, f"small enough that the noise scale sensitivity/epsilon = "
            f"{scale!r} is at least about 2**-9 (epsilon <= about {sens * 512:g} at "
            f"sensitivity {sens}); nothing was charged") from exc
    params = {"scale": scale, "sensitivity": sens}
    cost = PrivacyCost(eps)
    _charge(accountant, cost, "discrete-laplace", rel, params)
    secure = noise.resolve_rng(rng)[1]
    z = noise.discrete_laplace(scale, size=arr.shape if arr.ndim else 1, rng=rng)
    out = arr.astype(np.int64) + np.asarray(z, dtype=np.int64).reshape(arr.shape)
    value: Any = int(out) if arr.ndim == 0 else out
    return Release(value=value, cost=cost, mechanism="discrete-laplace", relation=rel,
                   sensitivity=float(sens), secure=secure, params=params)


# ---------------------------------------------------------------------------------------
# Exponential mechanism
# ---------------------------------------------------------------------------------------


def exponential_mechanism(scores: np.ndarray, *, sensitivity: float, epsilon: float,
                          monotonic: bool = False, accountant: Spender | None = None,
                          rng: np.random.Generator | None = None,
                          relation: Neighbouring | str = Neighbouring.ADD_REMOVE) -> Release:
    r"""Select an index with probability :math:`\propto e^{\varepsilon u_i / (2\Delta)}`.

    The exponential mechanism of McSherry and Talwar (2007), sampled *exactly*:
    scores are rounded to the grid :math:`2^{-k}\mathbb{Z}` (:math:`2^{-k}\le
    2^{-20}\Delta`), the rate :math:`c = \varepsilon/(2\Delta')` with
    :math:`\Delta' = \Delta + 2^{-k}` is rounded *down* to a rational with denominator
    :math:`2^{62}`, and candidates are proposed uniformly and accepted with probability
    :math:`e^{-c(u_{\max}-u_i)}` (an exact Bernoulli, CKS Algorithm 1). The accepted
    index has probability :math:`\propto e^{c u_i}`.

    Parameters
    ----------
    scores : (n,) array
        Utilities :math:`u_i` of the ``n`` candidates (higher is better); finite.
    sensitivity : float
        :math:`\Delta`: :math:`\max_i |u_i(D) - u_i(D')| \le \Delta` for neighbours.
    epsilon : float
        > 0.
    monotonic : bool, default False
        When every score moves in the same direction between neighbours (e.g. counts
        under add/remove), :math:`e^{\varepsilon u_i/\Delta}` is already
        :math:`\varepsilon`-DP (McSherry and Talwar 2007, Thm 6 remark; Dwork and Roth,
        Sec. 3.4): the rate doubles.
    accountant, rng, relation
        As in :func:`laplace_mechanism`.

    Returns
    -------
    Release
        ``value`` the selected index (int); ``params`` has ``rate`` (c as a float),
        ``grid_exponent`` and ``monotonic``.

    Privacy
    -------
    For neighbours, each rounded score moves by at most :math:`\Delta'`, so the ratio
    of selection probabilities is at most :math:`e^{2c\Delta'} \le e^{\varepsilon}`
    (:math:`e^{c\Delta'}` when monotonic). Pure :math:`\varepsilon`-DP. The number of
    proposals depends on the scores (a timing channel to whoever times the curator's
    machine, not part of the release). ``docs/privacy/exponential.md``.
    """
    eps = check_epsilon(epsilon)
    sens = check_positive(sensitivity, "sensitivity")
    rel = _relation(relation)
    u = check_finite_array(scores, "scores", ndim=1)
    if not isinstance(monotonic, (bool, np.bool_)):
        raise InvalidParameterError("monotonic", monotonic, "True or False")
    k = noise.grid_exponent(sens)
    eff = sens + math.ldexp(1.0, -k)
    # c per grid step: rate * 2**-k, rounded down to an exact a / 2**62.
    rate = Fraction(eps) / (Fraction(eff) * (1 if monotonic else 2))
    per_step = rate / (1 << k) if k >= 0 else rate * (1 << -k)
    a = math.floor(per_step * (1 << _EXP_DEN_BITS))
    params = {"rate": float(rate), "grid_exponent": k, "monotonic": bool(monotonic),
              "sensitivity": sens, "candidates": int(u.size)}
    cost = PrivacyCost(eps)
    _charge(accountant, cost, "exponential", rel, params)
    src, secure = noise.resolve_rng(rng)
    n_grid = noise.round_to_grid(u, k)
    gaps = int(n_grid.max()) - n_grid  # >= 0, python-int safe below
    # gamma_i = a * gap_i / 2**62 split into integer part g_i and fraction r_i / 2**62
    # with exact Python integers (a * gap can exceed int64).
    prods = [a * int(gp) for gp in gaps]
    limit = (1 << 62) - 1
    g = np.array([min(p >> _EXP_DEN_BITS, limit) for p in prods], dtype=np.int64)
    r = np.array([p & limit for p in prods], dtype=np.int64)
    den = np.int64(1 << _EXP_DEN_BITS)
    n = u.size
    batch = max(64, min(n, 1 << 16))
    while True:
        prop = src.uniform_below(n, batch)
        ok = noise.bernoulli_exp_parts(src, g[prop], r[prop], np.full(batch, den))
        hit = np.flatnonzero(ok)
        if hit.size:
            index = int(prop[hit[0]])
            break
    return Release(value=index, cost=cost, mechanism="exponential", relation=rel,
                   sensitivity=sens, secure=secure, params=params)


# ---------------------------------------------------------------------------------------
# The noise layer for releases calibrated and charged by a composing accountant
# ---------------------------------------------------------------------------------------


def add_gaussian_noise(values: float | np.ndarray, *, sigma: float | np.ndarray,
                       rng: np.random.Generator | noise.BitSource | None = None,
                       grid_exponent: int | None = None) -> np.ndarray:
    r"""``values`` plus Gaussian noise of standard deviation ``sigma``, on a dyadic grid.

    .. math:: \tilde x = 2^{-k}\bigl(\mathrm{round}(2^k x) + N\bigr),\qquad
              N\sim\mathcal{N}_\mathbb{Z}(0, (\sigma 2^k)^2)

    The caller has calibrated ``sigma`` (including the rounding's extra sensitivity of
    one grid step) and charged its accountant: DP-SGD's noisy gradient sum
    (``docs/privacy/learning.md``) and the subspace barycenter's Gaussian steps
    (``docs/privacy/barycenters.md``) compose many draws and account for them
    together. Use :func:`gaussian_mechanism` for a single release.

    Parameters
    ----------
    values : float or ndarray, shape (...)
        The exact values.
    sigma : float or ndarray broadcastable to ``values``
        Noise standard deviation (> 0).
    rng : None, numpy Generator or BitSource
        ``None`` reads the OS CSPRNG (publishable); a seeded generator is for tests.
    grid_exponent : int, optional
        ``k`` of the release grid :math:`2^{-k}\mathbb Z`; by default chosen from
        ``sigma`` (:func:`privot.privacy.noise.secure_gaussian`).

    Returns
    -------
    ndarray, shape of ``values``
    """
    return noise.secure_gaussian(values, sigma, rng=rng, grid_exponent=grid_exponent)


def secret_uniform_integers(high: int | np.ndarray,
                            size: int | tuple[int, ...] | None = None, *,
                            rng: np.random.Generator | noise.BitSource | None = None
                            ) -> np.ndarray | int:
    """Exactly uniform integers on ``{0, ..., high - 1}`` that must stay secret.

    Not noise, but randomness a privacy claim rests on: the additive shares of the
    shuffle-model heatmap (paper 002, Sec. 5), the keys of a uniform random shuffle and
    the keys of Poisson subsampling in DP-SGD. Drawn by rejection from the OS CSPRNG
    (or the given ``rng``) with :func:`privot.privacy.noise.uniform_integers`.

    Returns
    -------
    int or ndarray of int64, shape ``size``
    """
    return noise.uniform_integers(high, size=size, rng=rng)


def polya_laplace_shares(n_parties: int, scale: float,
                         size: int | tuple[int, ...] | None = None, *,
                         rng: np.random.Generator | noise.BitSource | None = None
                         ) -> np.ndarray:
    """Per-party integer shares whose sum is a discrete Laplace of scale ``scale``.

    The users' noise of the shuffle-model heatmap (paper 002, App. F): each of
    ``n_parties`` users adds one share, so the aggregate carries one discrete Laplace;
    the caller (:mod:`privot.heatmaps.shuffle`) calibrates ``scale`` and charges. Drawn
    by :func:`privot.privacy.noise.polya_laplace_shares` (the same draws).

    Returns
    -------
    ndarray of int64, shape ``(n_parties, *size)``
    """
    return noise.polya_laplace_shares(n_parties, scale, size=size, rng=rng)
