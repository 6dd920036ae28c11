"""Issue 27 fast paths: the value-only 1-D W2 and the subnormal-free barycenter kernel.

Both must give exactly what the slower paths give (same floats), with fixed seeds.
"""

import numpy as np
import ot
import pytest

import privot.ot._barycenter_sinkhorn as bs
from privot.ot import free_support_barycenter, quantile_coupling, w2_squared_1d

TINY = np.finfo(np.float64).tiny


# ----------------------------------------------------------------------------- 1-D W2


def _coupling_value(x, y, a=None, b=None):
    cp = quantile_coupling(x, y, a=a, b=b)
    xs, ys = np.asarray(x, float).reshape(-1), np.asarray(y, float).reshape(-1)
    diff = xs[cp.i] - ys[cp.j]
    return float(np.dot(cp.mass, diff * diff))


def _samples(seed, n, m, ties):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: many ties within and across the samples
        return rng.integers(0, 5, n).astype(float), rng.integers(-1, 4, m).astype(float)
    return rng.standard_normal(n), 1.5 * rng.standard_normal(m) + 0.3


@pytest.mark.parametrize("n, m", [(1, 1), (1, 7), (7, 1), (5, 5), (6, 4), (13, 7),
                                  (1000, 700), (999, 1001), (2048, 4096)])
@pytest.mark.parametrize("ties", [False, True])
def test_value_path_equals_coupling_path_bitwise(n, m, ties):
    for seed in range(3):
        x, y = _samples(seed, n, m, ties)
        assert w2_squared_1d(x, y) == _coupling_value(x, y)
        assert w2_squared_1d(y, x) == _coupling_value(y, x)


@pytest.mark.parametrize("n, m", [(1, 3), (4, 4), (5, 3), (7, 11), (12, 8)])
@pytest.mark.parametrize("ties", [False, True])
def test_value_path_matches_brute_force_lp(n, m, ties):
    for seed in range(4):
        x, y = _samples(10 + seed, n, m, ties)
        lp = float(ot.emd2(np.full(n, 1 / n), np.full(m, 1 / m),
                           (x[:, None] - y[None, :]) ** 2))
        assert w2_squared_1d(x, y) == pytest.approx(lp, rel=1e-12, abs=1e-14)


def test_value_path_accepts_column_vectors_and_is_invariant_to_order():
    x, y = _samples(3, 300, 170, ties=True)
    v = w2_squared_1d(x, y)
    assert w2_squared_1d(x[:, None], y[:, None]) == v
    perm = np.random.default_rng(0).permutation(x.size)
    assert w2_squared_1d(x[perm], y) == v


def test_weighted_value_still_matches_brute_force():
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 4, 9).astype(float), rng.standard_normal(6)
    a, b = rng.random(9), rng.random(6)
    a, b = a / a.sum(), b / b.sum()
    lp = float(ot.emd2(a, b, (x[:, None] - y[None, :]) ** 2))
    assert w2_squared_1d(x, y, a=a, b=b) == _coupling_value(x, y, a, b)
    assert w2_squared_1d(x, y, a=a, b=b) == pytest.approx(lp, rel=1e-12)


# ----------------------------------------------------------------------------- kernel


def _kernel_with_subnormals(f, g, cost, eps):
    """The kernel as built before issue 27 (subnormal entries kept)."""
    z = f[:, :, None] + g[:, None, :] - cost
    z /= eps
    with np.errstate(under="ignore"):
        return np.exp(z, out=z)


def test_kernel_has_no_subnormals_and_keeps_normal_entries():
    z = -np.linspace(0.0, 800.0, 4001)  # exp(z) spans normal, subnormal and zero
    cost = -z.reshape(1, 1, -1)
    got = bs._kernel(np.zeros((1, 1)), np.zeros((1, z.size)), cost, 1.0)
    ref = _kernel_with_subnormals(np.zeros((1, 1)), np.zeros((1, z.size)), cost, 1.0)
    assert np.any((ref > 0) & (ref < TINY))  # the test data does reach subnormals
    assert not np.any((got > 0) & (got < TINY))
    normal = ref >= TINY
    assert np.array_equal(got[normal], ref[normal])
    assert np.all(got[~normal] == 0.0)


def test_flushing_subnormals_leaves_the_barycenter_bitwise_unchanged(monkeypatch):
    rng = np.random.default_rng(0)
    groups = [rng.random((300, 2)) for _ in range(3)]
    pooled = np.concatenate(groups)
    init = pooled[np.random.default_rng(1).choice(pooled.shape[0], 12, replace=False)]
    seen = []

    def counting(f, g, cost, eps):
        out = _kernel_with_subnormals(f, g, cost, eps)
        seen.append(np.count_nonzero((out > 0) & (out < TINY)))
        return out

    fast = free_support_barycenter(groups, init=init, reg=1e-3, n_outer=8)
    monkeypatch.setattr(bs, "_kernel", counting)
    slow = free_support_barycenter(groups, init=init, reg=1e-3, n_outer=8)
    assert max(seen) > 0  # the unflushed kernels did hold subnormals
    assert np.array_equal(fast.support, slow.support)
    assert fast.cost == slow.cost
    assert np.array_equal(fast.history, slow.history)
