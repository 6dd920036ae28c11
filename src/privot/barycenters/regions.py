r"""Public regions for the placement step of the private coreset (paper 000, Sec. 6).

In the US-population experiments of paper 000 the private coreset "only sample[s]
points that are inside the US border (which is private by data independent
post-processing)". A :class:`Region` is that public set: the placement step of
:func:`~privot.barycenters.coresets.private_coreset` draws each point by rejection
inside its leaf cell until it falls in the region, and drops (and counts) those it
cannot place. The region is a **public** parameter; it must not be derived from the
data.

Regions test points in **caller coordinates** (the units of
:class:`~privot.barycenters.geometry.PublicBounds`, e.g. longitude and latitude).

* :class:`PolygonRegion` -- a simple polygon in the plane, even-odd rule, pure numpy;
* :class:`PredicateRegion` -- any vectorised predicate;
* :func:`continental_us` -- a coarse public outline of the contiguous United States.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from privot._validation import check_finite_array
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["CONTINENTAL_US_OUTLINE", "PolygonRegion", "PredicateRegion", "Region",
           "continental_us", "describe_region"]


@runtime_checkable
class Region(Protocol):
    """A public subset of the caller's space."""

    def contains(self, points: np.ndarray) -> np.ndarray:
        """``(n,)`` bool: which of the ``(n, d)`` points (caller coordinates) are in."""
        ...


#: Rows of points tested against all edges at once (bounds the temporary arrays).
_CHUNK = 65_536


