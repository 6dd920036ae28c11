"""Tests of privot.privacy.accounting: composition, amplification, GDP, PLD/RDP, calibration."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from privot.errors import InvalidParameterError
from privot.privacy import accounting as acc
from privot.privacy.types import Neighbouring, PrivacyCost

VDI = 1e-3  # coarse PLD grid: fast, still an upper bound (pessimistic rounding)
NR = dp_accounting.NeighboringRelation

eps_st = st.floats(min_value=1e-3, max_value=5.0)
delta_st = st.floats(min_value=0.0, max_value=1e-3)
cost_st = st.builds(PrivacyCost, eps_st, delta_st)


# -- existing GDP conversions -----------------------------------------------------------


def test_gdp_round_trip():
    mu = acc.gdp_mu_for(1.0, 1e-5)
    assert acc.gdp_to_epsilon(mu, 1e-5) == pytest.approx(1.0, rel=1e-8)
    assert acc.gdp_to_delta(mu, 1.0) == pytest.approx(1e-5, rel=1e-6)


# -- composition --------------------------------------------------------------------------


def test_compose_basic_exact_values():
    out = acc.compose_basic([PrivacyCost(0.5, 1e-6), PrivacyCost(0.25, 2e-6)])
    assert out.epsilon == pytest.approx(0.75)
    assert out.delta == pytest.approx(3e-6)
    assert out.mu is None


def test_compose_basic_carries_exact_gdp():
    out = acc.compose_basic([PrivacyCost(math.inf, 0.0, mu=3.0), PrivacyCost(math.inf, 0.0, 4.0)])
    assert out.mu == pytest.approx(5.0)
    assert acc.gdp_compose([1.0] * 4) == pytest.approx(2.0)


def test_compose_basic_refuses_inf_without_mu():
    with pytest.raises(InvalidParameterError, match="costs"):
        acc.compose_basic([PrivacyCost(math.inf, 0.0, mu=1.0), PrivacyCost(1.0)])


@pytest.mark.parametrize("bad", [[], None, PrivacyCost(1.0), [1.0]])
def test_compose_validation(bad):
    with pytest.raises(InvalidParameterError):
        acc.compose_basic(bad)


def test_compose_parallel_is_max():
    out = acc.compose_parallel([PrivacyCost(0.5, 1e-6), PrivacyCost(0.2, 3e-6)])
    assert (out.epsilon, out.delta) == (0.5, 3e-6)


@settings(max_examples=50, deadline=None)
@given(st.lists(cost_st, min_size=1, max_size=6), cost_st)
def test_composition_monotone(costs, extra):
    before = acc.compose_basic(costs)
    after = acc.compose_basic([*costs, extra])
    assert after.epsilon > before.epsilon
    assert after.delta >= before.delta
    par = acc.compose_parallel(costs)
    assert par.epsilon <= before.epsilon + 1e-12
    assert acc.compose_parallel([*costs, extra]).epsilon >= par.epsilon


def test_compose_advanced_formula_and_beats_basic_for_many_steps():
    cost = PrivacyCost(0.01, 1e-8)
    out = acc.compose_advanced(cost, k=10_000, delta_slack=1e-6)
    expected = 0.01 * math.sqrt(2 * 10_000 * math.log(1e6)) + 10_000 * 0.01 * math.expm1(0.01)
    assert out.epsilon == pytest.approx(expected, rel=1e-12)
    assert out.delta == pytest.approx(10_000 * 1e-8 + 1e-6)
    assert out.epsilon < 10_000 * 0.01  # far below basic composition (100)
    with pytest.raises(InvalidParameterError, match="delta_slack"):
        acc.compose_advanced(cost, k=3, delta_slack=0.0)
    with pytest.raises(InvalidParameterError, match="k"):
        acc.compose_advanced(cost, k=0, delta_slack=1e-6)


# -- amplification -------------------------------------------------------------------------


def test_amplification_known_values():
    out = acc.amplify_poisson(PrivacyCost(1.0, 1e-5), sampling_rate=0.1)
    assert out.epsilon == pytest.approx(math.log(1 + 0.1 * (math.e - 1)), rel=1e-14)
    assert out.delta == pytest.approx(1e-6)
    # Lemma 5.1 of paper 004: p = max(n'_i / n_i) over categories -> max(10/100, 30/200)
    out = acc.amplify_fixed_size(PrivacyCost(2.0, 1e-5), sample_size=[10, 30],
                                 population_size=[100, 200])
    assert out.epsilon == pytest.approx(math.log(1 + 0.15 * math.expm1(2.0)), rel=1e-14)
    assert out.delta == pytest.approx(0.15e-5)
    same = acc.amplify_fixed_size(PrivacyCost(2.0), sample_size=50, population_size=50)
    assert same.epsilon == pytest.approx(2.0)


@settings(max_examples=60, deadline=None)
@given(cost_st, st.floats(min_value=1e-6, max_value=1.0))
def test_amplification_never_increases_epsilon(cost, q):
    out = acc.amplify_poisson(cost, sampling_rate=q)
    assert out.epsilon <= cost.epsilon * (1 + 1e-12)
    assert out.delta <= cost.delta
    # ... and is monotone in q
    smaller = acc.amplify_poisson(cost, sampling_rate=q / 2)
    assert smaller.epsilon <= out.epsilon


@pytest.mark.parametrize("kwargs", [
    dict(sample_size=11, population_size=10),
    dict(sample_size=0, population_size=10),
    dict(sample_size=[1, 2], population_size=[10]),
    dict(sample_size=1.5, population_size=10),
])
def test_amplify_fixed_size_validation(kwargs):
    with pytest.raises(InvalidParameterError):
        acc.amplify_fixed_size(PrivacyCost(1.0), **kwargs)


@pytest.mark.parametrize("q", [0.0, 1.5, -0.1, float("nan")])
def test_amplify_poisson_validation(q):
    with pytest.raises(InvalidParameterError, match="sampling_rate"):
        acc.amplify_poisson(PrivacyCost(1.0), sampling_rate=q)


# -- GDP central limit theorem ---------------------------------------------------------------


def test_gdp_clt_mu_value():
    mu = acc.gdp_clt_mu(noise_multiplier=1.0, sampling_rate=0.2, steps=500)
    assert mu == pytest.approx(0.2 * math.sqrt(500 * (math.e - 1)), rel=1e-14)
    eps = acc.gdp_clt_epsilon(noise_multiplier=1.0, sampling_rate=0.2, steps=500, delta=1e-5)
    assert eps == pytest.approx(acc.gdp_to_epsilon(mu, 1e-5))


# -- PLD / RDP ---------------------------------------------------------------------------------


def _subsampled_gaussian_remove_epsilon(sigma, p, delta):
    """Analytic single-step epsilon of (1-p)N(0,1)+pN(1/sigma,1) vs N(0,1) (the remove
    direction): delta(eps) = p * H_{e^eps'}(N(mu)||N(0)), e^eps' = 1 + (e^eps - 1)/p."""
    mu = 1.0 / sigma

    def d(eps):
        ep = math.log1p(math.expm1(eps) / p)
        a = 0.5 * special.erfc((ep / mu - mu / 2) / math.sqrt(2))
        b = math.exp(ep) * 0.5 * special.erfc((ep / mu + mu / 2) / math.sqrt(2))
        return p * (a - b) - delta

    return optimize.brentq(d, 1e-9, 50.0)


def test_fixed_size_pld_single_step_matches_analytic_profile():
    # One step of C_p(G_mu): for eps >= 0 its privacy profile is that of f_p.
    exact = _subsampled_gaussian_remove_epsilon(0.8, 0.3, 1e-5)
    got = acc.pld_epsilon(noise_multiplier=0.8, sampling_rate=0.3, steps=1, delta=1e-5,
                          sampling="fixed-size", value_discretization_interval=1e-4)
    assert exact <= got <= exact + 2e-3  # upper bound, within a few grid steps


def test_fixed_size_pld_without_subsampling_is_gaussian_composition():
    # p = 1: C_1(G_mu)^T = G_{mu sqrt(T)} exactly (Dong, Roth and Su, Cor. 3.3).
    exact = acc.gdp_to_epsilon(math.sqrt(20) / 4.0, 1e-5)
    got = acc.pld_epsilon(noise_multiplier=4.0, sampling_rate=1.0, steps=20, delta=1e-5,
                          sampling="fixed-size", value_discretization_interval=VDI)
    assert exact <= got <= exact + 0.02


def test_poisson_pld_matches_dp_accounting():
    ours = acc.pld_epsilon(noise_multiplier=1.5, sampling_rate=0.1, steps=50, delta=1e-5,
                           value_discretization_interval=VDI)
    a = dp_accounting.pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE, VDI)
    a.compose(dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.5)), 50)
    assert ours == pytest.approx(a.get_epsilon(1e-5), rel=1e-12)


@pytest.mark.parametrize("sampling", ["poisson", "fixed-size"])
@settings(max_examples=5, deadline=None)
@given(sigma=st.floats(min_value=0.7, max_value=3.0), q=st.floats(min_value=0.01, max_value=0.5),
       steps=st.integers(min_value=1, max_value=40))
def test_pld_never_looser_than_rdp(sampling, sigma, q, steps):
    kw = dict(noise_multiplier=sigma, sampling_rate=q, steps=steps, delta=1e-5,
              sampling=sampling)
    pld = acc.pld_epsilon(**kw, value_discretization_interval=VDI)
    rdp = acc.rdp_epsilon(**kw)
    assert pld <= rdp * (1 + 1e-9) + 1e-9


def test_epsilon_decreases_with_noise_and_gdp_clt_is_an_approximation():
    kw = dict(sampling_rate=0.2, steps=100, delta=1e-5)
    e1 = acc.epsilon_for(noise_multiplier=1.0, accountant="pld",
                         value_discretization_interval=VDI, **kw)
    e2 = acc.epsilon_for(noise_multiplier=2.0, accountant="pld",
                         value_discretization_interval=VDI, **kw)
    assert e2 < e1
    # GDP-CLT is close to PLD here but is not a bound: we only assert it is near.
    clt = acc.epsilon_for(noise_multiplier=2.0, accountant="gdp-clt", **kw)
    assert abs(clt - e2) / e2 < 0.25


@pytest.mark.parametrize("kwargs, name", [
    (dict(noise_multiplier=0.0), "noise_multiplier"),
    (dict(sampling_rate=0.0), "sampling_rate"),
    (dict(steps=0), "steps"),
    (dict(steps=2.0), "steps"),
    (dict(delta=0.0), "delta"),
    (dict(sampling="shuffle"), "sampling"),
    (dict(accountant="moments"), "accountant"),
])
def test_epsilon_for_validation(kwargs, name):
    base = dict(noise_multiplier=1.0, sampling_rate=0.1, steps=10, delta=1e-5)
    base.update(kwargs)
    with pytest.raises(InvalidParameterError, match=name):
        acc.epsilon_for(**base)


# -- calibration ---------------------------------------------------------------------------------


def test_calibration_pld_poisson_matches_dp_accounting():
    res = acc.calibrate_noise_multiplier(1.0, 1e-5, steps=100, sampling_rate=0.1,
                                         value_discretization_interval=VDI, rtol=1e-5)
    theirs = dp_accounting.calibrate_dp_mechanism(
        lambda: dp_accounting.pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE, VDI),
        lambda s: dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(s)), 100),
        1.0, 1e-5, tol=1e-5)
    assert res.noise_multiplier == pytest.approx(theirs, rel=1e-4)
    assert res.epsilon <= 1.0
    assert res.relation is Neighbouring.ADD_REMOVE and res.is_upper_bound
    assert (res.accountant, res.sampling, res.steps) == ("pld", "poisson", 100)


def test_calibration_rdp_fixed_size_matches_dp_accounting():
    res = acc.calibrate_noise_multiplier(2.0, 1e-5, steps=20, sampling_rate=0.25,
                                         accountant="rdp", sampling="fixed-size", rtol=1e-4)
    theirs = dp_accounting.calibrate_dp_mechanism(
        lambda: dp_accounting.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE),
        lambda s: dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                1000, 250, dp_accounting.GaussianDpEvent(s)), 20),
        2.0, 1e-5, bracket_interval=dp_accounting.ExplicitBracketInterval(0.3, 30.0),
        tol=1e-5)
    assert res.noise_multiplier == pytest.approx(theirs, rel=2e-4)
    assert res.relation is Neighbouring.REPLACE_ONE
    assert res.epsilon <= 2.0


def test_calibration_gdp_clt_closed_form_and_ordering():
    clt = acc.calibrate_noise_multiplier(1.0, 1e-5, steps=100, sampling_rate=0.1,
                                         accountant="gdp-clt")
    assert not clt.is_upper_bound
    assert clt.epsilon == pytest.approx(1.0, rel=1e-9)
    pld = acc.calibrate_noise_multiplier(1.0, 1e-5, steps=100, sampling_rate=0.1,
                                         sampling="fixed-size",
                                         value_discretization_interval=VDI)
    rdp_p = acc.calibrate_noise_multiplier(1.0, 1e-5, steps=100, sampling_rate=0.1,
                                           accountant="rdp")
    pld_p = acc.calibrate_noise_multiplier(1.0, 1e-5, steps=100, sampling_rate=0.1,
                                           value_discretization_interval=VDI)
    assert pld_p.noise_multiplier <= rdp_p.noise_multiplier  # tight accountant needs less noise
    assert pld_p.noise_multiplier <= pld.noise_multiplier  # replace-one costs more than add/remove


@pytest.mark.parametrize("kwargs, name", [
    (dict(epsilon=0.0), "epsilon"),
    (dict(delta=1.0), "delta"),
    (dict(rtol=0.7), "rtol"),
    (dict(rtol=-1.0), "rtol"),
    (dict(accountant="x"), "accountant"),
])
def test_calibration_validation(kwargs, name):
    base = dict(epsilon=1.0, delta=1e-5, steps=10, sampling_rate=0.1)
    base.update(kwargs)
    eps, delta = base.pop("epsilon"), base.pop("delta")
    with pytest.raises(InvalidParameterError, match=name):
        acc.calibrate_noise_multiplier(eps, delta, **base)


@pytest.mark.parametrize("sampling", ["poisson", "fixed-size"])
def test_pld_epsilon_curve_matches_pointwise(sampling):
    from privot.privacy.accounting import pld_epsilon_curve

    kw = dict(noise_multiplier=2.0, sampling_rate=0.1, delta=1e-5, sampling=sampling)
    curve = pld_epsilon_curve(steps=[1, 7, 30], **kw)
    for t, e in zip([1, 7, 30], curve, strict=True):
        assert e == pytest.approx(acc.pld_epsilon(steps=t, **kw), rel=1e-9)
