"""``privot sample``: one eps-LDP sample per user; outputs, publishable split, errors."""

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
    n = 900
    frame = pd.DataFrame({"uid": rng.integers(0, 150, n),
                          "lon": np.clip(rng.normal(0.3, 0.1, n), 0, 0.999),
                          "lat": np.clip(rng.normal(0.6, 0.1, n), 0, 0.999)})
    frame.loc[0, "lon"] = 5.0  # outside the bounds: dropped
    path = tmp_path / "points.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _args(path, out, *extra):
    return ["sample", str(path), "--bounds", "0", "1", "0", "1", "--epsilon", "2",
            "--resolution", "8", "--user-column", "uid", "--x-column", "lon",
            "--y-column", "lat", "--seed", "3", "-o", str(out), *extra]


@pytest.mark.parametrize("mechanism,variant", [("wpm", "direct"), ("wpm", "linear"),
                                               ("wpm-entropic", "direct"),
                                               ("kpm", "direct"), ("exp", "direct"),
                                               ("krr", "direct")])
def test_sample_writes_the_release_and_keeps_ids_curator_side(points_csv, tmp_path, capsys,
                                                              mechanism, variant):
    path, frame = points_csv
    out = tmp_path / "out"
    assert main(_args(path, out, "--mechanism", mechanism, "--variant", variant)) == 0
    samples = pd.read_csv(out / "samples.csv")
    n_users = frame["uid"].nunique()  # every user id reports, a point inside or not
    assert list(samples.columns) == ["x", "y", "cell"] and len(samples) == n_users
    assert samples["cell"].between(0, 63).all()
    assert samples["cell"].is_monotonic_increasing  # sorted: no user order
    np.testing.assert_allclose(samples["x"], (samples["cell"] % 8 + 0.5) / 8)
    np.testing.assert_allclose(samples["y"], (samples["cell"] // 8 + 0.5) / 8)
    m = pd.read_csv(out / "base_measure.csv")
    est = pd.read_csv(out / "estimate.csv")
    # one row per cell, with its centre and its row (0 = south) and column (0 = west)
    assert list(est.columns) == ["cell", "x", "y", "row", "col", "estimate"]
    assert list(m.columns) == ["cell", "x", "y", "row", "col", "mass"]
    assert len(m) == len(est) == 64 and list(est["cell"]) == list(range(64))
    np.testing.assert_allclose(est["x"], (est["col"] + 0.5) / 8)
    np.testing.assert_allclose(est["y"], (est["row"] + 0.5) / 8)
    assert (est["cell"] == est["row"] * 8 + est["col"]).all()
    assert est["estimate"].sum() == pytest.approx(1.0) and (est["estimate"] >= 0).all()
    # no solver round-off written as if it were information
    assert not ((est["estimate"] != 0) & (est["estimate"].abs() < 1e-12)).any()
    release = json.loads((out / "release.json").read_text())
    assert release["epsilon"] == 2.0 and release["variant"] == variant
    assert release["mechanism"]["mechanism"] == mechanism
    assert "uid" not in (out / "samples.csv").read_text()
    curator = pd.read_csv(out / "curator-samples.csv")
    assert sorted(curator["user_id"]) == sorted(frame["uid"].unique())
    assert sorted(curator["cell"]) == sorted(samples["cell"])
    report = json.loads((out / "curator-report.json").read_text())
    assert report["n_outside_or_unusable"] == 1
    printed = capsys.readouterr()
    assert "points read" in printed.err and "points read" not in printed.out


def test_wpm_samples_concentrate_where_the_users_are(points_csv, tmp_path):
    """Users live near (0.3, 0.6); at eps = 8 the WPM's samples (one per user) must sit
    closer to there than the public base measure's mean: a utility check that fails
    for a mechanism ignoring mu (e.g. sampling m itself)."""
    path, _ = points_csv
    out = tmp_path / "out"
    assert main(_args(path, out, "--epsilon", "8")) == 0
    samples = pd.read_csv(out / "samples.csv")
    dist = np.hypot(samples["x"] - 0.3, samples["y"] - 0.6).mean()
    m = pd.read_csv(out / "base_measure.csv")["mass"].to_numpy()
    xs = (np.arange(64) % 8 + 0.5) / 8
    ys = (np.arange(64) // 8 + 0.5) / 8
    base = float((m / m.sum()) @ np.hypot(xs - 0.3, ys - 0.6))
    assert dist < 0.6 * base


def _twenty_users(tmp_path, name, *, moved_outside):
    """The same 20 users, three points each inside [0, 1]^2, but user 7 holds one point:
    inside, or moved outside the bounds."""
    rng = np.random.default_rng(5)
    uid = np.append(np.repeat(np.delete(np.arange(20), 7), 3), 7)
    frame = pd.DataFrame({"uid": uid, "lon": rng.uniform(0.05, 0.95, uid.size),
                          "lat": rng.uniform(0.05, 0.95, uid.size)})
    if moved_outside:
        frame.loc[frame.index[-1], "lon"] = 5.0
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("mechanism,variant", [("wpm", "direct"), ("wpm", "linear"),
                                               ("wpm-entropic", "direct")])
def test_neighbouring_tables_publish_the_same_number_of_reports(tmp_path, capsys,
                                                                 mechanism, variant):
    """Issue 23, item 3: one user's only point moves outside the bounds. Before the fix
    that user was dropped and 20 against 19 reports were published (release.json,
    stdout, the rows of samples.csv): an infinite epsilon under replace-one. Now every
    user id reports, and what is published has the same shape; release.json and stdout
    are identical (they carry no sample)."""
    published = []
    for name, moved in (("a", False), ("b", True)):
        out = tmp_path / f"out-{name}"
        path = _twenty_users(tmp_path, name, moved_outside=moved)
        assert main(_args(path, out, "--mechanism", mechanism, "--variant", variant)) == 0
        printed = capsys.readouterr()
        samples = pd.read_csv(out / "samples.csv")
        published.append({"rows": len(samples),
                          "release": (out / "release.json").read_bytes(),
                          "stdout": printed.out.replace(str(out), "OUT"),
                          "files": sorted(p.name for p in out.iterdir())})
    assert published[0] == published[1]
    assert published[0]["rows"] == 20
    assert json.loads(published[0]["release"])["n_reports"] == 20
    for name, moved in (("a", 0), ("b", 1)):  # curator-only: who had no usable point
        report = json.loads((tmp_path / f"out-{name}" / "curator-report.json").read_text())
        assert report["n_users_default_input"] == report["n_users_without_points_inside"]
        assert report["n_users_default_input"] == moved


def test_estimator_option_and_uncertainty_files(points_csv, tmp_path):
    """``--estimator`` picks the linear variant's estimate (default: EM stopped by the
    public rule); the uncertainty statement is written next to it."""
    path, _ = points_csv
    est = {}
    for name in ("stopped", "mle"):
        out = tmp_path / name
        assert main(_args(path, out, "--mechanism", "wpm", "--variant", "linear",
                          "--estimator", name)) == 0
        release = json.loads((out / "release.json").read_text())
        assert release["estimate"]["estimator"] == name
        assert "estimate_uncertainty.json" in release["publishable_files"]
        unc = json.loads((out / "estimate_uncertainty.json").read_text())
        assert unc["w1_radius"] > 0 and unc["level"] == 0.9
        est[name] = pd.read_csv(out / "estimate.csv")["estimate"].to_numpy()
        assert est[name].sum() == pytest.approx(1.0)
    assert not np.allclose(est["stopped"], est["mle"])
    assert main(_args(path, tmp_path / "bad", "--estimator", "em")) == 2


def test_help_says_what_is_public(capsys):
    assert main(["sample", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "What is public: the user list" in text
    assert "row-level ledgers" in text and "public default input" in text


def test_same_seed_same_release(points_csv, tmp_path):
    path, _ = points_csv
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(_args(path, a)) == 0
    assert main(_args(path, b, "--threads", "1")) == 0
    assert (a / "samples.csv").read_bytes() == (b / "samples.csv").read_bytes()


@pytest.mark.parametrize("extra,needle", [
    (["--epsilon", "0"], "epsilon"),
    (["--resolution", "0"], "resolution"),
    (["--n-iter", "0"], "--n-iter"),
    (["--p", "0.5"], "p"),
    (["--user-column", "nobody"], "nobody"),
    (["--mechanism", "laplace"], "mechanism"),
])
def test_bad_input_is_one_line_and_exit_2(points_csv, tmp_path, capsys, extra, needle):
    path, _ = points_csv
    assert main(_args(path, tmp_path / "o", *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error" in line]
    assert len(errors) == 1 and needle in errors[0]
    assert "Traceback" not in "\n".join(err)
