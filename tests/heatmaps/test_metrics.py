"""Heatmap metrics (paper 002, Sec. 4): identities, exact grid EMD against POT, metres, errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import ot
import pytest
from scipy.ndimage import gaussian_filter
from scipy.spatial.distance import cdist

from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.evaluation.heatmaps import (
    EARTH_MEAN_RADIUS_M,
    KL_EPS,
    HeatmapMetrics,
    grid_emd,
    grid_emd_metres,
    heatmap_metrics,
    kl_divergence,
    latlon_cell_metres,
    pearson,
    similarity,
)
from privot.grid import Grid

METHODS = ["network-simplex", "highs"]


def _pot_cityblock_emd(p, q, width, height):
    """Reference: POT's exact ot.emd2 with the dense cityblock cost between cell centres."""
    d = p.shape[0]
    xs, ys = np.meshgrid(np.arange(d) * width, np.arange(d) * height)
    centres = np.column_stack([xs.ravel(), ys.ravel()])
    cost = cdist(centres, centres, metric="cityblock")
    return ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), cost, numItermax=10**8)


def _maps(kind, d, rng):
    if kind == "dense":
        return rng.random((d, d)), rng.random((d, d))
    if kind == "sparse":
        p = (rng.random((d, d)) < 0.15) * rng.random((d, d))
        q = (rng.random((d, d)) < 0.15) * rng.random((d, d))
        p[0, 0] += 0.5  # never all-zero
        q[-1, -1] += 0.5
        return p, q
    # point counts against their smoothed version (a typical heatmap comparison)
    pts = rng.integers(0, d, size=(30, 2))
    p = np.zeros((d, d))
    np.add.at(p, (pts[:, 0], pts[:, 1]), 1.0)
    return p, gaussian_filter(p, 1.0)


@pytest.fixture
def pair():
    rng = np.random.default_rng(2024)
    return _maps("points", 16, rng)


# -- identities -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dense", "sparse", "points"])
def test_identities(kind):
    p, _ = _maps(kind, 16, np.random.default_rng(1))
    scaled = 7.5 * p  # every metric normalises first
    assert similarity(p, scaled) == pytest.approx(1.0, abs=1e-12)
    assert pearson(p, scaled) == pytest.approx(1.0, abs=1e-12)
    assert kl_divergence(p, scaled) == pytest.approx(0.0, abs=1e-12)
    for method in METHODS:
        assert grid_emd(p, scaled, method=method) == pytest.approx(0.0, abs=1e-12)
    assert grid_emd(p, p) == 0.0


def test_heatmap_metrics_dataclass(pair):
    true, estimate = pair
    m = heatmap_metrics(true, estimate)
    assert isinstance(m, HeatmapMetrics)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.emd = 0.0  # type: ignore[misc]
    assert m.similarity == pytest.approx(similarity(true, estimate))
    assert m.pearson == pytest.approx(pearson(true, estimate))
    assert m.kl_divergence == pytest.approx(kl_divergence(true, estimate))
    assert m.emd == pytest.approx(grid_emd(true, estimate), rel=1e-12)
    assert 0 < m.similarity < 1 and 0 < m.pearson < 1 and m.kl_divergence > 0 and m.emd > 0
    same = heatmap_metrics(true, true)
    assert (same.similarity, same.pearson, same.emd) == pytest.approx((1.0, 1.0, 0.0))
    assert same.kl_divergence == pytest.approx(0.0, abs=1e-12)


# -- similarity, pearson, KL ----------------------------------------------------------------


def test_similarity_is_histogram_intersection(pair):
    p, q = pair
    pn, qn = p / p.sum(), q / q.sum()
    assert similarity(p, q) == pytest.approx(np.minimum(pn, qn).sum(), rel=1e-14)
    assert similarity(p, q) == pytest.approx(1 - 0.5 * np.abs(pn - qn).sum(), rel=1e-12)
    assert similarity(p, q) == pytest.approx(similarity(q, p), rel=1e-15)
    a = np.zeros((4, 4))
    a[0, 0] = 1
    b = np.zeros((4, 4))
    b[3, 3] = 2
    assert similarity(a, b) == 0.0


def test_pearson_matches_numpy(pair):
    p, q = pair
    assert pearson(p, q) == pytest.approx(np.corrcoef(p.ravel(), q.ravel())[0, 1], rel=1e-12)
    assert pearson(p, p.max() - p + 1e-3) == pytest.approx(-1.0, abs=1e-12)
    assert math.isnan(pearson(p, np.ones_like(p)))  # constant map: undefined


