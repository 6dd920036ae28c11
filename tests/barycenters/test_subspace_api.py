"""``private_barycenter(..., method="subspace")``: shape, auto choice, accounting, bases,
refusals before the charge, totality, unusable rows."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.barycenters.subspace import dct_basis, noise_floor, plan_subspace, subspace_release
from privot.errors import InvalidParameterError
from privot.privacy import PrivacyAccountant
from privot.privacy.accounting import gdp_to_delta
from privot.privacy.events import ComposedEvent, GaussianEvent, PureEvent
from privot.privacy.types import Neighbouring, PrivacyCost

D = 5
BOX5 = PublicBounds.box(-np.ones(D), np.ones(D))
BOX2 = PublicBounds.box([-1.0, -1.0], [1.0, 1.0])


def _groups(n: int = 200, d: int = D, k: int = 2, seed: int = 0) -> list[np.ndarray]:
    """k groups, each two blobs at +-0.5 on the first axis (std 0.1), inside the box."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        c = np.zeros((n, d))
        c[:, 0] = rng.choice([-0.5, 0.5], n)
        out.append(np.clip(c + 0.1 * rng.normal(size=(n, d)), -1, 1))
    return out


def _run(groups=None, bounds=BOX5, **kw):
    args = {"m": 4, "epsilon": 1.0, "method": "subspace", "rng": 1, "progress": False}
    args.update(kw)
    return private_barycenter(_groups() if groups is None else groups, bounds=bounds,
                              **args)


def _inside(support, bounds):
    return bool(np.all(support >= bounds.lower - 1e-12)
                and np.all(support <= bounds.upper + 1e-12))


@pytest.mark.parametrize("kw", [{}, {"delta": 1e-5}, {"cells": 3, "rounds": 2},
                                {"subspace_dim": 2, "cells": 2, "rounds": 1,
                                 "delta": 1e-6}])
def test_support_shape_and_bounds(kw):
    res = _run(**kw)
    assert res.method == "subspace" and res.support.shape == (4, D)
    assert np.all(np.isfinite(res.support)) and _inside(res.support, BOX5)
    np.testing.assert_allclose(res.weights, 0.25)
    assert res.relation is Neighbouring.REPLACE_ONE_IN_GROUP and res.secure is False
    assert res.params["method_requested"] == "subspace"
    assert res.params["basis"] == "identity" and res.params["projection_dim"] is None


def test_the_two_blobs_are_found_with_a_generous_budget():
    groups = _groups(n=2000)
    res = _run(groups, epsilon=8.0, cells=2, rounds=2, m=2)
    first = np.sort(res.support[:, 0])
    assert first[0] < -0.2 and first[1] > 0.2  # the blobs at -0.5 and +0.5


def test_auto_picks_subspace_in_five_dimensions_and_coreset_in_two():
    res5 = private_barycenter(_groups(), bounds=BOX5, m=4, epsilon=1.0, rng=2,
                              progress=False)
    assert res5.method == "subspace" and res5.params["method_requested"] == "auto"
    assert res5.support.shape == (4, D) and "subspace" in res5.params
    res2 = private_barycenter(_groups(d=2), bounds=BOX2, m=4, epsilon=1.0, rng=2,
                              progress=False)
    assert res2.method == "coreset" and res2.params["method_requested"] == "auto"
    assert res2.support.shape == (4, 2)


def _expected_plan(groups, *, m, epsilon, delta, **kw):
    return plan_subspace(sizes=[len(g) for g in groups], m=m, d0=D,
                         budget=PrivacyCost(epsilon, delta), **kw)


def test_pure_variant_charges_once_with_laplace():
    groups = _groups()
    acc = PrivacyAccountant(3.0)
    shape = {"subspace_dim": 2, "cells": 2, "rounds": 2}
    res = _run(groups, epsilon=1.0, accountant=acc, **shape)
    assert len(acc.ledger) == 1
    entry = acc.ledger[0]
    assert entry.cost.epsilon == 1.0 and entry.cost.delta == 0.0 and entry.cost.mu is None
    assert entry.relation is Neighbouring.REPLACE_ONE_IN_GROUP
    plan = _expected_plan(groups, m=4, epsilon=1.0, delta=0.0, **shape)
    assert entry.cost.event == plan.event
    assert isinstance(plan.event, ComposedEvent)
    parts = plan.event.parts()
    assert all(isinstance(p, PureEvent) for p in parts)
    assert len(parts) == 1 + 1 + 2  # second moment, moments, two Lloyd rounds
    assert math.fsum(p.epsilon for p in parts) <= 1.0
    assert res.params["subspace"]["mechanism"] == "laplace"
    assert res.params["subspace"]["mu"] is None
    assert res.cost == PrivacyCost(1.0) and res.sample_cost == PrivacyCost(1.0)
    assert acc.spent.epsilon == pytest.approx(1.0)


