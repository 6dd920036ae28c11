"""Issue 26: a degenerate release (fewer distinct atoms than m) is flagged, in a warning
and in the publishable release; rows that clearly fit the bounds swapped are refused
before anything is charged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.errors import InvalidDataError


class Recorder:
    def __init__(self):
        self.spent = []

    def spend(self, cost, **kw):
        self.spent.append(cost)


def _groups(d=3, n=300, seed=0):
    gen = np.random.default_rng(seed)
    return [np.clip(gen.normal(0.5 + 0.1 * g, 0.15, (n, d)), 0, 1) for g in range(2)]


def test_mean_only_release_is_flagged():
    groups = _groups()
    bounds = PublicBounds.box([0] * 3, [1] * 3)
    with pytest.warns(UserWarning, match=r"degenerate release: 1 distinct atom\(s\) of m = 5"):
        res = private_barycenter(groups, bounds=bounds, m=5, epsilon=1.0,
                                 method="subspace", subspace_dim=0, rng=1)
    assert res.distinct_atoms == 1 and res.degenerate
    rel = res.release_dict()
    assert rel["degenerate"] == {"distinct_atoms": 1, "m": 5, "note": rel["degenerate"]["note"]}


def test_full_release_is_not_flagged():
    groups = _groups()
    bounds = PublicBounds.box([0] * 3, [1] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = private_barycenter(groups, bounds=bounds, m=5, epsilon=4.0, rng=1)
    assert res.distinct_atoms == 5 and not res.degenerate
    assert "degenerate" not in res.release_dict()


def test_default_plan_is_never_mean_only_in_moderate_dimension():
    """The issue's case: 8 columns, 4 groups of about 750, m = 48, epsilon 1, no delta:
    the default is no longer d' = 0 (48 copies of one point)."""
    gen = np.random.default_rng(0)
    groups = [np.clip(gen.normal(0.4 + 0.05 * g, 0.15, (750, 8)), 0, 1) for g in range(4)]
    bounds = PublicBounds.box([0] * 8, [1] * 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = private_barycenter(groups, bounds=bounds, m=48, epsilon=1.0, rng=2)
    plan = res.params["subspace"]
    assert res.method == "subspace" and plan["subspace_dim"] == 3 and plan["cells"] > 1
    assert plan["projection_share"] == 0.5
    assert res.distinct_atoms > 10  # not 48 copies of one point
    said = [str(w.message) for w in caught if "distinct atom" in str(w.message)]
    # fewer distinct atoms than m (the summaries' few cells) is said, with the count
    assert bool(said) == res.degenerate
    if said:
        assert f"{res.distinct_atoms} distinct atom(s) of m = 48" in said[0]


@pytest.mark.parametrize("method", ["coreset", "subspace", "perturbation"])
def test_swapped_axes_refused_before_the_charge(method):
    gen = np.random.default_rng(3)
    a, b = gen.uniform(0, 1, (400, 1)), gen.uniform(0, 4, (400, 1))
    bounds = PublicBounds.box([0, 0], [1, 4])  # the bounds of (a, b)
    acct = Recorder()
    kw = {"delta": 1e-6} if method == "perturbation" else {}
    with pytest.raises(InvalidDataError, match="look swapped"):
        private_barycenter([np.hstack([b, a])], bounds=bounds, m=4, epsilon=1.0,
                           method=method, accountant=acct, rng=1, **kw)
    assert acct.spent == []
    res = private_barycenter([np.hstack([a, b])], bounds=bounds, m=4, epsilon=1.0,
                             method=method, accountant=acct, rng=1, **kw)
    assert len(acct.spent) == 1 and res.m == 4


def test_rows_fitting_both_orders_only_warn_as_before():
    gen = np.random.default_rng(4)
    pts = gen.uniform(0, 2, (400, 2))  # most outside [0, 1]^2 either way
    bounds = PublicBounds.box([0, 0], [1, 1])
    with pytest.warns(UserWarning, match="most rows are not used"):
        private_barycenter([pts], bounds=bounds, m=4, epsilon=1.0, rng=1)


@pytest.mark.parametrize("d0", [1, 3, 8])
def test_moderate_pure_default_plan(d0):
    from privot.barycenters.subspace import plan_subspace
    from privot.privacy.types import PrivacyCost

    for n in (100, 500):  # eps n < 800: d' = 3 (at most d0), never the mean alone
        plan = plan_subspace(sizes=[n], m=8, d0=d0, budget=PrivacyCost(1.0))
        assert plan.subspace_dim == min(d0, 3)
    big = plan_subspace(sizes=[5000], m=8, d0=d0, budget=PrivacyCost(1.0))
    assert big.subspace_dim == d0  # the rule above 800 (clip(round(log2 5000 - 3)) >= 8)
    gauss = plan_subspace(sizes=[500], m=8, d0=8, budget=PrivacyCost(1.0, 1e-6))
    assert gauss.subspace_dim >= 3  # the Gaussian rule is unchanged
    wide = plan_subspace(sizes=[500], m=8, d0=10, budget=PrivacyCost(1.0))
    assert wide.subspace_dim == 0  # above d0 = 8 the old rule (and its flag) stays
