"""Issue 25, "one name for one concept" on the command line.

* every data command (heatmap, barycenter, sample, learn) takes ``--progress`` and
  ``--quiet`` with one meaning: privot's progress rule (bars on stderr only when it is
  a terminal; ``--progress`` forces them) and ``--quiet`` (no bar, nothing printed but
  errors and warnings);
* one ``--aspect`` default (square, the library's ``Grid``) for heatmap and sample;
* flags named as the library's parameters (``learn --penalty``/``--steps``, ``heatmap
  --method``), the old spellings kept as hidden aliases and refused together with the
  new ones.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

DATA_COMMANDS = ("heatmap", "barycenter", "sample", "learn")


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (where bars are drawn by default)."""

    def isatty(self) -> bool:
        return True


def _run(argv, *, terminal: bool = False):
    """``main(argv)`` -> (exit status, stdout, stderr)."""
    out = io.StringIO()
    err = _Terminal() if terminal else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"uid": rng.integers(0, 60, n),
                          "lon": np.clip(rng.normal(0.3, 0.1, n), 0, 0.999),
                          "lat": np.clip(rng.normal(0.4, 0.1, n), 0, 0.499),
                          "grp": np.where(rng.random(n) < 0.5, "g0", "g1")})
    path = tmp_path_factory.mktemp("dialect") / "points.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def learn_csv(tmp_path_factory):
    from privot.datasets import biased_fairness_data

    d = biased_fairness_data(200, p=0.8, d_core=2, d_spurious=0, rng=0)
    frame = pd.DataFrame(np.asarray(d.x, dtype=np.float64), columns=["f0", "f1"])
    frame["colour"] = np.where(d.sensitive == 1, "Black", "White")
    frame["label"] = np.where(d.y == 1, "yes", "no")
    path = tmp_path_factory.mktemp("dialect-learn") / "learn.csv"
    frame.to_csv(path, index=False)
    return path


def _argv(command, points, learn, out, *extra):
    if command == "heatmap":
        return ["heatmap", points, "--bounds", "0", "1", "0", "1", "--epsilon", "1",
                "--resolution", "8", "--user-column", "uid", "--columns", "lon,lat",
                "--seed", "3", "-o", out, *extra]
    if command == "sample":
        return ["sample", points, "--bounds", "0", "1", "0", "1", "--epsilon", "2",
                "--resolution", "4", "--user-column", "uid", "--columns", "lon,lat",
                "--seed", "3", "-o", out, *extra]
    if command == "barycenter":
        return ["barycenter", points, "--columns", "lon,lat", "--group-column", "grp",
                "--bounds", "0", "1", "0", "1", "--m", "4", "--epsilon", "1", "--seed",
                "2", "-o", out, *extra]
    pytest.importorskip("torch")
    return ["learn", learn, "--target", "label", "--positive", "yes", "--sensitive",
            "colour", "--sensitive-values", "White,Black", "--bounds", "f0:-1:2,f1:-1:2",
            "--epsilon", "1", "--steps", "4", "--seed", "3", "-o", out, *extra]


#: What each command's bar says.
BAR = {"heatmap": "private heatmap", "barycenter": "group", "sample": "LDP samples",
       "learn": "private training"}


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_quiet_prints_no_bar_no_summary_even_on_a_terminal(command, points_csv, learn_csv,
                                                           tmp_path):
    loud = _run(_argv(command, points_csv, learn_csv, tmp_path / "loud"), terminal=True)
    quiet = _run(_argv(command, points_csv, learn_csv, tmp_path / "quiet", "--quiet"),
                 terminal=True)
    assert loud[0] == quiet[0] == 0
    assert f"privot {command}:" in loud[1]  # the summary, without --quiet
    assert quiet[1] == ""  # --quiet: nothing on stdout
    # on stderr, only the seed's warning: no bar, no curator line
    assert [line for line in quiet[2].splitlines() if line.strip()] == [
        "privot: --seed given: noise comes from a seeded generator; the output is "
        "reproducible and NOT fit for publication"]
    assert BAR[command] in loud[2]  # by default a terminal gets the bars (the one rule)
    if command != "learn":  # learn prints its curator lines with --show-metrics only
        assert "curator only" in loud[2]
    # the files are the same, quiet or not
    assert sorted(p.name for p in (tmp_path / "loud").iterdir()) == sorted(
        p.name for p in (tmp_path / "quiet").iterdir())


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_progress_forces_the_bar_off_a_terminal(command, points_csv, learn_csv, tmp_path):
    rc, _, err = _run(_argv(command, points_csv, learn_csv, tmp_path / "a"))
    assert rc == 0 and BAR[command] not in err  # not a terminal: no bar by default
    rc, _, err = _run(_argv(command, points_csv, learn_csv, tmp_path / "b", "--progress"))
    assert rc == 0 and BAR[command] in err


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_progress_and_quiet_together_are_refused(command, points_csv, learn_csv, tmp_path,
                                                 capsys):
    assert main([str(a) for a in _argv(command, points_csv, learn_csv, tmp_path / "x",
                                       "--progress", "--quiet")]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_progress_from_args_is_the_one_rule():
    import argparse

    from privot.cli._common import add_progress_arguments, progress_from_args

    parser = argparse.ArgumentParser()
    add_progress_arguments(parser)
    assert progress_from_args(parser.parse_args([])) is None
    assert progress_from_args(parser.parse_args(["--progress"])) is True
    assert progress_from_args(parser.parse_args(["--quiet"])) is False


# -- one --aspect default ------------------------------------------------------------------

def test_heatmap_and_sample_share_the_librarys_aspect_default():
    import inspect

    from privot.cli.main import build_parser
    from privot.grid import Grid

    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices
               and "heatmap" in a.choices).choices
    defaults = {c: next(a.default for a in sub[c]._actions if a.dest == "aspect")
                for c in ("heatmap", "sample")}
    library = inspect.signature(Grid).parameters["aspect"].default
    assert defaults == {"heatmap": library, "sample": library} == {
        "heatmap": "square", "sample": "square"}


