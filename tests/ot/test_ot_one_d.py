"""Closed-form 1-D W2 (paper 004, Props 3.1, 3.2): oracles, POT agreement, gradients."""

import numpy as np
import ot
import pytest

from privot.errors import InvalidDataError
from privot.ot import (
    Coupling1D,
    quantile_coupling,
    rank_coupling,
    w2_squared_1d,
    w2_squared_1d_with_grad,
)


def paper_oracle(u, v):
    """Prop. 3.1 / 3.2 of paper 004 evaluated literally with the dense n x m matrix R."""
    n, m = len(u), len(v)
    i = np.arange(1, n + 1)[:, None]
    j = np.arange(1, m + 1)[None, :]
    r = np.clip(np.minimum(i / n, j / m) - np.maximum((i - 1) / n, (j - 1) / m), 0, None)
    sigma = np.argsort(np.argsort(u, kind="stable"), kind="stable")  # rank of U_i
    tau = np.argsort(np.argsort(v, kind="stable"), kind="stable")
    rr = r[sigma][:, tau]  # R_{sigma(i), tau(j)}
    d = u[:, None] - v[None, :]
    return (rr * d**2).sum(), 2 * (rr * d).sum(axis=1), -2 * (rr * d).sum(axis=0)


@pytest.mark.parametrize("n,m", [(1, 1), (1, 7), (5, 3), (10, 15), (37, 23), (64, 64)])
def test_matches_paper_formula_and_pot(n, m):
    rng = np.random.default_rng(n * 100 + m)
    x, y = rng.normal(size=n), rng.standard_t(3, size=m) + 0.5
    value, gx, gy = w2_squared_1d_with_grad(x, y)
    ref_v, ref_gx, ref_gy = paper_oracle(x, y)
    assert value == pytest.approx(ref_v, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(gy, ref_gy, rtol=1e-10, atol=1e-13)
    lp = ot.emd2(ot.unif(n), ot.unif(m), (x[:, None] - y[None, :]) ** 2)
    assert value == pytest.approx(lp, rel=1e-9, abs=1e-12)
    assert value == pytest.approx(ot.wasserstein_1d(x, y, p=2), rel=1e-9, abs=1e-12)
    assert w2_squared_1d(x, y) == value


def test_general_weights_match_pot():
    rng = np.random.default_rng(2)
    for n, m in [(13, 29), (50, 8)]:
        x, y = rng.normal(size=n), rng.normal(size=m)
        a, b = rng.random(n), rng.random(m)
        a[3] = 0.0  # a zero-weight point is allowed and gets no mass
        b *= a.sum() / b.sum()
        value = w2_squared_1d(x, y, a=a, b=b)
        lp = ot.emd2(a, b, (x[:, None] - y[None, :]) ** 2)
        assert value == pytest.approx(lp, rel=1e-9)
        assert value == pytest.approx(ot.wasserstein_1d(x, y, a, b, p=2), rel=1e-9)
        cp = quantile_coupling(x, y, a=a, b=b)
        assert 3 not in set(cp.i.tolist())


def test_coupling_is_the_lp_plan_and_sparse():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=17), rng.normal(size=11)
    cp = quantile_coupling(x, y)
    assert isinstance(cp, Coupling1D)
    assert len(cp.mass) <= 17 + 11 - 1
    assert np.all(cp.mass > 0)
    assert cp.mass.sum() == pytest.approx(1.0, abs=1e-15)
    # monotone: both coordinates non-decreasing along the merged grid
    assert np.all(np.diff(x[cp.i]) >= 0) and np.all(np.diff(y[cp.j]) >= 0)
    dense = cp.to_dense()
    np.testing.assert_allclose(dense.sum(axis=1), 1 / 17, atol=1e-15)
    np.testing.assert_allclose(dense.sum(axis=0), 1 / 11, atol=1e-15)
    # distinct points and a strictly convex cost: the LP optimum is unique
    plan = ot.emd(ot.unif(17), ot.unif(11), (x[:, None] - y[None, :]) ** 2)
    np.testing.assert_allclose(dense, plan, atol=1e-12)


