"""LP oracles that certify their own answers: HiGHS's point and duals, checked here.

Tests use LPs solved by SciPy's HiGHS (:func:`scipy.optimize.linprog`) as brute-force
oracles. A solver's status code is a third party's judgement and changes between
releases; :func:`certified_linprog` never reads it. It checks the primal point and the
dual multipliers HiGHS returns against the LP itself and returns the optimal value only
when the two bracket it tightly:

    min c'x  s.t.  A_ub x <= b_ub,  A_eq x = b_eq,  lb <= x <= ub.

For any multipliers ``y_ub <= 0`` and ``y_eq`` (here HiGHS's ``marginals``, which are
those of the dual) and reduced costs ``r = c - A_ub' y_ub - A_eq' y_eq``, every feasible
``x'`` has ``c'x' = y_ub'A_ub x' + y_eq'b_eq + r'x' >= b_ub'y_ub + b_eq'y_eq +
sum_j min(r_j lb_j, r_j ub_j)`` (weak duality): a lower bound ``L`` on the optimum. The
returned point gives the upper bound ``U = c'x`` once it is checked feasible. The value
is accepted when ``U - L <= rtol (1 + |U|)``; residuals are allowed
``rtol (1 + largest right-hand side)`` and reduced costs of the wrong sign on an
infinite bound ``rtol (1 + max |c|)`` (then counted as zero). Import it as
``from certified_lp import certified_linprog`` (``tests/`` is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

__all__ = ["certified_linprog", "certify_lp"]

#: HiGHS's feasibility tolerances (default 1e-7) at their minimum: at the default it may
#: satisfy ``sum_j pi_ij = mu_i = 2.5e-8`` with 0, a residual far above what the tests'
#: comparisons (relative 1e-9) can absorb.
_TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _box(bounds, n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(bounds, tuple) and len(bounds) == 2 and not isinstance(bounds[0], tuple):
        bounds = [bounds] * n
    lb = np.array([-np.inf if b[0] is None else float(b[0]) for b in bounds])
    ub = np.array([np.inf if b[1] is None else float(b[1]) for b in bounds])
    return lb, ub


def _dense_rows(a, n: int) -> np.ndarray:
    if a is None:
        return np.zeros((0, n))
    return a.toarray() if hasattr(a, "toarray") else np.asarray(a, dtype=float)


def certify_lp(c, *, x, y_ub=None, y_eq=None, A_ub=None, b_ub=None, A_eq=None,  # noqa: N803
               b_eq=None, bounds=(0, None), rtol: float = 1e-10) -> tuple[float, float]:
    """``(U, L)``: the value of the checked point ``x`` and the dual lower bound, or an
    ``AssertionError`` saying which condition fails (module docstring)."""
    c = np.asarray(c, dtype=float)
    n = c.size
    x = np.asarray(x, dtype=float)
    a_ub, a_eq = _dense_rows(A_ub, n), _dense_rows(A_eq, n)
    b_ub = np.zeros(0) if b_ub is None else np.asarray(b_ub, dtype=float)
    b_eq = np.zeros(0) if b_eq is None else np.asarray(b_eq, dtype=float)
    y_ub = np.zeros(b_ub.size) if y_ub is None else np.minimum(np.asarray(y_ub, float), 0.0)
    y_eq = np.zeros(b_eq.size) if y_eq is None else np.asarray(y_eq, dtype=float)
    lb, ub = _box(bounds, n)
    rhs = 1.0 + max([0.0, *np.abs(b_ub), *np.abs(b_eq), *np.abs(lb[np.isfinite(lb)]),
                     *np.abs(ub[np.isfinite(ub)])])
    p_tol = rtol * rhs
    assert x.shape == (n,) and np.all(np.isfinite(x)), "the solver gave no finite point"
    assert np.all(x >= lb - p_tol) and np.all(x <= ub + p_tol), "x is outside its bounds"
    if b_ub.size:
        worst = float(np.max(a_ub @ x - b_ub))
        assert worst <= p_tol, f"x violates an inequality by {worst:.3g} > {p_tol:.3g}"
    if b_eq.size:
        worst = float(np.max(np.abs(a_eq @ x - b_eq)))
        assert worst <= p_tol, f"x violates an equality by {worst:.3g} > {p_tol:.3g}"
    r = c - a_ub.T @ y_ub - a_eq.T @ y_eq
    d_tol = rtol * (1.0 + float(np.max(np.abs(c))))
    bad = ((r > 0) & np.isinf(lb)) | ((r < 0) & np.isinf(ub))
    assert np.all(np.abs(r[bad]) <= d_tol), "the multipliers are not dual feasible"
    r = np.where(bad, 0.0, r)
    with np.errstate(invalid="ignore"):
        box_term = np.where(r > 0, r * lb, np.where(r < 0, r * ub, 0.0))
    lower = float(b_ub @ y_ub + b_eq @ y_eq + np.sum(box_term))
    upper = float(c @ x)
    gap = upper - lower
    assert gap <= rtol * (1.0 + abs(upper)), (
        f"duality gap {gap:.3g}: the point ({upper!r}) is not certified optimal (bound "
        f"{lower!r}, allowed {rtol * (1.0 + abs(upper)):.3g})")
    return upper, lower


def certified_linprog(c, *, A_ub=None, b_ub=None, A_eq=None, b_eq=None,  # noqa: N803
                      bounds=(0, None), rtol: float = 1e-10) -> tuple[float, np.ndarray]:
    """HiGHS's optimum of the LP, certified by :func:`certify_lp`: ``(value, x)``.

    The solver's status and message are only quoted when it returns no point."""
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs", options=_TIGHT)
    if res.x is None:
        raise AssertionError(f"HiGHS returned no point (status {res.status}: {res.message})")
    y_ub = None if A_ub is None else res.ineqlin.marginals
    y_eq = None if A_eq is None else res.eqlin.marginals
    value, _ = certify_lp(c, x=res.x, y_ub=y_ub, y_eq=y_eq, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq,
                          b_eq=b_eq, bounds=bounds, rtol=rtol)
    return value, np.asarray(res.x)
