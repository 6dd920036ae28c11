"""Tests of RECONSTRUCT (Algorithm 2, reconstruct.py): selection, compact LP, recovery."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps import (
    Reconstruction,
    children_flat,
    measure,
    pyramid,
    reconstruct,
    start_level,
)


def _exact_levels(s, w):
    """Noise-free measurements y'_i = 2^-i P_i s for i = q..ell (q from w)."""
    ell = s.shape[0].bit_length() - 1
    q = start_level(w, ell)
    return [np.ldexp(p, -(q + j)) for j, p in enumerate(pyramid(s, start_level=q))]


def _sparse(d, k, seed):
    rng = np.random.default_rng(seed)
    s = np.zeros((d, d))
    s.ravel()[rng.choice(d * d, k, replace=False)] = rng.uniform(0.5, 5.0, k)
    return s


@pytest.mark.parametrize("d,k,w,seed", [(16, 5, 20, 0), (32, 20, 20, 1), (64, 8, 20, 2),
                                        (64, 20, 20, 3), (128, 4, 4, 4), (256, 20, 20, 5),
                                        (8, 1, 1, 6)])
def test_k_sparse_input_is_recovered_exactly_without_noise(d, k, w, seed):
    s = _sparse(d, k, seed)
    rec = reconstruct(_exact_levels(s, w), w=w)
    np.testing.assert_allclose(rec.estimate, s, atol=1e-9)
    assert rec.objective == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(rec.distribution, s / s.sum(), atol=1e-9)


@pytest.mark.parametrize("d,seed", [(16, 0), (16, 1), (16, 2), (32, 3), (32, 4), (32, 5)])
def test_compact_lp_has_the_full_lp_optimum_on_noisy_inputs(d, seed):
    s = _sparse(d, 30, seed) + np.random.default_rng(seed).random((d, d)) * 0.05
    m = measure(s, epsilon=2.0, w=20, rng=np.random.default_rng(100 + seed))
    compact = reconstruct(m, lp="compact")
    full = reconstruct(m, lp="full")
    assert compact.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)
    # each solution's objective, evaluated directly as ||y^ - P s||_1, is the LP optimum
    assert compact.objective_of(compact.estimate) == pytest.approx(compact.objective,
                                                                   rel=1e-7, abs=1e-9)
    assert full.objective_of(full.estimate) == pytest.approx(full.objective, rel=1e-7,
                                                             abs=1e-9)
    assert compact.n_variables < full.n_variables
    for rec in (compact, full):
        assert np.all(rec.estimate >= 0) and np.all(rec.distribution >= 0)
        assert rec.distribution.sum() == pytest.approx(1.0, rel=1e-12)
        np.testing.assert_allclose(rec.distribution, rec.estimate / rec.estimate.sum())


def test_selection_follows_lines_3_to_7():
    d, w = 64, 20
    m = measure(_sparse(d, 40, 9), epsilon=1.0, w=w, rng=np.random.default_rng(0))
    rec = reconstruct(m)
    q = rec.start_level
    assert q == 2 and rec.kept[0].tolist() == list(range(16))  # S_q = all cells of level q
    for j in range(1, len(rec.kept)):
        t = children_flat(q + j - 1, rec.kept[j - 1])
        kept, left = rec.kept[j], rec.left_out[j]
        assert kept.size == min(w, t.size) and kept.size + left.size == t.size
        assert set(kept.tolist()) | set(left.tolist()) == set(t.tolist())
        vals = m.values[j].ravel()
        assert vals[kept].min() >= vals[left].max()  # the top-w values are kept
        # line 8: y^ is y' on S and zero elsewhere
        yh = rec.y_hat[j].ravel()
        np.testing.assert_array_equal(yh[kept], vals[kept])
        assert np.count_nonzero(np.delete(yh, kept)) == 0


