"""Output perturbation is total, checks its precondition, and handles unusable rows.

* Total (issue 8 item 1): a plan that stops at its iteration budget is repaired into a
  coupling; the release is still made after the charge, and the ball argument holds.
* Precondition (item 6): usable points outside the ball of radius 1/2 are refused
  before anything is charged.
* Unusable rows (a non-finite coordinate): they count in the public sizes and in the
  split, are ignored by the plans, and a part without a usable row contributes 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.barycenters.perturbation import (
    BALL_TOLERANCE,
    anchored_step,
    check_perturbation_inputs,
    check_unit_groups,
    output_perturbation,
    perturbation_sensitivity,
    split_groups,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy import PrivacyAccountant

EPS, DELTA = 1.0, 1e-5


def _ball(rng: np.random.Generator, n: int, d: int = 2) -> np.ndarray:
    x = rng.normal(size=(n, d))
    r = 0.5 * rng.uniform(0, 1, size=(n, 1)) ** (1 / d)
    return x / np.linalg.norm(x, axis=1, keepdims=True) * r


def _charges(acc: PrivacyAccountant) -> list[tuple[float, float]]:
    return [(e.cost.epsilon, e.cost.delta) for e in acc.ledger]


# ----------------------------------------------------------------------------- item 1


def test_capped_solver_still_releases_after_the_charge(capped_emd):
    rng = np.random.default_rng(0)
    groups = [_ball(rng, 60) for _ in range(3)]
    anchor = _ball(rng, 5)
    acc = PrivacyAccountant(2.0, 1e-4)
    # before the fix: ConvergenceError raised here, after the accountant was charged
    rel = output_perturbation(groups, anchor, epsilon=EPS, delta=DELTA, splits=2,
                              iterations=2, rng=1, accountant=acc)
    assert np.all(np.isfinite(rel.support)) and rel.support.shape == (5, 2)
    assert _charges(acc) == [(EPS, DELTA)]  # one charge, the same as an uncapped run
    # every plan hit the cap (2 iterations cannot solve 30 x 5): curator-only count
    assert rel.curator_only["non_optimal_plans"] == [6, 6]


def test_uncapped_release_charges_the_same(capped_emd, monkeypatch):
    monkeypatch.undo()
    rng = np.random.default_rng(0)
    groups = [_ball(rng, 60) for _ in range(3)]
    acc = PrivacyAccountant(2.0, 1e-4)
    rel = output_perturbation(groups, _ball(rng, 5), epsilon=EPS, delta=DELTA, splits=2,
                              iterations=2, rng=1, accountant=acc)
    assert _charges(acc) == [(EPS, DELTA)]
    assert rel.curator_only["non_optimal_plans"] == [0, 0]


def test_public_plan_budget_parameter():
    rng = np.random.default_rng(1)
    groups = [_ball(rng, 40), _ball(rng, 50)]
    rel = output_perturbation(groups, _ball(rng, 4), epsilon=EPS, delta=DELTA, splits=2,
                              rng=3, plan_max_iter=1)
    assert rel.params["plan_max_iter"] == 1 and rel.params["group_sizes"] == [40, 50]
    assert rel.curator_only["non_optimal_plans"] == [4]
    assert np.all(np.isfinite(rel.support))


def test_capped_steps_stay_in_the_ball_and_keep_the_sensitivity(capped_emd):
    """Any coupling, optimal or not: atoms in B_0(1/2), ||F(D) - F(D')|| <= Delta_2."""
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(40):
        k, kp, m = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(2, 7))
        groups = [_ball(rng, int(rng.integers(kp * 4, kp * 12))) for _ in range(k)]
        anchor = _ball(rng, m)
        beta = np.full(k, 1.0 / k)
        seed = int(rng.integers(1 << 30))
        parts = split_groups(groups, kp, np.random.default_rng(seed))
        f0 = anchored_step(parts, anchor, group_weights=beta)
        assert np.all(np.linalg.norm(f0, axis=1) <= 0.5 + 1e-12)
        i = int(rng.integers(k))
        j = int(rng.integers(len(groups[i])))
        changed = [g.copy() for g in groups]
        v = rng.normal(size=2)
        changed[i][j] = 0.5 * v / np.linalg.norm(v)
        f1 = anchored_step(split_groups(changed, kp, np.random.default_rng(seed)), anchor,
                           group_weights=beta)
        assert np.all(np.linalg.norm(f1, axis=1) <= 0.5 + 1e-12)
        worst = max(worst, np.linalg.norm(f0 - f1) / perturbation_sensitivity(m, beta, kp))
    assert worst <= 1.0 + 1e-12


