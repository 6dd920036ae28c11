"""Tests of privot.privacy.noise: exact samplers, the 2**-k grid, entropy, bad input.

Statistical tests use fixed seeds: a seeded ``numpy.random.Generator``, and
:func:`secure_bits.secure_source`, the production OS-CSPRNG source class fed a seeded
stream of raw bytes, so that the code path fit for publication is the one tested
(``tests/privacy/test_noise_secure_path.py`` covers every word width and branch of that
path). Each asserts a p-value above ``ALPHA = 1e-5``: for a
correct sampler and a fresh seed the false-alarm rate of one assertion is 1e-5, and of
the whole file (about 250 such assertions, counting parametrisations and the two
sources) below 0.3% by the union bound; with the fixed seeds the outcome is
deterministic. Moment checks use ``Z = 6`` standard errors (two-sided normal tail 2e-9
each).

The ``tiny_chunks`` fixture lowers the number of bits compared before the exact
continuation (16 normally) to 2, and the fine inversion level to 6 bits, so that
every slow path (lazy comparisons, double ties, certified constants) runs thousands of
times; the distributions must not change.
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy import noise
from secure_bits import secure_source, secure_sources

ALPHA = 1e-5
Z = 6.0


def chi2_pvalue(x: np.ndarray, support: np.ndarray, pmf: np.ndarray, min_expected=20.0
                ) -> float:
    """Chi-square of integer samples against ``pmf`` on ``support`` (consecutive
    integers; the mass outside is one more cell); neighbouring values are merged into
    cells expecting at least ``min_expected`` draws."""
    n = x.size
    expected = np.asarray(pmf, dtype=float) * n
    inside = x[(x >= support[0]) & (x <= support[-1])] - support[0]
    counts = np.bincount(inside, minlength=support.size)
    group = np.floor(np.cumsum(expected) / min_expected).astype(np.int64)
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    obs = np.add.reduceat(counts, starts).astype(float)
    exp = np.add.reduceat(expected, starts)
    while exp.size > 1 and exp[-1] < min_expected:  # a small last cell joins its neighbour
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    rest_o, rest_e = n - obs.sum(), n - exp.sum()
    if rest_e >= min_expected:
        obs, exp = np.append(obs, rest_o), np.append(exp, rest_e)
    else:
        obs[-1] += rest_o
        exp[-1] += rest_e
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def dlap_pmf(b: float, support: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / b)
    return (1 - q) / (1 + q) * np.exp(-np.abs(support) / b)


@pytest.fixture
def tiny_chunks(monkeypatch):
    def clear():
        for f in (noise._geometric_table, noise._abs_dlap_table, noise._gauss_tables,
                  noise._e1_threshold):
            f.cache_clear()

    clear()
    # noise is a package: each submodule that reads _LAZY_BITS holds its own binding.
    readers = [mod for name, mod in list(sys.modules.items())
               if name.startswith(noise.__name__ + ".") and hasattr(mod, "_LAZY_BITS")]
    assert readers
    for mod in readers:
        monkeypatch.setattr(mod, "_LAZY_BITS", 2)
    monkeypatch.setattr(noise._Table, "FINE", 6)
    yield
    clear()


# -- exact arithmetic behind the fast paths ----------------------------------------------


def test_exp_neg_bounds_are_certified_and_tight():
    rng = np.random.default_rng(0)
    with localcontext() as ctx:
        ctx.prec = 300  # decimal's exp is correctly rounded: 300 digits are ground truth
        for _ in range(300):
            den = int(rng.integers(1, 2**62))
            num = int(rng.integers(0, 2**62)) % (den * int(rng.choice([1, 3, 60])))
            prec = int(rng.choice([2, 16, 62, 130]))
            lo, hi = noise._exp_neg(num, den, prec)
            exact = (-(Decimal(num) / Decimal(den))).exp() * Decimal(2) ** prec
            assert Decimal(lo) <= exact <= Decimal(hi)
            assert hi - lo <= 2
    assert noise._exp_neg(0, 5, 10) == (1024, 1024)


def test_dyadic_array_matches_as_integer_ratio():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.exp(rng.uniform(-6, 40, 2000)), [1.0, 0.5, 3.0, 2.0**61, 0.1]])
    num, den = noise._dyadic_array(x, "scale")
    for v, a, b in zip(x, num, den, strict=True):
        assert (int(a), int(b)) == float(v).as_integer_ratio()
    with pytest.raises(InvalidParameterError, match="scale"):
        noise._dyadic_array(np.array([1.0, 2.0**70]), "scale")
    with pytest.raises(InvalidParameterError, match="scale"):
        noise._dyadic_array(np.array([1e-30]), "scale")


# -- uniform and Bernoulli ---------------------------------------------------------------


@pytest.mark.parametrize("high", [1, 2, 3, 1000, 2**31 - 1, 2**31, 2**31 + 7, 2**62 - 57,
                                  2**62])
def test_uniform_integers_exact_bins(high):
    for src in secure_sources(11):
        n = 60_000
        x = noise.uniform_integers(high, n, rng=src)
        assert x.dtype == np.int64 and x.shape == (n,)
        assert x.min() >= 0 and x.max() < high
        if high == 1:
            assert not x.any()
            continue
        k = min(high, 16)
        cell = (x.astype(object) * k // high).astype(np.int64)
        obs = np.bincount(cell, minlength=k)
        # exact cell probabilities: #{x : floor(x k / high) = c} / high
        sizes = [(-(-(c + 1) * high // k)) - (-(-c * high // k)) for c in range(k)]
        exp = [n * s / high for s in sizes]
        assert stats.chisquare(obs, exp).pvalue > ALPHA
        # low bits too (a modulo bias would show here for large highs)
        if high >= 2**31:
            assert stats.chisquare(np.bincount(x % 8, minlength=8)).pvalue > ALPHA


def test_uniform_integers_per_entry_highs():
    highs = np.array([3, 5, 2**40 + 3, 2**62] * 20_000, dtype=np.int64)
    for src in secure_sources(12):
        x = noise.uniform_integers(highs, rng=src)
        assert x.shape == highs.shape and np.all((x >= 0) & (x < highs))
        for h in (3, 5):
            sel = x[highs == h]
            assert stats.chisquare(np.bincount(sel, minlength=h)).pvalue > ALPHA


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 3), (1, 1), (7, 4), (5, 2), (10, 3),
                                          (2**62 - 1, 2**61), (1, 2**40)])
def test_bernoulli_exp_matches_exp(num, den):
    p = math.exp(-num / den)
    for src in secure_sources(13):
        n = 100_000
        out = noise.bernoulli_exp(np.full(n, num), den, rng=src)
        assert out.dtype == bool and out.shape == (n,)
        k = int(out.sum())
        if p == 1.0:
            assert k == n
        else:
            assert stats.binomtest(k, n, p).pvalue > ALPHA


def test_bernoulli_exp_broadcast_mixed_gammas():
    num = np.array([[1, 2, 3], [4, 9, 0]])
    out = noise.bernoulli_exp(num, 3, rng=np.random.default_rng(14))
    assert out.shape == (2, 3)
    big = noise.bernoulli_exp(np.tile(num.ravel(), 40_000), 3, rng=secure_source(15)).reshape(-1, 6)
    for j, g in enumerate(num.ravel()):
        assert stats.binomtest(int(big[:, j].sum()), big.shape[0],
                               math.exp(-g / 3)).pvalue > ALPHA


def test_bernoulli_exact_ratio():
    for src in secure_sources(16):
        out = noise.bernoulli(np.full(80_000, 2), 7, rng=src)
        assert stats.binomtest(int(out.sum()), out.size, 2 / 7).pvalue > ALPHA


def test_bernoulli_exp_parts_huge_integer_part_is_cheap_and_exact():
    src, _ = noise.resolve_rng(np.random.default_rng(17))
    n = 50_000
    g = np.full(n, 2**61, dtype=np.int64)
    assert not noise.bernoulli_exp_parts(src, g, np.zeros(n, np.int64),
                                         np.ones(n, np.int64)).any()
    g = np.ones(n, dtype=np.int64)
    out = noise.bernoulli_exp_parts(src, g, np.full(n, 1, np.int64), np.full(n, 2, np.int64))
    assert stats.binomtest(int(out.sum()), n, math.exp(-1.5)).pvalue > ALPHA


# -- geometric and discrete Laplace ------------------------------------------------------


@pytest.mark.parametrize("b", [0.2, 1.0, 7.5, 127.9, 128.0, 1000.0, 40_000.3])
def test_geometric_pmf(b):
    for src in secure_sources(21):
        n = 150_000
        x = noise.geometric(b, n, rng=src)
        assert x.dtype == np.int64 and x.min() >= 0
        support = np.arange(0, int(25 * b) + 3)
        q = math.exp(-1 / b)
        pmf = (1 - q) * q ** support.astype(float)
        assert chi2_pvalue(x, support, pmf) > ALPHA
        mean = q / (1 - q)
        sd = math.sqrt(q) / (1 - q)
        assert abs(x.mean() - mean) < Z * sd / math.sqrt(n) + 1e-12


@pytest.mark.parametrize("b", [0.05, 0.4, 1.0, 3.3, 63.9, 127.0, 128.0, 999.5, 54_321.0])
def test_discrete_laplace_pmf_variance_and_zero(b):
    for src in secure_sources(22):
        n = 150_000
        x = noise.discrete_laplace(b, n, rng=src)
        assert x.dtype == np.int64 and x.shape == (n,)
        lim = int(25 * b) + 3
        support = np.arange(-lim, lim + 1)
        assert chi2_pvalue(x, support, dlap_pmf(b, support)) > ALPHA
        q = math.exp(-1 / b)
        p0 = (1 - q) / (1 + q)
        assert stats.binomtest(int(np.sum(x == 0)), n, p0).pvalue > ALPHA
        var = 2 * q / (1 - q) ** 2  # closed form
        pmf = dlap_pmf(b, support)
        assert float(np.sum(pmf * support.astype(float) ** 2)) == pytest.approx(var, rel=1e-6)
        mu4 = float(np.sum(pmf * support.astype(float) ** 4))
        # the sample second moment has standard error sqrt((mu4 - var^2) / n)
        assert abs(np.mean(x.astype(float) ** 2) - var) < Z * math.sqrt((mu4 - var**2) / n)
        # symmetric
        nz = x[x != 0]
        if nz.size:
            assert stats.binomtest(int(np.sum(nz > 0)), nz.size, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("b", [2.0**40 * (1 + 2.0**-20), 2.0**56 + 2.0**5])
def test_discrete_laplace_huge_scales_match_continuous_laplace(b):
    # |X| / b is Exp(1) up to O(1/b): a KS test on 100k draws cannot see the lattice.
    for src in secure_sources(23):
        x = noise.discrete_laplace(b, 100_000, rng=src)
        assert stats.kstest(x / b, "laplace").pvalue > ALPHA


def test_discrete_laplace_per_entry_scales_grouped_and_generic():
    # two distinct scales: grouped fast path
    scales = np.repeat([0.7, 300.0], 60_000)
    x = noise.discrete_laplace(scales, rng=secure_source(24))
    for b in (0.7, 300.0):
        sel = x[scales == b]
        support = np.arange(-int(25 * b) - 3, int(25 * b) + 4)
        assert chi2_pvalue(sel, support, dlap_pmf(b, support)) > ALPHA
    # many distinct scales (> _MAX_GROUPS): CKS Algorithm 2 element by element; the
    # scales differ by < 1e-9, far below what 40k draws can resolve
    scales = 2.5 + 1e-12 * np.arange(40_000)
    x = noise.discrete_laplace(scales, rng=secure_source(25))
    support = np.arange(-70, 71)
    assert chi2_pvalue(x, support, dlap_pmf(2.5, support)) > ALPHA
    g = noise.geometric(scales.reshape(200, 200), rng=np.random.default_rng(26))
    assert g.shape == (200, 200)
    q = math.exp(-1 / 2.5)
    support = np.arange(0, 80)
    assert chi2_pvalue(g.ravel(), support, (1 - q) * q ** support.astype(float)) > ALPHA


# -- discrete Gaussian -------------------------------------------------------------------


def dgauss_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    w = np.exp(-(support.astype(float) ** 2) / (2 * sigma * sigma))
    return w / w.sum()


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.7, 16.0, 100.0, 1000.0])
def test_discrete_gaussian_pmf_and_variance(sigma):
    for src in secure_sources(31):
        n = 120_000
        x = noise.discrete_gaussian(sigma, n, rng=src)
        assert x.dtype == np.int64 and x.shape == (n,)
        lim = int(12 * sigma) + 3
        support = np.arange(-lim, lim + 1)
        pmf = dgauss_pmf(sigma, support)
        assert chi2_pvalue(x, support, pmf) > ALPHA
        var = float(np.sum(pmf * support.astype(float) ** 2))
        mu4 = float(np.sum(pmf * support.astype(float) ** 4))
        assert abs(np.mean(x.astype(float) ** 2) - var) < Z * math.sqrt((mu4 - var**2) / n)


def test_discrete_gaussian_large_sigma_matches_normal():
    sigma = 1.37 * 2.0**20  # the scale secure_gaussian uses
    for src in secure_sources(32):
        x = noise.discrete_gaussian(sigma, 100_000, rng=src)
        assert stats.kstest(x / sigma, "norm").pvalue > ALPHA


def test_discrete_gaussian_per_entry_sigmas():
    sig = np.repeat([1.0, 5.5], 50_000)
    x = noise.discrete_gaussian(sig, rng=secure_source(33))
    for s in (1.0, 5.5):
        support = np.arange(-70, 71)
        assert chi2_pvalue(x[sig == s], support, dgauss_pmf(s, support)) > ALPHA
    sig = 1.5 + 1e-12 * np.arange(30_000)  # generic CKS Algorithm 3 path
    x = noise.discrete_gaussian(sig, rng=secure_source(34))
    support = np.arange(-20, 21)
    assert chi2_pvalue(x, support, dgauss_pmf(1.5, support)) > ALPHA


# -- the slow paths, made frequent -------------------------------------------------------


@pytest.mark.usefixtures("tiny_chunks")
def test_slow_paths_keep_the_distributions():
    n = 20_000
    rng = secure_source(41)
    for b in (0.6, 9.0, 300.0):
        x = noise.discrete_laplace(b, n, rng=rng)
        lim = int(20 * b) + 3
        support = np.arange(-lim, lim + 1)
        assert chi2_pvalue(x, support, dlap_pmf(b, support)) > ALPHA
    for b in (2.0, 500.0):
        g = noise.geometric(b, n, rng=rng)
        q = math.exp(-1 / b)
        support = np.arange(0, int(20 * b) + 3)
        assert chi2_pvalue(g, support, (1 - q) * q ** support.astype(float)) > ALPHA
    for s in (0.8, 3.0, 60.0):
        x = noise.discrete_gaussian(s, n // 2, rng=rng)
        support = np.arange(-int(10 * s) - 3, int(10 * s) + 4)
        assert chi2_pvalue(x, support, dgauss_pmf(s, support)) > ALPHA
    out = noise.bernoulli_exp(np.full(n, 5), 2, rng=rng)  # exp(-1) draws, lazily
    assert stats.binomtest(int(out.sum()), n, math.exp(-2.5)).pvalue > ALPHA


def test_lazy_uniform_decides_against_rationals_exactly():
    src = secure_source(42)
    c = Fraction(1, 3)
    hits = sum(noise._LazyUniform(src).less(
        lambda p: noise._ratio_bounds(c.numerator, c.denominator, p)) for _ in range(20_000))
    assert stats.binomtest(hits, 20_000, 1 / 3).pvalue > ALPHA
    # a dyadic constant ends: W < 1/2 exactly when the first bit is 0
    hits = sum(noise._LazyUniform(src).less(lambda p: noise._ratio_bounds(1, 2, p))
               for _ in range(20_000))
    assert stats.binomtest(hits, 20_000, 0.5).pvalue > ALPHA


# -- Polya shares --------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "p"), [(0.05, 0.9), (1.0, 0.5), (3.5, 0.2)])
def test_polya_mean_and_variance(r, p):
    n = 200_000
    x = noise.polya(r, p, n, rng=np.random.default_rng(51))
    assert x.dtype == np.int64 and x.min() >= 0
    mean, var = r * p / (1 - p), r * p / (1 - p) ** 2
    assert abs(x.mean() - mean) < Z * math.sqrt(var / n)
    assert stats.chisquare(*_nb_cells(x, r, p)).pvalue > ALPHA


def _nb_cells(x: np.ndarray, r: float, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts of Polya draws in cells expecting >= 20 draws."""
    support = np.arange(0, int(x.max()) + 1)
    exp = stats.nbinom.pmf(support, r, 1 - p) * x.size
    group = np.floor(np.cumsum(exp) / 20.0).astype(np.int64)
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    obs = np.add.reduceat(np.bincount(x, minlength=support.size), starts).astype(float)
    cells = np.add.reduceat(exp, starts)
    cells[-1] += x.size - cells.sum()  # the tail beyond the largest draw
    return obs, cells


