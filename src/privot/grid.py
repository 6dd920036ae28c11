r"""The public grid: caller-given bounds mapped to a :math:`\Delta\times\Delta` grid.

Paper 002 works on :math:`G_\Delta`, the :math:`\Delta\times\Delta` grid of
:math:`[0,1)^2` with :math:`\Delta = 2^\ell`. A :class:`Grid` maps the caller's public
rectangle onto it:

* The bounds are **public parameters** chosen by the caller, never read from the data
  (a data-dependent grid would leak the data's extent).
* **Non-square bounds** (an image of 320 x 240 pixels, a latitude band): with
  ``aspect="square"`` (default) the grid covers the square of side
  ``max(width, height)`` anchored at ``(x_min, y_min)``, so every cell is square and
  the L1 ground distance of the EMD means the same along both axes; the part of the
  square beyond the rectangle never receives a point. With ``aspect="stretch"`` each
  axis is divided into :math:`\Delta` cells independently (rectangular cells).
* **Points outside the bounds** (or on the far edges ``x = x_max``, ``y = y_max``,
  which the half-open cells exclude) are **dropped** and counted; the count is a
  curator-only diagnostic, not part of any release. :meth:`Grid.assign` refuses NaN/inf
  coordinates; the aggregation steps drop such rows first (:mod:`privot._usable`).

Cells are indexed ``(row, col)`` with ``row`` along ``y`` (``y_min`` at row 0) and
``col`` along ``x``; the flat index is ``row * Delta + col``, the layout of a
``(Delta, Delta)`` numpy array whose ``[0, 0]`` is the corner ``(x_min, y_min)``.

The grid is shared by the capabilities that read user points over public cells
(heatmaps: the cells of the heatmap; sampling: the ``k`` input points of a user's
distribution); :func:`cell_sql` is :meth:`Grid.assign` as SQL for their engine steps.

Privacy
-------
No release here. The grid (bounds, resolution, aspect) is public by assumption and never
derived from the data; :meth:`Grid.assign` maps each point by a rule reading that point
alone, so one user's points change only that user's cells. Unit (a user), relation
(add/remove) and sensitivity are stated by the mechanisms (``heatmaps.measure``,
``docs/privacy/heatmaps.md``). The counts of dropped points are curator-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privot._validation import check_finite_array, check_int
from privot.engines.base import double_literal
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["ASPECTS", "CELL_SQL", "Grid", "CellAssignment", "cell_sql", "check_point_columns"]

ASPECTS = ("square", "stretch")


@dataclass(frozen=True)
class CellAssignment:
    """Points mapped to cells.

    Attributes
    ----------
    cells : (k,) int64 array
        Flat cell index ``row * Delta + col`` of each kept point.
    kept : (n,) bool array
        Which input points fell inside the bounds.
    n_outside : int
        Points dropped (outside the bounds); curator-only diagnostic.
    """

    cells: np.ndarray
    kept: np.ndarray
    n_outside: int


@dataclass(frozen=True)
class Grid:
    r"""A public :math:`\Delta\times\Delta` grid over caller-given bounds.

    Parameters
    ----------
    bounds : (x_min, x_max, y_min, y_max)
        Public rectangle, ``x_min < x_max`` and ``y_min < y_max``, finite. For
        latitude/longitude data, ``x`` is the longitude and ``y`` the latitude.
    resolution : int
        :math:`\Delta`, in ``[1, 2**15]``; a power of two :math:`2^\ell` unless
        ``dyadic=False``.
    aspect : {"square", "stretch"}
        How a non-square rectangle is covered (see the module docstring).
    dyadic : bool, default True
        Require a power of two (the heatmap's pyramid halves the grid ``ell`` times).
        Sampling takes any side (paper 003 uses a 20 x 20 grid).

    Attributes
    ----------
    levels : int
        :math:`\ell = \log_2\Delta`.
    cell_width, cell_height : float
        Side lengths of one cell in the input units.
    """

    bounds: tuple[float, float, float, float]
    resolution: int
    aspect: str = "square"
    dyadic: bool = True

    def __post_init__(self) -> None:
        try:
            b = tuple(float(v) for v in self.bounds)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError("bounds", self.bounds,
                                        "four numbers (x_min, x_max, y_min, y_max)") from exc
        if len(b) != 4 or not all(math.isfinite(v) for v in b):
            raise InvalidParameterError("bounds", self.bounds,
                                        "four finite numbers (x_min, x_max, y_min, y_max)")
        if not (b[0] < b[1] and b[2] < b[3]):
            raise InvalidParameterError("bounds", self.bounds,
                                        "x_min < x_max and y_min < y_max")
        res = check_int(self.resolution, "resolution", minimum=1, maximum=2**15)
        if self.dyadic and res & (res - 1):
            raise InvalidParameterError("resolution", self.resolution,
                                        "a power of two (1, 2, 4, ..., 32768)")
        if self.aspect not in ASPECTS:
            raise InvalidParameterError("aspect", self.aspect, f"one of {ASPECTS}")
        object.__setattr__(self, "bounds", b)
        object.__setattr__(self, "resolution", res)

    # -- geometry -----------------------------------------------------------------------

    @property
    def levels(self) -> int:
        r""":math:`\ell` with :math:`\Delta = 2^\ell` (a dyadic grid only)."""
        if self.resolution & (self.resolution - 1):
            raise InvalidParameterError("resolution", self.resolution,
                                        "a power of two for a hierarchical (pyramid) grid")
        return self.resolution.bit_length() - 1

    @property
    def n_cells(self) -> int:
        r""":math:`\Delta^2`."""
        return self.resolution * self.resolution

    @property
    def _extent(self) -> tuple[float, float]:
        x0, x1, y0, y1 = self.bounds
        w, h = x1 - x0, y1 - y0
        if self.aspect == "square":
            side = max(w, h)
            return side, side
        return w, h

    @property
    def cell_width(self) -> float:
        return self._extent[0] / self.resolution

    @property
    def cell_height(self) -> float:
        return self._extent[1] / self.resolution

    def cell_centres(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` of every cell centre, each a ``(Delta, Delta)`` array."""
        x0, _, y0, _ = self.bounds
        i = np.arange(self.resolution) + 0.5
        xs = x0 + i * self.cell_width
        ys = y0 + i * self.cell_height
        return np.meshgrid(xs, ys)

    def cell_centre_points(self) -> np.ndarray:
        """``(Delta^2, 2)``: the ``(x, y)`` of every cell centre in flat order
        (``row * Delta + col``), the public points of a grid's cells."""
        xs, ys = self.cell_centres()
        return np.column_stack([xs.ravel(), ys.ravel()])

    def covered_mask(self) -> np.ndarray:
        """``(Delta, Delta)`` bool: cells that intersect the bounds rectangle (all of them
        for ``aspect="stretch"``; with ``"square"`` the cells past the short side are
        False)."""
        x0, x1, y0, y1 = self.bounds
        i = np.arange(self.resolution)
        cols = x0 + i * self.cell_width < x1
        rows = y0 + i * self.cell_height < y1
        return rows[:, None] & cols[None, :]

    # -- mapping ------------------------------------------------------------------------

    def assign(self, x: np.ndarray, y: np.ndarray) -> CellAssignment:
        """Map points to flat cell indices, dropping (and counting) those outside.

        Parameters
        ----------
        x, y : (n,) arrays
            Coordinates (``x`` = longitude for geographic data); finite.

        Returns
        -------
        CellAssignment

        Raises
        ------
        InvalidDataError
            On NaN/inf coordinates or mismatched lengths.
        """
        xs = check_finite_array(x, "x", ndim=1, allow_empty=True)
        ys = check_finite_array(y, "y", ndim=1, allow_empty=True)
        if xs.shape != ys.shape:
            raise InvalidDataError(f"x has {xs.size} values but y has {ys.size}")
        x0, x1, y0, y1 = self.bounds
        kept = (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
        d = self.resolution
        col = np.floor((xs[kept] - x0) / self.cell_width).astype(np.int64)
        row = np.floor((ys[kept] - y0) / self.cell_height).astype(np.int64)
        # floating-point rounding at the far edge can give d; the cell is d - 1
        np.minimum(col, d - 1, out=col)
        np.minimum(row, d - 1, out=row)
        return CellAssignment(cells=row * d + col, kept=kept,
                              n_outside=int(xs.size - np.count_nonzero(kept)))

    def contains(self, points: np.ndarray) -> np.ndarray:
        """``(n,)`` bool: which rows of an ``(n, 2)`` array ``(x, y)`` are inside the
        half-open bounds (the rule of :meth:`assign`)."""
        p = np.asarray(points, dtype=np.float64)
        x0, x1, y0, y1 = self.bounds
        return (p[:, 0] >= x0) & (p[:, 0] < x1) & (p[:, 1] >= y0) & (p[:, 1] < y1)

    def cell_distance_scale(self) -> tuple[float, float]:
        """Input units per cell along ``x`` and ``y`` (for EMD in data units)."""
        return self.cell_width, self.cell_height


# -- the same assignment in SQL, for the engine steps over a grid (heatmaps, sampling) --


#: The cell of a row (columns ``u``, ``x``, ``y``): the float64 operations of
#: :meth:`Grid.assign`; -1 for a row outside the bounds or unusable.
CELL_SQL = """CASE WHEN u IS NOT NULL AND x >= {x0} AND x < {x1} AND y >= {y0} AND y < {y1}
              THEN least(CAST(floor((y - {y0}) / {h}) AS BIGINT), {dm1}) * {d}
                   + least(CAST(floor((x - {x0}) / {w}) AS BIGINT), {dm1})
              ELSE -1 END"""


def cell_sql(grid: Grid) -> str:
    """:data:`CELL_SQL` with the constants of ``grid`` (exact doubles): the one cell
    assignment of every engine step over a grid (heatmaps, sampling)."""
    x0, x1, y0, y1 = (float(v) for v in grid.bounds)
    d = grid.resolution
    return CELL_SQL.format(
        x0=double_literal(x0), x1=double_literal(x1), y0=double_literal(y0),
        y1=double_literal(y1), w=double_literal(grid.cell_width),
        h=double_literal(grid.cell_height), d=int(d), dm1=int(d) - 1)


def check_point_columns(user_column: str, x_column: str, y_column: str) -> dict[str, str]:
    """``{"u": user_column, "x": x_column, "y": y_column}`` after checking the names."""
    cols = {"user_column": user_column, "x_column": x_column, "y_column": y_column}
    for name, value in cols.items():
        if not isinstance(value, str) or not value:
            raise InvalidParameterError(name, value, "a column name (non-empty str)")
    if len(set(cols.values())) != 3:
        raise InvalidParameterError("user_column/x_column/y_column", tuple(cols.values()),
                                    "three different columns")
    return {"u": user_column, "x": x_column, "y": y_column}
