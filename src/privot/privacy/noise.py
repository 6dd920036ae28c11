r"""Secure noise samplers: the only place randomness for privacy comes from.

Everything here samples **exactly** on the integers from uniformly random bits, with
integer comparisons only (no floating-point ``log`` or ``exp`` of random numbers), in
the style of Canonne, Kamath and Steinke (2020), *The Discrete Gaussian for
Differential Privacy* (CKS below), vectorised with numpy rejection loops:

* :func:`uniform_integers` -- uniform on ``{0, ..., high-1}`` by rejection from
  random words (exact).
* :func:`bernoulli_exp` -- ``Bernoulli(exp(-gamma))`` for rational ``gamma`` (CKS
  Algorithm 1, exact).
* :func:`geometric`, :func:`discrete_laplace` -- CKS Algorithm 2 (exact for every
  float ``scale``: a float is the exact rational ``num / 2**j``).
* :func:`discrete_gaussian` -- CKS Algorithm 3 (exact for every float ``sigma``).
* :func:`secure_laplace`, :func:`secure_gaussian` -- real-valued releases safe against
  the floating-point attack of Mironov (2012): the values are rounded to the grid
  :math:`2^{-k}\mathbb{Z}` and *integer* noise is added on that grid.
* :func:`polya` -- negative binomial with real shape (Gamma-Poisson mixture); **not**
  exact (floating point), see its docstring.

Randomness
----------
Every sampler takes ``rng``. ``None`` (the default) reads the operating system's
CSPRNG (:func:`os.urandom`) through a process-local buffer refilled in large chunks;
the buffer is discarded in a forked child so parent and child never share bits. A
seeded :class:`numpy.random.Generator` is accepted for tests and reproducible
experiments; :func:`resolve_rng` then reports ``secure=False`` and mechanisms record
it in their :class:`~privot.privacy.types.Release`.

The derivations and the rule for the grid exponent ``k`` are in
``docs/privacy/discrete.md``, ``docs/privacy/laplace.md`` and
``docs/privacy/gaussian.md``.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Callable

import numpy as np

from privot._validation import check_finite_array, check_int, check_positive
from privot.errors import ConvergenceError, InvalidParameterError

__all__ = [
    "BitSource",
    "resolve_rng",
    "uniform_integers",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_parts",
    "geometric",
    "discrete_laplace",
    "discrete_gaussian",
    "polya",
    "polya_laplace_shares",
    "grid_exponent",
    "round_to_grid",
    "secure_laplace",
    "secure_gaussian",
    "DEFAULT_PRECISION_BITS",
]

#: Default ``P`` in the grid rule ``2**-k <= scale * 2**-P`` (see :func:`grid_exponent`).
DEFAULT_PRECISION_BITS = 20

_I63 = np.int64(2**63 - 1)
_LIMIT = 2**62  # every intermediate integer stays below this (int64 headroom)
_CHUNK = 1 << 20  # bytes read from os.urandom per refill (at least)


# ---------------------------------------------------------------------------------------
# Bit sources
# ---------------------------------------------------------------------------------------


class BitSource:
    """Uniform random integers from some source of bits.

    Subclasses implement :meth:`words` (uniform 64-bit words) and may override the
    others for speed. All methods are exact: no floating point is involved.
    """

    secure: bool = False

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform ``uint64`` words."""
        raise NotImplementedError

    def coins(self, n: int) -> np.ndarray:
        """``n`` independent fair booleans."""
        w = self.words((n + 63) // 64)
        return np.unpackbits(w.view(np.uint8))[:n].astype(bool)

    def uniform_below(self, high: np.ndarray | int, n: int | None = None) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (elementwise), as ``int64``.

        ``high`` is an int64 array (or a scalar with ``n`` draws), every entry in
        ``[1, 2**62]``. Rejection sampling from ``w``-bit words (w = 16, 32 or 63, the
        smallest that holds ``high``): a word ``r`` is kept when
        ``r < 2**w - (2**w mod high)``, so ``r mod high`` is exactly uniform.
        """
        if np.ndim(high) == 0:
            return self._uniform_scalar(int(high), int(n))
        h = np.asarray(high, dtype=np.int64)
        if h.size == 0:
            return np.empty(h.shape, dtype=np.int64)
        lo, hi = int(h.min()), int(h.max())
        if lo == hi:
            return self._uniform_scalar(lo, h.size).reshape(h.shape)
        h = h.ravel()
        size = h.size
        out = np.empty(size, dtype=np.int64)
        if hi <= 2**31:
            lim = np.int64(2**32) - (np.int64(2**32) % h)
        else:
            lim = _I63 - ((_I63 % h) + 1) % h + 1
        sel = np.arange(size)
        while sel.size:
            r = self._draw(sel.size, hi)
            ok = r < lim[sel]
            out[sel[ok]] = r[ok] % h[sel[ok]]
            sel = sel[~ok]
        return out.reshape(np.shape(high))

    def _draw(self, m: int, hi: int) -> np.ndarray:
        """``m`` uniform words of 16, 32 or 63 bits (as int64), wide enough for ``hi``."""
        if hi <= 2**15:
            return self.words((m + 3) // 4).view(np.uint16)[:m].astype(np.int64)
        if hi <= 2**31:
            return self.words((m + 1) // 2).view(np.uint32)[:m].astype(np.int64)
        return (self.words(m) >> np.uint64(1)).astype(np.int64)

    def _uniform_scalar(self, h: int, n: int) -> np.ndarray:
        if h == 1:
            return np.zeros(n, dtype=np.int64)
        width = 2**16 if h <= 2**15 else 2**32 if h <= 2**31 else 2**63
        lim = width - width % h  # accept r < lim
        out = np.empty(n, dtype=np.int64)
        r = self._draw(n, h)
        ok = r < lim
        if ok.all():
            np.remainder(r, h, out=out)
            return out
        out[ok] = r[ok] % h
        sel = np.flatnonzero(~ok)
        while sel.size:
            r = self._draw(sel.size, h)
            ok = r < lim
            out[sel[ok]] = r[ok] % h
            sel = sel[~ok]
        return out


class _OSEntropy(BitSource):
    """Words from :func:`os.urandom`, buffered in large chunks (thread- and fork-safe)."""

    secure = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buf = np.empty(0, dtype=np.uint64)
        self._pos = 0
        self._pid = os.getpid()

    def words(self, n: int) -> np.ndarray:
        with self._lock:
            if self._pid != os.getpid():  # forked child: never reuse the parent's bits
                self._buf = np.empty(0, dtype=np.uint64)
                self._pos = 0
                self._pid = os.getpid()
            avail = self._buf.size - self._pos
            if n <= avail:
                out = self._buf[self._pos:self._pos + n]
                self._pos += n
                return out
            head = self._buf[self._pos:]
            need = n - avail
            nbytes = max(8 * need, _CHUNK)
            fresh = np.frombuffer(os.urandom(nbytes), dtype=np.uint64)
            self._buf = fresh
            self._pos = need
            out = fresh[:need]
            return np.concatenate([head, out]) if avail else out


class _GeneratorSource(BitSource):
    """Bits from a caller's :class:`numpy.random.Generator` (reproducible, not secure)."""

    secure = False

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def words(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)

    def coins(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2, size=n).astype(bool)

    def uniform_below(self, high: np.ndarray | int, n: int | None = None) -> np.ndarray:
        # numpy's bounded integers are exact (Lemire's rejection method).
        if np.ndim(high) == 0:
            return self.rng.integers(0, int(high), size=int(n), dtype=np.int64)
        h = np.asarray(high, dtype=np.int64)
        return self.rng.integers(0, h, dtype=np.int64)


_OS_SOURCE = _OSEntropy()


def resolve_rng(rng: np.random.Generator | BitSource | None) -> tuple[BitSource, bool]:
    """Turn the ``rng`` argument of every sampler into ``(bit source, secure flag)``.

    Parameters
    ----------
    rng : numpy.random.Generator, BitSource or None
        ``None``: the operating system's CSPRNG (``secure=True``). A
        :class:`numpy.random.Generator`: reproducible bits, ``secure=False`` (fine for
        tests and experiments, **not** for publication).

    Returns
    -------
    source : BitSource
    secure : bool
    """
    if rng is None:
        return _OS_SOURCE, True
    if isinstance(rng, BitSource):
        return rng, rng.secure
    if isinstance(rng, np.random.Generator):
        return _GeneratorSource(rng), False
    raise InvalidParameterError("rng", rng, "None (secure OS entropy) or a numpy.random.Generator")


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


def _dyadic(value: float, name: str) -> tuple[int, int]:
    """A positive finite float as the exact ratio ``num / den`` (``den`` a power of 2)."""
    num, den = float(value).as_integer_ratio()
    if num > _LIMIT or den > _LIMIT:
        raise InvalidParameterError(
            name, value, "a float whose exact ratio num/2**j has num, 2**j <= 2**62 "
            "(roughly 2**-9 <= value <= 2**62 for arbitrary mantissas)")
    return num, den


# ---------------------------------------------------------------------------------------
# Exact Bernoulli samplers
# ---------------------------------------------------------------------------------------


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
    out = np.empty(n, dtype=bool)
    idx = np.arange(n)
    k = 1
    while idx.size:
        if c * k == 1:
            a = np.ones(idx.size, dtype=bool)
        else:
            a = src.uniform_below(c * k, idx.size) == 0
        sub = np.flatnonzero(a)
        if sub.size:
            a[sub] = factors(idx[sub])
        done = ~a
        out[idx[done]] = (k % 2 == 1)
        idx = idx[a]
        k += 1
    return out


def _bern_exp_minus_one(src: BitSource, n: int) -> np.ndarray:
    """Exact Bernoulli(exp(-1)) (CKS Alg. 1 with gamma = 1)."""
    return _alg1(src, n, lambda sel: np.ones(sel.size, dtype=bool))


def _bern_exp(src: BitSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for int64 arrays num >= 0, den >= 1 (same shape)."""
    g = num // den  # integer part: AND of g draws of Bernoulli(exp(-1))  (CKS Alg. 1, l. 9-13)
    return bernoulli_exp_parts(src, g, num - g * den, den)


def bernoulli_exp_parts(src: BitSource, g: np.ndarray, r: np.ndarray,
                        den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-(g + r/den))) from the integer part ``g >= 0`` and the
    fraction ``0 <= r < den`` (int64 arrays of one shape), so that ``g * den + r`` need
    not fit in int64. The cost grows with ``g`` only while draws succeed (expected
    ``< 1.6`` rounds), so a huge ``g`` is cheap."""
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
    :math:`\lfloor\gamma\rfloor` draws with :math:`\gamma = 1` and one with the fractional
    part. Only integer comparisons are used, so the output is exactly distributed.

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


# ---------------------------------------------------------------------------------------
# Geometric, discrete Laplace, discrete Gaussian
# ---------------------------------------------------------------------------------------


def _geometric_e1(src: BitSource, n: int) -> np.ndarray:
    """V with P[V = v] = (1 - e^-1) e^-v: successes of Bernoulli(e^-1) before a failure."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        ok = _bern_exp_minus_one(src, idx.size)
        idx = idx[ok]
        v[idx] += 1
    return v


def _geometric_core(src: BitSource, t: np.ndarray) -> np.ndarray:
    r"""X >= 0 with P[X = x] proportional to exp(-x / t), integer t >= 1 per element.

    CKS Algorithm 2, lines 2-8: U uniform on {0..t-1} kept with probability exp(-U/t)
    (a truncated geometric), V ~ Geometric(1 - e^-1), X = U + t V.
    """
    n = t.size
    out = np.empty(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        tt = t[idx]
        u = src.uniform_below(tt)
        keep = _alg1(src, idx.size, lambda s, u=u, tt=tt: _bern_ratio(src, u[s], tt[s]))
        acc = idx[keep]
        u, tt = u[keep], tt[keep]
        v = _geometric_e1(src, acc.size)
        if np.any(v > (_LIMIT - u) // tt):  # probability < exp(-2**9): never in practice
            raise ConvergenceError("integer overflow guard hit in the geometric sampler "
                                   "(a probability below exp(-512) event); retry")
        out[acc] = u + tt * v
        idx = idx[~keep]
    return out


def _broadcast_scale(scale: object, name: str, n_shape: tuple[int, ...] | None
                     ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Exact (num, den) arrays for a positive scale (scalar or array)."""
    if np.ndim(scale) == 0:
        s = check_positive(scale, name)
        num, den = _dyadic(s, name)
        return np.array([num], dtype=np.int64), np.array([den], dtype=np.int64), ()
    arr = check_finite_array(scale, name)
    if np.any(arr <= 0):
        raise InvalidParameterError(name, arr[arr <= 0].flat[0], "every entry > 0")
    pairs = [_dyadic(float(x), name) for x in arr.ravel()]
    num = np.array([p[0] for p in pairs], dtype=np.int64)
    den = np.array([p[1] for p in pairs], dtype=np.int64)
    return num, den, arr.shape


def _expand(num: np.ndarray, den: np.ndarray, sshape: tuple[int, ...],
            size: int | tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray, tuple]:
    if sshape == ():
        shape, n = _size(size)
        return np.repeat(num, n), np.repeat(den, n), shape
    if size is not None:
        shape, _ = _size(size)
        if tuple(shape) != tuple(sshape):
            raise InvalidParameterError("size", size, f"None or the shape of scale {sshape}")
    return num, den, sshape


def geometric(scale: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
              rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact geometric integers :math:`P[X=x] = (1-e^{-1/b})\,e^{-x/b}`, ``x = 0, 1, ...``.

    With ``scale`` :math:`b = t/s` (the float's exact ratio), CKS Algorithm 2 draws
    :math:`X'` with ratio :math:`e^{-1/t}` and returns :math:`\lfloor X'/s\rfloor`, whose
    ratio is :math:`e^{-s/t} = e^{-1/b}`. Exact.

    Parameters
    ----------
    scale : float or array
        :math:`b > 0`; an array gives one draw per entry.
    size : int or tuple, optional
    rng : numpy.random.Generator, optional

    Returns
    -------
    int64 array (or int)
    """
    src, _ = resolve_rng(rng)
    num, den, sshape = _broadcast_scale(scale, "scale", None)
    num, den, shape = _expand(num, den, sshape, size)
    return _shape_out(_geometric_core(src, num) // den, shape)


def _dlap_core(src: BitSource, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """CKS Algorithm 2: discrete Laplace with scale t/s (int64 arrays, one per draw)."""
    n = t.size
    out = np.empty(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        y = _geometric_core(src, t[idx]) // s[idx]  # Alg. 2 line 9
        b = src.coins(idx.size)  # line 10
        bad = b & (y == 0)  # line 11: reject (B = 1, Y = 0) so 0 is not counted twice
        val = np.where(b, -y, y)
        out[idx[~bad]] = val[~bad]
        idx = idx[bad]
    return out


def discrete_laplace(scale: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
                     rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact discrete Laplace integers :math:`P[X=x]\propto e^{-|x|/b}`, :math:`x\in\mathbb{Z}`.

    CKS Algorithm 2 with the float ``scale`` read as its exact ratio ``t/s``.

    .. math:: P[X = x] = \frac{e^{1/b} - 1}{e^{1/b} + 1}\, e^{-|x|/b}

    Parameters
    ----------
    scale : float or array
        :math:`b > 0` (the float's exact value; arrays give one draw per entry).
    size : int or tuple, optional
        Output shape for a scalar ``scale``; None returns a Python int.
    rng : numpy.random.Generator, optional
        None for OS entropy (see :func:`resolve_rng`).

    Returns
    -------
    int64 array of shape ``size`` (or the shape of ``scale``), or an int
    """
    src, _ = resolve_rng(rng)
    num, den, sshape = _broadcast_scale(scale, "scale", None)
    num, den, shape = _expand(num, den, sshape, size)
    return _shape_out(_dlap_core(src, num, den), shape)


def _dgauss_core(src: BitSource, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""CKS Algorithm 3 for sigma = a/b (int64 arrays), with Laplace scale t = sigma.

    CKS accept a discrete Laplace draw Y of scale t with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)); any t > 0 is correct, and t = sigma (instead
    of floor(sigma)+1) makes the exponent x^2/2 with x = |Y|/sigma - 1. Writing
    |Y| b = m a + rho (0 <= rho < a): x = (m - 1) + rho/a. With M = |x|'s integer part
    and f = its fraction (M = m-1, f = rho/a if m >= 1; M = 0, f = (a-rho)/a if m = 0),
    exp(-x^2/2) = exp(-M^2/2) * exp(-f)^M * exp(-f^2/2): three independent exact
    Bernoulli draws, all on int64.
    """
    n = a.size
    out = np.empty(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        aa, bb = a[idx], b[idx]
        y = _dlap_core(src, aa, bb)  # Alg. 3 line 3
        ay = np.abs(y)
        if np.any(ay > _LIMIT // bb):
            raise ConvergenceError("integer overflow guard hit in the discrete Gaussian "
                                   "sampler (a vanishing-probability event); retry")
        yb = ay * bb
        m = yb // aa
        rho = yb - m * aa
        big_m = np.where(m >= 1, m - 1, 0)
        f_num = np.where(m >= 1, rho, aa - rho)
        # exp(-M^2/2)
        ok = _bern_exp(src, big_m * big_m, np.full(idx.size, 2, dtype=np.int64))
        # exp(-f)^M: M independent draws of Bernoulli(exp(-f)), stop at the first failure
        sel = np.flatnonzero(ok & (big_m > 0))
        rem = big_m[sel]
        while sel.size:
            fs, as_ = f_num[sel], aa[sel]
            got = _alg1(src, sel.size, lambda s, fs=fs, as_=as_: _bern_ratio(src, fs[s], as_[s]))
            ok[sel[~got]] = False
            rem = rem[got] - 1
            sel = sel[got]
            keep = rem > 0
            sel, rem = sel[keep], rem[keep]
        # exp(-f^2/2): gamma/K = f * f * 1/(2K)
        sel = np.flatnonzero(ok)
        if sel.size:
            fs, as_ = f_num[sel], aa[sel]

            def ff(s: np.ndarray, fs: np.ndarray = fs, as_: np.ndarray = as_) -> np.ndarray:
                r = _bern_ratio(src, fs[s], as_[s])
                j = np.flatnonzero(r)
                if j.size:
                    r[j] = _bern_ratio(src, fs[s[j]], as_[s[j]])
                return r

            ok[sel] = _alg1(src, sel.size, ff, c=2)
        out[idx[ok]] = y[ok]
        idx = idx[~ok]
    return out


def discrete_gaussian(sigma: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
                      rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact discrete Gaussian integers :math:`P[X=x]\propto e^{-x^2/(2\sigma^2)}`.

    CKS Algorithm 3 (rejection from the discrete Laplace) with exact integer arithmetic
    for the float ``sigma`` read as its exact ratio ``a/b``; see :func:`_dgauss_core`.
    Its variance is slightly below :math:`\sigma^2` (CKS Prop. 19; equal to it up to
    :math:`10^{-6}` relative once :math:`\sigma \geq 2`).

    Parameters
    ----------
    sigma : float or array
        :math:`\sigma > 0`.
    size : int or tuple, optional
    rng : numpy.random.Generator, optional

    Returns
    -------
    int64 array (or int)
    """
    src, _ = resolve_rng(rng)
    num, den, sshape = _broadcast_scale(sigma, "sigma", None)
    if np.any(num > 2**53):
        raise InvalidParameterError("sigma", sigma, "at most 2**53")
    num, den, shape = _expand(num, den, sshape, size)
    return _shape_out(_dgauss_core(src, num, den), shape)


def polya(r: float, p: float, size: int | tuple[int, ...] | None = None, *,
          rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Polya (negative binomial with real shape ``r``) integers.

    .. math:: P[X = x] = \frac{\Gamma(x + r)}{x!\,\Gamma(r)}\,(1-p)^r p^x,
              \qquad x = 0, 1, \dots

    The sum of ``n`` independent ``Polya(1/n, p)`` is ``Geometric`` with ratio ``p``
    (negative binomial with shape 1), so the per-user differences
    ``Polya(1/n, e^{-1/b}) - Polya(1/n, e^{-1/b})`` sum to a discrete Laplace with scale
    ``b``: the distributed noise of shuffle-model protocols (Ghazi et al., App. F).

    **Exactness**: sampled as a Gamma-Poisson mixture
    (:math:`\lambda\sim\Gamma(r, p/(1-p))`, :math:`X\sim\mathrm{Poisson}(\lambda)`) with
    numpy's floating-point samplers; with ``rng=None`` the generator is a PCG64DXSM
    seeded from 256 bits of OS entropy per call (CSPRNG-seeded, not a CSPRNG stream).
    Use it where each share is one of many summed before release; a single-share
    release must use :func:`discrete_laplace`.

    Parameters
    ----------
    r : float
        Shape, ``> 0``.
    p : float
        Ratio, in ``(0, 1)``.
    size : int or tuple, optional
    rng : numpy.random.Generator, optional
    """
    r = check_positive(r, "r")
    p = check_positive(p, "p")
    if p >= 1:
        raise InvalidParameterError("p", p, "a number in (0, 1)")
    shape, n = _size(size)
    if rng is None:
        gen = np.random.Generator(np.random.PCG64DXSM(int.from_bytes(os.urandom(32), "little")))
    elif isinstance(rng, np.random.Generator):
        gen = rng
    else:
        raise InvalidParameterError("rng", rng, "None or a numpy.random.Generator")
    lam = gen.gamma(r, p / (1.0 - p), size=n)
    x = gen.poisson(lam).astype(np.int64)
    return _shape_out(x, shape)


# ---------------------------------------------------------------------------------------
# Float-safe real releases on a 2**-k grid
# ---------------------------------------------------------------------------------------


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


def polya_laplace_shares(n_parties: int, scale: float, size: int | tuple[int, ...] | None = None,
                         *, rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Per-party integer noise shares whose sum is a discrete Laplace of scale ``b``.

    Party ``j`` draws :math:`Z_j = P_j - P'_j` with
    :math:`P_j, P'_j \sim \mathrm{Polya}(1/n, e^{-1/b})` independent. A sum of ``n``
    independent :math:`\mathrm{Polya}(1/n, p)` is :math:`\mathrm{NB}(1, p)`, the
    geometric with ratio ``p``; the difference of two independent geometrics with ratio
    :math:`e^{-1/b}` is :math:`\mathcal{L}_\mathbb{Z}(b)`. So
    :math:`\sum_j Z_j \sim \mathcal{L}_\mathbb{Z}(b)` exactly in distribution
    (Ghazi et al., Differentially Private Heatmaps, App. F; Balle et al. 2020). Used by
    shuffle-model protocols where each user adds a share of the central noise.

    Parameters
    ----------
    n_parties : int
        Number of parties ``n >= 1``.
    scale : float
        ``b > 0``, the scale of the *summed* discrete Laplace.
    size : int or tuple, optional
        Shape of each party's share (one draw per coordinate).
    rng : numpy.random.Generator, optional
        See :func:`polya` for the randomness (CSPRNG-seeded, floating-point).

    Returns
    -------
    int64 array of shape ``(n_parties, *size)``
    """
    n = check_int(n_parties, "n_parties", minimum=1)
    b = check_positive(scale, "scale")
    shape, _ = _size(size)
    p = math.exp(-1.0 / b)
    full = (n, *shape)
    return (polya(1.0 / n, p, size=full, rng=rng)
            - polya(1.0 / n, p, size=full, rng=rng)).astype(np.int64)


def _grid_release(values: object, k: int | None, scale_for_k: float,
                  noise: Callable[[int], np.ndarray]) -> np.ndarray:
    x = check_finite_array(values, "values", allow_empty=True)
    if k is None:
        k = grid_exponent(scale_for_k)
    k = check_int(k, "grid_exponent", minimum=-1000, maximum=1000)
    n = round_to_grid(x.ravel(), k)
    z = n + noise(n.size)
    return np.ldexp(z.astype(np.float64), -k).reshape(x.shape)


def _grid_scales(scale: object, name: str, shape: tuple[int, ...], k: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (num, den) of scale * 2**k for every entry of ``shape``."""
    if np.ndim(scale) == 0:
        num, den = _dyadic(math.ldexp(check_positive(scale, name), k), name + " * 2**k")
        size = int(np.prod(shape, dtype=np.int64))
        return np.full(size, num, dtype=np.int64), np.full(size, den, dtype=np.int64)
    arr = check_finite_array(scale, name)
    if np.any(arr <= 0):
        raise InvalidParameterError(name, arr[arr <= 0].flat[0], "every entry > 0")
    arr = np.broadcast_to(arr, shape).ravel()
    pairs = [_dyadic(math.ldexp(float(v), k), name + " * 2**k") for v in arr]
    return (np.array([q[0] for q in pairs], dtype=np.int64),
            np.array([q[1] for q in pairs], dtype=np.int64))


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
    smin = float(np.min(scale)) if np.ndim(scale) else scale
    k = grid_exponent if grid_exponent is not None else _default_k(smin, "scale")

    def noise(n: int) -> np.ndarray:
        t, s = _grid_scales(scale, "scale", shape, k)
        return _dlap_core(src, t, s)

    return _grid_release(values, k, smin, noise)


def secure_gaussian(values: float | np.ndarray, sigma: float | np.ndarray, *,
                    rng: np.random.Generator | None = None,
                    grid_exponent: int | None = None) -> np.ndarray:
    r"""Values plus Gaussian noise, on a :math:`2^{-k}` grid (float-attack safe).

    .. math:: \tilde x = 2^{-k}\bigl(\mathrm{round}(2^k x) + N\bigr),\qquad
              N\sim\mathcal{N}_\mathbb{Z}(0, (\sigma 2^k)^2)

    with the exact discrete Gaussian of CKS. See :func:`secure_laplace` for the grid.

    Privacy
    -------
    A sampler; calibration in :func:`privot.privacy.mechanisms.gaussian_mechanism`, see
    ``docs/privacy/gaussian.md``.
    """
    src, _ = resolve_rng(rng)
    shape = np.shape(values)
    smin = float(np.min(sigma)) if np.ndim(sigma) else sigma
    k = grid_exponent if grid_exponent is not None else _default_k(smin, "sigma")

    def noise(n: int) -> np.ndarray:
        a, b = _grid_scales(sigma, "sigma", shape, k)
        if np.any(a > 2**53):
            raise InvalidParameterError("sigma", sigma, "sigma * 2**k at most 2**53")
        return _dgauss_core(src, a, b)

    return _grid_release(values, k, smin, noise)


def _default_k(scale: object, name: str) -> int:
    return grid_exponent(check_positive(scale, name))

