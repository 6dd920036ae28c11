"""One colour per sensitive group in every score figure (issue 29).

``privot learn``'s ``curator-scores.png`` (``LearningResult.plot(which="scores")``) and
the demo's learning figure (``privot.demo.learning``) both draw group 0 (the first
sorted value: the first of ``--sensitive-values``, the demo's ``Male``) in
``GROUP_COLOURS[0]`` and group 1 in ``GROUP_COLOURS[1]``. Checked on the Figure objects'
legend handles and histogram patches, never on pixels.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_rgb  # noqa: E402

from privot.learning.plot import (  # noqa: E402
    GROUP_COLOURS,
    OKABE_ITO,
    group_colour,
    plot_score_distributions,
)
from privot.learning.result import LearningResult  # noqa: E402

NAMES = ("Male", "Female")  # the demo's GENDERS: sensitive = 0, 1


def _scores(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    after = np.clip(0.4 + 0.2 * a + 0.15 * rng.standard_normal(n), 0, 1)
    before = np.clip(0.5 + 0.05 * rng.standard_normal(n), 0, 1)
    y = rng.integers(0, 2, n)
    return a, after, before, y


def _legend_colours(ax) -> dict[str, tuple]:
    """Group name -> the RGB of its legend patch (the label is "<name> (n=...)")."""
    legend = ax.get_legend()
    return {t.get_text().split(" (n=")[0]: to_rgb(h.get_facecolor())
            for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}


def _all_panels_colours(fig) -> list[dict[str, tuple]]:
    return [_legend_colours(ax) for ax in fig.axes if ax.get_legend() is not None]


def test_group_colours_constant():
    assert GROUP_COLOURS[:2] == OKABE_ITO[:2]
    assert to_rgb(GROUP_COLOURS[0]) != to_rgb(GROUP_COLOURS[1])
    assert group_colour(0) == GROUP_COLOURS[0] and group_colour(1) == GROUP_COLOURS[1]
    assert group_colour(len(GROUP_COLOURS)) == GROUP_COLOURS[0]


def test_score_plot_colours_follow_group_order_in_every_panel():
    a, after, before, y = _scores()
    fig = plot_score_distributions(after, a, labels=NAMES, before=before, y_true=y)
    panels = _all_panels_colours(fig)
    assert len(panels) == 4
    for colours in panels:
        assert colours == {NAMES[0]: to_rgb(GROUP_COLOURS[0]),
                           NAMES[1]: to_rgb(GROUP_COLOURS[1])}
    # the histogram bars themselves, not only the legend
    ax = fig.axes[0]
    bar_colours = {to_rgb(p.get_facecolor()) for p in ax.patches if p.get_fill()}
    assert bar_colours == {to_rgb(GROUP_COLOURS[0]), to_rgb(GROUP_COLOURS[1])}


def _learn_curator_scores_figure(a, after, before):
    """The figure ``privot learn`` writes as curator-scores.png: the CLI hands the
    result codes ``a = (value == values[1])`` and ``labels = tuple(values)``."""
    result = LearningResult(
        model=None, privacy={}, epsilon_steps=np.array([1.0]), epsilon_curve=np.array([0.1]),
        architecture={}, scores={"split": "test", "sensitive": a, "after": after,
                                 "before": before, "labels": NAMES, "y_true": None})
    return result.plot(which="scores")


def _demo_learning_figure(monkeypatch, tmp_path, a, after):
    """The demo's learning figure (``learning_gss.png``), captured before it is saved."""
    from privot.demo import learning as demo

    captured = []
    monkeypatch.setattr(demo, "save_figure",
                        lambda fig, output, name: captured.append(fig) or name)
    metrics = {"accuracy": 0.7, "dp_difference": 0.1}
    demo._figure(SimpleNamespace(output=tmp_path),
                 [("non-private (reference)", after, metrics),
                  ("private, alpha = 0", after[::-1], metrics)], a.astype(bool))
    assert demo.GENDERS == NAMES
    return captured[0]


def test_learn_and_demo_figures_agree(monkeypatch, tmp_path):
    """The same group, named the same, has the same colour in both figures."""
    a, after, before, _ = _scores()
    learn = _all_panels_colours(_learn_curator_scores_figure(a, after, before))
    demo = _all_panels_colours(_demo_learning_figure(monkeypatch, tmp_path, a, after))
    assert len(learn) == 2 and len(demo) == 2
    expected = {NAMES[0]: to_rgb(GROUP_COLOURS[0]), NAMES[1]: to_rgb(GROUP_COLOURS[1])}
    for colours in learn + demo:
        assert colours == expected
