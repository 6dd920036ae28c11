"""Exact Wasserstein Projection Mechanism: the LP of Sec. 4 (paper 003, Def. 3.1, App. I).

For one user, :math:`\\nu^\\star = \\operatorname*{arg\\,min}_{\\nu \\in Q_{m,\\varepsilon}}
W_p(\\nu, \\mu)` solves the linear program (Sec. 4)

.. math::

    \\min_{\\pi \\ge 0,\\ \\nu} \\sum_{ij} C_{ij}\\pi_{ij}
    \\quad\\text{s.t.}\\quad \\pi 1 = \\mu,\\quad \\pi^T 1 = \\nu,
    \\quad \\ell \\le \\nu \\le u,
    \\qquad \\ell = e^{-\\varepsilon/2} m,\\ u = e^{\\varepsilon/2} m. \\tag{LP}

App. I casts it as a min-cost flow with box constraints on the demand edges. POT's
network simplex (:func:`ot.emd`) only solves *balanced transport* (fixed supplies and
demands), so we use the following exact reformulation instead.

**Balanced reformulation.** Let :math:`\\sigma = \\sum_j u_j - 1 \\ge 0` (the polytope
is non-empty). Sources: the ``k`` input points with supplies :math:`\\mu_i` and a dummy
source :math:`D` with supply :math:`\\sigma`. Sinks: for each output ``j`` a
*mandatory* column :math:`M_j` with demand :math:`\\ell_j` and an *optional* column
:math:`O_j` with demand :math:`u_j - \\ell_j`. Total supply
:math:`1 + \\sigma = \\sum_j u_j =` total demand. Costs: :math:`c(i, M_j) = c(i, O_j) =
C_{ij}`, :math:`c(D, O_j) = 0`, :math:`c(D, M_j) = B` with
:math:`B > \\max_{ij} C_{ij}` (we use :math:`B = 3\\max C`, or 1 if ``C = 0``).

*(i) Every (LP)-feasible* :math:`(\\pi, \\nu)` *gives a transport* :math:`\\gamma` *of the
same cost with* :math:`\\gamma_{D, M} = 0`: split column ``j`` of :math:`\\pi`
proportionally, :math:`\\gamma_{i, M_j} = \\pi_{ij}\\ell_j/\\nu_j`,
:math:`\\gamma_{i, O_j} = \\pi_{ij}(1 - \\ell_j/\\nu_j)` (:math:`\\nu_j \\ge \\ell_j`), and
let the dummy fill the rest of the optional columns, :math:`\\gamma_{D, O_j} = u_j -
\\nu_j \\ge 0`, which sums to :math:`\\sum_j u_j - 1 = \\sigma`.

*(ii) Every transport with* :math:`\\gamma_{D, M} = 0` *gives an (LP)-feasible point of
the same cost*: :math:`\\pi_{ij} = \\gamma_{i, M_j} + \\gamma_{i, O_j}` has row sums
:math:`\\mu` and column sums :math:`\\nu_j = \\ell_j + (u_j - \\ell_j - \\gamma_{D, O_j})
\\in [\\ell_j, u_j]`.

*(iii) An optimal transport has* :math:`\\gamma_{D, M} = 0`: if
:math:`\\gamma_{D, M_j} > 0`, the dummy sends less than :math:`\\sigma` to the optional
columns, so the real sources send more than :math:`\\sum_j(u_j - \\ell_j) - \\sigma = 1 -
\\sum_j \\ell_j \\ge 0` there: some :math:`\\gamma_{i, O_{j'}} > 0`. Moving
:math:`t > 0` of mass (:math:`D \\to O_{j'}`, :math:`i \\to M_j` instead of
:math:`D \\to M_j`, :math:`i \\to O_{j'}`) keeps all supplies and demands and changes the
cost by :math:`t(0 + C_{ij} - B - C_{ij'}) \\le t(\\max C - B) < 0`, a contradiction.

Hence the transport optimum equals the (LP) optimum and maps back by (ii); the solver
*verifies* (iii) on its answer (dummy-to-mandatory mass at most :data:`DUMMY_ATOL`) and
raises :class:`~privot.errors.ConvergenceError` otherwise. Input points with
:math:`\\mu_i = 0` and outputs with :math:`m_j = 0` (forced :math:`\\nu_j = 0`) are
dropped first, and so is the dummy when :math:`\\sigma = 0`.

**Optimality certificate.** POT returns dual potentials :math:`(f, g)` of the balanced
problem (cost :math:`\\tilde C`); made exactly feasible by a double c-transform
(:func:`_dual_bound`), they give a weak-duality lower bound
:math:`a^T f + b^T g \\le` optimum, and ``gap = <pi, C> - bound`` certifies the
returned cost: about 1e-13 absolute (1e-12 to 1e-11 relative) at ``k = k_v = 400``,
limited by the accuracy of POT's potentials.

:func:`wpm_exact_highs` solves (LP) itself with HiGHS (:func:`scipy.optimize.linprog`,
sparse constraints) as an independent cross-check and benchmark baseline; its gap is
the primal objective minus the dual objective of HiGHS's multipliers.

Privacy
-------
Computes a mechanism's output distribution; no randomness and no release here. The
sample drawn from ``nu`` is :math:`\\varepsilon`-LDP for the user's distribution because
``nu`` lies in :math:`Q_{m,\\varepsilon}` for every input (Prop. 3.2), with ``m``,
``epsilon`` and the cost public; ``nu`` is in the polytope up to float rounding
(~1e-16), so exact release code must check or snap it (``docs/privacy/``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from privot._validation import check_int
from privot.errors import ConvergenceError, InvalidParameterError
from privot.sampling._checks import check_base_measure, check_cost, check_distributions
from privot.sampling.polytope import polytope_bounds

__all__ = [
    "EXACT_SOLVERS",
    "DUMMY_ATOL",
    "WPMExactResult",
    "wpm_exact",
    "wpm_exact_highs",
]

#: Solvers of :func:`wpm_exact`.
EXACT_SOLVERS = ("network_simplex", "highs")

#: Largest mass the dummy source may send to a mandatory column in an accepted solution.
DUMMY_ATOL = 1e-12

_RESULT_OPTIMAL = 1  # POT's result code for an optimal network-simplex solution
_MIN_ITER = 1_000_000
_ITER_PER_ENTRY = 50


@dataclass(frozen=True, eq=False)
class WPMExactResult:
    """Result of :func:`wpm_exact`.

    Attributes
    ----------
    nu : (k_v,) or (n, k_v) array
        The Wasserstein projections :math:`\\nu^\\star = \\mathcal{M}_{m,\\varepsilon}[\\mu]`
        (one row per input distribution; ``(k_v,)`` for a single ``(k,)`` input), in
        :math:`Q_{m,\\varepsilon}` up to float rounding.
    cost : float or (n,) array
        :math:`W_p^p(\\nu^\\star, \\mu) = \\sum_{ij} C_{ij}\\pi_{ij}` (the LP value).
    gap : float or (n,) array
        Optimality gap: ``cost`` minus a dual lower bound (absolute; see the module
        docstring). About 1e-16 relative for the network simplex.
    plan : (k, k_v) array or None
        The optimal coupling :math:`\\pi` (row sums :math:`\\mu`, column sums
        :math:`\\nu`) for a single input; ``None`` for a batch.
    solver : str
        ``"network_simplex"`` or ``"highs"``.
    """

    nu: np.ndarray
    cost: float | np.ndarray
    gap: float | np.ndarray
    plan: np.ndarray | None
    solver: str


class _Solution(NamedTuple):
    plan: np.ndarray  # (k, k_v) over the full index sets
    cost: float
    gap: float


def wpm_exact(mu: object, cost: object, base_measure: object, epsilon: float, *,
              solver: str = "network_simplex", max_iter: int | None = None
              ) -> WPMExactResult:
    """Exact Wasserstein projection onto the LDP polytope (Def. 3.1, the LP of Sec. 4).

    .. math::

        \\nu^\\star \\in \\operatorname*{arg\\,min}_{\\nu \\in Q_{m,\\varepsilon}}
        W_p(\\nu, \\mu), \\qquad
        W_p^p(\\nu, \\mu) = \\min_{\\pi \\in \\Pi(\\mu, \\nu)} \\sum_{ij} C_{ij}\\pi_{ij},

    one LP per row of ``mu``.

    Parameters
    ----------
    mu : (k,) or (n, k) array_like
        Input distribution(s) over the ``k`` public input points (rows sum to 1).
    cost : (k, k_v) array_like
        :math:`C_{ij} = d(x_i, v_j)^p \\ge 0` (:func:`~privot.sampling.cost.cost_matrix`).
    base_measure : (k_v,) array_like
        Base measure :math:`m \\ge 0` with a non-empty polytope.
    epsilon : float
        Privacy parameter :math:`\\varepsilon > 0`.
    solver : {"network_simplex", "highs"}, default "network_simplex"
        POT's network simplex on the balanced reformulation (module docstring), or
        HiGHS on the LP itself (slower; a cross-check).
    max_iter : int, optional
        Network-simplex iteration cap (default ``max(10^6, 50 (k+1) 2 k_v)``); reaching
        it raises :class:`~privot.errors.ConvergenceError`. Ignored by HiGHS.

    Returns
    -------
    WPMExactResult

    Raises
    ------
    InvalidDataError
        ``mu`` negative, non-finite, mis-shaped or not summing to 1; ``cost`` negative,
        non-finite or mis-shaped; ``base_measure`` negative or of length ``!= k_v``.
    InvalidParameterError
        ``epsilon <= 0``, an empty polytope, an unknown ``solver`` or ``max_iter < 1``.
    ConvergenceError
        The solver did not reach an optimal solution (or, for the network simplex, the
        dummy source reached a mandatory column).
    """
    c = check_cost(cost)
    k, k_v = c.shape
    rows, single = check_distributions(mu, k=k)
    lower, upper = _bounds(base_measure, epsilon, k_v)
    if not isinstance(solver, str) or solver not in EXACT_SOLVERS:
        raise InvalidParameterError("solver", solver, f"one of {EXACT_SOLVERS}")
    it = (max(_MIN_ITER, _ITER_PER_ENTRY * (k + 1) * 2 * k_v) if max_iter is None
          else check_int(max_iter, "max_iter", minimum=1))
    solve = _solve_network_simplex if solver == "network_simplex" else _solve_highs
    sols = [solve(row, c, lower, upper, it) for row in rows]
    nu = np.stack([s.plan.sum(axis=0) for s in sols])
    costs = np.array([s.cost for s in sols])
    gaps = np.array([s.gap for s in sols])
    if single:
        return WPMExactResult(nu[0], float(costs[0]), float(gaps[0]), sols[0].plan, solver)
    return WPMExactResult(nu, costs, gaps, None, solver)


def wpm_exact_highs(mu: object, cost: object, base_measure: object,
                    epsilon: float) -> WPMExactResult:
    """The LP of Sec. 4 solved by HiGHS: :func:`wpm_exact` with ``solver="highs"``.

    Variables :math:`(\\pi, \\nu) \\in \\mathbb{R}^{k k_v + k_v}`, equality constraints
    :math:`\\pi 1 = \\mu` and :math:`\\pi^T 1 - \\nu = 0` as a sparse matrix, bounds
    :math:`\\pi \\ge 0`, :math:`\\ell \\le \\nu \\le u`; :func:`scipy.optimize.linprog`
    with ``method="highs"`` and feasibility tolerances 1e-10. A cross-check of the
    network simplex and a benchmark baseline.
    """
    return wpm_exact(mu, cost, base_measure, epsilon, solver="highs")


# ----------------------------------------------------------------------------- solvers

def _bounds(base_measure: object, epsilon: float, k_v: int):
    check_base_measure(base_measure, epsilon, k_v=k_v)
    return polytope_bounds(base_measure, epsilon)


def _restrict(mu: np.ndarray, c: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    rows = np.flatnonzero(mu > 0)
    cols = np.flatnonzero(upper > 0)
    return rows, cols, mu[rows], c[np.ix_(rows, cols)], lower[cols], upper[cols]


def _inflate(plan_s: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape) -> np.ndarray:
    plan = np.zeros(shape)
    plan[np.ix_(rows, cols)] = plan_s
    return plan


def _solve_network_simplex(mu: np.ndarray, c: np.ndarray, lower: np.ndarray,
                           upper: np.ndarray, max_iter: int) -> _Solution:
    """One row by POT's network simplex on the balanced reformulation (module docstring)."""
    rows, cols, mu_s, c_s, l_s, u_s = _restrict(mu, c, lower, upper)
    kk, kv = c_s.shape
    sigma = float(u_s.sum()) - 1.0
    with_dummy = sigma > DUMMY_ATOL
    c_max = float(c_s.max()) if c_s.size else 0.0
    big = 3.0 * c_max if c_max > 0 else 1.0  # B > max C (step (iii))
    ext = np.empty((kk + int(with_dummy), 2 * kv))
    ext[:kk, :kv] = c_s  # i -> mandatory M_j
    ext[:kk, kv:] = c_s  # i -> optional O_j
    a = mu_s
    if with_dummy:
        ext[kk, :kv] = big  # D -> M_j: never used at the optimum
        ext[kk, kv:] = 0.0  # D -> O_j: free slack
        a = np.append(mu_s, sigma)
    b = np.concatenate([l_s, u_s - l_s])
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the result code is checked below
        gamma, log = ot.emd(a, b, ext, numItermax=max_iter, log=True)
    gamma = np.asarray(gamma, dtype=np.float64)
    if int(log["result_code"]) != _RESULT_OPTIMAL:
        raise ConvergenceError(
            "network simplex did not reach an optimal solution of the WPM transport "
            f"(max_iter={max_iter}): {log.get('warning') or log['result_code']}")
    if with_dummy:
        leak = float(gamma[kk, :kv].sum())
        if leak > DUMMY_ATOL:
            raise ConvergenceError(
                f"network simplex sent mass {leak!r} from the dummy source to mandatory "
                f"columns (allowed {DUMMY_ATOL:g}); the balanced reformulation failed")
    plan_s = gamma[:kk, :kv] + gamma[:kk, kv:]
    value = float(np.sum(plan_s * c_s))
    b_used = gamma.sum(axis=0)  # POT rescales b to a's total; use what it solved
    lower_bound = _dual_bound(ext, a, b_used, np.asarray(log["v"], dtype=np.float64))
    return _Solution(_inflate(plan_s, rows, cols, c.shape), value, value - lower_bound)


