"""``private_barycenter``: both methods end to end, JL, amplification, engines, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privot.barycenters import (
    BarycenterResult,
    PublicBounds,
    default_projection_dim,
    evaluate_barycenter,
    private_barycenter,
)
from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.ot import free_support_barycenter
from privot.privacy import PrivacyAccountant
from privot.privacy.accounting import amplify_fixed_size, sample_cost_for
from privot.privacy.types import Neighbouring, PrivacyCost

BOX = PublicBounds.box([-1.0, -1.0], [1.0, 1.0])
CENTRES = ([0.5, 0.5], [-0.5, 0.5], [0.5, -0.5], [-0.5, -0.5])


def _blobs(n: int, seed: int = 0, k: int = 2) -> list[np.ndarray]:
    """k groups, each a mixture of the four blobs of CENTRES (std 0.08), in the box."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        c = np.asarray(CENTRES)[rng.integers(0, 4, n)]
        out.append(np.clip(c + 0.08 * rng.normal(size=(n, 2)), -1, 1))
    return out


def _nonprivate(groups, m=8, seed=0):
    units = [BOX.to_unit(g)[0] for g in groups]
    return BOX.from_unit(free_support_barycenter(units, m=m, reg=1e-3, rng=seed).support)


def test_coreset_method_is_close_to_nonprivate_with_enough_data():
    groups = _blobs(4000)
    ref = _nonprivate(groups)
    res = private_barycenter(groups, bounds=BOX, m=8, epsilon=1.0, rng=1)
    assert isinstance(res, BarycenterResult)
    assert res.support.shape == (8, 2) and np.allclose(res.weights, 1 / 8)
    assert res.cost == PrivacyCost(1.0) and res.relation is Neighbouring.REPLACE_ONE_IN_GROUP
    assert res.secure is False and res.method == "coreset"
    ev = evaluate_barycenter(groups, res.support, references={"np": ref})
    base = evaluate_barycenter(groups, ref)["cost"]
    # the four blobs are found: cost within 25% of the non-private one, atoms near them
    assert ev["cost"] < 1.25 * base
    assert ev["w2_to_np"] < 0.15
    near = np.min(np.linalg.norm(res.support[:, None] - np.asarray(CENTRES)[None], axis=2), 1)
    assert np.all(near < 0.2)


def test_coreset_method_degrades_gracefully_with_small_epsilon():
    groups = _blobs(4000)
    good = private_barycenter(groups, bounds=BOX, m=8, epsilon=1.0, rng=2)
    bad = private_barycenter(groups, bounds=BOX, m=8, epsilon=0.002, rng=2)
    c_good = evaluate_barycenter(groups, good.support)["cost"]
    c_bad = evaluate_barycenter(groups, bad.support)["cost"]
    assert c_bad > c_good  # less budget, worse barycenter (a test that can fail)
    assert np.all(np.abs(bad.support) <= 1.0 + 1e-12)  # projected onto the public box


def test_perturbation_method_with_public_anchor_and_splitting():
    groups = _blobs(20_000, k=1)
    ref = _nonprivate(groups)
    anchor = np.asarray(CENTRES * 2) + 0.05  # public: not derived from the data
    res = private_barycenter(groups, bounds=BOX, m=8, epsilon=4.0, delta=1e-6,
                             method="perturbation", step="anchored", anchor=anchor,
                             splits=200, rng=3)
    assert res.params["step"] == "anchored"
    assert res.params["anchor"] == "public" and res.params["splits"] == 200
    assert res.params["anchor_epsilon"] == 0.0 and res.params["perturbation_epsilon"] == 4.0
    assert res.params["sensitivity"] == pytest.approx(math.sqrt(8) / 200)
    ev = evaluate_barycenter(groups, res.support, references={"np": ref})
    assert ev["w2_to_np"] < 0.1
    # the noisy step improves on the anchor it started from
    assert ev["cost"] < evaluate_barycenter(groups, anchor)["cost"]


@pytest.mark.parametrize("step, fraction", [(None, 0.5), ("lloyd", 0.5),
                                            ("anchored", 0.25)])
def test_perturbation_default_anchor_splits_the_budget(step, fraction):
    groups = _blobs(3000)
    kw = {} if step is None else {"step": step}
    res = private_barycenter(groups, bounds=BOX, m=4, epsilon=2.0, delta=1e-5,
                             method="perturbation", rng=4, **kw)
    assert res.params["step"] == (step or "lloyd")  # lloyd: the default
    assert res.params["anchor"] == "coreset"
    assert res.params["anchor_epsilon"] + res.params["perturbation_epsilon"] == pytest.approx(2)
    assert res.params["anchor_epsilon"] == pytest.approx(fraction * 2.0)  # the default share
    assert res.cost == PrivacyCost(2.0, 1e-5)
    assert res.support.shape == (4, 2) and np.all(np.isfinite(res.support))
    if res.params["step"] == "lloyd":
        assert res.params["lloyd"]["balancing_rounds"] == 2
        assert res.params["iterations"] == 1
        for key in ("splits", "sigma", "sensitivity", "calibration"):
            assert key not in res.params
        assert "perturbation" not in res.diagnostics
    else:
        assert "lloyd" not in res.params and res.params["splits"] >= 1
        assert "perturbation" in res.diagnostics