def test_kl_follows_the_saliency_benchmark_convention(pair):
    p, q = pair
    pn, qn = p / p.sum(), q / q.sum()
    eps = 2.220446049250313e-16
    assert KL_EPS == eps
    expected = np.sum(pn * np.log(eps + pn / (qn + eps)))  # 0 * log(eps) = 0 for p = 0
    assert kl_divergence(p, q) == pytest.approx(expected, rel=1e-12)
    # an estimate missing mass: large but finite, ~ p (36 + log p) per missed cell
    a = np.zeros((4, 4))
    a[0, 0] = 1
    b = np.zeros((4, 4))
    b[3, 3] = 1
    assert kl_divergence(a, b) == pytest.approx(math.log(eps + 1 / eps), rel=1e-12)
    assert kl_divergence(a, b, eps=1e-3) == pytest.approx(math.log(1e-3 + 1 / 1e-3))
    assert kl_divergence(p, q) != pytest.approx(kl_divergence(q, p))  # not symmetric


# -- exact grid EMD -------------------------------------------------------------------------


@pytest.mark.parametrize("d", [4, 8, 16])
@pytest.mark.parametrize("kind", ["dense", "sparse", "points"])
@pytest.mark.parametrize("method", METHODS)
def test_grid_emd_matches_pot_dense_cityblock(d, kind, method):
    p, q = _maps(kind, d, np.random.default_rng(d * 31 + len(kind)))
    expected = _pot_cityblock_emd(p, q, 1 / d, 1 / d)
    assert grid_emd(p, q, method=method) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_grid_emd_rectangular_cells_match_pot(method):
    p, q = _maps("sparse", 12, np.random.default_rng(5))
    expected = _pot_cityblock_emd(p, q, 3.0, 0.7)
    assert grid_emd(p, q, cell=(3.0, 0.7), method=method) == pytest.approx(expected, rel=1e-9)


def test_grid_emd_symmetric_and_methods_agree():
    p, q = _maps("dense", 32, np.random.default_rng(9))
    forward = grid_emd(p, q)
    assert grid_emd(q, p) == pytest.approx(forward, rel=1e-12)
    assert grid_emd(p, q, method="highs") == pytest.approx(forward, rel=1e-10)


@pytest.mark.parametrize("shift", [(0, 1), (0, 5), (3, 0), (2, -7), (-13, 11)])
def test_point_mass_translation(shift):
    d = 32
    dr, dc = shift
    p = np.zeros((d, d))
    p[15, 15] = 1.0
    q = np.zeros((d, d))
    q[15 + dr, 15 + dc] = 4.0
    k = abs(dr) + abs(dc)
    assert grid_emd(p, q) == pytest.approx(k / d, rel=1e-12)
    assert grid_emd(p, q, cell=(1.0, 1.0)) == pytest.approx(k, rel=1e-12)
    assert grid_emd(p, q, cell=(2.0, 5.0)) == pytest.approx(2 * abs(dc) + 5 * abs(dr), rel=1e-12)


@pytest.mark.parametrize("d", [64, 128])
def test_product_measures_split_into_one_d_problems(d):
    """For product maps the L1 EMD is the sum of the two 1-D W1 distances (exact)."""
    rng = np.random.default_rng(d)
    px, py, qx, qy = (rng.random(d) ** 3 for _ in range(4))
    px, py, qx, qy = (v / v.sum() for v in (px, py, qx, qy))
    p, q = np.outer(py, px), np.outer(qy, qx)
    w, h = 0.3, 1.7
    expected = (w * np.abs(np.cumsum(px - qx))[:-1].sum()
                + h * np.abs(np.cumsum(py - qy))[:-1].sum())
    assert grid_emd(p, q, cell=(w, h)) == pytest.approx(expected, rel=1e-10)


