r"""Real-valued releases on the :math:`2^{-k}` grid: :func:`secure_laplace`,
:func:`secure_gaussian`, and the grid rule :func:`grid_exponent`.

Values are rounded to :math:`2^{-k}\mathbb{Z}` (:func:`round_to_grid`, exact) and exact
*integer* noise (the discrete Laplace of scale :math:`b 2^k`, the discrete Gaussian of
:math:`\sigma 2^k`) is added on that grid: no floating-point noise sample is ever added
to a float.

Privacy
-------
Safe against the floating-point attack of Mironov (2012): the set of possible outputs
(multiples of :math:`2^{-k}`) does not depend on the data, and the likelihood ratio
between neighbours is that of the discrete mechanism on the integers. The rounding
moves a value by at most :math:`2^{-k-1}`; the mechanisms charge it to the sensitivity
(``docs/privacy/laplace.md``, ``docs/privacy/gaussian.md``). See
``docs/privacy/discrete.md``, section 8.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from privot._validation import check_finite_array, check_int, check_positive
from privot.errors import InvalidParameterError
from privot.privacy.noise._bits import resolve_rng
from privot.privacy.noise._gaussian import _dgauss_generic, _dgauss_scalar
from privot.privacy.noise._laplace import _dlap_generic, _dlap_scalar
from privot.privacy.noise._scales import _by_scale, _dyadic, _dyadic_array

__all__ = [
    "grid_exponent",
    "round_to_grid",
    "secure_laplace",
    "secure_gaussian",
    "DEFAULT_PRECISION_BITS",
]

#: Default ``P`` in the grid rule ``2**-k <= scale * 2**-P`` (see :func:`grid_exponent`).
DEFAULT_PRECISION_BITS = 20


def grid_exponent(scale: float, *, precision_bits: int = DEFAULT_PRECISION_BITS) -> int:
    r"""The grid exponent ``k``: values are released on :math:`2^{-k}\mathbb{Z}`.

    Rule: the largest grid step that is at most :math:`2^{-P}` of the noise scale,

    .. math:: k = P - \lfloor \log_2 b \rfloor, \qquad
              b\,2^{-P-1} < 2^{-k} \le b\,2^{-P},

    so the noise spans :math:`[2^P, 2^{P+1})` grid steps. The rounding error of each
    value is at most :math:`2^{-k-1}\le 2^{-P-1} b` (1e-6 of the scale for P = 20); the
    effect on the sensitivity is derived in ``docs/privacy/laplace.md``.
    """
    b = check_positive(scale, "scale")
    p = check_int(precision_bits, "precision_bits", minimum=1, maximum=40)
    _, e = math.frexp(b)  # b = f 2**e with f in [0.5, 1): floor(log2 b) = e - 1
    return p - (e - 1)


def round_to_grid(values: np.ndarray, k: int) -> np.ndarray:
    r"""Round to the nearest multiple of :math:`2^{-k}` and return the integers ``n``.

    Exact: multiplying by :math:`2^k` is exact in floating point, and ``rint`` is exact.
    Values are first clamped to :math:`\pm 2^{61-k}` (a data-independent, 1-Lipschitz
    map, so it cannot increase any sensitivity) so that ``n`` and ``n + noise`` fit in
    int64. When a value is clamped, a :class:`RuntimeWarning` tells the *local* caller
    (the trusted curator; it is not part of any release) to pass a smaller
    ``grid_exponent``.
    """
    bound = math.ldexp(1.0, 61 - k)
    x = np.asarray(values, dtype=np.float64)
    if x.size and float(np.max(np.abs(x))) > bound:
        warnings.warn(f"values beyond +-2**{61 - k} were clamped to fit the 2**-{k} grid in "
                      "int64; pass a smaller grid_exponent to keep them", RuntimeWarning,
                      stacklevel=3)
        x = np.clip(x, -bound, bound)
    return np.rint(np.ldexp(x, k)).astype(np.int64)


def _grid_release(values: object, k: int | None, scale_for_k: float,
                  noise: Callable[[int], np.ndarray]) -> np.ndarray:
    x = check_finite_array(values, "values", allow_empty=True)
    if k is None:
        k = grid_exponent(scale_for_k)
    k = check_int(k, "grid_exponent", minimum=-1000, maximum=1000)
    n = round_to_grid(x.ravel(), k)
    z = n + noise(n.size)
    return np.ldexp(z.astype(np.float64), -k).reshape(x.shape)


def _grid_scale_scalar(scale: object, name: str, k: int) -> tuple[int, int]:
    """Exact (num, den) of a scalar ``scale * 2**k``."""
    v = check_positive(scale, name)
    try:
        scaled = math.ldexp(v, k)
    except OverflowError:
        scaled = math.inf
    return _dyadic(scaled, name + " * 2**k")


def _grid_scales(scale: object, name: str, shape: tuple[int, ...], k: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (num, den) of an array ``scale * 2**k`` broadcast to ``shape`` (flat)."""
    arr = check_finite_array(scale, name)
    if np.any(arr <= 0):
        raise InvalidParameterError(name, arr[arr <= 0].flat[0], "every entry > 0")
    try:
        arr = np.broadcast_to(arr, shape).ravel()
    except ValueError as exc:
        raise InvalidParameterError(name, scale, f"broadcastable to {shape}") from exc
    with np.errstate(over="ignore", under="ignore"):
        scaled = np.ldexp(arr, k)
    return _dyadic_array(scaled, name + " * 2**k")