def test_delta_variant_charges_once_with_gaussian_meeting_the_budget():
    groups = _groups()
    eps, delta = 1.0, 1e-6
    acc = PrivacyAccountant(2.0, 1e-5)
    shape = {"subspace_dim": 2, "cells": 2, "rounds": 1}
    res = _run(groups, epsilon=eps, delta=delta, accountant=acc, **shape)
    assert len(acc.ledger) == 1
    entry = acc.ledger[0]
    assert entry.cost.epsilon == eps and entry.cost.delta == delta
    plan = _expected_plan(groups, m=4, epsilon=eps, delta=delta, **shape)
    assert isinstance(plan.event, GaussianEvent) and entry.cost.event == plan.event
    sub = res.params["subspace"]
    assert sub["mechanism"] == "gaussian" and sub["pca"] is True
    mu = sub["mu"]
    assert entry.cost.mu == mu == plan.mu
    assert gdp_to_delta(mu, eps) <= delta  # the composed GDP meets (eps, delta)
    # ... and the steps compose to it: mu^2 = mu_second^2 + mu_moments^2 + T mu_lloyd^2
    steps = sub["noise"]
    total = (steps["second_moment"]["mu"] ** 2 + steps["moments"]["mu"] ** 2
             + sub["rounds"] * steps["lloyd"]["mu"] ** 2)
    assert math.sqrt(total) <= mu * (1 + 1e-12)
    for step in steps.values():  # mu_j = effective sensitivity / sigma
        assert step["effective_sensitivity"] / step["sigma"] <= step["mu"] * (1 + 1e-15)
    assert 1.0 / plan.event.noise_multiplier >= mu * (1 - 1e-15)


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 7.0])
@pytest.mark.parametrize("delta", [0.0, 1e-9, 1e-5, 0.1])
@pytest.mark.parametrize("shape", [(5, 1, 0), (2, 3, 4), (1, 2, 1), (5, 4, 100)])
def test_every_plan_meets_its_budget(eps, delta, shape):
    """Gaussian: the composed mu meets (eps, delta); Laplace: the steps sum to <= eps."""
    dim, cells, rounds = shape
    plan = plan_subspace(sizes=[300, 500], m=4, d0=D, budget=PrivacyCost(eps, delta),
                         subspace_dim=dim, cells=cells, rounds=rounds, projection_share=0.3)
    assert plan.pca is (dim < D)
    if delta > 0:
        assert plan.mechanism == "gaussian"
        assert gdp_to_delta(plan.mu, eps) <= delta
        assert gdp_to_delta(1.0 / plan.event.noise_multiplier, eps) <= delta
        times = {"second_moment": 1, "moments": 1, "lloyd": plan.rounds}
        total = sum(times[k] * (v["effective_sensitivity"] / v["sigma"]) ** 2
                    for k, v in plan.noise.items())
        assert math.sqrt(total) <= plan.mu
    else:
        assert plan.mechanism == "laplace" and plan.mu is None
        parts = plan.event.parts()
        assert math.fsum(p.epsilon for p in parts) <= eps
        assert len(parts) == int(plan.pca) + 1 + plan.rounds
        times = {"second_moment": 1, "moments": 1, "lloyd": plan.rounds}
        assert math.fsum(times[k] * v["epsilon"] for k, v in plan.noise.items()) <= eps


def test_public_dct_basis_with_image_shape():
    h, w = 4, 6
    groups = _groups(n=150, d=h * w)
    bounds = PublicBounds.box(-np.ones(h * w), np.ones(h * w))
    res = _run(groups, bounds=bounds, basis="dct", image_shape=(h, w), basis_dim=8,
               subspace_dim=3)
    assert res.support.shape == (4, h * w) and _inside(res.support, bounds)
    assert res.params["basis"] == "dct" and res.params["image_shape"] == [h, w]
    assert res.params["subspace"]["basis_dim"] == 8
    assert res.params["subspace"]["subspace_dim"] == 3
    # the support lies in the span of the basis (the lift goes through it)
    b = dct_basis((h, w), 8)
    centre = bounds.centre
    unit = (res.support - centre) * bounds.scale
    inner = np.all(np.abs(res.support) < 1 - 1e-9, axis=1)  # not moved by the clip
    assert inner.any()
    resid = unit[inner] - unit[inner] @ b @ b.T
    assert np.max(np.abs(resid), initial=0.0) < 1e-10
    # a caller's orthonormal array works too
    q = np.linalg.qr(np.random.default_rng(3).normal(size=(h * w, 6)))[0]
    res2 = _run(groups, bounds=bounds, basis=q, subspace_dim=6)
    assert res2.params["basis"] == "caller" and res2.support.shape == (4, h * w)
    assert res2.params["subspace"]["pca"] is False


