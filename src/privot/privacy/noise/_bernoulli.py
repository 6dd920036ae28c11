"""Exact uniform and Bernoulli samplers, and CKS Algorithm 1.

:func:`uniform_integers` (rejection from random words), :func:`bernoulli` (rational
parameter), :func:`bernoulli_exp` and :func:`bernoulli_exp_parts`
(``Bernoulli(exp(-gamma))`` for rational ``gamma``, CKS Algorithm 1), and the
vectorised Algorithm-1 loops (:func:`_alg1`, :func:`_alg1_rounds`) that the geometric,
discrete Laplace and discrete Gaussian samplers reuse.

Privacy
-------
Integer comparisons only: every output is exactly distributed. Samplers, not
mechanisms; the exponential mechanism
(:func:`privot.privacy.mechanisms.exponential_mechanism`) draws its acceptance test
with :func:`bernoulli_exp_parts`. See ``docs/privacy/discrete.md``, section 3.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidParameterError
from privot.privacy.noise._bits import BitSource, resolve_rng
from privot.privacy.noise._exact import _bern_exp_minus_one
from privot.privacy.noise._scales import _LIMIT, _shape_out, _size

__all__ = ["uniform_integers", "bernoulli", "bernoulli_exp", "bernoulli_exp_parts"]


def uniform_integers(high: int | np.ndarray, size: int | tuple[int, ...] | None = None, *,
                     rng: np.random.Generator | None = None) -> np.ndarray | int:
    """Exactly uniform integers on ``{0, ..., high - 1}``.

    Parameters
    ----------
    high : int or int array
        Exclusive upper bound(s), each in ``[1, 2**62]``. An array gives one draw per
        entry (``size`` must then be None).
    size : int or tuple, optional
        Output shape for a scalar ``high``; None gives a Python int.
    rng : numpy.random.Generator, optional
        None for OS entropy (see :func:`resolve_rng`).

    Returns
    -------
    int64 array (or int)
    """
    src, _ = resolve_rng(rng)
    if np.ndim(high) == 0:
        h = check_int(high, "high", minimum=1, maximum=_LIMIT)
        shape, n = _size(size)
        return _shape_out(src.uniform_below(h, n), shape)
    h = np.asarray(high)
    if not np.issubdtype(h.dtype, np.integer) or h.size and (h.min() < 1 or h.max() > _LIMIT):
        raise InvalidParameterError("high", high, "integers in [1, 2**62]")
    if size is not None:
        raise InvalidParameterError("size", size, "None when high is an array")
    return src.uniform_below(h.astype(np.int64))


def _bern_ratio(src: BitSource, num: np.ndarray, den: np.ndarray | int) -> np.ndarray:
    """Exact Bernoulli(num/den): a uniform integer in [0, den) is < num."""
    n = np.size(num)
    if np.ndim(den) == 0:
        return src.uniform_below(int(den), n) < num
    return src.uniform_below(den) < num


def bernoulli(numerator: int | np.ndarray, denominator: int | np.ndarray, *,
              rng: np.random.Generator | None = None) -> np.ndarray:
    """Exact ``Bernoulli(numerator / denominator)`` (elementwise, broadcast).

    ``0 <= numerator <= denominator <= 2**62``, integers.
    """
    src, _ = resolve_rng(rng)
    num, den = _rational_arrays(numerator, denominator)
    if np.any(num > den):
        raise InvalidParameterError("numerator", numerator, "<= denominator")
    return _bern_ratio(src, num.ravel(), den.ravel()).reshape(num.shape)


def _rational_arrays(numerator: object, denominator: object) -> tuple[np.ndarray, np.ndarray]:
    num = np.asarray(numerator)
    den = np.asarray(denominator)
    for name, a, arr, lo in (("numerator", numerator, num, 0),
                             ("denominator", denominator, den, 1)):
        if not np.issubdtype(arr.dtype, np.integer):
            raise InvalidParameterError(name, a, "integers")
        if arr.size and (arr.min() < lo or arr.max() > _LIMIT):
            raise InvalidParameterError(name, a, f"integers in [{lo}, 2**62]")
    num, den = np.broadcast_arrays(num.astype(np.int64), den.astype(np.int64))
    return num, den


def _alg1(src: BitSource, n: int, factors: Callable[[np.ndarray], np.ndarray],
          c: int = 1) -> np.ndarray:
    r"""CKS Algorithm 1 for ``gamma = c**-1 * f`` with ``f`` in [0, 1], vectorised.

    ``factors(sel)`` returns an exact ``Bernoulli(f_i)`` draw for each index in ``sel``.
    Loop (CKS Alg. 1, lines 2-8): K = 1; draw A ~ Bernoulli(gamma / K); while A = 1,
    K += 1 and redraw. Return 1 iff K is odd. Here ``Bernoulli(gamma/K)`` is the product
    of independent ``Bernoulli(1/(cK))`` and ``Bernoulli(f)`` (drawn in that order,
    short-circuit). ``P[K > k] = gamma**k / k!`` so ``P[K odd] = exp(-gamma)``.
    """
    def rounds(k: int, idx: np.ndarray) -> np.ndarray:
        if c * k == 1:
            a = np.ones(idx.size, dtype=bool)
        else:
            a = src.uniform_below(c * k, idx.size) == 0
        sub = np.flatnonzero(a)
        if sub.size:
            a[sub] = factors(idx[sub])
        return a

    return _alg1_rounds(n, rounds)


def _alg1_rounds(n: int, rounds: Callable[[int, np.ndarray], np.ndarray]) -> np.ndarray:
    """CKS Algorithm 1 skeleton: ``rounds(k, idx)`` draws ``A_k ~ Bernoulli(gamma_i / k)``
    for the elements ``idx`` still running; ``K`` is the first ``k`` with ``A_k = 0``
    and the result is ``K odd`` (probability ``exp(-gamma_i)`` for ``gamma_i <= 1``)."""
    out = np.empty(n, dtype=bool)
    idx = np.arange(n)
    k = 1
    while idx.size:
        a = rounds(k, idx)
        out[idx[~a]] = (k % 2 == 1)
        idx = idx[a]
        k += 1
    return out


def _bern_exp(src: BitSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for int64 arrays num >= 0, den >= 1 (same shape)."""
    g = num // den  # integer part: AND of g draws of Bernoulli(exp(-1))  (CKS Alg. 1, l. 9-13)
    return bernoulli_exp_parts(src, g, num - g * den, den)


