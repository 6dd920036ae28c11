"""Reading the samplers' arguments: output sizes, floats as exact ratios, scale arrays.

A positive float is the exact rational ``num / 2**j`` (:func:`_dyadic`,
:func:`_dyadic_array`), so a sampler draws from the law with exactly the float's value
as its parameter. :func:`_by_scale` sends an array of scales to the fast one-scale
samplers group by group (up to ``_MAX_GROUPS`` distinct scales) or else to the
per-element CKS samplers; every draw has the same law either way.

Privacy
-------
No randomness here. ``_LIMIT = 2**62`` keeps every intermediate integer of the
samplers in int64: a scale outside it is refused, never rounded. See
``docs/privacy/discrete.md``, sections 2 and 7.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privot._validation import check_finite_array, check_int
from privot.errors import InvalidParameterError
from privot.privacy.noise._bits import BitSource

_LIMIT = 2**62  # every intermediate integer stays below this (int64 headroom)
#: Distinct scales sampled group by group (with cached tables) before falling back to
#: the per-element CKS samplers.
_MAX_GROUPS = 64


# ---------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------


def _size(size: int | tuple[int, ...] | None) -> tuple[tuple[int, ...], int]:
    if size is None:
        return (), 1
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    for s in shape:
        check_int(s, "size", minimum=0)
    shape = tuple(int(s) for s in shape)
    return shape, int(np.prod(shape, dtype=np.int64))


def _shape_out(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | int:
    return int(x[0]) if shape == () else x.reshape(shape)


_DYADIC_RULE = ("a float whose exact ratio num/2**j has num, 2**j <= 2**62 "
                "(roughly 2**-9 <= value <= 2**62 for arbitrary mantissas)")


def _dyadic(value: float, name: str) -> tuple[int, int]:
    """A positive finite float as the exact ratio ``num / den`` (``den`` a power of 2)."""
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidParameterError(name, value, "a finite number > 0")
    num, den = v.as_integer_ratio()
    if num > _LIMIT or den > _LIMIT:
        raise InvalidParameterError(name, value, _DYADIC_RULE)
    return num, den


def _dyadic_array(arr: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_dyadic` for every entry of a positive finite float array (vectorised).

    ``x = m 2**e`` with ``m`` in [1/2, 1) (``frexp``, exact), so ``M = m 2**53`` is an
    exact integer and ``x = M 2**(e-53)``; dividing out the trailing zero bits of ``M``
    gives the reduced ratio, the same as :meth:`float.as_integer_ratio`.
    """
    x = np.asarray(arr, dtype=np.float64).ravel()
    if x.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if np.any(~(x > 0) | ~np.isfinite(x)):
        raise InvalidParameterError(name, float(x[np.flatnonzero(~(x > 0) | ~np.isfinite(x))[0]]),
                                    "finite numbers > 0")
    mant, ex = np.frexp(x)
    big = np.ldexp(mant, 53).astype(np.int64)
    low = big & -big
    tz = np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1
    odd = big >> tz
    ex = ex.astype(np.int64) - 53 + tz  # x = odd * 2**ex
    bad = (x > float(_LIMIT)) | (ex < -62)
    if np.any(bad):
        raise InvalidParameterError(name, float(x[np.flatnonzero(bad)[0]]), _DYADIC_RULE)
    pos = np.maximum(ex, 0)
    num = odd << pos
    den = np.left_shift(np.int64(1), np.maximum(-ex, 0))
    return num, den


# ---------------------------------------------------------------------------------------
# Arrays of scales: one draw per entry
# ---------------------------------------------------------------------------------------


def _by_scale(src: BitSource, num: np.ndarray, den: np.ndarray,
              scalar: Callable[[BitSource, int, int, int], np.ndarray],
              generic: Callable[[BitSource, np.ndarray, np.ndarray], np.ndarray]
              ) -> np.ndarray:
    """One draw per entry of the exact scales ``num/den``: group by distinct scale and
    use the fast one-scale sampler (cached tables) when there are few distinct scales,
    else the per-element CKS sampler. Every draw has the same law either way."""
    n = num.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    t0, s0 = int(num[0]), int(den[0])
    if np.all(num == t0) and np.all(den == s0):
        return scalar(src, t0, s0, n)
    pairs, inv = np.unique(np.stack([num, den], axis=1), axis=0, return_inverse=True)
    if len(pairs) > _MAX_GROUPS:
        return generic(src, num, den)
    inv = np.asarray(inv).ravel()
    out = np.empty(n, dtype=np.int64)
    for g, (t, s) in enumerate(pairs.tolist()):
        sel = np.flatnonzero(inv == g)
        out[sel] = scalar(src, int(t), int(s), sel.size)
    return out


def _scale_arrays(scale: object, name: str, size: int | tuple[int, ...] | None
                  ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Exact (num, den) int64 arrays for an array of positive scales, and its shape."""
    arr = check_finite_array(scale, name)
    if np.any(arr <= 0):
        raise InvalidParameterError(name, arr[arr <= 0].flat[0], "every entry > 0")
    if size is not None:
        shape, _ = _size(size)
        if tuple(shape) != tuple(arr.shape):
            raise InvalidParameterError("size", size, f"None or the shape of {name} {arr.shape}")
    num, den = _dyadic_array(arr, name)
    return num, den, arr.shape
