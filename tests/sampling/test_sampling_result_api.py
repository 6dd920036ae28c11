"""``PopulationSample``: short repr, ``to_dict``, ``estimate``, ``save`` (the files of
``privot sample``, one code path with the CLI) and ``plot``."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.sampling import make_mechanism, user_cell_counts
from privot.sampling.population import (
    CURATOR_FILES,
    PUBLISHABLE_FILES,
    estimate_population,
    sample_population,
)

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

GRID = Grid((0.0, 1.0, 0.0, 1.0), 6, aspect="stretch", dyadic=False)


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 500
    frame = pd.DataFrame({"uid": rng.integers(0, 80, n),
                          "lon": np.clip(rng.normal(0.3, 0.1, n), 0, 0.999),
                          "lat": np.clip(rng.normal(0.6, 0.1, n), 0, 0.999)})
    frame.loc[0, "lon"] = 5.0  # outside: dropped
    path = tmp_path_factory.mktemp("in") / "points.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def counts(points_csv):
    return user_cell_counts(points_csv, grid=GRID, user_column="uid", x_column="lon",
                            y_column="lat")


def _release(counts, name: str, variant: str, seed: int = 3):
    """What ``privot sample`` does with these settings (its defaults)."""
    mech = make_mechanism(name, points=GRID.cell_centre_points(), epsilon=2.0, p=1.0,
                          base_measure="best-uniform", lam=None, n_iter=40)
    channel = mech.channel() if variant == "linear" else None
    sample = sample_population(counts, mech, variant=variant,
                               rng=np.random.default_rng(seed), channel=channel)
    return mech, sample


@pytest.fixture(scope="module")
def direct(counts):
    return _release(counts, "wpm", "direct")


def test_repr_is_one_short_line(direct):
    _, sample = direct
    text = repr(sample)
    assert "\n" not in text and "[" not in text and len(text) < 200
    assert text.startswith("PopulationSample(wpm direct, epsilon=2 LDP, ")
    assert f"{sample.n_reports} reports" in text and "grid=6x6" in text
    assert "SEEDED" in text


def test_to_dict_is_json_ready_and_publishable_by_default(direct):
    _, sample = direct
    body = sample.to_dict()
    json.dumps(body)
    assert body["capability"] == "sample" and body["n_reports"] == sample.n_reports
    assert body["grid"]["resolution"] == 6 and "curator_only" not in body
    assert "user" not in json.dumps(body["grid"])
    full = sample.to_dict(curator=True)
    json.dumps(full)
    assert full["curator_only"]["n_outside_or_unusable"] == 1


@pytest.mark.parametrize("name,variant", [("wpm", "direct"), ("wpm", "linear"),
                                          ("krr", "direct")])
def test_estimate_is_the_server_estimate(counts, name, variant):
    mech, sample = _release(counts, name, variant)
    np.testing.assert_allclose(sample.estimate(), estimate_population(sample, mech))
    assert sample.estimate().sum() == pytest.approx(1.0)


def test_plot_returns_a_figure(direct):
    from matplotlib.figure import Figure

    _, sample = direct
    fig = sample.plot()
    assert isinstance(fig, Figure) and len(fig.axes) == 6  # 3 maps and 3 colorbars
    other = Figure()
    ax = other.add_subplot()
    assert sample.plot(ax, which="samples") is other
    with pytest.raises(InvalidParameterError, match="which"):
        sample.plot(which="nope")


def test_save_without_curator_writes_the_publishable_files_only(direct, tmp_path):
    _, sample = direct
    written = sample.save(tmp_path / "pub", curator=False)
    names = sorted(p.name for p in (tmp_path / "pub").iterdir())
    assert names == sorted(PUBLISHABLE_FILES) == written["publishable"]
    assert written["curator"] == []
    rel = json.loads((tmp_path / "pub" / "release.json").read_text())
    assert rel["publishable_files"] == sorted(PUBLISHABLE_FILES)
    assert "user_id" not in (tmp_path / "pub" / "samples.csv").read_text()


def test_a_sample_without_its_grid_is_refused(direct, tmp_path):
    _, sample = direct
    bare = SimpleNamespace(user_ids=np.asarray([0, 1]), indptr=np.asarray([0, 1, 2]),
                           cells=np.asarray([0, 5]), counts=np.asarray([1, 1]))
    mech = make_mechanism("krr", points=GRID.cell_centre_points(), epsilon=1.0)
    no_grid = sample_population(bare, mech, rng=np.random.default_rng(0))
    assert no_grid.grid is None and "grid=" not in repr(no_grid)
    with pytest.raises(InvalidParameterError, match="grid"):
        no_grid.save(tmp_path / "x")
    written = no_grid.save(tmp_path / "y", grid=GRID, curator=False)  # given: fine
    assert "samples.csv" in written["publishable"]


@pytest.mark.parametrize("name,variant", [("wpm", "direct"), ("wpm", "linear"),
                                          ("krr", "direct")])
def test_save_writes_what_the_cli_writes(points_csv, counts, tmp_path, capsys, name,
                                         variant):
    from privot.cli import sample as cli
    from privot.cli.main import main

    assert cli.PUBLISHABLE == PUBLISHABLE_FILES
    out = tmp_path / "cli"
    assert main(["sample", str(points_csv), "--bounds", "0", "1", "0", "1", "--epsilon", "2",
                 "--resolution", "6", "--columns", "lon,lat", "--user-column", "uid",
                 "--mechanism", name, "--variant", variant, "--seed", "3",
                 "--aspect", "stretch",  # GRID's (the CLI's default is square since #25)
                 "-o", str(out)]) == 0
    capsys.readouterr()
    _, sample = _release(counts, name, variant)
    lib = tmp_path / "lib"
    written = sample.save(lib)
    public = sorted(p.name for p in out.iterdir() if not p.name.startswith("curator-"))
    assert public == written["publishable"]
    for csv in ("samples.csv", "base_measure.csv", "estimate.csv", "curator-samples.csv"):
        assert (lib / csv).read_text() == (out / csv).read_text(), csv
    rel_cli = json.loads((out / "release.json").read_text())
    rel_lib = json.loads((lib / "release.json").read_text())
    assert rel_cli.pop("engine") == "duckdb"  # the only key the CLI adds
    assert rel_cli == rel_lib
    cur_cli = json.loads((out / "curator-report.json").read_text())
    cur_lib = json.loads((lib / "curator-report.json").read_text())
    assert cur_cli.pop("n_users_without_points_inside") == counts.n_users_empty
    seconds = cur_cli.pop("seconds")
    assert {"mechanism", "distributions", "sample"} <= set(seconds)  # the CLI's timings
    cur_lib.pop("seconds")
    assert cur_cli == cur_lib
    assert written["curator"] == sorted(CURATOR_FILES)


def test_linear_estimate_defaults_to_the_stopped_em(counts, tmp_path):
    """Issue 26, part 4: the linear variant's estimate is EM stopped by the public rule
    (``"stopped"``); ``"mle"`` is the old converged EM. ``release.json`` names the
    estimator and the rule (the same for neighbouring tables); the uncertainty statement
    is in its own publishable files."""
    from privot.sampling.estimators import (
        estimate_linear,
        estimate_linear_stopped,
        stopping_iterations,
    )

    mech, sample = _release(counts, "wpm", "linear")
    hist = sample.counts_per_output()
    np.testing.assert_array_equal(
        sample.estimate(), estimate_linear_stopped(hist, sample.channel, epsilon=2.0))
    np.testing.assert_array_equal(sample.estimate("mle"),
                                  estimate_linear(hist, sample.channel))
    np.testing.assert_array_equal(estimate_population(sample, mech, estimator="mle"),
                                  sample.estimate("mle"))
    with pytest.raises(InvalidParameterError, match="estimator"):
        sample.estimate("em")
    iv = sample.estimate_intervals()
    assert iv is sample.estimate_intervals()  # cached
    np.testing.assert_array_equal(iv.estimate, sample.estimate())
    assert iv.w1_radius > 0 and iv.n_iter == stopping_iterations(sample.n_reports, 2.0)
    sample.save(tmp_path / "pub", curator=False, png=False)
    rel = json.loads((tmp_path / "pub" / "release.json").read_text())
    assert rel["estimate"]["estimator"] == "stopped"
    assert rel["estimate"]["n_iter"] == iv.n_iter
    assert "w1_radius" not in json.dumps(rel)  # depends on the samples: not here
    unc = json.loads((tmp_path / "pub" / "estimate_uncertainty.json").read_text())
    assert unc["w1_radius"] == pytest.approx(iv.w1_radius) and unc["level"] == 0.9
    table = pd.read_csv(tmp_path / "pub" / "estimate_intervals.csv")
    assert list(table.columns) == ["cell", "x", "y", "estimate", "lower", "upper"]
    assert len(table) == 36 and (table["lower"] <= table["upper"]).all()
    np.testing.assert_allclose(table["estimate"], sample.estimate(), atol=1e-11)
    mle = sample.save(tmp_path / "mle", curator=False, png=False, estimator="mle")
    assert "estimate.csv" in mle["publishable"]
    np.testing.assert_allclose(np.loadtxt(tmp_path / "mle" / "estimate.csv",
                                          delimiter=",", skiprows=1, usecols=5),
                               sample.estimate("mle"), atol=1e-11)