def bernoulli_exp_parts(src: BitSource, g: np.ndarray, r: np.ndarray,
                        den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-(g + r/den))) from the integer part ``g >= 0`` and the
    fraction ``0 <= r < den`` (int64 arrays of one shape), so that ``g * den + r`` need
    not fit in int64. The cost grows with ``g`` only while draws succeed (expected
    ``< 1.6`` rounds), so a huge ``g`` is cheap. ``Bernoulli(exp(-1))`` is a lazy
    comparison with the certified constant ``exp(-1)`` (exact, see :mod:`privot.privacy.noise`)."""
    n = g.size
    alive = np.ones(n, dtype=bool)
    idx = np.flatnonzero(g > 0)
    rem = g[idx]
    while idx.size:
        ok = _bern_exp_minus_one(src, idx.size)
        alive[idx[~ok]] = False
        rem = rem[ok] - 1
        idx = idx[ok]
        keep = rem > 0
        idx, rem = idx[keep], rem[keep]
    sel = np.flatnonzero(alive & (r > 0))
    if sel.size:
        rs, ds = r[sel], den[sel]
        alive[sel] = _alg1(src, sel.size, lambda s: _bern_ratio(src, rs[s], ds[s]))
    return alive


def bernoulli_exp(numerator: int | np.ndarray, denominator: int | np.ndarray = 1, *,
                  rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Exact ``Bernoulli(exp(-gamma))`` with rational ``gamma = numerator/denominator``.

    CKS Algorithm 1: for :math:`\gamma\in[0,1]` count the run of successes of
    :math:`\mathrm{Bernoulli}(\gamma/K)`, :math:`K = 1, 2, \dots`, and return whether it
    stopped at an odd ``K``; for :math:`\gamma > 1` take the AND of
    :math:`\lfloor\gamma\rfloor` draws of :math:`\mathrm{Bernoulli}(e^{-1})` and one
    with the fractional part. Only integer comparisons are used, so the output is
    exactly distributed.

    Parameters
    ----------
    numerator, denominator : int or int array
        ``0 <= numerator``, ``1 <= denominator``, both ``<= 2**62``; broadcast.
    rng : numpy.random.Generator, optional

    Returns
    -------
    bool array of the broadcast shape
    """
    src, _ = resolve_rng(rng)
    num, den = _rational_arrays(numerator, denominator)
    return _bern_exp(src, num.ravel(), den.ravel()).reshape(num.shape)