def test_grid_emd_trivial_grids():
    assert grid_emd([[3.0]], [[1.0]]) == 0.0
    assert grid_emd([[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]) == pytest.approx(1.0)


def test_grid_emd_reports_solver_failure():
    p, q = _maps("dense", 16, np.random.default_rng(0))
    with pytest.raises(ConvergenceError, match="max_iter=1"):
        grid_emd(p, q, method="network-simplex", max_iter=1)


# -- metres ---------------------------------------------------------------------------------


def _haversine_m(lon1, lat1, lon2, lat2):
    lon1, lat1, lon2, lat2 = map(math.radians, (lon1, lat1, lon2, lat2))
    a = (math.sin((lat2 - lat1) / 2) ** 2
         + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_MEAN_RADIUS_M * math.asin(math.sqrt(a))


def _wgs84_metres_per_degree_latitude(lat_deg):
    a, e2 = 6_378_137.0, 6.69437999014e-3
    s = math.sin(math.radians(lat_deg))
    return a * (1 - e2) / (1 - e2 * s * s) ** 1.5 * math.pi / 180


@pytest.fixture
def paris():
    # about 18 km x 18 km around Paris: 16 x 16 cells of 0.01 degrees
    return Grid(bounds=(2.27, 2.43, 48.78, 48.94), resolution=16)


def test_one_cell_north_is_the_cell_height(paris):
    d = paris.resolution
    p = np.zeros((d, d))
    p[7, 9] = 1.0
    q = np.zeros((d, d))
    q[8, 9] = 1.0  # one row up = one cell north
    xs, ys = paris.cell_centres()
    expected = _haversine_m(xs[7, 9], ys[7, 9], xs[8, 9], ys[8, 9])
    emd = grid_emd_metres(p, q, paris)
    assert emd == pytest.approx(expected, rel=1e-3)
    assert emd == pytest.approx(_wgs84_metres_per_degree_latitude(48.86) * 0.01, rel=1e-3)
    assert emd == pytest.approx(latlon_cell_metres(paris)[1], rel=1e-12)


def test_one_cell_east_and_the_equirectangular_error(paris):
    d = paris.resolution
    xs, ys = paris.cell_centres()
    width = latlon_cell_metres(paris)[0]
    for row, rel in [(d // 2, 1e-3), (0, 3e-3), (d - 1, 3e-3)]:
        p = np.zeros((d, d))
        p[row, 4] = 1.0
        q = np.zeros((d, d))
        q[row, 5] = 1.0
        truth = _haversine_m(xs[row, 4], ys[row, 4], xs[row, 5], ys[row, 5])
        assert grid_emd_metres(p, q, paris) == pytest.approx(truth, rel=rel)
        assert grid_emd_metres(p, q, paris) == pytest.approx(width, rel=1e-12)


def test_metres_is_l1_in_local_metres(paris):
    d = paris.resolution
    width, height = latlon_cell_metres(paris)
    p = np.zeros((d, d))
    p[2, 3] = 1.0
    q = np.zeros((d, d))
    q[5, 1] = 1.0
    assert grid_emd_metres(p, q, paris) == pytest.approx(2 * width + 3 * height, rel=1e-12)


def test_metres_refuses_bad_grids():
    with pytest.raises(InvalidParameterError, match="grid"):
        latlon_cell_metres(Grid(bounds=(0.0, 10.0, 85.0, 89.0), resolution=4))  # square: >90
    with pytest.raises(InvalidParameterError, match="grid"):
        latlon_cell_metres((0.0, 1.0, 0.0, 1.0))  # type: ignore[arg-type]
    grid = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=8)
    with pytest.raises(InvalidDataError, match="grid is 8 x 8"):
        grid_emd_metres(np.ones((4, 4)), np.ones((4, 4)), grid)


# -- bad input ------------------------------------------------------------------------------

GOOD = np.ones((4, 4))


def _nan():
    a = np.ones((4, 4))
    a[1, 2] = np.nan
    return a


def _negative():
    a = np.ones((4, 4))
    a[2, 3] = -0.5
    return a


BAD = [
    (np.ones((4, 5)), "square"),
    (np.ones(16), "square"),
    (_negative(), "non-negative"),
    (_nan(), "non-finite"),
    (np.zeros((4, 4)), "positive total"),
    (np.ones((8, 8)), "same shape"),
    ("abc", "numeric"),
]

FUNCTIONS = [similarity, pearson, kl_divergence, grid_emd]


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize(("bad", "why"), BAD)
def test_bad_maps_name_the_argument(fn, bad, why):
    with pytest.raises(InvalidDataError, match=why) as second:
        fn(GOOD, bad)
    assert "q" in str(second.value)
    if why != "same shape":
        with pytest.raises(InvalidDataError, match=f"^p .*{why}|^p must"):
            fn(bad, GOOD)


@pytest.mark.parametrize(("bad", "why"), BAD[:5])
def test_heatmap_metrics_names_true_and_estimate(bad, why):
    with pytest.raises(InvalidDataError, match=f"^true .*{why}|^true must"):
        heatmap_metrics(bad, GOOD)
    with pytest.raises(InvalidDataError, match=f"^estimate .*{why}|^estimate must"):
        heatmap_metrics(GOOD, bad)


@pytest.mark.parametrize("cell", [(0.0, 1.0), (1.0, -2.0), (float("nan"), 1.0), 3.0, (1, 2, 3)])
def test_bad_cell(cell):
    with pytest.raises(InvalidParameterError, match="cell"):
        grid_emd(GOOD, GOOD, cell=cell)


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="method"):
        grid_emd(GOOD, GOOD, method="sinkhorn")
    with pytest.raises(InvalidParameterError, match="max_iter"):
        grid_emd(GOOD, GOOD, max_iter=0)
    with pytest.raises(InvalidParameterError, match="eps"):
        kl_divergence(GOOD, GOOD, eps=0.0)


def test_old_import_path_re_exports_the_evaluation_namespace():
    """Issue 25: the metrics moved to privot.evaluation.heatmaps; the old paths work."""
    import privot.evaluation.heatmaps as new
    import privot.heatmaps as package
    import privot.heatmaps.metrics as old

    assert old.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name)
    assert package.grid_emd is new.grid_emd and package.heatmap_metrics is new.heatmap_metrics
