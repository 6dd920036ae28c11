"""Issue 26: the defaults' rule (public quantities only) and the degenerate-model check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.defaults import (
    DEFAULT_RULE,
    default_hyperparameters,
    input_norm_bound,
)
from privot.learning.diagnostics import (
    CONSTANT_SHARE,
    DEGENERATE_NOTE,
    degenerate_predictions,
)


def test_rule_of_public_quantities():
    d = default_hyperparameters(6, group_sizes=[3000, 1000], epsilon=1.0, delta=1e-8)
    g = math.sqrt(7)
    assert input_norm_bound(6) == pytest.approx(g)
    assert (d.optimizer, d.lr, d.momentum, d.schedule) == ("sgd", 2.0, 0.9, "linear")
    assert (d.steps, d.batch_fraction) == (300, 0.2)
    assert d.clip == pytest.approx(g / 4) and d.M == 0.25 and d.L == pytest.approx(g / 8)
    assert d.center and d.rule == DEFAULT_RULE
    # the same without the optional quantities: the rule reads the columns only
    assert default_hyperparameters(6) == d


@pytest.mark.parametrize("kwargs,name", [
    ({"n_columns": 0}, "n_columns"),
    ({"n_columns": 3, "group_sizes": [10, 1]}, "group_sizes"),
    ({"n_columns": 3, "epsilon": 0}, "epsilon"),
    ({"n_columns": 3, "delta": 1.0}, "delta"),
])
def test_rule_refuses_bad_input(kwargs, name):
    with pytest.raises(InvalidParameterError) as err:
        default_hyperparameters(**kwargs)
    assert err.value.name == name


def test_exact_bounds_of_the_logistic_model():
    """The rule's G bounds what it claims: the BCE gradient <= G, the score Jacobian
    <= G/4, on the worst encoded rows (all numeric at 1, a 1 in every one-hot block)."""
    torch = pytest.importorskip("torch")
    k = 5
    g = input_norm_bound(k)
    x = torch.ones(1, k)
    model = torch.nn.Sequential(torch.nn.Linear(k, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        model[0].weight.fill_(0.0)
        model[0].bias.fill_(0.0)  # s = 1/2: the Jacobian is at its largest
    s = model(x).sum()
    grads = torch.autograd.grad(s, list(model.parameters()))
    jac = torch.cat([gr.reshape(-1) for gr in grads]).norm()
    assert float(jac) == pytest.approx(g / 4)
    with torch.no_grad():
        model[0].bias.fill_(-3.0)  # y = 1: the BCE gradient is (1 - s) (x, 1), -> G as s -> 0
    s = model(x).reshape(-1)
    loss = torch.nn.functional.binary_cross_entropy(s, torch.ones(1))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    norm = float(torch.cat([gr.reshape(-1) for gr in grads]).norm())
    assert norm == pytest.approx((1 - float(s.detach())) * g, rel=1e-5) and norm <= g


def test_constant_model_is_degenerate():
    a = np.r_[np.zeros(50), np.ones(50)]
    flag = degenerate_predictions(np.full(100, 0.3), a)
    assert flag["degenerate"] and flag["majority_class"] == 0
    assert flag["majority_share"] == 1.0 and flag["note"] == DEGENERATE_NOTE
    assert flag["selection_rates"] == {"0.0": 0.0, "1.0": 0.0}
    assert flag["constant_groups"] == ["0.0", "1.0"]


def test_share_threshold():
    s = np.r_[np.full(99, 0.9), np.full(1, 0.1)]  # 99% class 1
    assert degenerate_predictions(s)["degenerate"]
    assert degenerate_predictions(s)["majority_class"] == 1
    s = np.r_[np.full(98, 0.9), np.full(2, 0.1)]  # 98%
    assert not degenerate_predictions(s)["degenerate"]
    assert CONSTANT_SHARE == 0.99


def test_constant_within_one_group_is_reported_not_degenerate():
    a = np.r_[np.zeros(50), np.ones(50)]
    s = np.r_[np.full(50, 0.2), np.linspace(0, 1, 50)]
    flag = degenerate_predictions(s, a)
    assert not flag["degenerate"] and flag["constant_groups"] == ["0.0"]
    assert "note" not in flag


def test_bad_input():
    with pytest.raises(InvalidDataError):
        degenerate_predictions([])
    with pytest.raises(InvalidDataError):
        degenerate_predictions([0.1, 0.2], [0])
    with pytest.raises(InvalidParameterError):
        degenerate_predictions([0.1], share=0.4)


def test_library_use_matches_the_rule():
    """options() and optimizer_for() give make_private what privot learn uses."""
    torch = pytest.importorskip("torch")
    from privot.learning import make_private
    from privot.learning.result import build_classifier

    d = default_hyperparameters(2)
    rng = np.random.default_rng(0)
    x = rng.random((200, 2)).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int64)
    a = rng.integers(0, 2, 200)
    model = build_classifier(2, seed=0)
    opt, schedule = d.optimizer_for(model)
    assert isinstance(opt, torch.optim.SGD) and opt.defaults["momentum"] == 0.9
    trainer = make_private(model, opt, (x, y, a), penalty="sp", alpha=0.5,
                           target_epsilon=1.0, target_delta=1e-5, rng=1,
                           **{**d.options(), "steps": 4})
    assert trainer.clip == pytest.approx(d.clip) and trainer.M == 0.25
    trainer.train(callback=lambda rec: schedule.step())
    assert opt.param_groups[0]["lr"] < d.lr  # the linear schedule ran


def _penalty_groups(minority_share: float, n: int = 2000):
    from privot.learning.groups import fairness_groups

    gen = np.random.default_rng(3)
    a = (np.arange(n) < int(minority_share * n)).astype(int)
    y = gen.integers(0, 2, n)
    x = gen.normal(size=(n, 2)).astype(np.float32)
    return fairness_groups(x, y, a, criterion="sp")


@pytest.mark.parametrize("share,alpha,warns", [(0.1, 0.5, True), (0.4, 0.5, False),
                                               (0.1, 0.0, False), (0.1, 0.1, False)])
def test_penalty_dominating_the_sensitivity_is_warned_before_the_charge(share, alpha,
                                                                        warns):
    """The penalty-to-loss ratio of the sensitivity (public: batch sizes, C, M, L, alpha):
    at the defaults' constants it is alpha/(1-alpha) n/n_min, above 5 a warning names the
    remedies; the run is still charged and built (a warning, not a refusal)."""
    import warnings

    import torch

    from fair_data import logistic_model
    from privot.learning import make_private
    from privot.learning.sensitivity import PENALTY_DOMINATES

    groups = _penalty_groups(share)
    model = logistic_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), groups,
                         alpha=alpha, target_epsilon=1.0, target_delta=1e-6, steps=5,
                         clip=0.5, M=0.25, L=0.25, rng=0)
    ratio = t.sensitivity.penalty_to_loss
    said = [w for w in caught if "fairness penalty" in str(w.message)]
    assert bool(said) is warns, [str(w.message) for w in caught]
    if alpha == 0:
        assert ratio is None
    else:  # 16 M L / (2 C) = 1 here: the ratio is alpha/(1-alpha) * N'/n'_min
        n_min = round(0.2 * share * 2000)
        expect = alpha / (1 - alpha) * round(0.2 * 2000 * (1 - share) + n_min) / n_min
        assert ratio == pytest.approx(expect, rel=0.02)
        assert (ratio > PENALTY_DOMINATES) is warns
    assert t.privacy_report()["penalty_to_loss"] == ratio
