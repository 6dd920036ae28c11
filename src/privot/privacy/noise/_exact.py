"""Exact arithmetic on constants, lazy comparisons with them, and inversion tables.

The building blocks of the fast exact samplers. Constants such as ``exp(-num/den)``
and rationals get certified integer bounds at any precision (:func:`_exp_neg`,
:func:`_ratio_bounds`, :func:`_exact_floor`). A uniform real ``W`` is compared with
such a constant on its first ``_LAZY_BITS`` bits and, in the rare tie, on more bits of
the *same* ``W`` (:class:`_LazyUniform`, :func:`_bern_const`). A survival function is
sampled by inversion against cached tables of certified thresholds (:class:`_Table`,
:func:`_geometric_table`, :func:`_abs_dlap_table`).

Privacy
-------
Only constants go through this arithmetic (Python integers; no random number ever
goes through a floating-point function), so every comparison decides the event
``W < c`` for a genuine uniform real: the draws built on it are exact. Derivations in
``docs/privacy/discrete.md``, section 3.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from privot.errors import ConvergenceError
from privot.privacy.noise._bits import BitSource

#: Bits of a uniform compared with a constant's threshold before the (rare) exact
#: continuation; a lookup table has ``2**_LAZY_BITS`` entries. Any value in [1, 32]
#: gives the same distributions (the tests lower it to exercise the tie paths).
_LAZY_BITS = 16


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



def exp_neg_bounds(num: int, den: int, prec: int) -> tuple[int, int]:
    r"""Certified integer bounds ``lo <= 2**prec * exp(-num/den) <= hi`` (``hi - lo <= 2``).

    The enclosure every exact sampler here compares lazily read uniform bits against
    (public for samplers built elsewhere on :class:`BitSource`, e.g. the device WPM
    sampler). ``num >= 0``, ``den >= 1``, ``prec >= 0`` Python integers.
    """
    return _exp_neg(num, den, prec)

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
