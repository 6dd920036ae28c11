"""``privot budget`` and ``--ledger``/``--convert`` on the releasing commands: one privacy
budget per data set, charged before any noise, refusals in one line with nothing
written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli._common import SEED_WARNING
from privot.cli.main import main
from privot.privacy.ledger import Ledger

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def _no_ambient_ledger(monkeypatch):
    monkeypatch.delenv("PRIVOT_LEDGER", raising=False)


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc, err, command, *needles):
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith(SEED_WARNING)]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"privot {command}: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def points_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"uid": rng.integers(0, 60, n),
                          "lon": np.clip(rng.normal(0.3, 0.1, n), 0, 0.999),
                          "lat": np.clip(rng.normal(0.6, 0.1, n), 0, 0.999)})
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def groups_csv(tmp_path):
    rng = np.random.default_rng(1)
    rows = [pd.DataFrame({"x": rng.uniform(0.2, 0.8, 40), "y": rng.uniform(0.2, 0.8, 40),
                          "grp": g}) for g in ("a", "b")]
    path = tmp_path / "groups.csv"
    pd.concat(rows, ignore_index=True).to_csv(path, index=False)
    return path


def heatmap_args(path, out, *extra, epsilon=1):
    return ["heatmap", path, "--bounds", 0, 1, 0, 1, "--epsilon", epsilon,
            "--resolution", 8, "--user-column", "uid", "--x-column", "lon",
            "--y-column", "lat", "--seed", 3, "-o", out, *extra]


def barycenter_args(path, out, *extra, epsilon=1):
    return ["barycenter", path, "--columns", "x,y", "--group-column", "grp", "--bounds",
            0, 1, 0, 1, "--m", 4, "--epsilon", epsilon, "--seed", 2, "-o", out, *extra]


def sample_args(path, out, *extra, epsilon=2):
    return ["sample", path, "--bounds", 0, 1, 0, 1, "--epsilon", epsilon,
            "--resolution", 4, "--mechanism", "krr", "--user-column", "uid",
            "--x-column", "lon", "--y-column", "lat", "--seed", 3, "-o", out, *extra]


def init(capsys, path, *extra, epsilon=5):
    rc, out, err = _run(capsys, ["budget", "init", path, "--epsilon", epsilon, *extra])
    assert rc == 0, err
    return out


# -- privot budget init / show ---------------------------------------------------------

def test_init_and_show_text_json_plot(capsys, tmp_path):
    path = tmp_path / "census.db"
    out = init(capsys, path, "--delta", "1e-6", "--name", "census", "--unit", "row",
               "--relation", "replace-one", "--approx-delta", "0.25", epsilon=3)
    created, records = out.strip().splitlines()  # what it is, and what it records
    assert records.startswith("privot budget: it records heatmap: as a group of 4")
    assert "'census'" in out and "eps=3" in out and "row-level" in out
    assert "replace-one" in out and "hybrid" in out and "0.25 of delta reserved" in out
    ledger = Ledger.open(path)
    assert ledger.total == (3.0, 1e-6) and ledger.filter == "hybrid"
    assert ledger.spec["approx_delta"] == pytest.approx(0.25e-6)

    rc, out, err = _run(capsys, ["budget", "show", path])
    assert rc == 0, err
    assert out == ledger.report() + "\n"
    assert "remaining:  eps=3" in out and "Releases (0)" in out

    png = tmp_path / "spending.png"
    rc, out, err = _run(capsys, ["budget", "show", path, "--json", "--no-pld",
                                 "--plot", png])
    assert rc == 0, err
    payload = json.loads(out)  # stdout is JSON only
    assert payload["status"]["total"] == [3.0, 1e-6]
    assert payload["status"]["remaining_epsilon"] == 3.0
    assert payload["ledger"]["name"] == "census" and payload["releases"] == []
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_init_defaults_and_basic_filter(capsys, tmp_path):
    init(capsys, tmp_path / "plain.db", epsilon=2)
    ledger = Ledger.open(tmp_path / "plain.db")
    assert (ledger.name, ledger.unit, ledger.relation) == ("plain", "user", "add-remove")
    assert ledger.filter == "basic" and ledger.total == (2.0, 0.0)


def test_init_refuses_an_existing_file(capsys, tmp_path):
    path = tmp_path / "l.db"
    init(capsys, path, epsilon=1)
    before = path.read_bytes()
    rc, _, err = _run(capsys, ["budget", "init", path, "--epsilon", "9"])
    _one_line_error(rc, err, "budget", "never re-initialised")
    assert path.read_bytes() == before
    assert Ledger.open(path).total == (1.0, 0.0)


@pytest.mark.parametrize("extra,needle", [
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "inf"], "--epsilon"),
    (["--epsilon", "1", "--delta", "1"], "--delta"),
    (["--epsilon", "1", "--delta", "1e-6", "--approx-delta", "1"], "--approx-delta"),
    (["--epsilon", "1", "--filter", "rdp"], "--filter"),
    (["--epsilon", "1", "--name", " "], "--name"),
    (["--epsilon", "1", "--unit", "household"], "--unit"),
])
def test_init_bad_input_is_one_line(capsys, tmp_path, extra, needle):
    rc, _, err = _run(capsys, ["budget", "init", tmp_path / "l.db", *extra])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err
    assert not (tmp_path / "l.db").exists()


def test_show_missing_file_or_no_path(capsys, tmp_path, monkeypatch):
    rc, _, err = _run(capsys, ["budget", "show", tmp_path / "nope.db"])
    _one_line_error(rc, err, "budget", "nope.db", "budget init")
    rc, _, err = _run(capsys, ["budget", "show"])
    _one_line_error(rc, err, "budget", "PRIVOT_LEDGER")
    monkeypatch.setenv("PRIVOT_LEDGER", str(tmp_path / "gone.db"))
    rc, _, err = _run(capsys, ["budget", "show"])
    _one_line_error(rc, err, "budget", "gone.db")
    (tmp_path / "junk.db").write_text("not a database")
    rc, _, err = _run(capsys, ["budget", "show", tmp_path / "junk.db"])
    _one_line_error(rc, err, "budget", "junk.db")


def test_show_reads_privot_ledger(capsys, tmp_path, monkeypatch):
    init(capsys, tmp_path / "env.db", epsilon=4)
    monkeypatch.setenv("PRIVOT_LEDGER", str(tmp_path / "env.db"))
    rc, out, err = _run(capsys, ["budget", "show", "--no-pld"])
    assert rc == 0, err
    assert "Ledger 'env'" in out and "eps=4" in out


def test_parser_literals_are_the_ledgers():
    from privot.cli import _common, budget
    from privot.privacy import ledger

    assert _common.LEDGER_ENV == ledger.LEDGER_ENV
    assert budget._UNITS == ledger.UNITS and budget._RELATIONS == ledger.RELATIONS
    assert budget._FILTERS == ledger.FILTERS


# -- the releasing commands ---------------------------------------------------------------

def _released(path, capability, n=1):
    rels = Ledger.open(path).releases()
    assert len(rels) == n
    assert rels[-1].status == "released" and rels[-1].capability == capability
    return rels[-1]


def _publishable_text(folder):
    return "".join(p.read_text(errors="replace") for p in folder.iterdir()
                   if p.suffix in (".json", ".csv") and not p.name.startswith("curator-"))


def test_heatmap_with_ledger(capsys, tmp_path, points_csv):
    led = tmp_path / "city.db"
    init(capsys, led, epsilon=5)
    out = tmp_path / "out"
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, out, "--ledger", led))
    assert rc == 0, err
    rel = _released(led, "heatmap")
    assert rel.mechanism == "pyramid" and rel.epsilon == pytest.approx(1.0)
    assert (rel.unit, rel.relation, rel.conversion) == ("user", "add-remove", 1)
    assert rel.output == str(out.resolve())
    assert rel.params["epsilon"] == 1.0 and rel.params["resolution"] == 8
    assert str(points_csv) not in json.dumps(dict(rel.params))  # public parameters only
    assert "ledger city: spent eps=1 of 5, 4 left (1 releases)" in stdout
    # the publishable files know nothing of the ledger
    text = _publishable_text(out)
    assert "city" not in text and str(led) not in text and "ledger" not in text


def test_privot_ledger_environment_variable(capsys, tmp_path, points_csv, monkeypatch):
    led = tmp_path / "env.db"
    init(capsys, led, epsilon=5)
    monkeypatch.setenv("PRIVOT_LEDGER", str(led))
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out",
                                                "--baseline", "laplace"))
    assert rc == 0, err
    assert _released(led, "heatmap").mechanism == "laplace"
    assert "ledger env: spent eps=1 of 5" in stdout
    # a missing file named by the variable is refused, naming the variable
    monkeypatch.setenv("PRIVOT_LEDGER", str(tmp_path / "missing.db"))
    rc, _, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out2"))
    _one_line_error(rc, err, "heatmap", "PRIVOT_LEDGER", "missing.db")
    assert not (tmp_path / "out2").exists()


def test_barycenter_with_ledger(capsys, tmp_path, groups_csv):
    """A barycenter is private for one row replaced inside its group (the group sizes
    are published): a plain replace-one ledger refuses it (issue 24, item 2), an
    in-group one records it as it is."""
    plain = tmp_path / "plain.db"
    init(capsys, plain, "--unit", "row", "--relation", "replace-one", epsilon=3)
    rc, _, err = _run(capsys, barycenter_args(groups_csv, tmp_path / "out", "--ledger",
                                              plain, "--convert"))
    _one_line_error(rc, err, "barycenter", "no documented conversion",
                    "unit row, relation replace-one-in-group")
    led = tmp_path / "rows.db"
    init(capsys, led, "--unit", "row", "--relation", "replace-one-in-group", epsilon=3)
    rc, stdout, err = _run(capsys, barycenter_args(groups_csv, tmp_path / "out",
                                                   "--ledger", led))
    assert rc == 0, err
    rel = _released(led, "barycenter")
    assert rel.mechanism == "private-barycenter-coreset" and rel.epsilon == 1.0
    assert (rel.unit, rel.relation, rel.conversion) == ("row", "replace-one-in-group", 1)
    assert "ledger rows: spent eps=1 of 3, 2 left (1 releases)" in stdout


def test_sample_on_a_replace_one_ledger_is_a_group_of_one(capsys, tmp_path, points_csv):
    """A local release has no add/remove reading; on a user-level replace-one ledger it
    is recorded as it is (a group of 1), which restates nothing: no --convert needed
    (issue 24, item 3: it used to be required even for a group of 1)."""
    led = tmp_path / "users.db"
    init(capsys, led, "--relation", "replace-one", epsilon=5)
    rc, stdout, err = _run(capsys, sample_args(points_csv, tmp_path / "out",
                                               "--ledger", led))
    assert rc == 0, err
    rel = _released(led, "sample")
    assert (rel.relation, rel.conversion, rel.epsilon) == ("local", 1, 2.0)
    assert "ledger users: spent eps=2 of 5, 3 left (1 releases)" in stdout


def test_sample_is_refused_on_a_row_ledger(capsys, tmp_path, points_csv):
    """A replaced row may take a user id not in the table, which adds a report: a
    row-level replace-one ledger does not cover a user-level local release (issue 24,
    item 2; it was recorded as a group of 2); the refusal names the ledger that does."""
    led = tmp_path / "rows.db"
    init(capsys, led, "--unit", "row", "--relation", "replace-one", epsilon=5)
    rc, _, err = _run(capsys, sample_args(points_csv, tmp_path / "out", "--ledger", led,
                                          "--convert"))
    _one_line_error(rc, err, "sample", "no documented conversion",
                    "unit user, relation replace-one")
    assert not (tmp_path / "out").exists() and Ledger.open(led).releases() == []


def test_sample_cannot_go_on_an_add_remove_ledger(capsys, tmp_path, points_csv):
    led = tmp_path / "ar.db"
    init(capsys, led)
    rc, _, err = _run(capsys, sample_args(points_csv, tmp_path / "out", "--ledger", led,
                                          "--convert"))
    _one_line_error(rc, err, "sample", "no documented conversion")
    assert not (tmp_path / "out").exists() and Ledger.open(led).releases() == []


@pytest.mark.parametrize("command", ["heatmap", "barycenter", "sample"])
def test_a_charge_past_the_total_is_refused_with_nothing_written(capsys, tmp_path,
                                                                 points_csv, groups_csv,
                                                                 command):
    led = tmp_path / "small.db"
    relation = "replace-one" if command == "sample" else "replace-one-in-group"
    unit = "user" if command == "sample" else "row"
    init(capsys, led, "--unit", unit, "--relation", relation, epsilon=1.5)
    # every release costs eps=1 on this ledger (the heatmap as a group of 4: a replaced
    # row may move between two users)
    make = {"heatmap": lambda o, *e: heatmap_args(points_csv, o, *e, epsilon=0.25),
            "barycenter": lambda o, *e: barycenter_args(groups_csv, o, *e, epsilon=1),
            "sample": lambda o, *e: sample_args(points_csv, o, *e, epsilon=1)}[command]
    flags = ("--ledger", led, "--convert")
    rc, _, err = _run(capsys, make(tmp_path / "first", *flags))
    assert rc == 0, err
    before = Ledger.open(led).releases()
    assert len(before) == 1
    rc, stdout, err = _run(capsys, make(tmp_path / "second", *flags))
    _one_line_error(rc, err, command, str(led), "small", "left", "no output was written")
    assert "eps=0.5 of 1.5 left (1 releases)" in err
    assert not (tmp_path / "second").exists()
    assert Ledger.open(led).releases() == before  # no new row
    assert "ledger small" not in stdout


def test_unit_relation_mismatch_and_convert(capsys, tmp_path, points_csv):
    """heatmap (user, add-remove) on a user/replace-one ledger: refused without
    --convert, recorded as a group of 2 (twice the epsilon) with it."""
    led = tmp_path / "ro.db"
    init(capsys, led, "--relation", "replace-one", epsilon=5)
    rc, _, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out", "--ledger", led))
    # plain words: what happened, why, the command that would work (issue 24, item 3)
    _one_line_error(rc, err, "heatmap", "--convert", "group of 2", "charged 2 times",
                    "nothing was read or charged", "Rerun with --convert",
                    "unit user, relation add-remove")
    assert "is not allowed" not in err
    assert not (tmp_path / "out").exists() and Ledger.open(led).releases() == []
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out",
                                                "--ledger", led, "--convert"))
    assert rc == 0, err
    rel = _released(led, "heatmap")
    assert (rel.unit, rel.relation, rel.conversion) == ("user", "add-remove", 2)
    assert rel.epsilon == pytest.approx(2.0)
    assert "ledger ro: spent eps=2 of 5, 3 left (1 releases)" in stdout


def test_ledger_refusals_come_before_the_data_is_read(capsys, tmp_path, groups_csv):
    missing_input = tmp_path / "no-such-input.csv"
    rc, _, err = _run(capsys, barycenter_args(missing_input, tmp_path / "out", "--ledger",
                                              tmp_path / "nope.db"))
    _one_line_error(rc, err, "barycenter", "--ledger", "nope.db")
    assert "no-such-input" not in err
    # a row-level barycenter says nothing about users: no conversion, even when asked
    led = tmp_path / "users.db"
    init(capsys, led)
    rc, _, err = _run(capsys, barycenter_args(missing_input, tmp_path / "out", "--ledger",
                                              led, "--convert"))
    _one_line_error(rc, err, "barycenter", "no documented conversion",
                    "nothing was read or charged", "unit row, relation replace-one",
                    "privot budget init")
    # --convert without a ledger
    rc, _, err = _run(capsys, barycenter_args(groups_csv, tmp_path / "out", "--convert"))
    _one_line_error(rc, err, "barycenter", "--convert")
    assert not (tmp_path / "out").exists()


def test_without_a_ledger_nothing_changes(capsys, tmp_path, points_csv):
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out"))
    assert rc == 0, err
    assert not any(line.startswith("ledger") for line in stdout.splitlines())


def test_a_curator_session(capsys, tmp_path, points_csv, groups_csv):
    """init, two releases of two capabilities, show: both listed, the rest left."""
    led = tmp_path / "survey.db"
    init(capsys, led, "--unit", "row", "--relation", "replace-one-in-group", epsilon=4)
    rc, out1, err = _run(capsys, heatmap_args(points_csv, tmp_path / "h", "--ledger", led,
                                              "--convert", epsilon=0.25))
    assert rc == 0, err
    assert "ledger survey: spent eps=1 of 4, 3 left (1 releases)" in out1
    rc, out2, err = _run(capsys, barycenter_args(groups_csv, tmp_path / "b",
                                                 "--ledger", led))
    assert rc == 0, err
    assert "ledger survey: spent eps=2 of 4, 2 left (2 releases)" in out2
    rc, report, err = _run(capsys, ["budget", "show", led])
    assert rc == 0, err
    assert "Releases (2):" in report and "remaining:  eps=2" in report
    lines = report.splitlines()
    first = next(ln for ln in lines if ln.strip().startswith("#1 "))
    second = next(ln for ln in lines if ln.strip().startswith("#2 "))
    assert "heatmap pyramid [released]" in first and "group of 4" in first
    assert str((tmp_path / "h").resolve()) in first
    assert "barycenter private-barycenter-coreset [released]" in second


# -- learn (torch) -------------------------------------------------------------------------

def test_learn_with_ledger_and_refusal(capsys, tmp_path):
    pytest.importorskip("torch")
    from privot.datasets import biased_fairness_data

    d = biased_fairness_data(120, p=0.8, d_core=2, d_spurious=0, rng=0)
    frame = pd.DataFrame(np.asarray(d.x, dtype=np.float64), columns=["f0", "f1"])
    frame["colour"] = np.where(d.sensitive == 1, "Black", "White")
    frame["label"] = np.where(d.y == 1, "yes", "no")
    data = tmp_path / "fair.csv"
    frame.to_csv(data, index=False)
    common = ["learn", data, "--target", "label", "--positive", "yes", "--sensitive",
              "colour", "--sensitive-values", "White,Black", "--bounds", "f0:-1:2,f1:-1:2",
              "--epsilon", "0.5", "--delta", "1e-5", "--epochs", "1",
              "--batch-fraction", "0.25", "--seed", "3"]
    led = tmp_path / "fair.db"
    init(capsys, led, "--delta", "1e-3", "--unit", "row", "--relation",
         "replace-one-in-group", "--filter", "basic", epsilon=0.8)
    rc, stdout, err = _run(capsys, [*common, "-o", tmp_path / "out", "--ledger", led])
    assert rc == 0, err
    rel = _released(led, "learn")
    assert 0.49 < rel.epsilon <= 0.5 and rel.delta == pytest.approx(1e-5)
    assert (rel.unit, rel.relation) == ("row", "replace-one-in-group")
    assert rel.event.kind == "subsampled-gaussian"  # what ran, for tight composition
    summary = next(ln for ln in stdout.splitlines() if ln.startswith("ledger fair: "))
    assert f"spent eps={rel.epsilon:.6g} of 0.8, " in summary
    assert summary.endswith(" left (1 releases)")
    # a second run does not fit: refused, no folder, no new row
    rc, _, err = _run(capsys, [*common, "-o", tmp_path / "again", "--ledger", led])
    _one_line_error(rc, err, "learn", str(led), "left", "no output was written")
    assert not (tmp_path / "again").exists()
    assert len(Ledger.open(led).releases()) == 1


def test_refusals_read_as_plain_words(capsys, tmp_path, points_csv):
    """issue 24, item 3: "--output='x' is not allowed: a new or empty folder" and
    "PATH=None is not allowed: a ledger file" read like validator internals."""
    out = tmp_path / "used"
    out.mkdir()
    (out / "keep.txt").write_text("an earlier file")
    rc, _, err = _run(capsys, heatmap_args(points_csv, out))
    _one_line_error(rc, err, "heatmap", "already holds files", "nothing was written",
                    "--force")
    assert "is not allowed" not in err and (out / "keep.txt").read_text() == "an earlier file"
    rc, _, err = _run(capsys, ["budget", "show"])
    _one_line_error(rc, err, "budget", "no ledger given", "privot budget show FILE",
                    "PRIVOT_LEDGER")
    assert "is not allowed" not in err


# -- planning: privot budget plan and --dry-run (issue 24, item 5) ------------------------

def test_dry_run_reports_the_charge_and_changes_nothing(capsys, tmp_path, points_csv):
    led = tmp_path / "plan.db"
    init(capsys, led, "--delta", "1e-6", epsilon=3)
    out = tmp_path / "out"
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, out, "--ledger", led,
                                                "--dry-run"))
    assert rc == 0, err
    line = stdout.strip()
    assert line.startswith("privot heatmap: dry run: ") and "\n" not in line
    assert "would be charged eps=1" in line and "accepted" in line
    assert "spent 0 -> 1 of 3, 2 left" in line and "nothing was read" in line
    assert not out.exists() and Ledger.open(led).releases() == []
    # what the dry run said is what the release then does
    rc, _, err = _run(capsys, heatmap_args(points_csv, out, "--ledger", led))
    assert rc == 0, err
    assert Ledger.open(led).status(pld=False).spent_epsilon == pytest.approx(1.0)
    # a release the ledger would refuse: exit status 1, still nothing charged
    rc, stdout, err = _run(capsys, heatmap_args(points_csv, tmp_path / "o2", "--ledger", led,
                                                "--dry-run", epsilon=2.5))
    assert rc == 1, err
    assert "would be refused" in stdout and "2 of 3 left" in stdout
    assert len(Ledger.open(led).releases()) == 1 and not (tmp_path / "o2").exists()
    # without a ledger: says nothing would be charged
    rc, stdout, _ = _run(capsys, heatmap_args(points_csv, tmp_path / "o3", "--dry-run"))
    assert rc == 0 and "no ledger" in stdout and not (tmp_path / "o3").exists()


def test_budget_plan_splits_what_is_left(capsys, tmp_path, points_csv):
    led = tmp_path / "split.db"
    init(capsys, led, "--delta", "1e-6", epsilon=4)
    rc, _, err = _run(capsys, heatmap_args(points_csv, tmp_path / "out", "--ledger", led))
    assert rc == 0, err
    rc, stdout, err = _run(capsys, ["budget", "plan", led, "--weights", "2,1,1", "--names",
                                    "heatmap,barycenter,sample"])
    assert rc == 0, err
    assert "Nothing is charged" in stdout and "heatmap" in stdout
    assert len(Ledger.open(led).releases()) == 1  # the plan recorded nothing
    rc, stdout, err = _run(capsys, ["budget", "plan", led, "--weights", "2,1,1", "--json"])
    assert rc == 0, err
    plan = json.loads(stdout)["plan"]
    # 3 of 4 left, weights 2:1:1 under basic composition (the basic route): 1.5, 0.75, 0.75
    assert [r["epsilon"] for r in plan] == pytest.approx([1.5, 0.75, 0.75], rel=1e-9)
    assert plan[-1]["left_after"] == pytest.approx(0.0, abs=1e-9)
    rc, _, err = _run(capsys, ["budget", "plan", led, "--weights", "2,0,1"])
    _one_line_error(rc, err, "budget", "--weights")
    rc, _, err = _run(capsys, ["budget", "plan", led, "--releases", "2", "--names", "a"])
    _one_line_error(rc, err, "budget", "--names")


def test_init_for_chooses_the_ledger_the_releases_need(capsys, tmp_path):
    """issue 24, item 3: a curator names the commands a ledger is for and gets the unit
    and relation that record them all at the least cost; a set no relation covers is
    refused with why, and nothing is created."""
    out = init(capsys, tmp_path / "a.db", "--delta", "1e-6", "--for",
               "heatmap,barycenter,learn")
    ledger = Ledger.open(tmp_path / "a.db")
    assert (ledger.unit, ledger.relation) == ("row", "replace-one-in-group")
    assert "heatmap: as a group of 4" in out and "barycenter: as it is" in out
    out = init(capsys, tmp_path / "b.db", "--for", "sample,heatmap")
    assert (Ledger.open(tmp_path / "b.db").unit, Ledger.open(tmp_path / "b.db").relation) \
        == ("user", "replace-one")
    assert "sample: as it is" in out and "heatmap: as a group of 2" in out
    rc, _, err = _run(capsys, ["budget", "init", tmp_path / "c.db", "--epsilon", 1,
                               "--for", "sample,barycenter"])
    _one_line_error(rc, err, "budget", "no one ledger records all of sample, barycenter",
                    "replace-one-in-group", "user-level local")
    assert not (tmp_path / "c.db").exists()
    rc, _, err = _run(capsys, ["budget", "init", tmp_path / "c.db", "--epsilon", 1,
                               "--for", "heatmap", "--unit", "row"])
    _one_line_error(rc, err, "budget", "not both")
    rc, _, err = _run(capsys, ["budget", "init", tmp_path / "c.db", "--epsilon", 1,
                               "--for", "heatmaps"])
    _one_line_error(rc, err, "budget", "heatmap, barycenter, sample, learn")


def test_the_commands_state_the_relations_of_the_table():
    """privot budget init --for reads RELEASE_RELATIONS; the library's releases state the
    same relations (a mismatch would choose a ledger that refuses them)."""
    from privot.cli._common import RELEASE_RELATIONS
    from privot.privacy.types import Neighbouring

    assert RELEASE_RELATIONS["barycenter"]["relation"] == \
        Neighbouring.REPLACE_ONE_IN_GROUP.value
    assert RELEASE_RELATIONS["learn"]["relation"] == Neighbouring.REPLACE_ONE_IN_GROUP.value
    assert RELEASE_RELATIONS["sample"]["relation"] == Neighbouring.LOCAL.value
    assert RELEASE_RELATIONS["heatmap"]["relation"] == Neighbouring.ADD_REMOVE.value
