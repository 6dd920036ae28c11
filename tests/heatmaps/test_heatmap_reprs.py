"""One-line reprs of the heatmap objects (issue 25): no arrays printed, the release
parameters and the SEEDED mark shown."""

from __future__ import annotations

import numpy as np
import pytest

from privot.heatmaps import (
    Grid,
    HeatmapParams,
    dense_heatmap,
    laplace_baseline,
    measure,
    private_heatmap,
    private_kmedian,
    reconstruct,
    shuffle_heatmap,
    user_distributions_sum,
)

GRID = Grid((0.0, 1.0, 0.0, 1.0), 16)


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(50), 4)
    return users, rng.uniform(0.1, 0.9, users.size), rng.uniform(0.1, 0.9, users.size)


def _one_line(obj, name):
    text = repr(obj)
    assert "\n" not in text and text.startswith(f"{name}(") and len(text) < 400, text
    assert "array(" not in text
    return text


def test_release_objects_have_one_line_reprs(points):
    users, x, y = points
    sums = user_distributions_sum(users, x, y, GRID)
    assert "curator-only" in _one_line(sums, "CellSums")
    meas = measure(sums, epsilon=1.0, rng=np.random.default_rng(1))
    assert "SEEDED" in _one_line(meas, "Measurements")
    _one_line(reconstruct(meas), "Reconstruction")
    assert "SEEDED" in _one_line(laplace_baseline(sums, epsilon=1.0, rng=1), "BaselineResult")
    res = private_heatmap(user=users, x=x, y=y, grid=GRID, epsilon=1.0, rng=2)
    _one_line(res, "HeatmapResult")
    _one_line(res.release, "HeatmapRelease")
    _one_line(res.diagnostics, "HeatmapDiagnostics")
    _one_line(HeatmapParams(grid=GRID, epsilon=1.0), "HeatmapParams")


def test_extension_objects_have_one_line_reprs(points):
    users, x, y = points
    dense = dense_heatmap(user_distributions_sum(users, x, y, GRID), epsilon=1.0,
                          n_users_public=50, rng=3)
    _one_line(dense, "DenseHeatmapResult")
    _one_line(dense.projection, "EMDProjection")
    km = private_kmedian(np.column_stack([x, y]), grid=GRID, k=2, epsilon=1.0, rng=4)
    _one_line(km, "KMedianResult")
    _one_line(km.fit, "KMedianFit")
    sh = shuffle_heatmap(users, x, y, grid=GRID, n_users_public=50, B=4, epsilon=1.0,
                         delta=1e-6, rng=5)
    _one_line(sh, "ShuffleResult")
    _one_line(sh.parameters, "ShuffleParameters")
