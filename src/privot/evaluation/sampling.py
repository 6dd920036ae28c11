r"""Error measures of the local-DP sampling mechanisms (paper 003): exact :math:`W_p`.

The sampling part of :mod:`privot.evaluation`. Two questions a curator who holds the
users' distributions asks of a mechanism, both answered with the exact transport cost
(POT's network simplex) for a public cost matrix ``cost`` ``(k, k_v)``,
:math:`C_{ij} = d(x_i, v_j)^p`:

* :func:`per_user_w_p` -- per-user utility: :math:`W_p(\mu_u, \nu_u)` between each
  user's distribution and the law :math:`\nu_u = M[\mu_u]` its report is drawn from
  (:meth:`~privot.sampling.SamplingMechanism.privatize`); the quantity of the paper's
  Thm 3.5 (worst case) and of its experiments (average);
* :func:`population_w_p` -- population utility: :math:`W_p(\bar\mu, \hat\mu)` between
  the exact population distribution and the server's estimate from the released reports
  (:meth:`~privot.sampling.PopulationSample.estimate`,
  :func:`~privot.sampling.estimate_population`).

Privacy
-------
Not releases, never publishable: both read the users' exact distributions (or their
exact average) and return an exact statistic of them. Benchmarks and the demo's report
use them; no release path does.
"""

from __future__ import annotations

import warnings

import numpy as np

from privot._validation import check_finite_array, check_int
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError

__all__ = ["per_user_w_p", "population_w_p"]

#: POT's network simplex reports an optimal solution with this result code.
_OPTIMAL = 1
#: Tolerance on the total mass of a distribution (each row of ``mu`` and ``nu``): the
#: solvers' laws sum to one up to their own tolerances (POT itself checks 1e-6).
_MASS_ATOL = 1e-6


def _check_order(p: object) -> float:
    value = float(p)  # type: ignore[arg-type]
    if not np.isfinite(value) or value < 1:
        raise InvalidParameterError("p", p, "a finite number >= 1")
    return value


def _check_rows(values: object, name: str, size: int, what: str) -> np.ndarray:
    """``(n, size)`` non-negative rows of total mass one (a 1-D array is one row)."""
    arr = check_finite_array(values, name)
    rows = arr[None, :] if arr.ndim == 1 else arr
    if rows.ndim != 2 or rows.shape[1] != size:
        raise InvalidDataError(f"{name} must have shape ({size},) or (n, {size}) ({what}), "
                               f"got shape {arr.shape}")
    if np.any(rows < 0) or np.any(np.abs(rows.sum(axis=1) - 1.0) > _MASS_ATOL):
        raise InvalidDataError(f"every row of {name} must be a distribution (non-negative, "
                               f"summing to 1 within {_MASS_ATOL:g})")
    return rows


def _cost_power(a: np.ndarray, b: np.ndarray, cost: np.ndarray, max_iter: int) -> float:
    """:math:`\\min_{\\gamma \\in \\Pi(a, b)} \\langle \\gamma, C \\rangle`, exact."""
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        # the result code is checked below; POT's UserWarning would only duplicate it
        warnings.simplefilter("ignore", UserWarning)
        value, log = ot.emd2(a, b, cost, numItermax=max_iter, log=True)
    if int(log["result_code"]) != _OPTIMAL:
        raise ConvergenceError(
            f"POT's network simplex did not reach an optimal solution "
            f"(max_iter={max_iter}): {log.get('warning') or log['result_code']}")
    return max(float(value), 0.0)


def per_user_w_p(mu: object, nu: object, cost: object, *, p: float = 1.0,
                 max_iter: int = 100_000) -> np.ndarray:
    r"""Exact :math:`W_p(\mu_u, \nu_u)` for every user, ``(n,)``.

    .. math:: W_p(\mu_u, \nu_u) = \Big(\min_{\gamma \in \Pi(\mu_u, \nu_u)}
              \sum_{ij} \gamma_{ij} C_{ij}\Big)^{1/p}

    Parameters
    ----------
    mu : (k,) or (n, k) array
        Each user's distribution over the ``k`` input points (curator-only).
    nu : (k_v,) or (n, k_v) array
        The law of each user's report over the ``k_v`` output points, in the same order
        (:meth:`~privot.sampling.SamplingMechanism.privatize`).
    cost : (k, k_v) array
        :math:`C_{ij} = d(x_i, v_j)^p`, public (:func:`~privot.sampling.cost_matrix`).
    p : float, default 1
        The order, ``>= 1``: the cost is already the ``p``-th power, ``p`` only takes
        the root.
    max_iter : int, default 100000
        Network-simplex iterations per user (POT's default).

    Returns
    -------
    (n,) float array
        One distance per user (``n = 1`` for 1-D inputs).

    Raises
    ------
    InvalidDataError
        Rows that are not distributions, or shapes that do not match ``cost``.
    ConvergenceError
        The network simplex stopped before an optimal plan.
    """
    c = check_finite_array(cost, "cost", ndim=2)
    order = _check_order(p)
    steps = check_int(max_iter, "max_iter", minimum=1)
    a = _check_rows(mu, "mu", c.shape[0], "k = cost.shape[0]")
    b = _check_rows(nu, "nu", c.shape[1], "k_v = cost.shape[1]")
    if a.shape[0] != b.shape[0]:
        raise InvalidDataError(f"mu and nu must have one row per user each, got "
                               f"{a.shape[0]} and {b.shape[0]} rows")
    return np.array([_cost_power(x, y, c, steps) ** (1.0 / order)
                     for x, y in zip(a, b, strict=True)])


def population_w_p(population: object, estimate: object, cost: object, *,
                   p: float = 1.0, max_iter: int = 100_000) -> float:
    r"""Exact :math:`W_p(\bar\mu, \hat\mu)` between the population and an estimate.

    Parameters
    ----------
    population : (k,) array
        The exact population distribution :math:`\bar\mu = \frac1n\sum_u \mu_u`
        (curator-only).
    estimate : (k_v,) array
        The server's estimate from the released reports.
    cost : (k, k_v) array
        :math:`C_{ij} = d(x_i, v_j)^p`, public.
    p : float, default 1
        The order, ``>= 1``.
    max_iter : int, default 100000
        Network-simplex iterations.

    Returns
    -------
    float
    """
    for name, value in (("population", population), ("estimate", estimate)):
        if np.ndim(value) != 1:
            raise InvalidDataError(f"{name} must be one distribution (1-D), got shape "
                                   f"{np.shape(value)}")
    return float(per_user_w_p(population, estimate, cost, p=p, max_iter=max_iter)[0])
