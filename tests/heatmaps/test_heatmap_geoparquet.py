"""``distribution.parquet``: the released heatmap as GeoParquet 1.1 (issue 29)."""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest

from privot.errors import InvalidDataError
from privot.grid import Grid
from privot.heatmaps import private_heatmap
from privot.heatmaps.geoparquet import (
    EPSG_4326_PROJJSON,
    GEOPARQUET_COLUMNS,
    read_wkb_polygons,
    rectangles_wkb,
)

pq = pytest.importorskip("pyarrow.parquet")

BOUNDS = (10.0, 12.0, 40.0, 42.0)  # longitude 10..12, latitude 40..42


def _release(bounds=BOUNDS, resolution=16, method="pyramid", seed=3):
    rng = np.random.default_rng(1)
    n = 500
    x = rng.uniform(bounds[0], bounds[1], n)
    y = rng.uniform(bounds[2], bounds[3], n)
    return private_heatmap(user=rng.integers(0, 90, n), x=x, y=y,
                           grid=Grid(bounds, resolution), epsilon=2.0, method=method,
                           rng=np.random.default_rng(seed))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    result = _release()
    folder = tmp_path_factory.mktemp("gp")
    written = result.save(folder, png=False)
    return result, folder, written


def _decode(buf):
    """A WKB polygon decoded with struct alone (independent of the library)."""
    assert buf[0] == 1  # little endian
    kind, n_rings = struct.unpack_from("<II", buf, 1)
    assert kind == 3 and n_rings == 1
    (n_points,) = struct.unpack_from("<I", buf, 9)
    xy = struct.unpack_from(f"<{2 * n_points}d", buf, 13)
    assert len(buf) == 13 + 16 * n_points
    return np.array(xy).reshape(n_points, 2)


def test_geo_metadata(saved):
    result, folder, written = saved
    assert "distribution.parquet" in written["publishable"]
    rel = json.loads((folder / "release.json").read_text())
    assert "distribution.parquet" in rel["publishable_files"]
    pf = pq.ParquetFile(folder / "distribution.parquet")
    geo = json.loads(pf.schema_arrow.metadata[b"geo"])
    assert geo["version"] == "1.1.0"
    assert geo["primary_column"] == "geometry"
    col = geo["columns"]["geometry"]
    assert col["encoding"] == "WKB"
    assert col["geometry_types"] == ["Polygon"]
    assert col["crs"] == EPSG_4326_PROJJSON  # lon/lat bounds, as the GeoTIFF says
    assert col["crs"]["id"] == {"authority": "EPSG", "code": 4326}
    table = pf.read()
    assert tuple(table.column_names) == GEOPARQUET_COLUMNS
    x0, y0 = min(table.column("x_min").to_pylist()), min(table.column("y_min").to_pylist())
    x1, y1 = max(table.column("x_max").to_pylist()), max(table.column("y_max").to_pylist())
    assert col["bbox"] == [x0, y0, x1, y1]
    assert BOUNDS[0] <= x0 < x1 <= BOUNDS[1] and BOUNDS[2] <= y0 < y1 <= BOUNDS[3]
    # no timestamp anywhere in the file's key-value metadata
    assert set(pf.metadata.metadata) <= {b"geo", b"ARROW:schema"}


def test_crs_projjson_is_epsg_4326_for_rasterio():
    crs_mod = pytest.importorskip("rasterio.crs")
    assert crs_mod.CRS.from_user_input(json.dumps(EPSG_4326_PROJJSON)).to_epsg() == 4326


