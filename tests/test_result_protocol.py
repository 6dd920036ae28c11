"""Issue 25: the four capabilities' results share one protocol (``privot._result``).

``release_dict()``, ``curator_report()``, ``to_dict(curator=False)`` publishable only by
default, ``save(folder)`` writing publishable and curator files apart (by the one naming
rule), ``plot(ax=None)`` returning one Figure, a float ``epsilon``, the cost and the
relation.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot._result import CURATOR_PREFIX, CURATOR_REPORT, RELEASE_FILE, ReleaseResult
from privot.privacy.types import Neighbouring, PrivacyCost

pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")


def _points(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, 60, n), "x": rng.uniform(0.1, 0.9, n),
                         "y": rng.uniform(0.2, 0.8, n)})


def _heatmap():
    from privot.grid import Grid
    from privot.heatmaps import private_heatmap

    return private_heatmap(_points(), grid=Grid((0.0, 1.0, 0.0, 1.0), 16), epsilon=1.0,
                           user="uid", x="x", y="y", rng=np.random.default_rng(1))


def _barycenter():
    from privot.barycenters import PublicBounds, private_barycenter

    rng = np.random.default_rng(2)
    groups = [np.clip(c + 0.08 * rng.normal(size=(300, 2)), 0, 1)
              for c in (np.array([0.3, 0.3]), np.array([0.7, 0.6]))]
    return private_barycenter(groups, bounds=PublicBounds.box([0.0, 0.0], [1.0, 1.0]),
                              m=4, epsilon=1.0, rng=np.random.default_rng(3))


def _sample(tmp_path):
    from privot.grid import Grid
    from privot.sampling import make_mechanism, user_cell_counts
    from privot.sampling.population import sample_population

    grid = Grid((0.0, 1.0, 0.0, 1.0), 4, aspect="stretch", dyadic=False)
    path = tmp_path / "points.csv"
    _points().to_csv(path, index=False)
    counts = user_cell_counts(path, grid=grid, user_column="uid", x_column="x",
                              y_column="y")
    mech = make_mechanism("wpm", points=grid.cell_centre_points(), epsilon=2.0)
    return sample_population(counts, mech, rng=np.random.default_rng(4))


def _learning():
    torch = pytest.importorskip("torch")
    from privot.learning import LearningResult
    from privot.learning.result import build_classifier, describe_classifier

    model = build_classifier(3, seed=0)
    privacy = {"epsilon": 1.5, "delta": 1e-5, "steps": 10, "noise_multiplier": 1.2,
               "sampling_rate": 0.1, "penalty": "sp", "alpha": 1.0,
               "secure_randomness": False}
    steps = np.arange(0, 11, 5)
    history = {f: np.zeros(3) for f in ("loss", "erm", "penalty", "clipped_fraction",
                                        "seconds")}
    history.update(step=np.arange(1, 4), nonfinite=np.zeros(3, dtype=np.int64))
    assert isinstance(model, torch.nn.Module)
    return LearningResult(model=model, privacy=privacy, epsilon_steps=steps,
                          epsilon_curve=np.array([0.0, 1.0, 1.5]),
                          architecture=describe_classifier(3), history=history,
                          curator={"rows": 123, "seconds": {"train": 0.5}})


def _curator_words(report: dict) -> set[str]:
    return {k for k in report if k not in ("warning",)}


@pytest.fixture(params=["heatmap", "barycenter", "sample", "learning"])
def result(request, tmp_path):
    if request.param == "heatmap":
        return _heatmap()
    if request.param == "barycenter":
        return _barycenter()
    if request.param == "sample":
        return _sample(tmp_path)
    return _learning()


def test_to_dict_is_publishable_by_default(result):
    assert isinstance(result, ReleaseResult)
    public = result.to_dict()
    assert "curator_only" not in public
    text = json.dumps(public)  # JSON-ready
    for key in _curator_words(result.curator_report()):
        assert f'"{key}"' not in text or key in json.dumps(result.release_dict())
    full = result.to_dict(curator=True)
    json.dumps(full)
    assert full["curator_only"] == json.loads(json.dumps(full["curator_only"]))
    assert {k: v for k, v in full.items() if k != "curator_only"} == public
    assert isinstance(result.release_dict(), dict)


def test_epsilon_cost_and_relation(result):
    assert isinstance(result.epsilon, float)
    assert isinstance(result.cost, PrivacyCost)
    assert result.cost.epsilon == pytest.approx(result.epsilon)
    assert isinstance(result.relation, Neighbouring)


def test_plot_returns_one_figure(result):
    from matplotlib.figure import Figure

    fig = result.plot()
    assert isinstance(fig, Figure)


def test_save_writes_publishable_and_curator_files_apart(result, tmp_path):
    folder = tmp_path / "out"
    written = result.save(folder)
    public, curator = written["publishable"], written["curator"]
    assert RELEASE_FILE in public and CURATOR_REPORT in curator
    assert not any(n.startswith(CURATOR_PREFIX) for n in public)
    assert all(n.startswith(CURATOR_PREFIX) for n in curator)
    on_disk = {p.name for p in folder.iterdir()}
    assert set(public) | set(curator) == on_disk
    release = json.loads((folder / RELEASE_FILE).read_text())
    assert release["publishable_files"] == sorted(public)
    report = json.loads((folder / CURATOR_REPORT).read_text())
    assert "NOT differentially private" in report["warning"]
    assert report["curator_files"] == sorted(curator)


def test_learning_result_keeps_its_curve_and_all_its_figures():
    from matplotlib.figure import Figure

    res = _learning()
    assert res.epsilon == 1.5 and res.epsilon_curve.tolist() == [0.0, 1.0, 1.5]
    assert res.to_dict()["epsilon_curve"]["epsilon"] == [0.0, 1.0, 1.5]
    figures = res.figures()
    assert set(figures) == {"privacy.png", "curator-training.png"}
    assert isinstance(res.plot(which="training"), Figure)
    ax = Figure().add_subplot()
    assert res.plot(ax) is ax.figure
