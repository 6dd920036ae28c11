"""The library's sensitivity against the paper's formulas and against brute force on
neighbouring datasets (replace one record inside one group, sizes fixed)."""

import dataclasses

import numpy as np
import pytest
import torch

from privot.learning import fairness_groups, make_private, matching_groups
from privot.learning.groups import Group, Groups
from privot.learning.sensitivity import (
    objective_sensitivity,
    paper_eo_sensitivity,
    paper_sp_sensitivity,
    wasserstein_gradient_sensitivity,
)


def test_thm_4_1_a():
    assert wasserstein_gradient_sensitivity(10, M=2.0, L_replaced=1.0, L_other=0.5) == \
        pytest.approx(4 * 2 * (3 + 0.5) / 10)


def _sp_groups(n0=6, n1=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n0 + n1, d))
    y = rng.integers(0, 2, n0 + n1)
    a = np.r_[np.zeros(n0, int), np.ones(n1, int)]
    return fairness_groups(x, y, a, criterion="sp", dtype=torch.float64)


def test_sp_and_eo_reproduce_eqs_7_and_8():
    g = _sp_groups(30, 20)
    s = objective_sensitivity(g, (6, 4), alpha=0.3, C=2.0, M=1.5, L=0.7)
    assert s.value == pytest.approx(paper_sp_sensitivity(alpha=0.3, C=2.0, M=1.5, L=0.7,
                                                         n=10, n0=6, n1=4))
    assert s.worst_group == "A=1"
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 2))
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    a = np.tile([0, 1], 20)
    eo = fairness_groups(x, y, a, criterion="eo")
    sizes = (5, 4, 7, 3)
    s = objective_sensitivity(eo, sizes, alpha=0.6, C=1.0, M=1.0, L=2.0)
    assert s.value == pytest.approx(paper_eo_sensitivity(alpha=0.6, C=1.0, M=1.0, L=2.0,
                                                         n=sum(sizes), sizes=sizes, R=2))


def test_public_reference_gives_thm_4_1_a_and_private_reference_b():
    x, z = np.zeros((8, 2)), np.ones((5, 2))
    pub = matching_groups(x, z)
    s = objective_sensitivity(pub, (8, 5), alpha=1.0, C=1.0, M=1.0, L=2.0)
    assert s.per_group == {"x": pytest.approx(4 * 1.0 * 3 * 2.0 / 8)}
    both = matching_groups(x, z, reference_private=True)
    s = objective_sensitivity(both, (8, 5), alpha=1.0, C=1.0, M=1.0, L=2.0)
    # Thm 4.1(b) with L_2 = 0 (the reference is not passed through the model).
    assert s.value == pytest.approx(4 * max(3 * 2.0 / 8, 2.0 / 5))


def _big_model(d_in, d_out, seed):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(d_in, 8), torch.nn.Tanh(),
                            torch.nn.Linear(8, d_out)).double()
    with torch.no_grad():       # large weights: outputs beyond M, Jacobians beyond L
        for p in m.parameters():
            p.mul_(6.0)
    return m


def _trainer(model, groups, **kw):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    args = dict(penalty=groups.criterion, alpha=0.5, noise_multiplier=1.0, target_delta=1e-5,
                steps=1, batch_fraction=1.0, clip=1.0, M=0.5, L=0.3,
                rng=np.random.default_rng(0), loss="mse")
    args.update(kw)
    return make_private(model, opt, groups, **args)


def _gradient(trainer, groups):
    t = dataclasses.replace(trainer, groups=groups)
    t.direction_generator.manual_seed(123)     # the same public directions for D and D'
    grads, _ = t.private_gradient([np.arange(g.size) for g in groups.groups])
    return torch.cat([g.reshape(-1) for g in grads])


def _replace(groups, j, i, x_new):
    g = groups.groups[j]
    x = g.x.clone()
    x[i] = x_new
    new = list(groups.groups)
    new[j] = dataclasses.replace(g, x=x)
    return dataclasses.replace(groups, groups=tuple(new))


def _worst_ratio(trainer, groups, trials, rng):
    base = _gradient(trainer, groups)
    worst = 0.0
    for _ in range(trials):
        j = int(rng.integers(len(groups.groups)))
        if not groups.groups[j].private:
            continue
        i = int(rng.integers(groups.groups[j].size))
        x_new = torch.as_tensor(rng.normal(0, rng.choice([0.1, 1, 10]),
                                           size=groups.groups[j].x.shape[1:]))
        other = _gradient(trainer, _replace(groups, j, i, x_new))
        worst = max(worst, float(torch.linalg.vector_norm(other - base)))
    return worst / trainer.sensitivity.value


@pytest.mark.parametrize(("d_out", "clipping"), [(1, "spectral"), (2, "spectral"),
                                                 (3, "per-coordinate")])
def test_brute_force_sp_stays_within_the_bound(d_out, clipping):
    rng = np.random.default_rng(d_out)
    groups = _sp_groups(6, 5, d=3, seed=d_out)
    groups = dataclasses.replace(groups, groups=tuple(
        dataclasses.replace(g, y=torch.as_tensor(rng.normal(size=(g.size, d_out))))
        for g in groups.groups))
    trainer = _trainer(_big_model(3, d_out, d_out), groups, jacobian_clipping=clipping,
                       n_projections=5)
    ratio = _worst_ratio(trainer, groups, 60, rng)
    assert ratio <= 1.0
    assert ratio > 0.02   # the search moves the gradient: the check is not vacuous


def test_brute_force_eo_and_matching_stay_within_the_bound():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(16, 2))
    y = np.r_[np.zeros(8, int), np.ones(8, int)]
    a = np.tile([0, 1], 8)
    eo = fairness_groups(x, y, a, criterion="eo", dtype=torch.float64)
    model = torch.nn.Sequential(_big_model(2, 1, 4), torch.nn.Sigmoid())
    trainer = _trainer(model, eo, loss="bce", alpha=0.7)
    assert _worst_ratio(trainer, eo, 40, rng) <= 1.0
    z = rng.normal(size=(7, 2))
    match = matching_groups(x, z, reference_private=True, dtype=torch.float64)
    trainer = _trainer(_big_model(2, 2, 5), match, loss=None, alpha=1.0, n_projections=4)
    assert _worst_ratio(trainer, match, 40, rng) <= 1.0


def test_without_clipping_the_bound_is_broken():
    """The brute-force search has power: with clipping switched off (huge M and L) the
    same search exceeds the sensitivity computed for the small M and L."""
    rng = np.random.default_rng(7)
    groups = _sp_groups(6, 5, d=3, seed=7)
    groups = dataclasses.replace(groups, groups=tuple(
        dataclasses.replace(g, y=torch.zeros(g.size, 1, dtype=torch.float64))
        for g in groups.groups))
    clipped = _trainer(_big_model(3, 1, 7), groups)
    # the loose bounds in the gradient, the sensitivity (calibration) of the clipped run
    loose = dataclasses.replace(clipped, params=clipped.params.replace(M=1e6, L=1e6,
                                                                       clip=1e6))
    assert _worst_ratio(loose, groups, 30, rng) > 1.0


def test_a_public_group_is_never_charged():
    g = Groups((Group("x", torch.zeros(4, 2), None, True, True),
                Group("ref", torch.zeros(3, 2), None, False, False)), (), "match")
    s = objective_sensitivity(dataclasses.replace(g, pairs=matching_groups(
        np.zeros((4, 2)), np.zeros((3, 2))).pairs), (4, 3), alpha=1.0, C=1.0, M=1.0, L=1.0)
    assert list(s.per_group) == ["x"]
