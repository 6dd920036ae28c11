"""Exact Wasserstein distances between weighted point clouds (POT's network simplex).

The linear program

.. math::

    W_p^p(\\mu, \\nu) = \\min_{\\gamma \\in \\Pi(a, b)} \\sum_{i, j} \\gamma_{ij}\\, d(x_i, y_j)^p,
    \\qquad \\Pi(a, b) = \\{\\gamma \\ge 0 : \\gamma 1_m = a,\\ \\gamma^T 1_n = b\\},

is solved with :func:`ot.emd` / :func:`ot.emd2`. The solver's result code is
checked: a run that stops at ``max_iter`` (or reports an infeasible/unbounded
problem) raises :class:`~privot.errors.ConvergenceError` instead of returning a
sub-optimal plan with a warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import ot
from scipy.spatial.distance import cdist

from privot._validation import check_int
from privot.errors import ConvergenceError, InvalidParameterError
from privot.ot._common import check_cloud_pair, check_mass_pair, check_p

__all__ = ["ground_cost", "wasserstein_distance", "optimal_plan", "METRICS"]

#: Ground metrics accepted by :func:`ground_cost` (names of :func:`scipy.spatial.distance.cdist`).
METRICS = ("euclidean", "cityblock", "chebyshev")

_RESULT_OPTIMAL = 1  # POT's emd_c result code for an optimal solution


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


def _cost(x: np.ndarray, y: np.ndarray, p: float, metric: str) -> np.ndarray:
    if metric == "euclidean" and p == 2:
        return cdist(x, y, metric="sqeuclidean")
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan, log = ot.emd(aa, bb, cost, numItermax=it, log=True)
    _check_log(log, it)
    return np.asarray(plan)
