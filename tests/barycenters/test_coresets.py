"""The Private Measure Mechanism: partition, schedule, consistency, placement, inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.barycenters.coresets import (
    MAX_DEPTH,
    PrivateCoreset,
    consistent_counts,
    coreset_from_leaf_counts,
    default_depth,
    leaf_cells,
    leaf_index,
    level_diameters,
    noise_schedule,
    noisy_level_counts,
    place_points,
    private_coreset,
    scaled_shrink_factor,
)
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.regions import PredicateRegion
from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.privacy import Neighbouring, PrivacyAccountant

UNIT1 = (np.array([0.0]), np.array([1.0]))
UNIT2 = (np.zeros(2), np.ones(2))
UNIT3 = (np.zeros(3), np.ones(3))


# -- partition ---------------------------------------------------------------------------


def test_leaf_ids_d1_are_dyadic_intervals():
    x = np.array([[0.0], [0.24], [0.25], [0.6], [0.99], [1.0]])
    np.testing.assert_array_equal(leaf_index(x, cell_box=UNIT1, depth=2), [0, 0, 1, 2, 3, 3])


def test_leaf_ids_d2_alternate_coordinates():
    # level 1 halves x, level 2 halves y, level 3 halves x again
    x = np.array([[0.1, 0.1], [0.1, 0.9], [0.9, 0.1], [0.9, 0.9], [0.3, 0.1], [0.6, 0.7]])
    # (bx1, by, bx2): 0.1 -> x index 0 (00), 0.3 -> 1 (01), 0.6 -> 2 (10), 0.9 -> 3 (11)
    expect = [0b000, 0b010, 0b101, 0b111, 0b001, 0b110]
    np.testing.assert_array_equal(leaf_index(x, cell_box=UNIT2, depth=3), expect)
    np.testing.assert_array_equal(leaf_index(x, cell_box=UNIT2, depth=1), [0, 0, 1, 1, 0, 1])


def test_leaf_ids_d3_depth4():
    x = np.array([[0.9, 0.1, 0.9], [0.3, 0.6, 0.1], [0.7, 0.2, 0.6]])
    # levels: x, y, z, x. x idx over 2 splits: .9->3, .3->1, .7->2; y, z one split
    expect = [(1 << 3) | (0 << 2) | (1 << 1) | 1,
              (0 << 3) | (1 << 2) | (0 << 1) | 1,
              (1 << 3) | (0 << 2) | (1 << 1) | 0]
    np.testing.assert_array_equal(leaf_index(x, cell_box=UNIT3, depth=4), expect)


@pytest.mark.parametrize("d,depth", [(1, 5), (2, 7), (3, 4), (5, 12), (784, 20)])
def test_points_lie_in_their_leaf_cells_and_ancestors_nest(d, depth):
    rng = np.random.default_rng(d)
    box = (np.full(d, -0.3), np.full(d, 0.2))
    x = rng.uniform(-0.3, 0.2, size=(200, d))
    ids = leaf_index(x, cell_box=box, depth=depth)
    lo, hi = leaf_cells(ids, cell_box=box, depth=depth)
    assert np.all((lo <= x) & (x <= hi))
    shallower = leaf_index(x, cell_box=box, depth=depth - 1) if depth > 1 else None
    if shallower is not None:  # the level-(D-1) ancestor is id >> 1
        np.testing.assert_array_equal(shallower, ids >> 1)


def test_level_diameters_halve_in_turn():
    diam = level_diameters(UNIT2, 4)
    np.testing.assert_allclose(diam, [math.sqrt(2), math.sqrt(1.25), math.sqrt(0.5),
                                      math.sqrt(0.3125), math.sqrt(0.125)])


def test_default_depth():
    assert default_depth(1.0, 1000) == 10
    assert default_depth(0.1, 5) == 1
    assert default_depth(10.0, 10**9) == MAX_DEPTH


# -- schedule ----------------------------------------------------------------------------


def test_optimal_schedule_closed_form_unit_square():
    eps, depth = 2.0, 6
    got = noise_schedule(eps, depth=depth, cell_box=UNIT2)
    assert math.fsum(got.tolist()) <= eps
    assert math.fsum(got.tolist()) == pytest.approx(eps, rel=1e-14)
    diam = level_diameters(UNIT2, depth)
    sq = np.sqrt([2.0 ** j * diam[j - 1] for j in range(1, depth + 1)])
    np.testing.assert_allclose(got, eps * sq / sq.sum(), rtol=1e-13)
    # every second level (a full cycle of d = 2 splits) the weight grows by
    # sqrt(4 * 2^-1) = sqrt(2): eps_j proportional to 2^{j (1 - 1/d) / 2}
    np.testing.assert_allclose(got[2:] / got[:-2], math.sqrt(2.0), rtol=1e-12)


def test_optimal_schedule_is_uniform_in_1d_and_uniform_option():
    np.testing.assert_allclose(noise_schedule(1.0, depth=5, cell_box=UNIT1), 0.2)
    np.testing.assert_allclose(noise_schedule(1.0, depth=4, kind="uniform"), 0.25)


def test_explicit_schedule_is_used_and_checked():
    x = np.random.default_rng(0).uniform(size=(100, 2))
    b = PublicBounds.box([0, 0], [1, 1])
    sched = np.array([0.1, 0.2, 0.7])
    cs = private_coreset(x, bounds=b, epsilon=1.0, depth=3, schedule=sched, rng=1)
    np.testing.assert_array_equal(cs.level_epsilons, sched)
    assert cs.params["schedule"] == "explicit"
    assert cs.params["scales"] == pytest.approx([20.0, 10.0, 2 / 0.7])
    for bad in ([0.5, 0.5], [0.1, 0.2, 0.6], [0.5, 0.6, -0.1], "fancy"):
        with pytest.raises(InvalidParameterError) as info:
            private_coreset(x, bounds=b, epsilon=1.0, depth=3, schedule=bad)
        assert info.value.name == "schedule"


# -- noise and consistency ---------------------------------------------------------------


def test_every_cell_is_noised_including_empty_ones():
    levels, rels = noisy_level_counts(np.array([0]), np.array([5]), depth=4,
                                      level_epsilons=np.full(4, 0.25),
                                      rng=np.random.default_rng(0))
    assert [lv.size for lv in levels] == [2, 4, 8, 16]
    assert np.count_nonzero(levels[-1][1:]) > 5  # empty leaves got noise too
    assert all(r.relation is Neighbouring.REPLACE_ONE_IN_GROUP and r.sensitivity == 2 for r in rels)
    assert [r.params["scale"] for r in rels] == pytest.approx([8.0] * 4)


def test_consistency_children_sum_to_parent_and_are_non_negative():
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 1000):
        levels = [rng.integers(-20, 40, size=2 ** j) for j in range(1, 8)]
        leaves = consistent_counts(levels, n)
        assert leaves.sum() == n and np.all(leaves >= 0)
        # every level of the implied tree sums children to parents
        lv = leaves
        while lv.size > 1:
            lv = lv.reshape(-1, 2).sum(axis=1)
        assert lv[0] == n


def test_consistency_rule_hand_checked():
    # root 10; noisy (3, -2) -> clamp (3, 0) -> all 10 left; then (1, 1) -> 5/5,
    # (0, 0) below the empty right parent -> 0/0
    leaves = consistent_counts([np.array([3, -2]), np.array([1, 1, 0, 0])], 10)
    np.testing.assert_array_equal(leaves, [5, 5, 0, 0])
    # both children clamped to 0: even split, left takes the odd unit
    np.testing.assert_array_equal(consistent_counts([np.array([-1, -4])], 7), [4, 3])
    # proportional with rounding: 10 * 1 / 3 = 3.33 -> 3, rest 7
    np.testing.assert_array_equal(consistent_counts([np.array([1, 2])], 10), [3, 7])


def test_consistency_exact_for_huge_counts():
    n = 2**40
    leaves = consistent_counts([np.array([2**40, 2**39])], n)
    assert leaves.sum() == n and leaves[0] == round(n * 2 / 3)


# -- placement ---------------------------------------------------------------------------


@pytest.mark.parametrize("placement", ["uniform", "scaled", "centre"])
def test_placement_lands_in_the_right_leaf(placement):
    b = PublicBounds.box([0, 0, 0], [1, 2, 3])
    counts = np.zeros(2**6, dtype=np.int64)
    counts[[0, 5, 17, 63]] = [3, 10, 1, 6]
    pts, dropped = place_points(counts, bounds=b, depth=6, placement=placement,
                                rng=np.random.default_rng(0))
    assert dropped == 0 and pts.shape == (20, 3)
    ids = leaf_index(pts, cell_box=b.cell_box(), depth=6)
    np.testing.assert_array_equal(np.bincount(ids, minlength=64), counts)
    if placement == "centre":
        lo, hi = leaf_cells(ids, cell_box=b.cell_box(), depth=6)
        np.testing.assert_allclose(pts, (lo + hi) / 2)


@pytest.mark.parametrize("d", [1, 2, 5])
def test_scaled_placement_stays_in_the_shrunk_cell(d):
    b = PublicBounds.box(np.zeros(d), np.ones(d))
    s = scaled_shrink_factor(d)
    assert s == pytest.approx((240 * d) ** (1 / d))
    counts = np.full(2**4, 50, dtype=np.int64)
    pts, _ = place_points(counts, bounds=b, depth=4, placement="scaled",
                          rng=np.random.default_rng(1))
    ids = leaf_index(pts, cell_box=b.cell_box(), depth=4)
    lo, hi = leaf_cells(ids, cell_box=b.cell_box(), depth=4)
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    assert np.all(np.abs(pts - centre) <= half / s * (1 + 1e-9))
    # and it fills the shrunk cell (not just its centre)
    assert np.max(np.abs(pts - centre) / (half / s)) > 0.9


def test_ball_bounds_points_stay_in_the_ball():
    b = PublicBounds.ball([0.0, 0.0], 1.0)
    x = np.random.default_rng(0).normal(size=(3000, 2))
    cs = private_coreset(x, bounds=b, epsilon=2.0, placement="uniform", rng=2)
    assert np.all(np.linalg.norm(cs.points, axis=1) <= 0.5 + 1e-12)
    assert cs.n_clipped > 0
    assert np.all(np.linalg.norm(cs.caller_points(), axis=1) <= 1.0 + 1e-9)


def test_region_filter_rejection_and_drops():
    b = PublicBounds.box([0, 0], [1, 1])
    right_half = PredicateRegion(lambda p: p[:, 0] > 0.5)
    x = np.random.default_rng(0).uniform(size=(2000, 2))
    cs = private_coreset(x, bounds=b, epsilon=1.0, region=right_half, rng=5)
    assert np.all(cs.caller_points()[:, 0] > 0.5)
    # the left-half leaves cannot place anything: about half of the points dropped
    assert cs.n_outside_region + cs.points.shape[0] == 2000
    assert 800 < cs.n_outside_region < 1200
    # a region straddling leaves: rejection places points in the part inside
    disc = PredicateRegion(lambda p: np.hypot(p[:, 0] - 0.5, p[:, 1] - 0.5) < 0.3)
    cs = private_coreset(x, bounds=b, epsilon=1.0, depth=2, placement="centre",
                         region=disc, rng=6)
    assert np.all(np.hypot(*(cs.caller_points() - 0.5).T) < 0.3)
    assert cs.n_outside_region == 0  # each of the 4 quadrants meets the disc


def test_subsampling_size():
    b = PublicBounds.box([0, 0], [1, 1])
    x = np.random.default_rng(0).uniform(size=(500, 2))
    cs = private_coreset(x, bounds=b, epsilon=1.0, size=100, rng=1)
    assert cs.points.shape == (100, 2) and cs.leaf_counts.sum() == 500
    cs = private_coreset(x, bounds=b, epsilon=1.0, size=10_000, rng=1)
    assert cs.points.shape == (500, 2)
    half = PredicateRegion(lambda p: p[:, 1] < 0.5)
    cs = private_coreset(x, bounds=b, epsilon=1.0, size=100, region=half, rng=1)
    assert cs.points.shape == (100, 2) and np.all(cs.caller_points()[:, 1] < 0.5)


# -- the release -------------------------------------------------------------------------


def test_release_fields_and_reproducibility():
    b = PublicBounds.box([-1, -1], [1, 1])
    x = np.random.default_rng(0).uniform(-2, 2, size=(1000, 2))
    a = private_coreset(x, bounds=b, epsilon=0.5, rng=7)
    c = private_coreset(x, bounds=b, epsilon=0.5, rng=np.random.default_rng(7))
    assert isinstance(a, PrivateCoreset)
    np.testing.assert_array_equal(a.points, c.points)
    assert not a.secure and a.relation is Neighbouring.REPLACE_ONE_IN_GROUP
    assert a.cost.epsilon == pytest.approx(0.5) and a.cost.epsilon <= 0.5
    assert a.depth == default_depth(0.5, 1000) and a.n == 1000
    assert a.n_clipped == int(np.count_nonzero(np.any(np.abs(x) > 1, axis=1)))
    assert a.leaf_counts.sum() == 1000 and a.points.shape == (1000, 2)
    assert a.dense_leaf_counts().sum() == 1000
    s = private_coreset(x, bounds=b, epsilon=0.5)
    assert s.secure


def test_from_leaf_counts_equals_in_memory_path():
    b = PublicBounds.box([0, 0, 0], [1, 1, 1])
    x = np.random.default_rng(0).uniform(size=(300, 3))
    ids = leaf_index(b.to_unit(x)[0], cell_box=b.cell_box(), depth=6)
    leaf, cnt = np.unique(ids, return_counts=True)
    a = coreset_from_leaf_counts(leaf, cnt, 300, bounds=b, epsilon=1.0, depth=6, rng=3)
    c = private_coreset(x, bounds=b, epsilon=1.0, depth=6, rng=3)
    np.testing.assert_array_equal(a.points, c.points)
    # n above the counted points: unusable rows, kept in the public size
    coreset_from_leaf_counts(leaf, cnt, 301, bounds=b, epsilon=1.0, depth=6, rng=3)
    with pytest.raises(InvalidDataError, match="sum to 300"):
        coreset_from_leaf_counts(leaf, cnt, 299, bounds=b, epsilon=1.0, depth=6)
    with pytest.raises(InvalidDataError, match="2\\*\\*depth"):
        coreset_from_leaf_counts(leaf + 64, cnt, bounds=b, epsilon=1.0, depth=6)


def test_accountant_charged_per_level_and_refusal_before_noise():
    b = PublicBounds.box([0, 0], [1, 1])
    x = np.random.default_rng(0).uniform(size=(100, 2))
    acc = PrivacyAccountant(1.0)
    private_coreset(x, bounds=b, epsilon=0.6, depth=3, accountant=acc, rng=1)
    assert acc.spent.epsilon == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        private_coreset(x, bounds=b, epsilon=0.6, depth=3, accountant=acc, rng=1)
    assert acc.spent.epsilon == pytest.approx(0.6)


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"epsilon": 0.0}, InvalidParameterError, "epsilon"),
    ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
    ({"depth": 0}, InvalidParameterError, "depth"),
    ({"depth": MAX_DEPTH + 1}, InvalidParameterError, "depth"),
    ({"placement": "corner"}, InvalidParameterError, "placement"),
    ({"schedule": "fancy"}, InvalidParameterError, "schedule"),
    ({"size": 0}, InvalidParameterError, "size"),
    ({"rng": "seed"}, InvalidParameterError, "rng"),
    ({"bounds": (0, 1)}, InvalidParameterError, "bounds"),
])
def test_bad_parameters_name_themselves(kwargs, exc, name):
    b = PublicBounds.box([0, 0], [1, 1])
    x = np.random.default_rng(0).uniform(size=(50, 2))
    args = {"bounds": b, "epsilon": 1.0, **kwargs}
    with pytest.raises(exc) as info:
        private_coreset(x, **args)
    assert info.value.name == name


@pytest.mark.parametrize("points,match", [
    (np.zeros((0, 2)), "empty"),
    (np.array([[0.0, np.nan]]), "none of the 1 rows has finite"),
    (np.zeros((5, 3)), "dim=2"),
])
def test_bad_data(points, match):
    with pytest.raises(InvalidDataError, match=match):
        private_coreset(points, bounds=PublicBounds.box([0, 0], [1, 1]), epsilon=1.0)


# -- the rate ----------------------------------------------------------------------------


def test_w1_error_decays_like_eps_n_to_the_minus_one_over_d():
    """W1(coreset, data) ~ (eps n)^(-1/d): d = 2, eps = 1, n = 500 .. 32000.

    The data are n draws from a fixed two-bump distribution on a 40 x 40 lattice, so
    the exact W1 (network simplex, ``privot.ot.wasserstein_distance``) runs between at
    most 1,600 weighted data points and the coreset's leaf centres (``placement=
    "centre"``). Averaged over 3 releases per n, the fitted log-log slope is about
    -0.45 (the asymptotic rate is -1/2; the leaf-resolution and the noise terms have
    that rate, lower-order terms flatten it slightly at small n). Asserted band:
    [-0.65, -0.35], clearly steeper than -1/4 (the rate of the d = 4 analysis, or of a
    mechanism whose noise did not shrink with n).
    """
    from privot.ot import wasserstein_distance

    g = (np.arange(40) + 0.5) / 40
    lattice = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    w = (np.exp(-((lattice - [0.3, 0.35]) ** 2).sum(1) / 0.02)
         + 0.6 * np.exp(-((lattice - [0.7, 0.6]) ** 2).sum(1) / 0.01) + 0.05)
    w /= w.sum()
    b = PublicBounds.box([0, 0], [1, 1])
    ns = [500, 2000, 8000, 32000]
    errors = []
    for n in ns:
        rng = np.random.default_rng(100 + n)
        idx = rng.choice(lattice.shape[0], size=n, p=w)
        cnt = np.bincount(idx, minlength=lattice.shape[0])
        keep = cnt > 0
        vals = []
        for _ in range(3):
            cs = private_coreset(lattice[idx], bounds=b, epsilon=1.0, placement="centre",
                                 rng=rng)
            sup, inv = np.unique(cs.caller_points(), axis=0, return_inverse=True)
            wb = np.bincount(inv.reshape(-1), minlength=sup.shape[0]).astype(float)
            vals.append(wasserstein_distance(lattice[keep], sup, a=cnt[keep] / n,
                                             b=wb / wb.sum(), p=1))
        errors.append(float(np.mean(vals)))
    slope = float(np.polyfit(np.log(ns), np.log(errors), 1)[0])
    print(f"W1 errors {errors}, slope {slope:.3f}")
    assert -0.65 <= slope <= -0.35, (errors, slope)
    assert errors[-1] < errors[0] / 4
