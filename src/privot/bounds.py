r"""Public bounds: the caller's data-independent domain of every capability.

Two kinds of public bounds, one module:

* :class:`Grid` -- a rectangle mapped to a :math:`\Delta\times\Delta` grid of cells
  (heatmaps, paper 002; the input points of the sampling mechanisms, paper 003);
* :class:`PublicBounds` -- a box or a ball mapped isotropically into :math:`B_0(1/2)`
  (barycenters, papers 000 and 001).

Both are **public parameters** chosen by the caller and never read from the data (a
data-dependent domain would leak the data's extent; DESIGN.md), and both place a point
by a rule reading that point alone (a cell, or a clip), so one unit's points change only
that unit's contribution.

Grid
----

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

PublicBounds
------------

Paper 000 (Assumption 1) and the Private Measure Mechanism of He, Vershynin and Zhu
(2023) work with data in the ball :math:`B_0(1/2)` of radius 1/2 about the origin. Real
data lives in caller units (degrees, pixels, ...). :class:`PublicBounds` is the
**public**, data-independent isotropic affine map between the two, given by the caller:

* a box :math:`[\ell, u]`: :math:`x \mapsto (x - c)/\mathrm{diag}` with
  :math:`c = (\ell + u)/2` and :math:`\mathrm{diag} = \|u - \ell\|_2`; the box lands
  inside :math:`B_0(1/2)` (its half-diagonal is 1/2) with its shape preserved;
* a ball :math:`B_c(r)`: :math:`x \mapsto (x - c)/(2r)`, onto :math:`B_0(1/2)`.

The map is isotropic (one factor :attr:`PublicBounds.scale` for every coordinate), so
Wasserstein costs convert exactly: :math:`W_p` in caller units equals :math:`W_p` in
unit coordinates divided by ``scale``. It is never fitted to the data's extent (that
would be data-dependent preprocessing; ``docs/DESIGN.md``).

Points outside the bounds are **clipped** by a rule that depends on the point alone:
coordinate-wise clipping to the box, radial projection onto the ball. The number of
clipped points is returned as a curator-side diagnostic (not a private value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privot._validation import check_finite_array, check_int, check_points, check_positive
from privot.errors import InvalidDataError, InvalidParameterError, plain_repr

__all__ = ["ASPECTS", "CellAssignment", "Grid", "PublicBounds"]


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


_KINDS = ("box", "ball")


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class PublicBounds:
    r"""A public box or ball and the isotropic affine map of it into :math:`B_0(1/2)`.

    Build one with :meth:`box` or :meth:`ball`.

    Attributes
    ----------
    kind : {"box", "ball"}
    lower, upper : (d,) arrays
        The box (for a ball: its bounding box :math:`c \pm r`).
    centre : (d,) array
        Centre of the box or ball (mapped to the origin).
    radius : float
        Ball radius; for a box, its half-diagonal.
    """

    kind: str
    lower: np.ndarray
    upper: np.ndarray
    centre: np.ndarray
    radius: float

    # -- constructors ------------------------------------------------------------------

    @classmethod
    def box(cls, lower: np.ndarray | list[float], upper: np.ndarray | list[float]
            ) -> PublicBounds:
        """The box ``lower <= x <= upper`` (coordinate-wise), a public parameter.

        Raises
        ------
        InvalidParameterError
            ``lower``/``upper`` not finite, of different lengths, or ``lower >= upper``
            in some coordinate.
        """
        try:
            lo = check_finite_array(lower, "lower")
            hi = check_finite_array(upper, "upper")
        except InvalidDataError as exc:
            raise InvalidParameterError("lower/upper", (lower, upper),
                                        f"finite, non-empty 1-D arrays ({exc})") from exc
        lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        if lo.ndim != 1 or hi.ndim != 1 or lo.shape != hi.shape:
            raise InvalidParameterError("lower/upper", (lo.shape, hi.shape),
                                        "two 1-D arrays of the same length d")
        if np.any(lo >= hi):
            i = int(np.flatnonzero(lo >= hi)[0])
            raise InvalidParameterError(
                "lower", lo.tolist() if lo.size <= 8 else f"lower[{i}]={plain_repr(lo[i])}",
                f"lower < upper in every coordinate (coordinate {i}: "
                f"{lo[i]!r} >= {hi[i]!r})")
        centre = (lo + hi) / 2.0
        half_diag = float(np.linalg.norm(hi - lo)) / 2.0
        if not math.isfinite(half_diag) or half_diag <= 0:
            raise InvalidParameterError("upper", hi.tolist(), "a box of finite diagonal")
        return cls("box", _readonly(lo), _readonly(hi), _readonly(centre), half_diag)

    @classmethod
    def ball(cls, centre: np.ndarray | list[float], radius: float) -> PublicBounds:
        """The Euclidean ball of ``radius`` about ``centre``, a public parameter.

        Raises
        ------
        InvalidParameterError
            ``centre`` not finite or empty, ``radius <= 0`` or not finite.
        """
        try:
            c = np.atleast_1d(check_finite_array(centre, "centre"))
        except InvalidDataError as exc:
            raise InvalidParameterError("centre", centre,
                                        f"a finite, non-empty 1-D array ({exc})") from exc
        if c.ndim != 1:
            raise InvalidParameterError("centre", c.shape, "a 1-D array of length d")
        r = check_positive(radius, "radius")
        return cls("ball", _readonly(c - r), _readonly(c + r), _readonly(c), r)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise InvalidParameterError("kind", self.kind, f"one of {_KINDS}")

    # -- properties --------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """The dimension ``d``."""
        return int(self.centre.shape[0])

    @property
    def scale(self) -> float:
        r"""The isotropic factor of the map: unit = (caller - centre) * scale.

        ``1 / diag`` for a box, ``1 / (2 r)`` for a ball. Costs convert as
        :math:`W_p^{\text{caller}} = W_p^{\text{unit}} / \text{scale}`.
        """
        return 1.0 / (2.0 * self.radius)

    def cell_box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the partition domain in unit coordinates.

        The mapped box for box bounds (inside :math:`B_0(1/2)`); the cube
        :math:`[-1/2, 1/2]^d` bounding :math:`B_0(1/2)` for ball bounds.
        """
        if self.kind == "box":
            return ((self.lower - self.centre) * self.scale,
                    (self.upper - self.centre) * self.scale)
        return np.full(self.dim, -0.5), np.full(self.dim, 0.5)

    def same_as(self, other: object) -> bool:
        """True when ``other`` is a PublicBounds describing the same box or ball."""
        return (isinstance(other, PublicBounds) and other.kind == self.kind
                and np.array_equal(other.lower, self.lower)
                and np.array_equal(other.upper, self.upper))

    # -- the maps ----------------------------------------------------------------------

    def check_points(self, points: object, name: str = "points") -> np.ndarray:
        """A finite, non-empty ``(n, d)`` float array with ``d == dim``."""
        x = check_points(points, name)
        if x.shape[1] != self.dim:
            raise InvalidDataError(f"{name} has d={x.shape[1]} coordinates but the bounds "
                                   f"have dim={self.dim}")
        return x

    def clip(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points clipped into the bounds (caller units) and the ``(n,)`` mask of those
        that moved. ``points`` must be a finite ``(n, d)`` array."""
        x = np.asarray(points, dtype=np.float64)
        if self.kind == "box":
            out = np.maximum(x, self.lower)
            np.minimum(out, self.upper, out=out)
            moved = np.any(out != x, axis=1)
            return out, moved
        diff = x - self.centre
        # scaled norm: a far row (|x| ~ 1e300) must neither overflow nor land at the
        # centre; it is projected onto the sphere like any other
        big = np.max(np.abs(diff), axis=1) if diff.size else np.zeros(len(diff))
        safe = np.where(big > 0, big, 1.0)
        norm = big * np.linalg.norm(diff / safe[:, None], axis=1)
        moved = norm > self.radius
        out = x.copy()
        if np.any(moved):
            out[moved] = self.centre + diff[moved] * (self.radius / norm[moved])[:, None]
        return out, moved

    def to_unit(self, points: object) -> tuple[np.ndarray, int]:
        """Map caller-unit points into unit coordinates, clipping first.

        Parameters
        ----------
        points : (n, d) array
            Finite.

        Returns
        -------
        unit_points : (n, d) array
            Inside :meth:`cell_box` (and inside :math:`B_0(1/2)` up to rounding).
        n_clipped : int
            How many points were outside the bounds and clipped (a curator-side
            diagnostic, not a private value).
        """
        unit, moved = self.unit_and_moved(self.check_points(points))
        return unit, int(np.count_nonzero(moved))

    def unit_and_moved(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`to_unit` without validation, with the ``(n,)`` mask of clipped rows.

        The one definition of the map: the in-memory path and the engines' row function
        both call it, so their leaf ids agree bit for bit. ``points`` must be a finite
        ``(n, d)`` float array.
        """
        clipped, moved = self.clip(points)
        unit = (clipped - self.centre) * self.scale
        lo, hi = self.cell_box()
        # the float map is monotone, so a box stays inside; a radial projection may
        # leave the cube by an ulp: keep the invariant exactly
        np.maximum(unit, lo, out=unit)
        np.minimum(unit, hi, out=unit)
        return unit, moved

    def from_unit(self, unit_points: object) -> np.ndarray:
        """Map unit-coordinate points back to caller units: ``u / scale + centre``."""
        u = np.asarray(unit_points, dtype=np.float64)
        if u.ndim != 2 or u.shape[1] != self.dim:
            raise InvalidDataError(f"unit_points must have shape (n, {self.dim}), got "
                                   f"{u.shape}")
        return u / self.scale + self.centre

    def __repr__(self) -> str:
        if self.kind == "box":
            return f"PublicBounds.box(dim={self.dim}, scale={self.scale:.6g})"
        return f"PublicBounds.ball(dim={self.dim}, radius={self.radius:.6g})"
