"""privot.learning.plot: figures with the expected panels, saved as PNG (Agg)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from privot.errors import InvalidDataError, InvalidParameterError  # noqa: E402
from privot.learning.plot import (  # noqa: E402
    plot_frontier,
    plot_score_distributions,
    plot_training,
)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    after = np.clip(0.5 * y + 0.1 * s + 0.4 * rng.random(n), 0, 1)
    before = np.clip(0.3 * y + 0.4 * s + 0.3 * rng.random(n), 0, 1)
    return after, before, s, y


def _save(fig, tmp_path, name):
    path = tmp_path / name
    fig.savefig(path, dpi=40)
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_score_distributions_panels(tmp_path):
    after, before, s, y = _data()
    fig = plot_score_distributions(after, s, title="one")
    assert len(fig.axes) == 1
    fig = plot_score_distributions(after, s, before=before, labels=["men", "women"])
    assert len(fig.axes) == 2
    assert [a.get_title() for a in fig.axes] == ["before", "after"]
    assert fig.axes[0].get_legend() is not None
    fig = plot_score_distributions(after, s, before=before, y_true=y,
                                   labels={0: "A=0", 1: "A=1"})
    assert len(fig.axes) == 4
    assert fig.axes[0].get_xlabel() == "score" and fig.axes[0].get_ylabel() == "density"
    _save(fig, tmp_path, "eo.png")
    # three groups and an (n, 1) input
    fig = plot_score_distributions(after[:, None], np.arange(300) % 3, bins=10)
    assert len(fig.axes) == 1


def test_score_distributions_into_given_axes(tmp_path):
    from matplotlib.figure import Figure

    after, before, s, _ = _data()
    fig = Figure()
    ax = fig.subplots()
    assert plot_score_distributions(after, s, ax=ax) is fig
    with pytest.raises(InvalidParameterError) as exc:
        plot_score_distributions(after, s, ax=ax, before=before)
    assert exc.value.name == "ax"


def test_score_distributions_bad_input():
    after, _, s, _ = _data()
    with pytest.raises(InvalidDataError, match="before"):
        plot_score_distributions(after, s, before=after[:-1])
    with pytest.raises(InvalidParameterError) as exc:
        plot_score_distributions(after, s, labels=["only one"])
    assert exc.value.name == "labels"
    with pytest.raises(InvalidParameterError):
        plot_score_distributions(after, s, bins=0)


def test_training_panels(tmp_path):
    steps = np.arange(50)
    erm = np.exp(-steps / 20)
    pen = 0.1 * np.exp(-steps / 10)
    fig = plot_training(steps, 0.7 * erm + 0.3 * pen, erm=erm, penalty=pen,
                        epsilon_steps=steps[::10], epsilon=np.linspace(0.1, 1, 5), title="t")
    assert len(fig.axes) == 2
    assert fig.axes[1].get_ylabel() == "epsilon"
    assert len(fig.axes[0].get_lines()) == 3
    _save(fig, tmp_path, "train.png")
    assert len(plot_training(steps, erm).axes) == 1
    with pytest.raises(InvalidParameterError):
        plot_training(steps, erm, epsilon=[1.0])
    with pytest.raises(InvalidDataError, match="erm"):
        plot_training(steps, erm, erm=erm[:-1])


def test_frontier(tmp_path):
    fig = plot_frontier({"privot eps=1": [(0.2, 0.18), (0.1, 0.2), (0.02, 0.25)],
                         "non-private": [(0.15, 0.16), (0.01, 0.22)]},
                        reference={"DP-FERMI": [(0.05, 0.24), (0.1, 0.21)]},
                        xlabel="demographic parity difference", ylabel="test error")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xlabel() == "demographic parity difference"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["privot eps=1", "non-private", "DP-FERMI (reference)"]
    _save(fig, tmp_path, "frontier.png")
    with pytest.raises(InvalidParameterError):
        plot_frontier({})
    with pytest.raises(InvalidDataError):
        plot_frontier({"a": [(1.0, 2.0, 3.0)]})