def test_sample_default_aspect_is_square_on_non_square_bounds(points_csv, tmp_path):
    """Bounds 1 wide and 0.5 tall, 4 x 4 cells: square cells by default (the grid is the
    unit square, cells 1/4 tall); --aspect stretch gives the old grid (cells 1/8 tall)."""
    def run(name, *extra):
        argv = _argv("sample", points_csv, None, tmp_path / name, *extra)
        at = argv.index("--bounds")
        argv[at + 1:at + 5] = ["0", "1", "0", "0.5"]
        assert _run(argv)[0] == 0
        release = json.loads((tmp_path / name / "release.json").read_text())
        ys = set(pd.read_csv(tmp_path / name / "samples.csv")["y"])
        return release["grid"]["aspect"], ys, (tmp_path / name / "samples.csv").read_bytes()

    default, square, stretch = run("d"), run("sq", "--aspect", "square"), run(
        "st", "--aspect", "stretch")
    assert default == square and default[0] == "square" and stretch[0] == "stretch"
    assert default[1] <= {0.125, 0.375, 0.625, 0.875}
    assert stretch[1] <= {0.0625, 0.1875, 0.3125, 0.4375}


def test_sample_square_bounds_give_the_same_release_either_aspect(points_csv, tmp_path):
    """The default's change leaves a square --bounds' seeded output as it was."""
    for name, extra in (("sq", ()), ("st", ("--aspect", "stretch"))):
        assert _run(_argv("sample", points_csv, None, tmp_path / name, *extra))[0] == 0
    for name in ("samples.csv", "estimate.csv", "base_measure.csv", "curator-samples.csv"):
        assert (tmp_path / "sq" / name).read_bytes() == (tmp_path / "st" / name).read_bytes()


# -- CLI names that match the library ------------------------------------------------------

def test_learn_penalty_and_steps_are_make_privates_names(learn_csv, tmp_path):
    pytest.importorskip("torch")
    base = _argv("learn", None, learn_csv, tmp_path / "new")
    base = [a for a in base if a not in ("--steps", "4")]
    # --penalty eo --steps 8 == the old --criterion eo --epochs 2 at batch fraction 0.25
    new = _run([*base, "--penalty", "eo", "--steps", "8", "--batch-fraction", "0.25"])
    old = base[:base.index("-o") + 1] + [tmp_path / "old"]
    old = _run([*old, "--criterion", "eo", "--epochs", "2", "--batch-fraction", "0.25"])
    assert new[0] == old[0] == 0
    a = json.loads((tmp_path / "new" / "release.json").read_text())
    b = json.loads((tmp_path / "old" / "release.json").read_text())
    assert a == b
    assert a["privacy"]["criterion"] == "eo" and a["hyperparameters"]["steps"] == 8
    assert a["hyperparameters"]["epochs"] == 2.0
    assert (tmp_path / "new" / "model.pt").read_bytes() == (
        tmp_path / "old" / "model.pt").read_bytes()


@pytest.mark.parametrize("command,extra,needle", [
    ("learn", ["--penalty", "sp", "--criterion", "eo"], "give --penalty once"),
    ("learn", ["--criterion", "eo", "--penalty", "sp"], "give --penalty once"),
    # with the argv's --steps
    ("learn", ["--epochs", "2"], "argument --epochs: not allowed with argument --steps"),
    ("heatmap", ["--method", "laplace", "--baseline", "none"], "give --method once"),
    ("heatmap", ["--baseline", "threshold", "--method", "pyramid"], "give --method once"),
])
def test_old_and_new_spelling_together_are_refused(command, extra, needle, points_csv,
                                                   learn_csv, tmp_path, capsys):
    assert main([str(a) for a in _argv(command, points_csv, learn_csv, tmp_path / "x",
                                       *extra)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and len(err[-1]) < 200
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("old,new", [("none", "pyramid"), ("laplace", "laplace"),
                                     ("threshold", "threshold")])
def test_heatmap_method_is_private_heatmaps_name(old, new, points_csv, tmp_path):
    a = _run(_argv("heatmap", points_csv, None, tmp_path / "old", "--baseline", old))
    b = _run(_argv("heatmap", points_csv, None, tmp_path / "new", "--method", new))
    assert a[0] == b[0] == 0
    ra = json.loads((tmp_path / "old" / "release.json").read_text())
    rb = json.loads((tmp_path / "new" / "release.json").read_text())
    assert ra == rb
    for name in ("distribution.npy", "heatmap.npy"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()


def test_old_spellings_are_hidden_from_help(capsys):
    for command, hidden, shown in (("learn", ("--criterion",), ("--penalty", "--steps")),
                                   ("heatmap", ("--baseline",), ("--method",))):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for flag in shown:
            assert flag in text
        for flag in hidden:
            assert flag not in text
        assert "--progress" in text and "--quiet" in text
