"""The files, pictures and summaries of a private heatmap (privot.heatmaps.outputs/plot)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.heatmaps import outputs, private_heatmap
from privot.heatmaps.outputs import (
    PUBLISHABLE_FILES,
    blocks_to_matrix,
    cell_blocks,
    check_memory,
    memory_estimate,
    parse_size,
)

BOUNDS = (10.0, 12.0, 40.0, 42.0)  # longitude 10..12, latitude 40..42


def _corner_release(resolution=16, method="pyramid"):
    """Many users, all in the north-east cell: the release puts its peak there."""
    n = 400
    grid = Grid(BOUNDS, resolution)
    x = np.full(n, 11.99)
    y = np.full(n, 41.99)
    return private_heatmap(user=np.arange(n), x=x, y=y, grid=grid, epsilon=20.0,
                           method=method, rng=np.random.default_rng(5))


@pytest.fixture(scope="module")
def corner():
    return _corner_release()


def _read_cells(path):
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    header = path.read_text().splitlines()[0].split(",")
    return {name: data[:, i] for i, name in enumerate(header)}


# -- blocks, long table, GeoJSON -------------------------------------------------------


def test_cell_blocks_are_exact_and_maximal():
    rng = np.random.default_rng(0)
    a = np.zeros((16, 16))
    a[8:16, 0:8] = 0.01  # one 8x8 block
    a[0:4, 4:8] = 0.02  # one 4x4 block
    a[0, 0] = 0.5
    a[1:3, 12:14] = rng.random((2, 2)) + 0.1  # four single cells (not aligned as a block)
    row, col, side, value = cell_blocks(a)
    np.testing.assert_array_equal(blocks_to_matrix(row, col, side, value, 16), a)
    assert sorted(side.tolist()) == [1, 1, 1, 1, 1, 4, 8]
    assert (value * side**2).sum() == pytest.approx(a.sum())


def test_long_table_and_geojson_agree_with_the_matrix(corner, tmp_path):
    corner.save(tmp_path, png=False)
    dist = corner.distribution
    cells = _read_cells(tmp_path / "distribution_cells.csv")
    assert cells["mass"].sum() == pytest.approx(dist.sum(), rel=1e-8)
    rebuilt = blocks_to_matrix(cells["row"], cells["col"], cells["side"], cells["value"], 16)
    np.testing.assert_allclose(rebuilt, dist, rtol=1e-8, atol=0)
    # the centre of a chosen cell: the grid's own centre of (row, col)
    xs, ys = corner.grid.cell_centres()
    ones = np.flatnonzero(cells["side"] == 1)
    assert ones.size
    i = ones[0]
    r, c = int(cells["row"][i]), int(cells["col"][i])
    assert cells["x"][i] == pytest.approx(xs[r, c]) and cells["y"][i] == pytest.approx(ys[r, c])
    gj = json.loads((tmp_path / "distribution.geojson").read_text())
    assert gj["type"] == "FeatureCollection"
    masses = [f["properties"]["mass"] for f in gj["features"]]
    assert sum(masses) == pytest.approx(dist.sum(), rel=1e-8)
    assert len(gj["features"]) == cells["row"].size
    for f in gj["features"]:
        ring = f["geometry"]["coordinates"][0]
        assert ring[0] == ring[-1] and len(ring) == 5
        lon, lat = zip(*ring, strict=True)  # RFC 7946: [longitude, latitude]
        assert 10 <= min(lon) and max(lon) <= 12 and 40 <= min(lat) and max(lat) <= 42


def test_north_east_point_lands_in_the_north_east_cell(corner, tmp_path):
    dist = corner.distribution
    assert np.unravel_index(np.argmax(dist), dist.shape) == (15, 15)  # row 0 = south
    corner.save(tmp_path, png=False)
    cells = _read_cells(tmp_path / "distribution_cells.csv")
    top = int(np.argmax(cells["value"]))
    assert (cells["row"][top], cells["col"][top], cells["side"][top]) == (15, 15, 1)
    assert cells["x"][top] == pytest.approx(12 - 1 / 16)  # the centre of the NE cell
    assert cells["y"][top] == pytest.approx(42 - 1 / 16)
    gj = json.loads((tmp_path / "distribution.geojson").read_text())
    best = max(gj["features"], key=lambda f: f["properties"]["value"])
    ring = np.array(best["geometry"]["coordinates"][0])
    assert ring[:, 0].max() == pytest.approx(12.0) and ring[:, 1].max() == pytest.approx(42.0)
    assert ring[:, 0].min() == pytest.approx(12 - 2 / 16)
    assert ring[:, 1].min() == pytest.approx(42 - 2 / 16)


def test_geotiff_is_north_up_with_the_grid_transform(corner, tmp_path):
    rasterio = pytest.importorskip("rasterio")
    written = corner.save(tmp_path, png=False)
    assert "distribution.tif" in written["publishable"]
    with rasterio.open(tmp_path / "distribution.tif") as src:
        t = src.transform
        assert (t.a, t.b, t.c) == pytest.approx((2 / 16, 0.0, 10.0))
        assert (t.d, t.e, t.f) == pytest.approx((0.0, -2 / 16, 42.0))
        assert src.crs is not None and src.crs.to_epsg() == 4326
        band = src.read(1)
        # the pixel of the north-east corner point
        r, c = src.index(11.99, 41.99)
        assert (r, c) == (0, 15)
    np.testing.assert_array_equal(band, corner.distribution[::-1])
    assert band[r, c] == corner.distribution.max()


def test_missing_rasterio_skips_the_tif_with_a_note(corner, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "rasterio", None)  # import raises ImportError
    written = corner.save(tmp_path, png=False)
    assert "distribution.tif" not in written["publishable"]
    assert not (tmp_path / "distribution.tif").exists()
    assert [n for n in written["notes"] if "rasterio" in n and "privot[gis]" in n]


def test_large_grids_write_compressed_dense_files(corner, tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "DENSE_MAX_RESOLUTION", 16)
    written = corner.save(tmp_path, png=False)
    names = set(written["publishable"])
    assert {"distribution.npz", "heatmap.npz", "distribution_cells.csv"} <= names
    assert not names & {"distribution.npy", "distribution.csv", "heatmap.npy"}
    np.testing.assert_array_equal(np.load(tmp_path / "distribution.npz")["distribution"],
                                  corner.distribution)
    assert any("compressed" in n for n in written["notes"])
    release = json.loads((tmp_path / "release.json").read_text())
    assert release["outputs"]["dense"].startswith("npz")


def test_save_writes_only_known_files_and_splits_audiences(corner, tmp_path):
    pytest.importorskip("matplotlib")
    written = corner.save(tmp_path)
    on_disk = {p.name for p in tmp_path.iterdir()}
    assert on_disk == set(written["publishable"]) | set(written["curator"])
    assert set(written["publishable"]) <= set(PUBLISHABLE_FILES)
    assert written["curator"] == ["curator-report.json"]
    release = json.loads((tmp_path / "release.json").read_text())
    assert "n_points" not in json.dumps(release) and "seconds" not in release
    assert release["publishable_files"] == written["publishable"]
    assert "southern" in release["outputs"]["orientation"]
    report = json.loads((tmp_path / "curator-report.json").read_text())
    assert report["n_users"] == 400 and "NOT differentially private" in report["warning"]


# -- memory ------------------------------------------------------------------------------


def test_memory_refusal_names_resolution_estimate_and_limit():
    assert memory_estimate(1024) == outputs.MEMORY_COPIES * 8 * 1024**2
    with pytest.raises(InvalidParameterError) as exc:
        check_memory(16384, max_memory="1GB")
    msg = str(exc.value)
    assert exc.value.name == "resolution" and "16384" in msg
    assert "32 GiB" in msg and "954 MiB" in msg and "max_memory" in msg
    assert check_memory(256) == memory_estimate(256)  # the default limit lets it through
    assert parse_size("1.5GiB") == int(1.5 * 2**30) and parse_size(10) == 10
    with pytest.raises(InvalidParameterError):
        parse_size("lots")


def test_private_heatmap_refuses_before_reading_the_data():
    # empty arrays would be refused as data; the memory check comes first
    with pytest.raises(InvalidParameterError, match="resolution=16384"):
        private_heatmap(user=np.array([]), x=np.array([]), y=np.array([]),
                        grid=Grid(BOUNDS, 16384), epsilon=1.0, max_memory="4GB")


# -- repr, to_dict ---------------------------------------------------------------------


def test_repr_is_short_and_to_dict_is_json(corner):
    text = repr(corner)
    assert text.startswith("HeatmapResult(pyramid, epsilon=20, grid=16x16")
    assert len(text) < 200 and "array" not in text and "SEEDED" in text
    assert len(repr(corner.release)) < 150
    body = corner.to_dict()
    json.dumps(body)
    assert body["summary"]["mass"] == pytest.approx(1.0)
    assert "curator_only" not in body and "n_points" not in json.dumps(body)
    full = corner.to_dict(curator=True)
    json.dumps(full)
    assert full["curator_only"]["n_users"] == 400


# -- pictures ----------------------------------------------------------------------------


def _hubs_map(resolution=128, sigma_cells=3.0):
    """One hub of 60% and five of 8% each, the same spread (the issue's picture)."""
    ax = (np.arange(resolution) + 0.5) / resolution
    xx, yy = np.meshgrid(ax, ax)
    centres = [(0.5, 0.5, 0.60), (0.15, 0.2, 0.08), (0.85, 0.2, 0.08), (0.15, 0.8, 0.08),
               (0.85, 0.8, 0.08), (0.5, 0.9, 0.08)]
    s = sigma_cells / resolution
    m = np.zeros((resolution, resolution))
    for cx, cy, w in centres:
        bump = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s))
        m += w * bump / bump.sum()
    return m, centres


