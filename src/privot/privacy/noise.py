r"""Secure noise samplers: the only place randomness for privacy comes from.

Everything here samples **exactly** on the integers from uniformly random bits, with
integer comparisons only (no floating-point ``log`` or ``exp`` of random numbers), in
the style of Canonne, Kamath and Steinke (2020), *The Discrete Gaussian for
Differential Privacy* (CKS below), vectorised with numpy:

* :func:`uniform_integers` -- uniform on ``{0, ..., high-1}`` by rejection from
  random words (exact).
* :func:`bernoulli_exp` -- ``Bernoulli(exp(-gamma))`` for rational ``gamma`` (CKS
  Algorithm 1, exact).
* :func:`geometric`, :func:`discrete_laplace` -- exact for every float ``scale`` (a
  float is the exact rational ``num / 2**j``): inversion of a table of certified
  thresholds plus CKS-style rejection for the low bits (see below).
* :func:`discrete_gaussian` -- exact for every float ``sigma``: table inversion for
  ``sigma < 32``, else rejection from a piecewise-uniform envelope with an exact
  CKS-Algorithm-1 acceptance test (CKS Algorithm 3 element by element for many
  distinct sigmas).
* :func:`secure_laplace`, :func:`secure_gaussian` -- real-valued releases safe against
  the floating-point attack of Mironov (2012): the values are rounded to the grid
  :math:`2^{-k}\mathbb{Z}` and *integer* noise is added on that grid.
* :func:`polya` -- negative binomial with real shape (Gamma-Poisson mixture); **not**
  exact (floating point), see its docstring.

How the fast samplers stay exact
--------------------------------
A uniform real :math:`W\in[0,1)` is read lazily: its first ``B = 16`` bits ``w``
decide ``W < c`` for a constant ``c`` whenever ``w != floor(2**B c)``; in the rare
tie (probability ``2**-16``) more bits of the *same* ``W`` are drawn and compared
with certified bounds on ``c`` computed in exact integer arithmetic
(:func:`_exp_neg`, a Taylor series with a rigorous error term), until the comparison
is decided. The constants are ``exp(-rational)`` or rationals; no random number ever
goes through a floating-point function. So

* a geometric (ratio ``q = exp(-1/b)``) is sampled by **inversion**,
  ``V = #{v >= 1 : W < q**v}``, with a 65536-entry lookup table from ``w`` to
  ``V`` (plus a tie flag) when ``b < 128``;
* for ``b >= 128`` the geometric is split exactly as ``Y = 2**j Z + U`` with
  ``2**j ~ b / 64``: ``Z`` is a geometric of ratio ``exp(-2**j / b)`` (table
  inversion) and ``U`` the truncated geometric on ``[0, 2**j)``, drawn as ``j``
  uniform bits accepted with probability ``exp(-U/b)`` by CKS Algorithm 1, whose
  Bernoulli factors are a constant (compared lazily) and ``U / 2**j`` (compared with
  ``j`` fresh bits). ``Z`` and ``U`` are independent because the blocks of bits of a
  geometric are;
* the discrete Laplace is a two-sided table for ``b < 128`` and
  ``sign * geometric`` with CKS's rejection of ``-0`` above;
* the discrete Gaussian (``sigma >= 32``) draws a bucket ``I`` of width ``D`` about
  ``sigma/16..sigma/32`` with probability proportional to the Gaussian weight ``p_I``
  at its inner edge (table inversion), a uniform offset in the bucket, and accepts
  with probability ``p(x)/p_I = exp(-delta)``, ``delta`` the product of three numbers
  in [0, 1] each drawn as an exact Bernoulli (about 97% accepted); for
  ``sigma < 32``, ``|X|`` is a table inversion with no rejection.

The derivations, the exactness arguments and the timings are in
``docs/privacy/discrete.md``.

Randomness
----------
Every sampler takes ``rng``. ``None`` (the default) reads the operating system's
CSPRNG (:func:`os.urandom`) through a process-local buffer refilled in large chunks;
the buffer is discarded in a forked child so parent and child never share bits. A
seeded :class:`numpy.random.Generator` is accepted for tests and reproducible
experiments; :func:`resolve_rng` then reports ``secure=False`` and mechanisms record
it in their :class:`~privot.privacy.types.Release`.

The rule for the grid exponent ``k`` is in ``docs/privacy/discrete.md``,
``docs/privacy/laplace.md`` and ``docs/privacy/gaussian.md``.
"""

from __future__ import annotations

import functools
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

