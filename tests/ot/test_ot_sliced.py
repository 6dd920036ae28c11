"""Sliced W2 by Monte-Carlo directions: POT agreement, gradients, 1-D case, rng, MC limit."""

import numpy as np
import ot
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import (
    random_directions,
    sliced_w2_squared,
    sliced_w2_squared_with_grad,
    w2_squared_1d,
    w2_squared_1d_with_grad,
)


@pytest.fixture
def clouds():
    rng = np.random.default_rng(21)
    return rng.normal(size=(40, 3)), rng.standard_t(4, size=(27, 3)) + 0.5


def _weights(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n), rng.random(m)
    return a, b * (a.sum() / b.sum())  # equal total mass, not normalised to one


def _per_direction_reference(x, y, theta, a=None, b=None):
    """Mean over directions of POT's 1-D W2^2 of the projections (no POT sliced code)."""
    u = theta / np.linalg.norm(theta, axis=1, keepdims=True)
    return float(np.mean([ot.wasserstein_1d(x @ t, y @ t, a, b, p=2) for t in u]))


# --- agreement with POT on the same directions ------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_pot_sliced_on_fixed_directions(clouds, weighted):
    x, y = clouds
    a, b = _weights(40, 27, 1) if weighted else (None, None)
    theta = random_directions(3, n_projections=25, rng=4)
    ours = sliced_w2_squared(x, y, a=a, b=b, directions=theta)
    # POT's `projections` is (d, L) and POT returns the square root of the estimator
    pot = ot.sliced_wasserstein_distance(x, y, a, b, projections=theta.T, p=2) ** 2
    assert ours == pytest.approx(pot, rel=1e-12)
    assert ours == pytest.approx(_per_direction_reference(x, y, theta, a, b), rel=1e-12)


def test_matches_pot_on_pots_own_random_directions(clouds):
    x, y = clouds
    value, log = ot.sliced_wasserstein_distance(x, y, n_projections=30, seed=7, log=True)
    ours = sliced_w2_squared(x, y, directions=np.asarray(log["projections"]).T)
    assert ours == pytest.approx(value**2, rel=1e-12)


@pytest.mark.parametrize("n,m", [(1, 1), (1, 9), (12, 5), (33, 70)])
def test_unequal_sizes_weighted_and_uniform(n, m):
    rng = np.random.default_rng(n * 1000 + m)
    x, y = rng.normal(size=(n, 4)), rng.normal(size=(m, 4)) * 2.0
    theta = random_directions(4, n_projections=11, rng=n + m)
    assert sliced_w2_squared(x, y, directions=theta) == pytest.approx(
        _per_direction_reference(x, y, theta), rel=1e-11, abs=1e-14)
    a, b = _weights(n, m, n + 2 * m)
    assert sliced_w2_squared(x, y, a=a, b=b, directions=theta) == pytest.approx(
        _per_direction_reference(x, y, theta, a, b), rel=1e-11, abs=1e-14)


def test_uniform_fast_path_equals_weighted_path(clouds):
    # a = b = None uses one shared rank coupling; explicit uniform weights use the
    # per-direction weighted merge: the two must agree (values and gradients)
    x, y = clouds
    theta = random_directions(3, n_projections=9, rng=0)
    v0, gx0, gy0 = sliced_w2_squared_with_grad(x, y, directions=theta)
    v1, gx1, gy1 = sliced_w2_squared_with_grad(
        x, y, a=np.full(40, 1 / 40), b=np.full(27, 1 / 27), directions=theta)
    assert v0 == pytest.approx(v1, rel=1e-12)
    np.testing.assert_allclose(gx0, gx1, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gy0, gy1, rtol=1e-10, atol=1e-14)


def test_directions_are_normalised(clouds):
    x, y = clouds
    theta = random_directions(3, n_projections=6, rng=2)
    scaled = theta * np.array([0.1, 3.0, 1.0, 7.5, 0.5, 2.0])[:, None]
    assert sliced_w2_squared(x, y, directions=scaled) == pytest.approx(
        sliced_w2_squared(x, y, directions=theta), rel=1e-12)


# --- gradients ---------------------------------------------------------------------------


