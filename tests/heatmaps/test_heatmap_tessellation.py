"""A public tessellation: the released heatmap's mass per tile (issue 29)."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.heatmaps import private_heatmap
from privot.heatmaps.tessellation import (
    AREA_RULE,
    Tessellation,
    aggregate_to_tiles,
    polygon_area_in_boxes,
    read_tessellation,
    ring_area_in_boxes,
)

BOUNDS = (10.0, 12.0, 40.0, 42.0)  # longitude 10..12, latitude 40..42
D = 16


def _release(method="pyramid"):
    rng = np.random.default_rng(2)
    n = 600
    return private_heatmap(user=rng.integers(0, 120, n), x=rng.uniform(10, 12, n),
                           y=rng.uniform(40, 42, n), grid=Grid(BOUNDS, D), epsilon=2.0,
                           method=method, rng=np.random.default_rng(4))


@pytest.fixture(scope="module")
def release():
    return _release()


def _box(x0, x1, y0, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]


def _quadrants(ids=True):
    """Four quadrant tiles over the bounds: (name, x-half, y-half)."""
    feats = []
    for name, i, j in (("sw", 0, 0), ("se", 1, 0), ("nw", 0, 1), ("ne", 1, 1)):
        props = {"name": name, "id": f"t-{name}"} if ids else {"name": name}
        feats.append({"type": "Feature", "properties": props,
                      "geometry": {"type": "Polygon",
                                   "coordinates": [_box(10 + i, 11 + i, 40 + j, 41 + j)]}})
    return {"type": "FeatureCollection", "features": feats}


def _write(tmp_path, obj, name="tiles.geojson"):
    path = tmp_path / name
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return path


def _quadrant_sums(dist):
    h = D // 2  # row 0 = south, col 0 = west
    return {"sw": dist[:h, :h].sum(), "se": dist[:h, h:].sum(), "nw": dist[h:, :h].sum(),
            "ne": dist[h:, h:].sum()}


# -- the masses ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pyramid", "laplace"])
def test_quadrant_tiles_get_the_sums_of_their_cells(tmp_path, method):
    result = _release(method)
    path = _write(tmp_path, _quadrants())
    tiles = aggregate_to_tiles(result, path, id_property="name")
    sums = _quadrant_sums(result.distribution)
    assert tiles.ids == ("sw", "se", "nw", "ne")
    for name, mass in zip(tiles.ids, tiles.mass, strict=True):
        assert mass == pytest.approx(sums[name], rel=1e-12, abs=1e-15)
    assert tiles.mass_outside == pytest.approx(0.0, abs=1e-12)
    assert tiles.rule == AREA_RULE


def test_cut_cells_are_shared_by_area(release):
    # a tile covering the western half of column 0 and the row band 4..8 fully
    grid = release.grid
    w, h = grid.cell_width, grid.cell_height
    tess = Tessellation(
        ids=("half", "band"),
        polygons=((tuple([np.array(_box(10, 10 + w / 2, 40, 42))[:-1]]),),
                  (tuple([np.array(_box(10 + w, 12, 40 + 4 * h, 40 + 8 * h))[:-1]]),)),
        features=({"type": "Feature", "geometry": None, "properties": {}},) * 2,
        name=None, sha256=None, id_source="index", file_format="geojson")
    tiles = aggregate_to_tiles(release, tess)
    dist = release.distribution
    assert tiles.mass[0] == pytest.approx(dist[:, 0].sum() / 2, rel=1e-10)
    assert tiles.mass[1] == pytest.approx(dist[4:8, 1:].sum(), rel=1e-10)
    assert tiles.mass_outside == pytest.approx(dist.sum() - tiles.mass.sum(), abs=1e-12)


def test_mass_outside_a_partial_tessellation(tmp_path, release):
    fc = _quadrants()
    fc["features"] = fc["features"][:2]  # the southern half only
    tiles = aggregate_to_tiles(release, _write(tmp_path, fc))
    assert tiles.ids == ("t-sw", "t-se")  # the default id property
    sums = _quadrant_sums(release.distribution)
    assert tiles.mass_outside == pytest.approx(sums["nw"] + sums["ne"], rel=1e-10)


def test_exact_areas_of_rings_holes_and_multipolygons():
    tri = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])  # area 2, counter-clockwise
    boxes = np.array([[-1, -1, 3, 3], [0, 0, 1, 1], [1, 1, 2, 2], [5, 5, 6, 6]], float)
    np.testing.assert_allclose(ring_area_in_boxes(tri, boxes), [2.0, 1.0, 0.0, 0.0],
                               atol=1e-15)
    np.testing.assert_allclose(ring_area_in_boxes(tri[::-1], boxes[:1]), [-2.0])
    # x + y <= 2 over [0.5, 1.5] x [0, 1]: 0.5 (full) + 0.375 (a trapezoid)
    np.testing.assert_allclose(ring_area_in_boxes(tri, [[0.5, 0, 1.5, 1]]), [0.875])
    outer = np.array(_box(0, 4, 0, 4))[:-1]
    hole = np.array(_box(1, 2, 1, 2))[:-1]  # same orientation: still a hole
    square = [(outer, hole)]
    assert polygon_area_in_boxes(square, [[0, 0, 4, 4]])[0] == pytest.approx(15.0)
    assert polygon_area_in_boxes(square, [[0, 0, 1.5, 1.5]])[0] == pytest.approx(
        1.5**2 - 0.25)
    multi = [(outer,), (np.array(_box(10, 11, 0, 1))[:-1],)]
    assert polygon_area_in_boxes(multi, [[-1, -1, 12, 5]])[0] == pytest.approx(17.0)


# -- reading ------------------------------------------------------------------------------


def test_ids_default_feature_id_and_index(tmp_path):
    fc = _quadrants(ids=False)
    t = read_tessellation(_write(tmp_path, fc))
    assert t.ids == (0, 1, 2, 3) and t.id_source == "index"
    for i, f in enumerate(fc["features"]):
        f["id"] = 100 + i
    t = read_tessellation(_write(tmp_path, fc))
    assert t.ids == (100, 101, 102, 103) and t.id_source == "feature id"
    t = read_tessellation(_write(tmp_path, fc), id_property="name")
    assert t.ids == ("sw", "se", "nw", "ne") and t.id_source == "property name"
    assert len(t) == 4 and t.bounds == (10.0, 12.0, 40.0, 42.0)


def test_multipolygon_features(tmp_path, release):
    fc = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"id": "diag"},
         "geometry": {"type": "MultiPolygon", "coordinates": [
             [_box(10, 11, 40, 41)], [_box(11, 12, 41, 42)]]}}]}
    tiles = aggregate_to_tiles(release, _write(tmp_path, fc))
    sums = _quadrant_sums(release.distribution)
    assert tiles.mass[0] == pytest.approx(sums["sw"] + sums["ne"], rel=1e-10)


def _geoparquet(tmp_path, fc, name="tiles.parquet", geo=True, encoding="WKB"):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    def wkb(geom):
        polys = ([geom["coordinates"]] if geom["type"] == "Polygon"
                 else geom["coordinates"])
        parts = []
        for rings in polys:
            b = struct.pack("<BII", 1, 3, len(rings))
            for ring in rings:
                b += struct.pack("<I", len(ring)) + b"".join(struct.pack("<dd", *p)
                                                              for p in ring)
            parts.append(b)
        if geom["type"] == "Polygon":
            return parts[0]
        return struct.pack("<BII", 1, 6, len(parts)) + b"".join(parts)

    feats = fc["features"]
    cols = {"name": pa.array([f["properties"]["name"] for f in feats]),
            "geometry": pa.array([wkb(f["geometry"]) for f in feats], type=pa.binary())}
    meta = {"version": "1.1.0", "primary_column": "geometry",
            "columns": {"geometry": {"encoding": encoding,
                                     "geometry_types": ["Polygon", "MultiPolygon"]}}}
    table = pa.table(cols)
    if geo:
        table = table.replace_schema_metadata({b"geo": json.dumps(meta).encode()})
    path = tmp_path / name
    pq.write_table(table, path)
    return path


def test_geoparquet_tessellation_gives_the_same_masses(tmp_path, release):
    path = _geoparquet(tmp_path, _quadrants())
    t = read_tessellation(path, id_property="name")
    assert t.file_format == "geoparquet" and t.ids == ("sw", "se", "nw", "ne")
    tiles = aggregate_to_tiles(release, t)
    sums = _quadrant_sums(release.distribution)
    np.testing.assert_allclose(tiles.mass, [sums[n] for n in t.ids], rtol=1e-12)
    assert t.features[0]["geometry"]["type"] == "Polygon"


# -- save ---------------------------------------------------------------------------------


def test_save_writes_tiles_and_records_the_tessellation(tmp_path, release):
    path = _write(tmp_path, _quadrants())
    out = tmp_path / "out"
    written = release.save(out, png=False, tessellation=path, tessellation_id="name")
    assert {"tiles.csv", "tiles.geojson"} <= set(written["publishable"])
    rel = json.loads((out / "release.json").read_text())
    assert {"tiles.csv", "tiles.geojson"} <= set(rel["publishable_files"])
    assert rel["tessellation"]["file"] == "tiles.geojson"
    assert rel["tessellation"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rel["tessellation"]["n_tiles"] == 4
    assert rel["tessellation"]["ids"] == "property name"
    assert rel["mass_outside_tessellation"] == pytest.approx(0.0, abs=1e-12)
    assert "tiles.csv" in rel["outputs"]
    lines = (out / "tiles.csv").read_text().splitlines()
    assert lines[0] == "tile_id,mass"
    sums = _quadrant_sums(release.distribution)
    got = {line.split(",")[0]: float(line.split(",")[1]) for line in lines[1:]}
    assert got == pytest.approx(sums, rel=1e-10)
    gj = json.loads((out / "tiles.geojson").read_text())
    assert [f["properties"]["name"] for f in gj["features"]] == ["sw", "se", "nw", "ne"]
    for f in gj["features"]:
        assert f["properties"]["mass"] == pytest.approx(sums[f["properties"]["name"]],
                                                        rel=1e-12)
        assert f["geometry"]["type"] == "Polygon"
    # without a tessellation: no tiles, no record
    plain = tmp_path / "plain"
    release.save(plain, png=False)
    rel = json.loads((plain / "release.json").read_text())
    assert "tessellation" not in rel and "mass_outside_tessellation" not in rel
    assert not (plain / "tiles.csv").exists()


def test_save_refuses_before_writing_anything(tmp_path, release):
    out = tmp_path / "out"
    with pytest.raises(InvalidParameterError):
        release.save(out, png=False, tessellation=tmp_path / "missing.geojson")
    with pytest.raises(InvalidParameterError):
        release.save(out, png=False, tessellation_id="name")
    assert not out.exists()


# -- refusals -----------------------------------------------------------------------------

_POINT = {"type": "Point", "coordinates": [10.5, 40.5]}
_LINE = {"type": "LineString", "coordinates": [[10, 40], [11, 41]]}


def _fc(*geoms, props=None):
    return {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": props or {}, "geometry": g} for g in geoms]}


@pytest.mark.parametrize("content,needle", [
    ("{not json", "not valid GeoJSON"),
    (b"\xff\xfe\x00garbage", "not valid GeoJSON"),
    ({"type": "Feature", "geometry": None, "properties": {}}, "FeatureCollection"),
    ([1, 2], "FeatureCollection"),
    ({"type": "FeatureCollection", "features": []}, "empty"),
    (_fc(_POINT), "Point geometry"),
    (_fc({"type": "Polygon", "coordinates": [_box(10, 11, 40, 41)]}, _LINE),
     "feature 1 has a LineString"),
    (_fc(None), "no geometry"),
    (_fc({"type": "Polygon", "coordinates": []}), "empty polygon"),
    (_fc({"type": "Polygon", "coordinates": [[[10, 40], [11, 41], [10, 40]]]}),
     "fewer than 3"),
    (_fc({"type": "GeometryCollection", "geometries": []}), "GeometryCollection"),
    # a NaN property would stop tiles.geojson (written strictly) after distribution.*
    (_fc({"type": "Polygon", "coordinates": [_box(10, 11, 40, 41)]},
         props={"pop": float("nan")}), "NaN and Infinity are not JSON"),
])
def test_invalid_files_are_refused_in_one_line(tmp_path, content, needle):
    path = tmp_path / "bad.geojson"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InvalidParameterError) as info:
        read_tessellation(path)
    message = str(info.value)
    assert needle in message and "\n" not in message
    assert message.startswith("tessellation ")


def test_missing_file_and_ids_are_refused(tmp_path):
    with pytest.raises(InvalidParameterError, match="no such file"):
        read_tessellation(tmp_path / "nope.geojson")
    path = _write(tmp_path, _quadrants())
    with pytest.raises(InvalidParameterError, match="no scalar property 'code'"):
        read_tessellation(path, id_property="code")
    fc = _quadrants()
    fc["features"][2]["properties"]["name"] = "sw"
    with pytest.raises(InvalidParameterError, match="same id 'sw'"):
        read_tessellation(_write(tmp_path, fc), id_property="name")


def test_tiles_away_from_the_bounds_are_refused(tmp_path, release):
    # projected metres for lon/lat bounds
    fc = _fc({"type": "Polygon", "coordinates": [_box(5e5, 6e5, 4.4e6, 4.5e6)]})
    with pytest.raises(InvalidParameterError, match="do not meet the grid's bounds"):
        aggregate_to_tiles(release, _write(tmp_path, fc))


def test_geoparquet_refusals(tmp_path):
    pytest.importorskip("pyarrow")
    no_geo = _geoparquet(tmp_path, _quadrants(), name="a.parquet", geo=False)
    with pytest.raises(InvalidParameterError, match="'geo' metadata"):
        read_tessellation(no_geo)
    wkt = _geoparquet(tmp_path, _quadrants(), name="b.parquet", encoding="WKT")
    with pytest.raises(InvalidParameterError, match="only WKB"):
        read_tessellation(wkt)
    fc = _quadrants()
    fc["features"] = []
    empty = _geoparquet(tmp_path, fc, name="c.parquet")
    with pytest.raises(InvalidParameterError, match="empty GeoParquet"):
        read_tessellation(empty)
    broken = tmp_path / "d.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(InvalidParameterError, match="not a readable Parquet"):
        read_tessellation(broken)
