"""The secure samplers on the code path that runs in production, branch by branch.

Every release fit for publication draws its randomness from the OS-CSPRNG source
(``rng=None``): a buffer of raw bytes cut by :class:`~privot.privacy.noise.BitSource`'s
methods into words, coins, bit fields and bounded integers. A seeded
:class:`numpy.random.Generator` takes numpy's own bounded integers instead, so the
tests that use it cannot see a bias of the secure path (issue 23: arrays of bounds up
to ``2**15`` were cut from 16-bit words but compared with a 32-bit threshold, so
nothing was rejected and ``r mod h`` was biased). Here every sampler runs on
:func:`secure_bits.secure_source`, the production class fed a seeded stream of raw
bytes, with parameters chosen to reach each word width (16, 32 and 63 bits), scalar and
array parameters, and each branch (one scale, grouped scales, per-element CKS).

False alarms. Each statistical assertion compares a p-value with ``ALPHA = 1e-5``: for a
correct sampler and a fresh seed the false-alarm rate of one assertion is ``1e-5``. The
file makes about 90 such assertions (counting parametrisations and bounds), so a correct
sampler fails the file with probability below ``1e-3`` (union bound); with the fixed seeds the
outcome is deterministic. The threshold arithmetic is checked exactly (no false alarm),
and the ``paths`` fixture asserts that each test reached the branch it is about.

Where the power lies. The old bias showed in the uniform and Bernoulli draws themselves
(tests here fail on it by hundreds of standard errors) and in the per-element discrete
Laplace, geometric and the population's own-cell draw. In the discrete Gaussian's
envelope the biased draw only decided the factor ``Bernoulli(z)`` with
``z >= 2i / (2i + 1)``, a distortion too small for a test of this size; there the tests
prove the branch runs on the fixed primitive, whose tests carry the power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privot.privacy import noise
from privot.privacy.noise._bits import _accept_top, _OSEntropy, _word_width
from secure_bits import SeededBytes, secure_source

ALPHA = 1e-5
#: The word width each case of bounds is drawn with, and the bounds (arrays with at
#: least two distinct values take the array path; the largest sets the width).
ARRAY_BOUNDS = {
    "16-bit": [30_000, 30_001],
    "16-bit-small": [3, 5, 7, 1_000],
    "32-bit": [2**20 + 1, 3 * 2**28 + 1],
    "32-bit-with-small": [3, 30_001, 2**31 - 1],
    "63-bit": [2**40 + 3, 2**62 - 57],
    "63-bit-with-small": [3, 30_001, 2**62],
}
SCALAR_BOUNDS = [3, 30_001, 2**15, 2**15 + 3, 2**20 + 1, 2**31 - 1, 2**31 + 7, 2**40, 2**62 - 57]


def uniform_pvalue(x: np.ndarray, high: int) -> float:
    """Chi-square p-value of draws in ``[0, high)`` against the uniform law, on
    ``min(high, 16)`` cells ``floor(x k / high)`` with their exact probabilities."""
    k = min(high, 16)
    cell = (x.astype(object) * k // high).astype(np.int64)
    obs = np.bincount(cell, minlength=k)
    sizes = np.array([(-(-(c + 1) * high // k)) - (-(-c * high // k)) for c in range(k)],
                     dtype=float)
    return float(stats.chisquare(obs, x.size * sizes / high).pvalue)


def chi2_mixture_pvalue(x: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square of integer draws against ``pmf`` on consecutive ``support`` (the mass
    outside is one more cell), neighbouring values merged into cells expecting >= 20."""
    n = x.size
    expected = pmf * n
    inside = x[(x >= support[0]) & (x <= support[-1])] - support[0]
    counts = np.bincount(inside, minlength=support.size)
    group = np.floor(np.cumsum(expected) / 20.0).astype(np.int64)
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    obs = np.add.reduceat(counts, starts).astype(float)
    exp = np.add.reduceat(expected, starts)
    obs = np.append(obs, n - obs.sum())
    exp = np.append(exp, max(n - exp.sum(), 0.0))
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    if exp[-1] < 20 and exp.size > 1:  # a small last cell joins its neighbour
        obs[-2:] = [obs[-2] + obs[-1], 0]
        exp[-2:] = [exp[-2] + exp[-1], 0]
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


