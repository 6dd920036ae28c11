"""Exact Wasserstein distances between weighted point clouds (POT's network simplex).

The linear program

.. math::

    W_p^p(\\mu, \\nu) = \\min_{\\gamma \\in \\Pi(a, b)} \\sum_{i, j} \\gamma_{ij}\\, d(x_i, y_j)^p,
    \\qquad \\Pi(a, b) = \\{\\gamma \\ge 0 : \\gamma 1_m = a,\\ \\gamma^T 1_n = b\\},

is solved with :func:`ot.emd` / :func:`ot.emd2`. Two policies for a run that stops at
its iteration budget:

* :func:`wasserstein_distance` and :func:`optimal_plan` check the solver's result code:
  a run that stops at ``max_iter`` (or reports an infeasible/unbounded problem) raises
  :class:`~privot.errors.ConvergenceError` instead of returning a sub-optimal plan with
  a warning;
* :func:`budgeted_plan` is *total*: it always returns an element of
  :math:`\\Pi(a, b)` after at most ``max_iter`` network-simplex iterations, and says
  whether it is optimal. At the cap POT's plan is not even feasible (its network
  simplex starts from artificial arcs, whose flow is dropped from the returned plan, so
  the marginals are off); it is repaired by :func:`round_to_polytope` (Altschuler, Weed
  and Rigollet 2017, Alg. 2). Release paths use it with a public budget
  (:func:`plan_budget`), so that the amount of work is capped by public sizes and the
  answer never depends on whether the data made the solver slow.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy.spatial.distance import cdist

from privot._validation import check_int
from privot.errors import ConvergenceError, InvalidParameterError
from privot.ot._common import check_cloud_pair, check_mass_pair, check_p

__all__ = [
    "ground_cost",
    "wasserstein_distance",
    "optimal_plan",
    "budgeted_plan",
    "BudgetedPlan",
    "plan_budget",
    "round_to_polytope",
    "METRICS",
    "PLAN_MIN_ITER",
    "PLAN_ITER_PER_ENTRY",
]

#: Ground metrics accepted by :func:`ground_cost` (names of :func:`scipy.spatial.distance.cdist`).
METRICS = ("euclidean", "cityblock", "chebyshev")

_RESULT_OPTIMAL = 1  # POT's emd_c result code for an optimal solution

#: Smallest network-simplex budget of :func:`plan_budget`.
PLAN_MIN_ITER = 1_000_000
#: :func:`plan_budget` grants at least this many iterations per entry of the ``n x m``
#: cost matrix (200,000 points x 48 atoms needed more than a fixed 10^6).
PLAN_ITER_PER_ENTRY = 20


def ground_cost(x: np.ndarray, y: np.ndarray, *, p: float = 2,
                metric: str = "euclidean") -> np.ndarray:
    """Cost matrix :math:`C_{ij} = d(x_i, y_j)^p`.

    Parameters
    ----------
    x : (n, d) array
        First point cloud (a 1-D array is read as ``(n, 1)``).
    y : (m, d) array
        Second point cloud, same ``d``.
    p : float, default 2
        Exponent, ``p >= 1``.
    metric : {"euclidean", "cityblock", "chebyshev"}
        Ground metric :math:`d`.

    Returns
    -------
    (n, m) array
        The cost matrix. For the Euclidean metric and ``p == 2`` it is computed as
        squared distances directly (no square root then square).
    """
    xa, ya = check_cloud_pair(x, y)
    pp = check_p(p)
    return _cost(xa, ya, pp, _check_metric(metric))


def _check_metric(metric: object) -> str:
    if not isinstance(metric, str) or metric not in METRICS:
        raise InvalidParameterError("metric", metric, f"one of {METRICS}")
    return metric


def squared_euclidean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """:math:`|x_i - y_j|^2`, (n, m), without validation (callers hold checked arrays)."""
    return cdist(x, y, metric="sqeuclidean")


def _cost(x: np.ndarray, y: np.ndarray, p: float, metric: str) -> np.ndarray:
    if metric == "euclidean" and p == 2:
        return squared_euclidean(x, y)
    dist = cdist(x, y, metric=metric)
    return dist if p == 1 else dist**p


def _prepare(x, y, a, b, p, metric, max_iter):
    xa, ya = check_cloud_pair(x, y)
    pp = check_p(p)
    met = _check_metric(metric)
    it = check_int(max_iter, "max_iter", minimum=1)
    aa, bb = check_mass_pair(a, b, xa.shape[0], ya.shape[0])
    return aa, bb, _cost(xa, ya, pp, met), pp, it


def _check_log(log: dict, max_iter: int) -> None:
    code = int(log["result_code"])
    if code != _RESULT_OPTIMAL:
        msg = log.get("warning") or f"result code {code}"
        raise ConvergenceError(
            f"POT's network simplex did not reach an optimal solution (max_iter={max_iter}): "
            f"{msg}"
        )


def wasserstein_distance(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                         b: np.ndarray | None = None, p: float = 2,
                         metric: str = "euclidean", max_iter: int = 100_000) -> float:
    """Exact Wasserstein distance :math:`W_p` between two weighted point clouds.

    .. math::

        W_p(\\mu, \\nu) = \\Big(\\min_{\\gamma \\in \\Pi(a, b)}
        \\sum_{i=1}^n \\sum_{j=1}^m \\gamma_{ij}\\, d(x_i, y_j)^p\\Big)^{1/p},
        \\quad \\mu = \\sum_i a_i \\delta_{x_i},\\ \\nu = \\sum_j b_j \\delta_{y_j}.

    Parameters
    ----------
    x : (n, d) array
        Support of the first measure (a 1-D array is read as ``(n, 1)``).
    y : (m, d) array
        Support of the second measure.
    a : (n,) array, optional
        Non-negative weights of ``x``; uniform ``1/n`` by default.
    b : (m,) array, optional
        Non-negative weights of ``y``; uniform ``1/m`` by default. ``a`` and ``b``
        must have the same total mass (relative tolerance 1e-9).
    p : float, default 2
        Order, ``p >= 1``.
    metric : {"euclidean", "cityblock", "chebyshev"}
        Ground metric :math:`d`.
    max_iter : int, default 100000
        Maximum number of network-simplex iterations.

    Returns
    -------
    float
        :math:`W_p` (the distance, not its ``p``-th power).

    Raises
    ------
    InvalidDataError
        Non-finite, empty or mis-shaped points; negative weights; unequal masses.
    InvalidParameterError
        ``p < 1``, an unknown ``metric`` or ``max_iter < 1``.
    ConvergenceError
        The network simplex stopped at ``max_iter`` or reported an infeasible problem.
    """
    aa, bb, cost, pp, it = _prepare(x, y, a, b, p, metric, max_iter)
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        # the result code is checked below; POT's UserWarning would only duplicate it
        warnings.simplefilter("ignore", UserWarning)
        value, log = ot.emd2(aa, bb, cost, numItermax=it, log=True)
    _check_log(log, it)
    return float(max(float(value), 0.0) ** (1.0 / pp))


def optimal_plan(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                 b: np.ndarray | None = None, p: float = 2, metric: str = "euclidean",
                 max_iter: int = 100_000) -> np.ndarray:
    """Optimal transport plan of the exact :math:`W_p` problem.

    .. math::

        \\gamma^\\star \\in \\operatorname*{arg\\,min}_{\\gamma \\in \\Pi(a, b)}
        \\sum_{i, j} \\gamma_{ij}\\, d(x_i, y_j)^p .

    Parameters are those of :func:`wasserstein_distance`.

    Returns
    -------
    (n, m) array
        A vertex of the transport polytope (at most ``n + m - 1`` non-zeros) with row
        sums ``a`` and column sums ``b``. :math:`W_p^p = \\sum_{ij}\\gamma_{ij} C_{ij}`.

    Raises
    ------
    InvalidDataError, InvalidParameterError, ConvergenceError
        As :func:`wasserstein_distance`.
    """
    aa, bb, cost, _, it = _prepare(x, y, a, b, p, metric, max_iter)
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan, log = ot.emd(aa, bb, cost, numItermax=it, log=True)
    _check_log(log, it)
    return np.asarray(plan)


# ----------------------------------------------------------------------------- total solver

class BudgetedPlan(NamedTuple):
    """Result of :func:`budgeted_plan`: a coupling and whether it is optimal.

    Unpacks as ``plan, optimal = budgeted_plan(...)``.

    Attributes
    ----------
    plan : (n, m) array
        An element of :math:`\\Pi(a, b)`: non-negative, row sums ``a`` and column sums
        ``b`` up to float rounding (relative error of order 1e-16).
    optimal : bool
        True when the network simplex reported an optimal solution within the budget;
        False when it stopped at the budget (or failed) and ``plan`` is the repaired,
        feasible but possibly sub-optimal, coupling.
    """

    plan: np.ndarray
    optimal: bool


def plan_budget(n: int, m: int) -> int:
    """Network-simplex iteration budget for an ``n x m`` problem, from the sizes only.

    ``max(PLAN_MIN_ITER, PLAN_ITER_PER_ENTRY * n * m)``: a function of public sizes, so
    that a release path that calls :func:`budgeted_plan` with it does a bounded amount
    of work fixed before the data is read.
    """
    nn = check_int(n, "n", minimum=1)
    mm = check_int(m, "m", minimum=1)
    return max(PLAN_MIN_ITER, PLAN_ITER_PER_ENTRY * nn * mm)


def round_to_polytope(plan: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Repair a non-negative matrix into an element of :math:`\\Pi(a, b)` (AWR 2017, Alg. 2).

    Altschuler, Weed and Rigollet (2017), "Near-linear time approximation algorithms
    for optimal transport via Sinkhorn iteration", Algorithm 2 (ROUND): scale the rows
    down to at most ``a``, then the columns down to at most ``b``, and add the rank-one
    correction :math:`e_r e_c^T / \\|e_c\\|_1` of the missing masses
    :math:`e_r = a - F1`, :math:`e_c = b - F^T 1` (equal totals). The result is
    non-negative with marginals exactly ``a`` and ``b`` in exact arithmetic (float
    rounding only) and differs from the input by at most
    :math:`2(\\|F1 - a\\|_1 + \\|F^T1 - b\\|_1)` in L1 (their Lemma 7).

    Negative and non-finite entries of ``plan`` are set to 0 first, so any input is
    accepted; an all-zero input gives the independent coupling :math:`a b^T / \\|b\\|_1`.

    Parameters
    ----------
    plan : (n, m) array
    a : (n,) array
        Non-negative row marginal.
    b : (m,) array
        Non-negative column marginal, same total as ``a``.

    Returns
    -------
    (n, m) array
    """
    aa = np.asarray(a, dtype=np.float64)
    bb = np.asarray(b, dtype=np.float64)
    f = np.array(plan, dtype=np.float64)
    if f.ndim != 2 or f.shape != (aa.size, bb.size):
        raise InvalidParameterError("plan", f.shape, f"an ({aa.size}, {bb.size}) array")
    f[~np.isfinite(f)] = 0.0
    np.maximum(f, 0.0, out=f)
    rows = f.sum(axis=1)
    x = np.minimum(np.divide(aa, rows, out=np.ones_like(aa), where=rows > 0), 1.0)
    f *= x[:, None]
    cols = f.sum(axis=0)
    y = np.minimum(np.divide(bb, cols, out=np.ones_like(bb), where=cols > 0), 1.0)
    f *= y[None, :]
    err_r = np.maximum(aa - f.sum(axis=1), 0.0)
    err_c = np.maximum(bb - f.sum(axis=0), 0.0)
    total = float(err_c.sum())
    if total > 0:
        f += np.outer(err_r, err_c / total)
    return f


