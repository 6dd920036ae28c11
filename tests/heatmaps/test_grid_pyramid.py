"""Tests of the public grid (grid.py) and the pyramidal transform (pyramid.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps import Grid, block_sums, children_flat, leaf_block, pyramid

# -- Grid ----------------------------------------------------------------------------------


def test_grid_geometry_square_and_stretch():
    g = Grid((0.0, 4.0, 0.0, 2.0), 4)
    assert g.levels == 2 and g.n_cells == 16
    assert g.cell_width == g.cell_height == 1.0  # square: side max(4, 2) = 4
    cov = g.covered_mask()
    assert cov.shape == (4, 4) and cov[:2].all() and not cov[2:].any()  # rows past y_max
    s = Grid((0.0, 4.0, 0.0, 2.0), 4, aspect="stretch")
    assert s.cell_width == 1.0 and s.cell_height == 0.5 and s.covered_mask().all()
    xs, ys = g.cell_centres()
    assert xs[0, :].tolist() == [0.5, 1.5, 2.5, 3.5] and ys[:, 0].tolist() == [0.5, 1.5, 2.5, 3.5]
    assert g.cell_distance_scale() == (1.0, 1.0)


@pytest.mark.parametrize("res", [1, 2, 8, 256, 2**15])
def test_grid_accepts_powers_of_two(res):
    assert Grid((0, 1, 0, 1), res).levels == res.bit_length() - 1


@pytest.mark.parametrize("kwargs,name", [
    ({"bounds": (0, 1, 0, 1), "resolution": 3}, "resolution"),
    ({"bounds": (0, 1, 0, 1), "resolution": 0}, "resolution"),
    ({"bounds": (0, 1, 0, 1), "resolution": 2**16}, "resolution"),
    ({"bounds": (0, 1, 0, 1), "resolution": 2.0}, "resolution"),
    ({"bounds": (1, 0, 0, 1), "resolution": 4}, "bounds"),
    ({"bounds": (0, 1, 0, np.nan), "resolution": 4}, "bounds"),
    ({"bounds": (0, 1, 0), "resolution": 4}, "bounds"),
    ({"bounds": "abcd", "resolution": 4}, "bounds"),
    ({"bounds": (0, 1, 0, 1), "resolution": 4, "aspect": "fit"}, "aspect"),
])
def test_grid_refuses_bad_parameters(kwargs, name):
    with pytest.raises(InvalidParameterError) as info:
        Grid(**kwargs)
    assert info.value.name == name


def test_assign_half_open_cells_and_outside_points():
    g = Grid((0.0, 4.0, 0.0, 4.0), 4)
    x = np.array([0.0, 3.999, 4.0, -0.1, 1.5, 2.0])
    y = np.array([0.0, 3.999, 1.0, 1.0, 2.5, 4.0])
    a = g.assign(x, y)
    assert a.kept.tolist() == [True, True, False, False, True, False]  # far edges excluded
    assert a.n_outside == 3
    assert a.cells.tolist() == [0, 15, 2 * 4 + 1]  # flat index row * Delta + col


def test_assign_refuses_nan_and_mismatch():
    g = Grid((0.0, 1.0, 0.0, 1.0), 2)
    with pytest.raises(InvalidDataError, match="non-finite"):
        g.assign(np.array([0.1, np.nan]), np.array([0.1, 0.2]))
    with pytest.raises(InvalidDataError, match="x has 2 values but y has 1"):
        g.assign(np.array([0.1, 0.2]), np.array([0.1]))
    empty = g.assign(np.array([]), np.array([]))
    assert empty.cells.size == 0 and empty.n_outside == 0


def test_assign_far_edge_rounding_stays_inside():
    g = Grid((0.0, 0.3, 0.0, 0.3), 8)
    x = np.nextafter(0.3, 0.0)
    a = g.assign(np.array([x]), np.array([x]))
    assert a.cells.tolist() == [63]


# -- pyramid -------------------------------------------------------------------------------


def _brute_block_sums(s, level):
    d = s.shape[0]
    m = 1 << level
    b = d // m
    out = np.zeros((m, m))
    for r in range(d):
        for c in range(d):
            out[r // b, c // b] += s[r, c]
    return out


@pytest.mark.parametrize("d", [1, 2, 8, 16])
def test_block_sums_match_brute_force(d):
    s = np.random.default_rng(d).random((d, d))
    ell = d.bit_length() - 1
    levels = pyramid(s)
    assert len(levels) == ell + 1
    for i in range(ell + 1):
        np.testing.assert_allclose(block_sums(s, i), _brute_block_sums(s, i), rtol=1e-12)
        np.testing.assert_allclose(levels[i], _brute_block_sums(s, i), rtol=1e-12)
    np.testing.assert_array_equal(levels[-1], s)


def test_pyramid_start_level_and_l1_preservation():
    s = np.random.default_rng(3).random((16, 16))
    lv = pyramid(s, start_level=2)
    assert [x.shape for x in lv] == [(4, 4), (8, 8), (16, 16)]
    # block sums of a non-negative vector preserve its L1 norm at every level
    for x in lv:
        assert x.sum() == pytest.approx(s.sum(), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 4), st.integers(0, 10_000))
def test_children_flat_and_leaf_block_are_consistent(level, seed):
    ell = 5
    m = 1 << level
    rng = np.random.default_rng(seed)
    cells = rng.choice(m * m, size=min(3, m * m), replace=False)
    kids = children_flat(level, cells).reshape(-1, 4)
    for parent, ks in zip(cells, kids, strict=True):
        pr, pc = divmod(int(parent), m)
        for k in ks:
            kr, kc = divmod(int(k), 2 * m)
            assert (kr // 2, kc // 2) == (pr, pc)
        rows, cols = leaf_block(level, int(parent), ell)
        assert rows.stop - rows.start == 1 << (ell - level)
        assert rows.start == pr << (ell - level) and cols.start == pc << (ell - level)
    assert len(set(kids.ravel().tolist())) == kids.size


def test_pyramid_refuses_bad_shapes():
    with pytest.raises(InvalidDataError):
        pyramid(np.zeros((3, 3)))
    with pytest.raises(InvalidDataError):
        pyramid(np.zeros((4, 2)))
    with pytest.raises(InvalidParameterError):
        block_sums(np.zeros((4, 4)), 3)
