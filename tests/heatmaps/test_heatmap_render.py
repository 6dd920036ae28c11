"""Tests of the Gaussian-filtered heatmap (render.py) against the paper's definition."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps import gaussian_heatmap


def _brute_heatmap(p, sigma):
    """Sec. 2.3 verbatim, O(Delta^4): H(a) = sum_a' exp(-|a-a'|^2/2s^2) p(a') / Z(a'),
    Z(a') = sum_a exp(-|a-a'|^2/2s^2) over the grid."""
    d = p.shape[0]
    h = np.zeros((d, d))
    for r2 in range(d):
        for c2 in range(d):
            k = np.array([[np.exp(-((r - r2) ** 2 + (c - c2) ** 2) / (2 * sigma**2))
                           for c in range(d)] for r in range(d)])
            h += k / k.sum() * p[r2, c2]
    return h


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5, 40.0])
def test_matches_the_brute_force_definition_on_16x16(sigma):
    p = np.random.default_rng(0).random((16, 16))
    p[3:6, 10:] = 0.0
    np.testing.assert_allclose(gaussian_heatmap(p, sigma=sigma), _brute_heatmap(p, sigma),
                               rtol=1e-12, atol=1e-15)


def test_mass_is_preserved_even_at_the_border():
    p = np.zeros((32, 32))
    p[0, 0] = 1.0  # a corner: half of a plain Gaussian would fall off the grid
    h = gaussian_heatmap(p, sigma=3.0)
    assert h.sum() == pytest.approx(1.0, rel=1e-12) and np.all(h >= 0)
    assert np.unravel_index(np.argmax(h), h.shape) == (0, 0)


def test_sigma_zero_is_the_identity():
    p = np.random.default_rng(1).random((8, 8))
    np.testing.assert_array_equal(gaussian_heatmap(p, sigma=0.0), p)
    np.testing.assert_array_equal(gaussian_heatmap(p, sigma=0.01), p)  # weights underflow


def test_refuses_bad_input():
    with pytest.raises(InvalidParameterError):
        gaussian_heatmap(np.ones((4, 4)), sigma=-1.0)
    with pytest.raises(InvalidDataError):
        gaussian_heatmap(np.ones((4, 2)), sigma=1.0)
    with pytest.raises(InvalidDataError):
        gaussian_heatmap(np.full((4, 4), np.nan), sigma=1.0)
