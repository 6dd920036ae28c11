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


@pytest.mark.parametrize("seed", range(5))
def test_projection_is_the_kl_minimiser(seed):
    rng = np.random.default_rng(100 + seed)
    k_v, eps = 6, 1.5
    m, s = _random_case(rng, k_v, eps)
    lower, upper = polytope_bounds(m, eps)
    for row in s:
        q = kl_projection(row, m, eps)
        start = (lower + upper) / (lower + upper).sum()
        res = minimize(lambda x, row=row: _kl(x, row), x0=start, method="SLSQP",
                       bounds=list(zip(lower, upper, strict=True)),
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
                       options={"ftol": 1e-14, "maxiter": 500})
        assert res.success
        assert _kl(q, row) <= _kl(res.x, row) + 1e-10
        np.testing.assert_allclose(q, res.x, atol=1e-5)


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