def test_basis_dim_above_d_is_refused_before_the_charge():
    h, w = 3, 3
    bounds = PublicBounds.box(-np.ones(9), np.ones(9))
    acc = PrivacyAccountant(5.0)
    with pytest.raises(InvalidParameterError) as err:
        _run(_groups(n=50, d=9), bounds=bounds, basis="dct", image_shape=(h, w),
             basis_dim=10, accountant=acc)
    assert err.value.name == "basis_dim"
    assert len(acc.ledger) == 0


_Q5 = np.linalg.qr(np.random.default_rng(4).normal(size=(D, 3)))[0]


@pytest.mark.parametrize("kw, name", [
    ({"cells": 0}, "cells"),
    ({"cells": 2, "rounds": -1}, "rounds"),
    ({"cells": 2, "rounds": 0}, "rounds"),
    ({"rounds": 101, "cells": 2}, "rounds"),
    ({"projection_share": 1.5}, "projection_share"),
    ({"projection_share": 0.0}, "projection_share"),
    ({"subspace_dim": D + 1}, "subspace_dim"),
    ({"subspace_dim": 4, "basis": _Q5}, "subspace_dim"),  # > d0 = 3
    ({"subspace_dim": -1}, "subspace_dim"),
    ({"subspace_dim": 0, "cells": 3}, "subspace_dim"),  # 0 is the mean only
    ({"basis": np.eye(D + 1)}, "basis"),
    ({"basis": np.eye(D)[:, :0]}, "basis"),
    ({"basis": 2 * _Q5}, "basis"),
    ({"basis": "haar"}, "basis"),
    ({"basis": "dct"}, "image_shape"),
    ({"basis": "dct", "image_shape": (2, 3)}, "image_shape"),
    ({"basis": "dct", "image_shape": (5, 1), "basis_dim": 0}, "basis_dim"),
    ({"basis_dim": 3}, "basis_dim"),  # without basis="dct"
    ({"basis": _Q5, "method": "coreset"}, "basis"),
    ({"cells": 2, "method": "coreset"}, "cells"),
    ({"delta": 1.0}, "delta"),
])
def test_bad_parameters_are_refused_before_the_charge(kw, name):
    acc = PrivacyAccountant(5.0, 1e-3)
    with pytest.raises(InvalidParameterError) as err:
        _run(accountant=acc, **kw)
    assert err.value.name == name, err.value
    assert len(acc.ledger) == 0 and acc.spent.epsilon == 0.0


@pytest.mark.parametrize("kind", ["identical", "tiny", "corner"])
@pytest.mark.parametrize("delta", [None, 1e-5])
def test_release_is_total_on_degenerate_data(kind, delta):
    rng = np.random.default_rng(5)
    base = rng.uniform(-0.5, 0.5, size=D)
    n = 60
    if kind == "identical":
        g = np.tile(base, (n, 1))
    elif kind == "tiny":
        g = base + 1e-9 * rng.normal(size=(n, D))
    else:
        g = np.ones((n, D))  # all at a corner of the box: the sphere of B_0(1/2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no nan/overflow on the way
        res = _run([g, g.copy()], delta=delta, cells=3, rounds=2, m=4)
    assert res.support.shape == (4, D) and np.all(np.isfinite(res.support))
    assert _inside(res.support, BOX5)


def test_group_with_unusable_rows():
    groups = _groups(n=120)
    groups[0][:7] = np.nan
    groups[1][3, 2] = np.inf
    acc = PrivacyAccountant(2.0)
    res = _run(groups, cells=2, rounds=1, accountant=acc)
    assert res.support.shape == (4, D) and np.all(np.isfinite(res.support))
    assert res.n_unusable == (7, 1)
    assert res.params["group_sizes"] == [120, 120]  # public sizes: unusable rows count
    assert len(acc.ledger) == 1


def test_seeded_runs_are_reproducible():
    a = _run(delta=1e-5, cells=2, rounds=1, rng=9)
    b = _run(delta=1e-5, cells=2, rounds=1, rng=9)
    np.testing.assert_array_equal(a.support, b.support)