def test_plan_columns_are_convex_weights():
    """One part, m atoms: each atom of the step is a convex combination of the part."""
    rng = np.random.default_rng(3)
    g = _ball(rng, 7)
    anchor = _ball(rng, 3)
    for max_iter in (1, 2, None):
        out = anchored_step([[g]], anchor, group_weights=np.array([1.0]), max_iter=max_iter)
        # inside the convex hull: a point of the hull minimises no linear form below the
        # data's minimum, in every direction
        for u in rng.normal(size=(20, 2)):
            assert np.all(out @ u >= (g @ u).min() - 1e-12)
            assert np.all(out @ u <= (g @ u).max() + 1e-12)


# ----------------------------------------------------------------------------- item 6


def test_data_outside_the_ball_is_refused_before_charging():
    rng = np.random.default_rng(4)
    raw = rng.uniform(0, 100, size=(200, 2))  # caller units, never mapped to the ball
    acc = PrivacyAccountant(2.0, 1e-4)
    with pytest.raises(InvalidDataError, match=r"groups\[1\].*norm 1[0-9][0-9]\.[0-9]+.*"
                                               r"to_unit") as info:
        output_perturbation([_ball(rng, 50), raw], _ball(rng, 3), epsilon=EPS,
                            delta=DELTA, accountant=acc)
    assert "Nothing was charged" in str(info.value)
    assert acc.ledger == ()


def test_every_refusal_comes_before_the_charge():
    rng = np.random.default_rng(10)
    groups = [_ball(rng, 20)]
    acc = PrivacyAccountant(5.0, 1e-3)
    # classic calibration needs eps < 1 per step: refused before the charge (it used to
    # be refused by the Gaussian mechanism, after it)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        output_perturbation(groups, _ball(rng, 2), epsilon=2.0, delta=DELTA,
                            calibration="classic", accountant=acc)
    assert acc.ledger == ()
    # the same checks, alone, for a caller that charges its accountant itself
    with pytest.raises(InvalidParameterError, match="epsilon"):
        check_perturbation_inputs(groups, m=2, epsilon=2.0, delta=DELTA, calibration="classic")
    with pytest.raises(InvalidParameterError, match="splits"):
        check_perturbation_inputs(groups, m=2, epsilon=1.0, delta=DELTA, splits=21)
    with pytest.raises(InvalidDataError, match="to_unit"):
        check_perturbation_inputs([groups[0] * 3], m=2, epsilon=1.0, delta=DELTA)
    with pytest.raises(InvalidParameterError, match="plan_max_iter"):
        check_perturbation_inputs(groups, m=2, epsilon=1.0, delta=DELTA, plan_max_iter=0)
    nan_rows = groups[0].copy()
    nan_rows[:5] = np.nan
    assert check_perturbation_inputs([nan_rows], m=2, epsilon=1.0, delta=DELTA,
                                     splits=20) is None


def test_rounding_outside_the_ball_is_tolerated_and_projected():
    g = np.array([[0.5 + 0.5 * BALL_TOLERANCE, 0.0], [0.0, 0.3]])
    out, usable = check_unit_groups([g])
    assert np.linalg.norm(out[0][0]) <= 0.5 and usable[0].all()
    assert g[0, 0] > 0.5  # the caller's array is not modified
    with pytest.raises(InvalidDataError, match="norm 0.5001"):
        check_unit_groups([np.array([[0.5001, 0.0]])])


# ----------------------------------------------------------------------------- unusable rows


def test_the_split_is_by_index_unusable_rows_included():
    rng = np.random.default_rng(5)
    g = _ball(rng, 23)
    bad = g.copy()
    bad[[1, 4, 9], 0] = np.nan
    p_good = split_groups([g], 4, np.random.default_rng(8))[0]
    p_bad = split_groups([bad], 4, np.random.default_rng(8))[0]
    assert [len(p) for p in p_good] == [len(p) for p in p_bad]  # public sizes
    for a, b in zip(p_good, p_bad, strict=True):
        ok = np.all(np.isfinite(b), axis=1)
        np.testing.assert_array_equal(a[ok], b[ok])  # same rows, same parts


