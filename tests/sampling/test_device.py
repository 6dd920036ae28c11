"""The device: certified grid polytope, snapping, exact draws, exact likelihood ratios.

Certification is checked independently of :mod:`privot.privacy.noise._exact`: with
mpmath at 600 bits the bounds ``e^{+-eps/2} m_j 2^b`` are known to far more than the
one unit that separates a correct integer bound from a wrong one.

Statistical tests use fixed seeds; each states its false-alarm rate (the probability
that a correct implementation fails it for a random seed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.noise import BitSource
from privot.privacy.types import Neighbouring
from privot.sampling.device import (
    DEFAULT_BITS,
    GridPolytope,
    PolytopeViolationError,
    draw_index,
    grid_polytope,
    max_likelihood_ratio,
    private_sample,
    ratio_at_most_exp,
    snap_to_polytope,
    verify_in_polytope,
)

mpmath.mp.prec = 600


def kpm_m(k: int, eps: float) -> np.ndarray:
    return np.full(k, math.exp(eps / 2) / (math.exp(eps) + k - 1))


def certified_inside(weights: np.ndarray, m: np.ndarray, eps: float, bits: int) -> None:
    """Independent check (mpmath, 600 bits): e^-eps/2 m_j <= w_j / 2^b <= e^eps/2 m_j
    and each row sums to exactly 2^b (Python integers)."""
    lo = mpmath.exp(-mpmath.mpf(eps) / 2)
    hi = mpmath.exp(mpmath.mpf(eps) / 2)
    scale = mpmath.mpf(2) ** bits
    for row in np.atleast_2d(weights):
        assert sum(int(v) for v in row) == 1 << bits
        for wj, mj in zip(row.tolist(), m.tolist(), strict=True):
            x = mpmath.mpf(int(wj))
            assert x >= lo * mpmath.mpf(mj) * scale
            assert x <= hi * mpmath.mpf(mj) * scale


# ---------------------------------------------------------------------------------------
# Grid polytope
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,bits", [(1.0, 61), (0.1, 52), (5.0, 61), (0.3, 20), (40.0, 61)])
def test_grid_bounds_are_certified_and_tight(eps, bits):
    rng = np.random.default_rng(0)
    m = rng.dirichlet(np.ones(12))
    poly = grid_polytope(m, epsilon=eps, bits=bits)
    lo = mpmath.exp(-mpmath.mpf(eps) / 2)
    hi = mpmath.exp(mpmath.mpf(eps) / 2)
    scale = mpmath.mpf(2) ** bits
    for j, mj in enumerate(m.tolist()):
        a = lo * mpmath.mpf(mj) * scale
        b = min(hi * mpmath.mpf(mj) * scale, scale)
        L, U = int(poly.lower[j]), int(poly.upper[j])  # noqa: N806
        assert a <= L < a + 1  # ceil, on the safe side, and tight
        assert b - 1 < U <= b  # floor, on the safe side, and tight
    assert poly.total == 1 << bits
    assert poly.upper_total == sum(int(u) for u in poly.upper)


def test_grid_polytope_is_cached_and_read_only():
    m = kpm_m(5, 1.0)
    a = grid_polytope(m, epsilon=1.0)
    b = grid_polytope(m.copy(), epsilon=1.0)
    assert np.array_equal(a.lower, b.lower)
    with pytest.raises(ValueError):
        a.lower[0] = 0


def test_zero_base_measure_entry_is_never_sampled():
    m = np.array([0.0, 0.5, 0.5])
    poly = grid_polytope(m, epsilon=1.0)
    assert poly.lower[0] == poly.upper[0] == 0
    s = private_sample(np.array([0.2, 0.4, 0.4]), base_measure=m, epsilon=1.0,
                       rng=np.random.default_rng(0))
    out = private_sample(np.tile([0.2, 0.4, 0.4], (5000, 1)), base_measure=m, epsilon=1.0,
                         rng=np.random.default_rng(1)).indices
    assert s.indices.shape == (1,)
    assert not np.any(out == 0)


def test_empty_grid_polytope_raises_naming_base_measure():
    eps = 1.0
    with pytest.raises(InvalidParameterError, match="base_measure"):
        grid_polytope(np.full(4, 0.1), epsilon=eps)  # e^{eps/2} sum(m) < 1
    with pytest.raises(InvalidParameterError, match="base_measure"):
        grid_polytope(np.full(4, 1.0), epsilon=eps)  # e^{-eps/2} sum(m) > 1
    # just below degenerate: e^{eps/2} sum(m) = 1 - 1e-15 (empty by 1e-15)
    m = np.full(4, math.exp(-eps / 2) / 4 * (1 - 1e-15))
    with pytest.raises(InvalidParameterError, match="base_measure"):
        grid_polytope(m, epsilon=eps)
    # just above: e^{eps/2} sum(m) = 1 + 1e-14, the polytope is a sliver; the only nu the
    # device can hold is about e^{eps/2} m, and snapping finds it
    m = np.full(4, math.exp(-eps / 2) / 4 * (1 + 1e-14))
    w = snap_to_polytope(np.full(4, 0.25), base_measure=m, epsilon=eps)
    certified_inside(w, m, eps, DEFAULT_BITS)
    # an entry too small for the grid: [e^-eps/2 m_j, e^eps/2 m_j] holds no multiple of 2^-b
    tiny = kpm_m(4, eps)
    tiny[0] = 1e-30
    with pytest.raises(InvalidParameterError, match=r"base_measure\[0\]"):
        grid_polytope(tiny, epsilon=eps)


# ---------------------------------------------------------------------------------------
# Snapping
# ---------------------------------------------------------------------------------------


def _face_nu(m: np.ndarray, eps: float) -> np.ndarray:
    """nu on a face: nu_0 = e^{eps/2} m_0, the others e^{-eps/2} m_j (KPM's Dirac output
    as floats), possibly one ulp outside."""
    nu = math.exp(-eps / 2) * m
    nu[0] = math.exp(eps / 2) * m[0]
    return nu


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("bits", [61, 52, 30])
def test_snap_on_face_and_one_ulp_outside(eps, bits):
    k = 7
    m = kpm_m(k, eps)
    face = _face_nu(m, eps)
    out_up = face.copy()
    out_up[0] = np.nextafter(face[0], 1.0)  # one ulp above the upper bound
    out_down = face.copy()
    out_down[1] = np.nextafter(face[1], 0.0)  # one ulp below the lower bound
    far_up = face.copy()
    far_up[0] = math.exp(eps / 2) * m[0] * (1 + 1e-9)
    far_up[1:] -= (far_up[0] - face[0]) / (k - 1)
    nus = np.stack([face, out_up, out_down, far_up])
    w = snap_to_polytope(nus, base_measure=m, epsilon=eps, bits=bits)
    assert w.dtype == np.int64 and w.shape == (4, k)
    certified_inside(w, m, eps, bits)
    # a nu on the face moves by a few grid units in L1: each coordinate rounds to its
    # safe side (<= 1 unit) and the repair moves the <= k units of total back
    assert np.abs(w[0] / 2.0**bits - face).sum() <= 2 * k * 2.0**-bits + 1e-15


def test_far_outside_is_clipped_never_refused():
    """Decision: a nu outside the polytope is clipped into it (an error depending on nu,
    a function of the user's data, would itself leak). The device always answers."""
    eps, k = 1.0, 6
    m = kpm_m(k, eps)
    dirac = np.eye(k)
    w = snap_to_polytope(dirac, base_measure=m, epsilon=eps)
    certified_inside(w, m, eps, DEFAULT_BITS)
    # the result is the corner of the polytope: the others at their lower bounds, the
    # peak at its upper bound less the rounding of m (a float) and of the bounds
    poly = grid_polytope(m, epsilon=eps)
    gap = poly.upper - np.diag(w)
    assert np.all(gap >= 0) and np.all(gap < 2.0**(DEFAULT_BITS - 40))
    off = ~np.eye(k, dtype=bool)
    assert np.all(w[off] == np.broadcast_to(poly.lower, (k, k))[off])
    s = private_sample(dirac, base_measure=m, epsilon=eps, rng=np.random.default_rng(0))
    assert s.max_shift > 0.5  # diagnostic: these rows were clipped
    assert np.all((s.indices >= 0) & (s.indices < k))


def test_snap_many_random_rows_exactly_inside():
    """Random rows, in and out of the polytope, at several eps: verify_in_polytope (which
    raises) passes and an independent Fraction check agrees on a sample of rows."""
    rng = np.random.default_rng(3)
    for eps in (0.2, 2.0, 9.0):
        k = 30
        m = rng.dirichlet(np.ones(k)) * math.exp(rng.uniform(-eps / 2, eps / 2) * 0.9)
        nu = rng.dirichlet(np.full(k, 0.3), size=500)
        poly = grid_polytope(m, epsilon=eps)
        w = snap_to_polytope(nu, polytope=poly)
        verify_in_polytope(w, poly)
        certified_inside(w[:5], m, eps, DEFAULT_BITS)


def test_large_epsilon_uses_overflow_safe_sums():
    """With a large epsilon sum(U) exceeds 2^63: weights whose int64 sum wraps to exactly
    2^b must still be refused."""
    eps, k = 10.0, 10
    m = kpm_m(k, eps)
    poly = grid_polytope(m, epsilon=eps)
    assert poly.upper_total >= 1 << 63
    target = 9 * (1 << 61)  # == 2^61 modulo 2^64
    w = np.full(k, target // k, dtype=np.int64)
    w[-1] += target - int(w.sum(dtype=object))
    assert np.all(w <= poly.upper) and np.all(w >= poly.lower)
    assert int(w.sum()) == poly.total  # the wrapped int64 sum would fool a naive check
    with pytest.raises(PolytopeViolationError, match="sums to"):
        verify_in_polytope(w, poly)
    good = snap_to_polytope(np.full(k, 1.0 / k), polytope=poly)
    certified_inside(good, m, eps, DEFAULT_BITS)


def test_verify_raises_on_any_violation():
    m = kpm_m(5, 1.0)
    poly = grid_polytope(m, epsilon=1.0)
    w = snap_to_polytope(np.full(5, 0.2), polytope=poly)
    verify_in_polytope(w, poly)
    bad = w.copy()
    bad[0, 0] += 1
    with pytest.raises(PolytopeViolationError, match="sums to"):
        verify_in_polytope(bad, poly)
    bad = w.copy()
    bad[0, 0] = poly.upper[0] + 1
    bad[0, 1] -= bad[0, 0] - w[0, 0]
    with pytest.raises(PolytopeViolationError, match=r"weights\[0, 0\]"):
        verify_in_polytope(bad, poly)
    with pytest.raises(PolytopeViolationError, match="integer"):
        verify_in_polytope(w.astype(float), poly)


# ---------------------------------------------------------------------------------------
# Exact draws
# ---------------------------------------------------------------------------------------


class _Enumerate(BitSource):
    """Returns 0, 1, 2, ... as the uniform integers: one pass over [0, 2^b) enumerates
    every outcome once, so the histogram of the indices must equal the weights."""

    def uniform_below(self, high, n=None):
        return np.arange(int(n), dtype=np.int64) % int(high)


def test_draw_index_inverse_cdf_is_exact():
    w = np.array([[3, 0, 5, 0, 8], [0, 0, 0, 16, 0], [1, 1, 1, 1, 12]], dtype=np.int64)
    for row in w:
        rows = np.tile(row, (16, 1))
        idx = draw_index(rows, 4, rng=_Enumerate())
        assert np.array_equal(np.bincount(idx, minlength=5), row)


def test_draw_index_chi_square():
    """Chi-square goodness of fit, 200k draws; false-alarm rate 1e-3."""
    rng = np.random.default_rng(11)
    bits = 20
    cuts = np.sort(rng.integers(0, 1 << bits, size=9))
    w = np.diff(np.concatenate([[0], cuts, [1 << bits]])).astype(np.int64)
    w[3] += w[4]
    w[4] = 0  # a zero weight is never drawn
    n = 200_000
    idx = draw_index(np.tile(w, (n, 1)), bits, rng=np.random.default_rng(12))
    counts = np.bincount(idx, minlength=w.size)
    assert counts[4] == 0
    keep = w > 0
    expected = n * w[keep] / (1 << bits)
    assert stats.chisquare(counts[keep], expected).pvalue > 1e-3


def test_draw_index_at_61_bits_and_os_entropy():
    """Extreme weights at the largest grid; binomial test, false-alarm rate 1e-3 per
    source. Both code paths, seeded: a numpy generator and the production OS-CSPRNG
    source reading a seeded byte stream (unseeded OS entropy made this test fail one
    run in a thousand)."""
    from secure_bits import secure_sources

    w = np.array([(1 << 61) - (1 << 59), (1 << 59), 0], dtype=np.int64)
    n = 100_000
    for rng in secure_sources(5):
        idx = draw_index(np.tile(w, (n, 1)), 61, rng=rng)
        assert not np.any(idx == 2)
        assert stats.binomtest(int((idx == 1).sum()), n, 0.25).pvalue > 1e-3


def test_draw_index_validates():
    with pytest.raises(InvalidDataError, match="sum"):
        draw_index(np.array([1, 2], dtype=np.int64), 2)
    with pytest.raises(InvalidParameterError, match="weights"):
        draw_index(np.array([0.5, 0.5]), 0)
    with pytest.raises(InvalidParameterError, match="total_bits"):
        draw_index(np.array([1], dtype=np.int64), 62)
    assert draw_index(np.array([0, 1], dtype=np.int64), 0).tolist() == [1]


# ---------------------------------------------------------------------------------------
# private_sample
# ---------------------------------------------------------------------------------------


def test_private_sample_matches_nu():
    """Sampled frequencies match nu (chi-square, 100k users, false-alarm rate 1e-3);
    secure flag and relation recorded."""
    eps, k = 1.0, 8
    m = kpm_m(k, eps)
    nu = math.exp(-eps / 2) * m
    nu[2] += 1 - nu.sum()
    n = 100_000
    s = private_sample(np.tile(nu, (n, 1)), base_measure=m, epsilon=eps,
                       rng=np.random.default_rng(21))
    assert s.secure is False and s.relation is Neighbouring.LOCAL
    assert s.cost.epsilon == eps and s.bits == DEFAULT_BITS
    counts = np.bincount(s.indices, minlength=k)
    assert stats.chisquare(counts, n * nu).pvalue > 1e-3
    assert private_sample(nu, base_measure=m, epsilon=eps).secure is True


def test_private_sample_charges_accountant_first():
    m = kpm_m(3, 1.0)
    acc = PrivacyAccountant(1.5)
    private_sample(np.full(3, 1 / 3), base_measure=m, epsilon=1.0, accountant=acc)
    assert acc.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        private_sample(np.full(3, 1 / 3), base_measure=m, epsilon=1.0, accountant=acc)


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"epsilon": 0.0}, InvalidParameterError, "epsilon"),
    ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
    ({"bits": 0}, InvalidParameterError, "bits"),
    ({"bits": 62}, InvalidParameterError, "bits"),
    ({"base_measure": np.array([])}, InvalidDataError, "base_measure"),
    ({"base_measure": np.array([0.5, -0.1, 0.6])}, InvalidDataError, "base_measure"),
    ({"nu": np.array([0.5, 0.5])}, InvalidDataError, "nu"),
    ({"nu": np.array([0.5, 0.5, 0.5])}, InvalidDataError, "nu"),
    ({"nu": np.array([1.5, -0.25, -0.25])}, InvalidDataError, "nu"),
    ({"nu": np.array([np.nan, 0.5, 0.5])}, InvalidDataError, "nu"),
])
def test_private_sample_bad_inputs(kwargs, exc, name):
    args = {"nu": np.full(3, 1 / 3), "base_measure": kpm_m(3, 1.0), "epsilon": 1.0}
    args.update(kwargs)
    nu = args.pop("nu")
    with pytest.raises(exc, match=name):
        private_sample(nu, **args)


