"""Public regions: polygon (even-odd), predicate, the continental US outline."""

from __future__ import annotations

import numpy as np
import pytest

from privot.barycenters.regions import (
    CONTINENTAL_US_OUTLINE,
    PolygonRegion,
    PredicateRegion,
    Region,
    continental_us,
)
from privot.errors import InvalidDataError, InvalidParameterError

INSIDE = {"New York": (-74.006, 40.713), "Los Angeles": (-118.24, 34.05),
          "Chicago": (-87.63, 41.88), "Houston": (-95.37, 29.76), "Miami": (-80.19, 25.76),
          "Seattle": (-122.33, 47.61), "Boston": (-71.06, 42.36), "Denver": (-104.99, 39.74),
          "San Diego": (-117.16, 32.72), "Detroit": (-83.05, 42.33),
          "Phoenix": (-112.07, 33.45), "Atlanta": (-84.39, 33.75),
          "San Francisco": (-122.42, 37.77), "New Orleans": (-90.07, 29.95),
          "Washington": (-77.04, 38.9), "Minneapolis": (-93.27, 44.98),
          "El Paso": (-106.44, 31.76), "Duluth": (-92.1, 46.78)}
OUTSIDE = {"Mexico City": (-99.13, 19.43), "Toronto": (-79.38, 43.65),
           "Havana": (-82.38, 23.13), "Montreal": (-73.57, 45.5),
           "Vancouver": (-123.12, 49.28), "Monterrey": (-100.3, 25.67),
           "Nassau": (-77.35, 25.05), "Victoria": (-123.37, 48.43),
           "Ottawa": (-75.7, 45.42), "Winnipeg": (-97.14, 49.9), "Bermuda": (-64.78, 32.3),
           "Pacific": (-130.0, 40.0), "Atlantic": (-65.0, 38.0)}


def test_continental_us_contains_big_cities_only():
    us = continental_us()
    assert isinstance(us, Region)
    assert 40 <= len(CONTINENTAL_US_OUTLINE) <= 120
    got_in = us.contains(np.array(list(INSIDE.values())))
    got_out = us.contains(np.array(list(OUTSIDE.values())))
    assert dict(zip(INSIDE, got_in.tolist(), strict=True)) == dict.fromkeys(INSIDE, True)
    assert dict(zip(OUTSIDE, got_out.tolist(), strict=True)) == dict.fromkeys(OUTSIDE, False)


def test_polygon_even_odd_square_and_concave():
    square = PolygonRegion(np.array([[0, 0], [1, 0], [1, 1], [0, 1]]))
    pts = np.array([[0.5, 0.5], [1.5, 0.5], [-0.1, 0.2], [0.5, 1.2], [0.99, 0.01]])
    np.testing.assert_array_equal(square.contains(pts), [True, False, False, False, True])
    # a U shape: the notch (0.5, 0.8) is outside, the arms inside
    u = PolygonRegion(np.array([[0, 0], [1, 0], [1, 1], [0.7, 1], [0.7, 0.4], [0.3, 0.4],
                                [0.3, 1], [0, 1]]))
    np.testing.assert_array_equal(u.contains(np.array([[0.5, 0.8], [0.15, 0.8],
                                                       [0.85, 0.8], [0.5, 0.2]])),
                                  [False, True, True, True])


def test_polygon_area_by_monte_carlo():
    tri = PolygonRegion(np.array([[0, 0], [2, 0], [0, 2]]))
    x = np.random.default_rng(0).uniform(0, 2, size=(200_000, 2))
    assert tri.contains(x).mean() == pytest.approx(0.5, abs=0.005)


def test_predicate_region_and_bad_inputs():
    r = PredicateRegion(lambda p: p[:, 0] > 0)
    np.testing.assert_array_equal(r.contains(np.array([[1.0, 0], [-1.0, 0]])), [True, False])
    with pytest.raises(InvalidDataError):
        PredicateRegion(lambda p: np.ones(3, dtype=bool)).contains(np.zeros((2, 2)))
    with pytest.raises(InvalidParameterError):
        PredicateRegion(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError) as info:
        PolygonRegion(np.array([[0, 0], [1, 1]]))
    assert info.value.name == "vertices"
    with pytest.raises(InvalidDataError):
        continental_us().contains(np.zeros((2, 3)))
