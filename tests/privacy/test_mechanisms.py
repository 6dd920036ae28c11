"""Mechanisms: calibration values, budget charging, the grid, secure flags, bad input.

The statistical audits of every mechanism are in ``test_audits.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.privacy import (
    Neighbouring,
    PrivacyAccountant,
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_mechanism,
)
from privot.privacy.accounting import gdp_to_delta
from secure_bits import secure_source

#: The two code paths a release can take: a seeded generator, and the production
#: OS-CSPRNG source on a seeded byte stream (tests/secure_bits.py). Moment and
#: goodness-of-fit checks below hold on both.
SOURCES = [np.random.default_rng, secure_source]


def test_laplace_scalar_release_and_ledger():
    acct = PrivacyAccountant(total_epsilon=1.0)
    rel = laplace_mechanism(412.0, sensitivity=2.0, epsilon=0.5, accountant=acct)
    assert isinstance(rel.value, float)
    assert rel.secure  # OS entropy by default
    assert rel.cost.epsilon == 0.5 and rel.cost.delta == 0.0
    # scale = Delta (1 + slack) / eps with slack <= 2**-20
    assert 4.0 < rel.params["scale"] <= 4.0 * (1 + 2**-20) * (1 + 1e-15)
    assert acct.spent.epsilon == pytest.approx(0.5)
    assert acct.ledger[0].mechanism == "laplace"


def test_laplace_output_on_grid_and_seeded_is_reproducible_and_marked():
    a = laplace_mechanism(np.arange(5.0), sensitivity=1.0, epsilon=1.0,
                          rng=np.random.default_rng(3))
    b = laplace_mechanism(np.arange(5.0), sensitivity=1.0, epsilon=1.0,
                          rng=np.random.default_rng(3))
    assert not a.secure
    np.testing.assert_array_equal(a.value, b.value)
    k = a.params["grid_exponent"]
    scaled = np.ldexp(a.value, k)
    np.testing.assert_array_equal(scaled, np.rint(scaled))


@pytest.mark.parametrize("make_rng", SOURCES)
def test_laplace_vector_noise_has_the_calibrated_scale(make_rng):
    # Laplace(b) has variance 2 b^2; 200k draws give the sd within 1% (z > 6 otherwise).
    rel = laplace_mechanism(np.zeros(200_000), sensitivity=3.0, epsilon=1.5,
                            rng=make_rng(0))
    b = rel.params["scale"]
    assert b == pytest.approx(2.0, rel=1e-5)
    assert np.std(rel.value) == pytest.approx(math.sqrt(2) * b, rel=0.01)
    # Kolmogorov-Smirnov against the continuous Laplace: the 2**-k grid is invisible.
    assert stats.kstest(rel.value[:20_000], "laplace", args=(0, b)).pvalue > 1e-4


@pytest.mark.parametrize("make_rng", SOURCES)
def test_laplace_per_coordinate_sensitivities(make_rng):
    sens = np.array([1.0, 2.0, 4.0])
    rel = laplace_mechanism(np.zeros((50_000, 3)), sensitivity=sens, epsilon=1.0,
                            rng=make_rng(1))
    scales = np.asarray(rel.params["scale"])
    assert scales.shape == (50_000, 3)
    np.testing.assert_allclose(scales[0], sens, rtol=1e-5)
    np.testing.assert_allclose(np.std(rel.value, axis=0), math.sqrt(2) * sens, rtol=0.03)


def test_refused_charge_releases_nothing():
    acct = PrivacyAccountant(total_epsilon=1.0)
    laplace_mechanism(1.0, sensitivity=1.0, epsilon=0.9, accountant=acct)
    with pytest.raises(BudgetExceededError, match="laplace"):
        laplace_mechanism(1.0, sensitivity=1.0, epsilon=0.2, accountant=acct)
    assert len(acct.ledger) == 1


def test_relation_is_recorded():
    acct = PrivacyAccountant(total_epsilon=1.0)
    rel = laplace_mechanism(1.0, sensitivity=1.0, epsilon=0.1, accountant=acct,
                            relation="replace-one")
    assert rel.relation is Neighbouring.REPLACE_ONE
    assert acct.ledger[0].relation is Neighbouring.REPLACE_ONE


def test_analytic_gaussian_sigma_meets_delta_exactly():
    # Balle and Wang's calibration: delta(eps) of the Gaussian at sigma equals the target.
    for eps, delta in [(1.0, 1e-5), (0.1, 1e-6), (5.0, 1e-3)]:
        sigma = gaussian_sigma(1.0, eps, delta)
        assert gdp_to_delta(1.0 / sigma, eps) == pytest.approx(delta, rel=1e-6)
    # the value quoted by Balle and Wang-style calculators for eps=1, delta=1e-5
    assert gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=1e-3)


def test_classic_gaussian_sigma_and_its_range():
    assert gaussian_sigma(2.0, 0.5, 1e-5, calibration="classic") == pytest.approx(
        2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5)
    # the analytic one is never larger than the classic one where both apply
    for eps in (0.05, 0.3, 0.9):
        assert gaussian_sigma(1.0, eps, 1e-5) <= gaussian_sigma(1.0, eps, 1e-5,
                                                                calibration="classic")
    with pytest.raises(InvalidParameterError, match="epsilon"):
        gaussian_sigma(1.0, 1.0, 1e-5, calibration="classic")
    with pytest.raises(InvalidParameterError, match="calibration"):
        gaussian_sigma(1.0, 0.5, 1e-5, calibration="fast")


@pytest.mark.parametrize("make_rng", SOURCES)
def test_gaussian_release_records_mu_and_noise_level(make_rng):
    acct = PrivacyAccountant(total_epsilon=2.0, total_delta=1e-4, composition="gdp")
    rel = gaussian_mechanism(np.zeros(100_000), sensitivity=1.0, epsilon=1.0, delta=1e-5,
                             accountant=acct, rng=make_rng(2))
    sigma = rel.params["sigma"]
    assert rel.cost.mu == pytest.approx(rel.params["effective_sensitivity"] / sigma)
    assert rel.params["effective_sensitivity"] <= 1.0 * (1 + 2**-19)
    assert np.std(rel.value) == pytest.approx(sigma, rel=0.01)
    assert acct.ledger[0].cost.mu == rel.cost.mu


@pytest.mark.parametrize("make_rng", SOURCES)
def test_discrete_laplace_mechanism_is_integer_and_exact_scale(make_rng):
    rel = discrete_laplace_mechanism(np.arange(100_000), sensitivity=2, epsilon=1.0,
                                     rng=make_rng(4))
    noise = rel.value - np.arange(100_000)
    assert rel.value.dtype == np.int64
    b = rel.params["scale"]
    assert b == pytest.approx(2.0)
    # P[N = 0] = (e^{1/b} - 1)/(e^{1/b} + 1); binomial sd 0.0014 -> 5-sigma band
    p0 = math.expm1(1 / b) / (math.exp(1 / b) + 1)
    assert np.mean(noise == 0) == pytest.approx(p0, abs=0.007)
    assert isinstance(discrete_laplace_mechanism(3, sensitivity=1, epsilon=1.0).value, int)


@pytest.mark.parametrize("make_rng", SOURCES)
def test_exponential_mechanism_frequencies(make_rng):
    # scores 0, 1, 2 with eps = 2, Delta = 1: p_i ~ exp(u_i). 4,000 draws; chi-square
    # goodness of fit at a 1e-4 false-alarm rate.
    scores = np.array([0.0, 1.0, 2.0])
    rng = make_rng(5)
    picks = [exponential_mechanism(scores, sensitivity=1.0, epsilon=2.0, rng=rng).value
             for _ in range(4000)]
    counts = np.bincount(picks, minlength=3)
    p = np.exp(scores) / np.exp(scores).sum()
    assert stats.chisquare(counts, 4000 * p).pvalue > 1e-4


def test_exponential_mechanism_monotonic_doubles_the_rate():
    a = exponential_mechanism(np.zeros(3), sensitivity=1.0, epsilon=1.0)
    b = exponential_mechanism(np.zeros(3), sensitivity=1.0, epsilon=1.0, monotonic=True)
    assert b.params["rate"] == pytest.approx(2 * a.params["rate"])
    assert a.params["rate"] < 0.5  # eps / (2 Delta') with Delta' > Delta


def test_exponential_mechanism_huge_gaps_do_not_overflow():
    # gamma = rate * gap = 5e8: a * gap is far beyond int64 (split into parts exactly)
    scores = np.array([0.0, 1e6, -1e6])
    rel = exponential_mechanism(scores, sensitivity=1e-3, epsilon=1.0,
                                rng=np.random.default_rng(0))
    assert rel.value == 1


def test_values_beyond_the_int64_grid_are_clamped_with_a_local_warning():
    with pytest.warns(RuntimeWarning, match="clamped"):
        rel = exponential_mechanism(np.array([0.0, 1e12]), sensitivity=1e-3, epsilon=1.0,
                                    rng=np.random.default_rng(0))
    assert rel.value == 1


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1"])
def test_bad_epsilon_is_named(bad):
    with pytest.raises(InvalidParameterError, match="epsilon"):
        laplace_mechanism(1.0, sensitivity=1.0, epsilon=bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, 1.0, 1.5, math.nan])
def test_bad_delta_is_named(bad):
    with pytest.raises(InvalidParameterError, match="delta"):
        gaussian_mechanism(1.0, sensitivity=1.0, epsilon=1.0, delta=bad)


def test_bad_inputs():
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        laplace_mechanism(1.0, sensitivity=0.0, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        laplace_mechanism([1.0, 2.0], sensitivity=[1.0, -1.0], epsilon=1.0)
    with pytest.raises(InvalidDataError, match="non-finite"):
        laplace_mechanism([1.0, math.nan], sensitivity=1.0, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="empty"):
        gaussian_mechanism([], sensitivity=1.0, epsilon=1.0, delta=1e-5)
    with pytest.raises(InvalidDataError, match="broadcast"):
        laplace_mechanism(np.zeros(3), sensitivity=np.ones(4), epsilon=1.0)
    with pytest.raises(InvalidDataError, match="integers"):
        discrete_laplace_mechanism(np.array([1.5]), sensitivity=1, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        discrete_laplace_mechanism(np.array([1]), sensitivity=0, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="scores"):
        exponential_mechanism(np.zeros((2, 2)), sensitivity=1.0, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="relation"):
        laplace_mechanism(1.0, sensitivity=1.0, epsilon=1.0, relation="sideways")
    with pytest.raises(InvalidParameterError, match="rng"):
        laplace_mechanism(1.0, sensitivity=1.0, epsilon=1.0, rng=42)
    with pytest.raises(InvalidParameterError, match="accountant"):
        laplace_mechanism(1.0, sensitivity=1.0, epsilon=1.0, accountant=object())


def test_discrete_laplace_refuses_an_unrepresentable_scale_before_charging():
    """A scale below the exact sampler's range (epsilon far above the sensitivity) is
    refused by name before the accountant is charged (issue 26 review)."""
    from privot.privacy import PrivacyAccountant
    from privot.privacy.mechanisms import discrete_laplace_mechanism

    acct = PrivacyAccountant(total_epsilon=1e6)
    with pytest.raises(InvalidParameterError) as info:
        discrete_laplace_mechanism(np.array([1, 2]), sensitivity=2, epsilon=1e5,
                                   accountant=acct, rng=np.random.default_rng(0))
    assert info.value.name == "epsilon" and "nothing was charged" in str(info.value)
    assert len(acct.ledger) == 0
    ok = discrete_laplace_mechanism(np.array([1, 2]), sensitivity=2, epsilon=1000.0,
                                    accountant=acct, rng=np.random.default_rng(0))
    assert ok.cost.epsilon == 1000.0
