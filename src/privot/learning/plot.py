"""Figures for private Wasserstein learning (paper 004, Figs 1-8 style).

* :func:`plot_score_distributions` -- density histograms of the groups' scores, optionally
  before / after training and one row per label value (equality of odds);
* :func:`plot_training` -- the training loss (and its ERM and penalty parts) and the
  privacy spent along the steps;
* :func:`plot_frontier` -- fairness violation vs error, one series per method, with
  reference points (e.g. published DP-FERMI results) drawn with distinct markers.

Needs the ``plot`` extra (matplotlib, imported lazily). Figures are made with the
object-oriented API (``matplotlib.figure.Figure``, no ``pyplot``): no global figure
state, no interactive backend, and ``fig.savefig(path)`` renders with Agg, so they are
safe in scripts, tests and headless benchmarks. Colours are the Okabe-Ito
colour-blind-safe palette.

Privacy
-------
Score histograms are drawn from the curator's exact data and are **not** differentially
private: like :mod:`privot.evaluation.learning`, they belong in curator files only. A
training-loss curve is computed from the private data too (only the model's parameters
and the accountant's epsilon are released by training).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privot._optional import require
from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.learning_inputs import group_codes, scores_1d, to_numpy

__all__ = ["plot_score_distributions", "plot_training", "plot_frontier", "OKABE_ITO",
           "GROUP_COLOURS", "group_colour"]

#: Okabe-Ito colour-blind-safe palette (blue, vermillion, green, reddish purple,
#: orange, sky blue, yellow, black).
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
             "#000000")
#: Colour of each sensitive group in every figure that tells groups apart (``privot
#: learn``'s ``curator-scores.png``, ``LearningResult.plot``, the demo's learning
#: figure): group 0 -- the first sorted group value, i.e. the first of ``privot learn
#: --sensitive-values`` or ``sensitive = 0`` -- is blue, group 1 vermillion, further
#: groups the rest of :data:`OKABE_ITO` in order. The colour follows the group's position,
#: not its name: name the groups in the same order to see the same group in the same
#: colour.
GROUP_COLOURS = OKABE_ITO
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_REFERENCE_MARKERS = ("*", "X", "P", "D", "v", "^", "s", "o")


def group_colour(code: int) -> str:
    """The colour of group ``code`` (its index in the sorted group values), from
    :data:`GROUP_COLOURS`."""
    return GROUP_COLOURS[int(code) % len(GROUP_COLOURS)]


def _new_figure(nrows: int, ncols: int, figsize: tuple[float, float]) -> tuple[Any, np.ndarray]:
    """A constrained-layout ``Figure`` and its ``(nrows, ncols)`` axes, without pyplot."""
    mfigure = require("matplotlib.figure", "plot")
    fig = mfigure.Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _group_names(labels: Any, groups: list[Any]) -> list[str]:
    if labels is None:
        return [f"A = {g}" for g in groups]
    if isinstance(labels, Mapping):
        missing = [g for g in groups if g not in labels]
        if missing:
            raise InvalidParameterError("labels", labels, f"a name for every group {groups}")
        return [str(labels[g]) for g in groups]
    names = [str(v) for v in labels]
    if len(names) != len(groups):
        raise InvalidParameterError(
            "labels", labels, f"{len(groups)} names, one per group in sorted order {groups}")
    return names


def plot_score_distributions(scores: Any, sensitive: Any, *, labels: Any = None,
                             before: Any = None, title: str | None = None, bins: int = 40,
                             ax: Any = None, y_true: Any = None,
                             xlabel: str = "score") -> Any:
    """Density histograms of each group's scores (paper 004, Figs 1, 5, 7).

    Panels: one column ("after") or two ("before", "after") when ``before`` is given;
    one row, or one row per value of ``y_true`` when it is given (the conditional
    distributions compared by equality of odds). All panels share the bin edges. Group
    ``g`` (the ``g``-th sorted value of ``sensitive``) is drawn in
    :func:`group_colour(g) <group_colour>` in every panel and every figure.

    Parameters
    ----------
    scores : (n,) or (n, 1) array
        Scores of the points (e.g. predicted probabilities after training).
    sensitive : (n,) array
        Group of each point (any number of groups).
    labels : sequence of str or mapping, optional
        Legend names of the groups (sorted group order), or group -> name.
        Default ``"A = <group>"``.
    before : (n,) array, optional
        Scores of the same points before training (or of a non-private model).
    title : str, optional
        Figure title.
    bins : int, default 40
        Number of bins.
    ax : matplotlib Axes, optional
        Drawn into when the figure has a single panel (no ``before``, no ``y_true``).
    y_true : (n,) array, optional
        Labels; one row of panels per label value.
    xlabel : str, default "score"

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = scores_1d(scores, "scores")
    n = s.shape[0]
    groups, codes = group_codes(sensitive, n, "sensitive")
    names = _group_names(labels, groups)
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise InvalidParameterError("bins", bins, "an integer >= 1")
    columns = [("after", s)]
    if before is not None:
        b = scores_1d(before, "before")
        if b.shape[0] != n:
            raise InvalidDataError(f"before has {b.shape[0]} rows but scores has {n}")
        columns = [("before", b), ("after", s)]
    if y_true is not None:
        yt = to_numpy(y_true).reshape(-1)
        if yt.shape[0] != n:
            raise InvalidDataError(f"y_true has {yt.shape[0]} rows but scores has {n}")
        row_values = np.unique(yt).tolist()
        rows = [(f"Y = {v}", yt == v) for v in row_values]
    else:
        rows = [(None, np.ones(n, dtype=bool))]
    nrows, ncols = len(rows), len(columns)
    if ax is not None:
        if nrows * ncols != 1:
            raise InvalidParameterError(
                "ax", ax, "None when before or y_true asks for several panels")
        fig, axes = ax.figure, np.array([[ax]])
    else:
        fig, axes = _new_figure(nrows, ncols, (4.2 * ncols, 3.2 * nrows))
    lo = min(float(v.min()) for _, v in columns)
    hi = max(float(v.max()) for _, v in columns)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, int(bins) + 1)
    for r, (row_name, row_mask) in enumerate(rows):
        for c, (col_name, values) in enumerate(columns):
            a = axes[r, c]
            for g, name in enumerate(names):
                sel = values[row_mask & (codes == g)]
                if sel.size == 0:
                    continue
                colour = group_colour(g)
                a.hist(sel, bins=edges, density=True, alpha=0.45, color=colour,
                       label=f"{name} (n={sel.size})")
                a.hist(sel, bins=edges, density=True, histtype="step", color=colour, lw=1.2)
            heading = [t for t in ((col_name if ncols > 1 else None), row_name) if t]
            if heading:
                a.set_title(", ".join(heading), fontsize=10)
            a.set_xlabel(xlabel)
            a.set_ylabel("density")
            a.legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(title)
    return fig