def test_lloyd_step_balancing_rounds_and_public_anchor():
    groups = _blobs(3000)
    anchor = np.asarray(CENTRES) + 0.05  # public
    res = private_barycenter(groups, bounds=BOX, m=4, epsilon=2.0, delta=1e-5,
                             method="perturbation", anchor=anchor, balancing_rounds=0,
                             rng=4)
    assert res.params["step"] == "lloyd" and res.params["anchor"] == "public"
    assert res.params["anchor_epsilon"] == 0.0 and res.params["perturbation_epsilon"] == 2.0
    assert res.params["lloyd"]["balancing_rounds"] == 0
    assert np.all(np.isfinite(res.support))


def test_large_noise_warns():
    groups = _blobs(200)
    with pytest.warns(UserWarning, match="noise is large"):
        private_barycenter(groups, bounds=BOX, m=4, epsilon=0.5, delta=1e-5,
                           method="perturbation", step="anchored", splits=1, rng=5)


def test_amplification_by_subsampling_raises_the_sample_budget():
    groups = _blobs(1000)
    res = private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, population_size=100_000,
                             rng=6)
    q = 1000 / 100_000
    assert res.sample_cost.epsilon == pytest.approx(math.log1p(math.expm1(1.0) / q))
    back = amplify_fixed_size(res.sample_cost, sample_size=[1000, 1000],
                              population_size=[100_000, 100_000])
    assert back.epsilon <= 1.0 and back.epsilon == pytest.approx(1.0, rel=1e-12)
    assert res.cost == PrivacyCost(1.0)


def test_sample_cost_for_inverts_amplification_and_refuses_large_delta():
    t = PrivacyCost(0.5, 1e-6)
    s = sample_cost_for(t, sample_size=10, population_size=1000)
    a = amplify_fixed_size(s, sample_size=10, population_size=1000)
    assert a.epsilon <= 0.5 and a.epsilon == pytest.approx(0.5, rel=1e-12)
    assert a.delta == pytest.approx(1e-6)
    with pytest.raises(InvalidParameterError, match="delta"):
        sample_cost_for(PrivacyCost(1.0, 0.02), sample_size=10, population_size=1000)


def test_jl_path_runs_algorithms_3_and_4_back_in_full_dimension():
    rng = np.random.default_rng(7)
    d = 12
    means = np.zeros((2, d))
    means[0, 0], means[1, 0] = 0.2, -0.2
    groups = [np.clip(means[rng.integers(0, 2, 3000)] + 0.03 * rng.normal(size=(3000, d)),
                      -0.45, 0.45) for _ in range(2)]
    bounds = PublicBounds.ball(np.zeros(d), 0.5 * math.sqrt(d))
    res = private_barycenter(groups, bounds=bounds, m=2, epsilon=2.0, projection_dim=3,
                             depth=8, rng=8, method="coreset")
    assert res.diagnostics["projection_dim"] == 3 and res.support.shape == (2, d)
    # the two atoms are found on either side of the first axis
    assert sorted(np.sign(res.support[:, 0])) == [-1, 1]


def test_default_projection_dim_follows_thm_5_4_order():
    assert default_projection_dim(1000, 10) is None  # 64 ln(20000) > 10: no projection
    dp = default_projection_dim(1000, 784)
    assert dp == math.ceil(16 / 0.25 * math.log(1000 / 0.05))


def test_engine_leaf_counts_give_the_same_release(tmp_path):
    pd = pytest.importorskip("pandas")
    from privot.barycenters import coreset_leaf_counts
    from privot.barycenters.coresets import MAX_DEPTH

    groups = _blobs(1500)
    frame = pd.concat([pd.DataFrame({"x": g[:, 0], "y": g[:, 1], "grp": i})
                       for i, g in enumerate(groups)])
    path = tmp_path / "pts.csv"
    frame.to_csv(path, index=False)
    counts = coreset_leaf_counts(str(path), bounds=BOX, depth=MAX_DEPTH,
                                 coordinate_columns=["x", "y"], group_column="grp")
    a = private_barycenter(counts, m=6, epsilon=1.0, rng=9)
    b = private_barycenter(groups, bounds=BOX, m=6, epsilon=1.0, rng=9)
    np.testing.assert_array_equal(a.support, b.support)
    with pytest.raises(InvalidParameterError, match="method"):
        private_barycenter(counts, m=6, epsilon=1.0, delta=1e-5, method="perturbation")


