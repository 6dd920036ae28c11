"""Entropic optimal transport: Sinkhorn iterations in the log domain.

Stable for small regularisation: the kernel :math:`e^{-C/\\varepsilon}` is never
formed; each half-step is a log-sum-exp (:func:`scipy.special.logsumexp`) over
:math:`\\log b_j + (g_j - C_{ij})/\\varepsilon`, which cannot underflow to zero or
overflow the way the plain scaling iterations :math:`u = a / (K v)` do.

Privacy
-------
Non-private numerics: no release happens here, and ``epsilon`` in this module is the
entropic regularisation, not a privacy budget. Unit, neighbouring relation, sensitivity
and guarantee belong to the mechanisms that call a solver on already private data
(post-processing) or on raw data only for evaluation (``docs/privacy/``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import logsumexp

from privot._validation import check_finite_array, check_int, check_positive
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.ot._common import check_mass_pair

__all__ = ["SinkhornResult", "sinkhorn"]

_POLICIES = ("raise", "warn")


@dataclass(frozen=True, eq=False)
class SinkhornResult:
    """Result of :func:`sinkhorn`.

    Attributes
    ----------
    plan : (n, m) array
        Entropic plan :math:`P_{ij} = a_i b_j \\exp((f_i + g_j - C_{ij})/\\varepsilon)`.
    cost : float
        Transport cost :math:`\\langle P, C \\rangle` (without the entropy term).
    objective : float
        Entropic objective :math:`\\langle P, C\\rangle + \\varepsilon\\,
        \\mathrm{KL}(P \\,\\|\\, a b^T)`.
    f : (n,) array
        Dual potential of the rows.
    g : (m,) array
        Dual potential of the columns.
    n_iter : int
        Number of full (row + column) iterations run.
    converged : bool
        Whether ``marginal_error <= tol * mass`` was reached within ``max_iter``.
    marginal_error : float
        :math:`\\|P 1 - a\\|_1 + \\|P^T 1 - b\\|_1` of the returned plan.
    reg : float
        The regularisation :math:`\\varepsilon` used.
    """

    plan: np.ndarray
    cost: float
    objective: float
    f: np.ndarray
    g: np.ndarray
    n_iter: int
    converged: bool
    marginal_error: float
    reg: float


def _log_weights(w: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(w)  # log 0 = -inf: zero-weight points carry no mass


def sinkhorn(cost: np.ndarray, *, reg: float, a: np.ndarray | None = None,
             b: np.ndarray | None = None, max_iter: int = 10_000, tol: float = 1e-8,
             on_nonconvergence: Literal["raise", "warn"] = "warn") -> SinkhornResult:
    """Entropic OT by Sinkhorn iterations in the log domain.

    Solves

    .. math::

        \\min_{P \\in \\Pi(a, b)} \\langle P, C\\rangle
        + \\varepsilon\\, \\mathrm{KL}(P \\,\\|\\, a b^T)

    by alternating the exact soft-min updates of the dual potentials

    .. math::

        g_j &\\leftarrow -\\varepsilon \\log \\sum_i
              \\exp\\big(\\log a_i + (f_i - C_{ij})/\\varepsilon\\big), \\\\
        f_i &\\leftarrow -\\varepsilon \\log \\sum_j
              \\exp\\big(\\log b_j + (g_j - C_{ij})/\\varepsilon\\big),

    with plan :math:`P_{ij} = a_i b_j \\exp((f_i + g_j - C_{ij})/\\varepsilon)`. After
    each ``g`` update the column marginals are exact; the row marginal error of
    :math:`(f, g)` is :math:`\\sum_i a_i |\\exp((f_i - f_i^{new})/\\varepsilon) - 1|`,
    which is the stopping criterion (relative to the total mass).

    Parameters
    ----------
    cost : (n, m) array
        Finite cost matrix :math:`C`.
    reg : float
        Entropic regularisation :math:`\\varepsilon > 0`.
    a : (n,) array, optional
        Row weights (uniform ``1/n`` by default).
    b : (m,) array, optional
        Column weights (uniform ``1/m`` by default), same total mass as ``a``.
    max_iter : int, default 10000
        Maximum number of iterations.
    tol : float, default 1e-8
        Tolerance on the L1 marginal error, relative to the total mass.
    on_nonconvergence : {"raise", "warn"}, default "warn"
        What to do when ``tol`` is not reached within ``max_iter``: raise
        :class:`~privot.errors.ConvergenceError`, or emit a ``RuntimeWarning`` and
        return the last iterate (with ``converged=False``).

    Returns
    -------
    SinkhornResult

    Raises
    ------
    InvalidDataError
        Non-finite, empty or non-2-D ``cost``; bad weights or unequal masses.
    InvalidParameterError
        ``reg <= 0``, ``tol <= 0``, ``max_iter < 1`` or an unknown ``on_nonconvergence``.
    ConvergenceError
        A potential became non-finite, or no convergence with ``on_nonconvergence="raise"``.
    """
    c = check_finite_array(cost, "cost", ndim=2)
    n, m = c.shape
    if n == 0 or m == 0:
        raise InvalidDataError(f"cost is empty (shape {c.shape}); at least one value is needed")
    eps = check_positive(reg, "reg")
    tolerance = check_positive(tol, "tol")
    it_max = check_int(max_iter, "max_iter", minimum=1)
    if on_nonconvergence not in _POLICIES:
        raise InvalidParameterError("on_nonconvergence", on_nonconvergence,
                                    f"one of {_POLICIES}")
    aa, bb = check_mass_pair(a, b, n, m)
    mass = float(aa.sum())
    log_a, log_b = _log_weights(aa), _log_weights(bb)
    support_a = aa > 0
    with np.errstate(over="ignore"):
        c_eps = c / eps
    if not np.all(np.isfinite(c_eps)):
        raise ConvergenceError(
            f"cost / reg is non-finite (max |cost|={float(np.max(np.abs(c)))!r}, reg={eps!r}): "
            "rescale the cost matrix or increase reg"
        )

    f = np.zeros(n)
    g = np.zeros(m)
    converged = False
    n_iter = 0
    for n_iter in range(1, it_max + 1):  # noqa: B007 (n_iter is used after the loop)
        # column update: makes P^T 1 = b exactly
        g = -eps * logsumexp(log_a[:, None] + f[:, None] / eps - c_eps, axis=0)
        # row update, also used to measure the row marginal error of (f, g)
        f_new = -eps * logsumexp(log_b[None, :] + g[None, :] / eps - c_eps, axis=1)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(f_new))):
            raise ConvergenceError(
                f"Sinkhorn potentials became non-finite at iteration {n_iter} (reg={eps!r}); "
                "check the scale of the cost matrix"
            )
        with np.errstate(over="ignore"):
            row_err = float(np.sum(aa[support_a] * np.abs(
                np.expm1((f[support_a] - f_new[support_a]) / eps))))
        if row_err <= tolerance * mass:
            converged = True
            break
        f = f_new

    log_plan = log_a[:, None] + log_b[None, :] + (f[:, None] + g[None, :]) / eps - c_eps
    with np.errstate(under="ignore"):
        plan = np.exp(log_plan)
    if not np.all(np.isfinite(plan)):
        raise ConvergenceError(
            f"Sinkhorn plan has non-finite entries after {n_iter} iterations (reg={eps!r})"
        )
    marginal_error = float(np.abs(plan.sum(axis=1) - aa).sum()
                           + np.abs(plan.sum(axis=0) - bb).sum())
    transport = float(np.sum(plan * c))
    positive = plan > 0
    kl = float(np.sum(plan[positive] * log_plan[positive]
                      - plan[positive] * (log_a[:, None] + log_b[None, :])[positive])
               - plan.sum() + mass * float(bb.sum()))
    objective = transport + eps * kl
    if not (math.isfinite(transport) and math.isfinite(objective)):
        raise ConvergenceError(
            f"Sinkhorn cost is not finite (cost={transport!r}, objective={objective!r})"
        )
    if not converged:
        msg = (f"Sinkhorn did not converge in max_iter={it_max} iterations (reg={eps!r}): "
               f"marginal error {marginal_error:.3e} > tol * mass = {tolerance * mass:.3e}")
        if on_nonconvergence == "raise":
            raise ConvergenceError(msg)
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return SinkhornResult(plan=plan, cost=transport, objective=objective, f=f, g=g,
                          n_iter=n_iter, converged=converged,
                          marginal_error=marginal_error, reg=eps)