def test_polygons_are_the_cells_bounds_and_masses_the_csvs(saved):
    result, folder, _ = saved
    table = pq.read_table(folder / "distribution.parquet")
    cols = {n: np.asarray(table.column(n).to_pylist()) for n in table.column_names
            if n != "geometry"}
    grid = result.grid
    w, h = grid.cell_width, grid.cell_height
    dense = np.loadtxt(folder / "distribution.csv", delimiter=",")
    assert table.num_rows > 0
    covered = np.zeros(dense.shape, dtype=int)
    for i, buf in enumerate(table.column("geometry").to_pylist()):
        ring = _decode(buf)
        r, c, s = int(cols["row"][i]), int(cols["col"][i]), int(cols["side"][i])
        xa, ya = BOUNDS[0] + c * w, BOUNDS[2] + r * h
        xb, yb = BOUNDS[0] + (c + s) * w, BOUNDS[2] + (r + s) * h
        expected = [[xa, ya], [xb, ya], [xb, yb], [xa, yb], [xa, ya]]  # counter-clockwise
        np.testing.assert_allclose(ring, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose([cols["x_min"][i], cols["y_min"][i], cols["x_max"][i],
                                    cols["y_max"][i]], [xa, ya, xb, yb], atol=1e-12)
        # the library's decoder agrees
        kind, polys = read_wkb_polygons(buf)
        assert kind == "Polygon" and len(polys) == 1
        np.testing.assert_array_equal(polys[0][0], ring)
        # the mass column is the sum of the block's cells in distribution.csv
        assert cols["mass"][i] == pytest.approx(dense[r:r + s, c:c + s].sum(), rel=1e-8)
        covered[r:r + s, c:c + s] += 1
    # every non-zero cell in exactly one row, no zero cell
    np.testing.assert_array_equal(covered, (result.distribution != 0).astype(int))
    assert cols["mass"].sum() == pytest.approx(1.0, rel=1e-9)


def test_same_rows_as_the_long_table(saved):
    _, folder, _ = saved
    table = pq.read_table(folder / "distribution.parquet")
    data = np.loadtxt(folder / "distribution_cells.csv", delimiter=",", skiprows=1, ndmin=2)
    header = (folder / "distribution_cells.csv").read_text().splitlines()[0].split(",")
    for j, name in enumerate(header):
        np.testing.assert_allclose(np.asarray(table.column(name).to_pylist(), dtype=float),
                                   data[:, j], rtol=1e-8, atol=1e-12)


def test_bytes_are_deterministic(tmp_path):
    result = _release(method="laplace")
    result.save(tmp_path / "a", png=False)
    result.save(tmp_path / "b", png=False)
    a = (tmp_path / "a" / "distribution.parquet").read_bytes()
    assert a == (tmp_path / "b" / "distribution.parquet").read_bytes()


def test_non_geographic_bounds_have_an_unknown_crs(tmp_path):
    result = _release(bounds=(0.0, 5000.0, 0.0, 5000.0), resolution=8)
    result.save(tmp_path, png=False)
    geo = json.loads(pq.read_schema(tmp_path / "distribution.parquet").metadata[b"geo"])
    # written as null (unknown): a missing crs would mean OGC:CRS84 in GeoParquet
    assert "crs" in geo["columns"]["geometry"]
    assert geo["columns"]["geometry"]["crs"] is None


def test_skipped_with_a_note_without_pyarrow(tmp_path, monkeypatch):
    result = _release(resolution=8)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    written = result.save(tmp_path, png=False)
    assert not (tmp_path / "distribution.parquet").exists()
    assert "distribution.parquet" not in written["publishable"]
    assert any(n.startswith("distribution.parquet skipped: pyarrow is not installed")
               for n in written["notes"])


# -- WKB ----------------------------------------------------------------------------------


def test_rectangles_wkb_round_trip():
    data, size = rectangles_wkb([0.0, 2.0], [1.0, 3.0], [0.5, 4.0], [1.5, 5.0])
    assert size == 93 and len(data) == 2 * 93
    kind, polys = read_wkb_polygons(data[93:])
    assert kind == "Polygon"
    np.testing.assert_array_equal(polys[0][0], [[2, 3], [4, 3], [4, 5], [2, 5], [2, 3]])


def test_read_wkb_big_endian_multipolygon_and_z():
    ring = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 0.0)]

    def poly_be(points):
        out = struct.pack(">BIII", 0, 3, 1, len(points))
        return out + b"".join(struct.pack(">dd", *p) for p in points)

    multi = struct.pack(">BII", 0, 6, 2) + poly_be(ring) + poly_be(ring[::-1])
    kind, polys = read_wkb_polygons(multi)
    assert kind == "MultiPolygon" and len(polys) == 2
    np.testing.assert_array_equal(polys[1][0], np.array(ring[::-1]))
    # ISO Polygon Z (1003): z dropped
    z = struct.pack("<BIII", 1, 1003, 1, 4) + b"".join(
        struct.pack("<ddd", x, y, 9.0) for x, y in ring)
    kind, polys = read_wkb_polygons(z)
    np.testing.assert_array_equal(polys[0][0], np.array(ring))


@pytest.mark.parametrize("buf", [
    struct.pack("<BIdd", 1, 1, 0.0, 0.0),  # a Point
    struct.pack("<BIII", 1, 3, 1, 5),  # truncated
    b"\x07abc",  # not WKB
])
def test_read_wkb_refuses_other_geometries(buf):
    with pytest.raises(InvalidDataError):
        read_wkb_polygons(buf)