#: Bits of a uniform compared with a constant's threshold before the (rare) exact
#: continuation; a lookup table has ``2**_LAZY_BITS`` entries. Any value in [1, 32]
#: gives the same distributions (the tests lower it to exercise the tie paths).
_LAZY_BITS = 16
#: Geometric scales ``b >= 2**_TABLE_LOG2`` are split as ``2**j Z + U`` (see module doc).
_TABLE_LOG2 = 7
#: Distinct scales sampled group by group (with cached tables) before falling back to
#: the per-element CKS samplers.
_MAX_GROUPS = 64


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
        return np.unpackbits(w.view(np.uint8))[:n].view(bool)

    def bits(self, n: int, width: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, 2**width)`` as ``int64``
        (``1 <= width <= 63``), cut from words without waste for widths 8, 16, 32."""
        for lane, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if width <= lane:
                raw = self.words((n * lane + 63) // 64).view(dt)[:n]
                if width < lane:
                    raw = raw >> dt(lane - width)
                return raw.astype(np.int64)
        return (self.words(n) >> np.uint64(64 - width)).astype(np.int64)

    def _lanes(self, n: int, width: int) -> np.ndarray:
        """Like :meth:`bits` but, for widths 8, 16, 32 and 64, the unsigned view itself
        (no copy): cheap table indices and bit fields."""
        for lane, dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if width == lane:
                return self.words((n * lane + 63) // 64).view(dt)[:n]
        if width == 64:
            return self.words(n)
        return self.bits(n, width)

    def uniform_below(self, high: np.ndarray | int, n: int | None = None) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (elementwise), as ``int64``.

        ``high`` is an int64 array (or a scalar with ``n`` draws), every entry in
        ``[1, 2**62]``. Rejection sampling from ``w``-bit words (w = 16, 32 or 63, the
        smallest that holds ``high``): a word ``r`` is kept when
        ``r < 2**w - (2**w mod high)``, so ``r mod high`` is exactly uniform. A power
        of two needs no rejection.
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
            top = np.int64(2**32) - (np.int64(2**32) % h) - 1
        else:  # accept r <= 2**63 - 1 - (2**63 mod h), written without overflow
            top = _I63 - ((_I63 % h) + 1) % h
        sel = np.arange(size)
        while sel.size:
            r = self._draw(sel.size, hi)
            ok = r <= top[sel]
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
        if h & (h - 1) == 0:  # a power of two: plain bits, no rejection
            return self.bits(n, h.bit_length() - 1)
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
# Exact arithmetic on constants (Python integers; never applied to random numbers)
# ---------------------------------------------------------------------------------------


def _exp_neg(num: int, den: int, prec: int) -> tuple[int, int]:
    r"""Certified bounds ``lo <= 2**prec * exp(-num/den) <= hi`` (Python integers).

    ``num >= 0``, ``den >= 1``. With ``n = ceil(num/den)`` and ``x = num/(n den)`` in
    (0, 1], the Taylor series :math:`\sum_k (-x)^k/k!` is summed in fixed point with
    ``g`` guard bits: each computed term is within 2 units of the true one (floor
    division, ``x <= 1``) and the alternating tail after the first zero term is below 2
    units, so ``|sum - e^{-x} 2^g| <= 2K + 4`` for ``K`` terms. The ``n``-th power is
    taken by repeated squaring rounding the lower bound down and the upper bound up,
    which keeps the bounds valid; the guard bits keep them tight (width <= 2 units at
    ``prec``).
    """
    if num == 0:
        one = 1 << prec
        return one, one
    n = -(-num // den)
    g = prec + 2 * n.bit_length() + 24
    one = 1 << g
    d = den * n
    s = term = one
    k = 0
    while term:
        k += 1
        term = term * num // (d * k)
        s = s - term if k & 1 else s + term
    err = 2 * k + 4
    lo, hi = max(s - err, 0), min(s + err, one)
    if n > 1:
        rl = rh = one
        while True:
            if n & 1:
                rl = (rl * lo) >> g
                rh = -((-rh * hi) >> g)
            n >>= 1
            if not n:
                break
            lo = (lo * lo) >> g
            hi = -((-hi * hi) >> g)
        lo, hi = rl, rh
    sh = g - prec
    return lo >> sh, -((-hi) >> sh)


def _ratio_bounds(num: int, den: int, prec: int) -> tuple[int, int]:
    """Exact ``floor`` and ``ceil`` of ``2**prec * num / den``."""
    q, r = divmod(num << prec, den)
    return q, q + (1 if r else 0)


def _exact_floor(bounds: Callable[[int], tuple[int, int]], width: int) -> int:
    """``floor(2**width * c)`` for a constant ``c`` given by certified bounds."""
    prec = width + 128
    while prec <= 1 << 16:
        lo, hi = bounds(prec)
        sh = prec - width
        if lo >> sh == hi >> sh:
            return lo >> sh
        prec *= 2
    raise ConvergenceError("a threshold could not be certified (a constant within "
                           "2**-65000 of a dyadic rational); please report this")


class _LazyUniform:
    """A uniform real ``W`` in [0, 1) whose binary expansion is drawn on demand.

    Used only on the rare slow paths: ``W`` starts from the ``nbits``-bit prefix already
    drawn (and compared) by a vectorised fast path, and :meth:`less` decides ``W < c``
    exactly for a constant ``c`` known through certified bounds, drawing 64 more bits
    of the *same* ``W`` whenever the bounds do not decide. Terminates with probability
    one (a uniform real equals no constant).
    """

    __slots__ = ("src", "value", "nbits")

    def __init__(self, src: BitSource, value: int = 0, nbits: int = 0) -> None:
        self.src, self.value, self.nbits = src, int(value), int(nbits)

    def less(self, bounds: Callable[[int], tuple[int, int]]) -> bool:
        while True:
            prec = self.nbits + 8
            lo, hi = bounds(prec)
            w = self.value << 8  # W in [w, w + 256) / 2**prec
            if w + 256 <= lo:
                return True
            if w >= hi:
                return False
            self.value = (self.value << 64) | int(self.src.words(1)[0])
            self.nbits += 64


def _floor_log2_ratio(t: int, s: int) -> int:
    """``floor(log2(t / s))`` for positive integers, exactly."""
    e = t.bit_length() - s.bit_length()
    if (s << e if e >= 0 else s) > (t if e >= 0 else t << -e):
        e -= 1
    return e


# ---------------------------------------------------------------------------------------
# Lazy Bernoulli draws against constants
# ---------------------------------------------------------------------------------------


def _bern_const(src: BitSource, n: int, c: tuple[int, int] | Callable[[int], tuple[int, int]],
                thr: int | None = None) -> np.ndarray:
    """``n`` exact ``Bernoulli(c)`` draws for a constant ``c`` in [0, 1].

    ``c`` is a rational ``(num, den)`` or a function ``prec -> (lo, hi)`` of certified
    bounds. ``B`` uniform bits ``w`` are compared with ``floor(2**B c)``; a tie is
    finished by :class:`_LazyUniform` on the same uniform.
    """
    bnd = (lambda p, c=c: _ratio_bounds(c[0], c[1], p)) if isinstance(c, tuple) else c
    width = _LAZY_BITS
    if thr is None:
        thr = _exact_floor(bnd, width)
    w = src.bits(n, width)
    out = w < thr
    for q in np.flatnonzero(w == thr):
        out[q] = _LazyUniform(src, int(w[q]), width).less(bnd)
    return out


@functools.lru_cache(maxsize=8)
def _e1_threshold(width: int) -> int:
    return _exact_floor(lambda p: _exp_neg(1, 1, p), width)


def _bern_exp_minus_one(src: BitSource, n: int) -> np.ndarray:
    """Exact Bernoulli(exp(-1)): lazy comparison with the certified constant."""
    return _bern_const(src, n, lambda p: _exp_neg(1, 1, p), _e1_threshold(_LAZY_BITS))


# ---------------------------------------------------------------------------------------
# Inversion tables
# ---------------------------------------------------------------------------------------


class _Table:
    """Exact inversion ``V = #{v >= 1 : W < c_v}`` for constants ``1 >= c_1 >= c_2 ...``.

    Two levels of certified thresholds, each ending with its first 0:
    ``coarse[v-1] = floor(2**B c_v)`` and ``fine[v-1] = floor(2**62 c_v)``. A lookup
    table maps each ``B``-bit prefix ``w`` of ``W`` to ``2 V + tie``: ``V`` is exact
    unless ``w`` equals the coarse threshold of the first undecided ``v`` (probability
    about ``len(coarse) / 2**B``). Those ties draw ``62 - B`` more bits of the same
    ``W`` and count the fine thresholds above the 62-bit prefix (a vectorised binary
    search); a second tie (probability about ``2**-50``) is finished by
    :class:`_LazyUniform` with ``bounds(v, prec)``.
    """

    FINE = 62

    def __init__(self, coarse: list[int], fine: list[int],
                 bounds: Callable[[int, int], tuple[int, int]], width: int) -> None:
        t = np.asarray(coarse, dtype=np.int64)
        w = np.arange(1 << width, dtype=np.int64)
        count = np.searchsorted(-t, -w, side="left")  # #{v : t_v > w}; t ends with 0
        tie = t[count] == w
        self.lut = (2 * count + tie).astype(np.int64)
        self.neg_fine = -np.asarray(fine, dtype=np.int64)  # ascending
        self.bounds = bounds
        self.width = width

    def sample(self, src: BitSource, n: int) -> np.ndarray:
        w = src._lanes(n, self.width)
        code = self.lut[w]
        out = code >> 1
        ties = np.flatnonzero(code & 1)
        if ties.size:
            extra = self.FINE - self.width
            wf = (w[ties].astype(np.int64) << extra) | src.bits(ties.size, extra)
            cnt = np.searchsorted(self.neg_fine, -wf, side="left")
            out[ties] = cnt
            again = np.flatnonzero(self.neg_fine[cnt] == -wf)
            for q in again:
                out[ties[q]] = self._finish(src, int(wf[q]), int(cnt[q]))
        return out

    def _finish(self, src: BitSource, w: int, count: int) -> int:
        u = _LazyUniform(src, w, self.FINE)
        while u.less(lambda p, v=count + 1: self.bounds(v, p)):
            count += 1
        return count


def _iterate_thresholds(first: tuple[int, int], step: Callable[[int, int, int],
                        tuple[int, int]], bounds: Callable[[int, int], tuple[int, int]],
                        prec: int, width: int, limit: int = 1 << 20) -> list[int]:
    """Thresholds ``floor(2**width c_v)``, ``v = 1, 2, ...`` until the first 0.

    ``first`` are bounds on ``2**prec c_1``; ``step(v, lo, hi)`` maps bounds on
    ``c_v`` to bounds on ``c_{v+1}`` (directed rounding). A threshold whose bounds
    straddle an integer is recomputed with :func:`_exact_floor`.
    """
    lo, hi = first
    out = []
    sh = prec - width
    v = 1
    while True:
        t = lo >> sh
        if t != hi >> sh:
            t = _exact_floor(lambda p, v=v: bounds(v, p), width)
        out.append(t)
        if t == 0:
            return out
        if v >= limit:
            raise ConvergenceError("inversion table too long")  # unreachable by design
        lo, hi = step(v, lo, hi)
        v += 1


def _mul_bounds(lo: int, hi: int, flo: int, fhi: int, prec: int) -> tuple[int, int]:
    return (lo * flo) >> prec, -((-hi * fhi) >> prec)


@functools.lru_cache(maxsize=64)
def _geometric_table(rn: int, rd: int, width: int) -> _Table:
    """Table for ``V`` with ``P[V >= v] = exp(-rho v)``, ``rho = rn/rd > 0``."""

    def bounds(v: int, p: int) -> tuple[int, int]:
        return _exp_neg(rn * v, rd, p)

    def thresholds(bits: int) -> list[int]:
        prec = bits + 64
        qlo, qhi = _exp_neg(rn, rd, prec)
        return _iterate_thresholds(
            (qlo, qhi), lambda v, lo, hi: _mul_bounds(lo, hi, qlo, qhi, prec),
            bounds, prec, bits)

    return _Table(thresholds(width), thresholds(_Table.FINE), bounds, width)


@functools.lru_cache(maxsize=64)
def _abs_dlap_table(t: int, s: int, width: int) -> _Table:
    """Table for ``|X|``, ``X`` discrete Laplace of scale ``b = t/s``:
    ``P[|X| >= v] = 2 q**v / (1 + q)`` for ``v >= 1``, ``q = exp(-s/t)``."""

    def to_c(lo: int, hi: int, p: int, ql: int, qh: int) -> tuple[int, int]:
        # 2 q^v / (1 + q): numerator bounds over denominator bounds (all positive)
        return (2 * lo << p) // ((1 << p) + qh), -((-(2 * hi << p)) // ((1 << p) + ql))

    def bounds(v: int, p: int) -> tuple[int, int]:
        pp = p + 8
        ql, qh = _exp_neg(s, t, pp)
        lo, hi = to_c(*_exp_neg(s * v, t, pp), pp, ql, qh)
        return lo >> 8, -((-hi) >> 8)

    def thresholds(bits: int) -> list[int]:
        prec = bits + 64
        qlo, qhi = _exp_neg(s, t, prec)
        state = [qlo, qhi]  # bounds on q**v

        def step(v: int, lo: int, hi: int) -> tuple[int, int]:
            state[0], state[1] = _mul_bounds(state[0], state[1], qlo, qhi, prec)
            return to_c(state[0], state[1], prec, qlo, qhi)

        return _iterate_thresholds(to_c(qlo, qhi, prec, qlo, qhi), step, bounds, prec, bits)

    return _Table(thresholds(width), thresholds(_Table.FINE), bounds, width)


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
    comparison with the certified constant ``exp(-1)`` (exact, see the module doc)."""
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