def test_left_out_mass_is_spread_uniformly():
    # Delta = 8, w = 2 (q = 0). Level 1 keeps quadrants A = (0, 0) (mass 10) and
    # B = (1, 1) (mass 3); level 2 keeps A's two children with masses 6 and 4, so all four
    # children of B are left out. B's row (y^ = 3/2) can only be matched by mass in its
    # left-out children (cost 1/4 + 1/8 per unit, gain 1/2 + 1 from B's and the root's
    # rows): the LP puts 3 there, and each left-out cell's mass is spread uniformly.
    s = np.zeros((8, 8))
    s[0, 0], s[2, 2], s[5, 5] = 6.0, 4.0, 3.0
    rec = reconstruct(_exact_levels(s, 2), w=2)
    assert rec.start_level == 0 and rec.kept[1].tolist() == [0, 3]
    assert rec.kept[2].tolist() == [0, 5] and rec.left_out[2].size == 6
    assert rec.estimate[0, 0] == pytest.approx(6.0, abs=1e-9)
    assert rec.estimate[2, 2] == pytest.approx(4.0, abs=1e-9)
    b = rec.estimate[4:, 4:]
    assert b.sum() == pytest.approx(3.0, abs=1e-9)
    blocks = b.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(4, 4)  # the 2x2 leaf blocks
    np.testing.assert_allclose(blocks, blocks[:, :1] * np.ones((1, 4)), atol=1e-12)
    assert rec.estimate.sum() == pytest.approx(13.0, abs=1e-9)
    assert rec.objective == pytest.approx(3 * (0.25 + 0.125), abs=1e-9)
    full = reconstruct(_exact_levels(s, 2), w=2, lp="full")
    assert full.objective == pytest.approx(rec.objective, abs=1e-9)


def test_degenerate_placements_have_the_same_objective():
    # w = 1: the excess mass of the root row costs 1/2 + 1/4 + 1/8 per unit wherever it
    # goes (left-out quadrant or below the kept chain): the LP may pick any of them.
    s = np.zeros((8, 8))
    s[0, 0], s[7, 7] = 10.0, 9.0
    rec = reconstruct(_exact_levels(s, 1), w=1)
    assert rec.estimate.sum() == pytest.approx(19.0, abs=1e-9)
    assert rec.objective == pytest.approx(9 * 0.875, abs=1e-9)
    assert rec.objective_of(s) == pytest.approx(rec.objective, abs=1e-9)


def test_zero_mass_falls_back_to_uniform_over_covered_cells():
    d = 16
    levels = [-np.ones((1 << i, 1 << i)) for i in range(2, 5)]  # every measurement < 0
    covered = np.zeros((d, d), dtype=bool)
    covered[:, :8] = True
    rec = reconstruct(levels, w=20, covered=covered)
    assert rec.fallback_uniform and rec.estimate.sum() == 0.0
    np.testing.assert_allclose(rec.distribution[:, :8], 1.0 / 128)
    assert rec.distribution[:, 8:].sum() == 0.0
    plain = reconstruct(levels, w=20)
    np.testing.assert_allclose(plain.distribution, 1.0 / d**2)


def test_more_than_w_cells_at_level_q_or_single_level():
    # q = ell: only the leaf level is measured; the LP clips negatives and keeps the rest
    y = np.array([[0.25, -0.5], [0.0, 1.0]])
    rec = reconstruct([y], w=20)
    np.testing.assert_allclose(rec.estimate, np.array([[0.5, 0.0], [0.0, 2.0]]), atol=1e-12)


def test_returns_a_reconstruction_with_sizes():
    m = measure(_sparse(256, 20, 1), epsilon=1.0, rng=np.random.default_rng(0))
    rec = reconstruct(m)
    assert isinstance(rec, Reconstruction) and rec.lp == "compact"
    assert rec.estimate.shape == (256, 256) and rec.w == 20 and rec.levels == 8
    # O(w ell) variables: <= w leaves + 3w left-out per level + one t per cell of S
    assert rec.n_variables <= 20 + 3 * 20 * 6 + (16 + 20 * 6)
    assert "ptimal" in rec.solver_message