def _dual_bound(ext: np.ndarray, a: np.ndarray, b: np.ndarray, g: np.ndarray) -> float:
    """Weak-duality lower bound from POT's column potentials ``g``.

    POT's potentials satisfy :math:`f_r + g_c \\le \\tilde C_{rc}` only up to ~1e-13
    (they are updated incrementally over the pivots), so they are made feasible by a
    double c-transform, :math:`f = \\min_c(\\tilde C - g)`, :math:`g = \\min_r(\\tilde C - f)`
    (each step keeps feasibility and can only raise :math:`a^T f + b^T g`); a residual
    rounding violation :math:`\\delta` is paid as :math:`\\delta \\sum b`.
    """
    f = np.min(ext - g[None, :], axis=1)
    g = np.min(ext - f[:, None], axis=0)
    violation = max(float(np.max(f[:, None] + g[None, :] - ext)), 0.0)
    return float(a @ f + b @ g) - violation * float(b.sum())


def _solve_highs(mu: np.ndarray, c: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 max_iter: int) -> _Solution:
    """One row of the LP of Sec. 4 by HiGHS (``max_iter`` unused)."""
    del max_iter
    rows, cols, mu_s, c_s, l_s, u_s = _restrict(mu, c, lower, upper)
    kk, kv = c_s.shape
    n_pi = kk * kv
    # pi flattened row-major: x[i * kv + j] = pi_ij, then nu_j
    row_sums = sp.kron(sp.identity(kk, format="csr"), np.ones((1, kv)), format="csr")
    col_sums = sp.hstack([sp.kron(np.ones((1, kk)), sp.identity(kv, format="csr")),
                          -sp.identity(kv, format="csr")], format="csr")
    a_eq = sp.vstack([sp.hstack([row_sums, sp.csr_matrix((kk, kv))]), col_sums], format="csr")
    b_eq = np.concatenate([mu_s, np.zeros(kv)])
    lb = np.concatenate([np.zeros(n_pi), l_s])
    ub = np.concatenate([np.full(n_pi, np.inf), u_s])
    obj = np.concatenate([c_s.ravel(), np.zeros(kv)])
    res = linprog(obj, A_eq=a_eq, b_eq=b_eq, bounds=np.column_stack([lb, ub]),
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    if res.status != 0 or res.x is None:
        raise ConvergenceError(f"HiGHS did not solve the WPM LP: {res.message}")
    plan_s = np.maximum(res.x[:n_pi].reshape(kk, kv), 0.0)
    value = float(np.sum(plan_s * c_s))
    dual = float(b_eq @ res.eqlin.marginals + lb @ res.lower.marginals
                 + u_s @ res.upper.marginals[n_pi:])
    return _Solution(_inflate(plan_s, rows, cols, c.shape), value, value - dual)