@pytest.mark.parametrize("cells", [1, 3])
def test_directions_below_the_noise_floor_carry_no_spread(cells):
    """Data on one line in d0 = 8: the subspace's other directions hold noise only. Those
    whose released eigenvalue is below the public noise floor are flat: every atom (and
    every public draw of the DP Gaussian) sits at the group's released mean there."""
    rng = np.random.default_rng(11)
    x = np.zeros((4000, 8))
    x[:, 0] = rng.uniform(-0.4, 0.4, 4000)  # eigenvalue ~ 213, far above the floor
    plan = plan_subspace(sizes=[4000], m=4, d0=8, budget=PrivacyCost(1.0, 1e-6),
                         subspace_dim=4, cells=cells, rounds=None if cells == 1 else 1)
    assert plan.pca and 5 < noise_floor(plan) < 50
    rel = subspace_release([x], plan=plan, basis=None, sizes=[4000], m=4, rng=rng)
    assert not rel.flat[0] and rel.flat.any()
    atoms = rel.atoms[0]
    assert np.all(rel.covariances[0][rel.flat] == 0)
    # public draws outside the ball are projected radially onto it (every coordinate
    # scaled): the others sit exactly at the mean in the flat directions
    inside = np.linalg.norm(atoms, axis=1) < 0.5 - 1e-9
    assert inside.sum() > len(atoms) // 2
    assert np.allclose(atoms[inside][:, rel.flat], rel.means[0, rel.flat], atol=1e-12)
    assert np.ptp(atoms[:, 0]) > 0.3  # the signal direction keeps its spread


def test_no_direction_is_flat_without_a_second_moment():
    x = np.random.default_rng(12).uniform(-0.2, 0.2, size=(500, 3))
    plan = plan_subspace(sizes=[500], m=4, d0=3, budget=PrivacyCost(1.0, 1e-6))
    assert not plan.pca
    rel = subspace_release([x], plan=plan, basis=None, sizes=[500], m=4,
                           rng=np.random.default_rng(3))
    assert not rel.flat.any()


@pytest.mark.parametrize("delta", [None, 1e-6])
def test_subspace_dim_zero_releases_the_mean_only(delta):
    """d' = 0: one moment round with the sum in the whole basis; every atom at the
    (weighted) DP mean of the groups."""
    rng = np.random.default_rng(13)
    groups = [rng.uniform(0.1, 0.4, size=(3000, 6)), rng.uniform(0.5, 0.9, size=(3000, 6))]
    res = private_barycenter(groups, bounds=PublicBounds.box(np.zeros(6), np.ones(6)), m=5,
                             epsilon=50.0, delta=delta, method="subspace", subspace_dim=0,
                             rng=rng)
    plan = res.params["subspace"]
    assert plan["subspace_dim"] == 0 and plan["cells"] == 1 and plan["rounds"] == 0
    assert set(plan["noise"]) == {"moments"} and plan["complement_mean"]
    assert np.ptp(res.support, axis=0).max() == 0  # all atoms equal
    np.testing.assert_allclose(res.support[0], 0.475, atol=0.01)  # (0.25 + 0.7) / 2


def test_pure_default_is_the_mean_only_below_800():
    small = plan_subspace(sizes=[500], m=4, d0=10, budget=PrivacyCost(1.0))
    large = plan_subspace(sizes=[5000], m=4, d0=10, budget=PrivacyCost(1.0))
    gauss = plan_subspace(sizes=[500], m=4, d0=10, budget=PrivacyCost(1.0, 1e-6))
    assert small.subspace_dim == 0 and large.subspace_dim >= 3 and gauss.subspace_dim >= 3
    asked = plan_subspace(sizes=[500], m=4, d0=10, budget=PrivacyCost(1.0), cells=3)
    assert asked.subspace_dim >= 3 and asked.rounds == 1  # cells asked: not the mean only


@pytest.mark.parametrize("method", ["subspace", "coreset", "perturbation"])
@pytest.mark.parametrize("bad,name", [({"solver": "bogus"}, "solver"), ({"reg": -1.0}, "reg"),
                                      ({"n_outer": 0}, "n_outer"), ({"polish": -3}, "polish")])
def test_solver_parameters_are_refused_before_the_charge(method, bad, name):
    """A refusal after the charge would spend the budget and release nothing."""
    acc = PrivacyAccountant(5.0, 1e-3)
    extra = {"delta": 1e-5} if method == "perturbation" else {}
    with pytest.raises(InvalidParameterError) as err:
        _run(method=method, accountant=acc, **extra, **bad)
    assert err.value.name == name and len(acc.ledger) == 0


@pytest.mark.parametrize("delta", [None, 1e-12])
def test_a_budget_too_small_for_the_sampler_is_refused_before_the_charge(delta):
    acc = PrivacyAccountant(1.0, 1e-3)
    with pytest.raises(InvalidParameterError) as err:
        _run(epsilon=1e-12, delta=delta, accountant=acc)
    assert err.value.name == "epsilon" and len(acc.ledger) == 0
