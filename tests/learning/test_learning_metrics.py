"""privot.evaluation.learning: fairlearn's definitions, the paper's indexes, distances,
bootstrap intervals and the fairness report."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.learning import (
    FairnessReport,
    accuracy,
    bootstrap_interval,
    demographic_parity_difference,
    demographic_parity_ratio,
    disparate_impact,
    equality_of_odds_indexes,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_report,
    ks_distance,
    mean_squared_error,
    selection_rates,
    wasserstein_between_groups,
)
from privot.ot import random_directions, sliced_w2_squared, w2_squared_1d


def _binary_data(seed: int, n: int = 400, groups=(0, 1)):
    rng = np.random.default_rng(seed)
    sens = rng.choice(np.asarray(groups), size=n)
    y = rng.integers(0, 2, n)
    # predictions depend on the group so that the metrics are not trivially 0
    bias = {g: 0.1 * i for i, g in enumerate(groups)}
    p = np.array([bias[g] for g in sens]) + 0.2 * y + 0.6 * rng.random(n)
    return y, (p > 0.5).astype(int), sens


GROUPINGS = [(0, 1), ("a", "b", "c"), (3, 1, 7)]


# --------------------------------------------------------------------------- fairlearn


@pytest.mark.parametrize("groups", GROUPINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fairlearn_metrics_match(groups, seed):
    fm = pytest.importorskip("fairlearn.metrics")
    y, yp, s = _binary_data(seed, groups=groups)
    kw = {"sensitive_features": s}
    assert demographic_parity_difference(y, yp, **kw) == pytest.approx(
        fm.demographic_parity_difference(y, yp, **kw), abs=1e-12)
    assert demographic_parity_ratio(y, yp, **kw) == pytest.approx(
        fm.demographic_parity_ratio(y, yp, **kw), abs=1e-12)
    for agg in ("worst_case", "mean"):
        assert equalized_odds_difference(y, yp, agg=agg, **kw) == pytest.approx(
            fm.equalized_odds_difference(y, yp, agg=agg, **kw), abs=1e-12)
        assert equalized_odds_ratio(y, yp, agg=agg, **kw) == pytest.approx(
            fm.equalized_odds_ratio(y, yp, agg=agg, **kw), abs=1e-12)
    mf = fm.MetricFrame(metrics=fm.selection_rate, y_true=y, y_pred=yp, sensitive_features=s)
    ours = selection_rates(yp, s)
    assert list(ours) == sorted(groups)
    for g, r in ours.items():
        assert r == pytest.approx(mf.by_group[g], abs=1e-12)


def test_fairlearn_empty_label_cell_counts_as_rate_zero():
    fm = pytest.importorskip("fairlearn.metrics")
    # group "b" has no positive label: fairlearn (sklearn's confusion matrix) uses TPR 0
    y = np.array([0, 0, 1, 1, 0, 0, 0])
    yp = np.array([1, 0, 1, 0, 0, 1, 0])
    s = np.array(["a", "a", "a", "a", "b", "b", "b"])
    for f, ref in [(equalized_odds_difference, fm.equalized_odds_difference),
                   (equalized_odds_ratio, fm.equalized_odds_ratio),
                   (demographic_parity_difference, fm.demographic_parity_difference)]:
        assert f(y, yp, sensitive_features=s) == pytest.approx(
            ref(y, yp, sensitive_features=s), abs=1e-12)


def test_equalized_odds_ratio_follows_fairlearn_when_a_ratio_is_undefined():
    fm = pytest.importorskip("fairlearn.metrics")
    s = np.array([0, 0, 0, 1, 1, 1])
    cases = [  # FPR ratio 0/0 (no false positive); TPR ratio 0/0 (no true positive)
        (np.array([0, 1, 1, 0, 1, 1]), np.array([0, 1, 0, 0, 1, 1])),
        (np.array([0, 1, 1, 0, 1, 1]), np.array([1, 0, 0, 0, 0, 0])),
    ]
    for y, yp in cases:
        for agg in ("worst_case", "mean"):
            ours = equalized_odds_ratio(y, yp, sensitive_features=s, agg=agg)
            ref = fm.equalized_odds_ratio(y, yp, sensitive_features=s, agg=agg)
            assert ours == pytest.approx(ref, nan_ok=True), (y, yp, agg)


def test_ratios_zero_over_zero_are_nan_without_warnings():
    y = np.array([0, 1, 0, 1])
    yp = np.zeros(4, dtype=int)
    s = np.array([0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(demographic_parity_ratio(y, yp, sensitive_features=s))
        assert math.isnan(equalized_odds_ratio(y, yp, sensitive_features=s))
        assert demographic_parity_difference(y, yp, sensitive_features=s) == 0.0


def test_booleans_and_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    y, yp, s = _binary_data(5)
    ref = equalized_odds_difference(y, yp, sensitive_features=s)
    assert equalized_odds_difference(torch.tensor(y), torch.tensor(yp).bool(),
                                     sensitive_features=torch.tensor(s)) == ref
    scores = torch.rand(len(s), 1, requires_grad=True)
    assert ks_distance(scores, s) == ks_distance(scores.detach().numpy()[:, 0], s)


# --------------------------------------------------------------------------- errors


def test_accuracy_and_mse():
    assert accuracy([0, 1, 1, 0], [0, 1, 0, 0]) == 0.75
    assert accuracy(np.array([[1], [2]]), [1, 3]) == 0.5
    yt = np.array([[0.0, 0.0], [1.0, 1.0]])
    yp = np.array([[1.0, 2.0], [1.0, 0.0]])
    # rows: 1 + 4 = 5 and 0 + 1 = 1 -> mean of squared norms 3 (sklearn's would be 1.5)
    assert mean_squared_error(yt, yp) == 3.0
    assert mean_squared_error([1.0, 2.0], np.array([[1.0], [4.0]])) == 2.0


# --------------------------------------------------------------------------- paper's indexes


def test_disparate_impact_hand_example():
    # group 0: 1 of 4 selected; group 1: 2 of 4 -> DI = 0.25 / 0.5
    yp = [1, 0, 0, 0, 1, 1, 0, 0]
    a = [0, 0, 0, 0, 1, 1, 1, 1]
    assert disparate_impact(yp, a) == pytest.approx(0.5)
    # labels are sorted: "f" < "m", so "f" plays A = 0
    assert disparate_impact(yp, ["f"] * 4 + ["m"] * 4) == pytest.approx(0.5)


def test_equality_of_odds_hand_example():
    a = [0, 0, 0, 0, 1, 1, 1, 1]
    y = [0, 0, 1, 1, 0, 0, 1, 1]
    yp = [1, 0, 1, 1, 1, 1, 1, 0]
    # Y=0: P(G=1|A=0)=1/2, P(G=1|A=1)=1 -> EO_0 = 0.5
    # Y=1: P(G=1|A=0)=1,   P(G=1|A=1)=1/2 -> EO_1 = 2
    assert equality_of_odds_indexes(y, yp, a) == pytest.approx((0.5, 2.0))


def test_paper_indexes_zero_denominators():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disparate_impact([1, 0, 0, 0], [0, 0, 1, 1]) == math.inf
        assert math.isnan(disparate_impact([0, 0, 0, 0], [0, 0, 1, 1]))
        # cell (A=1, Y=1) is empty -> EO_1 undefined
        eo0, eo1 = equality_of_odds_indexes([0, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 1])
        assert eo0 == pytest.approx(2.0) and math.isnan(eo1)


# --------------------------------------------------------------------------- distances


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("discrete", [False, True])
def test_ks_and_w1_match_scipy(seed, discrete):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, 301)
    x = rng.normal(size=301) + 0.4 * s
    if discrete:  # many ties
        x = np.round(x, 1)
    ref_ks = stats.ks_2samp(x[s == 0], x[s == 1]).statistic
    assert ks_distance(x, s) == pytest.approx(ref_ks, abs=1e-12)
    ref_w1 = stats.wasserstein_distance(x[s == 0], x[s == 1])
    assert wasserstein_between_groups(x, s, p=1) == pytest.approx(ref_w1, rel=1e-10)


def test_w2_matches_privot_ot_and_pot():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(3)
    s = np.r_[np.zeros(70, int), np.ones(130, int)]
    x = rng.normal(size=200) + s
    w2 = wasserstein_between_groups(x[:, None], s, p=2)
    assert w2 ** 2 == pytest.approx(w2_squared_1d(x[s == 0], x[s == 1]), rel=1e-12)
    assert w2 ** 2 == pytest.approx(ot.wasserstein_1d(x[s == 0], x[s == 1], p=2), rel=1e-8)


def test_sliced_w2_for_multidimensional_scores():
    rng = np.random.default_rng(4)
    s = rng.integers(0, 2, 300)
    x = rng.normal(size=(300, 3)) + 0.5 * s[:, None]
    dirs = random_directions(3, n_projections=40, rng=7)
    ref = math.sqrt(sliced_w2_squared(x[s == 0], x[s == 1], directions=dirs))
    got = wasserstein_between_groups(x, s, n_projections=40, rng=7)
    assert got == pytest.approx(ref, rel=1e-12)
    assert wasserstein_between_groups(x, s) == wasserstein_between_groups(x, s)  # fixed seed
    with pytest.raises(InvalidParameterError) as exc:
        wasserstein_between_groups(x, s, p=1)
    assert exc.value.name == "p"


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_interval_covers_estimate_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    widths = []
    for n in (200, 5000):
        x = rng.normal(size=n)
        est, lo, hi = bootstrap_interval(np.mean, x, n_resamples=400, rng=1)
        assert est == pytest.approx(x.mean())
        assert lo <= est <= hi
        widths.append(hi - lo)
    assert widths[1] < 0.4 * widths[0]  # ~ 1 / sqrt(25) = 0.2


def test_bootstrap_interval_is_reproducible_and_joint():
    y, yp, s = _binary_data(7, n=300)
    def stat(a, b, c):
        return demographic_parity_difference(a, b, sensitive_features=c)

    r1 = bootstrap_interval(stat, y, yp, s, n_resamples=200, rng=5)
    r2 = bootstrap_interval(stat, y, yp, s, n_resamples=200, rng=np.random.default_rng(5))
    assert r1 == r2
    est, lo, hi = r1
    assert lo <= est <= hi and 0 < hi - lo < 0.5
    # a wider level gives a wider interval
    _, lo2, hi2 = bootstrap_interval(stat, y, yp, s, n_resamples=200, level=0.5, rng=5)
    assert lo <= lo2 <= hi2 <= hi


def test_report_intervals_equal_generic_bootstrap():
    """The report's counts-based bootstrap draws the same resamples as
    bootstrap_interval with the same seed, so the intervals agree exactly."""
    rng = np.random.default_rng(11)
    n = 240
    s = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    scores = np.clip(0.3 * y + 0.2 * s + 0.5 * rng.random(n), 0, 1)
    rep = fairness_report(y, scores, s, n_resamples=150, rng=9)
    pred = (scores > 0.5).astype(int)
    checks = {
        "accuracy": (lambda a, b: accuracy(a, b), (y, pred)),
        "demographic_parity_difference": (
            lambda a, b, c: demographic_parity_difference(a, b, sensitive_features=c),
            (y, pred, s)),
        "equalized_odds_difference": (
            lambda a, b, c: equalized_odds_difference(a, b, sensitive_features=c),
            (y, pred, s)),
        "ks": (ks_distance, (scores, s)),
        "w1": (lambda a, b: wasserstein_between_groups(a, b, p=1), (scores, s)),
        "w2": (wasserstein_between_groups, (scores, s)),
    }
    for name, (fn, arrays) in checks.items():
        est, lo, hi = bootstrap_interval(fn, *arrays, n_resamples=150, rng=9)
        got = getattr(rep, name)
        assert (got.estimate, got.low, got.high) == pytest.approx((est, lo, hi), abs=1e-10), name


def test_regression_report_sliced_and_per_coordinate():
    rng = np.random.default_rng(12)
    n = 200
    s = rng.integers(0, 2, n)
    yt = rng.random((n, 2))
    pred = yt + 0.2 * s[:, None] + 0.05 * rng.normal(size=(n, 2))
    rep = fairness_report(yt, pred, s, task="regression", n_resamples=100, rng=0,
                          n_projections=30)
    assert rep.mse.estimate == pytest.approx(mean_squared_error(yt, pred))
    assert rep.w2.estimate == pytest.approx(
        wasserstein_between_groups(pred, s, n_projections=30, rng=0), rel=1e-10)
    per = tuple(ks_distance(pred[:, c], s) for c in range(2))
    assert rep.ks_by_coordinate == pytest.approx(per)
    assert rep.ks.estimate == pytest.approx(max(per))
    assert rep.w1 is None and rep.accuracy is None and rep.notes
    est, lo, hi = bootstrap_interval(
        lambda a, b: wasserstein_between_groups(a, b, n_projections=30), pred, s,
        n_resamples=100, rng=0)
    assert (rep.w2.low, rep.w2.high) == pytest.approx((lo, hi), rel=1e-10)
    # 1-D regression has W1 too
    rep1 = fairness_report(yt[:, 0], pred[:, 0], s, task="regression", n_resamples=50, rng=0)
    assert rep1.w1.estimate == pytest.approx(wasserstein_between_groups(pred[:, 0], s, p=1))


def test_report_classification_fields_and_json():
    y, _, s = _binary_data(3, n=300)
    rng = np.random.default_rng(3)
    scores = np.clip(0.3 * y + 0.2 * s + 0.5 * rng.random(300), 0, 1)[:, None]
    rep = fairness_report(y, scores, s, n_resamples=100, rng=1, threshold=0.6)
    pred = (scores[:, 0] > 0.6).astype(int)
    assert isinstance(rep, FairnessReport)
    assert rep.accuracy.estimate == pytest.approx(accuracy(y, pred))
    assert rep.disparate_impact == pytest.approx(disparate_impact(pred, s))
    assert rep.equality_of_odds == pytest.approx(equality_of_odds_indexes(y, pred, s),
                                                nan_ok=True)
    assert rep.demographic_parity_ratio == pytest.approx(
        demographic_parity_ratio(y, pred, sensitive_features=s))
    assert rep.selection_rates == pytest.approx(selection_rates(pred, s))
    for f in ("accuracy", "demographic_parity_difference", "equalized_odds_difference",
              "ks", "w1", "w2"):
        v = getattr(rep, f)
        assert v.low <= v.estimate <= v.high, f
    d = rep.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["accuracy"]["estimate"] == pytest.approx(rep.accuracy.estimate)
    assert set(d["group_sizes"]) == {"0", "1"}
    assert "FairnessReport(" in repr(rep) and len(repr(rep)) < 600
    with pytest.raises(AttributeError):
        rep.n = 3  # frozen


def test_report_three_groups_leaves_two_group_metrics_out():
    fm = pytest.importorskip("fairlearn.metrics")
    y, _, s = _binary_data(8, n=600, groups=("x", "y", "z"))
    scores = np.random.default_rng(8).random(600)
    rep = fairness_report(y, scores, s, n_resamples=60, rng=0)
    pred = (scores > 0.5).astype(int)
    assert rep.equalized_odds_difference.estimate == pytest.approx(
        fm.equalized_odds_difference(y, pred, sensitive_features=s))
    assert rep.ks is None and rep.w2 is None and rep.disparate_impact is None
    json.dumps(rep.to_dict(), allow_nan=False)


# --------------------------------------------------------------------------- bad input


def _raises_naming(exc_type, needle, fn, *args, **kwargs):
    with pytest.raises(exc_type) as exc:
        fn(*args, **kwargs)
    assert needle in str(exc.value)
    return exc.value


def test_bad_input_names_the_parameter():
    y, yp, s = _binary_data(0, n=50)
    _raises_naming(InvalidDataError, "y_pred", accuracy, y, yp[:-1])
    _raises_naming(InvalidDataError, "sensitive_features", demographic_parity_difference,
                   y, yp, sensitive_features=s[:-1])
    _raises_naming(InvalidDataError, "y_pred", demographic_parity_difference, y, yp + 1,
                   sensitive_features=s)
    _raises_naming(InvalidDataError, "y_true", equalized_odds_difference, y * 0.5, yp,
                   sensitive_features=s)
    _raises_naming(InvalidDataError, "y_pred", selection_rates, [], [])
    _raises_naming(InvalidDataError, "sensitive", ks_distance, np.ones(5), np.zeros(5))
    _raises_naming(InvalidDataError, "sensitive", ks_distance, np.ones(6), [0, 1, 2] * 2)
    _raises_naming(InvalidDataError, "sensitive", disparate_impact, yp, np.zeros(50))
    _raises_naming(InvalidDataError, "scores", ks_distance, np.ones((6, 2)), [0, 1] * 3)
    _raises_naming(InvalidDataError, "scores", ks_distance, [np.nan, 1.0], [0, 1])
    e = _raises_naming(InvalidParameterError, "level", bootstrap_interval, np.mean,
                       np.ones(5), level=1.0)
    assert e.name == "level"
    e = _raises_naming(InvalidParameterError, "n_resamples", bootstrap_interval, np.mean,
                       np.ones(5), n_resamples=0)
    assert e.name == "n_resamples"
    _raises_naming(InvalidDataError, "arrays[1]", bootstrap_interval, np.mean, np.ones(5),
                   np.ones(4))
    e = _raises_naming(InvalidParameterError, "task", fairness_report, y, yp, s, task="rank")
    assert e.name == "task"
    e = _raises_naming(InvalidParameterError, "level", fairness_report, y, yp, s, level=0)
    _raises_naming(InvalidParameterError, "agg", equalized_odds_difference, y, yp,
                   sensitive_features=s, agg="max")
    _raises_naming(InvalidParameterError, "p", wasserstein_between_groups, yp, s, p=3)
    _raises_naming(InvalidDataError, "scores", fairness_report, y, np.ones((50, 2)), s)
    _raises_naming(InvalidDataError, "y_true", fairness_report, np.ones((50, 3)),
                   np.ones((50, 2)), s, task="regression")


def test_bootstrap_leaves_out_resamples_missing_a_group():
    s = np.r_[np.zeros(40, int), [1]]  # one row in group 1: absent from ~37% of resamples
    x = np.arange(41.0)
    est, lo, hi = bootstrap_interval(ks_distance, x, s, n_resamples=200, rng=0)
    assert lo <= est <= hi
    rep = fairness_report((x > 20).astype(int), x / 41, s, n_resamples=200, rng=0)
    assert (rep.ks.low, rep.ks.high) == pytest.approx((lo, hi))
    with pytest.raises(InvalidDataError, match="more than half"):
        bootstrap_interval(lambda a: math.nan, x, n_resamples=20, rng=0)
