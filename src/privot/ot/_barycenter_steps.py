"""Building blocks of free-support barycenters: exact plans, support points, cost.

Paper 000 (appendix B) splits a fixed-support step of the barycenter into

* **Algorithm 3, SolutionWeights**: the exact optimal plans :math:`T_i` between each
  input measure :math:`\\mu_i` and the candidate barycenter :math:`\\nu`; the solution
  :math:`(\\mathbf S, \\mathbf w)` of Definition 5 is read off their non-zero entries,
  :math:`w_j(x_{il}) = T_i[l, j]` and :math:`S_j = \\{x_{il} : T_i[l, j] > 0\\}`;
* **Algorithm 4, SupportPoints**: each atom is moved to the minimiser of its share of
  the transport cost, :math:`\\nu^{(j)} = \\arg\\min_y \\sum_i \\beta_i \\sum_l
  T_i[l, j]\\, \\|x_{il} - y\\|^p` (equation (3)).

Alternating the two is the exact free-support fixed point (Cuturi and Doucet 2014;
Alvarez-Esteban et al. 2016). :func:`barycenter_cost` evaluates the objective
:math:`\\sum_i \\beta_i W_p^p(\\mu_i, \\nu)` with exact OT.

Privacy
-------
Non-private numerics: no noise, no budget. The private barycenters call these steps on
already private coresets (post-processing, ``privot.barycenters.api``); output
perturbation adds noise to its own anchored step, whose sensitivity (unit: one point of
one group, replace-one) is derived in ``docs/privacy/barycenters.md``. Every step has a
public work budget (``plan_budget``) and ``on_failure="fallback"`` answers on a release
path, so nothing the data decides stops a release after the charge.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import minimize

from privot._validation import (
    check_group_sequence,
    check_int,
    check_points,
    check_positive,
    check_weights,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot._common import check_p
from privot.ot._exact import _check_log, _cost, budgeted_emd, plan_budget

__all__ = ["solution_weights", "support_points", "barycenter_cost", "ON_FAILURE"]

#: Policies for a network simplex that stops at its budget: ``"raise"``
#: (ConvergenceError) or ``"fallback"`` (a feasible coupling, see :class:`Planner`).
ON_FAILURE = ("raise", "fallback")


# ----------------------------------------------------------------------------- validation

def check_measures(measures: object, measure_weights: object | None = None,
                   group_weights: object | None = None, *, name: str = "measures"
                   ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Validate ``k >= 1`` point clouds of a common dimension, their weights and ``beta``.

    Returns the clouds ``(n_i, d)``, the weights (each summing to one) and the group
    weights :math:`\\beta` (normalised to sum to one; uniform ``1/k`` by default).
    ``name`` is the caller's name for ``measures`` in error messages.
    """
    items = check_group_sequence(measures, name)
    clouds = [check_points(x, f"{name}[{i}]") for i, x in enumerate(items)]
    d = clouds[0].shape[1]
    for i, x in enumerate(clouds):
        if x.shape[1] != d:
            raise InvalidDataError(
                f"all {name} must have the same dimension d; {name}[0] has d={d} "
                f"but {name}[{i}] has shape {x.shape}")
    k = len(clouds)
    if measure_weights is None:
        weights = [np.full(x.shape[0], 1.0 / x.shape[0]) for x in clouds]
    else:
        mw = list(measure_weights)  # type: ignore[call-overload]
        if len(mw) != k:
            raise InvalidDataError(
                f"measure_weights has {len(mw)} entries but there are k={k} {name}")
        weights = [check_weights(w, x.shape[0], f"measure_weights[{i}]")
                   for i, (w, x) in enumerate(zip(mw, clouds, strict=True))]
    beta = check_weights(group_weights, k, "group_weights")
    return clouds, weights, beta


def check_support(support: object, d: int, name: str = "support") -> np.ndarray:
    """A finite ``(m, d)`` support of the right dimension."""
    s = check_points(support, name)
    if s.shape[1] != d:
        raise InvalidDataError(
            f"{name} must have the dimension d={d} of the measures, got shape {s.shape}")
    return s


# ----------------------------------------------------------------------------- exact OT

