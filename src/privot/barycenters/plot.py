"""Figures of barycenters in 2-D, like paper 000 Fig. 3 (groups, non-private and private
barycenters on one map). Needs the ``plot`` extra (matplotlib).

:meth:`BarycenterResult.plot <privot.barycenters.result.BarycenterResult.plot>` draws
``barycenter.png`` (and, with the raw groups, the curator-only ``curator-data.png``)
with :func:`plot_barycenters`; ``privot barycenter`` writes those pictures through
:meth:`BarycenterResult.save <privot.barycenters.result.BarycenterResult.save>`.
Figures are built with the object-oriented API (``matplotlib.figure.Figure``, no
pyplot): no global figure state, nothing to close.

Privacy
-------
Post-processing of a released support and public geometry; a figure given raw
``groups`` is curator-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privot._optional import require
from privot.errors import InvalidDataError

__all__ = ["plot_barycenters"]

_MARKERS = ("o", "X", "^", "s", "P", "D", "v", "*")
_COLOURS = ("black", "tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange")


def plot_barycenters(groups: Sequence[np.ndarray], supports: Mapping[str, np.ndarray], *,
                     group_names: Sequence[str] | None = None, ax: Any = None,
                     title: str | None = None, max_points: int = 20_000,
                     outline: np.ndarray | None = None, xlabel: str = "x",
                     ylabel: str = "y", rng: int = 0, bounds: Any = None) -> Any:
    """Scatter the groups (light) and each named barycenter support (large markers).

    Parameters
    ----------
    groups : sequence of (n_i, 2) arrays
        Drawn as small translucent dots (at most ``max_points`` per group, a uniform
        subsample for legibility).
    supports : mapping of label to (m, 2) array
        E.g. ``{"non-private": nu, "private coreset": nu_core}``.
    group_names : sequence of str, optional
        Legend labels of the groups.
    ax : matplotlib Axes, optional
        Drawn into when given; otherwise a new figure.
    outline : (v, 2) array, optional
        A polygon to draw (e.g. the public region used by the coreset).
    bounds : PublicBounds, optional
        The public box or ball, drawn and used as the plot's extent.

    Notes
    -----
    ``groups`` are raw data: a figure with groups is for the curator. A publishable
    figure passes ``groups=[]`` and shows only private supports and public geometry.

    Returns
    -------
    matplotlib.figure.Figure
        A new ``Figure`` (no pyplot) or ``ax.figure``.
    """
    mpl = require("matplotlib", "plot")
    gs = [np.asarray(g) for g in groups]
    if any(g.ndim != 2 or g.shape[1] != 2 for g in gs):
        raise InvalidDataError("plot_barycenters draws 2-D points only: groups must be (n, 2)")
    if any(np.asarray(s).ndim != 2 or np.asarray(s).shape[1] != 2 for s in supports.values()):
        raise InvalidDataError("plot_barycenters draws 2-D points only: supports must be "
                               "(m, 2)")
    if ax is None:
        mfigure = require("matplotlib.figure", "plot")
        fig = mfigure.Figure(figsize=(8, 5))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    gen = np.random.default_rng(rng)
    cmap = mpl.colormaps["tab10"]
    for i, g in enumerate(gs):
        show = g if len(g) <= max_points else g[gen.choice(len(g), max_points, replace=False)]
        name = group_names[i] if group_names is not None else f"group {i}"
        ax.scatter(show[:, 0], show[:, 1], s=2, alpha=0.25, color=cmap(i % 10),
                   label=name if len(gs) > 1 else "data", rasterized=True)
    if outline is not None:
        ring = np.vstack([outline, outline[:1]])
        ax.plot(ring[:, 0], ring[:, 1], color="grey", lw=0.8)
    if bounds is not None:
        _draw_bounds(ax, bounds)
    for j, (label, sup) in enumerate(supports.items()):
        s = np.asarray(sup)
        ax.scatter(s[:, 0], s[:, 1], s=60, marker=_MARKERS[j % len(_MARKERS)],
                   facecolor="none" if j else _COLOURS[0], edgecolor=_COLOURS[j % len(_COLOURS)],
                   linewidths=1.5, label=label, zorder=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_aspect("equal", adjustable="box" if bounds is not None else "datalim")
    if title:
        ax.set_title(title)
    ax.legend(loc="best", fontsize=8, markerscale=1.0)
    return fig


def _draw_bounds(ax: Any, bounds: Any) -> None:
    """The public box or circle (first two coordinates), with a margin around it."""
    lo, hi = np.asarray(bounds.lower)[:2], np.asarray(bounds.upper)[:2]
    if bounds.kind == "box":
        xs = [lo[0], hi[0], hi[0], lo[0], lo[0]]
        ys = [lo[1], lo[1], hi[1], hi[1], lo[1]]
    else:
        t = np.linspace(0.0, 2.0 * np.pi, 181)
        xs = bounds.centre[0] + bounds.radius * np.cos(t)
        ys = bounds.centre[1] + bounds.radius * np.sin(t)
    ax.plot(xs, ys, color="black", lw=0.8, ls="--", label="public bounds")
    pad = 0.03 * (hi - lo)
    ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
    ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
