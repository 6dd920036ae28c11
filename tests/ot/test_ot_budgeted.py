"""The total exact solver: budgeted_plan, round_to_polytope, plan_budget."""

from __future__ import annotations

import warnings

import numpy as np
import ot
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot import (
    BudgetedPlan,
    budgeted_plan,
    ground_cost,
    plan_budget,
    round_to_polytope,
)
from privot.ot._exact import PLAN_ITER_PER_ENTRY, PLAN_MIN_ITER


def _assert_coupling(plan, a, b, tol=1e-12):
    assert np.all(plan >= 0) and np.all(np.isfinite(plan))
    np.testing.assert_allclose(plan.sum(axis=1), a, rtol=0, atol=tol)
    np.testing.assert_allclose(plan.sum(axis=0), b, rtol=0, atol=tol)


@pytest.mark.parametrize("n, m, seed", [(50, 7, 0), (200, 30, 1), (31, 31, 2)])
@pytest.mark.parametrize("max_iter", [1, 2, 10, 50])
def test_the_cap_gives_a_coupling_never_an_error(n, m, seed, max_iter):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    a, b = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m)
    a, b = a / a.sum(), b / b.sum()
    plan, optimal = budgeted_plan(x, y, a=a, b=b, max_iter=max_iter)
    assert optimal is False
    _assert_coupling(plan, a, b)


def test_the_repair_makes_pots_capped_plan_a_coupling():
    """Why the repair is needed: at its iteration cap POT's plan need not be a coupling
    (POT 0.9 returns one that misses the column sums by more than 1e-3 here, with a
    UserWarning; that is POT's behaviour, not asserted). Whatever POT returns, the
    repaired plan is in Pi(a, b) and within the L1 distance of Lemma 7 (AWR 2017) of it;
    a plan that already is a coupling is left as it is."""
    rng = np.random.default_rng(3)
    a, b = np.full(50, 1 / 50), np.full(7, 1 / 7)
    cost = ground_cost(rng.normal(size=(50, 2)), rng.normal(size=(7, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # POT's, version-dependent
        plan = np.asarray(ot.emd(a, b, cost, numItermax=2), dtype=float)
    clean = np.where(np.isfinite(plan), np.maximum(plan, 0.0), 0.0)
    missing = np.abs(clean.sum(axis=1) - a).sum() + np.abs(clean.sum(axis=0) - b).sum()
    repaired = round_to_polytope(plan, a, b)
    _assert_coupling(repaired, a, b)
    assert np.abs(repaired - clean).sum() <= 2 * missing + 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_default_budget_is_optimal_and_matches_pot(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(5, 120)), int(rng.integers(2, 40))
    x, y = rng.normal(size=(n, 3)), rng.normal(size=(m, 3))
    res = budgeted_plan(x, y)
    assert isinstance(res, BudgetedPlan) and res.optimal is True
    cost = ground_cost(x, y)
    _assert_coupling(res.plan, np.full(n, 1 / n), np.full(m, 1 / m))
    expected = ot.emd2(np.full(n, 1 / n), np.full(m, 1 / m), cost)
    assert float(np.sum(res.plan * cost)) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_round_to_polytope():
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, 9)
    b = rng.uniform(0, 1, 5)
    b *= a.sum() / b.sum()
    for f in (rng.uniform(0, 1, (9, 5)), np.zeros((9, 5)), np.outer(a, b) * 3):
        _assert_coupling(round_to_polytope(f, a, b), a, b)
    # a feasible plan is left alone
    plan = np.outer(a, b) / b.sum()
    np.testing.assert_allclose(round_to_polytope(plan, a, b), plan, atol=1e-15)
    # all zero: the independent coupling
    np.testing.assert_allclose(round_to_polytope(np.zeros((9, 5)), a, b), plan, atol=1e-15)
    # negative and non-finite entries are dropped first
    bad = rng.uniform(-1, 1, (9, 5))
    bad[0, 0], bad[3, 2] = np.nan, np.inf
    _assert_coupling(round_to_polytope(bad, a, b), a, b)
    # zero weights stay empty
    a0 = a.copy()
    a0[2] = 0.0
    b0 = b * a0.sum() / b.sum()
    out = round_to_polytope(rng.uniform(0, 1, (9, 5)), a0, b0)
    _assert_coupling(out, a0, b0)
    assert out[2].sum() == 0.0
    with pytest.raises(InvalidParameterError, match="plan"):
        round_to_polytope(np.zeros((5, 9)), a, b)


def test_plan_budget_depends_on_sizes_only():
    assert plan_budget(10, 10) == PLAN_MIN_ITER
    assert plan_budget(200_000, 48) == PLAN_ITER_PER_ENTRY * 200_000 * 48
    with pytest.raises(InvalidParameterError, match="n"):
        plan_budget(0, 3)


def test_bad_input_is_refused():
    x = np.zeros((3, 2))
    with pytest.raises(InvalidParameterError, match="max_iter"):
        budgeted_plan(x, x, max_iter=0)
    with pytest.raises(InvalidDataError, match="non-finite"):
        budgeted_plan(np.array([[np.nan, 0.0]]), x)
    with pytest.raises(InvalidParameterError, match="metric"):
        budgeted_plan(x, x, metric="cosine")