def _series(values: Any, name: str, n: int | None = None) -> np.ndarray:
    arr = np.asarray(to_numpy(values), dtype=np.float64).reshape(-1)
    if arr.size == 0:
        raise InvalidDataError(f"{name} is empty")
    if n is not None and arr.shape[0] != n:
        raise InvalidDataError(f"{name} has {arr.shape[0]} values but steps has {n}")
    return arr


def plot_training(steps: Any, loss: Any, *, erm: Any = None, penalty: Any = None,
                  epsilon_steps: Any = None, epsilon: Any = None,
                  title: str | None = None) -> Any:
    """Training curves (paper 004, Figs 4, 6, 8) and the privacy spent.

    Left panel: the training loss along the steps, with its ERM part and its
    Wasserstein penalty part when given. Right panel (only when ``epsilon`` is given):
    the privacy spent :math:`\\varepsilon` (at the accountant's fixed ``delta``) along
    ``epsilon_steps``.

    Parameters
    ----------
    steps : (T,) array
        Step numbers of the loss values.
    loss : (T,) array
        Total (weighted) training loss.
    erm, penalty : (T,) arrays, optional
        Its ERM and penalty terms.
    epsilon_steps, epsilon : (S,) arrays, optional
        Steps and the epsilon spent after them; both or neither.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        One axes, or two with ``epsilon``.
    """
    t = _series(steps, "steps")
    T = t.shape[0]
    curves = [("loss", _series(loss, "loss", T), "-")]
    if erm is not None:
        curves.append(("ERM term", _series(erm, "erm", T), "--"))
    if penalty is not None:
        curves.append(("penalty term", _series(penalty, "penalty", T), ":"))
    if (epsilon is None) != (epsilon_steps is None):
        raise InvalidParameterError(
            "epsilon_steps" if epsilon_steps is None else "epsilon", None,
            "given together with " + ("epsilon" if epsilon_steps is None else "epsilon_steps"))
    fig, axes = _new_figure(1, 2 if epsilon is not None else 1,
                            (10.0 if epsilon is not None else 5.5, 3.6))
    a = axes[0, 0]
    for i, (name, values, style) in enumerate(curves):
        a.plot(t, values, style, color=OKABE_ITO[i], lw=1.4, label=name)
    a.set_xlabel("step")
    a.set_ylabel("training loss")
    a.set_title("training loss", fontsize=10)
    a.legend(fontsize=8, loc="best")
    if epsilon is not None:
        es = _series(epsilon_steps, "epsilon_steps")
        ev = _series(epsilon, "epsilon", es.shape[0])
        b = axes[0, 1]
        b.plot(es, ev, "-", color=OKABE_ITO[1], lw=1.4, label="epsilon spent")
        b.set_xlabel("step")
        b.set_ylabel("epsilon")
        b.set_title("privacy spent", fontsize=10)
        b.legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(title)
    return fig


