"""Pictures of a private heatmap: ``heatmap.png`` and :meth:`HeatmapResult.plot`.

The map is drawn with ``origin="lower"`` over the grid's extent (row 0 of the array at
the southern edge ``y_min``, :mod:`privot.grid`), axes labelled ``x (longitude)`` and
``y (latitude)`` (override for other data), and a colorbar exactly the map's height
(an inset axes beside it).

Colour scales (:data:`SCALES`): ``"linear"``, ``"sqrt"`` (a power norm with exponent
1/2) and ``"log"`` (:data:`LOG_DECADES` decades below the maximum; zero cells get the
lowest colour). The default is ``"sqrt"``, see :data:`DEFAULT_SCALE`.

Grids larger than :data:`MAX_DISPLAY` cells a side are shown block-averaged to that size
(a PNG of a few hundred pixels cannot show more; the files hold every cell), which also
keeps matplotlib's RGBA copies small.

Privacy
-------
Post-processing of a released distribution: no privacy cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = ["DEFAULT_SCALE", "LOG_DECADES", "MAX_DISPLAY", "SCALES", "color_norm",
           "display_array", "plot_heatmap"]

SCALES = ("linear", "sqrt", "log")
#: The default colour scale. ``"sqrt"``: on a linear scale a secondary hub with 8% of the
#: mass beside a main one of 60% (same spread) peaks at 0.13 of the colour range, which
#: inferno draws nearly black (the issue's five invisible hubs); the square root lifts it
#: to 0.37, clearly coloured. ``"log"`` would lift it further but also lights up, over
#: several decades, the tiny uniform mass RECONSTRUCT spreads over whole left-out blocks
#: and the noise floor of the baselines, so the picture would mostly show the
#: reconstruction's blocks. tests/heatmaps/test_heatmap_outputs.py checks the 0.3.
DEFAULT_SCALE = "sqrt"
#: Decades of the log scale below the maximum (smaller values get the lowest colour).
LOG_DECADES = 4
#: Largest side drawn; larger grids are block-averaged to it for the picture.
MAX_DISPLAY = 1024


def color_norm(scale: str, vmax: float) -> Any:
    """The matplotlib ``Normalize`` of ``scale`` over ``[0, vmax]``."""
    from privot._optional import require

    colors = require("matplotlib.colors", "plot")
    if scale not in SCALES:
        raise InvalidParameterError("scale", scale, f"one of {SCALES}")
    top = float(vmax) if np.isfinite(vmax) and vmax > 0 else 1.0
    if scale == "linear":
        return colors.Normalize(vmin=0.0, vmax=top)
    if scale == "sqrt":
        return colors.PowerNorm(gamma=0.5, vmin=0.0, vmax=top)
    return colors.LogNorm(vmin=top * 10.0 ** -LOG_DECADES, vmax=top, clip=True)


def display_array(values: np.ndarray, max_side: int = MAX_DISPLAY) -> tuple[np.ndarray, int]:
    """``values`` block-averaged so that its side is at most ``max_side``; and the
    factor (1: unchanged)."""
    a = np.asarray(values, dtype=np.float64)
    d = a.shape[0]
    f = 1
    while d // f > max_side and d % (2 * f) == 0:
        f *= 2
    if f == 1:
        return a, 1
    m = d // f
    return a.reshape(m, f, m, f).mean(axis=(1, 3)), f


def plot_heatmap(values: np.ndarray, grid: Grid, *, ax: Any = None,
                 scale: str = DEFAULT_SCALE, title: str | None = None,
                 cmap: str = "inferno", label: str = "mass per cell",
                 xlabel: str = "x (longitude)", ylabel: str = "y (latitude)",
                 colorbar: bool = True) -> Any:
    """Draw a ``(Delta, Delta)`` grid vector over ``grid``'s extent.

    Parameters
    ----------
    values : (Delta, Delta) array
        ``[row, col]`` with row 0 at ``y_min`` (:class:`~privot.grid.Grid`).
    grid : Grid
    ax : matplotlib Axes, optional
        Draw there; None: a new ``Figure`` (no pyplot, no global state).
    scale : {"linear", "sqrt", "log"}
        Colour scale (:data:`DEFAULT_SCALE`).
    title, cmap, label, xlabel, ylabel : str
    colorbar : bool
        A colorbar the height of the map, on its right.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on (``ax.figure`` when ``ax`` is given).
    """
    from privot._optional import require

    if scale not in SCALES:
        raise InvalidParameterError("scale", scale, f"one of {SCALES}")
    mpl = require("matplotlib", "plot")
    if ax is None:
        mfigure = require("matplotlib.figure", "plot")
        fig = mfigure.Figure(figsize=(6.2, 5.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    shown, factor = display_array(values)
    x0, x1, y0, y1 = grid.bounds
    extent = (x0, x0 + grid.cell_width * grid.resolution,
              y0, y0 + grid.cell_height * grid.resolution)
    cm = mpl.colormaps[cmap]
    cm = cm.with_extremes(bad=cm(0.0), under=cm(0.0))
    vmax = float(np.max(shown)) if shown.size else 1.0
    im = ax.imshow(shown, origin="lower", extent=extent, cmap=cm,
                   norm=color_norm(scale, vmax), interpolation="nearest")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.locator_params(axis="x", nbins=5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, fontsize=9)
    if colorbar:
        cax = ax.inset_axes([1.03, 0.0, 0.045, 1.0])  # axes coordinates: the map's height
        shown_label = label if factor == 1 else f"{label} (mean of {factor}x{factor} blocks)"
        fig.colorbar(im, cax=cax, label=f"{shown_label}, {scale} scale" if shown_label else "")
    return fig