def test_a_part_without_usable_rows_contributes_the_centre():
    rng = np.random.default_rng(6)
    part = _ball(rng, 9)
    nan_part = np.full((4, 2), np.nan)
    inf_part = np.array([[np.inf, 0.0], [0.1, -np.inf]])
    anchor = _ball(rng, 3)
    alone = anchored_step([[part]], anchor, group_weights=np.array([1.0]))
    for empty in (nan_part, inf_part):
        both = anchored_step([[part, empty]], anchor, group_weights=np.array([1.0]))
        np.testing.assert_allclose(both, 0.5 * alone, atol=1e-15)
    # an unusable row inside a part is ignored (its plan uses the usable rows only)
    mixed = np.vstack([part, [[np.nan, 7.0]]])
    np.testing.assert_allclose(
        anchored_step([[mixed]], anchor, group_weights=np.array([1.0])), alone, atol=1e-15)


def test_an_all_unusable_group_contributes_zero():
    rng = np.random.default_rng(7)
    good = _ball(rng, 30)
    empty = np.full((10, 2), np.nan)
    anchor = _ball(rng, 4)
    beta = np.array([0.25, 0.75])
    parts = split_groups([empty, good], 2, np.random.default_rng(0))
    only = anchored_step([parts[1]], anchor, group_weights=np.array([1.0]))
    out = anchored_step(parts, anchor, group_weights=beta)
    np.testing.assert_allclose(out, 0.75 * only, atol=1e-15)
    rel = output_perturbation([empty, good], anchor, epsilon=EPS, delta=DELTA, splits=2,
                              group_weights=beta, rng=0)
    assert np.all(np.isfinite(rel.support))
    assert rel.params["group_sizes"] == [10, 30]
    assert rel.curator_only["unusable_rows"] == [10, 0]
    assert rel.curator_only["empty_parts"] == [2, 0]
    # a single all-unusable group: the exact step is 0, the release is noise around it
    lone = output_perturbation([empty], anchor, epsilon=EPS, delta=DELTA, splits=3, rng=0)
    assert np.all(np.isfinite(lone.support)) and lone.curator_only["empty_parts"] == [3]


def test_unusable_rows_release_is_finite_and_sizes_stay_public():
    rng = np.random.default_rng(8)
    groups = [_ball(rng, 40), _ball(rng, 25)]
    groups[0][::5] = np.nan  # 8 missing rows
    groups[1][3, 1] = np.inf
    groups[1][4] = [1e6, np.nan]  # unusable: never checked against the ball
    acc = PrivacyAccountant(2.0, 1e-4)
    rel = output_perturbation(groups, _ball(rng, 3), epsilon=EPS, delta=DELTA, splits=5,
                              rng=2, accountant=acc)
    assert np.all(np.isfinite(rel.support))
    assert rel.params["group_sizes"] == [40, 25]
    assert rel.curator_only["unusable_rows"] == [8, 2]
    assert rel.sensitivity == pytest.approx(perturbation_sensitivity(3, [0.5, 0.5], 5))
    assert _charges(acc) == [(EPS, DELTA)]


def test_replacing_a_row_by_an_unusable_one_keeps_the_sensitivity():
    rng = np.random.default_rng(9)
    worst = 0.0
    for _ in range(60):
        k, m = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        n = int(rng.integers(2, 8))
        kp = int(rng.integers(1, n + 1))  # parts of one or two rows: they can empty out
        groups = [_ball(rng, n) for _ in range(k)]
        for g in groups:
            g[rng.random(n) < 0.3] = np.nan
        anchor = _ball(rng, m)
        beta = np.full(k, 1.0 / k)
        seed = int(rng.integers(1 << 30))
        i, j = int(rng.integers(k)), int(rng.integers(n))
        changed = [g.copy() for g in groups]
        changed[i][j] = np.nan if np.isfinite(groups[i][j]).all() else 0.5 * np.array([1.0, 0])
        f0 = anchored_step(split_groups(groups, kp, np.random.default_rng(seed)), anchor,
                           group_weights=beta)
        f1 = anchored_step(split_groups(changed, kp, np.random.default_rng(seed)), anchor,
                           group_weights=beta)
        worst = max(worst, np.linalg.norm(f0 - f1) / perturbation_sensitivity(m, beta, kp))
    assert worst <= 1.0 + 1e-12
    assert worst > 0.2
