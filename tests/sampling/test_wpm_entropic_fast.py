"""Entropic WPM fast paths: scaling domain, separable kernels, warm projection, threads.

Every fast path must give Algorithm 1's iterates of the log-domain reference
(``method="banded"``) up to rounding, keep ``nu`` in the polytope and fall back where
its a-priori range bound fails (paper 003, Sec. 4, Alg. 1).
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.sampling.cost import cost_matrix
from privot.sampling.polytope import SUM_ATOL, in_polytope, kl_projection, polytope_bounds
from privot.sampling.wpm_entropic import wpm_entropic

entropic_module = importlib.import_module("privot.sampling.wpm_entropic")


def _grid(nx: int, ny: int) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij"), -1)
    return g.reshape(-1, 2) / max(nx - 1, 1)


def _inputs(seed: int, k: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = rng.dirichlet(np.full(k, 0.1), size=n)
    mu[0] = 0.0  # a Dirac and a sparse user
    mu[0, k // 3] = 1.0
    sparse = rng.dirichlet(np.ones(4))
    mu[1] = 0.0
    mu[1, rng.choice(k, size=4, replace=False)] = sparse
    return mu


def _agree(a, b, atol=1e-10):
    np.testing.assert_allclose(a.nu, b.nu, atol=atol, rtol=0)
    np.testing.assert_allclose(a.transport_cost, b.transport_cost, atol=atol, rtol=0)
    np.testing.assert_allclose(a.marginal_error, b.marginal_error, atol=atol, rtol=0)


@pytest.mark.parametrize("tol,max_iter", [(1e-10, 3000), (0.0, 25)])
def test_scaling_matches_log_domain_dense(tol, max_iter):
    rng = np.random.default_rng(1)
    cost = cost_matrix(rng.random((30, 2)), rng.random((24, 2)))
    mu = _inputs(2, 30, 12)
    m = rng.random(24) + 0.1
    m = m / m.sum() * math.exp(0.3)
    lam = 0.02 * cost.max()
    fast = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=tol, max_iter=max_iter)
    ref = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=tol, max_iter=max_iter, method="banded")
    assert fast.method == "scaling" and ref.method == "banded"
    _agree(fast, ref)
    np.testing.assert_array_equal(fast.n_iter, ref.n_iter)
    assert np.all(in_polytope(fast.nu, m, 2.0))


@pytest.mark.parametrize("metric,p", [("sqeuclidean", 1.0), ("euclidean", 2.0),
                                      ("cityblock", 1.0)])
def test_separable_grid_kernel(metric, p):
    pts = _grid(5, 4)  # 20 points: the kernel is K_5 (x) K_4
    cost = cost_matrix(pts, pts, metric=metric, p=p)
    mu = _inputs(3, 20, 9)
    m = np.full(20, 1 / 20)
    lam = 0.01 * cost.max()
    sep = wpm_entropic(mu, cost, m, 1.5, lam=lam, tol=0.0, max_iter=60, kernel="separable")
    dense = wpm_entropic(mu, cost, m, 1.5, lam=lam, tol=0.0, max_iter=60, kernel="dense")
    ref = wpm_entropic(mu, cost, m, 1.5, lam=lam, tol=0.0, max_iter=60, method="banded")
    assert sep.method == "scaling-separable" and dense.method == "scaling"
    _agree(sep, dense, 1e-12)
    _agree(sep, ref)
    assert np.all(in_polytope(sep.nu, m, 1.5))


def test_separable_factors_detection():
    pts = _grid(6, 5)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    assert entropic_module._separable_factors(cost) is None  # too small to pay
    a, b = entropic_module._separable_factors(cost, dense_cols=None)
    assert a.shape == (6, 6) and b.shape == (5, 5)
    np.testing.assert_allclose((a[:, None, :, None] + b[None, :, None, :]).reshape(30, 30),
                               cost, atol=1e-14)
    # two grids of different shapes (inputs 6 x 5, outputs 3 x 4)
    out = np.stack(np.meshgrid(np.linspace(0, 1, 3), np.linspace(0, 1, 4), indexing="ij"),
                   -1).reshape(-1, 2)
    a, b = entropic_module._separable_factors(cost_matrix(pts, out, metric="cityblock"),
                                              dense_cols=None)
    assert a.shape == (6, 3) and b.shape == (5, 4)
    ring = np.abs(np.arange(12)[:, None] - np.arange(12)[None, :]).astype(float)
    shuffled = cost[np.random.default_rng(4).permutation(30)]  # not in grid order
    for c in (cost_matrix(pts, pts), shuffled, np.minimum(ring, 12 - ring)):
        assert entropic_module._separable_factors(c, dense_cols=None) is None
    big = _grid(12, 12)  # auto: 12 x 12 is worth it
    assert entropic_module._separable_factors(cost_matrix(big, big, p=2)) is not None
    res = wpm_entropic(np.full(144, 1 / 144), cost_matrix(big, big, p=2), np.full(144, 1 / 144),
                       1.0, lam=0.05, tol=0.0, max_iter=3)
    assert res.method == "scaling-separable"
    sparse_m = np.zeros(144)  # few output columns: the dense products are cheaper
    sparse_m[[3, 70, 140]] = 1 / 3
    res = wpm_entropic(np.full(144, 1 / 144), cost_matrix(big, big, p=2), sparse_m, 1.0,
                       lam=0.05, tol=0.0, max_iter=3)
    assert res.method == "scaling"


def test_separable_with_zero_base_measure_entries():
    pts = _grid(4, 4)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    mu = _inputs(5, 16, 6)
    m = np.full(16, 1 / 14)
    m[[3, 10]] = 0.0
    lam = 0.02 * cost.max()
    sep = wpm_entropic(mu, cost, m, 1.0, lam=lam, tol=1e-11, max_iter=5000, kernel="separable")
    ref = wpm_entropic(mu, cost, m, 1.0, lam=lam, tol=1e-11, max_iter=5000, method="banded")
    assert sep.method == "scaling-separable"
    assert np.all(sep.nu[:, [3, 10]] == 0.0) and np.all(in_polytope(sep.nu, m, 1.0))
    _agree(sep, ref, 1e-9)
    np.testing.assert_allclose(sep.cost_bound, ref.cost_bound)


def test_small_lambda_and_explicit_requests():
    pts = _grid(4, 4)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    mu = _inputs(6, 16, 3)
    m = np.full(16, 1 / 16)
    small = 1e-3 * cost.max()  # 2 (max C - min C) / lam = 2000 > SCALING_MAX_LOG_RANGE
    res = wpm_entropic(mu, cost, m, 1.0, lam=small, tol=0.0, max_iter=30)
    assert res.method == "banded" and np.all(in_polytope(res.nu, m, 1.0))
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost, m, 1.0, lam=small, method="scaling")
    assert err.value.name == "method"
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost, m, 1.0, lam=small, kernel="separable")
    assert err.value.name == "kernel"
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost, m, 1.0, lam=0.1, method="banded", kernel="separable")
    assert err.value.name == "kernel"
    with pytest.raises(InvalidParameterError) as err:
        wpm_entropic(mu, cost_matrix(pts, pts), m, 1.0, lam=0.1, kernel="separable")
    assert err.value.name == "kernel"
    for name, kwargs in (("kernel", {"kernel": "fft"}), ("n_jobs", {"n_jobs": 0})):
        with pytest.raises(InvalidParameterError) as err:
            wpm_entropic(mu, cost, m, 1.0, lam=0.1, **kwargs)
        assert err.value.name == name


def test_degenerate_polytope_uses_the_log_domain():
    cost = cost_matrix(_grid(3, 3), _grid(3, 3))
    mu = _inputs(7, 9, 3)
    eps = 1.0
    m = np.full(9, math.exp(-eps / 2) / 9)  # sum(upper) = 1: Q is the single point upper
    res = wpm_entropic(mu, cost, m, eps, lam=0.1, tol=0.0, max_iter=10)
    assert res.method == "banded"
    _, upper = polytope_bounds(m, eps)
    np.testing.assert_allclose(res.nu, np.broadcast_to(upper, res.nu.shape), atol=1e-15)


def test_threads_give_identical_results():
    pts = _grid(5, 5)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    mu = _inputs(8, 25, 40)
    m = np.full(25, 1 / 25)
    kwargs = {"lam": 0.01 * cost.max(), "tol": 0.0, "max_iter": 30, "chunk_size": 7}
    one = wpm_entropic(mu, cost, m, 2.0, **kwargs)
    two = wpm_entropic(mu, cost, m, 2.0, n_jobs=2, **kwargs)
    np.testing.assert_array_equal(one.nu, two.nu)
    np.testing.assert_array_equal(one.transport_cost, two.transport_cost)
    whole = wpm_entropic(mu, cost, m, 2.0, **{**kwargs, "chunk_size": 40})
    np.testing.assert_allclose(whole.nu, one.nu, atol=1e-13, rtol=0)


def test_scaling_failure_falls_back_to_the_log_domain(monkeypatch):
    rng = np.random.default_rng(9)
    cost = cost_matrix(rng.random((10, 2)), rng.random((10, 2)))
    mu = _inputs(10, 10, 5)
    m = np.full(10, 0.1)
    lam = 0.05 * cost.max()
    ref = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=20, method="banded")

    def fail(*args, **kwargs):
        raise entropic_module._ScalingFailure

    monkeypatch.setattr(entropic_module, "_solve_chunk_scaling", fail)
    res = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=20)
    assert res.method == "banded"
    _agree(res, ref, 0.0)


def test_tiny_and_zero_input_masses():
    pts = _grid(4, 5)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    mu = _inputs(11, 20, 4)
    mu[2] = 1e-300
    mu[2, 5] = 0.0
    mu[2] /= mu[2].sum()
    mu[3] = 0.0
    mu[3, [0, 19]] = [1 - 1e-200, 1e-200]
    m = np.full(20, 1 / 20)
    lam = 0.02 * cost.max()
    fast = wpm_entropic(mu, cost, m, 3.0, lam=lam, tol=0.0, max_iter=50)
    ref = wpm_entropic(mu, cost, m, 3.0, lam=lam, tol=0.0, max_iter=50, method="banded")
    assert np.all(np.isfinite(fast.transport_cost)) and np.all(in_polytope(fast.nu, m, 3.0))
    _agree(fast, ref)


def test_scaled_projection_is_exact_and_warm_starts():
    rng = np.random.default_rng(12)
    k_v, eps = 50, 1.5
    m = rng.random(k_v) + 0.05
    m /= m.sum()
    m[7] = 0.0
    lower, upper = polytope_bounds(m, eps)
    proj = entropic_module._ScaledProjection(lower, upper)
    s = np.exp(rng.uniform(-60, 5, size=(40, k_v)))  # wide dynamic range
    for _ in range(4):
        q, z = proj(s)
        np.testing.assert_allclose(q, kl_projection(s, m, eps), atol=1e-14, rtol=1e-12)
        assert np.all(np.abs(q.sum(axis=1) - 1.0) <= SUM_ATOL)
        assert np.all(q >= lower) and np.all(q <= upper)
        np.testing.assert_allclose(z, s * proj.t[:, None], rtol=1e-15)
        s = s * np.exp(rng.normal(0, 0.3, size=s.shape))  # the next iterate: warm start


def test_scaling_at_the_edge_of_its_range_bound():
    """lam where 2R + 2 eps + log(k k_v rho) is just below SCALING_MAX_LOG_RANGE: the
    linear-scale iterates stay finite and match the log domain (the bound is not loose
    in the wrong direction)."""
    pts = _grid(6, 6)
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    rng = np.random.default_rng(13)
    m = rng.random(36) + 0.5
    m /= m.sum()
    eps = 4.0
    rho = m.max() / m.min()
    margin = entropic_module.SCALING_MAX_LOG_RANGE - 2 * eps - math.log(36 * 36 * rho) - 1.0
    lam = 2 * cost.max() / margin  # R = max C / lam = margin / 2
    mu = np.vstack([np.eye(36)[[0, 35, 14]], _inputs(14, 36, 5)])
    fast = wpm_entropic(mu, cost, m, eps, lam=lam, tol=0.0, max_iter=40, kernel="separable")
    ref = wpm_entropic(mu, cost, m, eps, lam=lam, tol=0.0, max_iter=40, method="banded")
    assert fast.method == "scaling-separable"
    assert np.all(np.isfinite(fast.transport_cost)) and np.all(in_polytope(fast.nu, m, eps))
    _agree(fast, ref, 1e-9)
    with pytest.raises(InvalidParameterError):  # just past the bound
        wpm_entropic(mu, cost, m, eps, lam=lam * 0.99, method="scaling")
