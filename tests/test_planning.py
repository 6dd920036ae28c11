"""privot.planning: the smallest epsilon whose stated error meets a target (issue 28)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from privot.error_bounds import ErrorStatement
from privot.errors import BudgetExceededError, InvalidParameterError
from privot.grid import Grid
from privot.heatmaps import HeatmapParams, heatmap_error
from privot.planning import (
    REL_TOL,
    affordability,
    epsilon_for_error,
    error_curve,
    refuse_unaffordable,
)
from privot.privacy import PrivacyAccountant
from privot.privacy.types import PrivacyCost


def _toy(c: float = 2.0, floor: float = 0.0, calls: list | None = None):
    """bound = floor + c / epsilon (decreasing), in 'units'."""
    def state(eps: float) -> ErrorStatement:
        if calls is not None:
            calls.append(eps)
        return ErrorStatement(metric="toy", bound=floor + c / eps, confidence=0.9,
                              units="units", covers="the toy noise")
    return state


def _heatmap_state(resolution: int = 64, method: str = "pyramid", n_users=None):
    params = HeatmapParams(grid=Grid((0, 1, 0, 1), resolution), epsilon=1.0, method=method)
    return lambda e: heatmap_error(replace(params, epsilon=e), n_users=n_users)


@pytest.mark.parametrize("target", [0.01, 0.37, 5.0, 123.0])
def test_toy_plan_is_the_smallest_epsilon_within_tolerance(target):
    state = _toy()
    plan = epsilon_for_error(state, target)
    exact = 2.0 / target
    assert plan.statement.bound <= target
    assert exact <= plan.epsilon <= exact * (1 + REL_TOL) ** 2
    # a slightly smaller epsilon does not meet the target
    assert state(plan.epsilon * (1 - 3 * REL_TOL)).bound > target
    assert state(plan.lower).bound > target
    assert plan.monotone_on_scan
    assert plan.evaluations < 40


def test_heatmap_plan_meets_the_target_and_a_smaller_epsilon_does_not():
    state = _heatmap_state()
    plan = epsilon_for_error(state, 5000.0)
    assert plan.statement.bound <= 5000.0
    assert plan.statement.units == "cells x users"
    assert state(plan.epsilon * (1 - 3 * REL_TOL)).bound > 5000.0
    assert str(plan).startswith(f"epsilon = {plan.epsilon:.6g}: EMD")
    assert plan.to_dict()["statement"]["bound"] == plan.statement.bound


def test_a_target_met_at_epsilon_min_returns_epsilon_min():
    # with a public lower bound on n, the EMD is capped by the grid's diameter
    state = _heatmap_state(resolution=8, n_users=10)
    plan = epsilon_for_error(state, 100.0, epsilon_min=0.01)
    assert plan.epsilon == 0.01 and plan.lower == 0.0


def test_error_curve_is_the_statements_bounds():
    state = _toy(c=3.0)
    assert error_curve(state, [1, 3.0]) == [(1.0, 3.0), (3.0, 1.0)]
    with pytest.raises(InvalidParameterError, match="epsilons"):
        error_curve(state, [0.0])


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1"])
def test_bad_targets_are_refused(bad):
    with pytest.raises(InvalidParameterError, match="target_error"):
        epsilon_for_error(_toy(), bad)


def test_unreachable_target_names_the_best_bound():
    with pytest.raises(InvalidParameterError) as info:
        epsilon_for_error(_toy(floor=1.0), 0.5, epsilon_max=100.0)
    text = str(info.value)
    assert info.value.name == "target_error" and info.value.value == 0.5
    assert "target_error=0.5 units is not reachable" in text
    assert "best reachable bound is 1.02 units" in text


def test_infinite_bound_is_refused_naming_what_would_state_one():
    with pytest.raises(InvalidParameterError) as info:
        epsilon_for_error(_heatmap_state(method="threshold"), 100.0,
                          alternative="--method pyramid")
    text = str(info.value)
    assert "states no finite error bound" in text and "threshold" in text
    assert "--method pyramid states a finite bound" in text


def test_bound_finite_only_at_some_epsilons_reports_the_best_finite_one():
    def state(eps):
        bound = 4.0 / eps if eps < 1 else math.inf  # a plan change at epsilon = 1
        return ErrorStatement(metric="m", bound=bound, confidence=0.9, units="u",
                              covers="c")
    # the best scanned finite bound: 4 / 10**-0.5 at epsilon = 0.316 (2 points a decade)
    with pytest.raises(InvalidParameterError,
                       match=r"best bound stated .* is 12\.649\d* u \(at epsilon = 0\.316"):
        epsilon_for_error(state, 1.0)


def test_non_monotone_bounds_are_flagged_and_still_meet_the_target():
    def state(eps):  # rises, then falls below the target
        bound = 5.0 if eps < 0.1 else 8.0 if eps < 10 else 1.0
        return ErrorStatement(metric="m", bound=bound, confidence=1.0, units="u",
                              covers="c")
    plan = epsilon_for_error(state, 2.0)
    assert plan.statement.bound <= 2.0 and not plan.monotone_on_scan


def test_budget_refusal_states_the_best_reachable_error():
    state = _toy(c=2.0)
    acct = PrivacyAccountant(1.0)
    acct.spend(PrivacyCost(0.75), mechanism="earlier")
    with pytest.raises(BudgetExceededError) as info:
        epsilon_for_error(state, 1.0, budget=acct)  # needs epsilon 2, 0.25 left
    text = str(info.value)
    assert "needs epsilon = 2" in text
    # the best error with 0.25 left: 2 / 0.25 = 8
    assert "best error reachable with the remaining budget is 8" in text
    assert "at epsilon = 0.25" in text
    # an affordable plan passes; a remaining number works the same way
    assert epsilon_for_error(state, 10.0, budget=acct).epsilon <= 0.25
    with pytest.raises(BudgetExceededError, match="reachable .* is 4 units"):
        epsilon_for_error(state, 1.0, budget=0.5)


def test_budget_with_nothing_left_says_so():
    plan = epsilon_for_error(_toy(), 1.0)
    with pytest.raises(BudgetExceededError, match="not even epsilon"):
        refuse_unaffordable(plan, _toy(), lambda e: False)
    with pytest.raises(InvalidParameterError, match="budget"):
        affordability("lots")


def _grid(lo=0.05, hi=50.0, n=12):
    return list(np.geomspace(lo, hi, n))


def _non_increasing(curve):
    bounds = [b for _, b in curve]
    return all(b2 <= b1 * (1 + 1e-9) for b1, b2 in zip(bounds, bounds[1:], strict=False))


@pytest.mark.parametrize("method", ["pyramid", "laplace"])
def test_heatmap_bound_is_non_increasing_in_epsilon(method):
    assert _non_increasing(error_curve(_heatmap_state(method=method), _grid()))
    assert _non_increasing(error_curve(_heatmap_state(method=method, n_users=50), _grid()))


@pytest.mark.parametrize("name", ["wpm", "krr"])
def test_sample_bound_is_non_increasing_in_epsilon(name):
    from privot.sampling import make_mechanism
    from privot.sampling.error import sample_error

    pts = Grid((0, 1, 0, 1), 5, dyadic=False).cell_centre_points()
    curve = error_curve(lambda e: sample_error(make_mechanism(name, points=pts, epsilon=e),
                                               points=pts), _grid(0.1, 20.0, 8))
    assert _non_increasing(curve)


def test_barycenter_mean_only_bound_is_non_increasing_in_epsilon():
    from privot._params import build_params
    from privot.barycenters import BarycenterParams, barycenter_error

    def state(e):
        params = build_params(BarycenterParams, None, {"epsilon": e, "m": 4,
                                                       "method": "subspace",
                                                       "subspace_dim": 0})
        return barycenter_error(params, [300, 500], 6)
    curve = error_curve(state, _grid())
    assert all(math.isfinite(b) for _, b in curve) and _non_increasing(curve)


def test_learning_bound_is_non_increasing_in_epsilon():
    from privot.learning.error import learning_error
    from privot.learning.params import LearningParams

    def state(e):
        return learning_error(LearningParams(target_epsilon=e, target_delta=1e-6),
                              [400, 400], 20)
    assert _non_increasing(error_curve(state, [0.5, 1.0, 4.0]))
