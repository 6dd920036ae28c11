r"""Exact geometric and discrete Laplace samplers: :func:`geometric`, :func:`discrete_laplace`.

One scale ``b = t/s`` (the float's exact ratio): for ``b < 2**_TABLE_LOG2`` (128), table
inversion (``|X|`` and a fair sign for the discrete Laplace). Above, the geometric is
split exactly as ``Y = 2**j Z + U`` with ``2**j`` in ``(b/128, b/64]``: ``Z`` a
geometric of ratio ``exp(-2**j/b)`` by table inversion, ``U`` the truncated geometric
on ``[0, 2**j)`` by uniform proposal and CKS Algorithm 1 (independent, because the
blocks of bits of a geometric are); the discrete Laplace is ``sign * geometric`` with
CKS's rejection of ``-0``. Many distinct scales in one call use CKS Algorithm 2
element by element.

Privacy
-------
Exact for every float scale: integer comparisons against certified constants only.
Samplers, not mechanisms: calibration and budget are in
:mod:`privot.privacy.mechanisms`. See ``docs/privacy/discrete.md``, sections 4, 5 and 7.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privot._validation import check_positive
from privot.errors import ConvergenceError
from privot.privacy.noise._bernoulli import _alg1, _alg1_rounds, _bern_ratio
from privot.privacy.noise._bits import BitSource, resolve_rng
from privot.privacy.noise._exact import (
    _LAZY_BITS,
    _abs_dlap_table,
    _bern_const,
    _floor_log2_ratio,
    _geometric_table,
    _LazyUniform,
    _ratio_bounds,
)
from privot.privacy.noise._scales import (
    _LIMIT,
    _by_scale,
    _dyadic,
    _scale_arrays,
    _shape_out,
    _size,
)

__all__ = ["geometric", "discrete_laplace"]

#: Geometric scales ``b >= 2**_TABLE_LOG2`` are split as ``2**j Z + U`` (see module doc).
_TABLE_LOG2 = 7


# ---------------------------------------------------------------------------------------
# One scale (fast, table based)
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


# ---------------------------------------------------------------------------------------
# Per-element scales: CKS Algorithm 2 element by element (many distinct scales)
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


# ---------------------------------------------------------------------------------------
# Public samplers
# ---------------------------------------------------------------------------------------


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