def _xy(points: Any, name: str) -> np.ndarray:
    arr = np.asarray([tuple(map(float, p)) for p in points], dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != 2:
        raise InvalidDataError(f"{name} must be a non-empty list of (x, y) pairs")
    return arr


def plot_frontier(points: Mapping[str, Sequence[Any]], *,
                  reference: Mapping[str, Sequence[Any]] | None = None,
                  xlabel: str = "fairness violation", ylabel: str = "error",
                  title: str | None = None, ax: Any = None) -> Any:
    """Fairness / error trade-off: one line of points per series, plus reference points.

    Parameters
    ----------
    points : mapping of str to list of (x, y)
        E.g. ``{"privot eps=1": [(dp_diff, 1 - acc), ...]}``, one pair per
        penalty weight; drawn as lines with markers in the given order.
    reference : mapping of str to list of (x, y), optional
        E.g. published DP-FERMI points; drawn as large hollow markers (no line).
    xlabel, ylabel : str
        Axis labels (default "fairness violation", "error").
    title : str, optional
    ax : matplotlib Axes, optional
        Drawn into when given.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(points, Mapping) or not points:
        raise InvalidParameterError("points", points, "a non-empty mapping name -> [(x, y)]")
    if reference is not None and not isinstance(reference, Mapping):
        raise InvalidParameterError("reference", reference, "a mapping name -> [(x, y)]")
    if ax is None:
        fig, axes = _new_figure(1, 1, (5.5, 4.0))
        ax = axes[0, 0]
    else:
        fig = ax.figure
    for i, (name, pts) in enumerate(points.items()):
        xy = _xy(pts, f"points[{name!r}]")
        ax.plot(xy[:, 0], xy[:, 1], "-", marker=_MARKERS[i % len(_MARKERS)],
                color=OKABE_ITO[i % len(OKABE_ITO)], lw=1.2, ms=5, label=str(name))
    for j, (name, pts) in enumerate((reference or {}).items()):
        xy = _xy(pts, f"reference[{name!r}]")
        colour = OKABE_ITO[(len(points) + j) % len(OKABE_ITO)]
        ax.scatter(xy[:, 0], xy[:, 1], marker=_REFERENCE_MARKERS[j % len(_REFERENCE_MARKERS)],
                   s=70, facecolors="none", edgecolors=colour, linewidths=1.5,
                   label=f"{name} (reference)", zorder=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig
