"""Tests of privot.sampling.base_measure (paper 003, Thm 3.5, Prop. B.2, Apps. F-H).

Brute-force oracles are LPs solved here with HiGHS (``scipy.optimize.linprog``): the
projection of a Dirac (App. F Step 3), the WPM LP of Sec. 4 for any ``mu``, and the joint
LP ``min_{m, q_1..q_k} max_i C_i q_i`` for the optimal base measure. Each oracle value is
certified by its primal point and dual multipliers (``tests/certified_lp.py``), never by
the solver's status code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gamma

from certified_lp import certified_linprog
from privot.errors import InvalidDataError, InvalidParameterError
from privot.sampling._checks import check_base_measure
from privot.sampling.base_measure import (
    WorstCaseCost,
    _cutting_plane,
    best_uniform_base_measure,
    dirac_costs,
    kpm_base_measure,
    optimal_base_measure,
    sphere_base_measure,
    sphere_optimal_scale,
    sphere_worst_case_cost,
    uniform_base_measure,
)

# ---------------------------------------------------------------------------------------
# helpers: random instances and LP oracles
# ---------------------------------------------------------------------------------------


def _random_m(rng: np.random.Generator, k_v: int, eps: float, *, zeros: bool = False,
              total: float | None = None) -> np.ndarray:
    """A random base measure in M = {m >= 0 : e^-eps/2 <= sum m <= e^eps/2}."""
    m = rng.random(k_v) + 0.05
    if zeros:
        m[rng.random(k_v) < 0.3] = 0.0
        if not m.any():
            m[0] = 1.0
    if total is None:
        total = math.exp(rng.uniform(-eps / 2, eps / 2))
    return m * (total / m.sum())


def _instances(n: int, seed: int):
    rng = np.random.default_rng(seed)
    for t in range(n):
        k, k_v = int(rng.integers(3, 8)), int(rng.integers(3, 8))
        eps = float(rng.choice([0.3, 1.0, 2.5, 5.0]))
        cost = rng.random((k, k_v)) * rng.choice([1.0, 10.0])
        if t % 3 == 2:  # ties in the cost
            cost = np.round(cost * 3) / 3
        lo, hi = math.exp(-eps / 2), math.exp(eps / 2)
        total = [None, lo * (1 + 1e-12), hi * (1 - 1e-12)][t % 3]  # the ends of M
        yield rng, cost, eps, _random_m(rng, k_v, eps, zeros=t % 2 == 1, total=total)


def _dirac_lp(c_row: np.ndarray, m: np.ndarray, eps: float) -> float:
    """min C_i q  s.t.  sum q = 1, e^-eps/2 m <= q <= e^eps/2 m  (App. F, Step 3)."""
    a, b = math.exp(-eps / 2), math.exp(eps / 2)
    value, _ = certified_linprog(c_row, A_eq=np.ones((1, m.size)), b_eq=[1.0],
                                 bounds=list(zip(a * m, b * m, strict=True)))
    return value


def _wpm_lp(mu: np.ndarray, cost: np.ndarray, m: np.ndarray, eps: float) -> float:
    """The WPM LP of Sec. 4: min <C, pi> over pi >= 0 with rows mu and columns in
    [e^-eps/2 m, e^eps/2 m]."""
    k, k_v = cost.shape
    a, b = math.exp(-eps / 2), math.exp(eps / 2)
    rows = np.kron(np.eye(k), np.ones((1, k_v)))
    cols = np.kron(np.ones((1, k)), np.eye(k_v))
    value, _ = certified_linprog(cost.ravel(), A_ub=np.vstack([cols, -cols]),
                                 b_ub=np.concatenate([b * m, -a * m]), A_eq=rows, b_eq=mu,
                                 bounds=(0, None))
    return value


def _joint_lp(cost: np.ndarray, eps: float) -> float:
    """min_{m, q, z} z  s.t.  C_i q_i <= z, sum_j q_ij = 1, a m_j <= q_ij <= b m_j."""
    k, k_v = cost.shape
    a, b = math.exp(-eps / 2), math.exp(eps / 2)
    n = k_v + k * k_v + 1  # [m, q (row-major), z]
    rows_ub, rows_eq = [], []
    for i in range(k):
        for j in range(k_v):
            low = np.zeros(n)
            low[j], low[k_v + i * k_v + j] = a, -1.0   # a m_j - q_ij <= 0
            up = np.zeros(n)
            up[j], up[k_v + i * k_v + j] = -b, 1.0     # q_ij - b m_j <= 0
            rows_ub += [low, up]
        obj = np.zeros(n)
        obj[k_v + i * k_v:k_v + (i + 1) * k_v], obj[-1] = cost[i], -1.0
        rows_ub.append(obj)
        eq = np.zeros(n)
        eq[k_v + i * k_v:k_v + (i + 1) * k_v] = 1.0
        rows_eq.append(eq)
    c = np.zeros(n)
    c[-1] = 1.0
    value, _ = certified_linprog(c, A_ub=np.array(rows_ub), b_ub=np.zeros(len(rows_ub)),
                                 A_eq=np.array(rows_eq), b_eq=np.ones(k),
                                 bounds=[(0, None)] * (n - 1) + [(None, None)])
    return value


def _ring_cost(k: int, p: float) -> np.ndarray:
    i = np.arange(k)
    d = np.abs(i[:, None] - i[None, :])
    return np.minimum(d, k - d).astype(float) ** p


def _grid_cost(n: int, p: float) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    return np.linalg.norm(g[:, None] - g[None], axis=-1) ** p / (n - 1) ** p


# ---------------------------------------------------------------------------------------
# Thm 3.5: phi_i and f against brute force
# ---------------------------------------------------------------------------------------


def test_phis_equal_dirac_projection_lp():
    for _, cost, eps, m in _instances(24, seed=0):
        phi = dirac_costs(cost, m, eps)
        brute = np.array([_dirac_lp(cost[i], m, eps) for i in range(cost.shape[0])])
        np.testing.assert_allclose(phi, brute, rtol=1e-9, atol=1e-9 * cost.max())


def test_thresholds_follow_the_paper_definition():
    # tau_i = min{t : sum_j beta m_j 1{C_ij <= t} + alpha m_j 1{C_ij > t} >= 1}; the minimum
    # is attained at a cost value (or below min C when alpha sum m = 1).
    for _, cost, eps, m in _instances(12, seed=1):
        a, b = math.exp(-eps / 2), math.exp(eps / 2)
        tau = WorstCaseCost(cost, eps).thresholds(m)
        for i in range(cost.shape[0]):
            ok = [t for t in np.sort(cost[i])
                  if (b * m * (cost[i] <= t) + a * m * (cost[i] > t)).sum() >= 1 - 1e-14]
            assert tau[i] == pytest.approx(ok[0])


def test_diracs_are_the_worst_case_inputs():
    # Prop. B.2: sup over all mu of the WPM cost is attained at a Dirac.
    rng = np.random.default_rng(2)
    for _, cost, eps, m in _instances(10, seed=2):
        f = WorstCaseCost(cost, eps).value(m)
        k = cost.shape[0]
        for i in range(k):  # the Sec. 4 LP on a Dirac is phi_i
            assert _wpm_lp(np.eye(k)[i], cost, m, eps) <= f * (1 + 1e-9) + 1e-12
        for _ in range(6):
            mu = rng.dirichlet(np.full(k, 0.3))
            assert _wpm_lp(mu, cost, m, eps) <= f * (1 + 1e-9) + 1e-12
        assert max(_wpm_lp(np.eye(k)[i], cost, m, eps) for i in range(k)) == pytest.approx(f)


# ---------------------------------------------------------------------------------------
# App. G: subgradients, cuts, convexity
# ---------------------------------------------------------------------------------------


def test_subgradients_match_finite_differences():
    # phi_i is piecewise linear in m; away from kinks (generic costs, interior m) the
    # directional derivative is exactly g_i . d: the tau-term cancels (envelope theorem).
    rng = np.random.default_rng(3)
    for _ in range(15):
        k, k_v = int(rng.integers(3, 8)), int(rng.integers(3, 8))
        eps = float(rng.uniform(0.3, 5.0))
        cost = rng.random((k, k_v))
        m = _random_m(rng, k_v, eps, total=math.exp(rng.uniform(-0.8, 0.8) * eps / 2))
        wc = WorstCaseCost(cost, eps)
        grads = wc.subgradients(m)
        h = 1e-7
        for _ in range(3):
            d = rng.normal(size=k_v)
            fd = (wc.phis(m + h * d) - wc.phis(m - h * d)) / (2 * h)
            np.testing.assert_allclose(fd, grads @ d, rtol=1e-5, atol=1e-6)
        i_star = int(np.argmax(wc.phis(m)))
        np.testing.assert_array_equal(wc.subgradient(m), grads[i_star])


def test_cuts_are_global_minorants_and_subgradient_inequality():
    for rng, cost, eps, m in _instances(12, seed=4):
        wc = WorstCaseCost(cost, eps)
        tau, grads, f_m, g = wc.thresholds(m), wc.subgradients(m), wc.value(m), wc.subgradient(m)
        np.testing.assert_allclose(tau + grads @ m, wc.phis(m), rtol=1e-12, atol=1e-12)
        for _ in range(10):
            m2 = _random_m(rng, cost.shape[1], eps, zeros=True)
            assert np.all(tau + grads @ m2 <= wc.phis(m2) + 1e-10)
            assert wc.value(m2) >= f_m + g @ (m2 - m) - 1e-10


def test_f_is_convex_along_segments():
    for rng, cost, eps, m in _instances(12, seed=5):
        wc = WorstCaseCost(cost, eps)
        m2 = _random_m(rng, cost.shape[1], eps, zeros=True)
        f1, f2 = wc.value(m), wc.value(m2)
        for theta in np.linspace(0, 1, 11):
            assert wc.value(theta * m + (1 - theta) * m2) <= (
                theta * f1 + (1 - theta) * f2 + 1e-10)


# ---------------------------------------------------------------------------------------
# The optimal base measure (Thm 3.4, App. G) and its certificate
# ---------------------------------------------------------------------------------------


def _assert_certified(res, cost, eps, tol):
    m = check_base_measure(res.base_measure, eps, k_v=cost.shape[1])  # feasible
    wc = WorstCaseCost(cost, eps)
    assert res.worst_case_cost == pytest.approx(wc.value(m), rel=1e-12)
    assert res.lower_bound <= res.worst_case_cost * (1 + 1e-12)
    assert res.converged and res.gap <= tol
    assert res.gap == pytest.approx(
        (res.worst_case_cost - res.lower_bound) / res.worst_case_cost, abs=1e-12)
    return wc


@pytest.mark.parametrize("seed", range(6))
def test_cutting_plane_is_exact_against_the_joint_lp(seed):
    rng = np.random.default_rng(100 + seed)
    k, k_v = int(rng.integers(3, 8)), int(rng.integers(3, 8))
    eps = float(rng.choice([0.5, 1.0, 3.0, 6.0]))
    cost = rng.random((k, k_v)) ** 2
    opt = _joint_lp(cost, eps)
    res = optimal_base_measure(cost, eps, tol=1e-8)
    wc = _assert_certified(res, cost, eps, 1e-8)
    assert res.worst_case_cost == pytest.approx(opt, rel=1e-7)
    assert res.lower_bound <= opt * (1 + 1e-9)
    # better than (or equal to) the paper's baselines
    assert res.worst_case_cost <= wc.value(uniform_base_measure(k_v, eps)) * (1 + 1e-12)
    assert res.worst_case_cost <= wc.value(kpm_base_measure(k_v, epsilon=eps)) * (1 + 1e-12)
    assert res.worst_case_cost <= wc.value(best_uniform_base_measure(cost, eps)) * (1 + 1e-12)
    # the cold linprog master (fallback when SciPy's HiGHS object is unavailable) agrees
    m_cold, upper, lower, _, diag = _cutting_plane(wc, 1e-8, 200, None, warm=False)
    assert not diag["warm_start"]
    assert upper == pytest.approx(opt, rel=1e-7) and lower <= opt * (1 + 1e-9)
    assert wc.value(m_cold) == pytest.approx(upper)


@pytest.mark.parametrize(("p", "eps"), [(1, 1.0), (2, 5.0)])
def test_grid_default_tolerance_and_baselines(p, eps):
    cost = _grid_cost(10, p)  # k = k_v = 100
    res = optimal_base_measure(cost, eps)
    wc = _assert_certified(res, cost, eps, 0.01)
    assert res.method == "cutting_plane"
    # every eps-LDP mechanism is at least lower_bound; the baselines are above f(m*)
    for base in (uniform_base_measure(100, eps), kpm_base_measure(100, epsilon=eps),
                 best_uniform_base_measure(cost, eps)):
        assert wc.value(base) >= res.lower_bound
        assert wc.value(base) >= res.worst_case_cost * (1 - 1e-12)
    assert res.worst_case_distance(p) == pytest.approx(res.worst_case_cost ** (1 / p))
    assert res.distance_lower_bound(p) <= res.worst_case_distance(p)


def test_cutting_plane_falls_back_when_the_warm_highs_model_fails(monkeypatch):
    import privot.sampling.base_measure as bm

    cost = _ring_cost(10, 2)
    exact = optimal_base_measure(cost, 2.0, tol=1e-9)
    monkeypatch.setattr(bm._MasterLP, "_solve_warm", lambda self: None)
    res = optimal_base_measure(cost, 2.0, tol=1e-9)
    assert res.diagnostics["warm_start"] is False
    assert res.worst_case_cost == pytest.approx(exact.worst_case_cost, rel=1e-9)
    assert res.converged


def test_mirror_descent_certificate_is_valid():
    rng = np.random.default_rng(7)
    cost = rng.random((6, 5))
    eps = 1.0
    opt = _joint_lp(cost, eps)
    res = optimal_base_measure(cost, eps, method="mirror_descent", max_iter=3000,
                               tol=1e-3)
    check_base_measure(res.base_measure, eps, k_v=5)
    assert res.method == "mirror_descent"
    assert res.lower_bound <= opt * (1 + 1e-9) <= res.worst_case_cost * (1 + 1e-9)
    assert res.worst_case_cost <= opt * 1.05
    # Prop. G.1 bound on the averaged iterate is far looser than what is observed
    a, b = math.exp(-eps / 2), math.exp(eps / 2)
    bound = b * cost.max() / a * math.sqrt(2 * (1 + math.log(5)) / res.n_iter)
    assert res.worst_case_cost - opt <= bound


def test_mirror_descent_budget_exhausted_is_reported():
    cost = _grid_cost(5, 1)
    res = optimal_base_measure(cost, 5.0, method="mirror_descent", max_iter=40, tol=1e-6)
    assert not res.converged and res.n_iter == 40 and res.gap > 1e-6
    assert 0 <= res.lower_bound <= res.worst_case_cost


def test_symmetric_ring_gives_a_uniform_optimum():
    # cost = circular distance^p on k points (Sec. 5.1): rotations leave f invariant, so
    # by convexity the rotation average of any optimum (uniform) is optimal; HiGHS returns
    # the uniform vertex and its value equals the best uniform measure's.
    for k, p, eps in [(12, 1, 1.0), (30, 2, 5.0), (30, 1, 1.0)]:
        cost = _ring_cost(k, p)
        res = optimal_base_measure(cost, eps, tol=1e-9)
        wc = _assert_certified(res, cost, eps, 1e-9)
        m = res.base_measure
        np.testing.assert_allclose(m, m.mean(), rtol=1e-6)
        f_uniform = wc.value(best_uniform_base_measure(cost, eps))  # Brent: ~1e-9 off
        assert f_uniform * (1 - 1e-6) <= res.worst_case_cost <= f_uniform * (1 + 1e-12)


def test_degenerate_costs():
    res = optimal_base_measure(np.zeros((3, 4)), 1.0)
    assert res.worst_case_cost == 0 and res.gap == 0 and res.converged
    cost = np.array([[0.5], [2.0]])  # k_v = 1: the only output, phi_i = C_i1
    res = optimal_base_measure(cost, 1.0)
    assert res.worst_case_cost == pytest.approx(2.0) and res.gap <= 1e-9
    assert dirac_costs(cost, [1.0], 1.0) == pytest.approx([0.5, 2.0])


def test_init_is_used_and_checked():
    cost = _ring_cost(8, 1)
    res = optimal_base_measure(cost, 2.0, init=np.full(8, 0.125), tol=1e-9)
    assert res.converged
    with pytest.raises(InvalidDataError, match="init"):
        optimal_base_measure(cost, 2.0, init=np.ones(3))
    with pytest.raises(InvalidParameterError, match="init"):
        optimal_base_measure(cost, 2.0, init=np.full(8, 10.0))


# ---------------------------------------------------------------------------------------
# Simple base measures
# ---------------------------------------------------------------------------------------


def test_uniform_and_kpm_are_feasible():
    for eps in (0.1, 1.0, 8.0):
        for k_v in (1, 7, 400):
            check_base_measure(uniform_base_measure(k_v, eps), eps)
            check_base_measure(kpm_base_measure(k_v, epsilon=eps), eps)
    np.testing.assert_allclose(uniform_base_measure(4, 1.0), 0.25)
    assert uniform_base_measure(4, 1.0, total=1.5).sum() == pytest.approx(1.5)
    kpm = kpm_base_measure(10, epsilon=2.0)
    np.testing.assert_allclose(kpm, math.exp(1.0) / (math.exp(2.0) + 9))


def test_best_uniform_beats_every_uniform_scale():
    cost = _grid_cost(6, 2)
    eps = 3.0
    wc = WorstCaseCost(cost, eps)
    best = wc.value(best_uniform_base_measure(cost, eps))
    totals = np.exp(np.linspace(-eps / 2, eps / 2, 41))
    for total in np.clip(totals, totals[0] * (1 + 1e-12), totals[-1] * (1 - 1e-12)):
        assert best <= wc.value(uniform_base_measure(36, eps, total=float(total))) + 1e-12


# ---------------------------------------------------------------------------------------
# The sphere (App. H, Prop. H.1)
# ---------------------------------------------------------------------------------------


def _f_d(d: int):
    c_d = gamma((d + 1) / 2) / (math.sqrt(math.pi) * gamma(d / 2))
    return lambda u: c_d * (1 - u * u) ** ((d - 2) / 2)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_sphere_scale_solves_the_proposition_equation(d):
    # S_d, U_{d,p}, H_{d,p} by quadrature of the paper's f_d, then G(t*) = 0 and alpha*.
    f_d = _f_d(d)
    for p, eps in [(1.0, 1.0), (2.0, 3.0), (3.5, 0.5)]:
        sc = sphere_optimal_scale(d, p, eps)
        t = sc.t_star
        g = lambda u, p=p: (2 - 2 * u) ** (p / 2)  # noqa: E731
        s_t = integrate.quad(f_d, t, 1)[0]
        u_t = integrate.quad(lambda u, g=g: g(u) * f_d(u), t, 1)[0]
        h = integrate.quad(lambda u, g=g: g(u) * f_d(u), -1, 1)[0]
        a, b = math.exp(eps / 2) - math.exp(-eps / 2), math.exp(-eps / 2)
        assert sc.cap_mass == pytest.approx(s_t, rel=1e-6)
        assert a * u_t + b * h == pytest.approx(g(t) * (b + a * s_t), rel=1e-6)
        assert sc.scale == pytest.approx(1 / (b + a * s_t), rel=1e-9)
        assert sc.worst_case_cost == pytest.approx((a * u_t + b * h) / (b + a * s_t), rel=1e-6)
        assert sc.worst_case_distance == pytest.approx(math.sqrt(2 - 2 * t))


def test_sphere_scale_minimises_the_worst_case_and_decreases_in_p():
    for d, eps in [(1, 1.0), (2, 4.0), (4, 2.0)]:
        scales = [sphere_optimal_scale(d, p, eps) for p in (1.0, 1.5, 2.0, 4.0)]
        assert all(s1.scale > s2.scale for s1, s2 in zip(scales, scales[1:], strict=False))
        sc = scales[0]
        lo, hi = math.exp(-eps / 2), math.exp(eps / 2)
        grid = np.linspace(lo, hi, 201)
        costs = [sphere_worst_case_cost(d, 1.0, eps, float(s)) for s in grid]
        assert min(costs) >= sc.worst_case_cost * (1 - 1e-9)
        assert sphere_worst_case_cost(d, 1.0, eps, sc.scale) == pytest.approx(
            sc.worst_case_cost, rel=1e-9)


@pytest.mark.parametrize(("p", "eps"), [(1.0, 1.0), (2.0, 3.0)])
def test_sphere_closed_form_matches_the_discrete_optimum_on_the_circle(p, eps):
    # n equally spaced points on S^1, chord cost ||x - y||^p: the discrete optimum is
    # uniform (symmetry) and approaches Prop. H.1 as n grows (O(1/n) discretisation).
    n = 60
    th = 2 * np.pi * np.arange(n) / n
    pts = np.stack([np.cos(th), np.sin(th)], axis=1)
    cost = np.linalg.norm(pts[:, None] - pts[None], axis=-1) ** p
    res = optimal_base_measure(cost, eps, tol=1e-9)
    sc = sphere_optimal_scale(1, p, eps)
    assert res.worst_case_cost == pytest.approx(sc.worst_case_cost, rel=3e-3)
    assert res.base_measure.sum() == pytest.approx(sc.scale, rel=0.1)
    m_sphere = sphere_base_measure(pts, eps, p=p)
    assert m_sphere.sum() == pytest.approx(sc.scale)
    f_sphere = WorstCaseCost(cost, eps).value(m_sphere)
    assert res.worst_case_cost <= f_sphere <= res.worst_case_cost * (1 + 1e-3)


# ---------------------------------------------------------------------------------------
# Bad inputs name the parameter
# ---------------------------------------------------------------------------------------


def test_bad_inputs_raise_naming_the_parameter():
    cost = np.ones((3, 4))
    with pytest.raises(InvalidParameterError, match="k_v"):
        uniform_base_measure(0, 1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        uniform_base_measure(3, 0.0)
    with pytest.raises(InvalidParameterError, match="total"):
        uniform_base_measure(3, 1.0, total=5.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        WorstCaseCost(cost, -1.0)
    with pytest.raises(InvalidDataError, match="cost"):
        dirac_costs(-cost, np.full(4, 0.25), 1.0)
    with pytest.raises(InvalidDataError, match="cost"):
        dirac_costs(np.ones(4), np.full(4, 0.25), 1.0)
    with pytest.raises(InvalidParameterError, match="base_measure"):
        dirac_costs(cost, np.full(4, 1.0), 1.0)  # total 4 > e^0.5: empty polytope
    with pytest.raises(InvalidDataError, match="base_measure"):
        dirac_costs(cost, np.full(3, 1 / 3), 1.0)
    with pytest.raises(InvalidDataError, match="base_measure"):
        WorstCaseCost(cost, 1.0).subgradient([0.5, 0.5, 0.5, -0.5])
    with pytest.raises(InvalidParameterError, match="method"):
        optimal_base_measure(cost, 1.0, method="newton")
    with pytest.raises(InvalidParameterError, match="tol"):
        optimal_base_measure(cost, 1.0, tol=0.0)
    with pytest.raises(InvalidParameterError, match="max_iter"):
        optimal_base_measure(cost, 1.0, max_iter=0)
    with pytest.raises(InvalidParameterError, match="d"):
        sphere_optimal_scale(0, 1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="p"):
        sphere_optimal_scale(2, 0.5, 1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        sphere_optimal_scale(2, 1.0, math.inf)
    with pytest.raises(InvalidParameterError, match="scale"):
        sphere_worst_case_cost(2, 1.0, 1.0, 3.0)
    with pytest.raises(InvalidDataError, match="unit vectors"):
        sphere_base_measure(np.array([[1.0, 0.0], [2.0, 0.0]]), 1.0)
    with pytest.raises(InvalidDataError, match="points"):
        sphere_base_measure(np.array([[1.0], [-1.0]]), 1.0)
