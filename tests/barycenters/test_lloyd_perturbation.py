"""Noisy Lloyd steps on power cells (output perturbation, issue 15).

* Sensitivity by brute force on neighbouring inputs (replace one point of the ball
  B_0(1/2)): the balancing round's cell counts move by at most sqrt(2) in L2, a step's
  (R counts, sums) on power cells by at most 2R = 1, for random atoms and random power
  weights (the cells of any fixed power diagram), with the pair moving between cells or
  staying in one; both bounds are attained.
* The power weights split a proxy measure into (nearly) equal masses.
* The plan's GDP composition meets (eps, delta).
* A statistical audit of one released step (privot.privacy.audit, false-alarm rate at
  most 1e-3) with a canary that under-noised steps are caught.
* Totality: degenerate inputs still give m finite atoms.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from privot.barycenters.lloyd_perturbation import (
    balancing_sensitivity,
    cell_counts,
    lloyd_perturbation,
    plan_lloyd,
    power_weights,
    prior_variance,
    shrunk_step,
)
from privot.barycenters.subspace import RADIUS, lloyd_sensitivity, lloyd_statistic
from privot.privacy.accounting import gdp_to_delta, gdp_to_epsilon
from privot.privacy.audit import audit

R = RADIUS


def _ball(rng, n, d):
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x * R * rng.uniform(0, 1, (n, 1)) ** (1 / d)


def _sphere(rng, n, d):
    x = rng.normal(size=(n, d))
    return R * x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_power_cell_statistics_have_the_stated_sensitivity(d):
    rng = np.random.default_rng(40 + d)
    worst_counts = worst_step = 0.0
    moved = stayed = 0
    for _ in range(400):
        m = int(rng.integers(1, 6))
        atoms = _ball(rng, m, d) * 1.5  # atoms may lie outside the ball
        power = rng.normal(scale=0.05, size=m)
        data = np.concatenate([_ball(rng, 6, d), _sphere(rng, 3, d)])
        other = data.copy()
        other[0] = -data[0] if rng.random() < 0.5 else _sphere(rng, 1, d)[0]
        c0, c1 = cell_counts(data, atoms, power), cell_counts(other, atoms, power)
        s0 = lloyd_statistic(data, atoms, power=power)
        s1 = lloyd_statistic(other, atoms, power=power)
        worst_counts = max(worst_counts, float(np.linalg.norm(c0 - c1)))
        worst_step = max(worst_step, float(np.linalg.norm(s0 - s1)))
        if np.any(c0 != c1):
            moved += 1
        else:
            stayed += 1
    assert worst_counts <= balancing_sensitivity() + 1e-12
    assert worst_step <= lloyd_sensitivity(d, "l2") + 1e-12
    assert moved > 50 and stayed > 50  # both cases were exercised
    assert worst_counts == pytest.approx(math.sqrt(2))  # attained (a point changes cell)
    assert worst_step > 0.9 * lloyd_sensitivity(d, "l2")


def test_step_sensitivity_is_attained_by_antipodes_in_two_cells():
    atoms = np.array([[-0.3, 0.0], [0.3, 0.0]])
    data = np.array([[-R, 0.0], [0.1, 0.2]])
    other = data.copy()
    other[0] = [R, 0.0]
    change = lloyd_statistic(data, atoms, power=np.zeros(2)) - lloyd_statistic(
        other, atoms, power=np.zeros(2))
    assert np.linalg.norm(change) == pytest.approx(lloyd_sensitivity(2, "l2"))


def test_power_weights_balance_a_proxy():
    rng = np.random.default_rng(3)
    proxy = np.concatenate([rng.normal(-0.2, 0.03, (300, 2)), rng.normal(0.2, 0.05, (100, 2))])
    atoms = np.array([[-0.2, 0.0], [0.2, 0.0], [0.0, 0.3], [0.0, -0.3]])
    unbalanced = cell_counts(proxy, atoms, np.zeros(4))
    power = power_weights(proxy, np.ones(len(proxy)), atoms)
    balanced = cell_counts(proxy, atoms, power)
    assert unbalanced.max() >= 200  # the Voronoi cells are far from equal (219 here)
    assert np.all(np.abs(balanced - 100) <= 3)  # equal shares, up to ties at the boundary


@pytest.mark.parametrize("rounds,steps", [(0, 1), (2, 1), (2, 3), (5, 2)])
@pytest.mark.parametrize("eps,delta", [(0.3, 1e-6), (1.0, 1e-5), (4.0, 1e-3)])
def test_plan_meets_its_budget(eps, delta, rounds, steps):
    plan = plan_lloyd(m=16, dim=2, epsilon=eps, delta=delta, balancing_rounds=rounds,
                      steps=steps)
    assert gdp_to_delta(plan.mu, eps) <= delta * (1 + 1e-9)
    per_step = (plan.step["effective_sensitivity"] / plan.step["sigma"]) ** 2
    if rounds:
        per_step += rounds * (plan.balancing["effective_sensitivity"]
                              / plan.balancing["sigma"]) ** 2
    assert math.sqrt(steps * per_step) <= plan.mu


# -- audit -------------------------------------------------------------------------------

N_AUDIT = 6000
M_AUDIT = 2
ATOMS = np.array([[-0.25, 0.0], [0.25, 0.0]])
BASE = np.array([[-0.2, 0.1], [0.2, -0.1], [0.1, 0.1]])
D0 = np.concatenate([[[-R, 0.0]], BASE])  # the differing point: far left, cell 0
D1 = np.concatenate([[[R, 0.0]], BASE])   # replaced by its antipode, cell 1


def _released_first_atom_x(data, plan, n, rng):
    """n independent steps (public anchor, no proxy: Voronoi cells, no balancing);
    statistic: the first coordinate of the released atom 0."""
    out = np.empty(n)
    for t in range(n):
        rel = lloyd_perturbation([data], ATOMS, plan=plan, group_weights=np.ones(1),
                                 proxies=None, rng=rng)
        out[t] = rel.support[0, 0]
    return out


def _sampler(plan):
    return lambda data, n, rng: _released_first_atom_x(data, plan, n, rng)


@pytest.mark.parametrize("eps,delta", [(2.0, 1e-3)])
def test_audit_of_a_released_step(eps, delta):
    """Lower bound on epsilon from 6,000 releases per input; false-alarm rate <= 1e-3."""
    plan = plan_lloyd(m=M_AUDIT, dim=2, epsilon=eps, delta=delta, balancing_rounds=0)
    res = audit(_sampler(plan), D0, D1, n_runs=N_AUDIT, epsilon=eps, delta=delta,
                rng=np.random.default_rng(2026), confidence=0.999)
    assert not res.violated, res
    canary = dataclasses.replace(plan, step={**plan.step, "sigma": plan.step["sigma"] / 10})
    bad = audit(_sampler(canary), D0, D1, n_runs=N_AUDIT, epsilon=eps, delta=delta,
                rng=np.random.default_rng(2027), confidence=0.999)
    assert bad.violated and bad.epsilon_lower > eps, bad
    # the step alone is the plan's mu-GDP: the claim audited above is its epsilon
    assert gdp_to_epsilon(plan.mu, delta) <= eps * (1 + 1e-9)


# -- totality ------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [np.zeros((50, 2)), np.full((3, 2), 0.49),
                                  np.empty((0, 2))])
def test_degenerate_groups_still_give_finite_atoms(data):
    plan = plan_lloyd(m=4, dim=2, epsilon=1.0, delta=1e-5)
    rng = np.random.default_rng(5)
    proxy = (rng.uniform(-0.3, 0.3, (20, 2)), np.ones(20))
    rel = lloyd_perturbation([data], rng.uniform(-0.2, 0.2, (4, 2)), plan=plan,
                             group_weights=np.ones(1), proxies=[proxy], rng=rng)
    assert rel.support.shape == (4, 2) and np.all(np.isfinite(rel.support))
    assert np.all(np.linalg.norm(rel.support, axis=1) <= R + 1e-12)


@pytest.mark.parametrize("kw", [{"m": 3, "balancing_rounds": 10}, {"m": 50}])
def test_a_budget_too_small_for_the_sampler_is_refused_before_the_charge(kw):
    """The plan and a draw of its noise on zeros come before the charge (a privacy
    review found the release refused after it at eps = 1e-9)."""
    from privot.barycenters import PublicBounds, private_barycenter
    from privot.errors import InvalidParameterError
    from privot.privacy import PrivacyAccountant

    rng = np.random.default_rng(1)
    groups = [rng.uniform(-1, 1, (200, 2)) for _ in range(2)]
    acc = PrivacyAccountant(1.0, 1e-3)
    with pytest.raises(InvalidParameterError) as err:
        private_barycenter(groups, bounds=PublicBounds.box([-1, -1], [1, 1]),
                           epsilon=1e-9, delta=1e-10, method="perturbation", rng=1,
                           accountant=acc, **kw)
    assert err.value.name == "epsilon" and len(acc.ledger) == 0


def test_a_public_anchor_spends_nothing_on_balancing():
    from privot.barycenters import PublicBounds, private_barycenter

    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (2000, 2))
    res = private_barycenter(x, bounds=PublicBounds.box([0, 0], [1, 1]), m=4, epsilon=1.0,
                             delta=1e-5, method="perturbation",
                             anchor=rng.uniform(0, 1, (4, 2)), rng=rng)
    plan = res.params["lloyd"]
    assert plan["balancing_rounds"] == 0 and plan["balancing_noise"] is None
    assert plan["step_share"] == 1.0


# -- the shrunk step (empirical Bayes, post-processing) ------------------------------------


def _moves(rng, m, d, tau, sd):
    anchor = rng.uniform(-0.2, 0.2, (m, d))
    truth = anchor + rng.normal(scale=tau, size=(m, d))
    return anchor, truth, truth + rng.normal(scale=sd, size=(m, d)), np.full(m, d * sd**2)


@pytest.mark.parametrize("tau", [0.0, 0.003, 0.01, 0.03])
def test_shrinkage_never_loses_to_the_raw_step_on_average(tau):
    """Positive-part James-Stein dominates the raw estimate (md >= 3): 400 seeded
    trials of m = 48 atoms in 2-D, noise sd 0.01, true moves of scale tau; the mean
    squared error of the shrunk atoms must not exceed the raw step's (a margin of three
    standard errors)."""
    rng = np.random.default_rng(70)
    raw, shrunk = [], []
    for _ in range(400):
        anchor, truth, step, var = _moves(rng, 48, 2, tau, 0.01)
        raw.append(((step - truth) ** 2).sum())
        shrunk.append(((shrunk_step(anchor, step, var) - truth) ** 2).sum())
    diff = np.array(shrunk) - np.array(raw)
    assert diff.mean() <= 3 * diff.std() / math.sqrt(len(diff))
    if tau == 0.0:  # pure noise: the anchor is kept almost entirely
        assert np.mean(shrunk) < 0.1 * np.mean(raw)


def test_one_noisy_atom_does_not_stop_the_others_moving():
    """A US release kept its whole anchor (1.12x) because one cell's small count gave an
    atom a huge variance and the pooled moment estimate of tau^2 went to 0; the marginal
    likelihood gives that atom little say."""
    rng = np.random.default_rng(73)
    anchor, truth, step, var = _moves(rng, 48, 2, 0.01, 0.002)
    var[0], step[0] = 1.0, anchor[0] + [0.05, 0.0]  # a count just above the floor
    pooled = max(0.0, (((step - anchor) ** 2).sum() - var.sum()) / (48 * 2))
    assert pooled == 0.0  # the former estimate would have kept the anchor
    out = shrunk_step(anchor, step, var)
    factor = ((out - anchor)[1:] * (step - anchor)[1:]).sum() / ((step - anchor)[1:] ** 2).sum()
    assert factor > 0.9
    assert np.linalg.norm(out[0] - anchor[0]) < 0.01 * 0.05  # the noisy atom stays


def test_prior_variance_with_equal_noise_is_james_stein():
    rng = np.random.default_rng(74)
    sq = rng.exponential(2e-4, 48)
    for s in (1e-5, 5e-5, 2e-4):
        expect = max(0.0, sq.sum() / (48 * 2) - s)
        assert prior_variance(sq, np.full(48, s), 2) == pytest.approx(expect, rel=1e-9,
                                                                      abs=1e-15)
    assert prior_variance(np.zeros(4), np.zeros(4), 2) == 0.0


def test_shrinkage_keeps_moves_that_dwarf_the_noise():
    rng = np.random.default_rng(71)
    anchor, truth, step, var = _moves(rng, 48, 2, 0.05, 0.001)
    out = shrunk_step(anchor, step, var)
    factor = ((out - anchor) * (step - anchor)).sum() / ((step - anchor) ** 2).sum()
    assert 0.99 < factor <= 1.0


def test_atoms_without_noise_or_moves_are_unchanged():
    a = np.random.default_rng(72).uniform(-0.2, 0.2, (5, 2))
    assert np.array_equal(shrunk_step(a, a.copy(), np.zeros(5)), a)
    moved = a + 0.01
    assert np.allclose(shrunk_step(a, moved, np.zeros(5)), moved)


def test_the_release_reports_its_proxy_and_shrinkage():
    from privot.barycenters import PublicBounds, private_barycenter

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (3000, 2))
    res = private_barycenter(x, bounds=PublicBounds.box([0, 0], [1, 1]), m=4, epsilon=1.0,
                             delta=1e-5, method="perturbation", proxy_size=500,
                             shrinkage=False, rng=rng)
    assert res.params["lloyd"]["proxy_size"] == 500
    assert res.params["lloyd"]["shrinkage"] is False


@pytest.mark.parametrize("kw", [{"proxy_size": 99}, {"proxy_size": 2.5},
                                {"proxy_size": 10**7}, {"shrinkage": "yes"}])
def test_bad_proxy_options_are_refused_before_the_charge(kw):
    from privot.barycenters import PublicBounds, private_barycenter
    from privot.errors import InvalidParameterError
    from privot.privacy import PrivacyAccountant

    acc = PrivacyAccountant(1.0, 1e-3)
    with pytest.raises(InvalidParameterError) as err:
        private_barycenter(np.zeros((100, 2)), bounds=PublicBounds.box([-1, -1], [1, 1]),
                           m=3, epsilon=0.5, delta=1e-5, method="perturbation", rng=1,
                           accountant=acc, **kw)
    assert err.value.name == next(iter(kw)) and len(acc.ledger) == 0


def test_a_proxy_too_large_for_memory_is_refused_by_the_plan():
    from privot.barycenters.lloyd_perturbation import MAX_PROXY_CELLS
    from privot.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError) as err:
        plan_lloyd(m=400, dim=2, epsilon=1.0, delta=1e-5,
                   proxy_size=MAX_PROXY_CELLS // 400 + 1)
    assert err.value.name == "proxy_size"
    assert plan_lloyd(m=400, dim=2, epsilon=1.0, delta=1e-5,
                      proxy_size=MAX_PROXY_CELLS // 400).proxy_size == MAX_PROXY_CELLS // 400


def test_the_release_answers_when_numpy_raises_on_underflow():
    """A privacy review found FloatingPointError after the charge under
    np.errstate(all="raise"): the power-weight solver's exponentials underflow."""
    from privot.barycenters import PublicBounds, private_barycenter
    from privot.privacy import PrivacyAccountant

    acc = PrivacyAccountant(10.0, 1e-2)
    x = np.random.default_rng(0).uniform(0, 1, (3000, 2))
    with np.errstate(all="raise"):
        res = private_barycenter(x, bounds=PublicBounds.box([0, 0], [1, 1]), m=8,
                                 epsilon=1.0, delta=1e-5, method="perturbation", rng=0,
                                 accountant=acc)
    assert np.all(np.isfinite(res.support)) and len(acc.ledger) == 1