def budgeted_emd(a: np.ndarray, b: np.ndarray, cost: np.ndarray,
                 max_iter: int) -> BudgetedPlan:
    """Unvalidated :func:`budgeted_plan` on weights and a cost matrix (never raises)."""
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan, log = ot.emd(a, b, cost, numItermax=int(max_iter), log=True)
    plan = np.asarray(plan, dtype=np.float64)
    if int(log["result_code"]) == _RESULT_OPTIMAL and np.all(np.isfinite(plan)):
        return BudgetedPlan(plan, True)
    return BudgetedPlan(round_to_polytope(plan, a, b), False)


def budgeted_plan(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                  b: np.ndarray | None = None, p: float = 2, metric: str = "euclidean",
                  max_iter: int | None = None) -> BudgetedPlan:
    """A transport plan after at most ``max_iter`` network-simplex iterations; total.

    Runs POT's network simplex (:func:`ot.emd`) on

    .. math::

        \\min_{\\gamma \\in \\Pi(a, b)} \\sum_{i, j} \\gamma_{ij}\\, d(x_i, y_j)^p

    with an iteration budget, and **always** returns a coupling
    :math:`\\gamma \\in \\Pi(a, b)`: the optimal one when the solver reaches it, else
    the solver's last plan repaired by :func:`round_to_polytope` (at the cap POT's plan
    violates the marginals: its network simplex starts from artificial arcs).
    It raises only on invalid parameters or shapes, never because of the values.

    Parameters
    ----------
    x, y, a, b, p, metric
        As in :func:`wasserstein_distance`.
    max_iter : int, optional
        Network-simplex iteration budget, ``>= 1``. Default :func:`plan_budget`
        ``(n, m)``, a function of the sizes only.

    Returns
    -------
    BudgetedPlan
        ``(plan, optimal)``: an ``(n, m)`` coupling with row sums ``a`` and column sums
        ``b`` (float rounding only), and whether it is optimal.

    Raises
    ------
    InvalidDataError
        Non-finite, empty or mis-shaped points; negative weights; unequal masses.
    InvalidParameterError
        ``p < 1``, an unknown ``metric`` or ``max_iter < 1``.

    Privacy
    -------
    Non-private numerics. A release path that needs an answer every time (output
    perturbation's anchored step, ``docs/privacy/barycenters.md``) calls it with a
    public budget; whether the plan is optimal depends on the data and is a
    curator-only diagnostic.
    """
    aa, bb, cost, _, _ = _prepare(x, y, a, b, p, metric, 1)  # validated once
    it = (plan_budget(*cost.shape) if max_iter is None
          else check_int(max_iter, "max_iter", minimum=1))
    return budgeted_emd(aa, bb, cost, it)