def _central_differences(f, z, h):
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[idx] = h
        g[idx] = (f(z + e) - f(z - e)) / (2 * h)
    return g


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n,m,d", [(9, 6, 3), (14, 21, 2)])
def test_gradient_matches_central_finite_differences(n, m, d, weighted):
    rng = np.random.default_rng(100 * n + 10 * m + d + weighted)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d)) + 0.3
    a, b = _weights(n, m, n * m) if weighted else (None, None)
    theta = random_directions(d, n_projections=7, rng=n)
    value, gx, gy = sliced_w2_squared_with_grad(x, y, a=a, b=b, directions=theta)
    assert gx.shape == (n, d) and gy.shape == (m, d)
    assert value == sliced_w2_squared(x, y, a=a, b=b, directions=theta)
    # the estimator is quadratic while no projected rank changes: a step of h moves
    # a projection by at most h, far below the smallest gap between projections
    h = 1e-6
    for pts in (x @ theta.T, y @ theta.T):
        assert np.min(np.diff(np.sort(pts, axis=0), axis=0)) > 10 * h
    fd_x = _central_differences(
        lambda z: sliced_w2_squared(z, y, a=a, b=b, directions=theta), x, h)
    fd_y = _central_differences(
        lambda z: sliced_w2_squared(x, z, a=a, b=b, directions=theta), y, h)
    np.testing.assert_allclose(gx, fd_x, atol=1e-7)
    np.testing.assert_allclose(gy, fd_y, atol=1e-7)
    # translating both clouds leaves SW unchanged: the gradients sum to zero
    np.testing.assert_allclose(gx.sum(axis=0) + gy.sum(axis=0), 0.0, atol=1e-12)


def test_gradient_is_chain_rule_through_1d_gradients(clouds):
    # paper 004, Remark 4.2: the sliced gradient averages Prop. 3.2 over directions
    x, y = clouds
    a, b = _weights(40, 27, 5)
    theta = random_directions(3, n_projections=5, rng=9)
    _, gx, gy = sliced_w2_squared_with_grad(x, y, a=a, b=b, directions=theta)
    ref_x, ref_y = np.zeros_like(x), np.zeros_like(y)
    for t in theta:
        _, g1x, g1y = w2_squared_1d_with_grad(x @ t, y @ t, a=a, b=b)
        ref_x += np.outer(g1x, t) / len(theta)
        ref_y += np.outer(g1y, t) / len(theta)
    np.testing.assert_allclose(gx, ref_x, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gy, ref_y, rtol=1e-10, atol=1e-14)


def test_zero_weight_points_get_no_gradient(clouds):
    x, y = clouds
    a, b = _weights(40, 27, 3)
    a[[0, 7]] = 0.0
    b *= a.sum() / b.sum()
    # put the zero-weight points at the extremes of every projection too
    x = x.copy()
    x[0], x[7] = 50.0, -50.0
    _, gx, _ = sliced_w2_squared_with_grad(x, y, a=a, b=b, n_projections=20, rng=1)
    assert np.all(gx[[0, 7]] == 0.0)


# --- the 1-D case ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_dimensional_sliced_equals_exact_w2(seed):
    # in 1-D every direction is +1 or -1 and W2 is invariant under reflection
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(23, 1)), rng.gamma(2.0, size=(31, 1))
    v, gx, gy = sliced_w2_squared_with_grad(x, y, n_projections=8, rng=seed)
    ref, ref_gx, ref_gy = w2_squared_1d_with_grad(x, y)
    assert v == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(gx[:, 0], ref_gx, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gy[:, 0], ref_gy, rtol=1e-12, atol=1e-15)
    a, b = _weights(23, 31, seed)
    assert sliced_w2_squared(x, y, a=a, b=b, n_projections=3, rng=seed) == pytest.approx(
        w2_squared_1d(x, y, a=a, b=b), rel=1e-12)
    assert sliced_w2_squared(x, y, directions=np.array([[-2.0]])) == pytest.approx(
        ref, rel=1e-12)


# --- explicit randomness -----------------------------------------------------------------


def test_same_seed_same_value_different_seeds_differ(clouds):
    x, y = clouds
    v = sliced_w2_squared(x, y, n_projections=10, rng=123)
    assert sliced_w2_squared(x, y, n_projections=10, rng=123) == v
    assert sliced_w2_squared(x, y, n_projections=10, rng=np.random.default_rng(123)) == v
    assert sliced_w2_squared_with_grad(x, y, n_projections=10, rng=123)[0] == v
    others = {sliced_w2_squared(x, y, n_projections=10, rng=s) for s in range(124, 129)}
    assert v not in others and len(others) == 5
    # the directions are those of random_directions with the same seed; explicit
    # directions are renormalised, which may move the last bit (norms are 1 +- 1 ulp)
    theta = random_directions(3, n_projections=10, rng=123)
    np.testing.assert_allclose(sliced_w2_squared(x, y, directions=theta), v, rtol=1e-13)