@pytest.mark.parametrize(("parties", "b"), [(1, 2.0), (10, 2.0), (50, 6.5)])
def test_polya_shares_sum_to_discrete_laplace(parties, b):
    n = 60_000
    shares = noise.polya_laplace_shares(parties, b, size=n, rng=np.random.default_rng(52))
    assert shares.shape == (parties, n) and shares.dtype == np.int64
    total = shares.sum(axis=0)
    support = np.arange(-int(25 * b), int(25 * b) + 1)
    assert chi2_pvalue(total, support, dlap_pmf(b, support)) > ALPHA


# -- the grid and the real-valued releases -------------------------------------------------


@pytest.mark.parametrize("scale", [1.0, 0.013, 3.7e5])
def test_secure_laplace_on_grid_with_the_right_variance(scale):
    n = 200_000
    x = np.linspace(-3.0, 3.0, n)
    for src in secure_sources(61):
        out = noise.secure_laplace(x, scale, rng=src)
        k = noise.grid_exponent(scale)
        scaled = np.ldexp(out, k)
        np.testing.assert_array_equal(scaled, np.rint(scaled))
        err = out - x
        # Laplace(b): var 2 b^2, fourth moment 24 b^4; the grid adds O(2**-2k)
        assert abs(err.var() / (2 * scale**2) - 1) < Z * math.sqrt(20 / 4 / n) + 1e-5


