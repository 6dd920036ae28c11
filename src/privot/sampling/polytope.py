"""The LDP polytope ``Q_{m, eps}`` and the KL projection onto it (paper 003).

For a base measure :math:`m \\in \\mathbb{R}_+^{k_v}` and :math:`\\varepsilon > 0`
(Def. 2.2, finite case)

.. math::

    Q_{m,\\varepsilon} = \\{\\nu \\in \\Delta_{k_v} :
        \\ell_j \\le \\nu_j \\le u_j\\}, \\qquad
    \\ell = e^{-\\varepsilon/2} m,\\quad u = e^{\\varepsilon/2} m,

non-empty iff :math:`\\sum_j \\ell_j \\le 1 \\le \\sum_j u_j`. Any mechanism whose output
distributions all lie in :math:`Q_{m,\\varepsilon}` is :math:`\\varepsilon`-LDP
(Prop. 3.2, Lemma B.1).

The KL projection of a positive vector :math:`s` (Lemma 4.2, App. J)

.. math::

    q^\\star = \\operatorname*{arg\\,min}_{q \\in Q_{m,\\varepsilon}}
        \\sum_j q_j \\log(q_j / s_j), \\qquad
    q^\\star_j = \\operatorname{clip}(e^{\\theta} s_j, \\ell_j, u_j),
    \\quad \\sum_j q^\\star_j = 1,

is computed **exactly**: :math:`\\psi(\\theta) = \\sum_j \\operatorname{clip}(e^\\theta
s_j, \\ell_j, u_j)` is continuous and non-decreasing with breakpoints
:math:`a_j = \\log(\\ell_j / s_j) < b_j = \\log(u_j / s_j)`; between two consecutive
breakpoints every coordinate has a fixed status (at its lower bound, at its upper bound
or free) and :math:`\\psi(\\theta) = L + U + e^\\theta S` with :math:`L, U` the sums of
the clipped bounds and :math:`S` the sum of the free :math:`s_j`, so
:math:`\\theta = \\log(1 - L - U) - \\log S` on the segment where :math:`\\psi` crosses 1.
The segment is located by sorting the :math:`2k_v` breakpoints of each row
(:math:`O(k_v \\log k_v)`, vectorised over rows with cumulative sums); the guess is
*verified* (the solved :math:`\\theta` must lie in the guessed segment, or the clipped
vector must sum to 1 within :data:`SUM_ATOL`) and moved to the neighbouring segment
otherwise (a bisection polished by the same solve is the last resort, for rows that
keep failing). Inside an iterative solver, the statuses are first read at the previous
:math:`\\theta` (warm start, :math:`O(k_v)`, accepted when the clipped vector sums to 1
within :data:`SUM_ATOL`); only rows whose statuses changed are sorted. Everything is
done on :math:`\\log s`, so ``s`` may span any range of magnitudes (the entropic solver
passes :math:`\\log s` directly). The paper's scalar bisection
(:func:`kl_projection_bisection`) is kept as a slow oracle.

Conventions for degenerate coordinates: :math:`s_j = 0` gives :math:`q_j = \\ell_j`
(the limit of the projection as :math:`s_j \\to 0^+` when the other coordinates can
absorb the rest); :math:`m_j = 0` gives :math:`q_j = 0`.

Privacy
-------
No release happens here: these are the deterministic maps that keep a mechanism's
output inside :math:`Q_{m,\\varepsilon}`; ``m`` and ``epsilon`` are public. The
guarantee (pure :math:`\\varepsilon`-LDP for one sample of a user's distribution)
belongs to the mechanisms, ``docs/privacy/`` (paper 003, Prop. 3.2).
"""

from __future__ import annotations

import math

import numpy as np

from privot._validation import check_finite_array, check_int, check_nonnegative
from privot.errors import ConvergenceError, InvalidDataError
from privot.sampling._checks import check_base_measure

__all__ = [
    "SUM_ATOL",
    "polytope_bounds",
    "kl_projection",
    "kl_projection_bisection",
    "in_polytope",
]

#: A projected row is accepted when its entries sum to 1 within this tolerance (it is
#: then the exact projection for a total of ``1 +- SUM_ATOL``); rounding gives ~1e-16.
SUM_ATOL = 1e-13

