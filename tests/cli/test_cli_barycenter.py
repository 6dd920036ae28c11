"""``privot barycenter``: outputs, both methods, engines, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture
def groups_csv(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for g, centre in enumerate(([0.3, 0.3], [0.7, 0.6])):
        pts = np.clip(np.asarray(centre) + 0.08 * rng.normal(size=(800, 2)), 0, 1)
        rows.append(pd.DataFrame({"x": pts[:, 0], "y": pts[:, 1], "grp": f"g{g}"}))
    frame = pd.concat(rows, ignore_index=True)
    frame.loc[0, "x"] = 7.0  # clipped to the bounds
    frame.loc[1, "y"] = np.nan  # unusable: left out, still in the public group size
    path = tmp_path / "groups.csv"
    frame.to_csv(path, index=False)
    return path


def _args(path, out, *extra):
    return ["barycenter", str(path), "--columns", "x,y", "--group-column", "grp",
            "--bounds", "0", "1", "0", "1", "--m", "6", "--epsilon", "1", "--seed", "2",
            "-o", str(out), *extra]


def test_coreset_release_files(groups_csv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_args(groups_csv, out)) == 0
    sup = np.loadtxt(out / "support.csv", delimiter=",", skiprows=1)
    assert sup.shape == (6, 3)
    assert np.all((sup[:, :2] >= 0) & (sup[:, :2] <= 1))
    assert np.allclose(sup[:, 2], 1 / 6)
    assert (out / "support.csv").read_text().splitlines()[0] == "x,y,weight"
    assert (out / "barycenter.png").stat().st_size > 5000
    rel = json.loads((out / "release.json").read_text())
    assert rel["method"] == "coreset" and rel["groups"] == ["g0", "g1"]
    assert rel["privacy"]["epsilon"] == 1.0 and rel["privacy"]["delta"] == 0.0
    assert rel["privacy"]["relation"] == "replace-one-in-group"
    assert rel["privacy"]["secure"] is False
    assert rel["group_sizes"] == {"g0": 800, "g1": 800}  # public by the relation
    assert "group labels" in rel["privacy"]["public_by_assumption"]
    assert "curator_only" not in rel and "seconds" not in json.dumps(rel)
    assert sorted(rel["publishable_files"]) == ["barycenter.png", "release.json",
                                                "support.csv"]
    cur = json.loads((out / "curator-report.json").read_text())
    assert "NOT differentially private" in cur["warning"]
    assert cur["rows_per_group"] == {"g0": 800, "g1": 800}
    assert cur["rows_clipped_per_group"] == {"g0": 1, "g1": 0}
    assert cur["rows_unusable_per_group"] == {"g0": 1, "g1": 0}
    assert set(cur["seconds"]) == {"read", "release"}
    printed = capsys.readouterr()
    assert "spent epsilon = 1 (pure DP)" in printed.out
    assert "800" not in printed.out  # exact counts go to stderr only
    assert "g0: 800 (1 clipped, 1 unusable)" in printed.err


def test_perturbation_release_and_same_seed(groups_csv, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    extra = ("--method", "perturbation", "--delta", "1e-5", "--step", "anchored",
             "--splits", "20")
    assert main(_args(groups_csv, a, *extra)) == 0
    assert main(_args(groups_csv, b, *extra)) == 0
    assert (a / "support.csv").read_text() == (b / "support.csv").read_text()
    rel = json.loads((a / "release.json").read_text())
    assert rel["method"] == "perturbation" and rel["params"]["splits"] == 20
    assert rel["params"]["step"] == "anchored"
    assert rel["params"]["calibration"] == "analytic"  # the default with --step anchored
    assert "lloyd" not in rel["params"]
    assert rel["privacy"]["delta"] == 1e-5
    assert "anchored step: k' = 20 parts" in capsys.readouterr().out


def test_perturbation_lloyd_step_is_the_default(groups_csv, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    extra = ("--method", "perturbation", "--delta", "1e-5")
    assert main(_args(groups_csv, a, *extra)) == 0
    printed = capsys.readouterr().out
    assert "lloyd step: 2 balancing round(s), 1 step(s)" in printed
    assert "k' =" not in printed
    assert main(_args(groups_csv, b, *extra, "--step", "lloyd", "--balancing-rounds",
                      "2")) == 0
    # the explicit default is the default: the same seeded release
    assert (a / "support.csv").read_text() == (b / "support.csv").read_text()
    sup = np.loadtxt(a / "support.csv", delimiter=",", skiprows=1)
    assert sup.shape == (6, 3) and np.all(np.isfinite(sup))
    rel = json.loads((a / "release.json").read_text())
    assert rel["method"] == "perturbation" and rel["params"]["step"] == "lloyd"
    assert rel["params"]["lloyd"]["balancing_rounds"] == 2
    for key in ("splits", "sigma", "sensitivity", "calibration"):
        assert key not in rel["params"]
    assert rel["params"]["anchor"] == "coreset"
    assert rel["params"]["anchor_epsilon"] == pytest.approx(0.5)  # half of epsilon
    assert rel["privacy"]["epsilon"] == 1.0 and rel["privacy"]["delta"] == 1e-5


def test_perturbation_balancing_rounds_reach_the_release(groups_csv, tmp_path):
    out = tmp_path / "b0"
    assert main(_args(groups_csv, out, "--method", "perturbation", "--delta", "1e-5",
                      "--balancing-rounds", "0")) == 0
    rel = json.loads((out / "release.json").read_text())
    assert rel["params"]["step"] == "lloyd"
    assert rel["params"]["lloyd"]["balancing_rounds"] == 0


def test_perturbation_proxy_size_reaches_the_release(groups_csv, tmp_path):
    out = tmp_path / "p"
    assert main(_args(groups_csv, out, "--method", "perturbation", "--delta", "1e-5",
                      "--proxy-size", "300")) == 0
    rel = json.loads((out / "release.json").read_text())
    assert rel["params"]["lloyd"]["proxy_size"] == 300


def test_one_group_and_ball_bounds(groups_csv, tmp_path):
    out = tmp_path / "ball"
    args = ["barycenter", str(groups_csv), "--columns", "x,y", "--ball", "0.5", "0.5",
            "0.8", "--m", "4", "--epsilon", "2", "--seed", "1", "-o", str(out)]
    assert main(args) == 0
    rel = json.loads((out / "release.json").read_text())
    assert rel["groups"] == ["all"]


@pytest.mark.parametrize("extra, needle", [
    (("--epsilon", "0"), "--epsilon"),
    (("--m", "0"), "--m"),
    (("--m", "900"), "--m"),
    (("--method", "perturbation"), "--delta"),
    (("--method", "perturbation", "--delta", "2"), "delta"),
    (("--method", "perturbation", "--delta", "1e-5", "--step", "anchored", "--splits",
      "801"), "splits"),
    (("--method", "perturbation", "--delta", "1e-5", "--balancing-rounds", "11"),
     "--balancing-rounds"),
    (("--method", "perturbation", "--delta", "1e-5", "--balancing-rounds", "-1"),
     "--balancing-rounds"),
    (("--method", "perturbation", "--delta", "1e-5", "--step", "anchored",
      "--balancing-rounds", "1"), "--balancing-rounds"),
    (("--method", "perturbation", "--delta", "1e-5", "--step", "other"), "--step"),
    (("--method", "coreset", "--step", "lloyd"), "--step"),
    (("--method", "coreset", "--balancing-rounds", "1"), "--balancing-rounds"),
    (("--method", "perturbation", "--delta", "1e-5", "--proxy-size", "99"),
     "--proxy-size"),
    (("--method", "perturbation", "--delta", "1e-5", "--step", "anchored",
      "--proxy-size", "500"), "--proxy-size"),
    (("--method", "coreset", "--proxy-size", "500"), "--proxy-size"),
    (("--method", "coreset", "--splits", "3"), "--splits"),
    (("--method", "coreset", "--calibration", "classic"), "--calibration"),
    (("--step", "anchored"), "--step"),  # auto runs the coreset here
    (("--method", "subspace", "--step", "lloyd"), "--step"),
    (("--method", "perturbation", "--delta", "1e-5", "--splits", "20"), "--splits"),
    (("--method", "perturbation", "--delta", "1e-5", "--step", "lloyd", "--splits", "20"),
     "--splits"),
    (("--method", "perturbation", "--delta", "1e-5", "--calibration", "classic"),
     "--calibration"),
    (("--method", "perturbation", "--delta", "1e-5", "--engine", "spark"), "--engine"),
    (("--projection-dim", "x"), "--projection-dim"),
    (("--columns", "x,z"), "'z'"),
])
def test_bad_input_is_one_line_and_exit_2(groups_csv, tmp_path, capsys, extra, needle):
    assert main(_args(groups_csv, tmp_path / "bad", *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "error" in line]) == 1
    assert needle in err[-1]


def test_wrong_number_of_bounds(groups_csv, tmp_path, capsys):
    args = ["barycenter", str(groups_csv), "--columns", "x,y", "--bounds", "0", "1", "0",
            "--epsilon", "1", "-o", str(tmp_path / "x")]
    assert main(args) == 2
    assert "--bounds" in capsys.readouterr().err
