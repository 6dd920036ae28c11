"""Pictures of a population's local-DP samples: ``sample.png`` and
:meth:`PopulationSample.plot <privot.sampling.population.PopulationSample.plot>`.

Three maps over the public grid, each drawn with ``origin="lower"`` (row 0 of the
``(Delta, Delta)`` array at the southern edge ``y_min``, :mod:`privot.grid`): the public
base measure ``m``, the released samples (count per cell) and the server's estimate of
the population distribution. Figures are built with the object-oriented API
(``matplotlib.figure.Figure``, no pyplot): no global figure state, nothing to close.
Needs the ``plot`` extra (matplotlib).

Each panel has a labelled colour bar (:data:`UNITS`). A panel whose values are all equal
(to :data:`CONSTANT_RTOL`), e.g. the default best-uniform base measure, is drawn on a
colour scale from 0 to its value and says so in the panel ("uniform: m_j = v in every
cell"): matplotlib's own limits for a constant image span a small interval around the
value and would suggest a variation that is not there. The axes are named after the
data's coordinate columns when known (``privot sample --columns``), else
``x (grid coordinates)`` / ``y (grid coordinates)``: the grid's bounds are in the
data's own coordinates.

Privacy
-------
Post-processing: the base measure and the grid are public, the counts per cell are the
released multiset (no user ids), the estimate is a function of them and of the public
channel. No budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = ["CONSTANT_RTOL", "PANELS", "UNITS", "constant_value",
           "plot_population_sample"]

#: The panels of ``sample.png``, in order: name -> title.
PANELS = {"base_measure": "public base measure m",
          "samples": "released samples (count per cell)",
          "estimate": "server's population estimate"}
#: The colour bar label of each panel.
UNITS = {"base_measure": "base measure per cell",
         "samples": "released samples per cell",
         "estimate": "estimated mass per cell"}
#: A panel is drawn as constant when its spread (max - min) is at most this fraction of
#: its largest absolute value (a base measure computed as ``(s / k) * ones`` is exactly
#: constant; the tolerance only absorbs rounding).
CONSTANT_RTOL = 1e-9


def constant_value(values: Any) -> float | None:
    """The common value of ``values`` if they are all equal (to :data:`CONSTANT_RTOL`
    relative to the largest absolute value), else None."""
    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size == 0 or not np.all(np.isfinite(a)):
        return None
    top = float(np.max(np.abs(a)))
    if float(np.ptp(a)) > CONSTANT_RTOL * top:
        return None
    return float(np.mean(a))


def plot_population_sample(grid: Grid, *, base_measure: Any = None, counts: Any = None,
                           estimate: Any = None, ax: Any = None,
                           which: str | Sequence[str] = tuple(PANELS),
                           title: str | None = None, cmap: str = "magma",
                           xlabel: str = "x (grid coordinates)",
                           ylabel: str = "y (grid coordinates)") -> Any:
    """Draw the panels ``which`` (names of :data:`PANELS`) over ``grid``'s extent.

    Parameters
    ----------
    grid : Grid
        The public grid; every array has ``grid.n_cells`` values in flat order
        (``row * Delta + col``).
    base_measure, counts, estimate : (Delta^2,) arrays
        The public base measure, the released samples' count per cell, the estimate;
        each needed when its panel is drawn.
    ax : matplotlib Axes or sequence of Axes, optional
        One Axes per panel of ``which``; None: a new ``Figure`` with the panels side by
        side.
    which : str or sequence of str
        ``"base_measure"``, ``"samples"``, ``"estimate"`` or several of them (default
        all three: the picture ``sample.png``).
    title : str, optional
        Figure title (over all the panels when the figure is new, else over the first).
    cmap : str
        Colour map of every panel.
    xlabel, ylabel : str
        Axis labels: the data's coordinate column names when known (e.g.
        ``"longitude"``); the default says the axes are the grid's (the data's)
        coordinates.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from privot._optional import require

    names = [which] if isinstance(which, str) else list(which)
    if not names or any(n not in PANELS for n in names):
        raise InvalidParameterError("which", which, f"names among {tuple(PANELS)}")
    arrays = {"base_measure": base_measure, "samples": counts, "estimate": estimate}
    d = grid.resolution
    values = {}
    for name in names:
        if arrays[name] is None:
            raise InvalidParameterError(name, None, f"an array to draw the {name!r} panel")
        a = np.asarray(arrays[name], dtype=np.float64)
        if a.size != d * d:
            raise InvalidParameterError(name, f"<array of {a.size} values>",
                                        f"{d * d} values, one per cell of the grid")
        values[name] = a.reshape(d, d)
    new = ax is None
    if new:
        mfigure = require("matplotlib.figure", "plot")
        fig = mfigure.Figure(figsize=(5.0 * len(names), 4.8), layout="constrained")
        axes = list(fig.subplots(1, len(names), squeeze=False)[0])
    else:
        axes = [ax] if not isinstance(ax, (list, tuple, np.ndarray)) else list(
            np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != len(names):
            raise InvalidParameterError("ax", f"<{len(axes)} axes>",
                                        f"{len(names)} axes, one per panel of {names}")
        fig = axes[0].figure
    x0, x1, y0, y1 = grid.bounds
    extent = (x0, x0 + grid.cell_width * d, y0, y0 + grid.cell_height * d)
    for i, (a, name) in enumerate(zip(axes, names, strict=True)):
        v = constant_value(values[name])
        limits = {}
        if v is not None:  # honest limits: from 0 to the value, not a range around it
            lo, hi = min(0.0, v), max(0.0, v)
            limits = {"vmin": lo, "vmax": hi if hi > lo else 1.0}
        im = a.imshow(values[name], origin="lower", extent=extent, cmap=cmap,
                      interpolation="nearest", **limits)
        a.set_xlim(x0, x1)
        a.set_ylim(y0, y1)
        a.locator_params(axis="x", nbins=5)
        a.set_title(PANELS[name], fontsize=10)
        a.set_xlabel(xlabel)
        if i == 0:
            a.set_ylabel(ylabel)
        fig.colorbar(im, ax=a, shrink=0.8, label=UNITS[name])
        if v is not None:
            what = "uniform: m_j =" if name == "base_measure" else "constant:"
            a.text(0.5, 0.5, f"{what} {v:.4g}\nin every cell", transform=a.transAxes,
                   ha="center", va="center", fontsize=10, color="black",
                   bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85})
    if title is not None:
        if new:
            fig.suptitle(title)
        else:
            axes[0].set_title(f"{title}\n{PANELS[names[0]]}", fontsize=10)
    return fig