def test_reconstruct_refuses_bad_input():
    m = measure(_sparse(128, 3, 0), epsilon=1.0, rng=np.random.default_rng(0))
    with pytest.raises(InvalidParameterError) as info:
        reconstruct(m, lp="full")
    assert info.value.name == "lp"
    with pytest.raises(InvalidParameterError):
        reconstruct(m, lp="dense")
    with pytest.raises(InvalidParameterError) as info:
        reconstruct(m, w=0)
    assert info.value.name == "w"
    with pytest.raises(InvalidParameterError) as info:
        reconstruct([np.zeros((4, 4))])
    assert info.value.name == "w"
    with pytest.raises(InvalidDataError, match="expected"):
        reconstruct([np.zeros((4, 4)), np.zeros((4, 4))], w=4)
    with pytest.raises(InvalidDataError):
        reconstruct([np.zeros((3, 3))], w=4)
    with pytest.raises(InvalidDataError):
        reconstruct([], w=4)
    with pytest.raises(InvalidDataError, match="non-finite"):
        reconstruct([np.full((2, 2), np.nan)], w=4)
    with pytest.raises(InvalidDataError, match="covered"):
        reconstruct([-np.ones((2, 2))], w=4, covered=np.zeros((2, 2), dtype=bool))


# ----------------------------------------------------------------------------- totality


def _failing_linprog(monkeypatch, status=1):
    """HiGHS stopping at its iteration limit (or failing), whatever the LP."""
    import sys

    from scipy import optimize

    module = sys.modules["privot.heatmaps.reconstruct"]
    budgets = []

    class _Failing:
        def linprog(self, *args, **kwargs):
            budgets.append(kwargs.get("options", {}).get("maxiter"))
            return optimize.OptimizeResult(status=status, x=None, fun=None,
                                           message="Iteration limit reached.")

    monkeypatch.setattr(module, "optimize", _Failing())
    return budgets


@pytest.mark.parametrize("lp", ["compact", "full"])
@pytest.mark.parametrize("status", [1, 4])
def test_a_failed_lp_falls_back_to_the_finest_kept_level(monkeypatch, lp, status):
    s = _sparse(32, 12, 7)
    m = measure(s, epsilon=1.0, w=20, rng=np.random.default_rng(3))
    budgets = _failing_linprog(monkeypatch, status)
    rec = reconstruct(m, lp=lp)  # before: ConvergenceError after the noise was drawn
    assert rec.lp_fallback and "Iteration limit" in rec.solver_message
    assert budgets and budgets[0] >= 10_000
    top = np.ldexp(m.values[-1], m.levels)  # 2^ell y'_ell, unscaled
    expected = np.zeros_like(top)
    expected.ravel()[rec.kept[-1]] = np.maximum(top.ravel()[rec.kept[-1]], 0.0)
    np.testing.assert_array_equal(rec.estimate, expected)
    assert rec.objective == pytest.approx(rec.objective_of(rec.estimate))
    assert rec.distribution.sum() == pytest.approx(1.0)


def test_a_failed_lp_with_no_positive_cell_still_answers(monkeypatch):
    levels = [-np.ones((1 << i, 1 << i)) for i in range(2, 5)]
    _failing_linprog(monkeypatch)
    rec = reconstruct(levels, w=20)
    assert rec.lp_fallback and rec.fallback_uniform
    np.testing.assert_allclose(rec.distribution, 1.0 / 256)


def test_the_lp_budget_is_public_and_generous():
    from privot.heatmaps.reconstruct import lp_budget

    assert lp_budget(10, 10) == 10_000
    assert lp_budget(16_512, 30_280) == 10 * (16_512 + 30_280)
    rec = reconstruct(measure(_sparse(64, 20, 1), epsilon=1.0, rng=np.random.default_rng(0)))
    assert not rec.lp_fallback


def test_covered_is_checked_whatever_the_values():
    # before: checked only when the uniform fallback was needed
    m = measure(_sparse(16, 5, 0), epsilon=5.0, rng=np.random.default_rng(0))
    with pytest.raises(InvalidDataError, match="covered"):
        reconstruct(m, covered=np.zeros((16, 16), dtype=bool))
    with pytest.raises(InvalidDataError, match="covered"):
        reconstruct(m, covered=np.ones((8, 8), dtype=bool))
