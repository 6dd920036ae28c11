"""``privot barycenter``: swapped columns refused before the charge; a degenerate release
said on stderr and in ``release.json`` (issue 26, parts 3 and 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture
def ab_csv(tmp_path):
    """Columns a in [0, 1] and b in [0, 4]: the bounds of (a, b) are 0 1 0 4."""
    rng = np.random.default_rng(0)
    rows = []
    for g in range(2):
        rows.append(pd.DataFrame({"a": rng.uniform(0, 1, 300), "b": rng.uniform(0, 4, 300),
                                  "grp": f"g{g}"}))
    path = tmp_path / "ab.csv"
    pd.concat(rows, ignore_index=True).to_csv(path, index=False)
    return path


def _args(path, out, columns, *extra):
    return ["barycenter", str(path), "--columns", columns, "--group-column", "grp",
            "--bounds", "0", "1", "0", "4", "--m", "4", "--epsilon", "1", "--seed", "3",
            "-o", str(out), *extra]


def test_swapped_columns_refused_before_the_charge(ab_csv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_args(ab_csv, out, "b,a")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "error" in line]) == 1
    assert "look swapped" in err[-1] and "Nothing was charged" in err[-1]
    assert not (out / "release.json").exists()


@pytest.mark.parametrize("method", ["coreset", "subspace"])
def test_swapped_columns_refused_for_every_method(ab_csv, tmp_path, capsys, method):
    assert main(_args(ab_csv, tmp_path / method, "b,a", "--method", method)) == 2
    assert "look swapped" in capsys.readouterr().err


def test_right_order_releases(ab_csv, tmp_path, capsys):
    out = tmp_path / "ok"
    assert main(_args(ab_csv, out, "a,b")) == 0
    rel = json.loads((out / "release.json").read_text())
    assert "degenerate" not in rel  # m = 4 distinct atoms


def test_rows_fitting_both_orders_are_not_refused(tmp_path, capsys):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.uniform(0, 1, 400), "b": rng.uniform(0, 1, 400),
                          "grp": "g"})
    path = tmp_path / "square.csv"
    frame.to_csv(path, index=False)
    args = ["barycenter", str(path), "--columns", "b,a", "--group-column", "grp",
            "--bounds", "0", "1", "0", "1", "--m", "4", "--epsilon", "1", "--seed", "3",
            "-o", str(tmp_path / "sq")]
    assert main(args) == 0


def test_degenerate_release_is_said(ab_csv, tmp_path, capsys, monkeypatch):
    import privot.barycenters as bary

    original = bary.private_barycenter

    def mean_only(data, **kw):  # every atom at the groups' DP mean: 1 distinct atom
        return original(data, **{**kw, "method": "subspace", "subspace_dim": 0})

    monkeypatch.setattr(bary, "private_barycenter", mean_only)
    out = tmp_path / "deg"
    assert main(_args(ab_csv, out, "a,b", "--method", "subspace")) == 0
    captured = capsys.readouterr()
    assert "degenerate release: 1 distinct atom(s) of m = 4" in captured.err
    assert "1 distinct atom(s) of m = 4" in captured.out  # the public summary
    rel = json.loads((out / "release.json").read_text())
    assert rel["degenerate"]["distinct_atoms"] == 1 and rel["degenerate"]["m"] == 4



def test_auto_in_moderate_dimension_runs_the_new_pure_plan(tmp_path, capsys):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.uniform(0.2, 0.8, (600, 3)), columns=["a", "b", "c"])
    frame["grp"] = np.where(np.arange(600) % 2 == 0, "g0", "g1")
    path = tmp_path / "abc.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "abc"
    args = ["barycenter", str(path), "--columns", "a,b,c", "--group-column", "grp",
            "--bounds", "0", "1", "0", "1", "0", "1", "--m", "4", "--epsilon", "1",
            "--seed", "3", "-o", str(out)]
    assert main(args) == 0  # eps n = 300: the old pure default was d' = 0
    rel = json.loads((out / "release.json").read_text())
    assert rel["method"] == "subspace" and rel["params"]["method_requested"] == "auto"
    plan = rel["params"]["subspace"]
    assert plan["mechanism"] == "laplace" and plan["subspace_dim"] == 3  # = d0
    assert "d' = 3" in capsys.readouterr().out