@pytest.fixture
def paths(monkeypatch):
    """Records which path of :meth:`BitSource.uniform_below` each call takes, as
    ``("scalar" | "array", word width)``, so a test can assert that it reached the
    branch it is about (a statistical test that never runs a branch proves nothing)."""
    from privot.privacy.noise._bits import BitSource

    seen: set[tuple[str, int]] = set()
    real = BitSource.uniform_below

    def spy(self, high, n=None):
        h = np.asarray(high)
        if h.size:
            hi = int(h.max())
            kind = "scalar" if h.ndim == 0 or int(h.min()) == hi else "array"
            if not (kind == "scalar" and hi & (hi - 1) == 0):  # powers of two: plain bits
                seen.add((kind, _word_width(hi)))
        return real(self, high, n)

    monkeypatch.setattr(BitSource, "uniform_below", spy)
    return seen


# -- the entropy itself ---------------------------------------------------------------------


def test_rng_none_is_the_class_under_test_reading_os_urandom():
    import os

    src, secure = noise.resolve_rng(None)
    assert secure and type(src) is _OSEntropy and src._read is os.urandom
    seeded = secure_source(0)
    assert type(seeded) is _OSEntropy and seeded.secure


def test_seeded_bytes_go_through_the_buffer_in_order():
    a = secure_source(1)
    b = SeededBytes(1)
    first = a.words(3)
    rest = a.words((1 << 17) + 5)  # crosses the 1 MiB refill
    raw = np.frombuffer(b(8 << 18), dtype=np.uint64)
    np.testing.assert_array_equal(np.concatenate([first, rest]), raw[:first.size + rest.size])


# -- bounded integers: the threshold and the words come from one width --------------------


@pytest.mark.parametrize("width", [16, 32, 63])
def test_accept_top_keeps_whole_periods_exactly(width):
    rng = np.random.default_rng(width)
    cap = {16: 2**15, 32: 2**31, 63: 2**62}[width]
    h = np.unique(np.concatenate([[2, 3, cap - 1, cap], rng.integers(2, cap, 500)]))
    h = h.astype(np.int64)
    tops = _accept_top(h, width)
    for hh, top in zip(h.tolist(), tops.tolist(), strict=True):
        assert top == _accept_top(hh, width)  # the scalar and array forms agree
        # accepted words 0..top are a whole number of periods of h, and no more fit
        assert (top + 1) % hh == 0 and top < 2**width <= top + hh
    assert {_word_width(h) for h in (2, 2**15)} == {16}
    assert {_word_width(h) for h in (2**15 + 1, 2**31)} == {32}
    assert {_word_width(h) for h in (2**31 + 1, 2**62)} == {63}


