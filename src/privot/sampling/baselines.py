r"""Baseline private-sampling mechanisms of paper 003 (Sec. 2.2, Sec. 5.2): each maps a
batch of user distributions ``mu`` to output distributions ``nu`` and names the base
measure ``m`` of an LDP polytope that contains every ``nu`` it can produce.

* :func:`kpm` -- the KL projection mechanism (Husain et al. 2020; Park et al. 2024):
  :math:`M^{KL}[\mu](x) = \max(\mu(x)/r_\mu, 1/(e^\varepsilon + k - 1))`, ``r_mu`` found
  exactly by a sort (no bisection).
* :func:`kpm_genre` -- KPM under support mismatch (Sec. 5.2): KPM on the distribution of
  public groups ("genres"), then a uniform output point of the sampled group.
* :func:`exponential_expected_cost` -- the exponential mechanism with utility
  :math:`u_j(\mu) = -\sum_i \mu_i C_{ij}` (Sec. 5.2: minus the expected cost);
  :func:`exponential_mean_cost` -- utility :math:`-d(\bar x_\mu, v_j)^p` of the mean;
  :func:`exponential_sample` -- one user's draw through
  :func:`privot.privacy.mechanisms.exponential_mechanism` (reused, not rewritten).
* :func:`krr` -- generalised randomized response (k-RR) of one point drawn from ``mu``;
  :func:`krr_estimate` -- the server's unbiased frequency estimate.

The output ``nu`` is a float array; the released sample is drawn on the device by
:func:`privot.sampling.device.private_sample` with the returned ``base_measure``, which
snaps ``nu`` to integer weights certified in the polytope and samples exactly.

Privacy
-------
Unit: one user's whole distribution ``mu``. Relation: local DP, any two inputs ``mu,
mu'`` of one user (:attr:`~privot.privacy.types.Neighbouring.LOCAL`). Each mechanism's
range lies in :math:`Q_{m,\varepsilon}` for the base measure it returns, so its sample
is pure eps-LDP (paper 003, Prop. 3.2 / Lemma B.1): for every output ``j``,
:math:`\nu_j(\mu)/\nu_j(\mu') \le e^{\varepsilon/2} m_j / (e^{-\varepsilon/2} m_j) =
e^\varepsilon`. The derivations (including each base measure) are in
``docs/privacy/sampling_device.md``; the public parameters (points, groups, cost
matrix, epsilon) are the caller's, never derived from the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from privot._validation import check_epsilon, check_finite_array, check_points
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.mechanisms import exponential_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, Release, Spender
from privot.sampling._checks import check_cost, check_distributions, check_order

__all__ = [
    "BaselineOutput",
    "exponential_expected_cost",
    "exponential_mean_cost",
    "exponential_sample",
    "kpm",
    "kpm_base_measure",
    "kpm_genre",
    "krr",
    "krr_estimate",
    "krr_probabilities",
]


@dataclass(frozen=True)
class BaselineOutput:
    """A baseline's output distributions and the polytope they lie in.

    Attributes
    ----------
    nu : (k_v,) or (n, k_v) array
        Output distributions (the shape of ``mu``'s batch), each summing to 1.
    base_measure : (k_v,) array
        ``m``: every ``nu`` the mechanism can produce lies in :math:`Q_{m,\\varepsilon}`
        (up to floating-point rounding, which the device's snapping removes).
    epsilon : float
    mechanism : str
    params : Mapping[str, Any]
        Public calibration details (sensitivity, rate...).
    """

    nu: np.ndarray
    base_measure: np.ndarray
    epsilon: float
    mechanism: str
    params: Mapping[str, Any] = field(default_factory=dict)


def _shape(nu: np.ndarray, single: bool) -> np.ndarray:
    return nu[0] if single else nu


def _floor_and_peak(k: int, eps: float) -> tuple[float, float]:
    """``(q, p) = (1, e^eps) / (e^eps + k - 1)`` without overflow."""
    t = math.exp(-eps)  # e^-eps, underflows gracefully to 0
    den = 1.0 + (k - 1) * t
    return t / den, 1.0 / den


# ---------------------------------------------------------------------------------------
# KPM
# ---------------------------------------------------------------------------------------


def kpm_base_measure(k: int, *, epsilon: float) -> np.ndarray:
    """The base measure of KPM and k-RR on ``k`` points: :math:`m(x) =
    e^{\\varepsilon/2} / (e^\\varepsilon + k - 1)` (paper 003, Sec. 2.2), shape ``(k,)``."""
    eps = check_epsilon(epsilon)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameterError("k", k, "an integer >= 1 (the number of points)")
    value = math.exp(-eps / 2) / (1.0 + (int(k) - 1) * math.exp(-eps))
    return np.full(int(k), value)


def _kpm_rows(rows: np.ndarray, eps: float) -> np.ndarray:
    """KPM for a batch ``(n, k)``: sort-based exact normaliser ``r_mu``.

    With ``c = 1/(e^eps + k - 1)`` and ``s`` the sorted row (descending), partial sums
    ``S_t``, the coordinates above the floor are the top ``t*`` where ``t*`` is the number
    of ``t`` with ``s_t (1 - (k - t) c) > c S_t`` (a prefix of ``1..k``; ``t = 1`` always
    qualifies since ``k c < 1``), and ``r = S_{t*} / (1 - (k - t*) c)``.
    """
    n, k = rows.shape
    c, _ = _floor_and_peak(k, eps)
    t = np.arange(1, k + 1)
    den = 1.0 - (k - t) * c  # > 0 because (k - 1) c < 1
    nu = np.empty_like(rows)
    block = max(1, (1 << 16) // k)  # rows per block: temporaries stay in cache
    for start in range(0, n, block):
        sub = rows[start:start + block]
        s = np.sort(sub, axis=1)[:, ::-1]
        cum = np.cumsum(s, axis=1)
        active = s * den > c * cum
        # the first False ends the prefix (robust to rounding ties); t = 1 always qualifies
        tstar = np.where(active.all(axis=1), k, np.argmin(active, axis=1))
        np.maximum(tstar, 1, out=tstar)
        idx = np.arange(sub.shape[0])
        r = cum[idx, tstar - 1] / den[tstar - 1]
        out = nu[start:start + block]
        np.divide(sub, r[:, None], out=out)
        np.maximum(out, c, out=out)
        out /= out.sum(axis=1, keepdims=True)
    return nu


def kpm(mu: object, *, epsilon: float) -> BaselineOutput:
    """KL projection mechanism: :math:`\\max(\\mu(x)/r_\\mu, 1/(e^\\varepsilon+k-1))`.

    The KL projection :math:`\\arg\\min_{\\nu\\in Q_{m,\\varepsilon}} KL(\\mu\\|\\nu)` onto
    the polytope of the base measure :func:`kpm_base_measure` (Park et al. 2024; paper
    003, Sec. 2.2); output support = input support (``k_v = k``).

    Parameters
    ----------
    mu : (k,) or (n, k) array
        Distributions over ``k`` points.
    epsilon : float
        > 0.

    Returns
    -------
    BaselineOutput
        ``nu`` of ``mu``'s shape, ``base_measure`` ``e^{eps/2}/(e^eps + k - 1)``.

    Privacy
    -------
    Unit: one user's distribution; relation: local (any two inputs). Every output is at
    least the floor ``c = 1/(e^eps+k-1) = e^{-eps/2} m`` and, as the others are at least
    ``c``, at most ``1 - (k-1)c = e^eps c = e^{eps/2} m``: ``nu`` is in
    :math:`Q_{m,\\varepsilon}`, so the sample is pure eps-LDP (Prop. 3.2).
    ``docs/privacy/sampling_device.md``.
    """
    eps = check_epsilon(epsilon)
    rows, single = check_distributions(mu)
    k = rows.shape[1]
    nu = _kpm_rows(rows, eps)
    return BaselineOutput(nu=_shape(nu, single), base_measure=kpm_base_measure(k, epsilon=eps),
                          epsilon=eps, mechanism="kpm", params={"k": k})


def _group_matrix(groups: object, n_items: int, name: str, n_groups: int | None,
                  *, weights: bool) -> np.ndarray:
    """A ``(n_items, g)`` membership matrix from labels ``(n_items,)`` or a matrix."""
    arr = np.asarray(groups)
    if arr.ndim == 1:
        if arr.shape[0] != n_items:
            raise InvalidDataError(
                f"{name} has {arr.shape[0]} labels but there are {n_items} points")
        if not np.issubdtype(arr.dtype, np.integer):
            raise InvalidParameterError(name, f"<array of dtype {arr.dtype}>",
                                        "integer group labels in [0, n_groups)")
        if arr.size and int(arr.min()) < 0:
            raise InvalidParameterError(name, int(arr.min()), "group labels >= 0")
        g = int(arr.max()) + 1 if n_groups is None else n_groups
        if arr.size and int(arr.max()) >= g:
            raise InvalidParameterError(name, int(arr.max()), f"group labels < n_groups = {g}")
        mat = np.zeros((n_items, g))
        mat[np.arange(n_items), arr] = 1.0
        return mat
    if arr.ndim != 2 or arr.shape[0] != n_items:
        raise InvalidDataError(
            f"{name} must be ({n_items},) labels or a ({n_items}, n_groups) matrix, got shape "
            f"{arr.shape}")
    mat = check_finite_array(arr, name, ndim=2)
    if n_groups is not None and mat.shape[1] != n_groups:
        raise InvalidDataError(f"{name} has {mat.shape[1]} columns; n_groups = {n_groups}")
    if np.any(mat < 0):
        raise InvalidDataError(f"{name} must be non-negative")
    if weights:
        bad = np.flatnonzero(np.abs(mat.sum(axis=1) - 1.0) > 1e-9)
        if bad.size:
            raise InvalidDataError(
                f"{name} row {int(bad[0])} sums to {mat[bad[0]].sum()!r}; each input point's "
                "group weights must sum to 1")
    elif not np.all((mat == 0) | (mat == 1)):
        raise InvalidDataError(f"{name} as a matrix must be 0/1 membership")
    return mat


def kpm_genre(mu: object, *, input_groups: object, output_groups: object, epsilon: float,
              n_groups: int | None = None) -> BaselineOutput:
    """KPM under support mismatch: privatise the group ("genre") distribution with KPM,
    then pick an output point uniformly within the sampled group (paper 003, Sec. 5.2,
    after Zamanlooy et al. 2025).

    Parameters
    ----------
    mu : (k,) or (n, k) array
        Distributions over the ``k`` input points (e.g. a user's rated movies).
    input_groups : (k,) int labels or (k, g) array
        Public map input point -> group. A matrix splits a point over several groups
        (rows non-negative, summing to 1: a movie of three genres gives 1/3 to each).
    output_groups : (k_v,) int labels or (k_v, g) 0/1 array
        Public map output point -> group(s). Every group needs at least one output point.
    epsilon : float
    n_groups : int, optional
        ``g``; by default one more than the largest label.

    Returns
    -------
    BaselineOutput
        ``nu_j = sum_{G ni j} KPM[mu_G](G) / |V_G|`` over the ``k_v`` outputs and the base
        measure ``m_j = sum_{G ni j} m^{KPM}_g / |V_G|`` with
        ``m^{KPM}_g = e^{eps/2}/(e^eps + g - 1)``.

    Privacy
    -------
    Unit: one user's distribution; relation: local (any two inputs). The group
    distribution ``mu_G = mu A`` is a function of ``mu``, so any two inputs give two
    group distributions, and KPM on ``g`` points is eps-LDP for every pair; the uniform
    choice within the group uses no data (post-processing). Directly: ``nu = P nu_G`` with
    a fixed non-negative matrix ``P`` and ``nu_G`` in the KPM polytope, so
    ``e^{-eps/2} m <= nu <= e^{eps/2} m`` entrywise with ``m = P m^{KPM}``: ``nu`` is in
    :math:`Q_{m,\\varepsilon}` (Prop. 3.2). ``docs/privacy/sampling_device.md``.
    """
    eps = check_epsilon(epsilon)
    rows, single = check_distributions(mu)
    k = rows.shape[1]
    if n_groups is not None and (isinstance(n_groups, bool) or
                                 not isinstance(n_groups, (int, np.integer)) or n_groups < 1):
        raise InvalidParameterError("n_groups", n_groups, "None or an integer >= 1")
    a_in = _group_matrix(input_groups, k, "input_groups", n_groups, weights=True)
    g = a_in.shape[1]
    out = np.asarray(output_groups)
    if out.ndim == 0 or out.shape[0] == 0:
        raise InvalidDataError("output_groups is empty; k_v >= 1 output points are needed")
    k_v = out.shape[0]
    a_out = _group_matrix(output_groups, k_v, "output_groups", g, weights=False)
    sizes = a_out.sum(axis=0)
    if np.any(sizes == 0):
        raise InvalidParameterError(
            "output_groups", f"<group {int(np.flatnonzero(sizes == 0)[0])} has no output>",
            "every group (0..n_groups-1) has at least one output point")
    p = a_out / sizes  # (k_v, g): P[j, G] = 1{j in G} / |V_G|
    mu_g = rows @ a_in
    mu_g /= mu_g.sum(axis=1, keepdims=True)
    nu_g = _kpm_rows(mu_g, eps)
    nu = nu_g @ p.T
    nu /= nu.sum(axis=1, keepdims=True)
    m = p @ kpm_base_measure(g, epsilon=eps)
    return BaselineOutput(nu=_shape(nu, single), base_measure=m, epsilon=eps,
                          mechanism="kpm-genre", params={"groups": g, "k_v": k_v})


# ---------------------------------------------------------------------------------------
# Exponential mechanism
# ---------------------------------------------------------------------------------------


def _exp_output(u: np.ndarray, upper: np.ndarray, lower: np.ndarray, delta: float,
                eps: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``nu ∝ exp(rate u)`` with ``rate = eps / (2 delta)`` and the base measure
    ``m_j = sqrt(hi_j lo_j)``, ``hi_j = e^{rate a_j}/Z_lo``, ``lo_j = e^{rate b_j}/Z_hi``
    from per-output utility bounds ``b_j <= u_j <= a_j`` (``a_j - b_j <= delta``)."""
    rate = eps / (2.0 * delta) if delta > 0 else 0.0
    logits = rate * u
    logits -= logits.max(axis=1, keepdims=True)
    nu = np.exp(logits)
    nu /= nu.sum(axis=1, keepdims=True)
    log_z_hi = logsumexp(rate * upper)
    log_z_lo = logsumexp(rate * lower)
    m = np.exp(0.5 * rate * (upper + lower) - 0.5 * (log_z_hi + log_z_lo))
    return nu, m, rate


def exponential_expected_cost(mu: object, cost: object, *, epsilon: float) -> BaselineOutput:
    """Exponential mechanism with utility minus the expected cost,
    :math:`u_j(\\mu) = -\\sum_i \\mu_i C_{ij}` (paper 003, Sec. 5.2:
    :math:`-E_{i\\sim\\mu} d(i, j)`; here ``C = d**p``, the caller's choice of ``p``):
    :math:`\\nu_j \\propto \\exp(\\varepsilon u_j / (2\\Delta))`.

    Parameters
    ----------
    mu : (k,) or (n, k) array
    cost : (k, k_v) array
        Public ``C_ij = d(x_i, v_j)**p`` (non-negative).
    epsilon : float

    Returns
    -------
    BaselineOutput
        ``params``: ``sensitivity`` (Delta) and ``rate`` (eps / (2 Delta)).

    Privacy
    -------
    Unit: one user's distribution; relation: local (any two inputs). ``u_j`` is an
    average of column ``j``, so for any two inputs
    :math:`|u_j(\\mu) - u_j(\\mu')| \\le \\max_i C_{ij} - \\min_i C_{ij}`; the sensitivity is
    :math:`\\Delta = \\max_j (\\max_i C_{ij} - \\min_i C_{ij}) \\le \\max C - \\min C`, public
    (the cost matrix). The ratio is :math:`e^{\\varepsilon\\Delta/(2\\Delta)}` from the
    numerator times :math:`Z(\\mu')/Z(\\mu) \\le e^{\\varepsilon/2}`: pure eps-LDP (McSherry
    and Talwar 2007; the factor 2 is needed, the utilities are not monotone). The base
    measure ``m_j = sqrt(hi_j lo_j)`` (Lemma B.1's geometric mean) from
    :math:`\\nu_j \\le e^{r a_j}/Z_{lo} = hi_j`, :math:`\\nu_j \\ge e^{r b_j}/Z_{hi} = lo_j`
    (``a_j = -min_i C_ij``, ``b_j = -max_i C_ij``, ``Z_lo = sum_l e^{r b_l}``,
    ``Z_hi = sum_l e^{r a_l}``, ``r`` the rate): ``hi_j/lo_j <= e^{r Delta} e^{r Delta} =
    e^eps``, so ``nu`` is in :math:`Q_{m,\\varepsilon}`. A constant cost column set
    (``Delta = 0``) gives the uniform distribution (rate 0). See
    ``docs/privacy/sampling_device.md``.
    """
    eps = check_epsilon(epsilon)
    c = check_cost(cost)
    rows, single = check_distributions(mu, k=c.shape[0])
    col_max, col_min = c.max(axis=0), c.min(axis=0)
    delta = float((col_max - col_min).max())
    u = -(rows @ c)
    nu, m, rate = _exp_output(u, -col_min, -col_max, delta, eps)
    return BaselineOutput(nu=_shape(nu, single), base_measure=m, epsilon=eps,
                          mechanism="exponential-expected-cost",
                          params={"sensitivity": delta, "rate": rate})


def exponential_mean_cost(mu: object, points: object, output_points: object, *,
                          epsilon: float, p: float = 2.0) -> BaselineOutput:
    """Exponential mechanism with utility minus the cost from the mean of ``mu``:
    :math:`u_j(\\mu) = -\\|\\bar x_\\mu - v_j\\|_2^p`, :math:`\\bar x_\\mu = \\sum_i \\mu_i x_i`
    (Euclidean points; for a general metric use :func:`exponential_expected_cost`).

    Parameters
    ----------
    mu : (k,) or (n, k) array
    points : (k, d) array
        The public input points ``x_i``.
    output_points : (k_v, d) array
        The public output points ``v_j``.
    epsilon : float
    p : float
        >= 1.

    Returns
    -------
    BaselineOutput
        ``params``: ``sensitivity`` and ``rate``.

    Privacy
    -------
    Unit: one user's distribution; relation: local (any two inputs). The mean lies in the
    convex hull of the points and :math:`t\\mapsto\\|t-v_j\\|^p` is convex, so
    :math:`0 \\le \\|\\bar x_\\mu - v_j\\|^p \\le \\max_i C_{ij}` (``C_ij = ||x_i - v_j||^p``):
    ``u_j`` lies in ``[-max_i C_ij, 0]`` for every input and the sensitivity is
    :math:`\\Delta = \\max C` (public). **Not** ``max C - min C``: the mean can sit on an
    output point that no input point is near. Then as for
    :func:`exponential_expected_cost` (rate ``eps/(2 Delta)``, base measure from the
    bounds ``b_j = -max_i C_ij``, ``a_j = 0``): pure eps-LDP.
    """
    eps = check_epsilon(epsilon)
    order = check_order(p)
    x = check_points(points, "points")
    v = check_points(output_points, "output_points")
    if x.shape[1] != v.shape[1]:
        raise InvalidDataError(
            f"points have dimension {x.shape[1]} but output_points have {v.shape[1]}")
    rows, single = check_distributions(mu, k=x.shape[0])
    c = np.linalg.norm(x[:, None, :] - v[None, :, :], axis=2) ** order
    mean = rows @ x
    u = -np.linalg.norm(mean[:, None, :] - v[None, :, :], axis=2) ** order
    upper = np.zeros(v.shape[0])
    lower = -c.max(axis=0)
    delta = float(c.max())
    nu, m, rate = _exp_output(u, upper, lower, delta, eps)
    return BaselineOutput(nu=_shape(nu, single), base_measure=m, epsilon=eps,
                          mechanism="exponential-mean-cost",
                          params={"sensitivity": delta, "rate": rate, "p": order})


def exponential_sample(mu: object, cost: object, *, epsilon: float,
                       rng: np.random.Generator | int | None = None,
                       accountant: Spender | None = None) -> Release:
    """One user's exponential-mechanism draw (utility minus the expected cost) through
    :func:`privot.privacy.mechanisms.exponential_mechanism` (exact sampling, scores on
    a :math:`2^{-k}` grid, budget charged first), with relation ``local``.

    Parameters
    ----------
    mu : (k,) array
        One distribution.
    cost : (k, k_v) array
    epsilon : float
    rng, accountant
        As in :func:`~privot.privacy.mechanisms.exponential_mechanism`.

    Returns
    -------
    Release
        ``value``: the output index.

    Privacy
    -------
    As :func:`exponential_expected_cost`: scores ``-mu C`` with sensitivity
    ``Delta = max_j (max_i C_ij - min_i C_ij)`` over any two inputs (``1.0`` when that is
    0: the scores then do not depend on ``mu``); the mechanism adds its grid rounding to
    ``Delta``. Pure eps-LDP.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    eps = check_epsilon(epsilon)
    c = check_cost(cost)
    rows, single = check_distributions(mu, k=c.shape[0])
    if not single:
        raise InvalidDataError(
            f"mu must be one distribution (k,) for exponential_sample, got shape "
            f"{np.shape(mu)}; use exponential_expected_cost and the device for a batch")
    delta = float((c.max(axis=0) - c.min(axis=0)).max())
    scores = -(rows[0] @ c)
    return exponential_mechanism(scores, sensitivity=delta if delta > 0 else 1.0,
                                 epsilon=eps, rng=rng, accountant=accountant,
                                 relation=Neighbouring.LOCAL)


# ---------------------------------------------------------------------------------------
# Randomized response
# ---------------------------------------------------------------------------------------


def krr_probabilities(k: int, *, epsilon: float) -> tuple[float, float]:
    """``(p, q)``: k-RR keeps the input with probability ``p = e^eps/(e^eps + k - 1)`` and
    reports each other point with probability ``q = 1/(e^eps + k - 1)``."""
    eps = check_epsilon(epsilon)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise InvalidParameterError("k", k, "an integer >= 2 (the number of points)")
    q, p = _floor_and_peak(int(k), eps)
    return p, q


def krr(mu: object, *, epsilon: float) -> BaselineOutput:
    """Generalised randomized response of one point drawn from ``mu``.

    The device draws ``X ~ mu`` and reports ``X`` with probability ``p`` or another
    point uniformly (``q`` each): the output law is
    :math:`\\nu = q + (p - q)\\mu = (e^\\varepsilon\\mu + 1 - \\mu)/(e^\\varepsilon + k - 1)`.

    Parameters
    ----------
    mu : (k,) or (n, k) array
        ``k >= 2``.
    epsilon : float

    Returns
    -------
    BaselineOutput
        Base measure :func:`kpm_base_measure` (the same polytope as KPM).

    Privacy
    -------
    Unit: one user's distribution; relation: local (any two inputs). Every ``nu_y`` lies
    in ``[q, p]`` and ``p/q = e^eps``; with ``m = sqrt(p q) = e^{eps/2}/(e^eps+k-1)``,
    ``q = e^{-eps/2} m`` and ``p = e^{eps/2} m``: pure eps-LDP (for a Dirac ``mu`` it is
    exactly Warner/Kairouz et al.'s k-RR). ``docs/privacy/sampling_device.md``.
    """
    eps = check_epsilon(epsilon)
    rows, single = check_distributions(mu)
    k = rows.shape[1]
    p, q = krr_probabilities(k, epsilon=eps)
    nu = q + (p - q) * rows
    nu /= nu.sum(axis=1, keepdims=True)
    return BaselineOutput(nu=_shape(nu, single), base_measure=kpm_base_measure(k, epsilon=eps),
                          epsilon=eps, mechanism="krr", params={"p": p, "q": q})


def _project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of a vector onto the probability simplex (sort-based)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, v.size + 1)
    cond = u - css / ind > 0
    rho = int(np.flatnonzero(cond)[-1])
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def krr_estimate(counts: object, *, epsilon: float, k: int | None = None,
                 project: bool = False) -> np.ndarray:
    """The server's unbiased estimate of the average ``mu`` from k-RR reports.

    :math:`\\hat f_y = (c_y/N - q)/(p - q)` with ``N = sum(counts)``; unbiased because
    :math:`E[c_y/N] = q + (p - q)\\bar\\mu_y`. Post-processing of the reports (no privacy
    cost).

    Parameters
    ----------
    counts : (k,) array
        How many users reported each point (non-negative, total > 0).
    epsilon : float
        The epsilon the users' k-RR ran with.
    k : int, optional
        The number of points; checked against ``len(counts)``.
    project : bool
        Project the estimate onto the probability simplex (Euclidean): a distribution,
        no longer unbiased.

    Returns
    -------
    (k,) float array
    """
    eps = check_epsilon(epsilon)
    c = check_finite_array(counts, "counts", ndim=1)
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))
                          or int(k) != c.size):
        raise InvalidParameterError("k", k, f"None or the length of counts ({c.size})")
    if np.any(c < 0):
        raise InvalidDataError(f"counts must be non-negative; got minimum {float(c.min())!r}")
    total = float(c.sum())
    if total <= 0:
        raise InvalidDataError("counts sum to 0; at least one report is needed")
    if not isinstance(project, (bool, np.bool_)):
        raise InvalidParameterError("project", project, "True or False")
    p, q = krr_probabilities(c.size, epsilon=eps)
    est = (c / total - q) / (p - q)
    return _project_simplex(est) if project else est
