"""``privot heatmap --tessellation FILE``: mass per public tile, end to end (issue 29)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")


@pytest.fixture
def points(tmp_path):
    rng = np.random.default_rng(3)
    n = 500
    frame = pd.DataFrame({"uid": rng.integers(0, 90, n),
                          "lon": rng.uniform(10.0, 12.0, n),
                          "lat": rng.uniform(40.0, 42.0, n)})
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return frame, path


def _box(x0, x1, y0, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]


@pytest.fixture
def quadrants(tmp_path):
    feats = [{"type": "Feature", "properties": {"district": name},
              "geometry": {"type": "Polygon",
                           "coordinates": [_box(10 + i, 11 + i, 40 + j, 41 + j)]}}
             for name, i, j in (("sw", 0, 0), ("se", 1, 0), ("nw", 0, 1), ("ne", 1, 1))]
    path = tmp_path / "districts.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    return path


def _argv(path, out, *extra):
    return ["heatmap", str(path), "--bounds", "10", "12", "40", "42", "--epsilon", "1",
            "--resolution", "16", "--user-column", "uid", "--columns", "lon,lat",
            "--seed", "7", "-o", str(out), *extra]


def test_end_to_end(points, quadrants, tmp_path, capsys):
    frame, path = points
    out = tmp_path / "cli"
    assert main(_argv(path, out, "--tessellation", str(quadrants),
                      "--tessellation-id", "district")) == 0
    stdout = capsys.readouterr().out
    assert "tiles.csv" in stdout and "tiles.geojson" in stdout
    dist = np.load(out / "distribution.npy")
    sums = {"sw": dist[:8, :8].sum(), "se": dist[:8, 8:].sum(), "nw": dist[8:, :8].sum(),
            "ne": dist[8:, 8:].sum()}
    lines = (out / "tiles.csv").read_text().splitlines()
    assert lines[0] == "tile_id,mass"
    got = {a: float(b) for a, b in (line.split(",") for line in lines[1:])}
    assert got == pytest.approx(sums, rel=1e-10)
    gj = json.loads((out / "tiles.geojson").read_text())
    assert {f["properties"]["district"]: f["properties"]["mass"]
            for f in gj["features"]} == pytest.approx(sums, rel=1e-12)
    rel = json.loads((out / "release.json").read_text())
    assert rel["tessellation"]["file"] == "districts.geojson"
    assert rel["tessellation"]["sha256"] == hashlib.sha256(quadrants.read_bytes()).hexdigest()
    assert rel["tessellation"]["ids"] == "property district"
    assert rel["mass_outside_tessellation"] == pytest.approx(0.0, abs=1e-12)
    assert {"tiles.csv", "tiles.geojson", "distribution.parquet"} <= set(
        rel["publishable_files"])
    # the same tiles as the library's HeatmapResult.save with the same tessellation
    from privot.heatmaps import Grid, private_heatmap

    result = private_heatmap(frame, user="uid", x="lon", y="lat",
                             grid=Grid((10, 12, 40, 42), 16), epsilon=1.0, gamma=2**-0.5,
                             rng=np.random.default_rng(7))
    lib = tmp_path / "lib"
    result.save(lib, tessellation=quadrants, tessellation_id="district")
    for name in ("tiles.csv", "tiles.geojson", "distribution.parquet"):
        assert (lib / name).read_bytes() == (out / name).read_bytes(), name
    rel_lib = json.loads((lib / "release.json").read_text())
    rel.pop("engine")
    assert rel == rel_lib


def _one_error_line(capsys, *needles):
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error" in line]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), err
    assert "Traceback" not in "\n".join(err)


def _bad(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize("make,needles", [
    (lambda t: t / "nope.geojson", ["--tessellation", "nope.geojson", "no such file"]),
    (lambda t: _bad(t, "a.geojson", "{oops"), ["--tessellation", "not valid GeoJSON"]),
    (lambda t: _bad(t, "b.geojson", {"type": "FeatureCollection", "features": []}),
     ["--tessellation", "empty FeatureCollection"]),
    (lambda t: _bad(t, "c.geojson", {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {},
         "geometry": {"type": "Point", "coordinates": [10.5, 40.5]}}]}),
     ["--tessellation", "Point geometry"]),
    (lambda t: _bad(t, "d.geojson", {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {},
         "geometry": {"type": "Polygon", "coordinates": [_box(0, 1, 0, 1)]}}]}),
     ["--tessellation", "do not meet the grid's bounds"]),
])
def test_refusals_before_reading(tmp_path, capsys, make, needles):
    out = tmp_path / "o"
    # the input does not exist: the refusal comes before the data is read
    assert main(_argv(tmp_path / "missing.csv", out, "--tessellation",
                      str(make(tmp_path)))) == 2
    _one_error_line(capsys, *needles)
    assert not out.exists()


def test_id_flag_refusals(tmp_path, capsys, quadrants):
    out = tmp_path / "o"
    assert main(_argv(tmp_path / "missing.csv", out, "--tessellation-id", "district")) == 2
    _one_error_line(capsys, "--tessellation-id", "only with --tessellation")
    assert main(_argv(tmp_path / "missing.csv", out, "--tessellation", str(quadrants),
                      "--tessellation-id", "code")) == 2
    _one_error_line(capsys, "--tessellation", "no scalar property 'code'")
    assert not out.exists()


def test_refused_tessellation_charges_nothing(points, tmp_path, capsys):
    from privot.privacy.ledger import Ledger

    _, path = points
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--epsilon", "5"]) == 0
    capsys.readouterr()
    bad = _bad(tmp_path, "x.geojson", {"type": "FeatureCollection", "features": []})
    out = tmp_path / "o"
    assert main(_argv(path, out, "--tessellation", str(bad), "--ledger", str(ledger))) == 2
    _one_error_line(capsys, "--tessellation")
    assert Ledger.open(ledger).releases() == []
    assert not out.exists()