@dataclass(frozen=True, eq=False)
class PolygonRegion:
    """A polygon in the plane (2-D), tested with the even-odd (crossing number) rule.

    Parameters
    ----------
    vertices : (m, 2) array
        The polygon's vertices in order (the closing edge back to the first vertex is
        implied), ``m >= 3``, finite.

    Notes
    -----
    A horizontal ray from each point crosses the edges; an odd number of crossings
    means inside. Edges are half-open in ``y`` (``y0 <= y < y1``), so a vertex is
    counted once. Points exactly on an edge may be classified either way.
    """

    vertices: np.ndarray

    def __repr__(self) -> str:
        return f"PolygonRegion({len(self.vertices)} vertices)"

    def __post_init__(self) -> None:
        try:
            v = check_finite_array(self.vertices, "vertices", ndim=2)
        except InvalidDataError as exc:
            raise InvalidParameterError("vertices", self.vertices,
                                        f"a finite (m, 2) array, m >= 3 ({exc})") from exc
        if v.shape[1] != 2 or v.shape[0] < 3:
            raise InvalidParameterError("vertices", v.shape, "an (m, 2) array with m >= 3")
        v = v.copy()
        v.setflags(write=False)
        object.__setattr__(self, "vertices", v)

    @property
    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the vertices."""
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    def contains(self, points: np.ndarray) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise InvalidDataError(f"points must have shape (n, 2) for a polygon, got "
                                   f"{p.shape}")
        x0, y0 = self.vertices[:, 0], self.vertices[:, 1]
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        keep = y0 != y1  # horizontal edges never cross a horizontal ray
        x0, y0, x1, y1 = x0[keep], y0[keep], x1[keep], y1[keep]
        lo, hi = self.bounding_box
        out = np.zeros(p.shape[0], dtype=bool)
        cand = np.flatnonzero(np.all((p >= lo) & (p <= hi), axis=1))
        for start in range(0, cand.size, _CHUNK):
            idx = cand[start:start + _CHUNK]
            px, py = p[idx, 0][:, None], p[idx, 1][:, None]
            straddle = (y0 <= py) != (y1 <= py)
            with np.errstate(divide="ignore", invalid="ignore"):
                xcross = x0 + (py - y0) * (x1 - x0) / (y1 - y0)
            crossings = np.count_nonzero(straddle & (px < xcross), axis=1)
            out[idx] = (crossings % 2) == 1
        return out


@dataclass(frozen=True, eq=False)
class PredicateRegion:
    """A region given by a vectorised predicate ``fn((n, d) array) -> (n,) bool``."""

    fn: Callable[[np.ndarray], np.ndarray]

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise InvalidParameterError("fn", self.fn, "a callable (n, d) -> (n,) bool")

    def contains(self, points: np.ndarray) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)
        out = np.asarray(self.fn(p))
        if out.shape != (p.shape[0],):
            raise InvalidDataError(f"the region predicate returned shape {out.shape}; "
                                   f"expected ({p.shape[0]},)")
        return out.astype(bool)


#: A coarse outline of the contiguous United States, (longitude, latitude) in degrees,
#: drawn by hand from public geography at a resolution of roughly 50-150 km: the
#: Pacific coast, the Canadian border (49th parallel, the Great Lakes along the
#: international boundary, the St Lawrence, Maine), the Atlantic and Gulf coasts and
#: the Mexican border (the Rio Grande, then west to the Pacific). It is **approximate**
#: (bays, sounds and islands are smoothed; the inland lakes are not holes) and is meant
#: as a public post-processing filter, not as a map.
CONTINENTAL_US_OUTLINE: tuple[tuple[float, float], ...] = (
    # Pacific north-west, Strait of Juan de Fuca, 49th parallel
    (-124.7, 48.4), (-123.2, 48.15), (-122.75, 49.0), (-110.0, 49.0), (-95.15, 49.0),
    # Rainy River, Lake Superior, St Marys River, Lake Huron
    (-93.0, 48.6), (-89.6, 48.0), (-88.4, 48.3), (-84.8, 46.9), (-84.1, 46.5),
    (-83.6, 46.1), (-82.5, 45.3), (-82.4, 43.0),
    # Detroit River, Lake Erie, Niagara, Lake Ontario, St Lawrence, 45th parallel
    (-83.1, 42.05), (-82.7, 41.7), (-81.3, 42.2), (-79.8, 42.5), (-78.9, 42.9),
    (-79.05, 43.27), (-77.5, 43.6), (-76.4, 43.6), (-76.2, 44.2), (-75.0, 44.95),
    (-71.5, 45.01),
    # Maine
    (-71.08, 45.3), (-70.25, 46.1), (-70.0, 46.7), (-69.2, 47.45), (-68.3, 47.35),
    (-67.8, 47.07), (-67.8, 45.7), (-67.0, 44.9),
    # New England, Long Island, New Jersey, Delmarva, Virginia, Carolinas
    (-68.8, 44.3), (-70.2, 43.6), (-70.6, 42.65), (-70.7, 42.2), (-69.95, 41.7),
    (-71.4, 41.4), (-71.85, 41.07), (-73.0, 40.6), (-74.0, 40.45), (-74.1, 39.75),
    (-74.95, 38.93), (-75.05, 38.45), (-75.6, 37.9), (-75.95, 36.85), (-75.5, 35.25),
    (-76.5, 34.7), (-77.9, 33.9), (-79.2, 33.2), (-79.9, 32.65), (-81.0, 31.8),
    # Florida
    (-81.4, 30.3), (-80.6, 28.4), (-80.05, 26.7), (-80.1, 25.75), (-80.3, 25.3),
    (-81.1, 25.1), (-81.8, 26.1), (-82.7, 27.5), (-82.8, 28.2), (-83.6, 29.8),
    (-84.4, 29.9), (-85.0, 29.6), (-85.7, 30.1),
    # Gulf coast
    (-87.5, 30.3), (-89.4, 30.3), (-89.2, 29.1), (-91.3, 29.3), (-92.5, 29.6),
    (-93.8, 29.7), (-94.8, 29.3), (-95.9, 28.6), (-97.2, 27.6), (-97.4, 26.8),
    (-97.15, 25.95),
    # Rio Grande, then the land border to the Pacific
    (-99.1, 26.5), (-99.5, 27.5), (-100.5, 28.7), (-101.0, 29.35), (-102.5, 29.8),
    (-103.2, 29.0), (-104.5, 29.6), (-106.5, 31.78), (-108.2, 31.78), (-108.2, 31.33),
    (-111.07, 31.33), (-114.8, 32.5), (-114.7, 32.72), (-117.13, 32.53),
    # Pacific coast
    (-117.28, 32.68), (-117.3, 33.1), (-118.4, 33.75), (-118.5, 34.0), (-119.1, 34.1),
    (-120.5, 34.45), (-120.65, 35.2), (-121.9, 36.3), (-121.9, 36.6), (-122.5, 37.7),
    (-123.0, 38.0), (-123.7, 38.9), (-124.4, 40.4), (-124.2, 41.8), (-124.55, 42.8),
    (-124.1, 44.0), (-123.95, 46.2), (-124.1, 47.0),
)


def continental_us() -> PolygonRegion:
    """The contiguous United States as a coarse public polygon in (longitude, latitude).

    See :data:`CONTINENTAL_US_OUTLINE` (about 100 vertices, approximate, from public
    geography). Use it with :class:`~privot.barycenters.geometry.PublicBounds` in
    degrees, e.g. ``PublicBounds.box([-125, 24], [-66, 50])``.
    """
    return PolygonRegion(np.array(CONTINENTAL_US_OUTLINE, dtype=np.float64))


def describe_region(region: Region) -> dict:
    """The public record of ``region`` for ``release.json`` (the region is a public
    parameter, so a reader of the release can see which one shaped it): a polygon by its
    vertices (``"continental-us"`` named as such), a predicate by its name only.

    Returns
    -------
    dict
        ``{"kind": "polygon", "name": ..., "vertices": [[x, y], ...]}`` or
        ``{"kind": "predicate", "name": ...}``.
    """
    if isinstance(region, PolygonRegion):
        vertices = np.asarray(region.vertices)
        outline = np.asarray(CONTINENTAL_US_OUTLINE, dtype=np.float64)
        same = vertices.shape == outline.shape and np.array_equal(vertices, outline)
        return {"kind": "polygon", "name": "continental-us" if same else None,
                "vertices": vertices.tolist()}
    fn = getattr(region, "fn", region)
    return {"kind": "predicate" if isinstance(region, PredicateRegion) else "region",
            "name": getattr(fn, "__qualname__", type(region).__name__)}
