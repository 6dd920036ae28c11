"""``privot plan`` and ``--target-error`` on the releasing commands (issue 28)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from privot.cli.main import main
from privot.grid import Grid
from privot.heatmaps import HeatmapParams, heatmap_error
from privot.planning import epsilon_for_error

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"uid": rng.integers(0, 80, n), "lon": rng.uniform(0, 1, n),
                          "lat": rng.uniform(0, 1, n)})
    path = tmp_path_factory.mktemp("plan") / "points.csv"
    frame.to_csv(path, index=False)
    return path


def _heatmap(path, out, *extra):
    return ["heatmap", path, "--bounds", 0, 1, 0, 1, "--resolution", 16, "--user-column",
            "uid", "--columns", "lon,lat", "--seed", 1, "-o", out, *extra]


def _sample(path, out, *extra):
    return ["sample", path, "--bounds", 0, 1, 0, 1, "--resolution", 4, "--mechanism",
            "krr", "--user-column", "uid", "--columns", "lon,lat", "--seed", 1, "-o", out,
            *extra]


def test_plan_heatmap_writes_table_json_and_curve(capsys, tmp_path):
    out = tmp_path / "p"
    rc, text, err = _run(capsys, ["plan", "heatmap", "--bounds", 0, 1, 0, 1,
                                  "--resolution", 32, "--epsilons", "0.5,1,4",
                                  "--target-error", 2000, "-o", out])
    assert rc == 0, err
    payload = json.loads((out / "plan.json").read_text())
    assert (out / "plan.png").stat().st_size > 1000
    params = HeatmapParams(grid=Grid((0, 1, 0, 1), 32), epsilon=1.0)
    for row, eps in zip(payload["curve"], (0.5, 1.0, 4.0), strict=True):
        stated = heatmap_error(replace(params, epsilon=eps)).bound
        assert row["epsilon"] == eps and row["bound"] == pytest.approx(stated)
        assert f"{eps:>10g}  {stated:>12.4g}" in text  # the table's row
    assert payload["units"] == "cells x users"
    planned = payload["planned"]
    assert planned["statement"]["bound"] <= 2000 and planned["target"] == 2000
    assert f"epsilon = {planned['epsilon']:.6g}" in text


def test_plan_refuses_an_unstated_method_with_one_line(capsys, tmp_path):
    rc, text, err = _run(capsys, ["plan", "barycenter", "--group-sizes", "100,200", "--d",
                                  2, "--target-error", 0.1, "-o", tmp_path / "p"])
    assert rc == 2 and text == ""
    assert len(err.strip().splitlines()) == 1
    assert "--target-error 0.1 cannot be planned" in err and "--method subspace" in err
    assert not (tmp_path / "p").exists()


def _planned_epsilon(text, command):
    line = next(s for s in text.splitlines() if s.startswith(f"privot {command}: planned"))
    return float(line.split("planned epsilon = ")[1].split()[0]), line


def test_heatmap_target_error_end_to_end(capsys, points_csv, tmp_path):
    out = tmp_path / "h"
    rc, text, err = _run(capsys, _heatmap(points_csv, out, "--target-error", 600))
    assert rc == 0, err
    eps, line = _planned_epsilon(text, "heatmap")
    release = json.loads((out / "release.json").read_text())
    # the heatmap records the sum of its level budgets (as with --epsilon): ~1 ulp off
    assert release["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert release["error"]["bound"] <= 600
    assert release["planned"]["epsilon"] == eps and release["planned"]["target_error"] == 600
    # the same plan as the library's, from the public parameters only
    params = HeatmapParams(grid=Grid((0, 1, 0, 1), 16), epsilon=1.0)
    plan = epsilon_for_error(lambda e: heatmap_error(replace(params, epsilon=e)), 600.0)
    assert plan.epsilon == eps and "cells x users" in line


def test_heatmap_target_in_cells_with_min_users(capsys, points_csv, tmp_path):
    out = tmp_path / "h"
    rc, text, err = _run(capsys, _heatmap(points_csv, out, "--target-error", 4,
                                          "--min-users", 50))
    assert rc == 0, err
    eps, line = _planned_epsilon(text, "heatmap")
    assert "<= " in line and "cells with probability" in line
    release = json.loads((out / "release.json").read_text())
    assert release["epsilon"] == pytest.approx(eps, rel=1e-12)
    # the release states n x EMD; with n >= 50 users that is <= 4 cells
    assert release["error"]["bound"] / 50 <= 4


def test_sample_target_error_end_to_end(capsys, points_csv, tmp_path):
    out = tmp_path / "s"
    rc, text, err = _run(capsys, _sample(points_csv, out, "--target-error", 0.2))
    assert rc == 0, err
    eps, _ = _planned_epsilon(text, "sample")
    release = json.loads((out / "release.json").read_text())
    assert release["epsilon"] == eps
    assert release["error"]["bound"] <= 0.2


@pytest.mark.parametrize(("argv", "needle"), [
    (["--epsilon", 1, "--target-error", 5], "not allowed with argument --epsilon"),
    (["--target-error", 1e-4], "--target-error 0.0001 cells x users is not reachable"),
    (["--target-error", 5, "--method", "threshold"], "states no finite error bound"),
    (["--epsilon", 1, "--min-users", 5], "--min-users=5 is not allowed"),
    (["--epsilon", 1, "--error-confidence", 0.9], "only with --target-error"),
    (["--target-error", 5, "--error-confidence", 1.5], "--error-confidence=1.5"),
    ([], "one of the arguments --epsilon --target-error is required"),
])
def test_heatmap_target_error_refusals_are_one_line(capsys, points_csv, tmp_path, argv,
                                                    needle):
    out = tmp_path / "h"
    rc, text, err = _run(capsys, _heatmap(points_csv, out, *argv))
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert not out.exists()


def test_ledger_refuses_a_plan_it_cannot_pay(capsys, points_csv, tmp_path):
    ledger = tmp_path / "l.db"
    rc, _, err = _run(capsys, ["budget", "init", ledger, "--epsilon", 0.5, "--unit", "user",
                               "--relation", "add-remove"])
    assert rc == 0, err
    out = tmp_path / "h"
    rc, _, err = _run(capsys, _heatmap(points_csv, out, "--target-error", 600, "--ledger",
                                       ledger))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "best error reachable with the remaining budget is" in err
    assert "at epsilon = 0.5" in err and not out.exists()


def _barycenter_csv(tmp_path):
    rng = np.random.default_rng(2)
    x = 0.3 * rng.normal(size=(400, 4))
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0)  # inside B(0, 1)
    frame = pd.DataFrame(x, columns=["a", "b", "c", "d"])
    frame["grp"] = ["g0"] * 150 + ["g1"] * 250
    path = tmp_path / "b.csv"
    frame.to_csv(path, index=False)
    return path


def test_barycenter_target_error_plans_on_the_public_group_sizes(capsys, tmp_path):
    path = _barycenter_csv(tmp_path)
    out = tmp_path / "b"
    rc, text, err = _run(capsys, ["barycenter", path, "--columns", "a,b,c,d",
                                  "--group-column", "grp", "--ball", 0, 0, 0, 0, 1, "--m",
                                  4, "--method", "subspace", "--cells", 1, "--rounds", 0,
                                  "--target-error", 0.2, "--seed", 3, "-o", out])
    assert rc == 0, err
    eps, _ = _planned_epsilon(text, "barycenter")
    release = json.loads((out / "release.json").read_text())
    assert release["privacy"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert release["error"]["bound"] <= 0.2


# -- learn: planned on the public group sizes, the plan stating what the run states ------

def _learn_csv(tmp_path):
    from privot.datasets import biased_fairness_data

    d = biased_fairness_data(300, p=0.8, d_core=2, d_spurious=1, rng=0)
    frame = pd.DataFrame(np.asarray(d.x, dtype=np.float64), columns=["f0", "f1", "f2"])
    frame["colour"] = np.where(d.sensitive == 1, "Black", "White")
    frame["label"] = np.where(d.y == 1, "yes", "no")
    path = tmp_path / "learn.csv"
    frame.to_csv(path, index=False)
    return path


def _learn(path, out, *extra):
    return ["learn", path, "--target", "label", "--positive", "yes", "--sensitive",
            "colour", "--sensitive-values", "White,Black", "--bounds",
            "f0:-3:3,f1:-3:3,f2:-3:3", "--steps", 20, "--test-fraction", 0, "--seed", 4,
            "-o", out, *extra]


def test_learn_target_error_end_to_end_and_matches_privot_plan(capsys, tmp_path):
    path = _learn_csv(tmp_path)
    out = tmp_path / "l"
    rc, text, err = _run(capsys, _learn(path, out, "--target-error", 0.5))
    assert rc == 0, err
    eps, _ = _planned_epsilon(text, "learn")
    release = json.loads((out / "release.json").read_text())
    assert release["planned"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert release["planned"]["target_error"] == 0.5
    assert release["privacy"]["epsilon"] <= release["planned"]["epsilon"]  # PLD's proof
    assert release["error"]["bound"] <= 0.5
    # the same plan from the public numbers alone: group sizes, encoded width
    sizes = release["privacy"]["group_sizes"]
    rc, text, err = _run(capsys, ["plan", "learn", "--group-sizes",
                                  ",".join(str(v) for v in sizes.values()), "--d", 3,
                                  "--steps", 20, "--target-error", 0.5,
                                  "-o", tmp_path / "p"])
    assert rc == 0, err
    planned = json.loads((tmp_path / "p" / "plan.json").read_text())["planned"]
    assert planned["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert planned["statement"]["bound"] == pytest.approx(release["error"]["bound"],
                                                          rel=1e-9)


def test_learn_target_error_refused_by_the_ledger_before_the_charge(capsys, tmp_path):
    path = _learn_csv(tmp_path)
    ledger = tmp_path / "l.db"
    rc, _, err = _run(capsys, ["budget", "init", ledger, "--epsilon", 0.05, "--delta",
                               1e-3, "--unit", "row", "--relation", "replace-one-in-group"])
    assert rc == 0, err
    out = tmp_path / "l"
    rc, _, err = _run(capsys, _learn(path, out, "--target-error", 0.5, "--ledger", ledger))
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert rc == 2 and len(lines) == 1, err
    assert "best error reachable with the remaining budget is" in err and not out.exists()


def test_barycenter_mean_only_plan_is_accepted_as_the_messages_say(capsys, tmp_path):
    # the refusals name "--subspace-dim 0" (the mean-only plan): the command takes it
    path = _barycenter_csv(tmp_path)
    out = tmp_path / "b0"
    rc, text, err = _run(capsys, ["barycenter", path, "--columns", "a,b,c,d",
                                  "--group-column", "grp", "--ball", 0, 0, 0, 0, 1, "--m",
                                  4, "--method", "subspace", "--subspace-dim", 0,
                                  "--target-error", 0.05, "--seed", 3, "-o", out])
    assert rc == 0, err
    release = json.loads((out / "release.json").read_text())
    assert 0 < release["error"]["bound"] <= 0.05
    assert release["planned"]["target_error"] == 0.05
