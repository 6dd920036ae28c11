"""Tests of the per-user aggregation (aggregate.py) and Algorithm 1 (measure.py).

The statistical audit of Algorithm 1 is in ``test_heatmap_audit.py``.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.heatmaps import (
    CellSums,
    Grid,
    Measurements,
    level_budgets,
    measure,
    pyramid,
    start_level,
    user_distributions_sum,
)
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.types import Neighbouring, PrivacyCost

# -- aggregation ---------------------------------------------------------------------------


def _brute_sums(users, x, y, grid):
    """Per-user loop: each user's points inside the bounds weigh 1/n_u."""
    d = grid.resolution
    x0, x1, y0, y1 = grid.bounds
    per_user = defaultdict(list)
    for u, a, b in zip(users, x, y, strict=True):
        if x0 <= a < x1 and y0 <= b < y1:
            col = min(int((a - x0) // grid.cell_width), d - 1)
            row = min(int((b - y0) // grid.cell_height), d - 1)
            per_user[u].append((row, col))
        else:
            per_user.setdefault(u, per_user[u])
    out = np.zeros((d, d))
    for cells in per_user.values():
        for r, c in cells:
            out[r, c] += 1.0 / len(cells)
    return out


def test_user_distributions_sum_matches_per_user_loop():
    rng = np.random.default_rng(0)
    n = 500
    users = rng.integers(0, 40, n)
    x = rng.uniform(-0.2, 1.2, n)
    y = rng.uniform(-0.2, 1.2, n)
    grid = Grid((0.0, 1.0, 0.0, 1.0), 8)
    cs = user_distributions_sum(users, x, y, grid)
    np.testing.assert_allclose(cs.sums, _brute_sums(users, x, y, grid), atol=1e-12)
    inside = (x >= 0) & (x < 1) & (y >= 0) & (y < 1)
    assert cs.n_points == n and cs.n_outside == int((~inside).sum())
    n_in = len(set(users[inside].tolist()))
    assert cs.n_users == n_in and cs.n_users_empty == len(set(users.tolist())) - n_in
    assert cs.sums.sum() == pytest.approx(cs.n_users, rel=1e-12)  # each user weighs 1


def test_each_user_weighs_one_whatever_their_number_of_points():
    grid = Grid((0.0, 4.0, 0.0, 4.0), 4)
    users = np.array(["ann"] * 4 + ["bob"] + ["cy"] * 2)
    x = np.array([0.5, 0.5, 0.5, 3.5, 1.5, 9.0, 2.5])  # cy's first point is outside
    y = np.array([0.5, 0.5, 0.5, 3.5, 1.5, 9.0, 2.5])
    cs = user_distributions_sum(users, x, y, grid)
    assert cs.sums[0, 0] == pytest.approx(0.75) and cs.sums[3, 3] == pytest.approx(0.25)
    assert cs.sums[1, 1] == pytest.approx(1.0) and cs.sums[2, 2] == pytest.approx(1.0)
    assert (cs.n_users, cs.n_points, cs.n_outside, cs.n_users_empty) == (3, 7, 1, 0)


def test_users_with_no_point_inside_contribute_nothing():
    grid = Grid((0.0, 1.0, 0.0, 1.0), 2)
    cs = user_distributions_sum(np.array([1, 2, 2]), np.array([0.2, 5.0, 6.0]),
                                np.array([0.2, 5.0, 6.0]), grid)
    assert cs.n_users == 1 and cs.n_users_empty == 1 and cs.sums.sum() == 1.0


@pytest.mark.parametrize("users,x,y,match", [
    (np.array([1, 2, 3]), [0.1, 0.2], [0.1, 0.2], "user_ids has 3 values"),
    (np.array([1, 2]), [0.1, 0.2], [0.1, 0.2, 0.3], "y has 3 values"),
    (np.array([[1, 2]]), [0.1, 0.2], [0.1, 0.2], "1-D"),
])
def test_user_distributions_sum_refuses_bad_data(users, x, y, match):
    with pytest.raises(InvalidDataError, match=match):
        user_distributions_sum(users, np.array(x), np.array(y), Grid((0, 1, 0, 1), 2))


@pytest.mark.parametrize("users,x,y", [
    (np.array([1.0, np.nan, 3.0]), [0.1, 0.2, 0.3], [0.1, 0.2, 0.3]),
    (np.array(["a", None, "c"], dtype=object), [0.1, 0.2, 0.3], [0.1, 0.2, 0.3]),
    (np.array([1, 2, 3]), [0.1, np.nan, 0.3], [0.1, 0.2, 0.3]),
    (np.array([1, 2, 3]), [0.1, 0.2, 0.3], [0.1, np.inf, 0.3]),
    (np.array([1, 2, 3]), np.array([0.1, "x", 0.3], dtype=object), [0.1, 0.2, 0.3]),
])
def test_unusable_rows_are_dropped_and_counted(users, x, y):
    """The one rule (privot._usable): a missing user id or a missing, non-numeric or
    non-finite coordinate drops the row, counted with the points outside."""
    cs = user_distributions_sum(users, np.array(x), np.array(y), Grid((0, 1, 0, 1), 2))
    assert cs.n_points == 3 and cs.n_outside == 1 and cs.n_users == 2
    assert cs.sums.sum() == pytest.approx(2.0)


def test_user_distributions_sum_needs_a_grid():
    with pytest.raises(InvalidParameterError) as info:
        user_distributions_sum(np.array([1]), np.array([0.1]), np.array([0.1]), (0, 1, 0, 1))
    assert info.value.name == "grid"


def test_cellsums_validation():
    with pytest.raises(InvalidDataError, match="power of two"):
        CellSums(np.zeros((3, 3)), 0, 0, 0, 0)
    with pytest.raises(InvalidDataError, match="negative"):
        CellSums(-np.ones((2, 2)), 0, 0, 0, 0)
    with pytest.raises(InvalidParameterError):
        CellSums(np.zeros((2, 2)), -1, 0, 0, 0)
    with pytest.raises(InvalidParameterError):
        CellSums(np.zeros((2, 2)), 0, 1, 2, 0)
    assert CellSums(np.zeros((4, 4)), 0, 0, 0, 0).resolution == 4


# -- schedule ------------------------------------------------------------------------------


@pytest.mark.parametrize("w,ell,q", [(1, 8, 0), (3, 8, 0), (4, 8, 1), (15, 8, 1), (16, 8, 2),
                                     (20, 8, 2), (63, 8, 2), (64, 8, 3), (20, 1, 1),
                                     (20, 0, 0), (10**6, 8, 8)])
def test_start_level_is_floor_log2_sqrt_w_clamped(w, ell, q):
    assert start_level(w, ell) == q
    if ell >= q and w < 10**6:
        assert q == min(math.floor(math.log2(math.sqrt(w)) + 1e-12), ell)


def test_level_budgets_follow_the_paper_schedule():
    eps = level_budgets(1.0, levels=8, q=2, gamma=1 / math.sqrt(2))
    assert eps.shape == (7,)
    ratios = eps[1:] / eps[:-1]
    np.testing.assert_allclose(ratios, 1 / math.sqrt(2), rtol=1e-12)  # gamma^|i-q|
    assert math.fsum(eps.tolist()) == pytest.approx(1.0, rel=1e-15)
    assert math.fsum(eps.tolist()) <= 1.0
    assert level_budgets(0.7, levels=3, q=3).tolist() == [0.7]  # one measured level


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-6, 1e3), st.integers(0, 15), st.integers(0, 15), st.floats(0.05, 3.0))
def test_level_budgets_never_exceed_epsilon(eps, ell, q, gamma):
    q = min(q, ell)
    out = level_budgets(eps, levels=ell, q=q, gamma=gamma)
    total = math.fsum(out.tolist())
    assert total <= eps and total == pytest.approx(eps, rel=1e-14)
    assert np.all(out > 0)


@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon": 0.0, "levels": 3, "q": 1}, "epsilon"),
    ({"epsilon": 1.0, "levels": 3, "q": 4}, "q"),
    ({"epsilon": 1.0, "levels": -1, "q": 0}, "levels"),
    ({"epsilon": 1.0, "levels": 3, "q": 1, "gamma": 0.0}, "gamma"),
])
def test_level_budgets_refuse_bad_parameters(kwargs, name):
    epsilon = kwargs.pop("epsilon")
    with pytest.raises(InvalidParameterError) as info:
        level_budgets(epsilon, **kwargs)
    assert info.value.name == name


