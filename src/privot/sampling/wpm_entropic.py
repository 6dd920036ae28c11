"""Entropic Wasserstein Projection Mechanism: Algorithm 1 of paper 003, batched.

The entropic projection (Sec. 4, Lemma 4.2)

.. math::

    \\nu^\\lambda = \\mathcal{M}^\\lambda_{m,\\varepsilon}[\\mu]
    = \\operatorname*{arg\\,min}_{\\nu \\in Q_{m,\\varepsilon}} \\mathrm{OT}_\\lambda(\\nu, \\mu),
    \\qquad
    \\mathrm{OT}_\\lambda(\\nu, \\mu) = \\min_{\\pi \\in \\Pi(\\mu, \\nu)}
        \\sum_{ij} C_{ij}\\pi_{ij} + \\lambda \\sum_{ij} \\pi_{ij}\\log\\pi_{ij},

is the KL projection of the Gibbs kernel :math:`K = e^{-C/\\lambda}` onto
:math:`R_\\mu \\cap R_{m,\\varepsilon}`, computed by the alternating projections of
Algorithm 1 (the normalisation :math:`Z_\\lambda` cancels):

.. math::

    u = \\mu / (K v) \\ \\text{(l. 6)},\\quad s = K^T u \\ \\text{(l. 7)},\\quad
    q = \\Pi^{KL}_{Q_{m,\\varepsilon}}(s) \\ \\text{(l. 8)},\\quad
    v = q / s \\ \\text{(l. 9)}.

The plan :math:`\\pi = \\operatorname{diag}(u) K \\operatorname{diag}(v)` after l. 9 has
column sums exactly :math:`q \\in Q_{m,\\varepsilon}`; its row sums
:math:`u \\odot K v` approach :math:`\\mu` linearly (Thm 4.3). The stopping rule is
their L1 error :math:`\\sum_i |\\mu_i - u_i (Kv)_i| \\le` ``tol``, measured with the
next l. 6. Whatever the iteration count, the returned :math:`\\nu = q` lies in
:math:`Q_{m,\\varepsilon}` (l. 8 projects exactly, in both domains below). Zeros of
:math:`\\mu` give :math:`u_i = 0` and drop out (the support restriction of Thm 4.3);
outputs with :math:`m_j = 0` get :math:`q_j = v_j = 0`. The same iterates are computed
in one of two domains.

**Scaling domain** (``method="scaling"``, the default where it is safe). Plain matrix
products in float64 on :math:`K = e^{-(C - \\min C)/\\lambda} \\in [e^{-R}, 1]`,
:math:`R = (\\max C - \\min C)/\\lambda`: no exponential or logarithm per iteration.
l. 8 returns :math:`t = e^\\theta` and :math:`z = t s`; we keep :math:`v = q / z`
(Algorithm 1's :math:`v` divided by :math:`t`, which rescales :math:`u` by :math:`t`
and changes no :math:`q`). *Range bound.* Let :math:`\\rho = \\max m / \\min_{m_j>0}
m_j`, :math:`\\ell = e^{-\\varepsilon/2} m`, :math:`u = e^{\\varepsilon/2} m`, and assume
:math:`\\sum\\ell < 1 < \\sum u` (else the polytope is a point and the log domain is
used). Since :math:`s_j = \\sum_i K_{ij} u_i \\in [e^{-R}, 1] \\cdot \\sum_i u_i`, all
:math:`z_j` lie within a factor :math:`e^R` of each other; some :math:`z_j \\ge \\ell_j`
and some :math:`z_j \\le u_j` (the clipped vector sums to 1), so every
:math:`z_j \\in [e^{-R}\\ell_{\\min}, e^R u_{\\max}]` and :math:`v_j = q_j/z_j \\in
[e^{-R-\\varepsilon}/\\rho, e^{R+\\varepsilon}\\rho]`, with :math:`v_j \\ge 1` for a free or
lower coordinate, which exists. Hence :math:`(Kv)_i \\in [e^{-R}, k_v e^{R+\\varepsilon}
\\rho]`, :math:`u_i \\le e^R`, :math:`\\sum_i u_i \\ge e^{-R-\\varepsilon}/(k k_v\\rho)` and
:math:`s_j \\ge e^{-2R-\\varepsilon}/(k k_v \\rho)`: every iterate stays within
:math:`e^{\\pm B}`, :math:`B = 2R + 2\\varepsilon + \\log(k k_v \\rho)`, for every input
and every iteration (terms of a sum that underflow are below :math:`e^{-700}` times the
sum's largest term). ``"auto"`` uses the scaling domain when :math:`B \\le`
:data:`SCALING_MAX_LOG_RANGE` (680; float64 normals reach :math:`e^{\\pm 708}`): e.g.
:math:`\\lambda \\ge 0.003 \\max C` at ``k = k_v = 400``. A user whose iterate still
meets a non-finite value (a loud guard; it never happened in the tests) is redone alone
in the log domain; the other users of the chunk keep their results.

*Separable kernels.* When the cost is a sum over two grid coordinates,
:math:`C_{(a,b),(c,d)} = A_{ac} + B_{bd}` (``"sqeuclidean"``, ``"cityblock"``, or
Euclidean with ``p = 2``, on a regular grid in row-major order), :math:`K = K_A \\otimes
K_B` and a product is two small GEMMs: :math:`2(k_1 m_1 k_2 + m_1 m_2 k_2)` instead of
:math:`2 k k_v` flops per user (10x fewer on a 20 x 20 grid). It is detected from ``C``
alone (every factorisation of ``k`` and ``k_v``, checked entrywise to
:data:`SEPARABLE_RTOL`), no hint needed; ``kernel="auto"`` uses it when it is at least
4x cheaper than the dense products over the columns with :math:`m_j > 0`.

*The projection (l. 8).* Exact, warm-started: the statuses of the previous iteration
(free set :math:`F`, clipped mass :math:`c`) give :math:`t = (1 - c)/\\sum_F s_j`, which is
the root whenever they still hold; a row is accepted when its clipped vector sums to 1
within :data:`~privot.sampling.polytope.SUM_ATOL`. Other rows take safeguarded Newton
steps (:class:`_ScaledProjection`), and the few still open after
:data:`NEWTON_ROUNDS` the sorted-breakpoint solve of
:func:`~privot.sampling.polytope.project_log`. No per-iteration sort: once the
statuses settle, l. 8 is three passes over the vector.

**Log domain** (``"banded"``, ``"direct"``: small :math:`\\lambda` and degenerate
polytopes). Everything is kept as logarithms, so :math:`\\lambda = 10^{-3}\\max C` neither
underflows nor overflows; l. 8 solves :math:`\\theta` from :math:`\\log s`
(:func:`~privot.sampling.polytope.project_log`, warm-started). The kernel products are
:math:`\\log(K v)_i = \\operatorname{LSE}_j(\\log v_j - C_{ij}/\\lambda)`; ``"direct"``
materialises the ``(n, k, k_v)`` exponent (chunked by :data:`MEMORY_BUDGET`), ``"banded"``
turns it into a few BLAS products with no underflow: the kernel exponents
:math:`G = -C/\\lambda` are cut into bands of width :data:`BAND` (``K_r = e^{G - \\rho_r}``
on band ``r``, entries in :math:`(e^{-W}, 1]`), each user's vector exponents likewise
(relative to the user's own maximum), so every term lies in :math:`(e^{-2W}, 1]`;
products with the same offset are summed in linear scale and the offsets combined by a
log-sum-exp. ``"auto"`` uses ``"banded"`` while the number of band pairs is at most
:data:`MAX_BAND_PAIRS`, else ``"direct"``, decided per user (a user whose vector spans
too many bands is computed directly, alone).

Users are processed in chunks (:data:`SCALING_CHUNK` = 256 users in the scaling domain,
so a chunk's iterates stay in the CPU caches; else :data:`MEMORY_BUDGET` / (8 * 24 *
max(k, 2 k_v))), optionally on ``n_jobs`` threads (bit-identical for any ``n_jobs``),
and each user leaves its chunk as soon as it meets ``tol``.

**Users are independent.** A user's result never depends on another user's data: every
operation is either row-wise (elementwise, or a reduction along the row) or a matrix
product over the whole chunk, whose rows do not mix; and every decision is taken from
the user's own values: the warm start's acceptance, each Newton step (a row already
accepted is not stepped while others are), the refresh of the projection's statuses, the
sorted solve, the banded or direct product, and what happens on a non-finite value
(that user alone is redone in the log domain, or marked failed, ``on_failure``; no
exception leaves a user's row). What may still change a user's bits in the last place:
the chunk's size, which is public (the number of users and the chunk size fix it; BLAS
may round a product over 256 rows and over 44 rows differently), the BLAS threads
(public too: :func:`blas_threads`), and, with ``tol > 0``
(never on a release path), the chunk shrinking as other users converge. With
``tol = 0``, a user's ``nu`` is bit-identical whatever the other users of its chunk hold
(``tests/sampling/test_wpm_entropic_fast.py``; issue 23).

**Measured** (``benchmarks/bench_sampling_speed.py``, 2-core VM, load ~1, one BLAS
thread per worker, 20 x 20 grid, ``k = k_v = 400``, synthetic check-in users, ``eps = 2``,
best uniform ``m``, :math:`\\lambda = 0.01 \\max C`, 40 fixed iterations). Squared
Euclidean cost (separable): 0.46 ms per user on one thread, 0.34 ms on two (100,000 users
in 46 s / 34 s; 25 s with 20 iterations, which are as accurate for this cost), against
3.3 ms in the log domain (7-10x). Euclidean ``p = 1`` (dense): 1.26 / 0.66 ms per user
against 3.7 ms (3-5.5x). Outputs agree with the log domain to ~1e-15. The first ~10
iterations cost about twice the later ones (the projection's statuses still move);
about 40% of the rest is the two kernel products.

**Approximation error (Prop. 4.1).** For the exact entropic projection,
:math:`0 \\le W_p(\\nu^\\lambda, \\mu) - W_p(\\nu^\\star, \\mu) \\le (\\lambda \\log N)^{1/p}`
with :math:`N` the number of entries the plan can use (App. K's proof; the paper states
it as :math:`(2\\lambda\\log k)^{1/p}`, i.e. :math:`N = k k_v \\le k^2`). We report it per
user with :math:`N = |\\mathrm{supp}\\,\\mu| \\cdot |\\mathrm{supp}\\,m|`; the computed
iterate meets it up to the stopping tolerance.

Privacy
-------
Computes each user's output distribution; no randomness and no release here. The
returned ``nu`` lies in :math:`Q_{m,\\varepsilon}` for every input and every iteration
count (up to float rounding), so one sample from it is :math:`\\varepsilon`-LDP
(Prop. 3.2) with ``m``, ``epsilon``, ``cost`` and ``lam`` public. The iteration count and
``converged`` depend on the data: curator-only diagnostics; a release path passes
``tol=0`` to run a public, data-independent ``max_iter`` (``docs/privacy/``). The
domain, kernel and chunking are chosen from public parameters only; within an
iteration, the number of Newton rounds of l. 8 (and a sorted solve for a few rows)
depends on the data, as the warm start of the log-domain projection always did. Users
are independent (above): one user's data never changes another user's ``nu``, so the
per-user guarantee composes in parallel over users.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np

from privot._threads import blas_limit
from privot._validation import check_int, check_nonnegative
from privot.errors import ConvergenceError, InvalidParameterError
from privot.sampling._checks import (
    check_base_measure,
    check_cost,
    check_distributions,
    check_order,
    check_regularization,
)
from privot.sampling.polytope import SUM_ATOL, polytope_bounds, project_log

__all__ = [
    "BAND",
    "BLAS_THREAD_WORK",
    "ENTROPIC_KERNELS",
    "ENTROPIC_METHODS",
    "MAX_BAND_PAIRS",
    "MEMORY_BUDGET",
    "NEWTON_ROUNDS",
    "SCALING_CHUNK",
    "SCALING_MAX_LOG_RANGE",
    "SEPARABLE_RTOL",
    "WPMEntropicResult",
    "blas_threads",
    "wpm_entropic",
]

#: Width (natural-log units) of an exponent band: a product of two band entries is
#: at least ``e^{-2 BAND}`` = 1e-304, a normal float.
BAND = 350.0

#: ``method="auto"`` switches to ``"direct"`` above this many band pairs per product.
MAX_BAND_PAIRS = 24

#: Bytes of temporaries one chunk of users may use (``"direct"``: the (c, k, k_v) block).
MEMORY_BUDGET = 256 * 2**20

#: The scaling domain is used when its a-priori bound on the logarithms of every
#: iterate, :math:`2R + 2\\varepsilon + \\log(k\\,k_v\\,\\rho)`, is at most this
#: (float64 normals reach :math:`e^{\\pm 708}`; module docstring).
SCALING_MAX_LOG_RANGE = 680.0

#: Multiply-adds of one kernel product per BLAS thread (:func:`blas_threads`): smaller
#: products run on one thread.
BLAS_THREAD_WORK = 1 << 23

#: Users per chunk in the scaling domain (a chunk's iterates stay in the CPU caches).
SCALING_CHUNK = 256

#: Safeguarded Newton rounds of the warm-started projection before the exact sorted
#: solve (:func:`~privot.sampling.polytope.project_log`) takes the rows left.
NEWTON_ROUNDS = 10

#: ``kernel="auto"`` uses a separable kernel when ``C = A (+) B`` holds to this
#: relative tolerance (times ``max C``).
SEPARABLE_RTOL = 1e-12

ENTROPIC_METHODS = ("auto", "scaling", "banded", "direct")
ENTROPIC_KERNELS = ("auto", "dense", "separable")

_POLICIES = ("raise", "warn", "ignore")
_FAILURE_POLICIES = ("raise", "flag")


@dataclass(frozen=True, eq=False)
class WPMEntropicResult:
    """Result of :func:`wpm_entropic` (scalars and ``(k_v,)`` for a single input).

    Attributes
    ----------
    nu : (k_v,) or (n, k_v) array
        :math:`\\nu^\\lambda` (Algorithm 1's last ``q``), in :math:`Q_{m,\\varepsilon}`.
    transport_cost : float or (n,) array
        :math:`\\langle \\pi, C\\rangle` of the entropic plan
        :math:`\\pi = \\operatorname{diag}(u) K \\operatorname{diag}(v)`, whose column sums
        are ``nu`` and whose row sums are within ``marginal_error`` of ``mu``; an upper
        bound on :math:`W_p^p(\\nu, \\mu)` up to
        :math:`2\\,\\text{marginal\\_error}\\,\\max C` (rounding the rows, Altschuler et
        al. 2017, Lemma 7).
    marginal_error : float or (n,) array
        :math:`\\sum_i |\\mu_i - (\\pi 1)_i|`.
    n_iter : int or (n,) array
        Iterations (projections, Alg. 1 l. 5-9) run for each user.
    converged : bool or (n,) array
        ``marginal_error <= tol`` (always False with ``tol = 0``).
    cost_bound : float or (n,) array
        Prop. 4.1 on the ``p``-th powers: :math:`\\lambda \\log N`,
        :math:`N = |\\mathrm{supp}\\,\\mu| \\cdot |\\mathrm{supp}\\,m|`.
    error_bound : float or (n,) array
        Prop. 4.1: :math:`(\\lambda \\log N)^{1/p} \\ge W_p(\\nu^\\lambda, \\mu) -
        W_p(\\nu^\\star, \\mu)`.
    lam : float
        The regularisation :math:`\\lambda`.
    p : float
        The order used for ``error_bound``.
    method : str
        The kernel products actually used, ``"+"``-joined when chunks differed:
        ``"scaling"`` (dense kernel, linear scale), ``"scaling-separable"``,
        ``"banded"`` or ``"direct"`` (log domain; ``"auto"`` falls back per product
        when a vector's dynamic range needs more than :data:`MAX_BAND_PAIRS` band
        pairs, and a user whose linear-scale iterate meets a non-finite value is redone
        alone in the log domain).
    failed : bool or (n,) array
        Users whose iterate met a non-finite value in the log domain too (a loud guard:
        never seen); only with ``on_failure="flag"`` (else the call raises). Their
        ``nu``, ``transport_cost`` and ``marginal_error`` are NaN; the other users'
        results are those they would have had without them (rows are independent).
    """

    nu: np.ndarray
    transport_cost: float | np.ndarray
    marginal_error: float | np.ndarray
    n_iter: int | np.ndarray
    converged: bool | np.ndarray
    cost_bound: float | np.ndarray
    error_bound: float | np.ndarray
    lam: float
    p: float
    method: str
    failed: bool | np.ndarray = False


def wpm_entropic(mu: object, cost: object, base_measure: object, epsilon: float, *,
                 lam: float, p: float = 1.0, max_iter: int = 1000, tol: float = 1e-9,
                 method: Literal["auto", "scaling", "banded", "direct"] = "auto",
                 chunk_size: int | None = None,
                 on_nonconvergence: Literal["raise", "warn", "ignore"] = "warn",
                 kernel: Literal["auto", "dense", "separable"] = "auto",
                 n_jobs: int = 1,
                 on_failure: Literal["raise", "flag"] = "raise") -> WPMEntropicResult:
    """Entropic WPM by Algorithm 1, for many users at once.

    .. math::

        \\nu^\\lambda = \\operatorname*{arg\\,min}_{\\nu \\in Q_{m,\\varepsilon}}
        \\mathrm{OT}_\\lambda(\\nu, \\mu)

    per row of ``mu``, all rows sharing ``cost``, ``base_measure`` and ``epsilon``.

    Parameters
    ----------
    mu : (k,) or (n, k) array_like
        Input distributions over the ``k`` public input points (rows sum to 1).
    cost : (k, k_v) array_like
        :math:`C_{ij} = d(x_i, v_j)^p \\ge 0`.
    base_measure : (k_v,) array_like
        Base measure :math:`m` with a non-empty polytope.
    epsilon : float
        Privacy parameter :math:`\\varepsilon > 0`.
    lam : float
        Entropic regularisation :math:`\\lambda > 0`, in the units of ``cost`` (e.g.
        ``1e-2 * cost.max()``; smaller is closer to the exact WPM and slower).
    p : float, default 1
        Order of :math:`W_p`, used only for ``error_bound``.
    max_iter : int, default 1000
        Iterations of Algorithm 1 per user.
    tol : float, default 1e-9
        Stop a user once the L1 row-marginal error of its plan is ``<= tol``; ``0``
        runs exactly ``max_iter`` iterations for every user (data-independent count).
    method : {"auto", "scaling", "banded", "direct"}, default "auto"
        Domain of the iterates and kernel products (module docstring): ``"scaling"``
        (linear scale, plain matrix products; only where the a-priori range bound
        :data:`SCALING_MAX_LOG_RANGE` holds, else ``InvalidParameterError``),
        ``"banded"`` or ``"direct"`` (log domain); ``"auto"``: scaling where the bound
        holds, else banded (direct above :data:`MAX_BAND_PAIRS` band pairs).
    chunk_size : int, optional
        Users per chunk (default :data:`SCALING_CHUNK` in the scaling domain, else from
        :data:`MEMORY_BUDGET`).
    on_nonconvergence : {"raise", "warn", "ignore"}, default "warn"
        What to do when some user does not reach ``tol`` (``nu`` is still in the
        polytope): raise :class:`~privot.errors.ConvergenceError`, emit a
        ``RuntimeWarning``, or nothing. Ignored when ``tol == 0``.
    kernel : {"auto", "dense", "separable"}, default "auto"
        ``"separable"``: the cost is a sum over two grid coordinates,
        :math:`C_{(a,b),(c,d)} = A_{ac} + B_{bd}` with inputs and outputs in row-major
        grid order (e.g. ``cost_matrix`` with ``"sqeuclidean"``, ``"cityblock"`` or
        Euclidean ``p = 2`` on a regular grid), so :math:`K = K_A \\otimes K_B` and
        each product is two small ones (scaling domain only; ``InvalidParameterError``
        when the cost is not of that form or the scaling bound fails). ``"auto"``:
        separable when detected (to :data:`SEPARABLE_RTOL`) and at least 4x fewer
        flops, in the scaling domain. ``"dense"``: never.
    n_jobs : int, default 1
        Worker threads, one chunk of users each (numpy and BLAS release the GIL; each
        user's result does not depend on it). The BLAS threads of the solve are
        limited by :func:`blas_threads` (public sizes and CPUs: at most half the CPUs
        among the workers), so workers and BLAS do not oversubscribe the CPUs.
    on_failure : {"raise", "flag"}, default "raise"
        A user whose iterate meets a non-finite value in both domains (a loud guard: the
        scaling domain's range bound and the log domain exclude it; never seen): raise
        :class:`~privot.errors.ConvergenceError`, or return every user with those marked
        in ``failed`` (their results NaN; a release path gives them its fallback, the
        others are unaffected).

    Returns
    -------
    WPMEntropicResult

    Raises
    ------
    InvalidDataError
        Bad ``mu``, ``cost`` or ``base_measure`` (shape, sign, sums, non-finite).
    InvalidParameterError
        ``epsilon``, ``lam`` or ``tol`` out of range, ``p < 1``, an empty polytope,
        an unknown ``method``/``kernel``/``on_nonconvergence``, ``cost / lam``
        overflowing, ``"scaling"``/``"separable"`` where they do not apply.
    ConvergenceError
        A non-finite iterate (a loud guard) with ``on_failure="raise"``, or no
        convergence with ``on_nonconvergence="raise"``.
    """
    c = check_cost(cost)
    k, k_v = c.shape
    rows, single = check_distributions(mu, k=k)
    m = check_base_measure(base_measure, epsilon, k_v=k_v)
    lower, upper = polytope_bounds(m, epsilon)
    reg = check_regularization(lam)
    order = check_order(p)
    it_max = check_int(max_iter, "max_iter", minimum=1)
    tolerance = check_nonnegative(tol, "tol")
    if method not in ENTROPIC_METHODS:
        raise InvalidParameterError("method", method, f"one of {ENTROPIC_METHODS}")
    if kernel not in ENTROPIC_KERNELS:
        raise InvalidParameterError("kernel", kernel, f"one of {ENTROPIC_KERNELS}")
    if on_nonconvergence not in _POLICIES:
        raise InvalidParameterError("on_nonconvergence", on_nonconvergence,
                                    f"one of {_POLICIES}")
    if on_failure not in _FAILURE_POLICIES:
        raise InvalidParameterError("on_failure", on_failure, f"one of {_FAILURE_POLICIES}")
    positive = np.flatnonzero(m > 0)  # nu_j = 0 is forced where m_j = 0
    with np.errstate(over="ignore"):
        finite = np.all(np.isfinite(c[:, positive] / reg))
    if not finite:
        raise InvalidParameterError(
            "lam", lam, f"a value for which cost / lam is finite (max cost {float(c.max())!r})")
    kernels = _plan(c, m, lower, upper, reg, float(epsilon), method, kernel)
    chunk = (check_int(chunk_size, "chunk_size", minimum=1) if chunk_size is not None
             else SCALING_CHUNK if kernels.scaling else _default_chunk(k, kernels.cols.size))
    jobs = check_int(n_jobs, "n_jobs", minimum=1)
    lo, hi = lower[kernels.cols], upper[kernels.cols]
    out = _Output(rows.shape[0], kernels.cols.size)

    def solve(start: int) -> None:
        stop = min(start + chunk, rows.shape[0])
        block, idx = rows[start:stop], np.arange(start, stop)
        if not kernels.scaling:
            _solve_chunk(block, idx, kernels, lo, hi, it_max, tolerance, out)
            return
        left = _solve_chunk_scaling(block, idx, kernels, lo, hi, it_max, tolerance, out)
        # a user whose linear-scale iterate left the float range (excluded by the
        # a-priori bound): that user alone is redone in the log domain, the others keep
        # their results (rows are independent: module docstring)
        for i in np.flatnonzero(left).tolist():
            kernels.used.add(kernels.log_method)
            _solve_chunk(block[i:i + 1], idx[i:i + 1], kernels, lo, hi, it_max, tolerance,
                         out)

    starts = range(0, rows.shape[0], chunk)
    workers = min(jobs, len(starts))
    # BLAS threads per worker from public sizes and CPUs (blas_threads): the loop's
    # products are small, and oversubscribed BLAS threads cost up to 6x
    with blas_limit(blas_threads(min(chunk, rows.shape[0]), k, kernels.cols.size,
                                  workers)):
        if workers > 1:  # chunks are independent; numpy and BLAS drop the GIL
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for _ in pool.map(solve, starts):
                    pass
        else:
            for start in starts:
                solve(start)
    used = "+".join(sorted(kernels.used)) or kernels.name
    return _result(out, rows, m, kernels.cols, reg, order, tolerance, used, single,
                   on_nonconvergence, on_failure)


# ----------------------------------------------------------------------------- threads

def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def blas_threads(chunk: int, k: int, k_v: int, workers: int = 1) -> int:
    """BLAS threads per worker for the kernel products of one solve (public sizes only).

    A product multiplies a ``(chunk, k_v)`` block by a ``(k_v, k)`` kernel (or back):
    ``chunk * k * k_v`` multiply-adds. One thread per :data:`BLAS_THREAD_WORK` of them
    (about half a millisecond of work: a smaller share costs more in synchronisation than
    it saves), and at most half the usable CPUs (affinity mask) shared among the
    ``workers`` (``n_jobs``) threads: a BLAS thread that waits for a descheduled sibling
    spins, so threads on every core of a shared machine are oversubscribed by its other
    load (measured: 6x slower than one thread on a busy 2-core VM); the other half
    absorbs it. A 20 x 20 grid (256 users per chunk): one thread on 2 CPUs, 4 on 8 or
    more.

    Parameters
    ----------
    chunk, k, k_v : int
        Users per chunk, input points, output columns of the kernel.
    workers : int
        Worker threads solving chunks at once.

    Returns
    -------
    int
        ``>= 1``.
    """
    spare = _usable_cpus() // (2 * max(1, workers))
    return max(1, min(spare, (chunk * k * k_v) // BLAS_THREAD_WORK))


# ----------------------------------------------------------------------------- planning

def _plan(c: np.ndarray, m: np.ndarray, lower: np.ndarray, upper: np.ndarray, reg: float,
          eps: float, method: str, kernel: str) -> _Kernels:
    """Choose the domain (scaling or log) and the kernel (dense or separable)."""
    positive = np.flatnonzero(m > 0)
    obstacle = _scaling_obstacle(c[:, positive], m[positive], lower, upper, reg, eps)
    scaling = method in ("auto", "scaling") and obstacle is None
    if method == "scaling" and not scaling:
        raise InvalidParameterError("method", method, f"'auto', 'banded' or 'direct' here: "
                                    f"the scaling domain needs {obstacle}")
    factors = None
    if scaling and kernel != "dense":
        factors = _separable_factors(c, dense_cols=positive.size if kernel == "auto"
                                     else None)
        if factors is not None and _scaling_obstacle(c, m[positive], lower, upper, reg,
                                                     eps) is not None:
            factors = None  # the columns with m_j = 0 would widen the range
    if kernel == "separable" and factors is None:
        why = (f"the scaling domain, which needs {obstacle}" if obstacle is not None
               else "the scaling domain (method 'auto' or 'scaling')" if not scaling
               else "a cost C[(a,b),(c,d)] = A[a,c] + B[b,d] on grids in row-major order")
        raise InvalidParameterError("kernel", kernel, f"'auto' or 'dense' here: 'separable' "
                                    f"needs {why}")
    cols = np.arange(c.shape[1]) if factors is not None else positive
    log_method = "direct" if method == "direct" else "banded"
    return _Kernels(c[:, cols], cols, reg, scaling, factors, log_method,
                    auto=method in ("auto", "scaling"))


def _scaling_obstacle(c: np.ndarray, m_pos: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray, reg: float, eps: float) -> str | None:
    """Why the linear-scale iteration could leave the float64 range (None: it cannot).

    With :math:`K = e^{-(C - \\min C)/\\lambda} \\in [e^{-R}, 1]`, every iterate's
    logarithm stays within :math:`\\pm(2R + 2\\varepsilon + \\log(k k_v \\rho))`,
    :math:`\\rho = \\max m / \\min_{m_j > 0} m_j` (module docstring), provided the
    polytope is not a single point (:math:`\\sum\\ell < 1 < \\sum u`).
    """
    if not (lower.sum() < 1.0 < upper.sum()):
        return "a polytope with sum(lower) < 1 < sum(upper)"
    span = (float(c.max()) - float(c.min())) / reg
    rho = float(m_pos.max() / m_pos.min())
    bound = 2.0 * span + 2.0 * eps + math.log(c.shape[0] * c.shape[1] * rho)
    if not bound <= SCALING_MAX_LOG_RANGE:
        return (f"2 (max C - min C) / lam + 2 eps + log(k k_v max m / min m) <= "
                f"{SCALING_MAX_LOG_RANGE:g}, got {bound:.4g}")
    return None


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n // 2 + 1) if n % d == 0]


def _separable_factors(c: np.ndarray, *, dense_cols: int | None = -1
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(A, B)`` with ``C.reshape(k1, k2, m1, m2) = A[:, None, :, None] + B[None, :, None]``.

    Tries the factorisations ``k = k1 k2``, ``k_v = m1 m2`` (all with ``dense_cols=None``;
    else those whose two small products need at most a quarter of the flops of the dense
    products over ``dense_cols`` output columns, default ``k_v``), the cheapest first; a
    candidate must match ``C`` to :data:`SEPARABLE_RTOL` ``* max C`` on every entry.
    """
    k, k_v = c.shape
    budget = None if dense_cols is None else 2 * k * (k_v if dense_cols < 0 else dense_cols)
    tol = SEPARABLE_RTOL * max(float(np.max(np.abs(c))), np.finfo(float).tiny)
    candidates = []
    for k1 in _divisors(k):
        k2 = k // k1
        for m1 in _divisors(k_v):
            m2 = k_v // m1
            flops = m1 * m2 * k2 + k1 * m1 * k2 + k1 * k2 * m2 + k1 * m1 * m2
            if budget is None or 4 * flops <= budget:
                candidates.append((flops, k1, k2, m1, m2))
    for _, k1, k2, m1, m2 in sorted(candidates):
        c4 = c.reshape(k1, k2, m1, m2)
        a = c4[:, 0, :, 0]
        b = c4[0, :, 0, :] - c4[0, 0, 0, 0]
        # cheap rejections (necessary conditions, so the decision is the full check's):
        # a diagonal offset, and a cross one, which a translation-invariant non-separable
        # cost (Euclidean p = 1) passes on the diagonal but not across
        if (np.max(np.abs(c4[:, 1, :, 1] - a - b[1, 1])) > tol
                or np.max(np.abs(c4[:, -1, :, 0] - a - b[-1, 0])) > tol):
            continue
        if np.max(np.abs(c4 - a[:, None, :, None] - b[None, :, None, :])) <= tol:
            return a, b
    return None


# ----------------------------------------------------------------------------- products

class _Banded:
    """Bands of a log-kernel ``G``: ``K_r = exp(G - (top - r W))`` on
    ``G in (top - (r+1) W, top - r W]`` (entries in ``(e^{-W}, 1]``, zero elsewhere)."""

    def __init__(self, g: np.ndarray) -> None:
        finite = np.isfinite(g)
        self.top = float(g[finite].max()) if np.any(finite) else 0.0
        depth = np.where(finite, (self.top - np.where(finite, g, self.top)) // BAND, -1)
        self.bands: list[tuple[int, np.ndarray]] = []
        for r in np.unique(depth[finite]).astype(np.int64):
            sel = depth == r
            band = np.zeros(g.shape)
            band[sel] = np.exp(g[sel] - (self.top - r * BAND))
            self.bands.append((int(r), band))


class _Kernels:
    """The kernel of one solve, :math:`K = e^{-C/\\lambda}` (and :math:`K \\odot C` for the
    cost), applied to many users' vectors at once: in linear scale (``linear=True``,
    :math:`K` scaled by :math:`e^{\\min C/\\lambda}`, dense or as the Kronecker product
    of two factors) or to logarithms (log-sum-exp by banded GEMMs or directly)."""

    def __init__(self, c: np.ndarray, cols: np.ndarray, reg: float, scaling: bool,
                 factors: tuple[np.ndarray, np.ndarray] | None, log_method: str,
                 auto: bool) -> None:
        self.c, self.cols, self.reg = c, cols, reg
        self.scaling = scaling
        self.log_method = log_method
        self.max_pairs = MAX_BAND_PAIRS if auto else 10**9
        self.used: set[str] = set()
        self._log_ready = False
        self._lock = threading.Lock()
        if not scaling:
            self.name = log_method
            self._build_log()
        elif factors is None:
            self.name = "scaling"
            self.separable = False
            with np.errstate(under="ignore"):
                self.k_lin = np.exp(-(c - c.min()) / reg)
            self.kc_lin = self.k_lin * c
        else:
            self.name = "scaling-separable"
            self.separable = True
            a, b = factors
            with np.errstate(under="ignore"):
                self.kx = np.exp(-(a - a.min()) / reg)  # (k1, m1)
                self.ky = np.exp(-(b - b.min()) / reg)  # (k2, m2)
            self.kxa, self.kyb = self.kx * a, self.ky * b
            self.shape = (a.shape[0], b.shape[0], a.shape[1], b.shape[1])  # k1 k2 m1 m2

    def _prepare_log(self) -> None:
        if self._log_ready:
            return
        with self._lock:
            if not self._log_ready:
                self._build_log()

    def _build_log(self) -> None:
        with np.errstate(over="ignore"):
            self.g = -self.c / self.reg
        with np.errstate(divide="ignore"):
            self.g_cost = self.g + np.log(self.c)  # -inf where C = 0: no cost contribution
        self.banded = _Banded(self.g)
        self.banded_cost = _Banded(self.g_cost)
        self.method = "direct" if self.log_method == "direct" or (
            self.max_pairs == MAX_BAND_PAIRS
            and len(self.banded.bands) > MAX_BAND_PAIRS) else "banded"
        self._log_ready = True

    def apply(self, x: np.ndarray, *, transpose: bool, cost: bool = False,
              linear: bool = False) -> np.ndarray:
        """Rows of ``x`` times :math:`K^T` (``transpose``: :math:`(Kx)_i`) or :math:`K`
        (:math:`(K^T x)_j`); ``cost``: :math:`K \\odot C` instead. Linear scale with
        ``linear``, else on logarithms: ``LSE_j(x[:, j] + G[j, :])`` (``G^T`` when
        ``transpose``)."""
        if linear:
            self.used.add(self.name)
            if self.separable:
                return self._separable_product(x, transpose, cost)
            kern = self.kc_lin if cost else self.k_lin
            return x @ (kern.T if transpose else kern)
        self._prepare_log()
        g = self.g_cost if cost else self.g
        if self.method == "banded":
            got = _banded_lse(x, self.banded_cost if cost else self.banded, transpose,
                              self.max_pairs)
            if got is not None:
                out, deep = got
                self.used.add("banded")
                if np.any(deep):  # those rows alone, directly (the choice is per row)
                    self.used.add("direct")
                    out[deep] = _direct_lse(x[deep], g.T if transpose else g)
                return out
        self.used.add("direct")
        return _direct_lse(x, g.T if transpose else g)

    def _separable_product(self, x: np.ndarray, transpose: bool, cost: bool) -> np.ndarray:
        """:math:`(K_A \\otimes K_B)` products as two small GEMMs (Kronecker identity)."""
        k1, k2, m1, m2 = self.shape
        n = x.shape[0]
        if transpose:  # out[n, a, b] = sum_{c, d} KA[a, c] KB[b, d] x[n, c, d]
            flat = x.reshape(n * m1, m2)
            first = (flat @ self.ky.T).reshape(n, m1, k2)
            if not cost:
                return np.matmul(self.kx, first).reshape(n, k1 * k2)
            out = np.matmul(self.kxa, first)  # (KA o A) (x) KB + KA (x) (KB o B)
            out += np.matmul(self.kx, (flat @ self.kyb.T).reshape(n, m1, k2))
            return out.reshape(n, k1 * k2)
        flat = x.reshape(n * k1, k2)  # out[n, c, d] = sum_{a, b} KA[a, c] KB[b, d] x[n, a, b]
        first = (flat @ self.ky).reshape(n, k1, m2)
        if not cost:
            return np.matmul(self.kx.T, first).reshape(n, m1 * m2)
        out = np.matmul(self.kxa.T, first)
        out += np.matmul(self.kx.T, (flat @ self.kyb).reshape(n, k1, m2))
        return out.reshape(n, m1 * m2)


def _banded_lse(log_x: np.ndarray, banded: _Banded, transpose: bool,
                max_pairs: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Log-sum-exp products by banded GEMMs: ``(out, deep)``, where the rows marked in
    ``deep`` need more than ``max_pairs`` band pairs and are left to the caller (their
    ``out`` rows are meaningless); ``None`` when every row does.

    Row ``u`` of ``log_x`` is cut into bands ``X_t`` by depth below its own maximum;
    every term of ``X_t K_r`` is in ``(e^{-2W}, 1]`` (no underflow), products of equal
    offset ``d = t + r`` are added, and the offsets combined by a log-sum-exp. The
    choice is per row, and a row's result does not depend on the depths of the others:
    a row shallower than the deepest one only adds exact zeros to the sums of the
    deeper offsets (its ``X_t`` are zero there), which leaves its bits unchanged.
    """
    log_x = np.asarray(log_x, dtype=np.float64)
    n = log_x.shape[0]
    width = banded.bands[0][1].shape[0 if transpose else 1] if banded.bands else 0
    top_x = log_x.max(axis=1)
    top_x = np.where(np.isfinite(top_x), top_x, 0.0)
    gap = top_x[:, None] - log_x  # >= 0, +inf for zero entries
    depth = np.floor(gap * (1.0 / BAND))
    row_depth = np.max(depth, axis=1, where=np.isfinite(depth), initial=0.0)
    deep = (row_depth + 1) * len(banded.bands) > max_pairs
    if np.all(deep):
        return None
    if np.any(deep):  # out of the banded products (0: one level, no cost)
        gap[deep] = 0.0
        depth[deep] = 0.0
        row_depth[deep] = 0.0
    deepest = int(row_depth.max(initial=0.0))
    if deepest > 0:
        gap -= np.where(np.isfinite(depth), depth, 0.0) * BAND
    with np.errstate(under="ignore"):
        scaled = np.exp(-gap)  # in (e^{-W}, 1], 0 for zero entries
    sums: dict[int, np.ndarray] = {}
    for t in range(deepest + 1):
        if deepest:
            level = depth == t
            if not level.any():
                continue
            x_t = np.where(level, scaled, 0.0)
        else:
            x_t = scaled
        for r, band in banded.bands:
            prod = x_t @ (band.T if transpose else band)
            d = t + r
            if d in sums:
                sums[d] += prod
            else:
                sums[d] = prod
    if not sums:
        return np.full((n, width), -np.inf), deep
    with np.errstate(divide="ignore"):
        logs = [np.log(sums[d]) - d * BAND for d in sorted(sums)]
    if len(logs) == 1:
        total = logs[0]
    else:
        stack = np.stack(logs)
        best = stack.max(axis=0)
        safe = np.where(np.isfinite(best), best, 0.0)
        with np.errstate(under="ignore", divide="ignore"):
            total = safe + np.log(np.exp(stack - safe[None]).sum(axis=0))
    total += top_x[:, None] + banded.top
    return total, deep


def _direct_lse(log_x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """``LSE_j(log_x[:, j] + kernel[j, :])`` by (chunk, m, p) blocks within MEMORY_BUDGET."""
    n, width = log_x.shape[0], kernel.shape[1]
    step = max(1, MEMORY_BUDGET // (8 * kernel.size))
    out = np.empty((n, width))
    for a in range(0, n, step):
        block = log_x[a:a + step, :, None] + kernel[None, :, :]
        top = block.max(axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        block -= safe[:, None, :]
        with np.errstate(under="ignore"):
            np.exp(block, out=block)
        with np.errstate(divide="ignore"):
            out[a:a + step] = np.log(block.sum(axis=1)) + safe
    return out


# ----------------------------------------------------------------------------- Algorithm 1

class _Output:
    """Per-user results, filled chunk by chunk (over the kernel's output columns)."""

    def __init__(self, n: int, k_v: int) -> None:
        self.nu = np.zeros((n, k_v))
        self.cost = np.zeros(n)
        self.error = np.zeros(n)
        self.n_iter = np.zeros(n, dtype=np.int64)
        self.converged = np.zeros(n, dtype=bool)
        self.failed = np.zeros(n, dtype=bool)


def _default_chunk(k: int, k_v: int) -> int:
    # ~24 live (users, max(k, 2 k_v)) float arrays: iterates, temporaries, projection
    return max(1, MEMORY_BUDGET // (8 * 24 * max(k, 2 * k_v)))


def _contain(x: np.ndarray, failed: np.ndarray, rows: np.ndarray) -> None:
    """Rows of ``x`` with a non-finite entry (cannot happen in the log domain: a loud
    guard) are marked in ``failed[rows]`` and set to 0, so that the other rows, which
    never read them, go on unchanged and the marked ones stay finite."""
    bad = ~np.all(np.isfinite(x), axis=1)
    if np.any(bad):
        failed[rows[bad]] = True
        x[bad] = 0.0


def _project_rows(log_s: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  theta0: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~privot.sampling.polytope.project_log`, a failure confined to its row.

    ``project_log`` works row by row (row-wise reductions only), so solving the rows one
    at a time gives each the bits of the batched call; that is done only when the
    batched call raises (never seen for finite input), and a row that still raises is
    returned marked, with :math:`\\log q = \\log \\ell`. Returns ``(log_q, theta, failed)``.
    """
    try:
        log_q, theta = project_log(log_s, lower, upper, theta0)
        return log_q, theta, np.zeros(log_s.shape[0], dtype=bool)
    except (ConvergenceError, ValueError):
        pass
    n = log_s.shape[0]
    with np.errstate(divide="ignore"):
        log_q = np.broadcast_to(np.log(lower), log_s.shape).copy()
    theta = np.zeros(n) if theta0 is None else np.array(theta0, dtype=np.float64)
    failed = np.zeros(n, dtype=bool)
    for i in range(n):
        try:
            lq, th = project_log(log_s[i:i + 1], lower, upper,
                                 None if theta0 is None else theta0[i:i + 1])
        except (ConvergenceError, ValueError):
            failed[i] = True
            continue
        log_q[i], theta[i] = lq[0], th[0]
    return log_q, theta, failed


def _row_error(mu: np.ndarray, log_u_prev: np.ndarray, log_u: np.ndarray) -> np.ndarray:
    """L1 row error of the plan of ``(u_prev, v)``: ``sum_i mu_i |u_prev_i / u_i - 1|``."""
    support = mu > 0
    diff = np.where(support, log_u_prev - np.where(support, log_u, 0.0), 0.0)
    with np.errstate(over="ignore"):
        return np.sum(mu * np.abs(np.expm1(diff)), axis=1)


def _solve_chunk(mu: np.ndarray, idx: np.ndarray, kernels: _Kernels, lower: np.ndarray,
                 upper: np.ndarray, max_iter: int, tol: float, out: _Output) -> None:
    """Algorithm 1 in the log domain for one chunk, each user stopped on its own.

    A user whose iterate meets a non-finite value (a loud guard: it cannot happen here)
    is marked in ``out.failed`` and its row neutralised (:func:`_contain`); the others,
    which never read that row, are not affected.
    """
    with np.errstate(divide="ignore"):
        log_mu = np.log(mu)
    active = np.arange(mu.shape[0])
    failed = out.failed
    with np.errstate(divide="ignore"):
        log_v = np.broadcast_to(np.log((upper > 0).astype(np.float64)),  # l. 3
                                (mu.shape[0], lower.size)).copy()
    log_q = log_u_prev = theta = None
    for it in range(1, max_iter + 2):
        log_kv = kernels.apply(log_v, transpose=True)  # log (K v)
        _contain(log_kv, failed, idx[active])
        log_u = log_mu[active] - log_kv  # l. 6
        if log_u_prev is not None and (tol > 0 or it > max_iter):
            err = _row_error(mu[active], log_u_prev, log_u)
            done = (err <= tol) if tol > 0 else np.zeros(active.size, dtype=bool)
            if it > max_iter:
                done[:] = True
            if np.any(done):
                _finish(out, idx[active[done]], log_q[done], log_u_prev[done], log_v[done],
                        err[done], it - 1, err[done] <= tol if tol > 0 else False, kernels,
                        (lower, upper))
                keep = ~done
                active, log_u, log_v, theta = active[keep], log_u[keep], log_v[keep], theta[keep]
                if not active.size:
                    return
        log_s = kernels.apply(log_u, transpose=False)  # l. 7: log (K^T u)
        _contain(log_s, failed, idx[active])
        log_q, theta, broken = _project_rows(log_s, lower, upper, theta)  # l. 8, warm
        failed[idx[active[broken]]] = True
        with np.errstate(invalid="ignore"):  # -inf - finite; m_j = 0 gives -inf, not NaN
            log_v = np.where(upper > 0, log_q - log_s, -np.inf)  # l. 9
        log_u_prev = log_u


def _finish(out: _Output, rows: np.ndarray, log_q: np.ndarray, log_u: np.ndarray,
            log_v: np.ndarray, err: np.ndarray, n_iter: int, converged, kernels: _Kernels,
            bounds: tuple[np.ndarray, np.ndarray]) -> None:
    """Store ``q`` and the cost of the plan ``diag(u) K diag(v)`` (columns sum to ``q``)."""
    log_kcv = kernels.apply(log_v, transpose=True, cost=True)  # log sum_j K_ij C_ij v_j
    with np.errstate(under="ignore"):
        out.cost[rows] = np.exp(log_u + log_kcv).sum(axis=1)
        out.nu[rows] = np.clip(np.exp(log_q), *bounds)  # exp(log l) may miss l by an ulp
    out.error[rows] = err
    out.n_iter[rows] = n_iter
    out.converged[rows] = converged


# ----------------------------------------------------------------------------- scaling domain

def _solve_chunk_scaling(mu: np.ndarray, idx: np.ndarray, kernels: _Kernels,
                         lower: np.ndarray, upper: np.ndarray, max_iter: int, tol: float,
                         out: _Output) -> np.ndarray:
    """Algorithm 1 in linear scale for one chunk, each user stopped on its own.

    Keeps ``v = q / z`` with ``z = e^theta s`` (the projection's own scaling), so the
    plan after l. 9 is :math:`\\operatorname{diag}(e^\\theta u) K \\operatorname{diag}(v)`:
    its columns sum to ``q``, its rows to :math:`e^\\theta u \\odot K v`.

    Returns the ``(len(mu),)`` mask of the users whose iterate left the float range
    (excluded by the a-priori bound; the caller redoes each alone in the log domain).
    Such a row carries its non-finite values in its own row only (every operation is
    row-wise or a product of rows), so the other users are not affected.
    """
    active = np.arange(mu.shape[0])
    left = np.zeros(mu.shape[0], dtype=bool)
    mu_a = mu
    v = np.broadcast_to((upper > 0).astype(float), (mu.shape[0], lower.size)).copy()  # l. 3
    proj = _ScaledProjection(lower, upper)
    q = u_prev = None
    for it in range(1, max_iter + 2):
        with np.errstate(invalid="ignore", over="ignore"):
            kv = kernels.apply(v, transpose=True, linear=True)  # K v
        if u_prev is not None and (tol > 0 or it > max_iter):
            with np.errstate(invalid="ignore", over="ignore"):
                plan_u = u_prev * proj.t[:, None]
                row = plan_u * kv  # the plan's row sums
                np.subtract(mu_a, row, out=row)
                err = np.abs(row, out=row).sum(axis=1)
            broken = ~np.isfinite(err) | proj.failed
            done = (err <= tol) if tol > 0 else np.zeros(active.size, dtype=bool)
            done |= broken
            if it > max_iter:
                done[:] = True
            if np.any(done):
                left[active[done & broken]] = True
                bad = _finish_scaling(out, idx[active[done]], q[done], plan_u[done], v[done],
                                      err[done], it - 1,
                                      err[done] <= tol if tol > 0 else False, kernels)
                left[active[done][bad]] = True
                keep = ~done
                active, mu_a, kv, v = active[keep], mu_a[keep], kv[keep], v[keep]
                proj.keep(keep)
                if not active.size:
                    return left
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            u = np.divide(mu_a, kv, out=kv)  # l. 6
            s = kernels.apply(u, transpose=False, linear=True)  # l. 7
        q, z = proj(s)  # l. 8
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.divide(q, z, out=z)  # l. 9, divided by e^theta
        u_prev = u
    return left  # pragma: no cover (the loop returns once every user is done)


def _finish_scaling(out: _Output, rows: np.ndarray, q: np.ndarray, u: np.ndarray,
                    v: np.ndarray, err: np.ndarray, n_iter: int, converged,
                    kernels: _Kernels) -> np.ndarray:
    """Store ``q`` and the cost of the plan ``diag(u) K diag(v)`` (columns sum to ``q``);
    returns the mask of the rows whose cost is not finite (redone by the caller)."""
    with np.errstate(invalid="ignore", over="ignore"):
        kcv = kernels.apply(v, transpose=True, cost=True, linear=True)
        cost = np.einsum("ij,ij->i", u, kcv)
    out.cost[rows] = cost
    out.nu[rows] = q
    out.error[rows] = err
    out.n_iter[rows] = n_iter
    out.converged[rows] = converged
    return ~np.isfinite(cost)


class _ScaledProjection:
    """Exact KL projection of positive rows ``s`` (Lemma 4.2) in linear scale, warm-started.

    Solves :math:`\\psi(t) = \\sum_j \\operatorname{clip}(t s_j, \\ell_j, u_j) = 1`
    (:math:`t = e^\\theta`). With the statuses of the previous call (the free set
    :math:`F` and the clipped mass :math:`c = \\sum_{j \\notin F} q_j`) the guess is
    :math:`t = (1 - c) / \\sum_F s_j`, exact when the statuses still hold; a row is
    accepted when its clipped vector sums to 1 within
    :data:`~privot.sampling.polytope.SUM_ATOL` (the criterion of
    :func:`~privot.sampling.polytope.project_log`). Other rows take safeguarded Newton
    steps (:math:`\\psi` is linear between breakpoints: :math:`t' = t\\,(1 + (1 -
    \\psi(t)) / \\sum_{F(t)} t s_j)`, kept inside the bracket of the values seen,
    geometric mean otherwise); rows still open after :data:`NEWTON_ROUNDS` are solved
    from sorted breakpoints by ``project_log``. The first call starts from
    :math:`t = 1/\\sum_j s_j`.

    *Rows are independent.* Every decision is the row's own: a row accepted stays as it
    is while others take Newton steps, its statuses are refreshed only when its own guess
    failed, and every sum is a row-wise reduction (``sum(axis=1)``, never a matrix
    product over a data-dependent subset of rows, whose rounding could depend on which
    rows it holds). How many rows are open only decides where the same steps run
    (vectorised over all rows, or gathered). A row with a non-finite value is marked in
    :attr:`failed` and left to carry it in its own row.

    Calling it returns ``q`` (clipped to the bounds, rows summing to 1 within
    ``SUM_ATOL``) and ``z = t s``; :attr:`t` holds ``t``.
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray) -> None:
        self.lower, self.upper = lower, upper
        self.t: np.ndarray | None = None
        self.free: np.ndarray | None = None  # 1.0 on the free coordinates, else 0.0
        self.clipped: np.ndarray | None = None
        self.failed = np.zeros(0, dtype=bool)  # rows that met a non-finite value

    def keep(self, rows: np.ndarray) -> None:
        self.t, self.free, self.clipped = self.t[rows], self.free[rows], self.clipped[rows]
        self.failed = self.failed[rows]

    def __call__(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        first = self.t is None
        if first:
            self.failed = np.zeros(s.shape[0], dtype=bool)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = 1.0 / s.sum(axis=1)
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                t = (1.0 - self.clipped) / np.einsum("ij,ij->i", s, self.free)
            bad = ~((t > 0) & np.isfinite(t))
            if np.any(bad):
                t[bad] = self.t[bad]
        with np.errstate(invalid="ignore", over="ignore"):
            z = np.multiply(s, t[:, None])
        q = self._clip(z)
        psi = q.sum(axis=1)
        ok = np.abs(psi - 1.0) <= SUM_ATOL
        changed = None if first else ~ok  # rows whose statuses moved (None: all)
        if not np.all(ok):
            lo = np.zeros(t.size)
            hi = np.full(t.size, np.inf)
            rounds = 0
            # vectorised over all rows while most are open (cheaper than gathering); a
            # row already accepted keeps its t, so each row takes exactly the steps it
            # would take alone
            while rounds < NEWTON_ROUNDS and 2 * np.count_nonzero(~ok) > ok.size:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    t = np.where(ok, t, _newton_step(z, q, psi, t, lo, hi))
                    np.multiply(s, t[:, None], out=z)
                self._clip(z, out=q)
                psi = q.sum(axis=1)
                ok = np.abs(psi - 1.0) <= SUM_ATOL
                rounds += 1
            if not np.all(ok):
                rows = np.flatnonzero(~ok)
                self._repair(s, rows, z, q, psi, t, lo[rows], hi[rows],
                             NEWTON_ROUNDS - rounds)
        self.t = t
        # the statuses (free set, clipped mass) change only where the row's guess failed
        if changed is None:
            self.free = np.equal(q, z).astype(float)
            with np.errstate(invalid="ignore", over="ignore"):
                self.clipped = 1.0 - np.einsum("ij,ij->i", z, self.free)
        elif 2 * np.count_nonzero(changed) > changed.size:  # most rows: no gathering
            free = np.equal(q, z).astype(float)
            with np.errstate(invalid="ignore", over="ignore"):
                clipped = 1.0 - np.einsum("ij,ij->i", z, free)
            np.copyto(self.free, free, where=changed[:, None])
            np.copyto(self.clipped, clipped, where=changed)
        elif np.any(changed):
            rows = np.flatnonzero(changed)
            free = (q[rows] == z[rows]).astype(float)
            self.free[rows] = free
            with np.errstate(invalid="ignore", over="ignore"):
                self.clipped[rows] = 1.0 - np.einsum("ij,ij->i", z[rows], free)
        return q, z

    def _clip(self, z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        q = np.maximum(z, self.lower, out=out)
        return np.minimum(q, self.upper, out=q)

    def _repair(self, s: np.ndarray, rows: np.ndarray, z: np.ndarray, q: np.ndarray,
                psi: np.ndarray, t: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                rounds: int) -> None:
        """Newton rounds, then the sorted solve, for ``rows``; writes ``z, q, t`` there
        (row by row in effect: a row accepted stops, every sum is row-wise)."""
        zr, qr, sr, psir, tr = z[rows], q[rows], s[rows], psi[rows], t[rows]
        live = np.ones(rows.size, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for _ in range(rounds):
                tr = np.where(live, _newton_step(zr, qr, psir, tr, lo, hi), tr)
                zr = sr * tr[:, None]
                qr = self._clip(zr)
                psir = qr.sum(axis=1)
                live = ~(np.abs(psir - 1.0) <= SUM_ATOL)
                if not live.any():
                    break
        z[rows], q[rows], t[rows] = zr, qr, tr
        if not live.any():
            return
        rows, sr, tr = rows[live], sr[live], tr[live]  # the sorted solve, rarely
        sane = (np.all(np.isfinite(sr), axis=1) & np.all(sr > 0, axis=1) & np.isfinite(tr)
                & (tr > 0))
        self.failed[rows[~sane]] = True  # non-finite: left in its own row
        rows, sr, tr = rows[sane], sr[sane], tr[sane]
        if not rows.size:
            return
        log_q, theta, broken = _project_rows(np.log(sr), self.lower, self.upper,
                                             np.log(tr))
        tr = np.exp(theta)
        broken |= ~(np.isfinite(tr) & (tr > 0))
        self.failed[rows[broken]] = True
        rows, sr, tr, log_q = rows[~broken], sr[~broken], tr[~broken], log_q[~broken]
        z[rows] = sr * tr[:, None]
        q[rows] = np.clip(np.exp(log_q), self.lower, self.upper)
        t[rows] = tr


def _newton_step(z: np.ndarray, q: np.ndarray, psi: np.ndarray, t: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Next ``t`` from ``z = t s``, ``q = clip(z)`` and ``psi = sum q``; narrows the
    bracket ``[lo, hi]`` in place (``psi`` is non-decreasing in ``t``). Callers
    silence the float warnings (no free coordinate: a 0 division, then a bracket step)."""
    below = psi < 1.0
    np.copyto(lo, t, where=below & (t > lo))
    np.copyto(hi, t, where=~below & (t < hi))
    step = t + t * (1.0 - psi) / np.sum(z, axis=1, where=q == z)  # free coordinates
    inside = (step > lo) & (step < hi)  # False for NaN
    if inside.all():
        return step
    mid = np.where(np.isfinite(hi) & (lo > 0), np.sqrt(lo * hi),
                   np.where(below, 2.0 * t, 0.5 * t))
    return np.where(inside, step, mid)


def _result(out: _Output, mu: np.ndarray, m: np.ndarray, cols: np.ndarray, lam: float,
            p: float, tol: float, method: str, single: bool, policy: str,
            on_failure: str = "raise") -> WPMEntropicResult:
    failed = out.failed
    if np.any(failed):
        bad = int(np.count_nonzero(failed))
        if on_failure == "raise":
            raise ConvergenceError(
                f"entropic WPM: the iterates of {bad} of {mu.shape[0]} users became "
                "non-finite in the log domain; this should not happen (please report); "
                "with on_failure='flag' the other users are returned and these marked")
        out.nu[failed] = np.nan
        out.cost[failed] = np.nan
        out.error[failed] = np.nan
        out.converged[failed] = False
    nu = np.zeros((mu.shape[0], m.size))
    nu[:, cols] = out.nu
    n_support = np.count_nonzero(mu > 0, axis=1) * np.count_nonzero(m > 0)
    cost_bound = lam * np.log(n_support)  # Prop. 4.1 (App. K: N entries, entropy >= -log N)
    error_bound = cost_bound ** (1.0 / p)
    if tol > 0 and not np.all(out.converged):
        bad = int(np.count_nonzero(~out.converged))
        msg = (f"entropic WPM: {bad} of {mu.shape[0]} users did not reach tol={tol:g} within "
               f"max_iter={int(out.n_iter.max())} iterations (lam={lam!r}); their nu is "
               "still in the LDP polytope")
        if policy == "raise":
            raise ConvergenceError(msg)
        if policy == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
    if single:
        return WPMEntropicResult(nu[0], float(out.cost[0]), float(out.error[0]),
                                 int(out.n_iter[0]), bool(out.converged[0]),
                                 float(cost_bound[0]), float(error_bound[0]), lam, p, method,
                                 bool(failed[0]))
    return WPMEntropicResult(nu, out.cost, out.error, out.n_iter, out.converged, cost_bound,
                             error_bound, lam, p, method, failed.copy())
