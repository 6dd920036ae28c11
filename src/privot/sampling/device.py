r"""Exact local-DP sampling on the device: integer weights certified in the LDP polytope.

A mechanism of :mod:`privot.sampling` computes a distribution ``nu`` over ``k_v``
public output points in floating point; it is eps-LDP when every ``nu`` it can produce
lies in the LDP polytope

.. math:: Q_{m,\varepsilon} = \{\nu : e^{-\varepsilon/2} m_j \le \nu_j \le
          e^{\varepsilon/2} m_j,\ \textstyle\sum_j \nu_j = 1\}

(paper 003, Def. 2.2 and Prop. 3.2). Floats that leave the polytope by one ulp, or a
sampler that reads ``nu`` through a floating-point inverse CDF, void that argument.
This module closes the gap:

1. :func:`grid_polytope` turns ``(m, eps, bits)`` into integer bounds ``L_j <= U_j``
   with :math:`L_j \ge 2^b e^{-\varepsilon/2} m_j` and
   :math:`U_j \le 2^b e^{\varepsilon/2} m_j`, **certified** in exact integer
   arithmetic (``m_j`` is a float, an exact dyadic rational; :math:`e^{\pm\varepsilon/2}`
   is enclosed by :func:`privot.privacy.noise.exp_neg_bounds` (certified), rounded to
   the safe side);
2. :func:`snap_to_polytope` rounds ``nu`` to integer weights ``w_j`` on the grid
   :math:`2^{-b}\mathbb{Z}`, clips them into ``[L_j, U_j]`` and repairs the total to
   exactly :math:`2^b` by a deterministic rule; a function of ``nu`` alone, so it is
   post-processing of the mechanism and costs no privacy;
3. :func:`verify_in_polytope` checks ``L <= w <= U`` and ``sum(w) == 2**b`` on the
   integers and raises :class:`PolytopeViolationError` (never ``assert``);
4. :func:`draw_index` draws ``j`` with probability exactly :math:`w_j / 2^b`: a
   uniform integer in :math:`[0, 2^b)` from the secure bit source and an integer
   inverse CDF.

:func:`private_sample` chains the four, vectorised over a batch of users.
:func:`max_likelihood_ratio` and :func:`ratio_at_most_exp` are the exact audit: the
largest ratio ``w_aj / w_bj`` over the rows of a channel (e.g. the Dirac inputs) as a
:class:`fractions.Fraction`, compared with :math:`e^\varepsilon` by certified bounds.

Privacy
-------
Unit: one user's whole distribution ``mu``. Relation: local DP, any two inputs of one
user (:attr:`~privot.privacy.types.Neighbouring.LOCAL`). Guarantee: pure eps-LDP for
every mechanism whose output passes through :func:`private_sample`, whatever ``nu``
it computed: for any two users' weights ``w, w'`` and any output ``j``,
:math:`P[j]/P'[j] = w_j / w'_j \le U_j / L_j \le e^{\varepsilon}` exactly (and an
output with ``m_j = 0`` has probability 0 under every input). The sampled index is
exact (integer comparisons on uniform bits). Only ``rng=None`` (the OS CSPRNG) is fit
for publication; a seeded generator marks the result ``secure=False``.
Derivation: ``docs/privacy/sampling_device.md``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privot._validation import check_epsilon, check_finite_array, check_int
from privot.errors import (
    ConvergenceError,
    InvalidDataError,
    InvalidParameterError,
    PolytopeViolationError,
)
from privot.privacy.noise import BitSource, check_rng, exp_neg_bounds, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender, check_spender

__all__ = [
    "DEFAULT_BITS",
    "MAX_BITS",
    "NU_ATOL",
    "DeviceSample",
    "GridPolytope",
    "PolytopeViolationError",
    "TableSampler",
    "draw_index",
    "grid_polytope",
    "max_likelihood_ratio",
    "private_sample",
    "private_sample_cells",
    "ratio_at_most_exp",
    "snap_to_polytope",
    "verify_in_polytope",
]

#: Default grid exponent ``b``: weights are integers summing to ``2**b``.
DEFAULT_BITS = 61
#: Largest grid exponent: the row sums of clipped weights stay below ``2**63`` (int64).
MAX_BITS = 61
#: Tolerance on ``nu``: entries in ``[-NU_ATOL, 1 + NU_ATOL]``, rows summing to
#: ``1 +- NU_ATOL``. Snapping repairs any such row; the tolerance only keeps the
#: integer arithmetic inside int64 and catches a caller passing something else.
NU_ATOL = 1e-6
#: Entries (users x k_v) per block in :func:`private_sample`: temporaries stay in cache.
_BLOCK_ELEMENTS = 1 << 16
#: A repair of more than this many units (``2**-29`` of the mass at ``b = 61``) is spread
#: in proportion to the slack first (a ``nu`` far outside the polytope).
_BIG_NEED = 1 << 32


# ---------------------------------------------------------------------------------------
# Certified bounds
# ---------------------------------------------------------------------------------------


#: ``eps/2`` is capped here for the certified constant: ``e^{-eps/2} <= e^{-1024}`` is a
#: valid (safe-side) upper bound, and it changes no grid bound for a float ``m_j``:
#: every positive float is in ``(e^{-745}, 2^{1024})``, so ``L_j = 1`` and
#: ``U_j = 2^b`` either way.
_HALF_EPS_CAP = Fraction(1024)


def _exp_half_eps_upper(eps: float, prec: int) -> int:
    """An integer ``h`` with ``e^{-eps/2} <= h / 2**prec`` (certified, ``h >= 1``).

    Then also ``e^{eps/2} >= 2**prec / h``: one constant bounds both sides safely. For a
    huge ``eps`` the bound of ``e^{-min(eps/2, 1024)}`` is used (still an upper bound,
    the same grid bounds; it keeps the exact arithmetic small).
    """
    half = min(Fraction(eps) / 2, _HALF_EPS_CAP)  # eps is a float: an exact dyadic rational
    _, hi = exp_neg_bounds(half.numerator, half.denominator, prec)
    return max(int(hi), 1)


def _exp_bounds(x: Fraction, prec: int) -> tuple[Fraction, Fraction]:
    """Certified ``lo <= e^x <= hi`` for a rational ``x`` (relative width ~ ``2**-prec``)."""
    if x == 0:
        return Fraction(1), Fraction(1)
    a = abs(x)
    p = prec + 2 + math.ceil(float(a) * 1.5)
    lo, hi = exp_neg_bounds(a.numerator, a.denominator, p)
    if x < 0:
        return Fraction(lo, 1 << p), Fraction(hi, 1 << p)
    return Fraction(1 << p, max(hi, 1)), (Fraction(1 << p, lo) if lo else Fraction(math.inf))


@dataclass(frozen=True)
class GridPolytope:
    """The LDP polytope on the grid :math:`2^{-b}\\mathbb{Z}`, with certified bounds.

    Attributes
    ----------
    lower, upper : (k_v,) int64 arrays
        ``L_j = ceil(2**b * a_hi * m_j)`` and ``U_j = min(2**b, floor(2**b * m_j / a_hi))``
        with ``a_hi >= e^{-eps/2}`` a certified rational; so
        ``e^{-eps/2} m_j <= L_j / 2**b`` and ``U_j / 2**b <= e^{eps/2} m_j``.
    bits : int
        ``b``: integer weights sum to ``2**b``.
    epsilon : float
    base_measure : (k_v,) float array
        ``m`` (a read-only copy).
    upper_total : int
        ``sum(upper)`` as an exact Python integer.
    """

    lower: np.ndarray
    upper: np.ndarray
    bits: int
    epsilon: float
    base_measure: np.ndarray
    upper_total: int

    @property
    def k_v(self) -> int:
        """The number of output points."""
        return int(self.lower.size)

    @property
    def total(self) -> int:
        """``2**bits``, the exact sum of every weight vector."""
        return 1 << self.bits


@functools.lru_cache(maxsize=32)
def _grid_bounds(m_bytes: bytes, eps: float, bits: int) -> tuple[tuple[int, ...],
                                                                  tuple[int, ...]]:
    m = np.frombuffer(m_bytes, dtype=np.float64)
    # e^{-eps/2} 2^prec keeps >= bits + 96 significant bits (eps/2 capped at 1024)
    prec = bits + 96 + math.ceil(min(eps, 2048.0))
    h = _exp_half_eps_upper(eps, prec)
    total = 1 << bits
    lower, upper = [], []
    for j, mj in enumerate(m.tolist()):
        num, den = float(mj).as_integer_ratio()  # m_j = num / den exactly (den = 2^s)
        # L_j = ceil(2^b * (h / 2^prec) * m_j); U_j = floor(2^b * (2^prec / h) * m_j)
        lo = -((-(h * num << bits)) // (den << prec))
        hi = min((num << (bits + prec)) // (den * h), total)
        if lo > hi:
            raise InvalidParameterError(
                f"base_measure[{j}]", mj,
                f"0 or large enough that [e^-eps/2 m_j, e^eps/2 m_j] contains a multiple of "
                f"2^-{bits} (epsilon={eps!r}); set it to 0, or raise epsilon or bits")
        lower.append(lo)
        upper.append(hi)
    if sum(lower) > total or sum(upper) < total:
        raise InvalidParameterError(
            "base_measure", f"<{m.size} values, sum {float(m.sum())!r}>",
            f"a base measure whose LDP polytope for epsilon={eps!r} contains a distribution "
            f"on the 2^-{bits} grid: need sum(ceil-bounds) <= 2^{bits} <= sum(floor-bounds), "
            "i.e. e^-eps/2 sum(m) <= 1 <= e^eps/2 sum(m) with room to spare (the polytope "
            "is empty or degenerate)")
    return tuple(lower), tuple(upper)


def grid_polytope(base_measure: object, *, epsilon: float,
                  bits: int = DEFAULT_BITS) -> GridPolytope:
    """Certified integer bounds of the LDP polytope :math:`Q_{m,\\varepsilon}` on the
    grid :math:`2^{-b}\\mathbb{Z}` (cached per ``(m, epsilon, bits)``).

    Parameters
    ----------
    base_measure : (k_v,) array
        ``m >= 0`` (public). An entry too small for the grid (``L_j > U_j``) raises.
    epsilon : float
        > 0.
    bits : int
        ``b`` in ``[1, MAX_BITS]``.

    Returns
    -------
    GridPolytope

    Raises
    ------
    InvalidParameterError
        ``epsilon`` or ``bits`` out of range, or the grid polytope is empty (names
        ``base_measure``): ``sum(L) > 2**b`` or ``sum(U) < 2**b``, which only happens
        when ``sum(m)`` is at (or within about ``k_v 2**-b`` of) an end of
        ``[e^{-eps/2}, e^{eps/2}]``.
    InvalidDataError
        ``base_measure`` empty, not 1-D, not finite or negative.
    """
    eps = check_epsilon(epsilon)
    b = check_int(bits, "bits", minimum=1, maximum=MAX_BITS)
    m = check_finite_array(base_measure, "base_measure", ndim=1)
    if np.any(m < 0):
        j = int(np.flatnonzero(m < 0)[0])
        raise InvalidDataError(
            f"base_measure must be non-negative; base_measure[{j}] = {m[j]!r}")
    m = np.ascontiguousarray(m, dtype=np.float64)
    lower, upper = _grid_bounds(m.tobytes(), eps, b)
    lo = np.array(lower, dtype=np.int64)
    hi = np.array(upper, dtype=np.int64)
    m_copy = m.copy()
    for arr in (lo, hi, m_copy):
        arr.setflags(write=False)
    return GridPolytope(lower=lo, upper=hi, bits=b, epsilon=eps, base_measure=m_copy,
                        upper_total=sum(upper))


# ---------------------------------------------------------------------------------------
# Snapping
# ---------------------------------------------------------------------------------------


def _check_nu(nu: object, k_v: int) -> np.ndarray:
    arr = check_finite_array(nu, "nu")
    rows = arr[None, :] if arr.ndim == 1 else arr
    if rows.ndim != 2:
        raise InvalidDataError(f"nu must have shape (k_v,) or (n, k_v), got shape {arr.shape}")
    if rows.shape[1] != k_v:
        raise InvalidDataError(
            f"nu has {rows.shape[1]} entries per distribution but the base measure has "
            f"k_v = {k_v} output points")
    low, high = float(rows.min()), float(rows.max())
    if low < -NU_ATOL or high > 1 + NU_ATOL:
        i = tuple(int(v) for v in np.argwhere((rows < -NU_ATOL) | (rows > 1 + NU_ATOL))[0])
        raise InvalidDataError(
            f"nu must hold probabilities (entries in [0, 1] within {NU_ATOL:g}); entry {i} "
            f"is {rows[i]!r}")
    sums = rows.sum(axis=1)
    neg = np.minimum(rows, 0.0).sum(axis=1) if low < 0 else np.zeros_like(sums)
    bad = np.flatnonzero((np.abs(sums - 1.0) > NU_ATOL) | (neg < -NU_ATOL))
    if bad.size:
        i = int(bad[0])
        raise InvalidDataError(
            f"nu must sum to 1 with negative parts summing to at least -{NU_ATOL:g}; row "
            f"{i} sums to {sums[i]!r} (negative parts {neg[i]!r})")
    return rows


def _row_sums_exact(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row sums of non-negative int64 weights below ``2**62`` as ``(high, low)`` with
    ``sum = high * 2**31 + low``, ``0 <= low < 2**31``: no int64 overflow for
    ``k_v < 2**31`` whatever the values."""
    mask = np.int64((1 << 31) - 1)
    s_hi = (w >> 31).sum(axis=1)
    s_lo = (w & mask).sum(axis=1)
    return s_hi + (s_lo >> 31), s_lo & mask