def test_rank_coupling_exact_on_integer_grid():
    # n = 2, m = 3: grid {3, 6} U {2, 4, 6} -> pieces (0,2], (2,3], (3,4], (4,6]
    ri, rj, mass = rank_coupling(np.array([3, 6]), np.array([2, 4, 6]))
    assert ri.tolist() == [0, 0, 1, 1]
    assert rj.tolist() == [0, 1, 1, 2]
    assert mass.tolist() == [2, 1, 1, 2]
    ri, rj, mass = rank_coupling(np.arange(1, 5) * 4, np.arange(1, 5) * 4)
    assert ri.tolist() == rj.tolist() == [0, 1, 2, 3] and mass.tolist() == [4] * 4


@pytest.mark.parametrize("n,m", [(8, 5), (20, 31)])
def test_gradients_match_finite_differences(n, m):
    rng = np.random.default_rng(n + m)
    x, y = rng.normal(size=n), rng.normal(size=m) * 1.5  # continuous draws: no ties
    _, gx, gy = w2_squared_1d_with_grad(x, y)
    h = 1e-6  # far below the smallest gap within each sample, so ranks do not change
    # (W2^2 is quadratic while the ranks within x and within y are fixed)
    assert min(np.min(np.diff(np.sort(x))), np.min(np.diff(np.sort(y)))) > 10 * h
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        fd = (w2_squared_1d(x + e, y) - w2_squared_1d(x - e, y)) / (2 * h)
        assert gx[k] == pytest.approx(fd, abs=1e-7)
    for k in range(m):
        e = np.zeros(m)
        e[k] = h
        fd = (w2_squared_1d(x, y + e) - w2_squared_1d(x, y - e)) / (2 * h)
        assert gy[k] == pytest.approx(fd, abs=1e-7)
    # translation invariance: the gradients sum to zero
    assert gx.sum() + gy.sum() == pytest.approx(0.0, abs=1e-12)


def test_gradient_at_ties_is_a_valid_subgradient():
    x = np.array([0.0, 0.0, 1.0])
    y = np.array([0.5, 2.0])
    value, gx, gy = w2_squared_1d_with_grad(x, y)
    assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gy))
    # the stable sort sends the first 0.0 first; the directional derivative along
    # the tie-consistent direction matches
    assert value == pytest.approx(paper_oracle(x, y)[0])
    np.testing.assert_allclose(gx, paper_oracle(x, y)[1])


def test_large_unequal_sizes_match_pot_without_dense_matrix():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=200_000), rng.gamma(2.0, size=150_001)
    # a dense plan would need 3e10 entries; the sparse coupling has <= n + m - 1
    cp = quantile_coupling(x, y)
    assert len(cp.mass) <= 350_000
    assert w2_squared_1d(x, y) == pytest.approx(ot.wasserstein_1d(x, y, p=2), rel=1e-8)


def test_column_vectors_and_validation():
    x = np.array([[0.0], [1.0]])
    assert w2_squared_1d(x, np.array([0.5])) == pytest.approx(0.25)
    with pytest.raises(InvalidDataError, match="x"):
        w2_squared_1d(np.ones((3, 2)), np.ones(3))
    with pytest.raises(InvalidDataError, match="empty"):
        w2_squared_1d(np.array([]), np.ones(3))
    with pytest.raises(InvalidDataError, match="non-finite"):
        w2_squared_1d(np.array([0.0, np.nan]), np.ones(3))
    with pytest.raises(InvalidDataError, match="same total mass"):
        w2_squared_1d(np.ones(2), np.ones(3), a=np.ones(2), b=np.ones(3))
    with pytest.raises(InvalidDataError, match="non-negative"):
        w2_squared_1d(np.ones(2), np.ones(2), a=np.array([2.0, -1.0]), b=np.ones(2) / 2)