# ---------------------------------------------------------------------------------------
# Exact likelihood ratios
# ---------------------------------------------------------------------------------------


def test_max_likelihood_ratio_and_certified_comparison():
    ch = np.array([[3, 1], [1, 3]], dtype=np.int64)
    r = max_likelihood_ratio(ch, 2)
    assert r == Fraction(3)
    assert ratio_at_most_exp(r, 1.0987)  # ln 3 = 1.09861228...
    assert not ratio_at_most_exp(r, 1.0986)
    assert max_likelihood_ratio(ch[:1], 2) == 1
    assert max_likelihood_ratio(np.array([[4, 0], [3, 1]], dtype=np.int64), 2) == math.inf
    assert not ratio_at_most_exp(math.inf, 5.0)
    with pytest.raises(InvalidDataError, match="sum"):
        max_likelihood_ratio(np.array([[3, 0], [1, 3]], dtype=np.int64), 2)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_snapped_channel_ratio_is_certified_below_exp_eps(eps):
    """Any channel through the device, here the far-off Dirac rows and random rows, has
    exact worst ratio <= e^eps; the same channel rounded without the polytope does not."""
    k = 6
    m = kpm_m(k, eps)
    rng = np.random.default_rng(4)
    rows = np.vstack([np.eye(k), rng.dirichlet(np.full(k, 0.2), size=20)])
    w = snap_to_polytope(rows, base_measure=m, epsilon=eps)
    r = max_likelihood_ratio(w, DEFAULT_BITS)
    assert ratio_at_most_exp(r, eps)
    # sanity of the test itself: the polytope's own corner ratio is within 2^-50 of e^eps
    assert float(r) > math.exp(eps) * (1 - 1e-12)
    # broken: a polytope for 2 eps lets the Dirac rows through with ratio ~ e^{2 eps}
    w2 = snap_to_polytope(rows, base_measure=kpm_m(k, 2 * eps), epsilon=2 * eps)
    assert not ratio_at_most_exp(max_likelihood_ratio(w2, DEFAULT_BITS), eps)


def test_grid_polytope_object_is_accepted():
    m = kpm_m(4, 1.0)
    poly = grid_polytope(m, epsilon=1.0, bits=40)
    assert isinstance(poly, GridPolytope)
    w = snap_to_polytope(np.full(4, 0.25), polytope=poly)
    assert int(w.sum()) == 1 << 40
    with pytest.raises(InvalidParameterError, match="polytope"):
        snap_to_polytope(np.full(4, 0.25))