def test_accountant_is_charged_once_before_release():
    acc = PrivacyAccountant(1.5)
    groups = _blobs(500)
    private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, rng=10, accountant=acc)
    with pytest.raises(BudgetExceededError):
        private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, rng=10, accountant=acc)


def test_unequal_group_sizes_are_allowed():
    a, b = _blobs(800, seed=1)
    res = private_barycenter([a, b[:300]], bounds=BOX, m=4, epsilon=1.0, rng=11)
    assert res.params["group_sizes"] == [800, 300]
    res = private_barycenter([a, b[:300]], bounds=BOX, m=4, epsilon=1.0, delta=1e-5,
                             method="perturbation", rng=11)  # the lloyd step
    assert res.params["step"] == "lloyd" and res.params["group_sizes"] == [800, 300]
    assert res.support.shape == (4, 2) and np.all(np.isfinite(res.support))
    with pytest.warns(UserWarning, match="noise is large"):
        res = private_barycenter([a, b[:300]], bounds=BOX, m=4, epsilon=1.0, delta=1e-5,
                                 method="perturbation", step="anchored", splits=3, rng=11)
    assert res.support.shape == (4, 2)


def test_clipped_points_are_counted():
    g = _blobs(500)[0].copy()
    g[:7] = 5.0
    res = private_barycenter([g], bounds=BOX, m=4, epsilon=1.0, rng=12)
    assert res.n_clipped == (7,)


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"m": 0}, InvalidParameterError, "m"),
    ({"m": 501}, InvalidParameterError, "m"),
    ({"epsilon": 0.0}, InvalidParameterError, "epsilon"),
    ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
    ({"method": "fast"}, InvalidParameterError, "method"),
    ({"method": "coreset", "delta": 1e-5}, InvalidParameterError, "delta"),  # pure DP
    ({"method": "perturbation"}, InvalidParameterError, "delta"),
    ({"method": "perturbation", "delta": 1.0}, InvalidParameterError, "delta"),
    ({"method": "perturbation", "delta": 0.0}, InvalidParameterError, "delta"),
    ({"method": "perturbation", "delta": 1e-5, "step": "anchored", "splits": 501},
     InvalidParameterError, "splits"),
    ({"method": "perturbation", "delta": 1e-5, "step": "newton"}, InvalidParameterError,
     "step"),
    ({"method": "perturbation", "delta": 1e-5, "balancing_rounds": 11},
     InvalidParameterError, "balancing_rounds"),
    ({"method": "perturbation", "delta": 1e-5, "balancing_rounds": -1},
     InvalidParameterError, "balancing_rounds"),
    ({"projection_dim": 0}, InvalidParameterError, "projection_dim"),
    ({"p": 0.5}, InvalidParameterError, "p"),
    ({"group_weights": [-0.5, 1.5]}, InvalidDataError, "group_weights"),
    ({"group_weights": [1.0]}, InvalidDataError, "group_weights"),
    ({"anchor_fraction": 1.0}, InvalidParameterError, "anchor_fraction"),
    ({"bounds": "box"}, InvalidParameterError, "bounds"),
])
def test_bad_parameters_name_themselves(kwargs, exc, name):
    args = {"bounds": BOX, "m": 4, "epsilon": 1.0, "rng": 0} | kwargs
    with pytest.raises(exc, match=name):
        private_barycenter(_blobs(500), **args)


def test_bad_data_is_refused():
    good = _blobs(100)[0]
    with pytest.raises(InvalidDataError, match="empty"):
        private_barycenter([], bounds=BOX, m=2, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="empty"):
        private_barycenter([good, np.zeros((0, 2))], bounds=BOX, m=2, epsilon=1.0)
    bad = np.full_like(good, np.inf)  # no usable row (one such row: tests/.../unusable)
    with pytest.raises(InvalidDataError, match="no usable row"):
        private_barycenter([bad], bounds=BOX, m=2, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="numeric"):
        private_barycenter([np.array([["a", "b"], ["c", "d"]])], bounds=BOX, m=1,
                           epsilon=1.0)
    with pytest.raises(InvalidDataError, match="dimension"):
        private_barycenter([np.zeros((10, 3))], bounds=BOX, m=2, epsilon=1.0)


@pytest.mark.parametrize("kw", [{"step": "anchored", "splits": 500}, {}])
def test_no_warning_in_the_good_regime(kw):
    groups = _blobs(20_000, k=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        private_barycenter(groups, bounds=BOX, m=4, epsilon=5.0, delta=1e-6,
                           method="perturbation", iterations=1, rng=13, **kw)
