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


def test_blas_threads_rule_and_scope(monkeypatch):
    """One BLAS thread for the products of a 20 x 20 grid, more only for large products
    (shared among the workers); the limit holds inside the solve and is undone after."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rule = entropic_module.blas_threads
    cpus = entropic_module._usable_cpus()
    work = entropic_module.BLAS_THREAD_WORK
    assert rule(256, 400, 400) == max(1, min(cpus // 2, 256 * 400 * 400 // work))
    assert rule(256, 400, 400) == 1 or cpus >= 4  # at most half the CPUs
    assert rule(256, 1600, 1600) == max(1, min(cpus // 2, 256 * 1600 * 1600 // work))
    assert rule(256, 1600, 1600, workers=cpus) == 1
    assert rule(3, 400, 400) == 1

    def blas() -> list[int]:
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]

    seen: list[int] = []
    real = entropic_module._solve_chunk_scaling

    def spy(*args, **kwargs):
        seen.extend(blas())
        return real(*args, **kwargs)

    monkeypatch.setattr(entropic_module, "_solve_chunk_scaling", spy)
    pts = _grid(20, 20)
    cost = cost_matrix(pts, pts)
    before = blas()
    wpm_entropic(_inputs(2, 400, 3), cost, np.full(400, 1 / 400), 2.0, lam=0.01 * cost.max(),
                 tol=0.0, max_iter=3, kernel="dense")
    assert seen and set(seen) == {1}
    assert blas() == before


def test_scaling_failure_falls_back_to_the_log_domain(monkeypatch):
    """Users whose linear-scale iterate leaves the float range are redone, each alone,
    in the log domain (here: every user)."""
    rng = np.random.default_rng(9)
    cost = cost_matrix(rng.random((10, 2)), rng.random((10, 2)))
    mu = _inputs(10, 10, 5)
    m = np.full(10, 0.1)
    lam = 0.05 * cost.max()
    ref = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=20, method="banded")

    def fail(mu, *args, **kwargs):
        return np.ones(mu.shape[0], dtype=bool)

    monkeypatch.setattr(entropic_module, "_solve_chunk_scaling", fail)
    res = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=20)
    assert res.method == "banded"
    _agree(res, ref, 1e-13)
    for i in range(mu.shape[0]):  # each alone: exactly the user's own log-domain run
        solo = wpm_entropic(mu[i], cost, m, 2.0, lam=lam, tol=0.0, max_iter=20,
                            method="banded")
        np.testing.assert_array_equal(res.nu[i], solo.nu)


# -- rows are independent (issue 23, item 4) ---------------------------------------------
#
# A user's result may depend on public quantities (parameters, the chunk's size and the
# user's position in it, which fix how BLAS rounds a product) but never on another user's
# data: a batch whose other rows change gives every kept row the same bits.

def _row_independence_cases():
    pts = _grid(6, 6)
    dense = cost_matrix(pts, pts)  # euclidean p = 1: dense kernel
    sep = cost_matrix(pts, pts, metric="sqeuclidean")  # separable kernel
    m = np.full(36, np.exp(0.2) / 36)
    return {
        "scaling-dense": (dense, m, {"lam": 0.01 * dense.max()}, "scaling"),
        "scaling-separable": (sep, m, {"lam": 0.01 * sep.max(), "kernel": "separable"},
                              "scaling-separable"),
        "banded": (dense, m, {"lam": 0.001 * dense.max()}, "banded"),
        "direct": (dense, m, {"lam": 0.001 * dense.max(), "method": "direct"}, "direct"),
    }


def _other_rows(rng: np.random.Generator, n: int, k: int, trial: int) -> np.ndarray:
    if trial % 3 == 0:
        return np.eye(k)[rng.integers(0, k, n)]  # Diracs
    if trial % 3 == 1:
        return rng.dirichlet(np.full(k, 0.05), size=n)  # sparse, far from the kept rows
    mu = rng.dirichlet(np.full(k, 5.0), size=n)  # spread, with tiny masses
    mu[:, ::5] = 1e-250
    return mu / mu.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("case", ["scaling-dense", "scaling-separable", "banded", "direct"])
def test_other_users_data_never_changes_a_users_result(case, monkeypatch):
    """Issue 23, item 4: a user's nu is bit-identical whatever the other users of the
    batch hold (same batch size and position). Before the fix the warm-started scaling
    projection stepped rows it had already accepted whenever most rows were open, and
    refreshed the statuses of every row or only of the changed ones depending on how
    many had changed: other users' data moved a user's nu in the last bits."""
    cost, m, kwargs, method = _row_independence_cases()[case]
    k = cost.shape[0]
    rng = np.random.default_rng(21)
    kept = _inputs(22, k, 6)
    kept[2] = 0.0
    kept[2, [0, 35]] = [1 - 1e-200, 1e-200]  # a huge dynamic range
    where = np.array([0, 7, 13, 20, 31, 39])  # the kept users' positions in a batch of 40
    others = np.setdiff1d(np.arange(40), where)
    repaired = []
    real_project = entropic_module.project_log
    monkeypatch.setattr(entropic_module, "project_log",
                        lambda *a: repaired.append(a[0].shape[0]) or real_project(*a))
    first = None
    for trial in range(6):
        batch = np.empty((40, k))
        batch[where] = kept
        batch[others] = _other_rows(rng, others.size, k, trial)
        res = wpm_entropic(batch, cost, m, 2.0, tol=0.0, max_iter=40, **kwargs)
        assert res.method == method
        if first is None:
            first = res.nu[where]
        np.testing.assert_array_equal(res.nu[where], first)
    if case == "scaling-dense":  # the warm start misses: Newton steps and sorted solves
        assert repaired, "the test should reach the projection's sorted solve"


def test_banded_or_direct_is_chosen_per_row(monkeypatch):
    """A row whose dynamic range needs too many band pairs is computed directly, alone;
    before, one such row sent every row of the product to the direct path."""
    pts = _grid(5, 5)
    cost = cost_matrix(pts, pts)
    m = np.full(25, 1 / 25)
    lam = 0.001 * cost.max()
    monkeypatch.setattr(entropic_module, "MAX_BAND_PAIRS", 6)  # 3 bands here: depth >= 2
    deep = _inputs(23, 25, 8)  # row 0, a Dirac: its log v spans several bands
    shallow = deep.copy()
    shallow[0] = 1 / 25
    base = wpm_entropic(shallow, cost, m, 2.0, lam=lam, tol=0.0, max_iter=30)
    assert base.method == "banded"
    res = wpm_entropic(deep, cost, m, 2.0, lam=lam, tol=0.0, max_iter=30)
    assert res.method == "banded+direct"
    np.testing.assert_array_equal(res.nu[1:], base.nu[1:])
    ref = wpm_entropic(deep, cost, m, 2.0, lam=lam, tol=0.0, max_iter=30, method="direct")
    np.testing.assert_allclose(res.nu, ref.nu, atol=1e-12, rtol=0)


def _poison_kernels(monkeypatch, *, scaling: bool, row: int = 2):
    """Make row ``row`` of every batched kernel product of one domain (``scaling``: the
    linear-scale products, else the log-domain ones) NaN, as for a user whose iterate
    leaves the float range; single-row solves are left alone."""
    real = entropic_module._Kernels.apply

    def apply(self, x, *, transpose, cost=False, linear=False):
        out = real(self, x, transpose=transpose, cost=cost, linear=linear)
        if linear == scaling and x.shape[0] > 1:
            out = np.array(out)
            out[row] = np.nan
        return out

    monkeypatch.setattr(entropic_module._Kernels, "apply", apply)


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
def test_a_non_finite_scaling_row_is_redone_alone(metric, monkeypatch):
    pts = _grid(5, 5)
    cost = cost_matrix(pts, pts, metric=metric)
    m = np.full(25, np.exp(0.3) / 25)
    lam = 0.01 * cost.max()
    mu = _inputs(24, 25, 9)
    clean = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=30)
    assert clean.method.startswith("scaling")
    _poison_kernels(monkeypatch, scaling=True)
    res = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=30)
    keep = np.arange(9) != 2
    np.testing.assert_array_equal(res.nu[keep], clean.nu[keep])
    np.testing.assert_array_equal(res.transport_cost[keep], clean.transport_cost[keep])
    solo = wpm_entropic(mu[2], cost, m, 2.0, lam=lam, tol=0.0, max_iter=30, method="banded")
    np.testing.assert_array_equal(res.nu[2], solo.nu)  # alone, in the log domain
    assert not np.any(res.failed) and "banded" in res.method


def test_a_non_finite_log_domain_row_is_flagged_alone(monkeypatch):
    from privot.errors import ConvergenceError

    pts = _grid(5, 5)
    cost = cost_matrix(pts, pts)
    m = np.full(25, 1 / 25)
    lam = 0.002 * cost.max()
    mu = _inputs(25, 25, 7)
    clean = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=25, method="banded")
    _poison_kernels(monkeypatch, scaling=False)
    with pytest.raises(ConvergenceError, match="1 of 7 users"):
        wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=25, method="banded")
    res = wpm_entropic(mu, cost, m, 2.0, lam=lam, tol=0.0, max_iter=25, method="banded",
                       on_failure="flag")
    assert res.failed.tolist() == [i == 2 for i in range(7)]
    assert np.all(np.isnan(res.nu[2]))
    keep = np.arange(7) != 2
    np.testing.assert_array_equal(res.nu[keep], clean.nu[keep])
    with pytest.raises(InvalidParameterError):
        wpm_entropic(mu, cost, m, 2.0, lam=lam, on_failure="ignore")


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
