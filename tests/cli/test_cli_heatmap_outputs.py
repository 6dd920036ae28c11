"""``privot heatmap``: GIS outputs, the memory refusal, --scale, and one code path with
``HeatmapResult.save``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture
def points(tmp_path):
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame({"uid": rng.integers(0, 80, n),
                          "lon": rng.uniform(10.0, 12.0, n),
                          "lat": rng.uniform(40.0, 42.0, n)})
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return frame, path


def _argv(path, out, *extra):
    return ["heatmap", str(path), "--bounds", "10", "12", "40", "42", "--epsilon", "1",
            "--resolution", "16", "--user-column", "uid", "--x-column", "lon",
            "--y-column", "lat", "--seed", "7", "-o", str(out), *extra]


def test_cli_writes_what_save_writes(points, tmp_path, capsys):
    from privot.heatmaps import Grid, private_heatmap

    frame, path = points
    out = tmp_path / "cli"
    assert main(_argv(path, out)) == 0
    stdout = capsys.readouterr().out
    names = {p.name for p in out.iterdir()}
    expected = {"distribution.npy", "distribution.csv", "distribution_cells.csv",
                "distribution.geojson", "heatmap.npy", "heatmap.png", "release.json",
                "curator-report.json"}
    assert expected <= names
    for name in ("distribution_cells.csv", "distribution.geojson"):
        assert name in stdout
    # the same release through the library, saved by HeatmapResult.save
    result = private_heatmap(frame, user="uid", x="lon", y="lat",
                             grid=Grid((10, 12, 40, 42), 16), epsilon=1.0,
                             gamma=2**-0.5,  # the CLI's --gamma default, bit for bit
                             rng=np.random.default_rng(7))
    lib = tmp_path / "lib"
    written = result.save(lib)
    assert {p.name for p in lib.iterdir()} == names
    assert set(written["publishable"]) | set(written["curator"]) == names
    np.testing.assert_array_equal(np.load(lib / "distribution.npy"),
                                  np.load(out / "distribution.npy"))
    assert ((lib / "distribution_cells.csv").read_text()
            == (out / "distribution_cells.csv").read_text())
    rel_cli = json.loads((out / "release.json").read_text())
    rel_lib = json.loads((lib / "release.json").read_text())
    assert rel_cli.pop("engine") == "duckdb"
    assert rel_cli == rel_lib
    assert rel_cli["png_scale"] == "sqrt"


def test_scale_flag(points, tmp_path):
    _, path = points
    out = tmp_path / "o"
    assert main(_argv(path, out, "--scale", "log")) == 0
    assert json.loads((out / "release.json").read_text())["png_scale"] == "log"


@pytest.mark.parametrize("extra,needles", [
    (["--resolution", "16384", "--max-memory", "1GB"],
     ["--resolution=16384", "32 GiB", "--max-memory"]),
    (["--max-memory", "lots"], ["--max-memory"]),
    (["--scale", "cubic"], ["--scale"]),
])
def test_refusals_are_one_line_exit_2_before_reading(tmp_path, capsys, extra, needles):
    # the input does not exist: the refusal comes before the data is read
    out = tmp_path / "o"
    assert main(_argv(tmp_path / "missing.csv", out, *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error" in line]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), err
    assert "Traceback" not in "\n".join(err)
    assert not out.exists()


def test_cli_file_list_and_scales_are_the_librarys():
    from privot.cli import heatmap
    from privot.heatmaps import outputs, plot

    assert heatmap.PUBLISHABLE == outputs.PUBLISHABLE_FILES
    assert heatmap._SCALES == plot.SCALES and heatmap._DEFAULT_SCALE == plot.DEFAULT_SCALE