def test_default_scale_shows_the_eight_percent_hubs():
    pytest.importorskip("matplotlib")
    from privot.heatmaps.plot import DEFAULT_SCALE, color_norm

    m, centres = _hubs_map()
    vmax = m.max()
    peaks = [m[int(cy * 128), int(cx * 128)] for cx, cy, _ in centres[1:]]
    shown = [float(color_norm(DEFAULT_SCALE, vmax)(p)) for p in peaks]
    assert min(shown) >= 0.3, shown
    linear = [float(color_norm("linear", vmax)(p)) for p in peaks]
    assert max(linear) < 0.2  # the issue: invisible on a linear scale


@pytest.mark.parametrize("scale", ["linear", "sqrt", "log"])
def test_plot_scales_labels_and_colorbar_height(corner, scale):
    pytest.importorskip("matplotlib")
    fig = corner.plot(scale=scale)
    ax = fig.axes[0]
    cax = ax.child_axes[0]
    assert ax.get_xlabel() == "x (longitude)" and ax.get_ylabel() == "y (latitude)"
    assert scale in cax.get_ylabel()
    assert "sigma = 2 cells" in ax.get_title()
    fig.canvas.draw()
    h_map = ax.get_window_extent().height
    h_bar = cax.get_window_extent().height
    assert h_bar == pytest.approx(h_map, rel=1e-6)


def test_plot_on_given_axes_and_bad_scale(corner):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert corner.plot(ax, which="distribution", scale="log") is fig
    assert "unsmoothed" in ax.get_title()
    with pytest.raises(InvalidParameterError):
        corner.plot(scale="cubic")