def _fill(slack: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Integer amounts ``0 <= a <= slack`` (row-wise) with ``sum(a) == need``, exactly.

    ``sum(slack) >= need >= 1`` per row (the caller guarantees it). Deterministic:

    1. rows needing more than ``2**32`` units (a ``nu`` far from the grid polytope) first
       get a share proportional to the slack, rounded down and shrunk by ``2**-20`` in
       floating point so that it never overshoots (an overshoot, possible only through
       rounding, is caught on the integers and the share dropped);
    2. the remainder goes to the coordinate with the largest remaining slack when it fits
       there;
    3. otherwise it is spread exactly in index order (cumulative slack capped at the
       remainder).
    """
    n, k_v = slack.shape
    a = np.zeros_like(slack)
    rem = need.copy()
    big = np.flatnonzero(need > _BIG_NEED)
    if big.size:
        every = big.size == n
        sb = slack if every else slack[big]
        sf = sb.astype(np.float64)
        sf *= (need[big].astype(np.float64) * (1.0 - 2.0**-20) / sf.sum(axis=1))[:, None]
        np.floor(sf, out=sf)
        share = sf.astype(np.int64)  # >= 0
        del sf
        np.minimum(share, sb, out=share)
        r = need[big] - share.sum(axis=1)
        ok = r >= 0  # float rounding cannot overshoot by design; if it did, drop the share
        if every and ok.all():
            a = share
        else:
            a[big[ok]] = share[ok]
        rem[big[ok]] = r[ok]
    left = slack - a
    arg = np.argmax(left, axis=1)
    rows = np.arange(n)
    fits = (left[rows, arg] >= rem) & (rem > 0)
    a[rows[fits], arg[fits]] += rem[fits]
    rest = np.flatnonzero(~fits & (rem > 0))
    if rest.size == 0:
        return a
    r = rem[rest]
    lsub = left[rest]
    sub = a[rest]
    if int(r.max()) < (1 << 62) // max(k_v, 1):
        # cumulative slack capped at the remainder: cumsum <= k_v * max(r) < 2**62
        capped = np.minimum(lsub, r[:, None])
        taken = np.minimum(np.cumsum(capped, axis=1), r[:, None])
        sub += np.diff(taken, axis=1, prepend=0)
    else:  # a huge remainder: column by column, every value < 2**62
        for j in range(k_v):
            take = np.minimum(lsub[:, j], r)
            sub[:, j] += take
            r = r - take
    a[rest] = sub
    return a


def _snap(rows: np.ndarray, poly: GridPolytope) -> np.ndarray:
    """Round, clip into ``[L, U]``, repair the total: int64 weights ``(n, k_v)``.

    No int64 overflow: ``|2**b nu_j| <= 2**61 (1 + 1e-6)``; after clipping
    ``w_j <= max(round(2**b nu_j), 0) + L_j``, so a row sums to at most
    ``2**61 (1 + 2e-6) + k_v + sum(L) < 2**62 + 2**50`` (``sum(L) <= 2**b``, and the
    positive parts of a checked row sum to at most ``1 + 2 NU_ATOL``).

    Repair of the total ``d = 2**b - sum(w)``: a row with ``d > 0`` gains ``d`` units
    where ``w < U``, a row with ``d < 0`` loses ``-d`` units where ``w > L`` (enough
    slack exists because ``sum(L) <= 2**b <= sum(U)``). The common case, a few units of
    rounding, puts them all on the coordinate with the most slack; see :func:`_fill`.
    """
    scale = float(1 << poly.bits)  # exact power of two: nu * scale is exact
    x = np.multiply(rows, scale)
    np.rint(x, out=x)
    w = x.astype(np.int64)
    del x
    np.clip(w, poly.lower, poly.upper, out=w)
    d = np.int64(poly.total) - w.sum(axis=1)
    if not d.any():
        return w
    n = w.shape[0]
    slack = np.subtract(poly.upper, w)
    down = np.flatnonzero(d < 0)
    if down.size:
        slack[down] = w[down] - poly.lower
    need = np.abs(d)
    rows = np.arange(n)
    arg = np.argmax(slack, axis=1)
    fast = (need > 0) & (need <= _BIG_NEED) & (slack[rows, arg] >= need)
    w[rows[fast], arg[fast]] += d[fast]
    slow = np.flatnonzero((need > 0) & ~fast)
    if slow.size:
        add = _fill(slack[slow], need[slow])
        add *= np.sign(d[slow])[:, None]
        w[slow] += add
    return w


def snap_to_polytope(nu: object, *, base_measure: object | None = None,
                     epsilon: float | None = None, bits: int = DEFAULT_BITS,
                     polytope: GridPolytope | None = None) -> np.ndarray:
    """Integer weights on the grid :math:`2^{-b}\\mathbb{Z}`, certified in the polytope.

    ``w = clip(round(2**b nu), L, U)``, then the total is repaired to exactly ``2**b``
    by moving units among coordinates with slack (all on the coordinate with the most
    slack when they fit; a large repair is first spread in proportion to the slack):
    deterministic, a function of ``nu`` only.

    A ``nu`` *outside* the polytope (far, or by one ulp) is **clipped**, never refused:
    an error that depended on ``nu`` (a function of the user's data) would itself leak,
    and the device must always answer with a sample inside the polytope. A ``nu``
    inside the float polytope moves by about ``2 k_v 2**-b`` plus the float rounding
    of its bounds (relative ``2**-52``) in L1.

    Parameters
    ----------
    nu : (k_v,) or (n, k_v) array
        Output distributions (entries in ``[0, 1]`` and rows summing to 1 within
        :data:`NU_ATOL`).
    base_measure, epsilon, bits
        The polytope, as in :func:`grid_polytope`; or give ``polytope`` instead.
    polytope : GridPolytope, optional

    Returns
    -------
    weights : (n, k_v) int64 array
        Each row in ``[L, U]``, summing to exactly ``2**b``.
    """
    poly = _resolve_polytope(polytope, base_measure, epsilon, bits)
    rows = _check_nu(nu, poly.k_v)
    w = _snap(rows, poly)
    verify_in_polytope(w, poly)
    return w


def _resolve_polytope(polytope: GridPolytope | None, base_measure: object | None,
                      epsilon: float | None, bits: int) -> GridPolytope:
    if polytope is not None:
        if not isinstance(polytope, GridPolytope):
            raise InvalidParameterError("polytope", polytope, "a GridPolytope or None")
        return polytope
    if base_measure is None or epsilon is None:
        raise InvalidParameterError(
            "polytope", None, "a GridPolytope, or base_measure and epsilon to build one")
    return grid_polytope(base_measure, epsilon=epsilon, bits=bits)


def verify_in_polytope(weights: np.ndarray, polytope: GridPolytope) -> None:
    """Refuse integer weights outside the certified grid polytope.

    Checks, on the integers, ``lower <= w <= upper`` entrywise and ``sum(w) == 2**b``
    per row (the sum is taken in two 31-bit halves, so no overflow can fake it).

    Raises
    ------
    PolytopeViolationError
        Naming the first offending row and coordinate. Never ``assert``: the check
        survives ``python -O``.
    """
    w = np.asarray(weights)
    if w.ndim == 1:
        w = w[None, :]
    if w.ndim != 2 or w.shape[1] != polytope.k_v or not np.issubdtype(w.dtype, np.integer):
        raise PolytopeViolationError(
            f"weights must be an integer (n, {polytope.k_v}) array, got dtype {w.dtype} "
            f"shape {np.shape(weights)}")
    w = w.astype(np.int64, copy=False)
    low = w < polytope.lower
    high = w > polytope.upper
    if low.any() or high.any():
        i, j = (int(v) for v in np.argwhere(low | high)[0])
        raise PolytopeViolationError(
            f"weights[{i}, {j}] = {int(w[i, j])} is outside the certified bounds "
            f"[{int(polytope.lower[j])}, {int(polytope.upper[j])}] of the LDP polytope on "
            f"the 2^-{polytope.bits} grid; nothing is sampled")
    t = polytope.total
    if polytope.upper_total < 1 << 63:  # every w_j <= U_j: the int64 sum cannot overflow
        bad = np.flatnonzero(w.sum(axis=1) != t)
    else:
        hi, lo = _row_sums_exact(w)
        bad = np.flatnonzero((hi != (t >> 31)) | (lo != (t & ((1 << 31) - 1))))
    if bad.size:
        i = int(bad[0])
        total_i = sum(int(v) for v in w[i])
        raise PolytopeViolationError(
            f"weights row {i} sums to {total_i}, not exactly 2^{polytope.bits}; nothing "
            "is sampled")


# ---------------------------------------------------------------------------------------
# Exact draws
# ---------------------------------------------------------------------------------------


def _draw(src: BitSource, w: np.ndarray, bits: int) -> np.ndarray:
    """``P[j] = w_j / 2**bits`` exactly: ``U`` uniform on ``[0, 2**bits)``, the index is
    ``#{j : c_j <= U}`` with ``c`` the integer cumulative sums (``c_{-1} = 0``)."""
    n = w.shape[0]
    u = src.uniform_below(1 << bits, n)  # a power of two: raw bits, no rejection
    cs = np.cumsum(w, axis=1)  # <= 2**bits <= 2**61: exact
    return np.count_nonzero(cs <= u[:, None], axis=1).astype(np.int64)


def draw_index(weights: np.ndarray, total_bits: int, *,
               rng: np.random.Generator | BitSource | int | None = None) -> np.ndarray:
    """Draw index ``j`` with probability exactly ``w_j / 2**total_bits``, per row.

    Parameters
    ----------
    weights : (k_v,) or (n, k_v) integer array
        Non-negative; every row sums to exactly ``2**total_bits`` (checked exactly).
    total_bits : int
        In ``[0, MAX_BITS]``.
    rng : numpy.random.Generator, BitSource, int or None
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (the default): the OS CSPRNG (see :func:`privot.privacy.noise.resolve_rng`).

    Returns
    -------
    (n,) int64 array
        One index per row (``n = 1`` for a 1-D ``weights``).
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    b = check_int(total_bits, "total_bits", minimum=0, maximum=MAX_BITS)
    w = np.asarray(weights)
    if not np.issubdtype(w.dtype, np.integer):
        raise InvalidParameterError("weights", f"<array of dtype {w.dtype}>", "integers")
    if w.ndim == 1:
        w = w[None, :]
    if w.ndim != 2 or w.shape[1] == 0:
        raise InvalidDataError(
            f"weights must have shape (k_v,) or (n, k_v) with k_v >= 1, got shape "
            f"{np.shape(weights)}")
    if w.size and (int(w.min()) < 0 or int(w.max()) > (1 << b)):
        raise InvalidDataError(f"weights must be integers in [0, 2^{b}]")
    w = w.astype(np.int64, copy=False)
    hi, lo = _row_sums_exact(w)
    t = 1 << b
    bad = np.flatnonzero((hi != (t >> 31)) | (lo != (t & ((1 << 31) - 1))))
    if bad.size:
        i = int(bad[0])
        raise InvalidDataError(
            f"weights row {i} sums to {int(hi[i]) * 2**31 + int(lo[i])}; every row must sum "
            f"to exactly 2^{b}")
    src, _ = resolve_rng(rng)
    return _draw(src, w, b)


# ---------------------------------------------------------------------------------------
# The device
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class DeviceSample:
    """One sample per user, drawn exactly from weights certified in the polytope.

    Attributes
    ----------
    indices : (n,) int64 array
        The released output indices (``n = 1`` for a single ``nu``).
    cost : PrivacyCost
        ``epsilon`` per user (pure LDP).
    relation : Neighbouring
        :attr:`~privot.privacy.types.Neighbouring.LOCAL`: any two inputs of one user.
    secure : bool
        False when a seeded generator was used: reproducible, **not fit for publication**.
    bits : int
        The grid exponent: each user's output law is ``w / 2**bits``.
    max_shift : float
        Diagnostic, *not* part of the release (a function of the users' ``nu``): the
        largest L1 distance between a user's ``nu`` and its snapped law (about
        ``1e-15`` for a ``nu`` in the float polytope; larger means ``nu`` was clipped).
    """

    indices: np.ndarray
    cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    bits: int
    max_shift: float

    def __repr__(self) -> str:
        """One line: how many samples, the guarantee, the grid; no indices."""
        return (f"DeviceSample({int(np.size(self.indices))} samples, "
                f"epsilon={self.cost.epsilon:g} LDP, bits={self.bits}"
                + ("" if self.secure else ", SEEDED") + ")")


def private_sample(nu: object, *, base_measure: object, epsilon: float,
                   rng: np.random.Generator | BitSource | int | None = None,
                   bits: int = DEFAULT_BITS,
                   accountant: Spender | None = None) -> DeviceSample:
    """Release one eps-LDP sample of each user's ``nu``: snap, verify, draw exactly.

    Parameters
    ----------
    nu : (k_v,) or (n, k_v) array
        Each user's output distribution as computed by a mechanism (WPM, KPM, ...);
        should lie in :math:`Q_{m,\\varepsilon}`; whatever it is, it is clipped into the
        certified grid polytope before anything is drawn (see :func:`snap_to_polytope`).
    base_measure : (k_v,) array
        ``m``, public, the same for every user.
    epsilon : float
        > 0.
    rng : numpy.random.Generator, BitSource, int or None
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): the OS CSPRNG, the only choice fit for publication.
    bits : int
        Grid exponent ``b`` in ``[1, MAX_BITS]``.
    accountant : PrivacyAccountant, optional
        Charged ``epsilon`` once (relation ``local``) *before* anything is drawn: each
        user in the batch releases one sample of their own data.

    Returns
    -------
    DeviceSample

    Privacy
    -------
    Unit: one user's whole distribution. Relation: local (any two inputs of one user).
    Every user's output law is ``w / 2**b`` with ``L <= w <= U`` verified on the integers,
    so for any two inputs and every output ``j``,
    :math:`P[j \\mid \\mu] / P[j \\mid \\mu'] \\le U_j / L_j \\le e^{\\varepsilon}` (certified;
    Prop. 3.2 of paper 003 on the grid). Sampling is exact. Pure eps-LDP per user.
    ``docs/privacy/sampling_device.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    check_spender(accountant)
    eps = check_epsilon(epsilon)
    poly = grid_polytope(base_measure, epsilon=eps, bits=bits)
    rows = _check_nu(nu, poly.k_v)
    cost = PrivacyCost(eps)
    if accountant is not None:  # once, before anything is drawn
        accountant.spend(cost, mechanism="ldp-sample", relation=Neighbouring.LOCAL,
                         params={"bits": poly.bits, "k_v": poly.k_v, "users": rows.shape[0]})
    src, secure = resolve_rng(rng)
    n = rows.shape[0]
    out = np.empty(n, dtype=np.int64)
    block = max(1, _BLOCK_ELEMENTS // poly.k_v)
    shift = 0.0
    scale = 2.0 ** -poly.bits
    for start in range(0, n, block):
        stop = min(n, start + block)
        w = _snap(rows[start:stop], poly)
        verify_in_polytope(w, poly)
        out[start:stop] = _draw(src, w, poly.bits)
        diff = w.astype(np.float64)
        diff *= scale
        diff -= rows[start:stop]
        np.abs(diff, out=diff)
        shift = max(shift, float(diff.sum(axis=1).max()))
    return DeviceSample(indices=out, cost=cost, relation=Neighbouring.LOCAL, secure=secure,
                        bits=poly.bits, max_shift=shift)


# ---------------------------------------------------------------------------------------
# Users given by their cell (point-mass inputs)
# ---------------------------------------------------------------------------------------

#: Rows of a snapped table with at most this many entries off the row's majority value
#: are searched by segments (:class:`TableSampler`); other tables by a blocked scan.
_MAX_EXCEPTIONS = 4
#: Leading bits of ``u`` drawn first by :meth:`TableSampler.draw_cells` (k-RR-like
#: tables): they decide the index for all but about ``k_v / 2**16`` of the users.
_PREFIX_BITS = 16


class TableSampler:
    """The snapped, verified weights of a public table of laws, for exact draws by row.

    Row ``i`` of ``table`` is the law of every user whose input is row ``i`` (for a
    mechanism: its channel row :math:`M[\\delta_i]`). The rows are snapped and verified
    once (:func:`snap_to_polytope`: row-wise, so each row gets exactly the weights it
    gets in any batch of :func:`private_sample`); :meth:`draw` then returns, for a
    uniform ``u`` on ``[0, 2**b)``, ``#{j : c_j <= u}`` with ``c`` the cumulative
    weights of the user's row, which is what :func:`private_sample` computes, without
    the ``(n, k_v)`` rows.

    *Search.* When every row equals a positive value ``A`` except at a few positions
    ``p_1 < ... < p_e`` (k-RR: its own cell and the repaired one), the cumulative sums
    are ``c_j = (j + 1) A + E_s`` on the segment ``[p_s, p_{s+1})`` with
    ``E_s = sum_{t <= s} (w_{p_t} - A)``: the user's segment is the number of
    breakpoints ``c_{p_s - 1} <= u`` and the count is
    ``clip(floor((u - E_s) / A), p_s, p_{s+1})``, in integers (a few vector operations
    per user). Otherwise: a scan of the cumulative rows, by blocks.

    Parameters
    ----------
    table : (r, k_v) array
        Laws (entries in ``[0, 1]``, rows summing to 1 within :data:`NU_ATOL`).
    polytope : GridPolytope
    """

    def __init__(self, table: object, polytope: GridPolytope) -> None:
        rows = _check_nu(table, polytope.k_v)
        w = _snap(rows, polytope)
        verify_in_polytope(w, polytope)
        self.polytope = polytope
        self.weights = w
        self.cumulative = np.cumsum(w, axis=1)  # <= 2**b: exact
        diff = w.astype(np.float64) * 2.0 ** -polytope.bits
        diff -= rows
        self.shift = np.abs(diff).sum(axis=1)  # per row, as private_sample's max_shift
        self._segments = self._build_segments()
        self._prefix = self._build_prefix()
        for arr in (self.weights, self.cumulative, self.shift):
            arr.setflags(write=False)

    def _build_segments(self) -> tuple[np.ndarray, ...] | None:
        w, cs = self.weights, self.cumulative
        r, k_v = w.shape
        base = np.sort(w, axis=1)[:, k_v // 2]  # the majority value, where there is one
        off = w != base[:, None]
        e = int(off.sum(axis=1).max(initial=0))
        if e > _MAX_EXCEPTIONS or np.any(base <= 0) or e == 0:
            return None
        pos = np.argsort(~off, axis=1, kind="stable")[:, :e]  # exceptions, in order
        real = np.take_along_axis(off, pos, axis=1)
        pos = np.where(real, pos, k_v)
        dev = np.where(real, np.take_along_axis(w, np.minimum(pos, k_v - 1), axis=1)
                       - base[:, None], 0)
        ecum = np.concatenate([np.zeros((r, 1), np.int64), np.cumsum(dev, axis=1)], axis=1)
        before = np.take_along_axis(cs, np.clip(pos - 1, 0, k_v - 1), axis=1)
        brk = np.where(pos == 0, 0, np.where(real, before, np.int64(self.polytope.total)))
        lo = np.concatenate([np.zeros((r, 1), np.int64), pos], axis=1)
        hi = np.concatenate([pos, np.full((r, 1), k_v, np.int64)], axis=1)
        return (base, np.ascontiguousarray(brk.T), ecum.ravel(), lo.ravel(), hi.ravel())

    def _build_prefix(self) -> tuple | None:
        """Tables over the ``2**16`` prefixes ``h`` of ``u`` for rows equal to ``A`` but
        at one position ``p`` (``A + D`` there; the same ``A`` and ``D`` in every row, as
        k-RR and KPM on Dirac inputs). With ``J(x) = floor(x / A)`` the index of ``u`` is
        ``J(u)`` if ``J(u) < p``, else ``max(p, J(u - D))`` (``c_j = (j + 1) A`` before
        ``p``, ``(j + 1) A + D`` from it); it is non-decreasing in ``u``, so it is decided
        by ``h`` when it is the same at both ends of ``[h 2**r, (h + 1) 2**r)``."""
        seg, bits = self._segments, self.polytope.bits
        if seg is None or seg[1].shape[0] != 1 or bits <= _PREFIX_BITS:
            return None
        base, _, ecum, lo, _ = seg
        dev = ecum.reshape(base.size, 2)[:, 1]
        pos = lo.reshape(base.size, 2)[:, 1]
        k_v = self.polytope.k_v
        if np.any(base != base[0]) or np.any(dev != dev[0]) or np.any(pos >= k_v):
            return None
        a, d, rest = int(base[0]), int(dev[0]), bits - _PREFIX_BITS
        first = np.arange(1 << _PREFIX_BITS, dtype=np.int64) << rest
        last = first + ((1 << rest) - 1)
        small = np.int16 if k_v < 2**15 else np.int64  # small tables stay in the caches
        j_first, jd_first = first // a, np.maximum((first - d) // a, -1)
        # the prefixes where J(u) or J(u - D) is not constant: only there may the index
        # depend on the other bits
        moves = (j_first != last // a) | (jd_first != np.maximum((last - d) // a, -1))
        return (a, d, rest, pos.astype(small), j_first.astype(small),
                jd_first.astype(small), moves)

    def draw_cells(self, src: BitSource, cells: np.ndarray) -> np.ndarray:
        """``(n,)`` int64: one exact draw per user from its row ``cells[i]``.

        Tables of the k-RR form (:meth:`_build_prefix`): the first 16 bits ``h`` of each
        user's uniform ``u`` on ``[0, 2**b)``, then the other ``b - 16`` bits only for the
        users whose prefix may leave the index open (``J`` or ``J(. - D)`` not constant
        on it: about ``2 * 2**(b-16) / A`` of them). ``u = h 2**(b-16) + l`` with ``h``
        and ``l`` independent and uniform is uniform, and the index is the same function
        of ``u`` as in :func:`private_sample`: the law is exactly ``w / 2**b`` (the words
        drawn differ). Other tables: one word per user, ``u`` as in
        :func:`private_sample` (the same indices from the same bit source).
        """
        if self._prefix is None:
            return self.draw(src.uniform_below(self.polytope.total, cells.size), cells)
        a, d, rest, pos, j_first, jd_first, moves = self._prefix
        h = src.bits(cells.size, _PREFIX_BITS)
        p = pos[cells]
        j = j_first[h]
        out = np.where(j < p, j, np.maximum(p, jd_first[h])).astype(np.int64)
        left = np.flatnonzero(moves[h])
        if left.size:  # the rest of their u, and the index from all of it
            u = h[left] << rest
            u |= src.bits(left.size, rest)
            pl = p[left].astype(np.int64)
            jl = u // a
            out[left] = np.where(jl < pl, jl, np.maximum(pl, (u - d) // a))
        return out

    def draw(self, u: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """``(n,)`` int64: ``#{j : c_{cells[i], j} <= u[i]}`` per user (exact integers)."""
        if self._segments is None:
            out = np.empty(cells.size, dtype=np.int64)
            step = max(1, _BLOCK_ELEMENTS // self.polytope.k_v)
            for a in range(0, cells.size, step):
                cs = self.cumulative[cells[a:a + step]]
                out[a:a + step] = np.count_nonzero(cs <= u[a:a + step, None], axis=1)
            return out
        base, brk, ecum, lo, hi = self._segments
        seg = np.zeros(cells.size, dtype=np.int64)
        for b in brk:  # breakpoints at or below u: the user's segment
            seg += b[cells] <= u
        key = cells * (brk.shape[0] + 1)
        key += seg
        j = u - ecum[key]
        j //= base[cells]
        return np.clip(j, lo[key], hi[key], out=j)


def _check_cells(cells: object, r: int) -> np.ndarray:
    arr = np.asarray(cells)
    if arr.ndim != 1 or arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidDataError(
            f"cells must be a 1-D integer array (one input cell per user), got dtype "
            f"{arr.dtype} shape {arr.shape}")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= r):
        raise InvalidDataError(
            f"cells must be in [0, {r}) (the input points); got range "
            f"[{int(arr.min())}, {int(arr.max())}]")
    return arr.astype(np.int64, copy=False)


def private_sample_cells(sampler: TableSampler, cells: object, *,
                         rng: np.random.Generator | BitSource | int | None = None,
                         accountant: Spender | None = None) -> DeviceSample:
    """One eps-LDP sample per user whose law is the row ``cells[u]`` of a public table:
    exactly the law of :func:`private_sample` of ``table[cells]`` (the same certified
    weights, drawn exactly), without those rows. From the same bit source, the same
    indices too, except for tables of the k-RR form, whose draws read 16 bits per user
    first (:meth:`TableSampler.draw_cells`: the same law, a fourth of the entropy).

    Parameters
    ----------
    sampler : TableSampler
        The snapped table (public; e.g. a mechanism's channel).
    cells : (n,) int array
        Each user's row (its input cell), in ``[0, r)``.
    rng, accountant
        As in :func:`private_sample` (charged ``epsilon`` once, before any draw).

    Returns
    -------
    DeviceSample

    Privacy
    -------
    As :func:`private_sample`: each user's law is a snapped row, verified on the
    integers in the certified grid polytope, drawn exactly. Pure eps-LDP per user.
    """
    rng = check_rng(rng)
    check_spender(accountant)
    if not isinstance(sampler, TableSampler):
        raise InvalidParameterError("sampler", sampler, "a TableSampler")
    poly = sampler.polytope
    idx = _check_cells(cells, sampler.weights.shape[0])
    cost = PrivacyCost(poly.epsilon)
    if accountant is not None:  # once, before anything is drawn
        accountant.spend(cost, mechanism="ldp-sample", relation=Neighbouring.LOCAL,
                         params={"bits": poly.bits, "k_v": poly.k_v, "users": idx.size})
    src, secure = resolve_rng(rng)
    out = sampler.draw_cells(src, idx)
    if not idx.size:
        shift = 0.0
    elif sampler.shift.min() == sampler.shift.max():  # k-RR: every row moves alike
        shift = float(sampler.shift[0])
    else:  # the rows of the users present, as private_sample's maximum over its rows
        shift = float(sampler.shift[np.bincount(idx, minlength=sampler.shift.size) > 0].max())
    return DeviceSample(indices=out, cost=cost, relation=Neighbouring.LOCAL, secure=secure,
                        bits=poly.bits, max_shift=shift)


# ---------------------------------------------------------------------------------------
# Exact audit helpers
# ---------------------------------------------------------------------------------------


def max_likelihood_ratio(channel: np.ndarray, total_bits: int) -> Fraction | float:
    """The exact worst-case likelihood ratio of a channel given by integer weights.

    Parameters
    ----------
    channel : (n_inputs, k_v) integer array
        One row per input (e.g. the snapped laws of the Dirac inputs, the worst case
        for a convex polytope mechanism), each summing to ``2**total_bits``.
    total_bits : int

    Returns
    -------
    Fraction or math.inf
        :math:`\\max_j \\max_{a,b} w_{aj} / w_{bj}` as an exact fraction (1 for a single
        row); ``math.inf`` when some output has weight 0 under one input and not under
        another (no finite epsilon).
    """
    w = np.asarray(channel)
    if w.ndim != 2 or not np.issubdtype(w.dtype, np.integer) or w.shape[1] == 0:
        raise InvalidDataError(
            f"channel must be an integer (n_inputs, k_v) array, got dtype {w.dtype} shape "
            f"{w.shape}")
    b = check_int(total_bits, "total_bits", minimum=0, maximum=MAX_BITS)
    if w.size and int(w.min()) < 0:
        raise InvalidDataError("channel weights must be non-negative")
    sums = [sum(int(v) for v in row) for row in w]
    if any(s != 1 << b for s in sums):
        raise InvalidDataError(f"every channel row must sum to exactly 2^{b}")
    best = Fraction(1)
    for j in range(w.shape[1]):
        col = [int(v) for v in w[:, j]]
        hi, lo = max(col), min(col)
        if hi == 0:
            continue
        if lo == 0:
            return math.inf
        best = max(best, Fraction(hi, lo))
    return best


def ratio_at_most_exp(ratio: Fraction | int | float, epsilon: float) -> bool:
    """Certified ``ratio <= e^epsilon`` for an exact rational ``ratio``.

    ``e^epsilon`` is irrational for a rational ``epsilon != 0``, so the comparison is
    never a tie; bounds are refined until they decide it.
    """
    eps = check_epsilon(epsilon)
    if isinstance(ratio, float) and math.isinf(ratio):
        return False
    r = Fraction(ratio)
    x = Fraction(eps)
    prec = 64
    while prec <= 1 << 16:
        lo, hi = _exp_bounds(x, prec)
        if r <= lo:
            return True
        if r >= hi:
            return False
        prec *= 4
    raise ConvergenceError("ratio_at_most_exp: the ratio is within 2^-65536 of e^epsilon")
