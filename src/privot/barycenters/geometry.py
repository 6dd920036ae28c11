r"""Public geometry of the private barycenters: a fixed map of the data into B_0(1/2).

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

from privot._validation import check_finite_array, check_points, check_positive
from privot.errors import InvalidDataError, InvalidParameterError, plain_repr

__all__ = ["PublicBounds"]

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
