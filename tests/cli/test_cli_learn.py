"""``privot learn``: a fair classifier by DP-SGD (paper 004); files, publishable split,
loading the model, and bad inputs (one line on stderr, exit status 2)."""

from __future__ import annotations

import contextlib
import importlib
import io
import json

import numpy as np
import pytest

from privot.cli._output import CURATOR_PREFIX
from privot.cli.main import main

pd = pytest.importorskip("pandas")
torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")

FEATURES = ["f0", "f1", "f2", "f3"]
BOUNDS = ",".join(f"{c}:-1:2" for c in FEATURES)
# 20 steps at epsilon 0.5: a few seconds of calibration and training
COMMON = ["--target", "label", "--positive", "yes", "--sensitive", "colour",
          "--sensitive-values", "White,Black", "--bounds", BOUNDS,
          "--categories", "kind:a|b|c", "--epsilon", "0.5", "--epochs", "5",
          "--batch-fraction", "0.25", "--seed", "3"]


def _frame(n: int = 300) -> pd.DataFrame:
    from privot.datasets import biased_fairness_data

    d = biased_fairness_data(n, p=0.8, d_core=2, d_spurious=2, rng=0)
    frame = pd.DataFrame(np.asarray(d.x, dtype=np.float64), columns=FEATURES)
    frame["colour"] = np.where(d.sensitive == 1, "Black", "White")
    frame["kind"] = np.random.default_rng(1).choice(["a", "b", "c"], n)
    frame["label"] = np.where(d.y == 1, "yes", "no")
    return frame


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs on neighbouring tables (one record replaced inside its group), same seed."""
    tmp = tmp_path_factory.mktemp("learn")
    a = _frame()
    b = a.copy()
    b.loc[7, FEATURES] = [1e300, -5.0, 0.25, np.nan]  # clipped, clipped, inside, missing
    b.loc[7, "kind"] = "zzz"
    b.loc[7, "label"] = "no" if a.loc[7, "label"] == "yes" else "yes"
    results = {}
    for name, frame in (("a", a), ("b", b)):
        path = tmp / f"{name}.csv"
        frame.to_csv(path, index=False)
        out = tmp / f"out-{name}"
        stdout, stderr = io.StringIO(), io.StringIO()  # capsys is function-scoped
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(["learn", str(path), *COMMON, "-o", str(out), "--show-metrics"])
        results[name] = (rc, stdout.getvalue(), stderr.getvalue(), out, frame)
    return results


def test_files_and_summary(runs):
    rc, out, err, folder, _ = runs["a"]
    assert rc == 0, err
    names = {p.name for p in folder.iterdir()}
    assert names == {"model.pt", "release.json", "privacy.png", "curator-metrics.json",
                     "curator-scores.png", "curator-training.png", "curator-report.json"}
    assert all(n.startswith(CURATOR_PREFIX) for n in names
               if n not in ("model.pt", "release.json", "privacy.png"))
    for png in ("privacy.png", "curator-scores.png", "curator-training.png"):
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # stdout: public values only; the curator line (--show-metrics) goes to stderr
    assert "epsilon = 0.5" in out and "sigma" in out and "20 DP-SGD steps" in out
    assert "SEEDED" in out and "accuracy" not in out
    assert "curator only" in err and "accuracy" in err
    # the stated error of one step (issue 28), public: on stdout and in release.json
    assert "each step's noise: norm <=" in out and "noise-to-signal >=" in out
    stated = json.loads((folder / "release.json").read_text())["error"]
    assert stated["confidence"] == 0.99 and stated["bound"] > 0
    assert f"norm <= {stated['bound']:.4g}" in out


def test_release_json_holds_public_values_only(runs):
    _, _, _, folder, frame = runs["a"]
    release = json.loads((folder / "release.json").read_text())
    privacy = release["privacy"]
    assert privacy["epsilon"] == pytest.approx(0.5, abs=1e-3)
    assert privacy["steps"] == 20 and privacy["steps_taken"] == 20
    sizes = privacy["group_sizes"]
    assert set(sizes) == {"A=White", "A=Black"}
    n_train = sum(sizes.values())
    assert n_train == 240  # 300 rows, 20% held out
    assert privacy["delta"] == pytest.approx(1 / n_train**2)
    assert "group sizes are public" in privacy["relation"]
    assert "group sizes are public" in release["public_by_relation"]
    assert release["secure"] is False and "NOT fit" in release["publication"]
    assert release["model"]["layers"] == [7, 1]
    assert release["features"]["columns"] == [*FEATURES, "kind=a", "kind=b", "kind=c"]
    assert release["hyperparameters"]["steps"] == 20
    assert release["epsilon_curve"]["steps"][-1] == 20
    assert sorted(release["publishable_files"]) == ["model.pt", "privacy.png",
                                                    "release.json"]
    keys = _keys(release)
    for word in ("accuracy", "parity", "odds", "loss_", "erm", "final", "rows", "positives",
                 "seconds", "clipped_fraction", "metrics", "scores"):
        assert not any(word in k for k in keys), word
    # no count but the group sizes (and numbers derived from them)
    assert 300 not in _numbers(release) and 60 not in _numbers(release)
    assert int((frame["label"] == "yes").sum()) not in _numbers(release)


def _keys(obj):
    if isinstance(obj, dict):
        return [str(k).lower() for k in obj] + [k for x in obj.values() for k in _keys(x)]
    if isinstance(obj, list):
        return [k for x in obj for k in _keys(x)]
    return []


def _numbers(obj):
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in _numbers(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in _numbers(x)]
    return [obj] if isinstance(obj, (int, float)) and not isinstance(obj, bool) else []


def test_publishable_files_do_not_depend_on_one_record(runs):
    """Neighbouring tables (one record replaced inside its group, with values clipped,
    missing and an unknown category), same seed: release.json and privacy.png are
    byte-identical; model.pt and the curator files may differ."""
    (rc_a, out_a, _, dir_a, _), (rc_b, out_b, _, dir_b, _) = runs["a"], runs["b"]
    assert rc_a == rc_b == 0
    for name in ("release.json", "privacy.png"):
        assert (dir_a / name).read_bytes() == (dir_b / name).read_bytes(), name
    assert out_a.replace(str(dir_a), "OUT") == out_b.replace(str(dir_b), "OUT")
    # the curator report does see the replaced record
    cols_a = json.loads((dir_a / "curator-report.json").read_text())["columns"]
    cols_b = json.loads((dir_b / "curator-report.json").read_text())["columns"]
    assert cols_b["f0"]["above_bounds"] == cols_a["f0"]["above_bounds"] + 1
    assert cols_b["f3"]["missing_or_non_numeric"] == cols_a["f3"]["missing_or_non_numeric"] + 1
    assert cols_b["kind"]["other_or_missing"] == cols_a["kind"]["other_or_missing"] + 1


def test_model_pt_loads_into_the_architecture(runs):
    from privot.learning.result import build_classifier, load_model

    _, _, _, folder, _ = runs["a"]
    state = torch.load(folder / "model.pt", weights_only=True)
    model = build_classifier(7, model="logistic", seed=0)
    model.load_state_dict(state)
    loaded = load_model(folder)
    # fixed inputs (an unseeded draw made the test flaky: the trained logistic model's
    # sigmoid rounds to exactly 1.0 in float32 on some inputs)
    x = torch.rand(5, 7, generator=torch.Generator().manual_seed(0))
    out = loaded(x)
    assert out.shape == (5, 1) and bool(((out > 0) & (out < 1)).all())
    torch.testing.assert_close(out, model(x))


def test_curator_metrics_before_and_after(runs):
    _, _, _, folder, _ = runs["a"]
    metrics = json.loads((folder / "curator-metrics.json").read_text())
    assert "never publish" in metrics["warning"]
    for when in ("before", "after"):
        for split, n in (("train", 240), ("test", 60)):
            m = metrics[when][split]
            assert m["n"] == n
            assert 0 <= m["accuracy"]["estimate"] <= 1
            assert 0 <= m["demographic_parity_difference"]["estimate"] <= 1


def test_eo_mlp_adam_quiet(tmp_path, capsys):
    path = tmp_path / "d.parquet"
    _frame(200).to_parquet(path)
    out = tmp_path / "out"
    rc, stdout, err = _run(capsys, ["learn", path, *COMMON, "--criterion", "eo", "--model",
                                    "mlp", "--hidden", "8", "--optimizer", "adam",
                                    "--jacobian-clipping", "per-coordinate", "--epochs", "2",
                                    "--quiet", "-o", out])
    assert rc == 0, err
    assert stdout == ""
    release = json.loads((out / "release.json").read_text())
    assert release["privacy"]["criterion"] == "eo"
    assert len(release["privacy"]["group_sizes"]) == 4
    assert release["model"]["layers"] == [7, 8, 1]
    from privot.learning.result import load_model

    assert load_model(out)(torch.rand(3, 7)).shape == (3, 1)


# -- bad input: one line on stderr naming the parameter, exit status 2 -------------------

@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("learn-bad")
    frame = _frame(120)
    path = tmp / "d.csv"
    frame.to_csv(path, index=False)
    three = frame.copy()
    three.loc[0, "colour"] = "Other"
    (tmp / "three.csv").write_text(three.to_csv(index=False))
    one = frame.copy()
    one["colour"] = "White"
    one.loc[0, "colour"] = "Black"
    (tmp / "one.csv").write_text(one.to_csv(index=False))
    return tmp


def _replace(argv, flag, value):
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


@pytest.mark.parametrize("change,expect", [
    (("--target", "nope"), "nope"),
    (("--sensitive", "nope"), "nope"),
    (("--epsilon", "0"), "--epsilon"),
    (("--epsilon", "-1"), "--epsilon"),
    ((None, ["--delta", "1"]), "--delta"),
    ((None, ["--alpha", "1.5"]), "--alpha"),
    ((None, ["--alpha", "-0.1"]), "--alpha"),
    ((None, ["--clip", "0"]), "--clip"),
    ((None, ["--M", "0"]), "--M"),
    ((None, ["--L", "-1"]), "--L"),
    ((None, ["--lr", "0"]), "--lr"),
    ((None, ["--test-fraction", "1"]), "--test-fraction"),
    (("--batch-fraction", "1.5"), "--batch-fraction"),
    (("--sensitive-values", "White"), "--sensitive-values"),
    (("--sensitive-values", "White,Purple"), "--sensitive-values"),
    ((None, ["--features", "f0,f1,kind,extra"]), "extra"),  # no public encoding
    (("--bounds", "f0:1:0,f1:-1:2,f2:-1:2,f3:-1:2"), "--bounds"),
    (("--categories", "kind"), "--categories"),
    ((None, ["--model", "mlp", "--hidden", "0"]), "--hidden"),
])
def test_bad_input_exits_2_with_one_line(csv, tmp_path, capsys, change, expect):
    argv = ["learn", csv / "d.csv", *COMMON, "-o", tmp_path / "out"]
    flag, value = change
    argv = [*argv, *value] if flag is None else _replace(argv, flag, value)
    rc, out, err = _run(capsys, argv)
    assert rc == 2, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert len(lines) == 1 and expect in lines[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name,expect", [("three.csv", "--sensitive-values"),
                                         ("one.csv", "--sensitive")])
def test_bad_sensitive_column_exits_2(csv, tmp_path, capsys, name, expect):
    rc, _, err = _run(capsys, ["learn", csv / name, *COMMON, "--test-fraction", "0",
                               "-o", tmp_path / "out"])
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert len(lines) == 1 and expect in lines[0], err


def test_choices_are_the_librarys():
    from privot.cli import learn

    assert learn._CRITERIA == importlib.import_module("privot.learning.groups").CRITERIA
    assert learn._JACOBIAN_CLIPPINGS == importlib.import_module(
        "privot.learning.clipping").JACOBIAN_CLIPPINGS
    assert learn._MODELS == importlib.import_module("privot.learning.result").MODELS
    assert learn.PUBLISHABLE == importlib.import_module(
        "privot.learning.result").PUBLISHABLE_FILES


# -- issue 26: the target's and the groups' values checked before the charge -----------

def _ledger(tmp_path, capsys):
    path = tmp_path / "d.ledger"
    rc, _, err = _run(capsys, ["budget", "init", path, "--epsilon", "5", "--delta", "1e-4",
                               "--unit", "row", "--relation", "replace-one-in-group"])
    assert rc == 0, err
    return path


def _spent(path):
    from privot.privacy.ledger import Ledger

    status = Ledger.open(path).status()
    return status.spent_epsilon, len(Ledger.open(path).releases())


@pytest.mark.parametrize("change,expect", [
    (("--positive", "Yes"), ["--positive", "'yes'", "'no'", "did you mean 'Yes' -> 'yes'"]),
    (("--positive", "maybe"), ["--positive", "never occurs", "'yes'", "'no'"]),
    (("--sensitive-values", "white,Black"),
     ["--sensitive-values", "'White'", "did you mean 'white' -> 'White'"]),
    (("--sensitive-values", "White,Purple"), ["--sensitive-values", "'Black'"]),
])
def test_absent_value_refused_before_the_charge(csv, tmp_path, capsys, change, expect):
    ledger = _ledger(tmp_path, capsys)
    before = _spent(ledger)
    argv = _replace(["learn", csv / "d.csv", *COMMON, "--ledger", ledger,
                     "-o", tmp_path / "out"], *change)
    rc, _, err = _run(capsys, argv)
    assert rc == 2, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert len(lines) == 1, err
    for word in expect:
        assert word in lines[0], (word, lines[0])
    assert _spent(ledger) == before  # nothing charged
    assert not (tmp_path / "out").exists()


def test_one_class_target_refused(csv, tmp_path, capsys):
    frame = pd.read_csv(csv / "d.csv")
    frame["label"] = "yes"
    path = tmp_path / "all-yes.csv"
    frame.to_csv(path, index=False)
    rc, _, err = _run(capsys, ["learn", path, *COMMON, "-o", tmp_path / "out"])
    assert rc == 2 and "--positive" in err and "every row" in err, err


# -- issue 26: a degenerate (constant) model is flagged, never shown as fair --------------

def test_constant_model_flagged(tmp_path, capsys):
    """A run that cannot move (lr tiny) from an initialisation predicting one class for
    everyone: stderr warns, --show-metrics says a parity gap 0 is not fairness, and the
    curator report holds the flag."""
    path = tmp_path / "d.csv"
    frame = _frame(200)
    for c in FEATURES:  # every feature at its lower bound: the scores are sigmoid(b)
        frame[c] = -1.0
    frame["kind"] = "zzz"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    rc, _, err = _run(capsys, ["learn", path, *COMMON, "--lr", "1e-9", "--show-metrics",
                               "-o", out])
    assert rc == 0, err
    assert "WARNING" in err and "degenerate" in err, err
    assert "constant model: parity gap 0 is not fairness" in err
    report = json.loads((out / "curator-report.json").read_text())
    flag = report["degenerate_model"]
    assert flag["degenerate"] is True and flag["majority_share"] >= 0.99
    metrics = json.loads((out / "curator-metrics.json").read_text())
    assert metrics["degenerate"]["after"]["test"]["degenerate"] is True
    # the publishable files say nothing of it
    assert "degenerate" not in (out / "release.json").read_text()


def test_learning_model_not_flagged(runs):
    _, _, err, folder, _ = runs["a"]
    report = json.loads((folder / "curator-report.json").read_text())
    assert "degenerate" in report["degenerate_model"]
    if not report["degenerate_model"]["degenerate"]:
        assert "WARNING" not in err


def test_defaults_are_the_librarys_rule(runs):
    """Every hyperparameter not given comes from privot.learning.defaults, recorded."""
    from privot.learning.defaults import DEFAULT_RULE, default_hyperparameters

    _, _, _, folder, _ = runs["a"]
    h = json.loads((folder / "release.json").read_text())["hyperparameters"]
    rule = default_hyperparameters(len(FEATURES) + 1)  # f0..f3 and kind
    assert h["clip"] == pytest.approx(rule.clip) and h["M"] == rule.M
    assert h["L"] == pytest.approx(rule.L)
    assert (h["optimizer"], h["lr"], h["momentum"], h["schedule"]) == (
        rule.optimizer, rule.lr, rule.momentum, rule.schedule)
    assert h["batch_fraction"] == 0.25 and h["steps"] == 20  # given: --epochs 5
    assert h["defaults"]["rule"] == DEFAULT_RULE
    assert h["defaults"]["taken_from_rule"] == ["--L", "--M", "--clip", "--lr",
                                                "--momentum", "--optimizer", "--schedule"]