def test_secure_laplace_grid_exponent_40_as_laplace_mechanism_uses():
    n = 200_000
    b = 1.0 + 2.0**-20
    out = noise.secure_laplace(np.zeros(n), b, rng=secure_source(62), grid_exponent=40)
    scaled = np.ldexp(out, 40)
    np.testing.assert_array_equal(scaled, np.rint(scaled))
    assert abs(out.var() / (2 * b * b) - 1) < Z * math.sqrt(5 / n)
    assert stats.kstest(out, "laplace", args=(0, b)).pvalue > ALPHA


def test_secure_laplace_per_coordinate_scales():
    n = 100_000
    scale = np.array([0.5, 4.0])
    out = noise.secure_laplace(np.zeros((n, 2)), scale, rng=np.random.default_rng(63))
    assert out.shape == (n, 2)
    k = noise.grid_exponent(0.5)
    np.testing.assert_array_equal(np.ldexp(out, k), np.rint(np.ldexp(out, k)))
    for j, b in enumerate(scale):
        assert abs(out[:, j].var() / (2 * b * b) - 1) < Z * math.sqrt(5 / n)


@pytest.mark.parametrize("sigma", [1.0, 0.02, 250.0])
def test_secure_gaussian_on_grid_with_the_right_variance(sigma):
    n = 150_000
    for src in secure_sources(64):
        out = noise.secure_gaussian(np.zeros(n), sigma, rng=src)
        k = noise.grid_exponent(sigma)
        np.testing.assert_array_equal(np.ldexp(out, k), np.rint(np.ldexp(out, k)))
        assert abs(out.var() / sigma**2 - 1) < Z * math.sqrt(2 / n)
    out = noise.secure_gaussian(np.zeros((3, 4)), np.full(4, sigma), rng=secure_source(65))
    assert out.shape == (3, 4)