# -- measure -------------------------------------------------------------------------------


def _sums(d=16, seed=0):
    s = np.zeros((d, d))
    rng = np.random.default_rng(seed)
    s.ravel()[rng.choice(d * d, 10, replace=False)] = rng.random(10) * 3
    return s


def test_measure_levels_are_scaled_noisy_block_sums():
    s = _sums()
    m = measure(s, epsilon=2.0, w=20, rng=np.random.default_rng(1))
    assert isinstance(m, Measurements)
    assert (m.start_level, m.levels, m.w) == (2, 4, 20)
    assert [v.shape for v in m.values] == [(4, 4), (8, 8), (16, 16)]
    np.testing.assert_allclose(m.epsilons, level_budgets(2.0, levels=4, q=2), rtol=0)
    assert m.epsilon == math.fsum(m.epsilons) and m.epsilon <= 2.0
    for j, (v, rel) in enumerate(zip(m.values, m.releases, strict=True)):
        i = 2 + j
        np.testing.assert_array_equal(v, np.ldexp(rel.value, -i))  # y'_i = 2^-i (P_i s + nu)
        assert rel.sensitivity == 1.0 and rel.relation is Neighbouring.ADD_REMOVE
        assert rel.cost.epsilon == m.epsilons[j]
        scale = rel.params["scale"]
        assert scale >= 1.0 / m.epsilons[j]  # calibrated to sensitivity 1 (plus slack)
        assert scale == pytest.approx(1.0 / m.epsilons[j], rel=1e-5)
    assert m.level(3) is m.values[1] and m.level_epsilons[2] == m.epsilons[0]
    with pytest.raises(InvalidParameterError):
        m.level(1)


