"""``privot repair`` (issue 26, part 2): the files by audience, refusals before anything
is read or charged, the ledger, and publishable files that depend on the release only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pytest.importorskip("matplotlib")


def _write(path, scores, groups):
    path.write_text("s,g\n" + "".join(f"{float(x)!r},{y}\n"
                                      for x, y in zip(scores, groups, strict=True)))
    return path


@pytest.fixture
def scores_csv(tmp_path):
    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b"], 600)
    s = np.where(g == "a", rng.beta(5, 2, 600), rng.beta(2, 5, 600))
    s[0] = 1.3  # clipped into the bounds (curator-only count)
    return _write(tmp_path / "scores.csv", s, g)


def _args(path, out, *extra):
    return ["repair", str(path), "--score-column", "s", "--group-column", "g",
            "--epsilon", "1", "--bounds", "0", "1", "--seed", "3", "-o", str(out),
            *[str(e) for e in extra]]


def _one_line_error(capsys, rc, *words):
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len([line for line in err if "error" in line]) == 1
    for w in words:
        assert w in err[-1], err


def test_repair_writes_the_release_and_the_curator_files_apart(capsys, tmp_path,
                                                               scores_csv):
    out = tmp_path / "out"
    assert main(_args(scores_csv, out)) == 0
    captured = capsys.readouterr()
    assert "2 group score distributions released" in captured.out
    assert "1 scores clipped" in captured.err and "clipped" not in captured.out
    names = {p.name for p in out.iterdir()}
    assert names == {"release.json", "quantiles.csv", "repair.png",
                     "curator-report.json", "curator-repaired-scores.csv"}
    release = json.loads((out / "release.json").read_text())
    assert release["publishable_files"] == ["quantiles.csv", "release.json", "repair.png"]
    assert release["relation"] == "replace-one-in-group" and release["epsilon"] == 1.0
    assert [g["label"] for g in release["groups"]] == ["a", "b"]
    assert "n_clipped" not in json.dumps(release)
    report = json.loads((out / "curator-report.json").read_text())
    assert sum(report["n_clipped"].values()) == 1
    assert {"read", "histograms"} <= set(report["seconds"])
    rows = (out / "curator-repaired-scores.csv").read_text().splitlines()
    assert rows[0] == "row,g,s,repaired" and len(rows) == 601


def test_publishable_files_depend_on_the_release_only(capsys, tmp_path):
    """Two tables whose histograms are equal (one score moved inside its bin, one score
    moved further out of the bounds) give byte-identical publishable files and stdout."""
    rng = np.random.default_rng(1)
    g = rng.choice(["a", "b"], 300)
    s = rng.uniform(0.05, 0.95, 300)
    s[0] = 1.5
    t = s.copy()
    t[1] = np.floor(s[1] * 16) / 16 + 0.001  # same bin of 16
    t[0] = 9.0  # clipped to the same bound
    outs = []
    for i, scores in enumerate((s, t)):
        path = _write(tmp_path / f"t{i}.csv", scores, g)
        out = tmp_path / f"out{i}"
        assert main(_args(path, out, "--bins", 16)) == 0
        outs.append((out, capsys.readouterr().out.replace(str(out), "OUT")))
    assert outs[0][1] == outs[1][1]
    for name in ("release.json", "quantiles.csv", "repair.png"):
        assert ((outs[0][0] / name).read_bytes() == (outs[1][0] / name).read_bytes()), name


@pytest.mark.parametrize("extra, words", [
    (["--epsilon", "0"], ["--epsilon"]),
    (["--bounds", "1", "0"], ["--bounds"]),
    (["--theta", "1.5"], ["--theta"]),
    (["--bins", "1"], ["--bins"]),
    (["--levels", "1"], ["--levels"]),
])
def test_bad_arguments_are_one_line_and_nothing_is_written(capsys, tmp_path, scores_csv,
                                                            extra, words):
    out = tmp_path / "out"
    _one_line_error(capsys, main(_args(scores_csv, out, *extra)), *words)
    assert not out.exists()


def test_bad_data_is_refused_before_anything_is_charged(capsys, tmp_path):
    from privot.privacy.ledger import Ledger

    led = tmp_path / "rows.db"
    Ledger.create(led, epsilon=3.0, unit="row", relation="replace-one-in-group")
    one = _write(tmp_path / "one.csv", [0.1, 0.2, 0.3], ["a", "a", "a"])
    _one_line_error(capsys, main(_args(one, tmp_path / "o1", "--ledger", led)),
                    "at least two groups")
    bad = tmp_path / "bad.csv"
    bad.write_text("s,g\n0.1,a\nx,b\n0.3,b\n")
    _one_line_error(capsys, main(_args(bad, tmp_path / "o2", "--ledger", led)),
                    "non-numeric score")
    nogroup = tmp_path / "nogroup.csv"
    nogroup.write_text("s,g\n0.1,a\n0.2,\n0.3,b\n")
    _one_line_error(capsys, main(_args(nogroup, tmp_path / "o3", "--ledger", led)),
                    "no group")
    _one_line_error(capsys, main(["repair", str(one), "--score-column", "nope",
                                  "--group-column", "g", "--epsilon", "1", "-o",
                                  str(tmp_path / "o4")]), "nope")
    assert Ledger.open(led).status(pld=False).spent_epsilon == 0.0
    assert not any((tmp_path / f"o{i}").exists() for i in range(1, 5))


def test_the_ledger_records_a_row_level_in_group_release(capsys, tmp_path, scores_csv):
    from privot.privacy.ledger import Ledger

    plain = tmp_path / "plain.db"
    Ledger.create(plain, epsilon=3.0, unit="row", relation="replace-one")
    rc = main(_args(scores_csv, tmp_path / "o0", "--ledger", plain, "--convert"))
    _one_line_error(capsys, rc, "no documented conversion")
    led = tmp_path / "rows.db"
    Ledger.create(led, epsilon=1.5, unit="row", relation="replace-one-in-group")
    assert main(_args(scores_csv, tmp_path / "o1", "--ledger", led)) == 0
    assert "spent eps=1 of 1.5" in capsys.readouterr().out
    rc = main(_args(scores_csv, tmp_path / "o2", "--ledger", led))
    assert rc == 2 and not (tmp_path / "o2").exists()
    assert main(_args(scores_csv, tmp_path / "o3", "--ledger", led, "--dry-run")) == 1
    assert "would be refused" in capsys.readouterr().out
    assert not (tmp_path / "o3").exists()


def test_parser_literals_are_the_librarys():
    from privot.cli.repair import PUBLISHABLE
    from privot.cli.repair import WEIGHTS as CLI_WEIGHTS
    from privot.learning.repair import DEFAULT_LEVELS, WEIGHTS
    from privot.learning.repair_result import PUBLISHABLE_FILES

    assert set(PUBLISHABLE) == set(PUBLISHABLE_FILES) and CLI_WEIGHTS == WEIGHTS
    assert DEFAULT_LEVELS == 201


def test_a_noise_dominated_release_is_flagged_not_reported_as_success(capsys, tmp_path):
    rng = np.random.default_rng(2)
    path = _write(tmp_path / "small.csv", rng.uniform(0, 1, 40), ["a", "b"] * 20)
    out = tmp_path / "out"
    assert main(["repair", str(path), "--score-column", "s", "--group-column", "g",
                 "--epsilon", "0.1", "--seed", "1", "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "FLAGGED (public): noise-dominated: group 'a'" in stdout
    release = json.loads((out / "release.json").read_text())
    assert release["degenerate"] is True and len(release["flags"]) == 2