def test_generator_is_consumed_and_global_state_is_not_used(clouds):
    x, y = clouds
    gen = np.random.default_rng(5)
    first = sliced_w2_squared(x, y, n_projections=10, rng=gen)
    second = sliced_w2_squared(x, y, n_projections=10, rng=gen)
    assert first != second  # the generator advanced
    # numpy's legacy global generator is neither used nor advanced
    _, keys, pos, *_ = np.random.get_state()  # noqa: NPY002
    sliced_w2_squared_with_grad(x, y, n_projections=10, rng=77)
    random_directions(3, n_projections=4, rng=1)
    _, keys_after, pos_after, *_ = np.random.get_state()  # noqa: NPY002
    assert pos_after == pos and np.array_equal(keys_after, keys)


def test_random_directions_are_uniform_on_the_sphere():
    d, L = 3, 20_000
    theta = random_directions(d, n_projections=L, rng=8)
    assert theta.shape == (L, d)
    np.testing.assert_allclose(np.linalg.norm(theta, axis=1), 1.0, rtol=1e-14)
    # uniform on S^{d-1}: E theta = 0, E theta theta^T = I / d. Per-entry standard
    # errors are about 0.004 and 0.002; the tolerance 0.02 is >= 5 of them.
    np.testing.assert_allclose(theta.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose(theta.T @ theta / L, np.eye(d) / d, atol=0.02)
    np.testing.assert_array_equal(theta, random_directions(d, n_projections=L, rng=8))


# --- Monte-Carlo convergence to closed forms --------------------------------------------


def _translation_sd(delta, d):
    # theta uniform on S^{d-1}: E<theta,u>^2 = 1/d, E<theta,u>^4 = 3/(d(d+2)) for |u| = 1
    return float(delta @ delta) * np.sqrt(3.0 / (d * (d + 2)) - 1.0 / d**2)


@pytest.mark.parametrize("n_projections", [100, 1_000, 10_000])
def test_translated_cloud_converges_to_norm_squared_over_d(n_projections):
    # y = x + delta: each projected pair is a translate, W2^2 = <theta, delta>^2 exactly,
    # so SW_L = mean_l <theta_l, delta>^2 -> |delta|^2 / d with sd computed above
    d = 4
    delta = np.array([1.0, 2.0, -1.0, 0.5])
    x = np.random.default_rng(0).normal(size=(30, d))
    v = sliced_w2_squared(x, x + delta, n_projections=n_projections, rng=n_projections)
    theta = random_directions(d, n_projections=n_projections, rng=n_projections)
    assert v == pytest.approx(float(np.mean((theta @ delta) ** 2)), rel=1e-10)
    sd = _translation_sd(delta, d) / np.sqrt(n_projections)
    # 5 standard errors: false-alarm probability ~6e-7 under the CLT (< 4% by Chebyshev)
    assert abs(v - delta @ delta / d) <= 5 * sd


def test_monte_carlo_error_shrinks_like_one_over_sqrt_l():
    d = 3
    delta = np.array([1.0, -2.0, 0.5])
    x = np.random.default_rng(1).normal(size=(5, d))
    truth = delta @ delta / d

    def rms(L):
        errs = [sliced_w2_squared(x, x + delta, n_projections=L, rng=1000 * L + s) - truth
                for s in range(40)]
        return float(np.sqrt(np.mean(np.square(errs))))

    ratio = rms(20) / rms(2000)  # 10 in expectation; 40 seeds keep the RMS within ~25%
    assert 6.0 < ratio < 16.0
    assert rms(2000) == pytest.approx(_translation_sd(delta, d) / np.sqrt(2000), rel=0.4)


def _whitened(rng, n, d):
    """n standard normal draws with sample mean exactly 0 and sample covariance exactly I."""
    z = rng.normal(size=(n, d))
    z -= z.mean(axis=0)
    return z @ np.linalg.inv(np.linalg.cholesky(z.T @ z / n)).T


@pytest.mark.parametrize("sigma_x,sigma_y", [(1.0, 1.0), (1.0, 2.0)])
def test_gaussian_samples_converge_to_closed_form(sigma_x, sigma_y):
    # theta#N(m, s^2 I) = N(<theta, m>, s^2) and W2^2(N(a, s^2), N(b, t^2)) = (a-b)^2 + (s-t)^2,
    # so SW2^2 = |m1 - m2|^2 / d + (s - t)^2 (|m1 - m2|^2 / d for equal covariances).
    # Whitened samples have the exact first two moments in every direction, so what is
    # left is the Monte-Carlo error over directions (sd as in the translation test, the
    # constant (s - t)^2 adds none) plus a shape bias of order 1e-3 at these sizes.
    d = 3
    rng = np.random.default_rng(31)
    m1, m2 = np.array([0.0, 1.0, -1.0]), np.array([2.0, 0.0, 0.0])
    x = m1 + sigma_x * _whitened(rng, 2000, d)
    y = m2 + sigma_y * _whitened(rng, 1500, d)  # unequal sizes
    truth = float((m1 - m2) @ (m1 - m2)) / d + (sigma_x - sigma_y) ** 2
    L = 2000
    v = sliced_w2_squared(x, y, n_projections=L, rng=3)
    sd = _translation_sd(m1 - m2, d) / np.sqrt(L)  # 0.04 here
    # 5 sd plus the shape bias: false-alarm probability ~6e-7 under the CLT
    assert abs(v - truth) <= 5 * sd + 0.01


# --- bad input ---------------------------------------------------------------------------


def test_bad_points_raise(clouds):
    x, y = clouds
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidDataError, match="x has 1 non-finite"):
        sliced_w2_squared(bad, y, rng=0)
    bad_y = y.copy()
    bad_y[0, 0] = np.inf
    with pytest.raises(InvalidDataError, match="y has 1 non-finite"):
        sliced_w2_squared_with_grad(x, bad_y, rng=0)
    with pytest.raises(InvalidDataError, match=r"x must have shape \(n, d\)"):
        sliced_w2_squared(np.ones((4, 3, 2)), y, rng=0)
    with pytest.raises(InvalidDataError, match="y is empty"):
        sliced_w2_squared(x, np.empty((0, 3)), rng=0)
    with pytest.raises(InvalidDataError, match="same dimension d"):
        sliced_w2_squared(x, y[:, :2], rng=0)
    with pytest.raises(InvalidDataError, match="same total mass"):
        sliced_w2_squared(x, y, a=np.ones(40), b=np.ones(27), rng=0)
    with pytest.raises(InvalidDataError, match="a has length 39"):
        sliced_w2_squared(x, y, a=np.ones(39), rng=0)


