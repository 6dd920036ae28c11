"""The private repair to the Wasserstein barycenter (issue 26, part 2):
:func:`privot.learning.repair.private_repair` and :class:`RepairResult`.

Statistical assertions use fixed seeds; the accuracy checks use a large epsilon so that
their margins are many noise standard deviations wide (false-alarm rate far below 1e-6
for the seeds given; the seeds make them deterministic anyway).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from privot._result import CURATOR_PREFIX, CURATOR_REPORT, RELEASE_FILE, ReleaseResult
from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.learning.repair import (
    MAX_BINS,
    MIN_BINS,
    RepairParams,
    default_bins,
    group_histograms,
    monotone_cdf,
    private_repair,
    quantile_function,
)
from privot.learning.repair_result import (
    NOISE_FLAG,
    PUBLISHABLE_FILES,
    REPAIRED_FILE,
    RepairResult,
    cdf_noise_sd,
)
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.types import Neighbouring, PrivacyCost


def _data(n: int = 4000, seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    s = np.where(g == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return s, g


class Spy:
    def __init__(self):
        self.calls = []

    def spend(self, cost, *, mechanism, relation=Neighbouring.ADD_REMOVE, params=None):
        self.calls.append((cost, mechanism, relation))


def _ks(a, b):
    grid = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), grid, side="right") / a.size
    fb = np.searchsorted(np.sort(b), grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


# -- parameters ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [{"epsilon": 0.0}, {"epsilon": -1}, {"epsilon": 600},
                                 {"bounds": (1, 0)},
                                 {"bounds": (0, math.inf)}, {"bounds": 3},
                                 {"bins": 1}, {"theta": 1.5}, {"theta": -0.1},
                                 {"levels": 1}, {"weights": "median"}, {"nope": 1}])
def test_bad_parameters_are_refused_by_name(bad):
    with pytest.raises(InvalidParameterError) as err:
        RepairParams.from_options(bad)
    assert err.value.name == next(iter(bad))


def test_the_largest_epsilon_is_accepted_and_adds_no_noise():
    s, g = _data(500)
    r = private_repair(s, g, epsilon=512.0, bins=16, rng=0)
    exact = group_histograms(s, g, 2, (0.0, 1.0), 16)[0]
    assert np.array_equal(r.noisy_counts, exact)


def test_params_object_and_options_build_the_same_release():
    s, g = _data()
    a = private_repair(s, g, RepairParams(epsilon=2.0, bins=20), rng=5)
    b = private_repair(s, g, epsilon=2.0, bins=20, rng=5)
    c = private_repair(s, g, RepairParams(epsilon=9.0), epsilon=2.0, bins=20, rng=5)
    assert np.array_equal(a.noisy_counts, b.noisy_counts)
    assert np.array_equal(a.noisy_counts, c.noisy_counts)
    assert a.params == b.params == c.params


def test_default_bins_is_a_rule_of_public_sizes_and_epsilon():
    assert default_bins([1000, 5000], 1.0) == round((1000 / (2 * math.sqrt(2))) ** (2 / 3))
    assert default_bins([3, 3], 0.1) == MIN_BINS
    assert default_bins([10**9, 10**9], 10.0) == MAX_BINS
    assert default_bins([400, 400], 4.0) > default_bins([400, 400], 1.0)


# -- refusals before any charge ----------------------------------------------------------


@pytest.mark.parametrize("scores, groups, error", [
    ([0.1, np.nan, 0.3], [0, 1, 1], InvalidDataError),
    ([0.1, np.inf, 0.3], [0, 1, 1], InvalidDataError),
    ([0.1, 0.2, 0.3], [1, 1, 1], InvalidParameterError),
    ([0.1, 0.2, 0.3], [0, 1], InvalidParameterError),
    ([[0.1, 0.2]], [0], InvalidParameterError),
    ([], [], InvalidParameterError),
    ([0.1, 0.2], [0.0, np.nan], InvalidDataError),
    ([0.1, 0.2, 0.3], np.array(["a", 1, None], dtype=object), InvalidParameterError),
])
def test_bad_input_is_refused_before_anything_is_charged(scores, groups, error):
    spy = Spy()
    with pytest.raises(error):
        private_repair(scores, groups, accountant=spy, rng=0)
    assert spy.calls == []


def test_a_bad_accountant_or_rng_is_refused():
    s, g = _data(100)
    with pytest.raises(InvalidParameterError):
        private_repair(s, g, accountant=object(), rng=0)
    with pytest.raises(InvalidParameterError):
        private_repair(s, g, rng=-3)


def test_one_charge_of_epsilon_replace_one_in_group():
    s, g = _data(500)
    spy = Spy()
    r = private_repair(s, g, epsilon=0.7, accountant=spy, rng=1)
    assert len(spy.calls) == 1
    cost, mechanism, relation = spy.calls[0]
    assert cost.epsilon == pytest.approx(0.7) and cost.delta == 0.0
    assert mechanism == "discrete-laplace"
    assert relation == Neighbouring.REPLACE_ONE_IN_GROUP == r.relation
    acct = PrivacyAccountant(1.0)
    private_repair(s, g, epsilon=0.6, accountant=acct, rng=2)
    with pytest.raises(BudgetExceededError):
        private_repair(s, g, epsilon=0.6, accountant=acct, rng=3)


# -- the maths ---------------------------------------------------------------------------


def test_histograms_clip_and_count_per_group():
    s = np.array([-0.5, 0.0, 0.24, 0.26, 0.99, 1.0, 7.0, 0.5])
    codes = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    counts, clipped = group_histograms(s, codes, 2, (0.0, 1.0), 4)
    assert counts.tolist() == [[3, 0, 1, 0], [0, 1, 0, 3]]
    assert clipped.tolist() == [1, 1]


def test_monotone_cdf_and_its_quantile_function():
    rng = np.random.default_rng(0)
    noisy = np.array([5, -3, 40, 2, 60, -1, 0, 4])
    cdf = monotone_cdf(noisy, 100)
    assert cdf[0] == 0.0 and cdf[-1] == 1.0
    assert np.all(np.diff(cdf) >= 0) and np.all((cdf >= 0) & (cdf <= 1))
    edges = np.linspace(0, 1, noisy.size + 1)
    u = np.sort(rng.uniform(0, 1, 500))
    q = quantile_function(cdf, edges, u)
    assert np.all(np.diff(q) >= -1e-12)
    # F(Q(u)) = u for a continuous piecewise-linear F
    assert np.allclose(np.interp(q, edges, cdf), u, atol=1e-9)
    assert quantile_function(cdf, edges, np.array([0.0]))[0] == 0.0
    assert quantile_function(cdf, edges, np.array([1.0]))[0] <= 1.0


def test_the_barycenter_is_the_weighted_average_of_the_quantile_functions():
    s, g = _data()
    r = private_repair(s, g, epsilon=5.0, rng=4)
    assert np.allclose(r.weights, np.bincount(g) / g.size)
    assert np.allclose(r.barycenter, r.weights @ r.quantiles)
    eq = private_repair(s, g, epsilon=5.0, weights="equal", rng=4)
    assert np.allclose(eq.weights, [0.5, 0.5])


def test_full_repair_makes_the_groups_alike_and_theta_interpolates():
    s, g = _data(20000, seed=1)
    r = private_repair(s, g, epsilon=20.0, bins=64, rng=7)
    before = _ks(s[g == 0], s[g == 1])
    full = r.transform(s, g)
    after = _ks(full[g == 0], full[g == 1])
    assert before > 0.5 and after < 0.05, (before, after)
    # the repaired law is the barycenter: its median near the weighted median average
    bary_median = np.interp(0.5, r.levels, r.barycenter)
    assert np.median(full) == pytest.approx(bary_median, abs=0.02)
    assert np.allclose(r.transform(s, g, theta=0.0), np.clip(s, 0, 1))
    half = r.transform(s, g, theta=0.5)
    assert np.allclose(half, 0.5 * s + 0.5 * full)
    assert before > _ks(half[g == 0], half[g == 1]) > after
    # the map is monotone within a group (rank-preserving)
    for k in (0, 1):
        order = np.argsort(s[g == k])
        assert np.all(np.diff(full[g == k][order]) >= -1e-12)


def test_transform_on_new_data_and_refusals():
    s, g = _data()
    r = private_repair(s, g.astype(str), epsilon=2.0, rng=3)
    assert r.labels == ("0", "1")
    out = r.transform(np.array([-1.0, 0.2, 2.0]), np.array(["0", "1", "1"]))
    assert out.shape == (3,) and np.all((out >= 0) & (out <= 1))
    with pytest.raises(InvalidParameterError, match="released groups"):
        r.transform([0.1], ["2"])
    with pytest.raises(InvalidDataError):
        r.transform([np.nan], ["0"])
    with pytest.raises(InvalidParameterError):
        r.transform([0.1, 0.2], ["0"])
    with pytest.raises(InvalidParameterError):
        r.transform([0.1], ["0"], theta=2.0)


def test_seeded_releases_repeat_and_are_marked_not_secure():
    s, g = _data(800)
    a, b = private_repair(s, g, rng=11), private_repair(s, g, rng=11)
    assert np.array_equal(a.noisy_counts, b.noisy_counts) and not a.secure
    c = private_repair(s, g, rng=None)
    assert c.secure


def test_small_groups_at_small_epsilon_are_flagged():
    s, g = _data(60)
    r = private_repair(s, g, epsilon=0.1, rng=0)
    assert r.degenerate and r.flags and "noise-dominated" in r.flags[0]
    assert r.release_dict()["degenerate"] is True and "FLAGGED" in repr(r)
    big = private_repair(*_data(20000), epsilon=4.0, rng=0)
    assert not big.degenerate and big.flags == []
    assert max(big.cdf_sd) <= NOISE_FLAG


def test_cdf_noise_sd_is_the_discrete_laplace_sum():
    rng = np.random.default_rng(0)
    from privot.privacy.mechanisms import discrete_laplace_mechanism

    z = discrete_laplace_mechanism(np.zeros((4000, 10), dtype=np.int64), sensitivity=2,
                                   epsilon=1.0, rng=rng).value
    sd = z[:, :5].sum(axis=1).std() / 100.0
    assert sd == pytest.approx(cdf_noise_sd(10, 1.0, 100), rel=0.08)


# -- the result protocol -------------------------------------------------------------------


def test_result_protocol(tmp_path):
    from matplotlib.figure import Figure

    s, g = _data()
    s = s.copy()
    s[:7] = 1.5  # clipped: counted for the curator only
    r = private_repair(s, g, epsilon=1.0, rng=2)
    assert isinstance(r, ReleaseResult) and isinstance(r, RepairResult)
    assert isinstance(r.epsilon, float) and isinstance(r.cost, PrivacyCost)
    assert r.relation is Neighbouring.REPLACE_ONE_IN_GROUP
    public = r.to_dict()
    assert "curator_only" not in public
    text = json.dumps(public)
    for key in r.curator_report():
        assert f'"{key}"' not in text
    full = r.to_dict(curator=True)
    assert sum(full["curator_only"]["n_clipped"].values()) == 7
    assert isinstance(r.plot(), Figure)
    written = r.save(tmp_path / "out", rows={"score": s, "group": g,
                                             "repaired": r.transform(s, g)})
    assert set(written["publishable"]) == set(PUBLISHABLE_FILES)
    assert set(written["curator"]) == {CURATOR_REPORT, REPAIRED_FILE}
    assert all(n.startswith(CURATOR_PREFIX) for n in written["curator"])
    on_disk = {p.name for p in (tmp_path / "out").iterdir()}
    assert on_disk == set(written["publishable"]) | set(written["curator"])
    release = json.loads((tmp_path / "out" / RELEASE_FILE).read_text())
    assert release["publishable_files"] == sorted(written["publishable"])
    assert "n_clipped" not in json.dumps(release)
    assert [gr["size"] for gr in release["groups"]] == np.bincount(g).tolist()
    lines = (tmp_path / "out" / "quantiles.csv").read_text().splitlines()
    assert lines[0] == "level,Q[0],Q[1],barycenter" and len(lines) == 1 + r.levels.size
    assert r.save(tmp_path / "pub", curator=False, png=False)["curator"] == []


def test_plot_on_a_given_axes_and_progress_is_accepted():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s, g = _data(300)
    r = private_repair(s, g, rng=0, progress=True)
    fig, ax = plt.subplots()
    assert r.plot(ax=ax) is fig
    assert len(ax.get_lines()) == 3  # two groups and the barycenter
    plt.close(fig)
