"""make_private end to end: accounting, budget, bad input, and an audit of one noisy step."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from privot.errors import (
    BudgetExceededError,
    InvalidDataError,
    InvalidParameterError,
)
from privot.learning import fairness_groups, make_private
from privot.privacy.accounting import gdp_clt_epsilon, pld_epsilon, rdp_epsilon
from privot.privacy.audit import audit
from privot.privacy.budget import PrivacyAccountant


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.4 * a).astype(int)
    x = np.c_[y + rng.normal(0, 1, n), a + rng.normal(0, 0.5, n), rng.normal(size=n)]
    return x.astype(np.float32), y, a


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Sigmoid())


def _make(model=None, data=None, **kw):
    model = model or _model()
    # A fixed sigma (calibration by PLD bisection costs seconds); tests of the calibration
    # pass target_epsilon.
    args = dict(penalty="sp", alpha=0.5, noise_multiplier=4.0, target_delta=1e-5, steps=20,
                rng=np.random.default_rng(1))
    if "target_epsilon" in kw:
        args["noise_multiplier"] = None
    args.update(kw)
    return make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                        data if data is not None else _data(), **args)


def test_training_runs_and_reports_public_facts():
    t = _make()
    before = [p.detach().clone() for p in t.model.parameters()]
    recs = t.train()
    assert len(recs) == 20 and t.steps_taken == 20
    assert any(not torch.equal(b, p) for b, p in zip(before, t.model.parameters(),
                                                      strict=True))
    rep = t.privacy_report()
    assert rep["group_sizes"] == {"A=0": t.groups.groups[0].size,
                                  "A=1": t.groups.groups[1].size}
    assert "group sizes are public" in rep["relation"]
    assert rep["epsilon"] == pytest.approx(t.epsilon)
    assert rep["secure_randomness"] is False
    with pytest.raises(InvalidParameterError, match="steps"):
        t.step()


def test_the_headline_is_fixed_size_pld_with_rdp_and_the_paper_beside_it():
    t = _make(steps=50, target_epsilon=1.0)
    assert t.calibration.calibrated and t.epsilon <= 1.0
    kw = dict(noise_multiplier=t.noise_multiplier, sampling_rate=t.sampling_rate, steps=50,
              delta=1e-5, sampling="fixed-size")
    assert t.epsilon == pytest.approx(pld_epsilon(**kw))
    rep = t.privacy_report()
    # dp-accounting's RDP for the same event (sampling without replacement, replace-one)
    # is an independent upper bound: the tight PLD must be below it.
    assert rep["epsilon_rdp"] == pytest.approx(rdp_epsilon(**kw))
    assert t.epsilon <= rep["epsilon_rdp"]
    assert rep["epsilon_paper_gdp_clt"] == pytest.approx(gdp_clt_epsilon(**kw))
    steps, eps = t.epsilon_curve(points=5)
    assert steps[-1] == 50 and eps[-1] == pytest.approx(t.epsilon)
    assert np.all(np.diff(eps) > 0)


def test_sampling_rate_is_the_largest_group_fraction():
    x, y, a = _data()
    groups = fairness_groups(x, y, a)
    n0, n1 = (g.size for g in groups.groups)
    t = _make(data=groups, batch_sizes=(10, 40))
    assert t.sampling_rate == pytest.approx(max(10 / n0, 40 / n1))


def test_the_run_is_charged_up_front_and_refused_when_it_does_not_fit():
    acct = PrivacyAccountant(3.0, 1e-4)
    t = _make(accountant=acct)
    assert acct.spent.epsilon == pytest.approx(t.epsilon)
    model = _model(3)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(BudgetExceededError):
        _make(model=model, accountant=acct, noise_multiplier=1.0)
    assert len(acct.ledger) == 1
    assert all(torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))


def test_eo_groups_and_noise_scale():
    t = _make(penalty="eo", alpha=0.8)
    assert len(t.groups.groups) == 4 and len(t.groups.pairs) == 2
    assert t.noise_std == pytest.approx(t.noise_multiplier * t.effective_sensitivity)
    assert t.effective_sensitivity == pytest.approx(t.sensitivity.value, rel=1e-5)
    t.train()


def test_nonfinite_outputs_contribute_nothing_and_the_step_still_answers():
    class Sometimes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1)

        def forward(self, x):
            out = torch.sigmoid(self.lin(x))
            return torch.where(x[:, :1] > 2.0, torch.full_like(out, float("nan")), out)

    t = _make(model=Sometimes(), steps=3)
    recs = t.train()
    assert sum(r.nonfinite for r in recs) > 0
    assert all(torch.isfinite(p).all() for p in t.model.parameters())


@pytest.mark.parametrize(("kw", "match"), [
    (dict(alpha=1.5), "alpha"),
    (dict(M=0.0), "M="),
    (dict(L=-1.0), "L="),
    (dict(clip=0.0), "clip"),
    (dict(target_epsilon=0.0), "target_epsilon"),
    (dict(target_delta=1.0), "target_delta"),
    (dict(target_delta=None), "target_delta"),
    (dict(penalty="dp"), "penalty"),
    (dict(batch_sizes=(10, 10_000)), "batch_sizes"),
    (dict(jacobian_clipping="frobenius"), "jacobian_clipping"),
    (dict(loss="hinge"), "loss"),
    (dict(steps=0), "steps"),
    (dict(noise_multiplier=1e-4), "noise_multiplier"),
    (dict(target_epsilon=1e3), "target_epsilon"),
])
def test_bad_parameters_name_themselves(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        _make(**kw)


def test_bad_groups_and_models_are_refused():
    x, y, a = _data()
    with pytest.raises(InvalidParameterError, match="sensitive"):
        _make(data=(x, y, np.where(a == 1, 2, a) + (np.arange(len(a)) == 0)))
    with pytest.raises(InvalidParameterError, match="sensitive"):
        _make(data=(x, y, np.zeros_like(a)))
    one = np.zeros_like(a)
    one[0] = 1
    with pytest.raises(InvalidDataError, match="A=1 has 1 record"):
        _make(data=(x, y, one))
    bad = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        bad[0].bias.fill_(float("nan"))
    with pytest.raises(InvalidParameterError, match="model"):
        _make(model=bad)
    with pytest.raises(InvalidParameterError, match="model"):
        _make(model=torch.nn.Sequential(torch.nn.Linear(5, 1)))


# -- audit of one noisy step -------------------------------------------------------------


def _one_step_pair():
    """A trainer for one full-batch step and the neighbouring pair (replace one record of
    group A=1) whose clipped gradients differ most among a few candidates."""
    x, y, a = _data(60, seed=5)
    groups = fairness_groups(x, y, a, dtype=torch.float64)
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Sigmoid()).double()
    t = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), groups,
                     penalty="sp", alpha=0.5, target_epsilon=1.0, target_delta=1e-5,
                     steps=1, batch_fraction=1.0, clip=1.0, M=1.0, L=1.0,
                     rng=np.random.default_rng(0))
    idx = [np.arange(g.size) for g in groups.groups]
    g0 = torch.cat([g.reshape(-1) for g in t.private_gradient(idx)[0]]).numpy()
    best = None
    rng = np.random.default_rng(9)
    for _ in range(30):
        g = groups.groups[1]
        xs = g.x.clone()
        xs[0] = torch.as_tensor(rng.normal(0, 5, 3))
        ys = g.y.clone()
        ys[0] = 1 - ys[0]
        other = dataclasses.replace(groups, groups=(groups.groups[0], dataclasses.replace(
            g, x=xs, y=ys)))
        g1 = torch.cat([q.reshape(-1) for q in dataclasses.replace(
            t, groups=other).private_gradient(idx)[0]]).numpy()
        if best is None or np.linalg.norm(g1 - g0) > np.linalg.norm(best - g0):
            best = g1
    return t, g0, best


def _sampler(t, g0, g1):
    unit = (g1 - g0) / np.linalg.norm(g1 - g0)

    def draw(data, n, rng):
        return t.noisy(np.tile(data, (n, 1)), rng=rng) @ unit

    return draw


def test_one_noisy_step_passes_its_audit():
    """False-alarm rate: at most 1 - confidence = 1e-3 (fixed seed: deterministic)."""
    t, g0, g1 = _one_step_pair()
    assert np.linalg.norm(g1 - g0) <= t.sensitivity.value
    res = audit(_sampler(t, g0, g1), g0, g1, epsilon=t.epsilon, delta=t.delta,
                n_runs=200_000, confidence=0.999, rng=3)
    assert not res.violated, res.summary()


def test_a_step_with_a_quarter_of_the_noise_is_caught():
    """The same audit refutes the claim when the noise is 4x too small and the pair is
    pushed to the bound (a correct mechanism is flagged with probability <= 1e-3)."""
    t, g0, g1 = _one_step_pair()
    g1 = g0 + (g1 - g0) * (t.sensitivity.value / np.linalg.norm(g1 - g0))
    broken = dataclasses.replace(t, calibration=dataclasses.replace(
        t.calibration, noise_multiplier=t.noise_multiplier / 4))
    res = audit(_sampler(broken, g0, g1), g0, g1, epsilon=t.epsilon, delta=t.delta,
                n_runs=200_000, confidence=0.999, rng=4)
    assert res.violated, res.summary()
    assert math.isfinite(res.epsilon_lower)


def test_a_run_without_an_accountant_keeps_its_own_ledger():
    t = _make()
    assert len(t.accountant.ledger) == 1
    entry = t.accountant.ledger[0]
    assert entry.cost.epsilon == pytest.approx(t.epsilon) and entry.cost.mu is None
    assert entry.relation.value == "replace-one-in-group"