# ---------------------------------------------------------------------------------------
# Geometric, discrete Laplace, discrete Gaussian: one scale (fast, table based)
# ---------------------------------------------------------------------------------------


def _trunc_geometric_bits(src: BitSource, n: int, j: int, rn: int, rd: int) -> np.ndarray:
    r"""``U`` on ``[0, 2**j)`` with ``P[U = u]`` proportional to ``exp(-rho u / 2**j)``,
    ``rho = rn/rd`` in (0, 1].

    Proposal: ``j`` uniform bits; accepted with probability
    :math:`e^{-\rho \bar U}`, :math:`\bar U = U 2^{-j}`, by CKS Algorithm 1 whose factor
    :math:`\mathrm{Bernoulli}(\rho\bar U / k)` is the AND of the independent
    :math:`\mathrm{Bernoulli}(\rho/k)` (a lazy comparison with a rational constant) and
    :math:`\mathrm{Bernoulli}(\bar U)` (``j`` fresh bits ``< U``, exact). The first
    round reuses the proposal word: its top ``j`` bits are ``U`` and its low bits the
    prefix compared with ``rho`` (disjoint bits, so independent).
    """
    width = _LAZY_BITS
    lane = 32 if 32 - j >= width else 64  # one lane holds U and the rho prefix
    rw = min(lane - j, 4 * width)  # bits of the uniform compared with rho in round 1
    packed = rw >= width
    if not packed:
        rw = width
    thr1 = (rn << rw) // rd
    dt = np.uint32 if lane == 32 else np.uint64
    low = dt((1 << rw) - 1)

    def rounds_tail(us: np.ndarray) -> Callable[[int, np.ndarray], np.ndarray]:
        def rounds(k: int, idx: np.ndarray) -> np.ndarray:
            if k == 1:
                return np.ones(idx.size, dtype=bool)  # round 1 already succeeded
            r = _bern_const(src, idx.size, (rn, rd * k))
            sub = np.flatnonzero(r)
            if sub.size:
                r[sub] = src.bits(sub.size, j) < us[idx[sub]]
            return r
        return rounds

    def propose(m: int) -> tuple[np.ndarray, np.ndarray]:
        if packed:
            w = src._lanes(m, lane)
            u = (w >> dt(lane - j)).astype(np.int64)
            c = w & low
        else:
            u, c = src.bits(m, j), src.bits(m, rw)
        # round 1: A_1 = Bernoulli(rho) AND Bernoulli(U / 2**j); K = 1 (A_1 = 0) accepts
        a = c < thr1
        for q in np.flatnonzero(c == thr1):
            a[q] = _LazyUniform(src, int(c[q]), rw).less(lambda p: _ratio_bounds(rn, rd, p))
        s1 = np.flatnonzero(a)
        if s1.size:
            a[s1] = src.bits(s1.size, j) < u[s1]
        accept = ~a
        s1 = np.flatnonzero(a)
        if s1.size:  # K >= 2: continue Algorithm 1 from round 2 on these few
            accept[s1] = _alg1_rounds(s1.size, rounds_tail(u[s1]))
        return u, accept

    out, accept = propose(n)
    rej = np.flatnonzero(~accept)
    while rej.size:
        u, accept = propose(rej.size)
        out[rej[accept]] = u[accept]
        rej = rej[~accept]
    return out