def test_secure_release_of_empty_and_scalar_values():
    assert noise.secure_laplace(np.empty((0, 3)), 1.0, rng=secure_source(66)).shape == (0, 3)
    out = noise.secure_gaussian(2.5, 1.0, rng=secure_source(67))
    assert np.ndim(out) == 0


# -- entropy -----------------------------------------------------------------------------


def test_os_entropy_path_is_secure_and_not_constant():
    src, secure = noise.resolve_rng(None)
    assert secure and src.secure
    a = noise.discrete_laplace(1000.0, 1000)
    b = noise.discrete_laplace(1000.0, 1000)
    assert len(np.unique(a)) > 500 and not np.array_equal(a, b)
    g = noise.secure_gaussian(np.zeros(1000), 1.0)
    assert np.std(g) > 0.5
    w = src.words(4096)
    assert len(np.unique(w)) == 4096  # 64-bit words: a repeat has probability 5e-13
    coins = src.coins(100_000)
    assert stats.binomtest(int(coins.sum()), coins.size, 0.5).pvalue > ALPHA


def test_seeded_generator_is_reproducible_and_not_secure():
    assert noise.resolve_rng(np.random.default_rng(0))[1] is False
    a = noise.discrete_gaussian(3.0, 50, rng=np.random.default_rng(5))
    b = noise.discrete_gaussian(3.0, 50, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


# -- properties ------------------------------------------------------------------------------


shape_st = st.one_of(st.none(), st.integers(0, 5),
                     st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
scale_st = st.floats(min_value=0.01, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(scale=scale_st, size=shape_st, seed=st.integers(0, 2**32 - 1))
def test_integer_outputs_have_the_requested_shape(scale, size, seed):
    rng = np.random.default_rng(seed)
    for f in (noise.discrete_laplace, noise.geometric, noise.discrete_gaussian):
        out = f(scale, size, rng=rng)
        if size is None:
            assert isinstance(out, int)
        else:
            want = (size,) if isinstance(size, int) else size
            assert isinstance(out, np.ndarray) and out.shape == want
            assert out.dtype == np.int64
    out = noise.uniform_integers(int(scale) + 1, size, rng=secure_source(seed))
    if size is not None:
        assert out.dtype == np.int64 and np.all((out >= 0) & (out <= int(scale)))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
                       min_size=1, max_size=20),
       k=st.integers(-10, 40))
def test_round_to_grid_error_at_most_half_a_step(values, k):
    x = np.asarray(values)
    n = noise.round_to_grid(x, k)
    assert n.dtype == np.int64
    assert np.all(np.abs(np.ldexp(n.astype(float), -k) - x) <= math.ldexp(1.0, -k - 1))


@settings(max_examples=100, deadline=None)
@given(scale=st.floats(min_value=1e-12, max_value=1e12, allow_nan=False),
       p=st.integers(1, 40))
def test_grid_exponent_rule(scale, p):
    k = noise.grid_exponent(scale, precision_bits=p)
    step = Fraction(2) ** -k
    b = Fraction(scale)
    assert b * Fraction(2) ** (-p - 1) < step <= b * Fraction(2) ** -p


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1", None])
@pytest.mark.parametrize(("f", "name"), [(noise.discrete_laplace, "scale"),
                                         (noise.geometric, "scale"),
                                         (noise.discrete_gaussian, "sigma")])
def test_bad_scales_are_refused_by_name(f, name, bad):
    with pytest.raises(InvalidParameterError) as err:
        f(bad, 3, rng=np.random.default_rng(0))
    assert err.value.name == name


@pytest.mark.parametrize(("f", "name"), [(noise.discrete_laplace, "scale"),
                                         (noise.discrete_gaussian, "sigma")])
def test_bad_scale_arrays_are_refused(f, name):
    with pytest.raises(InvalidDataError, match=name):
        f(np.array([1.0, np.nan]), rng=np.random.default_rng(0))
    with pytest.raises(InvalidParameterError) as err:
        f(np.array([1.0, -2.0]), rng=np.random.default_rng(0))
    assert err.value.name == name
    with pytest.raises(InvalidParameterError) as err:
        f(np.array([1.0, 2.0]), size=3, rng=np.random.default_rng(0))
    assert err.value.name == "size"


@pytest.mark.parametrize("rng", [42, "seed", np.random.RandomState(0), object()])
def test_wrong_rng_type_is_refused(rng):
    with pytest.raises(InvalidParameterError) as err:
        noise.discrete_laplace(1.0, 3, rng=rng)
    assert err.value.name == "rng"
    with pytest.raises(InvalidParameterError) as err:
        noise.polya(1.0, 0.5, 3, rng=rng)
    assert err.value.name == "rng"


def test_bad_rationals_and_bounds_are_refused_by_name():
    cases = [
        (lambda: noise.bernoulli(5, 3), "numerator"),
        (lambda: noise.bernoulli(-1, 3), "numerator"),
        (lambda: noise.bernoulli(1, 0), "denominator"),
        (lambda: noise.bernoulli_exp(1.5, 2), "numerator"),
        (lambda: noise.bernoulli_exp(-1), "numerator"),
        (lambda: noise.bernoulli_exp(1, 2**63 - 1), "denominator"),
        (lambda: noise.uniform_integers(0), "high"),
        (lambda: noise.uniform_integers(2**62 + 1), "high"),
        (lambda: noise.uniform_integers(np.array([3, 0])), "high"),
        (lambda: noise.uniform_integers(3, -1), "size"),
        (lambda: noise.discrete_laplace(1.0, (2, -1)), "size"),
        (lambda: noise.discrete_gaussian(2.0**60), "sigma"),
        (lambda: noise.discrete_laplace(2.0**70), "scale"),
        (lambda: noise.polya(0.0, 0.5), "r"),
        (lambda: noise.polya(1.0, 1.0), "p"),
        (lambda: noise.polya_laplace_shares(0, 1.0), "n_parties"),
        (lambda: noise.polya_laplace_shares(3, math.nan), "scale"),
        (lambda: noise.grid_exponent(0.0), "scale"),
        (lambda: noise.grid_exponent(1.0, precision_bits=0), "precision_bits"),
        (lambda: noise.secure_laplace(np.zeros(3), -1.0), "scale"),
        (lambda: noise.secure_laplace(np.zeros(3), 1.0, grid_exponent=1.5), "grid_exponent"),
        (lambda: noise.secure_gaussian(np.zeros(3), math.nan), "sigma"),
    ]
    for call, name in cases:
        with pytest.raises(InvalidParameterError) as err:
            call()
        assert err.value.name == name, (name, err.value)


def test_non_finite_values_are_refused():
    with pytest.raises(InvalidDataError, match="values"):
        noise.secure_laplace(np.array([1.0, np.nan]), 1.0)
    with pytest.raises(InvalidDataError, match="values"):
        noise.secure_gaussian(np.array([np.inf]), 1.0)
    with pytest.raises(InvalidDataError, match="scale"):
        noise.secure_laplace(np.zeros(2), np.array([1.0, np.nan]))
