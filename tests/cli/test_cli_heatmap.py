"""``privot heatmap``: outputs, what it prints, and one-line errors for bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture
def points_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    frame = pd.DataFrame({
        "uid": rng.integers(0, 120, n),
        "lon": np.concatenate([rng.normal(0.3, 0.02, n // 2), rng.normal(0.7, 0.03, n // 2)]),
        "lat": rng.uniform(0.0, 1.0, n),
    })
    frame.loc[0, "lon"] = 5.0  # one point outside the bounds
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return path


def _args(path, out, *extra):
    return [
        "heatmap", str(path), "--bounds", "0", "1", "0", "1", "--epsilon", "1",
        "--resolution", "32", "--user-column", "uid", "--x-column", "lon",
        "--y-column", "lat", "--seed", "3", "-o", str(out), *extra,
    ]


def test_heatmap_writes_release_and_figure(points_csv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_args(points_csv, out)) == 0
    dist = np.load(out / "distribution.npy")
    assert dist.shape == (32, 32)
    assert dist.sum() == pytest.approx(1.0)
    assert np.all(dist >= 0)
    assert np.loadtxt(out / "distribution.csv", delimiter=",").shape == (32, 32)
    assert (out / "heatmap.png").stat().st_size > 1000
    release = json.loads((out / "release.json").read_text())
    assert release["epsilon"] == pytest.approx(1.0)
    assert sum(release["level_epsilons"].values()) <= 1.0 + 1e-12
    assert release["secure"] is False
    assert "curator_only" not in release and "seconds" not in release
    assert "n_points" not in json.dumps(release) and "warnings" not in release
    curator = json.loads((out / "curator-report.json").read_text())
    assert curator["n_outside_or_unusable"] == 1
    assert set(curator["seconds"]) >= {"aggregate", "total"}
    printed = capsys.readouterr()
    assert "spent epsilon = 1" in printed.out
    assert "points read" not in printed.out and "points read" in printed.err
    assert "NOT fit for publication" in printed.err


def test_same_seed_same_release_and_baseline_runs(points_csv, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert main(_args(points_csv, a)) == 0
    assert main(_args(points_csv, b)) == 0
    np.testing.assert_array_equal(np.load(a / "distribution.npy"),
                                  np.load(b / "distribution.npy"))
    assert main(_args(points_csv, c, "--baseline", "threshold", "--threshold", "5")) == 0
    assert json.loads((c / "release.json").read_text())["method"] == "threshold"


@pytest.mark.parametrize("extra,needle", [
    (["--resolution", "100"], "resolution"),
    (["--epsilon", "0"], "epsilon"),
    (["--w", "0"], "--w"),
    (["--user-column", "nobody"], "nobody"),
    (["--threads", "0"], "--threads"),
    (["--memory-limit", "lots"], "--memory-limit"),
    (["--engine", "spark", "--threads", "2"], "--threads"),
])
def test_bad_input_is_one_line_and_exit_2(points_csv, tmp_path, capsys, extra, needle):
    assert main(_args(points_csv, tmp_path / "o", *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error" in line]
    assert len(errors) == 1 and needle in errors[0]
    assert "Traceback" not in "\n".join(err)


def test_missing_file_and_reversed_bounds(tmp_path, capsys):
    assert main(["heatmap", str(tmp_path / "none.csv"), "--bounds", "0", "1", "0", "1",
                 "--epsilon", "1"]) == 2
    assert main(["heatmap", str(tmp_path / "none.csv"), "--bounds", "1", "0", "0", "1",
                 "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "bounds" in err


def test_duckdb_threads_and_memory_limit_give_the_same_release(points_csv, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(_args(points_csv, a)) == 0
    assert main(_args(points_csv, b, "--threads", "1", "--memory-limit", "256MB")) == 0
    np.testing.assert_array_equal(np.load(a / "distribution.npy"),
                                  np.load(b / "distribution.npy"))
