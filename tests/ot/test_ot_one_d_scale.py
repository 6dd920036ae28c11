"""Closed-form 1-D W2 at scale: linear memory (no n x m matrix), merging, weighted gradients.

Complements ``test_ot_one_d.py`` (paper oracle, POT agreement, uniform-weight gradients).
"""

import tracemalloc

import numpy as np
import ot
import pytest

from privot.ot import quantile_coupling, rank_coupling, w2_squared_1d, w2_squared_1d_with_grad

#: Peak bytes allowed per input point (n + m). Measured: about 61 (uniform) and 59
#: (weighted) bytes per point, i.e. fewer than eight float64 words. A dense n x m plan
#: at the sizes below would need 8 n m bytes = 5.6e12 bytes.
BYTES_PER_POINT = 128


def _peak_bytes(fn, *args, **kwargs):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tracemalloc_sees_numpy_allocations():
    # the instrument of the memory tests: numpy buffers are reported to tracemalloc
    peak = _peak_bytes(lambda: np.ones((2000, 2000)).sum())
    assert peak >= 2000 * 2000 * 8


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(2024)
    n, m = 10**6, 7 * 10**5
    x, y = rng.normal(size=n), rng.gamma(2.0, size=m)
    a, b = rng.random(n), rng.random(m)
    return x, y, a, b * (a.sum() / b.sum())


def test_million_points_without_dense_matrix_uniform(big):
    x, y, _, _ = big
    n, m = x.size, y.size
    bound = BYTES_PER_POINT * (n + m)  # 218 MB, against 5.6 TB for the dense plan
    assert _peak_bytes(w2_squared_1d, x, y) < bound
    assert _peak_bytes(w2_squared_1d_with_grad, x, y) < bound
    cp = quantile_coupling(x, y)
    assert len(cp.mass) <= n + m - 1
    assert w2_squared_1d(x, y) == pytest.approx(ot.wasserstein_1d(x, y, p=2), rel=1e-8)


def test_million_points_without_dense_matrix_weighted(big):
    x, y, a, b = big
    bound = BYTES_PER_POINT * (x.size + y.size)
    assert _peak_bytes(w2_squared_1d_with_grad, x, y, a=a, b=b) < bound
    assert w2_squared_1d(x, y, a=a, b=b) == pytest.approx(
        ot.wasserstein_1d(x, y, a, b, p=2), rel=1e-8)


def test_peak_memory_grows_linearly():
    rng = np.random.default_rng(1)
    peaks = []
    for n in (100_000, 200_000, 400_000):
        x, y = rng.normal(size=n), rng.normal(size=7 * n // 10)
        peaks.append(_peak_bytes(w2_squared_1d_with_grad, x, y))
    # doubling n + m doubles the peak (a quadratic algorithm would quadruple it)
    for small, large in zip(peaks, peaks[1:], strict=False):
        assert 1.8 < large / small < 2.2


# --- the merge of the two quantile grids -------------------------------------------------


def _brute_force_rank_coupling(cum_a, cum_b):
    grid = np.array(sorted(set(cum_a.tolist()) | set(cum_b.tolist())))
    grid = grid[grid > 0]
    mass = np.diff(np.concatenate(([0], grid)))
    ri = [min(i for i, v in enumerate(cum_a) if v >= t) for t in grid]
    rj = [min(j for j, v in enumerate(cum_b) if v >= t) for t in grid]
    return np.array(ri), np.array(rj), mass


@pytest.mark.parametrize("seed", range(6))
def test_rank_coupling_matches_brute_force_with_repeated_grid_values(seed):
    # integer weights with zeros: repeated cumulative values inside and across the grids
    rng = np.random.default_rng(seed)
    n, m = rng.integers(1, 30, size=2)
    wa = rng.integers(0, 4, size=n)
    wa[-1] += 1
    wb = rng.multinomial(wa.sum(), np.ones(m) / m)
    cum_a, cum_b = np.cumsum(wa), np.cumsum(wb)
    ri, rj, mass = rank_coupling(cum_a, cum_b)
    ref = _brute_force_rank_coupling(cum_a, cum_b)
    np.testing.assert_array_equal(ri, ref[0])
    np.testing.assert_array_equal(rj, ref[1])
    np.testing.assert_array_equal(mass, ref[2])
    assert mass.sum() == wa.sum() and np.all(mass > 0)
    # every piece lies in an atom of positive weight
    assert np.all(wa[ri] > 0) and np.all(wb[rj] > 0)


# --- weighted inputs: gradients and zero weights -----------------------------------------


@pytest.mark.parametrize("n,m", [(7, 12), (25, 9)])
def test_weighted_gradients_match_finite_differences(n, m):
    rng = np.random.default_rng(10 * n + m)
    x, y = rng.normal(size=n), rng.normal(size=m) + 0.5
    a, b = rng.random(n), rng.random(m)
    b *= a.sum() / b.sum()
    value, gx, gy = w2_squared_1d_with_grad(x, y, a=a, b=b)
    assert value == pytest.approx(ot.emd2(a, b, (x[:, None] - y[None, :]) ** 2), rel=1e-9)
    h = 1e-6  # below every gap within a sample: the coupling is fixed, W2^2 quadratic
    assert min(np.min(np.diff(np.sort(x))), np.min(np.diff(np.sort(y)))) > 10 * h
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        fd = (w2_squared_1d(x + e, y, a=a, b=b) - w2_squared_1d(x - e, y, a=a, b=b)) / (2 * h)
        assert gx[k] == pytest.approx(fd, abs=1e-7)
    for k in range(m):
        e = np.zeros(m)
        e[k] = h
        fd = (w2_squared_1d(x, y + e, a=a, b=b) - w2_squared_1d(x, y - e, a=a, b=b)) / (2 * h)
        assert gy[k] == pytest.approx(fd, abs=1e-7)
    # Prop. 3.2 with weights: grad_x[i] = 2 sum_j R_ij (x_i - y_j) and R has row sums a
    dense = quantile_coupling(x, y, a=a, b=b).to_dense()
    np.testing.assert_allclose(gx, 2 * (a * x - dense @ y), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(gy, 2 * (b * y - dense.T @ x), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", range(40))
def test_zero_weight_points_at_the_ends_get_no_mass(seed):
    # Regression: cumsum (sequential) and sum (pairwise) can differ by an ulp, which
    # used to hand an ulp-sized piece of mass to a zero-weight point sorted last.
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=50), rng.normal(size=30)
    a, b = rng.random(50), rng.random(30)
    zeros_x = [int(np.argmax(x)), int(np.argmin(x))]
    zero_y = int(np.argmax(y))
    a[zeros_x] = 0.0
    b[zero_y] = 0.0
    b *= a.sum() / b.sum()
    cp = quantile_coupling(x, y, a=a, b=b)
    assert not set(zeros_x) & set(cp.i.tolist())
    assert zero_y not in set(cp.j.tolist())
    assert np.all(np.diff(x[cp.i]) >= 0) and np.all(np.diff(y[cp.j]) >= 0)
    _, gx, gy = w2_squared_1d_with_grad(x, y, a=a, b=b)
    assert np.all(gx[zeros_x] == 0.0) and gy[zero_y] == 0.0
