"""Validation and small helpers shared by the OT solvers (private).

Every helper raises :class:`~privot.errors.InvalidDataError` or
:class:`~privot.errors.InvalidParameterError` naming the parameter and value.
"""

from __future__ import annotations

import math

import numpy as np

from privot._validation import _as_float, check_finite_array, check_points, check_weights
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = [
    "check_p",
    "check_cloud_pair",
    "check_samples_1d",
    "check_mass_pair",
    "as_generator",
]

#: Relative tolerance on the equality of the total masses of ``a`` and ``b``.
MASS_RTOL = 1e-9


def check_p(p: object) -> float:
    """The order ``p`` of a Wasserstein distance: a finite number >= 1."""
    allowed = "a finite number >= 1"
    v = _as_float("p", p, allowed)
    if not math.isfinite(v) or v < 1:
        raise InvalidParameterError("p", p, allowed)
    return v


def check_cloud_pair(x: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    """Two finite, non-empty point clouds ``(n, d)`` and ``(m, d)`` of the same dimension."""
    xa = check_points(x, "x")
    ya = check_points(y, "y")
    if xa.shape[1] != ya.shape[1]:
        raise InvalidDataError(
            f"x and y must have the same dimension d; got x.shape={xa.shape}, y.shape={ya.shape}"
        )
    return xa, ya


def check_samples_1d(values: object, name: str) -> np.ndarray:
    """A finite, non-empty 1-D sample; ``(n, 1)`` is accepted and flattened."""
    arr = check_finite_array(values, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidDataError(f"{name} must have shape (n,) or (n, 1), got shape {arr.shape}")
    return arr


def check_mass_pair(a: object | None, b: object | None, n: int,
                    m: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights ``a`` (length n) and ``b`` (length m), non-negative, with equal total mass.

    ``None`` means uniform weights of total mass one. If only one of the two is
    given, the other is uniform with the same total mass. The returned weights are
    the caller's (not normalised) with ``b`` rescaled by at most ``MASS_RTOL`` so that
    both sums agree exactly.
    """
    if a is None and b is None:
        return np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    if a is None:
        bb = check_weights(b, m, "b", normalise=False)
        aa = np.full(n, bb.sum() / n)
    elif b is None:
        aa = check_weights(a, n, "a", normalise=False)
        bb = np.full(m, aa.sum() / m)
    else:
        aa = check_weights(a, n, "a", normalise=False)
        bb = check_weights(b, m, "b", normalise=False)
    sa, sb = float(aa.sum()), float(bb.sum())
    if not math.isclose(sa, sb, rel_tol=MASS_RTOL, abs_tol=0.0):
        raise InvalidDataError(
            f"a and b must have the same total mass; a sums to {sa!r} and b sums to {sb!r} "
            f"(relative tolerance {MASS_RTOL})"
        )
    return aa, bb * (sa / sb)


def as_generator(rng: object, name: str = "rng") -> np.random.Generator:
    """A :class:`numpy.random.Generator` from a Generator or an int seed (never global state)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and int(rng) >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidParameterError(
        name, rng, "a numpy.random.Generator or a non-negative int seed"
    )