def exact_plan(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """``ot.emd`` with its result code checked (ConvergenceError if not optimal).

    Budget :func:`~privot.ot._exact.plan_budget` ``(n, m)``.
    """
    cap = plan_budget(a.size, b.size)
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan, log = ot.emd(a, b, cost, numItermax=cap, log=True)
    _check_log(log, cap)
    return np.asarray(plan)


class Planner:
    """The plan solver of a barycenter run, with its failure policy.

    ``Planner("raise")`` is :func:`exact_plan` (ConvergenceError when the network
    simplex stops at its budget). ``Planner("fallback")`` never raises: it returns
    :func:`~privot.ot._exact.budgeted_emd`'s coupling (optimal, or repaired into
    :math:`\\Pi(a, b)` by ``round_to_polytope``) under the same public budget
    :func:`~privot.ot._exact.plan_budget` ``(n, m)``, and counts the non-optimal plans
    in ``non_optimal``.
    """

    def __init__(self, on_failure: str = "raise") -> None:
        if on_failure not in ON_FAILURE:
            raise InvalidParameterError("on_failure", on_failure, f"one of {ON_FAILURE}")
        self.total = on_failure == "fallback"
        self.non_optimal = 0

    def __call__(self, a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> np.ndarray:
        if not self.total:
            return exact_plan(a, b, cost)
        res = budgeted_emd(a, b, cost, plan_budget(a.size, b.size))
        self.non_optimal += int(not res.optimal)
        return res.plan


def merge_duplicates(clouds: Sequence[np.ndarray], weights: Sequence[np.ndarray]
                     ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The same measures with repeated points merged (their weights summed).

    A multiset such as people drawn with replacement from places has far fewer distinct
    points than rows; every transport problem shrinks accordingly and its value is
    unchanged (the measure is the same).
    """
    out_x, out_w = [], []
    for x, w in zip(clouds, weights, strict=True):
        uniq, inverse = np.unique(x, axis=0, return_inverse=True)
        if uniq.shape[0] == x.shape[0]:
            out_x.append(x)
            out_w.append(w)
            continue
        out_x.append(uniq)
        out_w.append(np.bincount(inverse.reshape(-1), weights=w, minlength=uniq.shape[0]))
    return out_x, out_w


def exact_plans(clouds: Sequence[np.ndarray], weights: Sequence[np.ndarray],
                support: np.ndarray, b: np.ndarray, p: float,
                planner: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
                = exact_plan) -> list[np.ndarray]:
    """Exact plans ``T_i`` ``(n_i, m)`` between each measure and ``(support, b)``."""
    return [planner(w, b, _cost(x, support, p, "euclidean"))
            for x, w in zip(clouds, weights, strict=True)]


def plans_cost(clouds: Sequence[np.ndarray], plans: Sequence[np.ndarray],
               support: np.ndarray, beta: np.ndarray, p: float) -> float:
    """:math:`\\sum_i \\beta_i \\langle T_i, C(x_i, \\nu)\\rangle`."""
    return float(sum(bt * float(np.sum(t * _cost(x, support, p, "euclidean")))
                     for x, t, bt in zip(clouds, plans, beta, strict=True)))


def _support_weights(support_weights: object | None, m: int) -> np.ndarray:
    return check_weights(support_weights, m, "support_weights")


def solution_weights(support: np.ndarray, measures: Sequence[np.ndarray], *,
                     measure_weights: Sequence[np.ndarray] | None = None,
                     support_weights: np.ndarray | None = None,
                     p: float = 2, on_failure: str = "raise") -> list[np.ndarray]:
    """Exact optimal plans between each measure and a candidate barycenter (paper 000, Alg. 3).

    For each :math:`i`,

    .. math::

        T_i \\in \\operatorname*{arg\\,min}_{T \\in \\Pi(a_i, b)} \\sum_{l, j}
        T[l, j]\\, \\|x_{il} - \\nu^{(j)}\\|^p ,

    solved by POT's network simplex (result code checked). The solution
    :math:`(\\mathbf S, \\mathbf w)` of Definition 5 is the set of non-zero entries:
    :math:`w_j(x_{il}) = T_i[l, j]`, :math:`S_j = \\{x_{il} : T_i[l, j] > 0\\}`.

    Parameters
    ----------
    support : (m, d) array
        Atoms :math:`\\nu^{(j)}` of the candidate barycenter.
    measures : sequence of k arrays (n_i, d)
        Supports of the input measures :math:`\\mu_i` (sizes may differ).
    measure_weights : sequence of k arrays (n_i,), optional
        Weights :math:`a_i` of each measure (normalised to one; uniform by default).
    support_weights : (m,) array, optional
        Weights :math:`b` of the atoms (normalised to one; uniform ``1/m`` by default).
    p : float, default 2
        Exponent of the Euclidean ground cost, ``p >= 1``.
    on_failure : {"raise", "fallback"}, default "raise"
        What happens when a network simplex stops at its budget
        (:func:`~privot.ot.plan_budget` ``(n_i, m)``, a function of the sizes only):
        ``"raise"`` raises ``ConvergenceError``; ``"fallback"`` returns that group's
        plan repaired into :math:`\\Pi(a_i, b)` (:func:`~privot.ot.round_to_polytope`:
        feasible, possibly sub-optimal, may have more non-zeros), so the call always
        answers (release paths).

    Returns
    -------
    list of k arrays (n_i, m)
        The plans; ``T_i`` has row sums :math:`a_i` and column sums :math:`b`, and at most
        :math:`n_i + m - 1` non-zeros (when optimal).

    Raises
    ------
    InvalidDataError
        No measure, an empty or non-finite cloud, mismatched dimensions, bad weights.
    InvalidParameterError
        ``p < 1``, an unknown ``on_failure``.
    ConvergenceError
        ``on_failure="raise"`` and the network simplex did not reach an optimal solution.
    """
    planner = Planner(on_failure)
    clouds, weights, _ = check_measures(measures, measure_weights)
    s = check_support(support, clouds[0].shape[1])
    b = _support_weights(support_weights, s.shape[0])
    return exact_plans(clouds, weights, s, b, check_p(p), planner)


def barycenter_cost(measures: Sequence[np.ndarray], support: np.ndarray, *,
                    support_weights: np.ndarray | None = None,
                    measure_weights: Sequence[np.ndarray] | None = None,
                    group_weights: np.ndarray | None = None, p: float = 2) -> float:
    """Exact barycenter objective of a candidate :math:`\\nu = \\sum_j b_j \\delta_{\\nu^{(j)}}`.

    .. math::

        F(\\nu) = \\sum_{i=1}^k \\beta_i\\, W_p^p(\\mu_i, \\nu),
        \\qquad \\beta_i = 1/k \\text{ by default},

    each :math:`W_p^p` with the Euclidean ground cost :math:`\\|x - y\\|^p`, computed by
    POT's network simplex (result code checked).

    Parameters
    ----------
    measures : sequence of k arrays (n_i, d)
        Supports of the input measures.
    support : (m, d) array
        Atoms of the candidate barycenter.
    support_weights : (m,) array, optional
        Weights of the atoms (uniform by default).
    measure_weights : sequence of k arrays (n_i,), optional
        Weights of each measure (uniform by default).
    group_weights : (k,) array, optional
        :math:`\\beta` (normalised to one; uniform by default).
    p : float, default 2
        Exponent, ``p >= 1``.

    Returns
    -------
    float
        :math:`F(\\nu) \\ge 0`.

    Raises
    ------
    InvalidDataError, InvalidParameterError, ConvergenceError
        As :func:`solution_weights`; also bad ``group_weights``.
    """
    clouds, weights, beta = check_measures(measures, measure_weights, group_weights)
    s = check_support(support, clouds[0].shape[1])
    b = _support_weights(support_weights, s.shape[0])
    pp = check_p(p)
    clouds, weights = merge_duplicates(clouds, weights)
    return exact_cost(clouds, weights, beta, s, b, pp)


def exact_cost(clouds: Sequence[np.ndarray], weights: Sequence[np.ndarray], beta: np.ndarray,
               support: np.ndarray, b: np.ndarray, p: float,
               planner: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
               = exact_plan) -> float:
    """Unvalidated :func:`barycenter_cost` (an upper bound when ``planner`` returns a
    feasible, non-optimal plan)."""
    total = 0.0
    for x, w, bt in zip(clouds, weights, beta, strict=True):
        cost = _cost(x, support, p, "euclidean")
        # ot.emd + <T, C> is faster than ot.emd2 here (no dual/gradient bookkeeping)
        total += float(bt) * max(float(np.sum(planner(w, b, cost) * cost)), 0.0)
    return total


# ----------------------------------------------------------------------------- Algorithm 4

def support_points(measures: Sequence[np.ndarray], plans: Sequence[np.ndarray], *,
                   p: float = 2, init: np.ndarray | None = None,
                   group_weights: np.ndarray | None = None, max_iter: int = 200,
                   tol: float = 1e-10) -> np.ndarray:
    """Move each atom to the minimiser of its share of the cost (paper 000, Alg. 4).

    .. math::

        \\nu^{(j)} = \\operatorname*{arg\\,min}_{y \\in \\mathbb R^d}
        \\phi_j(y), \\qquad \\phi_j(y) = \\sum_{i=1}^k \\beta_i \\sum_{l=1}^{n_i}
        T_i[l, j]\\, \\|x_{il} - y\\|^p ,

    equation (3) with :math:`w_j(x_{il}) = \\beta_i T_i[l, j]`. :math:`\\phi_j` is convex
    for :math:`p \\ge 1` (strictly for :math:`p > 1`). Solved by

    * ``p == 2``: the weighted mean :math:`\\sum_{il} w_{ilj} x_{il} / \\sum_{il} w_{ilj}`
      (closed form);
    * ``p == 1``: Weiszfeld's iteration with the Vardi-Zhang (2000) rule for an iterate
      that coincides with a data point :math:`x^\\ast` of weight :math:`\\eta`: with
      :math:`R = \\sum_{x \\ne y} w (x - y)/\\|x - y\\|`, the step is
      :math:`y \\leftarrow (1 - \\min(1, \\eta/\\|R\\|))\\, \\tilde T(y)
      + \\min(1, \\eta / \\|R\\|)\\, y` (:math:`\\tilde T` the Weiszfeld map over the other
      points), and :math:`y` is optimal when :math:`\\|R\\| \\le \\eta`. It is a descent
      method; it stops when no atom moves more than ``tol`` (relative to the data scale);
    * other ``p``: L-BFGS-B (:func:`scipy.optimize.minimize`) on :math:`\\sum_j \\phi_j`
      with its analytic gradient, started from the weighted means.

    Parameters
    ----------
    measures : sequence of k arrays (n_i, d)
        Supports :math:`x_{il}` of the input measures.
    plans : sequence of k arrays (n_i, m)
        Non-negative transport plans :math:`T_i` (e.g. from :func:`solution_weights`).
    p : float, default 2
        Exponent, ``p >= 1``.
    init : (m, d) array, optional
        Starting atoms (iterative cases) and the position kept by an atom that receives
        no mass. Without it an atom with zero total mass raises ``InvalidDataError``.
    group_weights : (k,) array, optional
        :math:`\\beta` (normalised; uniform by default, which does not change the argmin).
    max_iter : int, default 200
        Iterations of Weiszfeld / L-BFGS-B.
    tol : float, default 1e-10
        Stopping tolerance of the iterative cases.

    Returns
    -------
    (m, d) array
        The new atoms. For ``p`` other than 1 and 2 an atom for which L-BFGS-B returns a
        non-finite point keeps its start (the weighted mean), so the step always answers
        (it used to raise ``ConvergenceError``).

    Raises
    ------
    InvalidDataError
        Bad measures; plans of the wrong shape, negative or non-finite; an atom with no
        mass and no ``init``.
    InvalidParameterError
        ``p < 1``, ``max_iter < 1``, ``tol <= 0``.
    """
    clouds, _, beta = check_measures(measures, None, group_weights)
    pp = check_p(p)
    it_max = check_int(max_iter, "max_iter", minimum=1)
    tolerance = check_positive(tol, "tol")
    tp = list(plans)
    if len(tp) != len(clouds):
        raise InvalidDataError(f"plans has {len(tp)} entries but there are k={len(clouds)} "
                               "measures")
    checked = []
    m = None
    for i, (t, x) in enumerate(zip(tp, clouds, strict=True)):
        arr = np.asarray(t, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] != x.shape[0] or (m is not None and arr.shape[1] != m):
            raise InvalidDataError(
                f"plans[{i}] must have shape (n_i, m) = ({x.shape[0]}, "
                f"{'m' if m is None else m}), got shape {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidDataError(f"plans[{i}] must be finite and non-negative")
        m = arr.shape[1]
        checked.append(arr)
    m = checked[0].shape[1]
    start = None if init is None else check_support(init, clouds[0].shape[1], "init")
    if start is not None and start.shape[0] != m:
        raise InvalidDataError(f"init has {start.shape[0]} atoms but the plans have m={m}")
    pooled = np.concatenate(clouds)
    w = np.concatenate([bt * t for bt, t in zip(beta, checked, strict=True)])  # (N, m)
    return support_update(pooled, w, pp, start, it_max, tolerance)


def support_update(x: np.ndarray, w: np.ndarray, p: float, init: np.ndarray | None,
                   max_iter: int = 200, tol: float = 1e-10) -> np.ndarray:
    """Unvalidated Algorithm 4 on pooled points ``x`` (N, d) and weights ``w`` (N, m)."""
    mass = w.sum(axis=0)  # (m,)
    empty = mass <= 0
    if np.any(empty) and init is None:
        j = int(np.flatnonzero(empty)[0])
        raise InvalidDataError(
            f"atom {j} receives no mass from the plans; give init to keep it in place")
    safe = np.where(empty, 1.0, mass)
    mean = (w.T @ x) / safe[:, None]
    if init is not None:
        mean[empty] = init[empty]
    if p == 2:
        return mean
    y0 = mean if init is None else init
    scale = max(float(np.ptp(x, axis=0).max()), 1e-300)
    if p == 1:
        y = _weiszfeld(x, w, y0, max_iter, tol * scale)
        # Weiszfeld is a descent method from y0; keep the mean where it is better
        return _best_of(x, w, p, y, mean)
    y = _lbfgs(x, w, p, mean, max_iter, tol)
    return _best_of(x, w, p, y, y0) if init is not None else y


def _objective(x: np.ndarray, w: np.ndarray, p: float, y: np.ndarray) -> np.ndarray:
    """:math:`\\phi_j(y_j)` for every atom, (m,)."""
    dist = np.sqrt(np.maximum(_cost(x, y, 2.0, "euclidean"), 0.0))  # (N, m)
    return np.sum(w * dist**p, axis=0)


def _best_of(x, w, p, y1, y2):
    f1, f2 = _objective(x, w, p, y1), _objective(x, w, p, y2)
    return np.where((f2 < f1)[:, None], y2, y1)


def _weiszfeld(x: np.ndarray, w: np.ndarray, y: np.ndarray, max_iter: int,
               tol: float) -> np.ndarray:
    """Vectorised Weiszfeld with the Vardi-Zhang fix, all m atoms at once."""
    y = y.copy()
    active = w.sum(axis=0) > 0
    for _ in range(max_iter):
        diff = x[:, None, :] - y[None, :, :]  # (N, m, d)
        dist = np.linalg.norm(diff, axis=2)  # (N, m)
        coincide = dist <= 1e-14 * (1.0 + np.abs(y).max())
        inv = np.where(coincide, 0.0, w / np.where(coincide, 1.0, dist))  # (N, m)
        eta = np.sum(np.where(coincide, w, 0.0), axis=0)  # (m,)
        denom = inv.sum(axis=0)
        r_vec = np.einsum("nm,nmd->md", inv, diff)  # R = sum w (x - y)/|x - y|
        r = np.linalg.norm(r_vec, axis=1)
        ok = active & (denom > 0) & (r > eta)
        t_tilde = np.where(ok[:, None], y + r_vec / np.where(ok, denom, 1.0)[:, None], y)
        lam = np.where(ok, np.minimum(1.0, eta / np.where(ok, r, 1.0)), 1.0)
        y_new = (1.0 - lam)[:, None] * t_tilde + lam[:, None] * y
        step = float(np.max(np.linalg.norm(y_new - y, axis=1)))
        y = y_new
        if step <= tol:
            break
    return y


def _lbfgs(x: np.ndarray, w: np.ndarray, p: float, y0: np.ndarray, max_iter: int,
           tol: float) -> np.ndarray:
    m, d = y0.shape

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        y = flat.reshape(m, d)
        diff = y[None, :, :] - x[:, None, :]  # (N, m, d)
        dist = np.linalg.norm(diff, axis=2)
        value = float(np.sum(w * dist**p))
        coef = p * w * np.where(dist > 0, dist, 1.0) ** (p - 2)
        coef = np.where(dist > 0, coef, 0.0)
        grad = np.einsum("nm,nmd->md", coef, diff)
        return value, grad.ravel()

    res = minimize(fun, y0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "ftol": tol, "gtol": tol * 1e-2})
    y = np.asarray(res.x).reshape(m, d)
    # a descent method from the (finite) weighted means: keep them if it went astray
    return np.where(np.all(np.isfinite(y), axis=1)[:, None], y, y0)


def squared_displacement(old: np.ndarray, new: np.ndarray) -> float:
    """:math:`\\sum_j \\|\\nu_j^{new} - \\nu_j^{old}\\|^2` (POT's stopping criterion)."""
    return float(np.sum((new - old) ** 2))


def is_collapsed(support: np.ndarray, clouds: Sequence[np.ndarray]) -> bool:
    """All atoms (m > 1) within a negligible radius while some measure has spread.

    The radius is ``1e-6`` times the largest spread (max distance to its mean) of an
    input measure; a barycenter of spread-out measures is never that concentrated.
    """
    if support.shape[0] < 2:
        return False
    spread = max(float(np.max(np.linalg.norm(x - x.mean(axis=0), axis=1))) for x in clouds)
    if spread <= 0 or not math.isfinite(spread):
        return False
    radius = float(np.max(np.linalg.norm(support - support.mean(axis=0), axis=1)))
    return radius <= 1e-6 * spread
