"""PublicBounds: the fixed public map into B_0(1/2), clipping and inversion."""

from __future__ import annotations

import numpy as np
import pytest

from privot.barycenters.geometry import PublicBounds
from privot.errors import InvalidDataError, InvalidParameterError


def test_box_maps_into_half_ball_preserving_shape():
    b = PublicBounds.box([0.0, 0.0], [4.0, 3.0])  # diagonal 5
    assert b.dim == 2 and b.scale == pytest.approx(0.2)
    u, nc = b.to_unit(np.array([[0.0, 0.0], [4.0, 3.0], [2.0, 1.5], [4.0, 0.0]]))
    assert nc == 0
    np.testing.assert_allclose(u, [[-0.4, -0.3], [0.4, 0.3], [0.0, 0.0], [0.4, -0.3]])
    assert np.all(np.linalg.norm(u, axis=1) <= 0.5 + 1e-12)
    lo, hi = b.cell_box()
    np.testing.assert_allclose(lo, [-0.4, -0.3])
    np.testing.assert_allclose(hi, [0.4, 0.3])


def test_box_clips_coordinatewise_and_counts():
    b = PublicBounds.box([0.0, 0.0], [1.0, 1.0])
    u, nc = b.to_unit(np.array([[2.0, 0.5], [-1.0, -1.0], [0.5, 0.5]]))
    assert nc == 2
    np.testing.assert_allclose(b.from_unit(u), [[1.0, 0.5], [0.0, 0.0], [0.5, 0.5]])


def test_ball_maps_and_projects_radially():
    b = PublicBounds.ball([1.0, 1.0, 1.0], 2.0)
    assert b.scale == pytest.approx(0.25)
    u, nc = b.to_unit(np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 7.0], [2.0, 1.0, 1.0]]))
    assert nc == 1
    np.testing.assert_allclose(u, [[0, 0, 0], [0, 0, 0.5], [0.25, 0, 0]])
    lo, hi = b.cell_box()
    np.testing.assert_array_equal(lo, [-0.5] * 3)
    np.testing.assert_array_equal(hi, [0.5] * 3)


@pytest.mark.parametrize("bounds", [PublicBounds.box([-3.0, 2.0], [5.0, 2.5]),
                                    PublicBounds.ball([0.3, -7.0], 0.1)])
def test_from_unit_inverts_to_unit(bounds):
    rng = np.random.default_rng(0)
    x = bounds.centre + (rng.uniform(-1, 1, (50, 2)) * (bounds.upper - bounds.lower) / 3)
    u, nc = bounds.to_unit(x)
    assert nc == 0
    np.testing.assert_allclose(bounds.from_unit(u), x, rtol=1e-12, atol=1e-12)


def test_cost_conversion_by_scale():
    b = PublicBounds.box([0.0, 0.0], [30.0, 40.0])
    x = np.array([[0.0, 0.0], [30.0, 40.0]])
    u, _ = b.to_unit(x)
    assert np.linalg.norm(u[1] - u[0]) / b.scale == pytest.approx(50.0)


@pytest.mark.parametrize("make,name", [
    (lambda: PublicBounds.box([0.0, 1.0], [1.0, 1.0]), "lower"),
    (lambda: PublicBounds.box([0.0, np.nan], [1.0, 1.0]), "lower/upper"),
    (lambda: PublicBounds.box([0.0], [1.0, 2.0]), "lower/upper"),
    (lambda: PublicBounds.ball([0.0, 0.0], 0.0), "radius"),
    (lambda: PublicBounds.ball([0.0, np.inf], 1.0), "centre"),
])
def test_bad_bounds_name_the_parameter(make, name):
    with pytest.raises(InvalidParameterError) as info:
        make()
    assert info.value.name == name


def test_dimension_mismatch_and_bad_points():
    b = PublicBounds.box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(InvalidDataError, match="dim=2"):
        b.to_unit(np.zeros((3, 3)))
    with pytest.raises(InvalidDataError, match="non-finite"):
        b.to_unit(np.array([[np.nan, 0.0]]))
    with pytest.raises(InvalidDataError, match="empty"):
        b.to_unit(np.zeros((0, 2)))