def secure_laplace(values: float | np.ndarray, scale: float | np.ndarray, *,
                   rng: np.random.Generator | None = None,
                   grid_exponent: int | None = None) -> np.ndarray:
    r"""Values plus Laplace noise, on a :math:`2^{-k}` grid (float-attack safe).

    .. math:: \tilde x = 2^{-k}\bigl(\mathrm{round}(2^k x) + N\bigr),\qquad
              N\sim\mathcal{L}_\mathbb{Z}(b\,2^k)

    :math:`N` is the exact discrete Laplace with scale :math:`b 2^k` (the float's exact
    value), so the output is the discrete analogue of ``x + Laplace(b)`` and every
    output is a multiple of :math:`2^{-k}`: the set of possible outputs does not depend on
    the data (Mironov 2012). The added error is the rounding, at most :math:`2^{-k-1}`.

    Parameters
    ----------
    values : float or array, any shape
        Finite.
    scale : float or array broadcastable to ``values``
        :math:`b > 0` (per-coordinate scales allowed).
    rng : numpy.random.Generator, optional
    grid_exponent : int, optional
        ``k``; default :func:`grid_exponent` of the smallest scale.

    Returns
    -------
    float array of the shape of ``values``

    Privacy
    -------
    This is a sampler: the calibration (and the sensitivity increase of at most
    :math:`2^{-k}` per changed coordinate caused by the rounding) is done by
    :func:`privot.privacy.mechanisms.laplace_mechanism`; see ``docs/privacy/laplace.md``.
    """
    src, _ = resolve_rng(rng)
    shape = np.shape(values)
    smin = float(np.min(check_finite_array(scale, "scale"))) if np.ndim(scale) else scale
    k = grid_exponent if grid_exponent is not None else _default_k(smin, "scale")

    def noise(n: int) -> np.ndarray:
        if np.ndim(scale) == 0:
            t, s = _grid_scale_scalar(scale, "scale", k)
            return _dlap_scalar(src, t, s, n)
        t, s = _grid_scales(scale, "scale", shape, k)
        return _by_scale(src, t, s, _dlap_scalar, _dlap_generic)

    return _grid_release(values, k, smin, noise)


def secure_gaussian(values: float | np.ndarray, sigma: float | np.ndarray, *,
                    rng: np.random.Generator | None = None,
                    grid_exponent: int | None = None) -> np.ndarray:
    r"""Values plus Gaussian noise, on a :math:`2^{-k}` grid (float-attack safe).

    .. math:: \tilde x = 2^{-k}\bigl(\mathrm{round}(2^k x) + N\bigr),\qquad
              N\sim\mathcal{N}_\mathbb{Z}(0, (\sigma 2^k)^2)

    with the exact discrete Gaussian of CKS (:func:`discrete_gaussian`). See
    :func:`secure_laplace` for the grid.

    Privacy
    -------
    A sampler; calibration in :func:`privot.privacy.mechanisms.gaussian_mechanism`, see
    ``docs/privacy/gaussian.md``.
    """
    src, _ = resolve_rng(rng)
    shape = np.shape(values)
    smin = float(np.min(check_finite_array(sigma, "sigma"))) if np.ndim(sigma) else sigma
    k = grid_exponent if grid_exponent is not None else _default_k(smin, "sigma")

    def noise(n: int) -> np.ndarray:
        if np.ndim(sigma) == 0:
            a, b = _grid_scale_scalar(sigma, "sigma", k)
            if a > 2**53:
                raise InvalidParameterError("sigma", sigma, "sigma * 2**k at most 2**53")
            return _dgauss_scalar(src, a, b, n)
        a, b = _grid_scales(sigma, "sigma", shape, k)
        if np.any(a > 2**53):
            raise InvalidParameterError("sigma", sigma, "sigma * 2**k at most 2**53")
        return _by_scale(src, a, b, _dgauss_scalar, _dgauss_generic)

    return _grid_release(values, k, smin, noise)


def _default_k(scale: object, name: str) -> int:
    return grid_exponent(check_positive(scale, name))
