"""Gaussian Johnson-Lindenstrauss projections: target dimension, distortion, scaling, rng."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist

from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import gaussian_jl_matrix, jl_project, jl_target_dim


def _c(eps):
    return eps**2 / 2 - eps**3 / 3


def _pair_failure_probability(dim, eps):
    """Exact probability that one pair leaves [(1-eps), (1+eps)] times its squared distance.

    For a fixed v and G with i.i.d. N(0, 1/dim) entries, dim * |Gv|^2 / |v|^2 ~ chi^2_dim.
    """
    return float(stats.chi2.cdf((1 - eps) * dim, dim) + stats.chi2.sf((1 + eps) * dim, dim))


# --- target dimension --------------------------------------------------------------------


@pytest.mark.parametrize("n,eps", [(2, 0.5), (100, 0.1), (1000, 0.5), (10**6, 0.2)])
def test_target_dim_formulas(n, eps):
    # Dasgupta-Gupta Thm 2.1: d' = ceil(4 ln n / (eps^2/2 - eps^3/3))
    assert jl_target_dim(n, distortion=eps) == math.ceil(4 * math.log(n) / _c(eps))
    # union bound over the n(n-1)/2 pairs, each failing w.p. <= 2 exp(-d' c / 2)
    beta = 0.05
    assert jl_target_dim(n, distortion=eps, failure_probability=beta) == math.ceil(
        2 * math.log(n * (n - 1) / beta) / _c(eps))


def test_target_dim_agrees_with_scikit_learn():
    sk = pytest.importorskip("sklearn.random_projection")
    for n, eps in [(10, 0.1), (1000, 0.5), (10**4, 0.1), (10**5, 0.3)]:
        # scikit-learn truncates the same Dasgupta-Gupta bound; privot rounds up
        expected = int(sk.johnson_lindenstrauss_min_dim(n, eps=eps))
        assert expected <= jl_target_dim(n, distortion=eps) <= expected + 1


@pytest.mark.parametrize("n,eps", [(50, 0.5), (200, 0.3), (5000, 0.1)])
def test_target_dim_meets_its_stated_failure_bounds(n, eps):
    # the Chernoff tail 2 exp(-d' c / 2) bounds the exact chi-square tail, so:
    k = jl_target_dim(n, distortion=eps)
    assert _pair_failure_probability(k, eps) <= 2 * math.exp(-k * _c(eps) / 2) <= 2 / n**2
    beta = 0.01
    k = jl_target_dim(n, distortion=eps, failure_probability=beta)
    assert n * (n - 1) / 2 * _pair_failure_probability(k, eps) <= beta


def test_target_dim_monotone_and_small_n():
    assert jl_target_dim(1, distortion=0.5) == 1  # nothing to preserve
    assert jl_target_dim(1, distortion=0.5, failure_probability=0.1) == 1
    dims = [jl_target_dim(n, distortion=0.2) for n in (10, 100, 1000, 10**4)]
    assert dims == sorted(dims) and len(set(dims)) == 4
    dims = [jl_target_dim(1000, distortion=e) for e in (0.1, 0.2, 0.4, 0.8)]
    assert dims == sorted(dims, reverse=True)
    assert jl_target_dim(1000, distortion=0.2, failure_probability=1e-6) > jl_target_dim(
        1000, distortion=0.2, failure_probability=0.5)


# --- distortion of pairwise distances ----------------------------------------------------


def _points(n, d, seed):
    # anisotropic clusters: distances on very different scales
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=5.0, size=(4, d))
    return centres[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d)) * rng.random(d)


def _bad_pair_fraction(x, y, eps):
    ratio = pdist(y, "sqeuclidean") / pdist(x, "sqeuclidean")
    return float(np.mean((ratio < 1 - eps) | (ratio > 1 + eps)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_distances_preserved_at_default_dim(seed):
    n, d, eps = 200, 1000, 0.3
    x = _points(n, d, seed)
    dim = jl_target_dim(n, distortion=eps)  # 589
    # the matrix must be independent of the data: never the seed that drew the points
    frac = _bad_pair_fraction(x, jl_project(x, dim=dim, rng=1000 + seed), eps)
    # Each pair fails w.p. p = 1.1e-6 (exact chi-square; the Dasgupta-Gupta bound is
    # 2/n^2 = 5e-5), so E[#bad pairs] = 19900 p = 0.023. The threshold of 1e-3 of the
    # pairs (20 pairs) false-alarms w.p. <= 0.023 / 20 ~ 1e-3 by Markov (<= 5% using
    # only the Dasgupta-Gupta bound).
    assert _pair_failure_probability(dim, eps) < 2e-6
    assert frac <= 1e-3


def test_all_pairs_preserved_with_failure_probability():
    n, d, eps, beta = 150, 800, 0.3, 0.01
    x = _points(n, d, 7)
    dim = jl_target_dim(n, distortion=eps, failure_probability=beta)
    # all pairs within the factor w.p. >= 1 - beta: this assertion false-alarms w.p.
    # <= beta = 1% by the union bound (<= 1e-4 with the exact chi-square tail)
    for seed in (10, 11):
        assert _bad_pair_fraction(x, jl_project(x, dim=dim, rng=seed), eps) == 0.0


def test_failure_rate_matches_chi_square_at_a_small_dim():
    # at a small target dim failures are common, and their rate is the exact chi-square
    # tail: columns of G are |G e_j|^2, i.i.d. chi^2_dim / dim over the basis vectors
    dim, d, eps = 20, 20_000, 0.3
    g = gaussian_jl_matrix(d, dim=dim, rng=3)
    sq = np.sum(g * g, axis=0)
    rate = float(np.mean((sq < 1 - eps) | (sq > 1 + eps)))
    p = _pair_failure_probability(dim, eps)  # about 0.33
    # binomial standard error sqrt(p (1-p) / d) = 0.0033; 5 of them: false alarm ~6e-7
    assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / d)


# --- scaling: E |G x|^2 = |x|^2 ----------------------------------------------------------


def test_entries_have_variance_one_over_dim():
    dim, d = 50, 4000
    g = gaussian_jl_matrix(d, dim=dim, rng=0)
    assert g.shape == (dim, d)
    # 200000 entries: the standard errors of mean and variance*dim are 0.0022 and 0.0032
    assert abs(g.mean()) * math.sqrt(dim) <= 0.02
    assert g.var() * dim == pytest.approx(1.0, abs=0.02)


def test_squared_norm_distribution_is_scaled_chi_square():
    dim, d = 20, 5000
    g = gaussian_jl_matrix(d, dim=dim, rng=12)
    sq = np.sum(g * g, axis=0)  # |G e_j|^2, i.i.d. chi^2_dim / dim
    # E = 1 with standard error sqrt(2 / dim / d) = 0.0045; 0.025 is > 5 of them
    assert sq.mean() == pytest.approx(1.0, abs=0.025)
    # Kolmogorov-Smirnov against chi^2_dim / dim: a p-value below 1e-3 is a false alarm
    # with probability 1e-3 when the scaling is right
    assert stats.kstest(sq * dim, stats.chi2(dim).cdf).pvalue > 1e-3


def test_expected_squared_norm_of_a_fixed_vector():
    x = np.random.default_rng(0).normal(size=(1, 30))
    norm2 = float(np.sum(x * x))
    dim, reps = 8, 2000
    ratios = np.array([float(np.sum(jl_project(x, dim=dim, rng=s) ** 2)) / norm2
                       for s in range(reps)])
    # E ratio = 1, sd of the mean = sqrt(2 / dim / reps) = 0.011; tolerance 0.055 = 5 sd
    assert ratios.mean() == pytest.approx(1.0, abs=0.055)
    assert ratios.var() == pytest.approx(2 / dim, rel=0.2)


# --- reproducibility ---------------------------------------------------------------------


def test_seeds_make_results_reproducible():
    x = _points(20, 40, 3)
    np.testing.assert_array_equal(gaussian_jl_matrix(40, dim=7, rng=5),
                                  gaussian_jl_matrix(40, dim=7, rng=5))
    np.testing.assert_array_equal(gaussian_jl_matrix(40, dim=7, rng=5),
                                  gaussian_jl_matrix(40, dim=7, rng=np.random.default_rng(5)))
    assert not np.allclose(gaussian_jl_matrix(40, dim=7, rng=5),
                           gaussian_jl_matrix(40, dim=7, rng=6))
    np.testing.assert_array_equal(jl_project(x, dim=7, rng=5), jl_project(x, dim=7, rng=5))
    np.testing.assert_allclose(jl_project(x, dim=7, rng=5),
                               x @ gaussian_jl_matrix(40, dim=7, rng=5).T, rtol=1e-14)
    gen = np.random.default_rng(9)
    assert not np.allclose(jl_project(x, dim=7, rng=gen), jl_project(x, dim=7, rng=gen))
    # numpy's legacy global generator is neither used nor advanced
    _, keys, pos, *_ = np.random.get_state()  # noqa: NPY002
    jl_project(x, dim=7, rng=1)
    gaussian_jl_matrix(40, dim=7, rng=2)
    _, keys_after, pos_after, *_ = np.random.get_state()  # noqa: NPY002
    assert pos_after == pos and np.array_equal(keys_after, keys)


def test_projection_is_linear_and_one_dimensional_input():
    x = _points(10, 6, 4)
    g = gaussian_jl_matrix(6, dim=3, rng=2)
    y = jl_project(x, dim=3, rng=2)
    np.testing.assert_allclose(y[0] - y[1], g @ (x[0] - x[1]), rtol=1e-12, atol=1e-12)
    # a 1-D array is n points in dimension 1
    assert jl_project(np.arange(5.0), dim=4, rng=0).shape == (5, 4)


# --- bad input ---------------------------------------------------------------------------


def test_target_dim_bad_arguments():
    for n in (0, -3, 2.0, True, None):
        with pytest.raises(InvalidParameterError, match="n=") as info:
            jl_target_dim(n, distortion=0.5)
        assert info.value.name == "n"
    for eps in (0, 1, -0.1, 1.5, np.nan, "0.1", True, None):
        with pytest.raises(InvalidParameterError, match="distortion") as info:
            jl_target_dim(100, distortion=eps)
        assert info.value.name == "distortion"
    for beta in (0, 1, -0.5, 2.0, np.nan, "0.1"):
        with pytest.raises(InvalidParameterError, match="failure_probability") as info:
            jl_target_dim(100, distortion=0.5, failure_probability=beta)
        assert info.value.name == "failure_probability"


def test_matrix_and_project_bad_arguments():
    for d in (0, -1, 3.0, None):
        with pytest.raises(InvalidParameterError, match="d=") as info:
            gaussian_jl_matrix(d, dim=2, rng=0)
        assert info.value.name == "d"
    for dim in (0, -2, 2.5, True):
        with pytest.raises(InvalidParameterError, match="dim") as info:
            gaussian_jl_matrix(3, dim=dim, rng=0)
        assert info.value.name == "dim"
        with pytest.raises(InvalidParameterError, match="dim"):
            jl_project(np.ones((4, 3)), dim=dim, rng=0)
    for rng in (None, -1, 0.5, "seed", np.random.RandomState(0)):
        with pytest.raises(InvalidParameterError, match="rng") as info:
            gaussian_jl_matrix(3, dim=2, rng=rng)
        assert info.value.name == "rng"
        with pytest.raises(InvalidParameterError, match="rng"):
            jl_project(np.ones((4, 3)), dim=2, rng=rng)
    with pytest.raises(InvalidDataError, match="points has 1 non-finite"):
        jl_project(np.array([[0.0, np.nan], [1.0, 2.0]]), dim=2, rng=0)
    with pytest.raises(InvalidDataError, match=r"points must have shape \(n, d\)"):
        jl_project(np.ones((2, 3, 4)), dim=2, rng=0)
    with pytest.raises(InvalidDataError, match="points is empty"):
        jl_project(np.empty((0, 3)), dim=2, rng=0)
