"""Exact and entropic Wasserstein Projection Mechanism solvers (paper 003, Sec. 4, Alg. 1)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import ot
import pytest

from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.sampling.cost import cost_matrix
from privot.sampling.polytope import in_polytope, polytope_bounds
from privot.sampling.wpm_entropic import wpm_entropic
from privot.sampling.wpm_exact import wpm_exact, wpm_exact_highs

# the module (the package re-exports the function under the same name)
entropic_module = importlib.import_module("privot.sampling.wpm_entropic")


def _instance(seed: int, k: int, k_v: int, n: int = 3, eps: float = 2.0):
    rng = np.random.default_rng(seed)
    x = rng.random((k, 2))
    v = rng.random((k_v, 2))
    cost = cost_matrix(x, v, p=2)
    mu = rng.dirichlet(np.full(k, 0.3), size=n)
    mu[mu < 0.02] = 0.0  # zeros of mu are dropped by the solvers
    mu /= mu.sum(axis=1, keepdims=True)
    m = rng.random(k_v) + 0.05
    m = m / m.sum() * math.exp(rng.uniform(-0.4, 0.4) * eps)
    return mu, cost, m


def _ring(k: int) -> np.ndarray:
    i = np.arange(k)
    d = np.abs(i[:, None] - i[None, :])
    return np.minimum(d, k - d).astype(float)


# ----------------------------------------------------------------------------- cost

def test_cost_matrix_metrics():
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    v = np.array([[0.0, 1.0], [1.0, 0.0], [-3.0, 0.0]])
    np.testing.assert_allclose(cost_matrix(x, v), [[math.sqrt(2), 0, 4], [1, math.sqrt(5),
                                                                          math.sqrt(13)]])
    np.testing.assert_allclose(cost_matrix(x, v, p=2), cost_matrix(x, v) ** 2)
    np.testing.assert_allclose(cost_matrix(x, v, metric="sqeuclidean"), cost_matrix(x, v) ** 2)
    np.testing.assert_allclose(cost_matrix(x, v, metric="cityblock", p=3),
                               [[8, 0, 64], [1, 27, 125]])
    np.testing.assert_allclose(cost_matrix(x, v, metric="cosine"), [[1, 0, 2], [0, 1, 1]],
                               atol=1e-15)
    np.testing.assert_allclose(cost_matrix(x, v, metric="geodesic"),
                               [[math.pi / 2, 0, math.pi], [0, math.pi / 2, math.pi / 2]],
                               atol=1e-15)
    tiny = cost_matrix(np.array([[1.0, 0.0]]), np.array([[1.0, 1e-9]]), metric="geodesic")
    assert tiny[0, 0] == pytest.approx(1e-9, rel=1e-9)


def test_cost_matrix_errors():
    with pytest.raises(InvalidDataError, match="dimension"):
        cost_matrix(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(InvalidParameterError) as err:
        cost_matrix(np.zeros((2, 2)), np.zeros((2, 2)), metric="hamming")
    assert err.value.name == "metric"
    with pytest.raises(InvalidParameterError) as err:
        cost_matrix(np.zeros((2, 2)), np.zeros((2, 2)), p=0.5)
    assert err.value.name == "p"
    with pytest.raises(InvalidDataError, match="zero vector"):
        cost_matrix(np.array([[0.0, 0.0]]), np.array([[1.0, 0.0]]), metric="cosine")


# ----------------------------------------------------------------------------- exact

@pytest.mark.parametrize("seed,k,k_v", [(0, 8, 8), (1, 12, 5), (2, 4, 15), (3, 1, 6),
                                        (4, 9, 1), (5, 20, 20)])
def test_network_simplex_matches_highs(seed, k, k_v):
    mu, cost, m = _instance(seed, k, k_v)
    ns = wpm_exact(mu, cost, m, 2.0)
    hi = wpm_exact_highs(mu, cost, m, 2.0)
    np.testing.assert_allclose(ns.cost, hi.cost, atol=1e-9, rtol=0)
    assert np.all(in_polytope(ns.nu, m, 2.0)) and np.all(in_polytope(hi.nu, m, 2.0, atol=1e-9))
    assert np.all(np.abs(ns.gap) <= 1e-11) and np.all(np.abs(hi.gap) <= 1e-8)
    assert ns.solver == "network_simplex" and hi.solver == "highs" and ns.plan is None


def test_single_input_returns_the_plan():
    mu, cost, m = _instance(6, 10, 7, n=1)
    res = wpm_exact(mu[0], cost, m, 2.0)
    assert res.nu.shape == (7,) and isinstance(res.cost, float)
    np.testing.assert_allclose(res.plan.sum(axis=1), mu[0], atol=1e-15)
    np.testing.assert_allclose(res.plan.sum(axis=0), res.nu, atol=1e-15)
    assert res.cost == pytest.approx(float(np.sum(res.plan * cost)), abs=1e-15)
    # nu is optimal for its own coupling: W_p^p(nu, mu) equals the LP value
    assert ot.emd2(mu[0], res.nu, cost) == pytest.approx(res.cost, abs=1e-12)
    batch = wpm_exact(mu, cost, m, 2.0)
    np.testing.assert_allclose(batch.nu[0], res.nu, atol=1e-15)


def test_base_measure_with_zeros_forces_zero_mass():
    mu, cost, m = _instance(7, 6, 6)
    m[[1, 4]] = 0.0
    m = m / m.sum()
    for solver in ("network_simplex", "highs"):
        res = wpm_exact(mu, cost, m, 1.0, solver=solver)
        assert np.all(res.nu[:, [1, 4]] == 0.0)
        assert np.all(in_polytope(res.nu, m, 1.0, atol=1e-9))


def _dirac_projection(costs_row: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """Closed form for mu = delta_i (App. F): fill the nearest outputs up to u_j."""
    nu = lower.copy()
    room = 1.0 - lower.sum()
    for j in np.argsort(costs_row, kind="stable"):
        add = min(room, upper[j] - lower[j])
        nu[j] += add
        room -= add
    return float(costs_row @ nu)


@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_dirac_inputs_match_the_greedy_closed_form(eps):
    k = 15
    cost = _ring(k) ** 2
    m = np.full(k, 1 / k)
    lower, upper = polytope_bounds(m, eps)
    res = wpm_exact(np.eye(k), cost, m, eps)
    expected = [_dirac_projection(cost[i], lower, upper) for i in range(k)]
    np.testing.assert_allclose(res.cost, expected, atol=1e-12)
    np.testing.assert_allclose(res.cost, res.cost[0], atol=1e-12)  # ring symmetry


def test_large_epsilon_leaves_mu_inside_the_polytope_unchanged():
    rng = np.random.default_rng(8)
    k = 12
    pts = rng.random((k, 2))
    cost = cost_matrix(pts, pts)  # outputs = inputs
    mu = rng.dirichlet(np.ones(k), size=4)
    m = np.full(k, 1 / k)
    res = wpm_exact(mu, cost, m, 40.0)  # polytope [e^-20/k, e^20/k] contains mu
    np.testing.assert_allclose(res.cost, 0.0, atol=1e-15)
    np.testing.assert_allclose(res.nu, mu, atol=1e-15)


def test_exact_bad_inputs_name_the_parameter():
    mu, cost, m = _instance(9, 5, 4, n=2)
    with pytest.raises(InvalidDataError, match="mu must sum to 1"):
        wpm_exact(mu * 1.1, cost, m, 2.0)
    bad_cost = cost.copy()
    bad_cost[0, 0] = -1.0
    with pytest.raises(InvalidDataError, match="cost must be non-negative"):
        wpm_exact(mu, bad_cost, m, 2.0)
    with pytest.raises(InvalidDataError, match="mu has 5 entries"):
        wpm_exact(mu, cost[:4], m, 2.0)
    with pytest.raises(InvalidDataError, match="base_measure has length"):
        wpm_exact(mu, cost, np.append(m, 0.0), 2.0)
    with pytest.raises(InvalidParameterError) as err:
        wpm_exact(mu, cost, m * 10, 2.0)
    assert err.value.name == "sum(base_measure)"
    with pytest.raises(InvalidParameterError) as err:
        wpm_exact(mu, cost, m, 2.0, solver="simplex")
    assert err.value.name == "solver"


def test_network_simplex_cap_raises():
    mu, cost, m = _instance(10, 10, 10, n=1)
    with pytest.raises(ConvergenceError, match="network simplex"):
        wpm_exact(mu, cost, m, 2.0, max_iter=1)


# ----------------------------------------------------------------------------- entropic

def test_entropic_converges_to_exact_within_prop_4_1():
    k, eps, p = 16, 3.0, 2
    cost = _ring(k) ** p
    rng = np.random.default_rng(11)
    mu = rng.dirichlet(np.full(k, 0.2), size=3)
    m = np.full(k, 1 / k)
    exact = wpm_exact(mu, cost, m, eps).cost
    excess = []
    for lam in (4.0, 1.0, 0.25, 0.1):
        res = wpm_entropic(mu, cost, m, eps, lam=lam, p=p, tol=1e-11, max_iter=5000)
        assert np.all(res.converged) and np.all(in_polytope(res.nu, m, eps))
        w = np.array([ot.emd2(mu[i], res.nu[i], cost) for i in range(3)])
        n_support = np.count_nonzero(mu > 0, axis=1) * k
        np.testing.assert_allclose(res.cost_bound, lam * np.log(n_support))
        np.testing.assert_allclose(res.error_bound, np.sqrt(lam * np.log(n_support)))
        slack = 1e-8
        # Prop. 4.1: 0 <= W_p^p(nu^lam) - W_p^p(nu*) <= <pi^lam, C> - W_p^p(nu*) <= lam log N
        assert np.all(w >= exact - 1e-12)
        assert np.all(w <= res.transport_cost + 2 * res.marginal_error * cost.max() + slack)
        assert np.all(res.transport_cost - exact <= res.cost_bound + slack)
        assert np.all(w ** (1 / p) - exact ** (1 / p) <= res.error_bound + slack)
        excess.append(float(np.max(w - exact)))
    assert excess[-1] < 1e-4 and np.all(np.diff(excess) < 0)  # -> exact as lam -> 0


def test_entropic_batched_equals_per_row():
    mu, cost, m = _instance(12, 14, 9, n=5)
    lam = 0.05 * cost.max()
    batch = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=1e-10)
    for i in range(5):
        one = wpm_entropic(mu[i], cost, m, 2.0, lam=lam, tol=1e-10)
        np.testing.assert_allclose(one.nu, batch.nu[i], atol=1e-10)
        assert one.transport_cost == pytest.approx(batch.transport_cost[i], abs=1e-10)
        assert abs(one.n_iter - batch.n_iter[i]) <= 1
    chunked = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=1e-10, chunk_size=2)
    np.testing.assert_allclose(chunked.nu, batch.nu, atol=1e-10)


def test_entropic_methods_agree():
    mu, cost, m = _instance(13, 10, 12, n=4)
    lam = 0.02 * cost.max()
    banded = wpm_entropic(mu, cost, m, 2.0, lam=lam, method="banded", tol=1e-10)
    direct = wpm_entropic(mu, cost, m, 2.0, lam=lam, method="direct", tol=1e-10)
    assert banded.method == "banded" and direct.method == "direct"
    np.testing.assert_allclose(banded.nu, direct.nu, atol=1e-9)
    np.testing.assert_allclose(banded.transport_cost, direct.transport_cost, atol=1e-9)


def test_entropic_small_lambda_is_stable():
    """lam = 1e-3 max C: exp(-C/lam) underflows to 0 in linear scale, not here."""
    g = np.stack(np.meshgrid(np.arange(6), np.arange(6)), -1).reshape(-1, 2) / 5.0
    cost = cost_matrix(g, g)
    rng = np.random.default_rng(14)
    mu = np.vstack([rng.dirichlet(np.full(36, 0.1), size=3), np.eye(36)[[0, 17]]])
    m = np.full(36, 1 / 36)
    res = wpm_entropic(mu, cost, m, 1.0, lam=1e-3 * cost.max(), tol=1e-9, max_iter=3000)
    assert np.all(np.isfinite(res.nu)) and np.all(np.isfinite(res.transport_cost))
    assert np.all(res.converged) and np.all(in_polytope(res.nu, m, 1.0))
    exact = wpm_exact(mu, cost, m, 1.0).cost
    assert np.all(res.transport_cost - exact <= res.cost_bound + 1e-8)
    assert np.all(res.transport_cost >= exact - 1e-9)
    assert len(entropic_module._Banded(-cost / (1e-3 * cost.max())).bands) == 3
    # the same 40 iterations by banded GEMMs and by direct log-sum-exp
    runs = [wpm_entropic(mu, cost, m, 1.0, lam=1e-3 * cost.max(), tol=0.0, max_iter=40,
                         method=method) for method in ("banded", "direct")]
    np.testing.assert_allclose(runs[0].nu, runs[1].nu, atol=1e-10)


def test_entropic_zero_base_measure_entries_and_dirac():
    mu, cost, m = _instance(15, 7, 7, n=2)
    m[2] = 0.0
    m = m / m.sum()
    dirac = np.zeros((1, 7))
    dirac[0, 3] = 1.0
    res = wpm_entropic(np.vstack([mu, dirac]), cost, m, 2.0, lam=0.05 * cost.max())
    assert np.all(res.nu[:, 2] == 0.0) and np.all(in_polytope(res.nu, m, 2.0))


def test_entropic_fixed_work_and_nonconvergence_policies():
    mu, cost, m = _instance(16, 10, 10, n=3)
    lam = 0.01 * cost.max()
    fixed = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=7)
    np.testing.assert_array_equal(fixed.n_iter, 7)
    assert not np.any(fixed.converged) and np.all(in_polytope(fixed.nu, m, 2.0))
    with pytest.warns(RuntimeWarning, match="did not reach"):
        wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=1e-14, max_iter=3)
    with pytest.raises(ConvergenceError, match="did not reach"):
        wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=1e-14, max_iter=3,
                     on_nonconvergence="raise")


def test_entropic_nan_raises_instead_of_returning_garbage(monkeypatch):
    mu, cost, m = _instance(17, 6, 6, n=2)
    real = entropic_module._Kernels.apply

    def broken(self, log_x, **kwargs):
        return np.full_like(real(self, log_x, **kwargs), np.nan)

    monkeypatch.setattr(entropic_module._Kernels, "apply", broken)
    with pytest.raises(ConvergenceError, match="non-finite"):
        wpm_entropic(mu, cost, m, 2.0, lam=0.1)


def test_entropic_bad_inputs_name_the_parameter():
    mu, cost, m = _instance(18, 5, 4, n=2)
    with pytest.raises(InvalidDataError, match="mu must sum to 1"):
        wpm_entropic(mu * 0.5, cost, m, 2.0, lam=0.1)
    with pytest.raises(InvalidDataError, match="cost must be non-negative"):
        wpm_entropic(mu, -cost, m, 2.0, lam=0.1)
    with pytest.raises(InvalidDataError, match="cost must have shape"):
        wpm_entropic(mu, cost[0], m, 2.0, lam=0.1)
    for lam in (0.0, -1.0, float("nan")):
        with pytest.raises(InvalidParameterError) as err:
            wpm_entropic(mu, cost, m, 2.0, lam=lam)
        assert err.value.name == "lam"
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost, m, 2.0, lam=1e-320)  # cost / lam overflows
    assert err.value.name == "lam"
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost, np.full(4, 0.01), 2.0, lam=0.1)
    assert err.value.name == "sum(base_measure)"
    for name, kwargs in (("p", {"p": 0.5}), ("method", {"method": "gpu"}),
                         ("tol", {"tol": -1.0}), ("max_iter", {"max_iter": 0}),
                         ("on_nonconvergence", {"on_nonconvergence": "retry"}),
                         ("chunk_size", {"chunk_size": 0})):
        with pytest.raises(InvalidParameterError) as err:
            wpm_entropic(mu, cost, m, 2.0, lam=0.1, **kwargs)
        assert err.value.name == name