#: Relative tolerance (in ``theta``, i.e. in log scale) of the segment test.
_THETA_RTOL = 1e-14

#: Moves to a neighbouring segment tried before falling back to bisection.
_MAX_MOVES = 8


# ----------------------------------------------------------------------------- public API

def polytope_bounds(base_measure: object, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of the LDP polytope (Def. 2.2).

    Parameters
    ----------
    base_measure : (k_v,) array_like
        Base measure :math:`m \\ge 0` with a non-empty polytope
        (:math:`e^{-\\varepsilon/2} \\le \\sum_j m_j \\le e^{\\varepsilon/2}`).
    epsilon : float
        Privacy parameter :math:`\\varepsilon > 0`.

    Returns
    -------
    lower, upper : (k_v,) arrays
        :math:`\\ell = e^{-\\varepsilon/2} m` and :math:`u = e^{\\varepsilon/2} m`.

    Raises
    ------
    InvalidParameterError
        ``epsilon <= 0`` or an empty polytope (names ``sum(base_measure)``).
    InvalidDataError
        ``base_measure`` negative, non-finite or not 1-D.
    """
    m = check_base_measure(base_measure, epsilon)
    eps = float(epsilon)
    return math.exp(-eps / 2) * m, math.exp(eps / 2) * m


def kl_projection(s: object, base_measure: object, epsilon: float) -> np.ndarray:
    """Exact KL projection onto :math:`Q_{m,\\varepsilon}` (Lemma 4.2), batched.

    .. math::

        q^\\star = \\operatorname*{arg\\,min}_{q \\in Q_{m,\\varepsilon}}
            \\mathrm{KL}(q \\,\\|\\, s), \\qquad
        q^\\star_j = \\min\\{\\max\\{e^\\theta s_j, e^{-\\varepsilon/2} m_j\\},
            e^{\\varepsilon/2} m_j\\},

    with :math:`\\theta` solved exactly per row (sorted breakpoints, see the module
    docstring), not by bisection.

    Parameters
    ----------
    s : (k_v,) or (n, k_v) array_like
        Non-negative finite vectors (need not sum to 1). ``s_j = 0`` gives
        ``q_j = lower_j``.
    base_measure : (k_v,) array_like
        Base measure :math:`m` (non-empty polytope).
    epsilon : float
        Privacy parameter :math:`\\varepsilon > 0`.

    Returns
    -------
    q : array, same shape as ``s``
        Rows in :math:`Q_{m,\\varepsilon}`: bounds hold exactly (they are clipped),
        each row sums to 1 within :data:`SUM_ATOL` (rounding, ~1e-16, in practice).

    Raises
    ------
    InvalidDataError
        ``s`` negative, non-finite or of the wrong shape; a row whose zeros leave too
        little room (:math:`\\sum_{s_j > 0} u_j + \\sum_{s_j = 0} \\ell_j < 1`: no
        finite-KL point of the polytope, e.g. ``s = 0``).
    InvalidParameterError
        ``epsilon <= 0`` or an empty polytope.
    """
    rows, single, lower, upper = _prepare(s, base_measure, epsilon)
    with np.errstate(divide="ignore"):
        log_s = np.log(rows)
    log_q, _ = project_log(log_s, lower, upper)
    q = np.clip(np.exp(log_q), lower, upper)  # exp(log l) may miss l by an ulp
    return q[0] if single else q


def kl_projection_bisection(s: object, base_measure: object, epsilon: float, *,
                            max_iter: int = 200, tol: float = 0.0) -> np.ndarray:
    """KL projection by scalar bisection on :math:`\\theta` (the paper's method, Alg. 1 l. 8).

    A slow oracle for :func:`kl_projection`: bisect
    :math:`\\psi(\\theta) = \\sum_j \\operatorname{clip}(e^{\\theta} s_j, \\ell_j, u_j) = 1`
    on the bracket :math:`[\\min_j a_j, \\max_j b_j]` of the breakpoints (where
    :math:`\\psi` goes from :math:`\\sum \\ell \\le 1` to :math:`\\sum u \\ge 1`), all rows
    at once, until the bracket is ``tol`` wide (in :math:`\\theta`) or stops shrinking
    in floating point, or ``max_iter`` halvings.

    Parameters
    ----------
    s, base_measure, epsilon
        As in :func:`kl_projection`.
    max_iter : int, default 200
        Maximum number of halvings.
    tol : float, default 0
        Width of the bracket in :math:`\\theta` at which to stop (0: until floating
        point stops it).

    Returns
    -------
    q : array, same shape as ``s``
        Clipped at the midpoint of the final bracket (sums to 1 up to the bracket width).
    """
    it = check_int(max_iter, "max_iter", minimum=1)
    width = check_nonnegative(tol, "tol")
    rows, single, lower, upper = _prepare(s, base_measure, epsilon)
    with np.errstate(divide="ignore"):
        log_s = np.log(rows)
    bp = _Breakpoints(log_s, lower, upper)
    theta = _bisect(bp, np.arange(log_s.shape[0]), it, width)
    q = np.clip(np.exp(bp.log_q(theta, np.arange(log_s.shape[0]))), lower, upper)
    return q[0] if single else q


def in_polytope(nu: object, base_measure: object, epsilon: float, *,
                atol: float = 1e-12) -> bool | np.ndarray:
    """Whether distributions lie in :math:`Q_{m,\\varepsilon}` (float check, tolerance ``atol``).

    A row passes when :math:`\\ell_j - \\text{atol} \\le \\nu_j \\le u_j + \\text{atol}`
    for every ``j`` and :math:`|\\sum_j \\nu_j - 1| \\le \\text{atol}`. This is a
    floating-point diagnostic, not a privacy proof (exact checks are done on rationals
    elsewhere).

    Parameters
    ----------
    nu : (k_v,) or (n, k_v) array_like
    base_measure : (k_v,) array_like
    epsilon : float
    atol : float, default 1e-12

    Returns
    -------
    bool or (n,) bool array
        One flag per row (a plain ``bool`` for a single ``(k_v,)`` input).
    """
    tol = check_nonnegative(atol, "atol")
    lower, upper = polytope_bounds(base_measure, epsilon)
    arr = check_finite_array(nu, "nu")
    rows = arr[None, :] if arr.ndim == 1 else arr
    if rows.ndim != 2 or rows.shape[1] != lower.size:
        raise InvalidDataError(
            f"nu must have shape (k_v,) or (n, k_v) with k_v = {lower.size}, got {arr.shape}")
    ok = (np.all(rows >= lower - tol, axis=1) & np.all(rows <= upper + tol, axis=1)
          & (np.abs(rows.sum(axis=1) - 1.0) <= tol))
    return bool(ok[0]) if arr.ndim == 1 else ok


# ----------------------------------------------------------------------------- internals

def _prepare(s: object, base_measure: object, epsilon: float):
    lower, upper = polytope_bounds(base_measure, epsilon)
    arr = check_finite_array(s, "s")
    single = arr.ndim == 1
    rows = arr[None, :] if single else arr
    if rows.ndim != 2 or rows.shape[1] != lower.size:
        raise InvalidDataError(
            f"s must have shape (k_v,) or (n, k_v) with k_v = {lower.size} (length of "
            f"base_measure), got shape {arr.shape}")
    if np.any(rows < 0):
        i = tuple(int(v) for v in np.argwhere(rows < 0)[0])
        raise InvalidDataError(f"s must be non-negative; entry {i} is {rows[i]!r}")
    return rows, single, lower, upper


class _Breakpoints:
    """Breakpoints :math:`a_j = \\log\\ell_j - \\log s_j`, :math:`b_j = \\log u_j - \\log s_j`.

    Degenerate coordinates (``m_j = 0`` or ``s_j = 0``) are fixed at their lower bound
    (``a_j = b_j = +inf``): ``q_j = l_j`` (0 when ``m_j = 0``).
    """

    def __init__(self, log_s: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        with np.errstate(divide="ignore"):
            self.log_l = np.log(lower)
            self.log_u = np.log(upper)
        self.lower = lower
        self.upper = upper
        self.log_s = log_s
        deg = (lower <= 0)[None, :] | np.isneginf(log_s)
        with np.errstate(invalid="ignore"):
            self.a = np.where(deg, np.inf, self.log_l[None, :] - log_s)
            self.b = np.where(deg, np.inf, self.log_u[None, :] - log_s)
        # the largest total a row can reach (Lemma 4.2 needs psi(+inf) >= 1)
        cap = np.where(deg, lower[None, :], upper[None, :]).sum(axis=1)
        bad = np.flatnonzero(cap < 1.0 - SUM_ATOL)
        if bad.size:
            r = int(bad[0])
            raise InvalidDataError(
                f"s has too many zeros: in row {r} the entries with s_j > 0 can carry at "
                f"most {float(cap[r])!r} < 1 of mass within the polytope (KL(q || s) is "
                "infinite for every q in it)")

    def log_q(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:math:`\\log q_j = \\mathrm{clip}(\\theta + \\log s_j, \\log\\ell_j, \\log u_j)`."""
        z = theta[:, None] + self.log_s[rows]
        deg = np.isposinf(self.a[rows])
        with np.errstate(invalid="ignore"):
            out = np.minimum(np.maximum(z, self.log_l[None, :]), self.log_u[None, :])
        return np.where(deg, self.log_l[None, :], out)

    def psi(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.exp(self.log_q(theta, rows)).sum(axis=1)


def _solve_status(bp: _Breakpoints, rows: np.ndarray, at_lower: np.ndarray,
                  at_upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve :math:`L + U + e^\\theta S = 1` for fixed statuses and verify them.

    Returns ``theta``, ``ok`` (the statuses are those of ``theta``, or the clipped
    vector sums to 1 within :data:`SUM_ATOL`) and ``direction`` (+1: the root is to
    the right of the guessed segment, -1: to the left, 0: accepted).
    """
    free = ~(at_lower | at_upper)
    a, b, log_s = bp.a[rows], bp.b[rows], bp.log_s[rows]
    big_l = np.where(at_lower, bp.lower[None, :], 0.0).sum(axis=1)
    big_u = np.where(at_upper, bp.upper[None, :], 0.0).sum(axis=1)
    rhs = 1.0 - big_l - big_u
    log_big_s = _masked_logsumexp(log_s, free)
    lo = np.maximum(np.where(free, a, -np.inf).max(axis=1),
                    np.where(at_upper, b, -np.inf).max(axis=1))
    hi = np.minimum(np.where(at_lower, a, np.inf).min(axis=1),
                    np.where(free, b, np.inf).min(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(rhs > 0, np.log(np.maximum(rhs, 0.0)) - log_big_s, -np.inf)
    no_free = np.isneginf(log_big_s)
    flat = no_free & (np.abs(rhs) <= SUM_ATOL)  # psi == 1 on the whole segment
    anywhere = np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0))
    theta = np.where(flat, anywhere, np.where(no_free & (rhs > 0), np.inf, theta))
    scale = 1.0 + np.where(np.isfinite(lo), np.abs(lo), 0.0) \
        + np.where(np.isfinite(hi), np.abs(hi), 0.0)
    slack = _THETA_RTOL * scale
    right = theta > hi + slack
    left = theta < lo - slack
    ok = ~right & ~left
    check = ~ok & np.isfinite(theta)
    if np.any(check):  # near a breakpoint: accept if the clipped vector sums to 1
        ok[check] = np.abs(bp.psi(theta[check], rows[check]) - 1.0) <= SUM_ATOL
    direction = np.where(ok, 0, np.where(right, 1, -1))
    return theta, ok, direction


def _masked_logsumexp(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, x, -np.inf)
    top = z.max(axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return shift + np.log(np.exp(z - shift[:, None]).sum(axis=1))


def _status_at(bp: _Breakpoints, rows: np.ndarray, theta: np.ndarray):
    at_lower = bp.a[rows] >= theta[:, None]
    at_upper = (bp.b[rows] <= theta[:, None]) & ~at_lower
    return at_lower, at_upper


def _sorted_guess(bp: _Breakpoints, rows: np.ndarray):
    """Locate the crossing segment from the sorted breakpoints (cumulative sums).

    Returns ``pos`` (rank of each of the ``2 k_v`` breakpoints in its row), the sorted
    breakpoints ``t`` and ``r``: the number of breakpoints strictly left of the guessed
    segment, always the start of a group of tied breakpoints (so that the statuses of
    the open segment ``(t[r-1], t[r])`` are read off ``pos < r``).
    """
    a, b, log_s = bp.a[rows], bp.b[rows], bp.log_s[rows]
    points = np.concatenate([a, b], axis=1)  # (r, 2 k_v)
    order = np.argsort(points, axis=1)
    t = np.take_along_axis(points, order, axis=1)
    deg = np.isposinf(a)
    top = np.where(deg, -np.inf, log_s).max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore"):
        s_scaled = np.where(deg, 0.0, np.exp(log_s - top[:, None]))
    # passing a_j: -l_j to L, +s_j to S; passing b_j: +u_j to U, -s_j to S
    d_lu = np.broadcast_to(np.concatenate([-bp.lower, bp.upper]), points.shape)
    d_lu = np.take_along_axis(d_lu, order, axis=1)
    d_s = np.take_along_axis(np.concatenate([s_scaled, -s_scaled], axis=1), order, axis=1)
    # psi at each breakpoint t_r, with breakpoints 0..r passed (continuity: a tied
    # breakpoint gives the same value passed or not)
    big_lu = np.cumsum(d_lu, axis=1)
    big_lu += bp.lower.sum()
    big_s = np.cumsum(d_s, axis=1)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        psi = big_lu + np.where(big_s > 0, np.exp(t + top[:, None]) * big_s, 0.0)
    psi[np.isposinf(t)] = np.inf
    reached = psi >= 1.0
    first = np.where(reached.any(axis=1), reached.argmax(axis=1), points.shape[1])
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(points.shape[1])[None, :], axis=1)
    return pos, t, _group_start(t, first)


def _group_start(t: np.ndarray, r: np.ndarray) -> np.ndarray:
    """First index of the group of breakpoints tied with ``t[r]`` (``r = len``: itself)."""
    width = t.shape[1]
    at = np.take_along_axis(t, np.minimum(r, width - 1)[:, None], axis=1)
    start = (t < at).sum(axis=1)
    return np.where(r >= width, width, start)


def _move(t: np.ndarray, r: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Start of the next (``+1``) or previous (``-1``) group of tied breakpoints."""
    width = t.shape[1]
    at = np.take_along_axis(t, np.minimum(r, width - 1)[:, None], axis=1)
    nxt = np.where(r >= width, width, (t <= at).sum(axis=1))
    prev = _group_start(t, np.maximum(r - 1, 0))
    return np.where(direction > 0, nxt, np.where(direction < 0, prev, r))


def _status_from_position(pos: np.ndarray, r: np.ndarray, k_v: int):
    passed = pos < r[:, None]
    a_passed, b_passed = passed[:, :k_v], passed[:, k_v:]
    at_upper = b_passed
    at_lower = ~a_passed & ~b_passed
    return at_lower, at_upper


def _bisect(bp: _Breakpoints, rows: np.ndarray, max_iter: int, width: float) -> np.ndarray:
    a, b = bp.a[rows], bp.b[rows]
    finite = np.isfinite(a)
    lo = np.where(finite, a, np.inf).min(axis=1)
    hi = np.where(finite, b, -np.inf).max(axis=1)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, 0.0)
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        active = (mid > lo) & (mid < hi) & (hi - lo > width)
        if not np.any(active):
            break
        below = bp.psi(mid, rows) < 1.0
        lo = np.where(active & below, mid, lo)
        hi = np.where(active & ~below, mid, hi)
    return 0.5 * (lo + hi)


def project_log(log_s: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact KL projection on logs, for solvers (unvalidated inputs).

    Parameters
    ----------
    log_s : (n, k_v) array
        :math:`\\log s` (``-inf`` for ``s_j = 0``; no NaN, no ``+inf``).
    lower, upper : (k_v,) arrays
        Polytope bounds (:func:`polytope_bounds`).
    theta0 : (n,) array, optional
        Warm start (the previous :math:`\\theta` of each row; NaN/inf read as 0): the
        statuses at ``theta0`` are tried first, in :math:`O(k_v)`; rows where they are
        not those of the solution are solved from sorted breakpoints.

    Returns
    -------
    log_q : (n, k_v) array
        :math:`\\log q^\\star` (``-inf`` where ``m_j = 0``).
    theta : (n,) array
        The multiplier :math:`\\theta` of each row.

    Raises
    ------
    InvalidDataError
        A row with too many zeros (see :func:`kl_projection`).
    ConvergenceError
        Non-finite result (cannot happen for valid input; a loud guard).
    """
    n = log_s.shape[0]
    theta = np.zeros(n)
    log_q = np.empty(log_s.shape)
    todo = np.arange(n)
    if theta0 is not None and n:
        ok, th, lq = _warm(log_s, lower, upper, np.where(np.isfinite(theta0), theta0, 0.0))
        theta[ok], log_q[ok] = th[ok], lq[ok]
        todo = todo[~ok]
    if todo.size:
        bp = _Breakpoints(log_s[todo], lower, upper)
        sub = np.zeros(todo.size)
        rest = _solve_sorted(bp, np.arange(todo.size), sub)
        if rest.size:  # guesses kept failing (ties at the crossing): bisect, then polish
            mid = _bisect(bp, rest, 200, 0.0)
            at_lower, at_upper = _status_at(bp, rest, mid)
            th, ok, _ = _solve_status(bp, rest, at_lower, at_upper)
            sub[rest] = np.where(ok, th, mid)
        theta[todo] = sub
        log_q[todo] = bp.log_q(sub, np.arange(todo.size))
    if np.any(np.isnan(log_q)) or np.any(np.isposinf(log_q)):
        raise ConvergenceError("KL projection onto the LDP polytope produced NaN/inf")
    return log_q, theta


def _warm(log_s: np.ndarray, lower: np.ndarray, upper: np.ndarray, theta0: np.ndarray):
    """Statuses read at ``theta0``, solved and checked in :math:`O(k_v)` per row.

    With :math:`z = \\theta_0 + \\log s`: lower where :math:`z \\le \\log\\ell`, upper where
    :math:`z \\ge \\log u`, free otherwise; :math:`e^{\\theta - \\theta_0} = (1 - L - U) /
    \\sum_{free} e^{z_j}`. A row is accepted when the clipped vector sums to 1 within
    :data:`SUM_ATOL` (then it is the projection); others go to the sorted solve.
    """
    with np.errstate(divide="ignore"):
        log_l, log_u = np.log(lower), np.log(upper)
    z = theta0[:, None] + log_s
    at_lower = z <= log_l
    at_upper = z >= log_u
    # row-wise sums (not a matrix product, whose rounding may depend on the number of
    # rows): each row's result is the same whatever rows are solved with it
    rhs = (1.0 - np.where(at_lower, lower, 0.0).sum(axis=1)
           - np.where(at_upper & ~at_lower, upper, 0.0).sum(axis=1))
    with np.errstate(over="ignore", under="ignore"):
        free_sum = np.where(at_lower | at_upper, 0.0, np.exp(z)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(np.where(free_sum > 0, rhs / free_sum, 1.0))
    shift = np.where(np.isnan(shift), -np.inf, shift)
    log_q = np.minimum(np.maximum(z + shift[:, None], log_l), log_u)
    with np.errstate(under="ignore"):
        total = np.exp(log_q).sum(axis=1)
    ok = (np.abs(total - 1.0) <= SUM_ATOL) & np.isfinite(shift)
    return ok, theta0 + np.where(np.isfinite(shift), shift, 0.0), log_q


def _solve_sorted(bp: _Breakpoints, todo: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Sorted-breakpoint solve with verified moves; returns the rows still unsolved."""
    k_v = bp.a.shape[1]
    pos, t, r = _sorted_guess(bp, todo)
    tried_left = np.zeros(todo.size, dtype=bool)
    tried_right = np.zeros(todo.size, dtype=bool)
    failed = []
    for _ in range(_MAX_MOVES):
        at_lower, at_upper = _status_from_position(pos, r, k_v)
        th, ok, direction = _solve_status(bp, todo, at_lower, at_upper)
        theta[todo[ok]] = th[ok]
        # a row that would move back and forth between two segments, or off the end
        stuck = ~ok & (((direction > 0) & (tried_left | (r >= 2 * k_v)))
                       | ((direction < 0) & (tried_right | (r <= 0))))
        failed.append(todo[stuck])
        keep = ~ok & ~stuck
        tried_right = (tried_right | (direction > 0))[keep]
        tried_left = (tried_left | (direction < 0))[keep]
        r = _move(t[keep], r[keep], direction[keep])
        todo, pos, t = todo[keep], pos[keep], t[keep]
        if not todo.size:
            break
    failed.append(todo)
    return np.concatenate(failed)
