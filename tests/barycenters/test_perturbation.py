"""Output perturbation: the anchored step, its sensitivity bound, splitting, calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.barycenters.perturbation import (
    SPLITS_CONSTANT,
    anchored_step,
    output_perturbation,
    paper_sigma,
    perturbation_sensitivity,
    recommended_splits,
    split_groups,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy import PrivacyAccountant
from privot.privacy.accounting import gdp_mu_for


def _ball(rng: np.random.Generator, n: int, d: int = 2) -> np.ndarray:
    x = rng.normal(size=(n, d))
    r = 0.5 * rng.uniform(0, 1, size=(n, 1)) ** (1 / d)  # uniform in the ball B_0(1/2)
    return x / np.linalg.norm(x, axis=1, keepdims=True) * r


def test_paper_sigma_is_the_papers_formula():
    m, k, eps, delta = 48, 4, 0.5, 1e-5
    expected = math.sqrt(2 * m * math.log(1.25 / delta)) / (eps * k)
    assert paper_sigma(m=m, k=k, epsilon=eps, delta=delta) == pytest.approx(expected, rel=1e-12)
    # splitting into k' parts divides sigma by k' (paper 001 Prop. 6)
    assert paper_sigma(m=m, k=k, epsilon=eps, delta=delta, splits=10) == pytest.approx(
        expected / 10, rel=1e-12)


def test_recommended_splits_follows_thm8_exponents():
    base = recommended_splits(10**5, m=48, d=2, epsilon=1.0, delta=1e-5, k=1, constant=1)
    # p = 2: k'* ~ n^(1/5) m^(1/5) d^(2/5) L^(2/5) (eps k)^(-4/5), L = 2 ln(1.25/delta)
    expected = (10**5) ** 0.2 * 48**0.2 * 2**0.4 * (2 * math.log(1.25e5)) ** 0.4
    assert base == round(expected)
    assert recommended_splits(32 * 10**5, m=48, d=2, epsilon=1.0, delta=1e-5, k=1,
                              constant=1) == round(2 * expected)
    assert recommended_splits(10**5, m=48, d=2, epsilon=2**1.25, delta=1e-5, k=1,
                              constant=1) == round(expected / 2)
    # the default constant (measured, see SPLITS_CONSTANT) scales it linearly
    assert recommended_splits(10**5, m=48, d=2, epsilon=1.0, delta=1e-5,
                              k=1) == round(SPLITS_CONSTANT * expected)
    assert recommended_splits(10, m=48, d=2, epsilon=0.01, delta=1e-5, k=1) == 10  # <= n


def test_split_is_a_partition_with_balanced_sizes():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(103, 2))
    parts = split_groups([g], 10, rng)[0]
    assert len(parts) == 10
    sizes = sorted(len(p) for p in parts)
    assert sizes[0] == 10 and sizes[-1] == 11
    stacked = np.vstack(parts)
    assert sorted(map(tuple, stacked)) == sorted(map(tuple, g))
    with pytest.raises(InvalidParameterError, match="splits"):
        split_groups([g[:5]], 6, rng)


def test_anchored_step_is_the_barycentric_fixed_point_step():
    # one group, m = n: the plan is a permutation, the step returns the points themselves
    rng = np.random.default_rng(1)
    g = _ball(rng, 6)
    anchor = g[::-1] + 0.01
    out = anchored_step([[g]], anchor, group_weights=np.array([1.0]))
    assert sorted(map(tuple, np.round(out, 12))) == sorted(map(tuple, np.round(g, 12)))
    # m = 1: the step is the weighted mean of the group means
    g2 = _ball(rng, 9)
    out = anchored_step([[g], [g2]], np.zeros((1, 2)), group_weights=np.array([0.25, 0.75]))
    np.testing.assert_allclose(out[0], 0.25 * g.mean(0) + 0.75 * g2.mean(0), atol=1e-12)


def test_sensitivity_bound_holds_on_adversarial_neighbours():
    """Replace one point by its antipode, many random cases: ||F(D)-F(D')|| <= sqrt(m)/(k k')."""
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(200):
        k, kp, m = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
        groups = [_ball(rng, int(rng.integers(kp * 2, kp * 6))) for _ in range(k)]
        anchor = _ball(rng, m)
        beta = np.full(k, 1.0 / k)
        split_rng = int(rng.integers(1 << 30))
        parts = split_groups(groups, kp, np.random.default_rng(split_rng))
        i, j = int(rng.integers(k)), int(rng.integers(len(groups[0])))
        changed = [g.copy() for g in groups]
        j = min(j, len(changed[i]) - 1)
        v = rng.normal(size=2)
        changed[i][j] = 0.5 * v / np.linalg.norm(v)
        parts1 = split_groups(changed, kp, np.random.default_rng(split_rng))
        f0 = anchored_step(parts, anchor, group_weights=beta)
        f1 = anchored_step(parts1, anchor, group_weights=beta)
        ratio = np.linalg.norm(f0 - f1) / perturbation_sensitivity(m, beta, kp)
        worst = max(worst, ratio)
    assert worst <= 1.0 + 1e-12
    assert worst > 0.2  # the bound is not vacuous on these cases


def test_release_calibration_and_composition():
    rng = np.random.default_rng(3)
    groups = [_ball(rng, 200) for _ in range(3)]
    anchor = _ball(rng, 5)
    rel = output_perturbation(groups, anchor, epsilon=2.0, delta=1e-6, splits=4, iterations=4,
                              rng=7)
    sens = math.sqrt(5) / 12
    assert rel.sensitivity == pytest.approx(sens)
    # four steps of mu/2 compose to mu = gdp_mu_for(2, 1e-6) (effective sensitivity adds
    # the lattice term, < 1e-5 relative)
    assert rel.cost.mu == pytest.approx(gdp_mu_for(2.0, 1e-6), rel=1e-6)
    assert rel.sigma == pytest.approx(sens * 2 / gdp_mu_for(2.0, 1e-6), rel=1e-5)
    assert len(rel.trajectory) == 4 and rel.secure is False
    classic = output_perturbation(groups, anchor, epsilon=0.5, delta=1e-6, splits=4,
                                  calibration="classic", rng=7)
    assert classic.sigma == pytest.approx(
        paper_sigma(m=5, k=3, epsilon=0.5, delta=1e-6, splits=4), rel=1e-5)


def test_same_seed_same_release_and_accountant_charged_first():
    rng = np.random.default_rng(4)
    groups = [_ball(rng, 50)]
    anchor = _ball(rng, 3)
    a = output_perturbation(groups, anchor, epsilon=1.0, delta=1e-5, rng=11).support
    b = output_perturbation(groups, anchor, epsilon=1.0, delta=1e-5, rng=11).support
    np.testing.assert_array_equal(a, b)
    acc = PrivacyAccountant(1.5, 1e-5)
    output_perturbation(groups, anchor, epsilon=1.0, delta=1e-5, rng=11, accountant=acc)
    from privot.errors import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        output_perturbation(groups, anchor, epsilon=1.0, delta=1e-5, rng=11, accountant=acc)


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
    ({"splits": 0}, "splits"),
    ({"splits": 51}, "splits"),
    ({"iterations": 0}, "iterations"),
    ({"calibration": "fast"}, "calibration"),
])
def test_bad_parameters_are_named(kwargs, name):
    rng = np.random.default_rng(5)
    groups = [_ball(rng, 50)]
    args = {"epsilon": 1.0, "delta": 1e-5, "rng": 0} | kwargs
    with pytest.raises(InvalidParameterError, match=name):
        output_perturbation(groups, _ball(rng, 3), **args)


def test_bad_data_is_refused():
    rng = np.random.default_rng(6)
    good = _ball(rng, 10)
    with pytest.raises(InvalidDataError):
        output_perturbation([], good[:2], epsilon=1, delta=1e-5)
    with pytest.raises(InvalidDataError):
        output_perturbation([good, _ball(rng, 10, d=3)], good[:2], epsilon=1, delta=1e-5)
    with pytest.raises(InvalidDataError, match="anchor"):
        output_perturbation([good], np.array([[np.nan, 0.0]]), epsilon=1, delta=1e-5)
    with pytest.raises(InvalidDataError, match="numeric"):
        output_perturbation([np.array([["a", "b"]])], good[:2], epsilon=1, delta=1e-5)
    with pytest.raises(InvalidDataError, match="non-empty"):
        output_perturbation([np.zeros((0, 2))], good[:2], epsilon=1, delta=1e-5)
    # a NaN row is unusable, not an error (tests/barycenters/test_perturbation_total.py)