@pytest.mark.parametrize("width", [16, 32, 63])
def test_draw_fills_the_whole_width(width):
    r = secure_source(width)._draw(200_000, width)
    assert r.min() >= 0 and r.max() < 2**width
    # uniform on [0, 2**width): the top and bottom 1/16 each hold about 1/16
    cells = np.bincount((r.astype(object) * 16 // 2**width).astype(np.int64), minlength=16)
    assert stats.chisquare(cells).pvalue > ALPHA


@pytest.mark.parametrize("case", list(ARRAY_BOUNDS))
def test_uniform_integers_array_bounds_every_width(case, paths):
    bounds = ARRAY_BOUNDS[case]
    n = 40_000
    highs = np.tile(np.array(bounds, dtype=np.int64), n)
    x = noise.uniform_integers(highs, rng=secure_source(101))
    assert x.shape == highs.shape and np.all((x >= 0) & (x < highs))
    for h in bounds:
        assert uniform_pvalue(x[highs == h], h) > ALPHA, h
    assert paths == {("array", _word_width(max(bounds)))}


@pytest.mark.parametrize("high", SCALAR_BOUNDS)
def test_uniform_integers_scalar_bound_every_width(high):
    x = noise.uniform_integers(high, 60_000, rng=secure_source(102))
    assert x.min() >= 0 and x.max() < high
    assert uniform_pvalue(x, high) > ALPHA


def test_the_issue_case_half_below_half():
    """issue 23's measurement: bounds alternating 30000 / 30001 gave P[U < 15000] = 0.5416."""
    highs = np.tile(np.array([30_000, 30_001], dtype=np.int64), 50_000)
    x = noise.uniform_integers(highs, rng=secure_source(103))
    below = int(np.sum(x < 15_000))
    exact = 50_000 * (15_000 / 30_000 + 15_000 / 30_001)
    assert stats.binomtest(below, x.size, exact / x.size).pvalue > ALPHA


# -- Bernoulli: a uniform integer below the denominator --------------------------------------


@pytest.mark.parametrize("case", list(ARRAY_BOUNDS))
def test_bernoulli_array_denominators_every_width(case):
    den = np.array(ARRAY_BOUNDS[case], dtype=np.int64)
    num = den // 2 + 1
    n = 30_000
    out = noise.bernoulli(np.tile(num, n), np.tile(den, n), rng=secure_source(111))
    out = out.reshape(n, den.size)
    for j in range(den.size):
        p = int(num[j]) / int(den[j])
        assert stats.binomtest(int(out[:, j].sum()), n, p).pvalue > ALPHA


@pytest.mark.parametrize("den", [3, 30_001, 2**20 + 1, 2**40 + 3])
def test_bernoulli_scalar_denominator_every_width(den):
    num = den // 3 + 1
    out = noise.bernoulli(np.full(60_000, num), den, rng=secure_source(112))
    assert stats.binomtest(int(out.sum()), out.size, num / den).pvalue > ALPHA


@pytest.mark.parametrize("case", ["16-bit", "32-bit-with-small", "63-bit-with-small"])
def test_bernoulli_exp_array_denominators_every_width(case):
    den = np.array(ARRAY_BOUNDS[case], dtype=np.int64)
    num = den - 1  # gamma just below 1: CKS Algorithm 1 with per-element ratios
    n = 30_000
    out = noise.bernoulli_exp(np.tile(num, n), np.tile(den, n), rng=secure_source(113))
    out = out.reshape(n, den.size)
    for j in range(den.size):
        p = math.exp(-int(num[j]) / int(den[j]))
        assert stats.binomtest(int(out[:, j].sum()), n, p).pvalue > ALPHA


# -- discrete Laplace and geometric: one scale, grouped scales, per-element CKS ------------

#: Scales whose exact ratios t/s have numerators t in each word width; 65 distinct values
#: (> _MAX_GROUPS) send an array to the per-element CKS sampler.
def _scales(base: float, frac_bits: int, count: int = 65) -> np.ndarray:
    return base + np.arange(count) * 2.0**-frac_bits


LAPLACE_SCALES = {
    "16-bit": _scales(26_200.0, 0),  # t = b <= 2**15: issue 23's measurement
    "32-bit": _scales(26_200.0, 3),  # t = 8 b
    "63-bit": _scales(26_200.0, 30),
    "small-16-bit": _scales(3.0, 0),
}


def dlap_mixture(scales: np.ndarray, support: np.ndarray) -> np.ndarray:
    q = np.exp(-1.0 / scales)[:, None]
    return np.mean((1 - q) / (1 + q) * np.exp(-np.abs(support)[None, :] / scales[:, None]),
                   axis=0)


def geom_mixture(scales: np.ndarray, support: np.ndarray) -> np.ndarray:
    q = np.exp(-1.0 / scales)[:, None]
    return np.mean((1 - q) * q ** support[None, :].astype(float), axis=0)


@pytest.mark.parametrize("case", list(LAPLACE_SCALES))
def test_discrete_laplace_per_element_scales_every_width(case, paths):
    scales = LAPLACE_SCALES[case]
    reps = 1_500
    b = np.tile(scales, reps)
    x = noise.discrete_laplace(b, rng=secure_source(121))
    lim = int(20 * scales.max()) + 3
    support = np.arange(-lim, lim + 1)
    assert chi2_mixture_pvalue(x, support, dlap_mixture(scales, support)) > ALPHA
    # issue 23's statistic: the mass in |x| < b/2 against the mass in [b/2, b)
    z = np.abs(x) / b
    inner, outer = int(np.sum(z < 0.5)), int(np.sum((z >= 0.5) & (z < 1.0)))
    p_inner = float(np.mean([_dlap_mass(s, 0, s / 2) for s in scales]))
    p_outer = float(np.mean([_dlap_mass(s, s / 2, s) for s in scales]))
    assert stats.binomtest(inner, inner + outer, p_inner / (p_inner + p_outer)).pvalue > ALPHA
    width = _word_width(max(float(v).as_integer_ratio()[0] for v in scales))
    assert ("array", width) in paths  # CKS Algorithm 2's uniform below t, per element


def _dlap_mass(b: float, lo: float, hi: float) -> float:
    """P[lo <= |X| < hi] of the discrete Laplace of scale b (closed form)."""
    q = math.exp(-1.0 / b)

    def ge(v: float) -> float:  # P[|X| >= v] for real v >= 0
        k = math.ceil(v)
        return 1.0 if k <= 0 else 2 * q**k / (1 + q)

    return ge(lo) - ge(hi)


@pytest.mark.parametrize("case", ["16-bit", "32-bit", "63-bit"])
def test_geometric_per_element_scales_every_width(case):
    scales = LAPLACE_SCALES[case]
    x = noise.geometric(np.tile(scales, 1_500), rng=secure_source(122))
    support = np.arange(0, int(20 * scales.max()) + 3)
    assert chi2_mixture_pvalue(x, support, geom_mixture(scales, support)) > ALPHA


@pytest.mark.parametrize("scales", [[0.7, 300.0], [26_200.0, 26_201.0], [1e7, 1e7 + 0.5]])
def test_discrete_laplace_grouped_scales(scales):
    n = 60_000
    b = np.repeat(np.array(scales), n)
    x = noise.discrete_laplace(b, rng=secure_source(123))
    for s in scales:
        if s > 1e5:  # |X| / b is Laplace(1) up to O(1/b): the lattice is invisible
            assert stats.kstest(x[b == s] / s, "laplace").pvalue > ALPHA
            continue
        lim = int(20 * s) + 3
        support = np.arange(-lim, lim + 1)
        pmf = dlap_mixture(np.array([s]), support)
        assert chi2_mixture_pvalue(x[b == s], support, pmf) > ALPHA


# -- discrete Gaussian: table, envelope (each width of its uniform), per-element CKS -------


def dgauss_mixture(sigmas: np.ndarray, support: np.ndarray) -> np.ndarray:
    w = np.exp(-(support[None, :].astype(float) ** 2) / (2 * sigmas[:, None] ** 2))
    return np.mean(w / w.sum(axis=1, keepdims=True), axis=0)


#: sigma < 32: table; 700: envelope with (2i+1) 2**h <= 2**15 (16-bit words);
#: 3e5: 32-bit; 2**40 + 2**20: 63-bit.
GAUSS_SIGMAS = [5.0, 700.0, 3.0e5, 2.0**40 + 2.0**20]


@pytest.mark.parametrize(("sigma", "width"),
                         list(zip(GAUSS_SIGMAS, [None, 16, 32, 63], strict=True)))
def test_discrete_gaussian_one_sigma_every_width(sigma, width, paths):
    n = 150_000
    x = noise.discrete_gaussian(sigma, n, rng=secure_source(131))
    if sigma < 2**20:
        lim = int(8 * sigma) + 3
        support = np.arange(-lim, lim + 1)
        assert chi2_mixture_pvalue(x, support, dgauss_mixture(np.array([sigma]), support)
                                   ) > ALPHA
    if sigma >= 32:  # the envelope: a KS test on x / sigma (the lattice is invisible)
        assert stats.kstest(x / sigma, "norm").pvalue > ALPHA
    m2 = float(np.mean((x / sigma) ** 2))
    assert abs(m2 - 1) < 6 * math.sqrt(2 / n)
    if width:  # the envelope's factor z: a uniform below (2i + 1) 2**h, per proposal
        assert ("array", width) in paths


@pytest.mark.parametrize("sigmas", [[700.0, 701.0], [3.0e5, 3.0e5 + 1]])
def test_discrete_gaussian_grouped_sigmas(sigmas):
    n = 80_000
    s = np.repeat(np.array(sigmas), n)
    x = noise.discrete_gaussian(s, rng=secure_source(132))
    for v in sigmas:
        assert stats.kstest(x[s == v] / v, "norm").pvalue > ALPHA


GAUSS_GENERIC = {
    "16-bit": _scales(700.0, 0),
    "32-bit": _scales(700.0, 6),  # a = 64 sigma > 2**15
    "63-bit": _scales(700.0, 30),
    "small": _scales(1.5, 20),
}


@pytest.mark.parametrize("case", list(GAUSS_GENERIC))
def test_discrete_gaussian_per_element_sigmas_every_width(case, paths):
    sigmas = GAUSS_GENERIC[case]
    s = np.tile(sigmas, 1_500)
    x = noise.discrete_gaussian(s, rng=secure_source(133))
    lim = int(8 * sigmas.max()) + 3
    support = np.arange(-lim, lim + 1)
    assert chi2_mixture_pvalue(x, support, dgauss_mixture(sigmas, support)) > ALPHA
    width = _word_width(max(float(v).as_integer_ratio()[0] for v in sigmas))
    assert ("array", width) in paths  # CKS Algorithm 3's discrete Laplace, per element


# -- the mechanisms and the population step built on them ------------------------------------


def test_gaussian_mechanism_fine_grid_on_the_secure_path(paths):
    """issue 23: ``gaussian_mechanism(..., grid_exponent=10)`` reached the 16-bit case
    (sigma 2**10 in [32, 2**19) grid units)."""
    from privot.privacy.mechanisms import gaussian_mechanism

    n = 100_000
    rel = gaussian_mechanism(np.zeros(n), sensitivity=1.0, epsilon=1.0, delta=1e-5,
                             rng=secure_source(141), grid_exponent=10)
    sigma = float(rel.params["sigma"])
    assert stats.kstest(np.asarray(rel.value) / sigma, "norm").pvalue > ALPHA
    assert ("array", 16) in paths


def test_population_own_cell_draw_on_the_secure_path(paths):
    """issue 23: the linear variant's own-cell draw gave P[own cell] = 0.39 for 1/3."""
    from privot.sampling.population import _draw_own_cells

    users = 60_000
    # every user has n_u points, a third of them in cell 0: P[cell 0] = 1/3 exactly;
    # sizes near 30,000 sent this draw to 16-bit words with no rejection
    sizes = np.tile(np.array([30_000, 30_003, 3], dtype=np.int64), users // 3)
    cnt = np.stack([sizes // 3, sizes - sizes // 3], axis=1).ravel()
    cells = np.tile(np.array([0, 1], dtype=np.int64), users)
    indptr = np.arange(0, 2 * users + 1, 2, dtype=np.int64)
    row = np.arange(users, dtype=np.int64)  # every listed user has points
    got = _draw_own_cells(secure_source(142), indptr, cells, cnt, sizes, row, 2)
    for size in (30_000, 30_003, 3):
        sel = got[sizes == size]
        assert stats.binomtest(int(np.sum(sel == 0)), sel.size, 1 / 3).pvalue > ALPHA
    assert ("array", 16) in paths
