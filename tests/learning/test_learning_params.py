"""LearningParams: the one parameter object of make_private; keyword options build it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fair_data import logistic_model, two_group_table
from privot.errors import InvalidParameterError
from privot.learning import LearningParams, LearningResult, make_private, require_torch


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.5).astype(int)
    x = np.c_[y + rng.normal(0, 1, n), a + rng.normal(0, 0.5, n)].astype(np.float32)
    return x, y, a


def _trained(params=None, **options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Sigmoid())
    t = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), _data(), params,
                     rng=14, **options)
    t.train()
    return t


KW = dict(penalty="sp", alpha=0.5, noise_multiplier=4.0, target_delta=1e-5, steps=4)


def test_a_params_object_and_keyword_options_are_the_same_run():
    by_kw = _trained(**KW)
    by_params = _trained(LearningParams(**KW))
    for p, q in zip(by_kw.model.parameters(), by_params.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert by_kw.privacy_report() == by_params.privacy_report()
    assert by_params.params == LearningParams(**KW)


def test_options_beside_a_params_object_replace_its_fields():
    t = _trained(LearningParams(**KW), alpha=0.25)
    assert t.alpha == 0.25 and t.params.alpha == 0.25 and t.steps == 4


def test_fields_are_validated_and_normalised_when_built():
    p = LearningParams(target_epsilon=1, target_delta=1e-5, steps=3, batch_sizes=[5, 6])
    assert isinstance(p.target_epsilon, float) and p.batch_sizes == (5, 6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.alpha = 0.1
    with pytest.raises(InvalidParameterError, match="alpha"):
        LearningParams(target_epsilon=1.0, target_delta=1e-5, alpha=2.0)
    with pytest.raises(InvalidParameterError, match="target_epsilon"):
        LearningParams(target_delta=1e-5)  # neither epsilon nor sigma
    with pytest.raises(InvalidParameterError, match="learning_rate"):
        LearningParams(**KW).replace(learning_rate=0.1)
    assert len(dataclasses.fields(LearningParams)) <= 20
    assert LearningParams(**KW).to_dict()["noise_multiplier"] == 4.0


def test_an_unknown_option_or_a_wrong_params_object_is_refused():
    with pytest.raises(InvalidParameterError, match="criterion"):
        _trained(criterion="sp", **KW)
    with pytest.raises(InvalidParameterError, match="params"):
        _trained(params={"alpha": 0.5})


def test_the_trainer_reads_through_and_has_a_one_line_repr():
    t = _trained(**KW)
    assert (t.penalty, t.alpha, t.steps, t.delta) == ("sp", 0.5, 4, 1e-5)
    assert t.batch_sizes == t.calibration.batch_sizes
    assert t.sensitivity is t.calibration.sensitivity
    assert t.loss_name == "bce" and callable(t.loss_fn)
    assert len(dataclasses.fields(t)) <= 20
    r = repr(t)
    assert "\n" not in r and r.startswith("PrivateWassersteinTrainer(sp")
    assert "steps 4/4" in r


def test_result_wraps_from_trainer():
    t = _trained(**KW)
    res = t.result(architecture={"model": "logistic", "inputs": 2})
    ref = LearningResult.from_trainer(t, architecture={"model": "logistic", "inputs": 2})
    assert isinstance(res, LearningResult)
    assert res.to_dict() == ref.to_dict()


def test_torch_is_reached_through_the_public_accessor():
    assert require_torch() is torch


def test_old_metrics_path_is_the_evaluation_namespace():
    from privot.evaluation import learning as evaluation
    from privot.learning import metrics

    for name in metrics.__all__:
        assert getattr(metrics, name) is getattr(evaluation, name)


def test_private_learning_is_make_private_train_result_in_one_call():
    """Issue 25: the one-call entry point gives the same release as the three steps."""
    torch = pytest.importorskip("torch")
    from privot.learning import LearningResult, make_private, private_learning

    x, y, a = two_group_table(5, n=120)
    opts = dict(penalty="sp", alpha=0.5, noise_multiplier=4.0, target_delta=1e-5, steps=2)

    def model_and_optimizer():
        model = logistic_model()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)

    m1, o1 = model_and_optimizer()
    res = private_learning(m1, o1, (x, y, a), rng=3, progress=False, **opts)
    m2, o2 = model_and_optimizer()
    trainer = make_private(m2, o2, (x, y, a), rng=3, **opts)
    trainer.train(progress=False)
    assert isinstance(res, LearningResult)
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(p1, p2)
    assert res.epsilon == pytest.approx(trainer.privacy_report()["epsilon"])
    assert res.architecture == {"model": "Sequential", "trainable_parameters": 3}
