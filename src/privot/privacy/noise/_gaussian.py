r"""Exact discrete Gaussian sampler: :func:`discrete_gaussian`.

One ``sigma = a/b`` (the float's exact ratio): for ``sigma < 32``, ``|X|`` by table
inversion of its certified survival function and a fair sign. Above, rejection from a
piecewise-uniform envelope: a bucket of width ``D = 2**h`` in ``(sigma/32, sigma/16]``
by table inversion, a uniform offset, acceptance with probability ``p(x)/p_I`` by CKS
Algorithm 1 with three exact Bernoulli factors (about 97% accepted). Many distinct
sigmas in one call use CKS Algorithm 3 element by element.

Privacy
-------
Exact for every float ``sigma <= 2**53``: integer comparisons against certified
constants only (floats only size the batches). A sampler, not a mechanism: calibration
and budget are in :func:`privot.privacy.mechanisms.gaussian_mechanism`. See
``docs/privacy/discrete.md``, section 6.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from privot._validation import check_positive
from privot.errors import ConvergenceError, InvalidParameterError
from privot.privacy.noise._bernoulli import _alg1, _alg1_rounds, _bern_exp, _bern_ratio
from privot.privacy.noise._bits import BitSource, resolve_rng
from privot.privacy.noise._exact import (
    _LAZY_BITS,
    _exact_floor,
    _exp_neg,
    _floor_log2_ratio,
    _LazyUniform,
    _mul_bounds,
    _ratio_bounds,
    _Table,
)
from privot.privacy.noise._laplace import _dlap_generic
from privot.privacy.noise._scales import (
    _LIMIT,
    _by_scale,
    _dyadic,
    _scale_arrays,
    _shape_out,
    _size,
)

__all__ = ["discrete_gaussian"]


# ---------------------------------------------------------------------------------------
# One sigma (fast, table based)
# ---------------------------------------------------------------------------------------


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
            with np.errstate(under="ignore"):  # the tail underflows to 0 by design
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
# Per-element sigmas: CKS Algorithm 3 element by element (many distinct sigmas)
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Public sampler
# ---------------------------------------------------------------------------------------


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