def test_bad_directions_raise(clouds):
    x, y = clouds
    with pytest.raises(InvalidDataError, match=r"directions must have shape \(L, 3\)"):
        sliced_w2_squared(x, y, directions=np.ones((5, 2)))
    with pytest.raises(InvalidDataError, match="directions must be a 2-D array"):
        sliced_w2_squared(x, y, directions=np.ones(3))
    with pytest.raises(InvalidDataError, match="directions has a zero row"):
        sliced_w2_squared(x, y, directions=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(InvalidDataError, match="directions has 1 non-finite"):
        sliced_w2_squared(x, y, directions=np.array([[1.0, np.nan, 0.0]]))


@pytest.mark.parametrize("fn", [sliced_w2_squared, sliced_w2_squared_with_grad])
@pytest.mark.parametrize("value", [0, -3, 2.5, True, "10"])
def test_bad_n_projections_raise(clouds, fn, value):
    x, y = clouds
    with pytest.raises(InvalidParameterError, match="n_projections") as info:
        fn(x, y, n_projections=value, rng=0)
    assert info.value.name == "n_projections"
    with pytest.raises(InvalidParameterError, match="n_projections"):
        random_directions(3, n_projections=value, rng=0)


@pytest.mark.parametrize("fn", [sliced_w2_squared, sliced_w2_squared_with_grad])
@pytest.mark.parametrize("value", [None, -1, 1.5, True, "seed", np.random.RandomState(0)])
def test_bad_rng_raises(clouds, fn, value):
    x, y = clouds
    with pytest.raises(InvalidParameterError, match="rng") as info:
        fn(x, y, n_projections=5, rng=value)
    assert info.value.name == "rng"


def test_random_directions_bad_arguments():
    for d in (0, -1, 2.0, None):
        with pytest.raises(InvalidParameterError, match="d=") as info:
            random_directions(d, n_projections=3, rng=0)
        assert info.value.name == "d"
    for rng in (None, "x", -5, 0.5):
        with pytest.raises(InvalidParameterError, match="rng"):
            random_directions(2, n_projections=3, rng=rng)
