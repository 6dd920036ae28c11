"""The LDP polytope and the exact KL projection onto it (paper 003, Def. 2.2, Lemma 4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from privot.errors import InvalidDataError, InvalidParameterError
from privot.sampling.polytope import (
    SUM_ATOL,
    in_polytope,
    kl_projection,
    kl_projection_bisection,
    polytope_bounds,
    project_log,
)


def _random_case(rng: np.random.Generator, k_v: int, eps: float, *, zeros_m: bool = False):
    m = rng.random(k_v) + 0.01
    if zeros_m and k_v > 2:
        m[rng.choice(k_v, size=k_v // 3, replace=False)] = 0.0
    m = m / m.sum() * math.exp(rng.uniform(-eps / 2, eps / 2) * 0.9)
    s = rng.random((6, k_v)) ** 3 + 1e-12
    return m, s


def _kl(q: np.ndarray, s: np.ndarray) -> float:
    pos = q > 0
    return float(np.sum(q[pos] * np.log(q[pos] / s[pos])))


def test_polytope_bounds():
    m = np.array([0.2, 0.3, 0.5])
    lower, upper = polytope_bounds(m, 2.0)
    np.testing.assert_allclose(lower, math.exp(-1) * m)
    np.testing.assert_allclose(upper, math.exp(1) * m)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0, 30.0])
def test_exact_and_bisection_agree(seed, eps):
    rng = np.random.default_rng(seed)
    k_v = int(rng.integers(1, 40))
    m, s = _random_case(rng, k_v, eps, zeros_m=seed % 2 == 1)
    q = kl_projection(s, m, eps)
    qb = kl_projection_bisection(s, m, eps)
    np.testing.assert_allclose(q, qb, atol=1e-12, rtol=0)
    assert np.all(in_polytope(q, m, eps))
    lower, upper = polytope_bounds(m, eps)
    assert np.all(q >= lower) and np.all(q <= upper)  # bounds hold exactly (clipped)
    assert np.max(np.abs(q.sum(axis=1) - 1.0)) <= SUM_ATOL
    for q_row, s_row in zip(q, s, strict=True):  # optimal, not only equal to the oracle
        _assert_kl_projection(q_row, s_row, lower, upper)


#: Rounding allowance of one computed log-ratio log(q_j / s_j), in units of the largest
#: |log| involved: exp/log round trips and the subtraction cost a few ulps of it, and
#: privot's q_j = exp(theta + log s_j) adds one more (measured: below 3e-14 absolute).
_LOG_ULPS = 64 * np.finfo(float).eps

#: A coordinate within this relative distance of a bound counts as at the bound: privot
#: clips exactly, but exp(log l_j) may miss l_j by an ulp; moving so little mass changes
#: the objective by less than 1e-12 * u_j * |log(q_j / s_j)|.
_BOUND_RTOL = 1e-12


def _assert_kl_projection(q, s, lower, upper, *, sum_atol=SUM_ATOL):
    """Assert that ``q`` is the KL projection of ``s`` (Lemma 4.2), from privot's maths only.

    The problem solved by :func:`kl_projection` (module docstring of
    ``privot.sampling.polytope``) is

        min_q  f(q) = sum_j q_j log(q_j / s_j)   s.t.  l <= q <= u,  sum_j q_j = 1,

    ``s > 0`` not necessarily normalised. ``f`` is strictly convex and the constraints
    are affine, so the KKT conditions are necessary and sufficient and the minimiser is
    unique. With ``g_j = df/dq_j = log(q_j / s_j) + 1`` and a multiplier ``lambda`` of
    the sum, KKT reads: ``g_j = lambda`` where ``l_j < q_j < u_j``, ``g_j >= lambda``
    where ``q_j = l_j``, ``g_j <= lambda`` where ``q_j = u_j``. Equivalently: no
    transfer of mass from a coordinate that can decrease (``q_i > l_i``) to one that
    can increase (``q_j < u_j``) lowers f, i.e.
    ``max_{q_i > l_i} log(q_i / s_i) <= min_{q_j < u_j} log(q_j / s_j)``.

    Checked: feasibility (bounds exactly, the sum within ``SUM_ATOL``, the documented
    contract) and that exchange condition within the rounding of the log-ratios.
    Returns ``theta = lambda - 1`` (the midpoint of the admissible interval).

    Tolerances: a log-ratio is computed to a few ulps of the largest ``|log|`` involved
    (``_LOG_ULPS``); a coordinate within ``_BOUND_RTOL`` of a bound counts as at it.
    """
    q, s = np.asarray(q, float), np.asarray(s, float)
    assert np.all(q >= lower) and np.all(q <= upper), "q violates the polytope's bounds"
    assert abs(q.sum() - 1.0) <= sum_atol, f"q sums to {float(q.sum())!r}, not 1"
    live = upper > 0  # m_j = 0 fixes q_j = 0: no freedom there
    with np.errstate(divide="ignore"):
        log_q, log_s = np.log(q), np.log(s)
    g = log_q - log_s
    can_down = live & (q > lower * (1 + _BOUND_RTOL))
    can_up = live & (q < upper * (1 - _BOUND_RTOL))
    hi = float(g[can_down].max()) if can_down.any() else -np.inf
    lo = float(g[can_up].min()) if can_up.any() else np.inf
    scale = 1.0 + float(np.max(np.abs(np.concatenate([log_q[live], log_s[live]]))))
    tol = _LOG_ULPS * scale
    assert hi - lo <= tol, (
        f"not the KL minimiser: moving mass from a coordinate with log(q/s) = {hi!r} to "
        f"one with {lo!r} lowers KL(q || s) (KKT violated by {hi - lo:.3g} > {tol:.3g})")
    ends = [v for v in (hi, lo) if np.isfinite(v)]
    return float(np.mean(ends)) if ends else 0.0  # 0: no exchange possible at all


def _assert_no_worse_than(q, x, s, lower, upper, theta):
    """``f(q) <= f(x~) + |theta + 1| |sum x~ - 1| + rounding``, ``x~`` = ``x`` clipped to
    the box: a bound valid for *any* reference point ``x``, feasible or not.

    ``v(t) = min {f(y) : l <= y <= u, sum y = t}`` is convex with ``theta + 1`` a
    subgradient at ``t = 1`` (the multiplier of the sum), so
    ``f* = v(1) <= v(t) + |theta + 1| |t - 1| <= f(x~) + |theta + 1| |sum x~ - 1|``.
    Rounding of the two sums of ``k_v`` terms: ``_LOG_ULPS`` per unit of the sum of
    the absolute terms.
    """
    xt = np.clip(np.asarray(x, float), lower, upper)
    slack = abs(theta + 1.0) * abs(xt.sum() - 1.0)
    f_q, f_x = _kl(q, s), _kl(xt, s)
    pos_q, pos_x = q > 0, xt > 0
    rounding = _LOG_ULPS * (1.0 + np.sum(np.abs(q[pos_q] * np.log(q[pos_q] / s[pos_q])))
                            + np.sum(np.abs(xt[pos_x] * np.log(xt[pos_x] / s[pos_x]))))
    assert f_q <= f_x + slack + rounding, (
        f"KL(q || s) = {f_q!r} is above the reference's {f_x!r} (+ {slack + rounding:.3g})")


@pytest.mark.parametrize("seed", range(5))
def test_projection_is_the_kl_minimiser(seed):
    """Optimality of privot's projection, certified by its own KKT conditions; SLSQP is an
    independent reference point only (its success flag is not read: SciPy 1.17 reports
    status 8 on seed 2 at a point that agrees with privot's to 3e-9)."""
    rng = np.random.default_rng(100 + seed)
    k_v, eps = 6, 1.5
    m, s = _random_case(rng, k_v, eps)
    lower, upper = polytope_bounds(m, eps)
    for row in s:
        q = kl_projection(row, m, eps)
        theta = _assert_kl_projection(q, row, lower, upper)
        start = (lower + upper) / (lower + upper).sum()
        res = minimize(lambda x, row=row: _kl(x, row), x0=start, method="SLSQP",
                       bounds=list(zip(lower, upper, strict=True)),
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
                       options={"ftol": 1e-14, "maxiter": 500})
        _assert_no_worse_than(q, res.x, row, lower, upper, theta)


def test_the_optimality_checks_reject_wrong_answers():
    """The two checks above can fail: on points that are not the projection."""
    rng = np.random.default_rng(102)
    m, s = _random_case(rng, 6, 1.5)
    lower, upper = polytope_bounds(m, 1.5)
    row = s[0]
    q = kl_projection(row, m, 1.5)
    theta = _assert_kl_projection(q, row, lower, upper)
    free = np.flatnonzero((q > lower * 1.01) & (q < upper * 0.99))
    assert free.size >= 2  # the case has room for a feasible, sub-optimal move
    i, j = free[:2]
    for delta in (1e-9, 1e-6):
        moved = q.copy()
        moved[i] += delta
        moved[j] -= delta  # still in the polytope, no longer optimal
        with pytest.raises(AssertionError, match="not the KL minimiser"):
            _assert_kl_projection(moved, row, lower, upper)
    centre = (lower + upper) / (lower + upper).sum()  # feasible, far from optimal
    with pytest.raises(AssertionError, match="not the KL minimiser"):
        _assert_kl_projection(centre, row, lower, upper)
    with pytest.raises(AssertionError, match="sums to"):
        _assert_kl_projection(q * (1 + 1e-11), row, lower, upper)
    over = q.copy()
    over[i] = upper[i] * (1 + 1e-12)
    with pytest.raises(AssertionError, match="bounds"):
        _assert_kl_projection(over, row, lower, upper)
    # privot's answer is no worse than its own perturbations; these are worse than it
    _assert_no_worse_than(q, centre, row, lower, upper, theta)
    with pytest.raises(AssertionError, match="above the reference"):
        _assert_no_worse_than(centre, q, row, lower, upper, theta)
    moved = q.copy()
    moved[i] += 1e-4
    moved[j] -= 1e-4
    with pytest.raises(AssertionError, match="above the reference"):
        _assert_no_worse_than(moved, q, row, lower, upper, theta)


def test_kkt_form():
    """q_j = clip(e^theta s_j, l_j, u_j) with one theta per row (Lemma 4.2)."""
    rng = np.random.default_rng(7)
    m, s = _random_case(rng, 25, 2.0)
    lower, upper = polytope_bounds(m, 2.0)
    log_q, theta = project_log(np.log(s), lower, upper)
    expected = np.clip(np.exp(theta)[:, None] * s, lower, upper)
    np.testing.assert_allclose(np.exp(log_q), expected, rtol=1e-13, atol=1e-300)


def test_batched_equals_single_rows():
    rng = np.random.default_rng(3)
    m, s = _random_case(rng, 12, 1.0)
    batch = kl_projection(s, m, 1.0)
    for row, q in zip(s, batch, strict=True):
        np.testing.assert_array_equal(kl_projection(row, m, 1.0), q)


def test_ties_in_s_and_uniform_base():
    m = np.full(10, 0.1)
    q = kl_projection(np.ones((3, 10)), m, 1.0)
    np.testing.assert_allclose(q, 0.1, atol=1e-15)
    rng = np.random.default_rng(4)
    s = np.repeat(rng.random((20, 5)), 8, axis=1)  # many tied breakpoints
    m40 = np.full(40, 1 / 40)
    np.testing.assert_allclose(kl_projection(s, m40, 2.0),
                               kl_projection_bisection(s, m40, 2.0), atol=1e-12)


def test_single_point_polytopes():
    eps = 1.0
    m_low = math.exp(eps / 2) * np.array([0.5, 0.25, 0.25])  # sum(lower) = 1
    m_high = math.exp(-eps / 2) * np.array([0.5, 0.25, 0.25])  # sum(upper) = 1
    s = np.random.default_rng(0).random((4, 3))
    np.testing.assert_allclose(kl_projection(s, m_low, eps), np.tile([0.5, 0.25, 0.25], (4, 1)))
    np.testing.assert_allclose(kl_projection(s, m_high, eps), np.tile([0.5, 0.25, 0.25], (4, 1)))


def test_extreme_magnitudes_are_handled_in_log_scale():
    m = np.full(4, 0.25)
    s = np.array([1e300, 1e-300, 1.0, 1e-200])
    q = kl_projection(s, m, 2.0)
    np.testing.assert_allclose(q, kl_projection_bisection(s, m, 2.0), atol=1e-12)
    lower, upper = polytope_bounds(m, 2.0)
    log_q, _ = project_log(np.array([[2000.0, -3000.0, 0.0, 700.0]]), lower, upper)
    assert np.all(np.isfinite(log_q))
    assert abs(np.exp(log_q).sum() - 1.0) <= SUM_ATOL


def test_zeros_of_s_and_of_m():
    m = np.array([0.25, 0.25, 0.0, 0.5])
    s = np.array([[0.0, 1.0, 3.0, 2.0]])
    q = kl_projection(s, m, 2.0)
    lower, _ = polytope_bounds(m, 2.0)
    assert q[0, 0] == lower[0]  # s_j = 0 -> q_j = l_j
    assert q[0, 2] == 0.0  # m_j = 0 -> q_j = 0
    np.testing.assert_allclose(q, kl_projection_bisection(s, m, 2.0), atol=1e-12)
    with pytest.raises(InvalidDataError, match="too many zeros"):
        kl_projection(np.zeros(4), m, 2.0)


def test_warm_start_agrees_with_cold_start():
    rng = np.random.default_rng(5)
    m, _ = _random_case(rng, 50, 3.0)
    lower, upper = polytope_bounds(m, 3.0)
    log_s = rng.normal(scale=4.0, size=(200, 50))
    cold, theta = project_log(log_s, lower, upper)
    for start in (theta, theta + 0.5, np.full(200, -30.0), np.full(200, np.nan)):
        warm, _ = project_log(log_s, lower, upper, theta0=start)
        np.testing.assert_allclose(np.exp(warm), np.exp(cold), atol=1e-14)


def test_in_polytope_flags_rows():
    m = np.full(4, 0.25)
    lower, upper = polytope_bounds(m, 1.0)
    good = np.full(4, 0.25)
    too_big = np.array([upper[0] + 1e-6, 0.25, 0.25, 0.5 - upper[0] - 1e-6])
    unnormalised = np.full(4, 0.26)
    assert in_polytope(good, m, 1.0) is True
    np.testing.assert_array_equal(in_polytope(np.stack([good, too_big, unnormalised]), m, 1.0),
                                  [True, False, False])


def test_bad_inputs_name_the_parameter():
    m = np.full(3, 1 / 3)
    with pytest.raises(InvalidDataError, match="s must be non-negative"):
        kl_projection(np.array([1.0, -1.0, 1.0]), m, 1.0)
    with pytest.raises(InvalidDataError, match="s must have shape"):
        kl_projection(np.ones(4), m, 1.0)
    with pytest.raises(InvalidDataError, match="non-finite"):
        kl_projection(np.array([1.0, np.nan, 1.0]), m, 1.0)
    with pytest.raises(InvalidParameterError) as err:
        kl_projection(np.ones(3), np.full(3, 1.0), 1.0)  # sum(m) = 3 > e^{1/2}
    assert err.value.name == "sum(base_measure)"
    with pytest.raises(InvalidParameterError) as err:
        kl_projection(np.ones(3), m, 0.0)
    assert err.value.name == "epsilon"
    with pytest.raises(InvalidParameterError) as err:
        kl_projection_bisection(np.ones(3), m, 1.0, max_iter=0)
    assert err.value.name == "max_iter"
    with pytest.raises(InvalidDataError, match="nu must have shape"):
        in_polytope(np.ones(2), m, 1.0)