def test_measure_noise_is_centred_with_the_calibrated_scale():
    s = _sums(d=64, seed=2)
    m = measure(s, epsilon=1.0, w=20, rng=np.random.default_rng(5))
    exact = pyramid(s, start_level=m.start_level)
    noise = np.ldexp(m.values[-1], m.levels) - exact[-1]  # 4096 Laplace draws, leaf level
    b = 1.0 / m.epsilons[-1]
    # Laplace(b): mean 0, mean |x| = b. Tolerances of 5 standard errors (false-alarm
    # rate < 1e-6 each): sd(mean) = b sqrt(2/n), sd(mean |x|) = b / sqrt(n).
    n = noise.size
    assert abs(noise.mean()) < 5 * b * math.sqrt(2 / n)
    assert abs(np.abs(noise).mean() - b) < 5 * b / math.sqrt(n)


def test_measure_accepts_cellsums_and_is_reproducible_with_a_seed():
    s = _sums()
    cs = CellSums(s, n_users=3, n_points=10, n_outside=0, n_users_empty=0)
    a = measure(cs, epsilon=1.0, rng=np.random.default_rng(7))
    b = measure(s, epsilon=1.0, rng=np.random.default_rng(7))
    for u, v in zip(a.values, b.values, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not a.secure  # a seeded generator is not fit for publication
    assert measure(s, epsilon=1.0).secure


def test_measure_charges_one_ledger_entry_per_level():
    acct = PrivacyAccountant(1.0)
    m = measure(_sums(d=256), epsilon=1.0, accountant=acct, rng=np.random.default_rng(0))
    ledger = acct.ledger
    assert [e.params["level"] for e in ledger] == list(range(m.start_level, m.levels + 1))
    assert len(ledger) == m.levels - m.start_level + 1 == 7
    assert all(e.mechanism == "laplace" and e.relation is Neighbouring.ADD_REMOVE
               for e in ledger)
    assert [e.cost.epsilon for e in ledger] == list(m.epsilons)
    assert acct.spent.epsilon == pytest.approx(1.0, rel=1e-15)
    assert acct.spent.epsilon <= 1.0 * (1 + 1e-15)
    assert "level" in acct.explain()


def test_a_too_small_accountant_refuses_before_any_noise():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    acct = PrivacyAccountant(1.0)
    with pytest.raises(BudgetExceededError, match="no noise was drawn"):
        measure(_sums(), epsilon=1.5, accountant=acct, rng=rng)
    assert acct.ledger == () and rng.bit_generator.state == state
    # partly spent: the whole release must fit, not only its first levels
    acct.spend(PrivacyCost(0.5), mechanism="other")
    with pytest.raises(BudgetExceededError):
        measure(_sums(), epsilon=0.6, accountant=acct, rng=rng)
    assert len(acct.ledger) == 1 and rng.bit_generator.state == state
    measure(_sums(), epsilon=0.5, accountant=acct, rng=rng)  # exactly what is left
    assert acct.remaining.epsilon == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "w": 0}, "w"),
    ({"epsilon": 1.0, "w": 2.5}, "w"),
    ({"epsilon": 1.0, "gamma": 0.0}, "gamma"),
    ({"epsilon": 1.0, "accountant": "acct"}, "accountant"),
])
def test_measure_refuses_bad_parameters(kwargs, name):
    with pytest.raises(InvalidParameterError) as info:
        measure(_sums(), **kwargs)
    assert info.value.name == name


@pytest.mark.parametrize("sums", [np.zeros((3, 3)), np.zeros((4, 2)), -np.ones((4, 4)),
                                  np.full((4, 4), np.nan)])
def test_measure_refuses_bad_sums(sums):
    with pytest.raises(InvalidDataError):
        measure(sums, epsilon=1.0)