def _geom_scalar(src: BitSource, t: int, s: int, n: int) -> np.ndarray:
    r"""``n`` geometric draws with ``P[Y = y]`` proportional to ``exp(-y s / t)``.

    ``b = t/s < 2**7``: table inversion with ratio ``exp(-1/b)``. Otherwise
    ``Y = 2**j Z + U`` with ``j = floor(log2 b) - 6``: ``Z`` geometric of ratio
    ``exp(-2**j/b)`` (table, ``rho = 2**j/b`` in (1/128, 1/64]) and ``U`` from
    :func:`_trunc_geometric_bits`; ``P[Y = 2**j z + u]`` is proportional to
    ``exp(-2**j z/b) exp(-u/b) = exp(-y/b)``.
    """
    if n == 0:
        return np.empty(0, dtype=np.int64)
    j = max(0, _floor_log2_ratio(t, s) - (_TABLE_LOG2 - 1))
    if j == 0:
        g = math.gcd(s, t)
        return _geometric_table(s // g, t // g, _LAZY_BITS).sample(src, n)
    rn, rd = s << j, t
    g = math.gcd(rn, rd)
    rn, rd = rn // g, rd // g
    z = _geometric_table(rn, rd, _LAZY_BITS).sample(src, n)
    if int(z.max()) >= _LIMIT >> j:
        raise ConvergenceError(
            f"a geometric draw of scale {t / s:.6g} exceeded 2**62 (probability about "
            f"exp(-2**62 / scale)); use a smaller scale or grid_exponent")
    u = _trunc_geometric_bits(src, n, j, rn, rd)
    return (z << j) | u


def _dlap_scalar(src: BitSource, t: int, s: int, n: int) -> np.ndarray:
    r"""``n`` discrete Laplace draws of scale ``b = t/s``.

    ``b < 2**7``: ``|X|`` by table inversion of ``P[|X| >= v] = 2 q^v / (1 + q)`` and an
    independent fair sign (no rejection). Otherwise CKS Algorithm 2, lines 9-11: a
    geometric ``Y``, a fair sign ``B``, and rejection of ``(B = 1, Y = 0)``.
    """
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if _floor_log2_ratio(t, s) < _TABLE_LOG2:
        g = math.gcd(s, t)
        y = _abs_dlap_table(t // g, s // g, _LAZY_BITS).sample(src, n)
        np.negative(y, out=y, where=src.coins(n))
        return y
    out = _geom_scalar(src, t, s, n)
    neg = src.coins(n)
    np.negative(out, out=out, where=neg)
    bad = np.flatnonzero(neg & (out == 0))
    while bad.size:  # CKS Alg. 2 line 11: reject (B = 1, Y = 0) and draw again
        y = _geom_scalar(src, t, s, bad.size)
        neg = src.coins(bad.size)
        np.negative(y, out=y, where=neg)
        ok = ~(neg & (y == 0))
        out[bad[ok]] = y[ok]
        bad = bad[~ok]
    return out


class _GaussTables:
    r"""Constants of the one-sigma discrete Gaussian sampler (:func:`_dgauss_scalar`).

    ``sigma = a/b``; buckets of width ``D = 2**h`` with ``h = max(0, floor(log2 sigma)
    - 4)`` (so ``D`` is in ``(sigma/32, sigma/16]``, or 1 when ``sigma < 32``);
    ``p_i = exp(-(iD)^2 / (2 sigma^2))`` is the Gaussian weight at the inner edge of
    bucket ``i``, its largest value there. The bucket index ``I`` is drawn by table
    inversion with ``P[I = i]`` proportional to ``p_i`` (to ``p_0, 2 p_1, 2 p_2, ...``
    when ``D = 1``: then ``I = |X|`` and nothing is rejected). Certified bounds on the
    survival function ``P[I >= i] = T_i / T_0``, ``T_i = sum_{j >= i} w_j``, come from
    the recurrence ``p_{j+1} = p_j r_j``, ``r_j = e1**(2j+1)``, ``e1 = p_1``, with
    directed rounding, and the tail after the last computed term bounded by the
    geometric series ``p_{J+1} / (1 - r_{J+1})`` (the ratios decrease).

    ``c_i = (2i + 1) D^2 / (2 sigma^2)`` (rational) are the constant factors of the
    acceptance test; ``imax`` is the largest ``i`` with ``c_i <= 1``.
    """

    KMAX = 8

    def __init__(self, a: int, b: int, width: int) -> None:
        self.width = width
        self.h = h = max(0, _floor_log2_ratio(a, b) - 4)
        self.num1 = ((b << h) ** 2)  # p_i = exp(-i^2 num1 / den)
        self.den = 2 * a * a
        self._cache: dict[int, tuple[list[int], list[int], int, int, int]] = {}
        coarse = self._thresholds(width)
        fine = self._thresholds(_Table.FINE)
        self.buckets = _Table(coarse, fine, self._bounds, width)
        self.imax = max(0, (self.den // self.num1 - 1) // 2)  # (2i+1) num1 <= den
        nvec = min(self.imax, len(fine) + 1)
        self.nvec = nvec
        if h > 0:
            self.tc = np.array([[((2 * i + 1) * self.num1 << width) // (self.den * k)
                                 for k in range(1, self.KMAX + 1)] for i in range(nvec + 1)],
                               dtype=np.int64)
            self.tc1 = np.ascontiguousarray(self.tc[:, 0])
        # acceptance (floats, only to size the batches): sum p(x) over the envelope
        sigma = a / b
        if h == 0:
            self.accept = 1.0
        else:
            d = float(1 << h) / sigma
            i = np.arange(0, int(40 / d) + 2)
            env = d * float(np.sum(np.exp(-0.5 * (i * d) ** 2)))
            self.accept = max(0.5, min(1.0, math.sqrt(math.pi / 2) / env))

    def _sums(self, prec: int) -> tuple[list[int], list[int], int, int, int]:
        """Suffix sums ``T_i`` (lower and upper bounds, scale ``2**prec``), the upper
        bound of the tail beyond them, and ``T_0``'s bounds."""
        hit = self._cache.get(prec)
        if hit is not None:
            return hit
        one = 1 << prec
        e1lo, e1hi = _exp_neg(self.num1, self.den, prec)
        e2lo, e2hi = _mul_bounds(e1lo, e1hi, e1lo, e1hi, prec)
        plo = phi = one
        rlo, rhi = e1lo, e1hi
        los, his = [], []
        while True:
            los.append(plo)
            his.append(phi)
            plo, phi = _mul_bounds(plo, phi, rlo, rhi, prec)  # p_{J+1}
            rlo, rhi = _mul_bounds(rlo, rhi, e2lo, e2hi, prec)  # r_{J+1}
            if phi <= 1 and rhi < one:
                break
        tail = -((-phi * one) // (one - rhi)) + 1  # >= sum_{j > J} p_j
        if self.h == 0:  # weights p_0, 2 p_1, 2 p_2, ...
            los = [los[0]] + [2 * v for v in los[1:]]
            his = [his[0]] + [2 * v for v in his[1:]]
            tail *= 2
        tlo = list(np.cumsum(np.array(los[::-1], dtype=object))[::-1])
        thi = list(np.cumsum(np.array(his[::-1], dtype=object))[::-1])
        thi = [v + tail for v in thi]
        out = (tlo, thi, tail, int(tlo[0]), int(thi[0]))
        if len(self._cache) > 8:
            self._cache = {}
        self._cache[prec] = out
        return out

    def _bounds(self, i: int, p: int) -> tuple[int, int]:
        """Certified bounds on ``2**p P[I >= i]``."""
        g = p + 24
        tlo, thi, tail, s_lo, s_hi = self._sums(g)
        lo_t, hi_t = (int(tlo[i]), int(thi[i])) if i < len(tlo) else (0, tail)
        return (lo_t << p) // s_hi, -((-(hi_t << p)) // s_lo)

    def _thresholds(self, bits: int) -> list[int]:
        g = bits + 80
        tlo, thi, tail, s_lo, s_hi = self._sums(g)
        out = []
        i = 1
        while True:
            lo_t, hi_t = (int(tlo[i]), int(thi[i])) if i < len(tlo) else (0, tail)
            # floor(2**bits c_i) is certain when both bounds give the same floor
            flo = (lo_t << bits) // s_hi
            fhi = (hi_t << bits) // s_lo
            t = flo if flo == fhi else _exact_floor(lambda q, i=i: self._bounds(i, q), bits)
            out.append(t)
            if t == 0:
                return out
            i += 1


@functools.lru_cache(maxsize=32)
def _gauss_tables(a: int, b: int, width: int) -> _GaussTables:
    return _GaussTables(a, b, width)


def _gauss_accept(src: BitSource, tab: _GaussTables, i: np.ndarray, u: np.ndarray
                  ) -> np.ndarray:
    r"""Exact ``Bernoulli(p(x) / p_i)`` for ``x = i D + u`` (bucket ``i``, offset ``u``).

    :math:`p(x)/p_i = e^{-\delta}` with
    :math:`\delta = (x^2 - (iD)^2)/(2\sigma^2) = \delta_1\,c_i\,z`,
    :math:`\delta_1 = u/D` (``h`` fresh bits ``< u``),
    :math:`c_i = (2i+1)D^2/(2\sigma^2)` (a rational constant per bucket, lazy
    comparison) and :math:`z = (u + 2iD)/((2i+1)D)` (a uniform integer below
    ``(2i+1)D`` is ``< u + 2iD``), all in [0, 1] for ``i <= imax``. CKS Algorithm 1
    with :math:`\mathrm{Bernoulli}(\delta/k) = \mathrm{Bernoulli}(c_i/k) \wedge
    \mathrm{Bernoulli}(\delta_1) \wedge \mathrm{Bernoulli}(z)`, drawn in that order
    with short-circuit: the first factor for every element, the rest for the few
    survivors. Buckets beyond the precomputed ones (probability below ``1e-14``) are
    decided in full with Python integers.
    """
    width, nvec = tab.width, tab.nvec
    m = i.size
    big = np.flatnonzero(i > nvec)
    ic = np.minimum(i, nvec)
    w = src._lanes(m, width)
    thr = tab.tc1[ic]
    a1 = w < thr
    for q in np.flatnonzero(w == thr):
        if i[q] <= nvec:
            x = int(i[q])
            a1[q] = _LazyUniform(src, int(w[q]), width).less(
                lambda p, x=x: _ratio_bounds((2 * x + 1) * tab.num1, tab.den, p))
    ok = ~a1
    sel = np.flatnonzero(a1)
    if sel.size:
        ok[sel] = _gauss_delta(src, tab, ic[sel], u[sel])
    d = 1 << tab.h
    for q in big:
        ii, uu = int(i[q]), int(u[q])
        dnum = uu * (uu + 2 * ii * d) * tab.num1 // (d * d)  # (x^2 - (iD)^2) b^2
        ok[q] = dnum == 0 or _LazyUniform(src).less(
            lambda p, dnum=dnum: _exp_neg(dnum, tab.den, p))
    return ok


def _gauss_delta(src: BitSource, tab: _GaussTables, i: np.ndarray, u: np.ndarray
                 ) -> np.ndarray:
    """Bernoulli(exp(-delta)) of :func:`_gauss_accept` (Algorithm 1, vectorised) for
    elements whose first factor ``Bernoulli(c_i)`` of round 1 already came up 1."""
    width, h = tab.width, tab.h

    def rounds(k: int, idx: np.ndarray) -> np.ndarray:
        ii = i[idx]
        if k == 1:
            a = np.ones(idx.size, dtype=bool)
        else:
            if k <= tab.KMAX:
                thr = tab.tc[ii, k - 1]
            else:
                thr = np.array([((2 * x + 1) * tab.num1 << width) // (tab.den * k)
                                for x in ii.tolist()], dtype=np.int64)
            w = src.bits(idx.size, width)
            a = w < thr
            for q in np.flatnonzero(w == thr):
                x = int(ii[q])
                a[q] = _LazyUniform(src, int(w[q]), width).less(
                    lambda p, x=x: _ratio_bounds((2 * x + 1) * tab.num1, tab.den * k, p))
        s2 = np.flatnonzero(a)
        if s2.size:
            a[s2] = src.bits(s2.size, h) < u[idx[s2]]
            s3 = np.flatnonzero(a)
            if s3.size:
                i3 = ii[s3]
                a[s3] = (src.uniform_below((2 * i3 + 1) << h)
                         < u[idx[s3]] + (i3 << (h + 1)))
        return a

    return _alg1_rounds(i.size, rounds)


def _dgauss_scalar(src: BitSource, a: int, b: int, n: int) -> np.ndarray:
    r"""``n`` discrete Gaussian draws with ``sigma = a/b``.

    ``sigma < 32``: ``|X|`` by table inversion of its exact survival function (certified
    bounds on the normalised Gaussian weights, the infinite tail bounded by a geometric
    series) and a fair sign; nothing is rejected. Otherwise rejection from a
    piecewise-uniform envelope: a bucket ``I`` with probability proportional to
    ``p_I`` (table inversion), ``x = I D + U`` with ``U`` uniform on ``[0, D)``
    (``h`` bits), accepted with probability ``p(x) / p_I`` (:func:`_gauss_accept`),
    and a fair sign with "negative zero" rejected as in CKS Algorithm 2. Accepted
    ``x`` have probability proportional to ``p_I (p(x)/p_I) = p(x)``. About 97% of
    the proposals are accepted; the first ``n`` accepted are kept (they are i.i.d.).
    See ``docs/privacy/discrete.md``.
    """
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    tab = _gauss_tables(a, b, _LAZY_BITS)
    h = tab.h
    if h == 0:
        out = tab.buckets.sample(src, n)
        np.negative(out, out=out, where=src.coins(n))
        return out
    filled = 0
    while filled < n:
        need = n - filled
        m = int(need / tab.accept * 1.01) + 32
        i = tab.buckets.sample(src, m)
        if int(i.max()) >= _LIMIT >> h:
            raise ConvergenceError("integer overflow guard hit in the discrete Gaussian "
                                   "sampler (a vanishing-probability event); retry")
        u = src.bits(m, h)
        ok = _gauss_accept(src, tab, i, u)
        x = (i << h) | u
        neg = src.coins(m)
        ok &= ~(neg & (x == 0))  # CKS Alg. 2 line 11: 0 must not be counted twice
        np.negative(x, out=x, where=neg)
        acc = np.flatnonzero(ok)[:need]
        out[filled:filled + acc.size] = x[acc]
        filled += acc.size
    return out


# ---------------------------------------------------------------------------------------
# Per-element scales: CKS Algorithms 2 and 3 element by element (many distinct scales)
# ---------------------------------------------------------------------------------------


def _geometric_e1(src: BitSource, n: int) -> np.ndarray:
    """V with P[V = v] = (1 - e^-1) e^-v (table inversion, exact)."""
    return _geometric_table(1, 1, _LAZY_BITS).sample(src, n)


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
        if np.any(v > (_LIMIT - u) // tt):
            raise ConvergenceError("integer overflow guard hit in the geometric sampler "
                                   "(a draw above 2**62); use a smaller scale")
        out[acc] = u + tt * v
        idx = idx[~keep]
    return out


def _geom_generic(src: BitSource, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    return _geometric_core(src, t) // s


def _dlap_generic(src: BitSource, t: np.ndarray, s: np.ndarray) -> np.ndarray:
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


def _dgauss_generic(src: BitSource, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""CKS Algorithm 3 for sigma = a/b (int64 arrays, one per draw), with t = sigma.

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
        y = _dlap_generic(src, aa, bb)  # Alg. 3 line 3
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


def geometric(scale: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
              rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact geometric integers :math:`P[X=x] = (1-e^{-1/b})\,e^{-x/b}`, ``x = 0, 1, ...``.

    With ``scale`` :math:`b = t/s` (the float's exact ratio): for :math:`b < 2^7`,
    inversion :math:`X = \#\{x\ge1 : W < e^{-x/b}\}` of a uniform real ``W`` against
    certified thresholds; for larger :math:`b`, :math:`X = 2^j Z + U` with ``Z`` the
    geometric of ratio :math:`e^{-2^j/b}` (same inversion) and ``U`` the truncated
    geometric on :math:`[0, 2^j)` by uniform proposal and CKS Algorithm 1. Exact; see
    ``docs/privacy/discrete.md``. Arrays with many distinct scales use CKS Algorithm 2
    element by element.

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
    if np.ndim(scale) == 0:
        t, s = _dyadic(check_positive(scale, "scale"), "scale")
        shape, n = _size(size)
        return _shape_out(_geom_scalar(src, t, s, n), shape)
    num, den, shape = _scale_arrays(scale, "scale", size)
    return _by_scale(src, num, den, _geom_scalar, _geom_generic).reshape(shape)


def discrete_laplace(scale: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
                     rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact discrete Laplace integers :math:`P[X=x]\propto e^{-|x|/b}`, :math:`x\in\mathbb{Z}`.

    .. math:: P[X = x] = \frac{e^{1/b} - 1}{e^{1/b} + 1}\, e^{-|x|/b}

    For :math:`b < 2^7`: :math:`|X|` by inversion of
    :math:`P[|X|\ge v] = 2e^{-v/b}/(1+e^{-1/b})` against certified thresholds, and an
    independent fair sign. Otherwise CKS Algorithm 2: a geometric (see
    :func:`geometric`), a fair sign, and rejection of "negative zero". The float
    ``scale`` is read as its exact ratio ``t/s``. Exact; see ``docs/privacy/discrete.md``.

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
    if np.ndim(scale) == 0:
        t, s = _dyadic(check_positive(scale, "scale"), "scale")
        shape, n = _size(size)
        return _shape_out(_dlap_scalar(src, t, s, n), shape)
    num, den, shape = _scale_arrays(scale, "scale", size)
    return _by_scale(src, num, den, _dlap_scalar, _dlap_generic).reshape(shape)


def discrete_gaussian(sigma: float | np.ndarray, size: int | tuple[int, ...] | None = None, *,
                      rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Exact discrete Gaussian integers :math:`P[X=x]\propto e^{-x^2/(2\sigma^2)}`.

    The float ``sigma`` is read as its exact ratio ``a/b``. For :math:`\sigma < 32`,
    :math:`|X|` by inversion of its survival function against certified thresholds and
    a fair sign. Otherwise rejection from a piecewise-uniform envelope: a bucket of
    width :math:`D = 2^h \in (\sigma/32, \sigma/16]` with probability proportional to
    the Gaussian weight :math:`p_i` at its inner edge (table inversion), a uniform
    offset, acceptance with probability :math:`p(x)/p_i` by CKS Algorithm 1 with
    three exact Bernoulli factors (:func:`_gauss_accept`), a fair sign. Arrays with
    many distinct sigmas use CKS Algorithm 3 element by element. Exact; see
    ``docs/privacy/discrete.md``. The variance is slightly below :math:`\sigma^2`
    (CKS Prop. 19; equal to it up to :math:`10^{-6}` relative once
    :math:`\sigma \geq 2`).

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
    if np.ndim(sigma) == 0:
        a, b = _dyadic(check_positive(sigma, "sigma"), "sigma")
        if a > 2**53:
            raise InvalidParameterError("sigma", sigma, "at most 2**53")
        shape, n = _size(size)
        return _shape_out(_dgauss_scalar(src, a, b, n), shape)
    num, den, shape = _scale_arrays(sigma, "sigma", size)
    if np.any(num > 2**53):
        raise InvalidParameterError("sigma", sigma, "at most 2**53")
    return _by_scale(src, num, den, _dgauss_scalar, _dgauss_generic).reshape(shape)


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
