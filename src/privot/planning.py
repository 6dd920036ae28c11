r"""Plan a release by its error: the smallest epsilon whose stated error meets a target.

Every capability states its error from public parameters before anything is spent
(:mod:`privot.error_bounds`, issue 28): ``heatmap_error``, ``barycenter_error``,
``sample_error``, ``learning_error``. Here the statement is read the other way round:
given ``state(epsilon) -> ErrorStatement`` (the capability's statement with every other
public parameter fixed) and a target, :func:`epsilon_for_error` finds the smallest epsilon
whose ``bound <= target``, and :func:`error_curve` tabulates ``(epsilon, bound)``.

The search
----------
A geometric bracketing scan over ``[epsilon_min, epsilon_max]`` (a few points per
decade) finds the first scanned epsilon meeting the target; bisection on
:math:`\log\epsilon` between it and the scanned point before it then narrows the bracket
to ``hi / lo <= 1 + rel_tol``, and ``hi`` (rounded up, by at most that factor again, to a
short decimal that still meets the target) is returned: it always meets the target, ``lo``
never does.

It is the *smallest* such epsilon when the bound is non-increasing in epsilon (more
budget, less noise). That holds for the heatmap (noise scale ``1/epsilon``, capped by the
grid's diameter), the barycenter's mean-only plan, DP-SGD's noise norm and the WPM and
k-RR sampling bounds (checked on grids in tests/test_planning.py); it does **not** hold
for every certified box bound (KPM's can rise with epsilon). The scan records whether
the bounds it saw were non-increasing (:attr:`PlannedEpsilon.monotone_on_scan`); when
they were not, the result still meets the target and no scanned smaller epsilon does.

Budget
------
With ``budget`` (a remaining epsilon, an accountant with ``can_spend``, a
:class:`~privot.privacy.ledger.Ledger`, or a predicate ``epsilon -> bool``) a plan that
cannot be afforded is refused before anything is charged, stating the best error the
remaining budget reaches (the bound at the largest affordable epsilon).

Privacy
-------
No data is read and nothing is released or charged: the statements are functions of
public parameters only, and so is every epsilon and bound here (publishable).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from privot.error_bounds import ErrorStatement
from privot.errors import BudgetExceededError, InvalidParameterError

__all__ = ["EPSILON_MAX", "EPSILON_MIN", "PlannedEpsilon", "REL_TOL", "SCAN_PER_DECADE",
           "affordability", "epsilon_for_error", "error_curve",
           "refuse_unaffordable"]

#: Default search interval (pure-DP epsilons outside it are rarely meaningful).
EPSILON_MIN = 1e-3
EPSILON_MAX = 1e3
#: Default relative width of the final bracket.
REL_TOL = 1e-3
#: Points per decade of the bracketing scan.
SCAN_PER_DECADE = 2

State = Callable[[float], ErrorStatement]


@dataclass(frozen=True)
class PlannedEpsilon:
    """The epsilon a plan chose, with its statement.

    Attributes
    ----------
    epsilon : float
        The smallest epsilon found whose statement's bound is ``<= target``.
    statement : ErrorStatement
        ``state(epsilon)``.
    target : float
        The target error, in ``statement.units``.
    lower : float
        The largest epsilon seen whose bound exceeds ``target`` (``epsilon / lower <=
        (1 + rel_tol)**2``: the bisection's bracket and the rounding up; 0 when the
        target is met already at ``epsilon_min``).
    monotone_on_scan : bool
        Whether the bounds of the bracketing scan were non-increasing in epsilon.
    evaluations : int
        How many statements the search computed.
    scan : list of (float, float)
        The bracketing scan's ``(epsilon, bound)``, for the record.
    """

    epsilon: float
    statement: ErrorStatement
    target: float
    lower: float
    monotone_on_scan: bool
    evaluations: int
    scan: list[tuple[float, float]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"epsilon = {self.epsilon:.6g}: {self.statement}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the statement as in ``release.json``)."""
        return {"epsilon": self.epsilon, "target": self.target, "lower": self.lower,
                "monotone_on_scan": self.monotone_on_scan, "evaluations": self.evaluations,
                "statement": self.statement.to_dict()}


def error_curve(state: State, epsilons: Sequence[float]) -> list[tuple[float, float]]:
    """``[(epsilon, bound), ...]``: the stated bound at each epsilon (public).

    Parameters
    ----------
    state : callable
        ``epsilon -> ErrorStatement``.
    epsilons : sequence of float
        Each > 0.

    Returns
    -------
    list of (float, float)
        In the order given; ``bound`` may be ``inf``.
    """
    out = []
    for e in epsilons:
        eps = _positive(e, "epsilons")
        out.append((eps, float(_statement(state, eps).bound)))
    return out


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise InvalidParameterError(name, value, "a finite number > 0")
    return float(value)


def _statement(state: State, eps: float) -> ErrorStatement:
    st = state(eps)
    if not isinstance(st, ErrorStatement):
        raise InvalidParameterError("state", type(st).__name__,
                                    "a callable returning an ErrorStatement")
    return st


def _scan_points(lo: float, hi: float) -> list[float]:
    """Geometric points from ``lo`` to ``hi`` (both included), SCAN_PER_DECADE a decade."""
    n = max(1, math.ceil(SCAN_PER_DECADE * math.log10(hi / lo)))
    return [lo * (hi / lo) ** (i / n) for i in range(n)] + [hi]


def _round_up(eps: float, limit: float) -> float:
    """The shortest decimal ``>= eps`` and ``<= limit`` (a readable epsilon)."""
    for digits in range(1, 17):
        scale = 10.0 ** (math.floor(math.log10(eps)) - digits + 1)
        nice = float(f"{math.ceil(eps / scale) * scale:.{digits}g}")
        if eps <= nice <= limit:
            return nice
    return eps


def _refuse_unreachable(target: float, best: ErrorStatement, eps_max: float,
                        alternative: str, scan: list[tuple[float, float]]) -> None:
    """Raise the refusal of a target no epsilon in the interval meets."""
    finite = [(b, e) for e, b in scan if math.isfinite(b)]
    if math.isinf(best.bound) and finite:  # finite only at some epsilons (a plan change)
        b, e = min(finite)
        raise InvalidParameterError(
            "target_error", target, f"at least {b:.6g} {best.units}",
            message=f"target_error={target:g} {best.units} is not reachable: the best "
                    f"bound stated for epsilon in [{scan[0][0]:g}, {eps_max:g}] is "
                    f"{b:.6g} {best.units} (at epsilon = {e:.6g}; none is stated at "
                    f"epsilon = {eps_max:g}); nothing was charged")
    if math.isinf(best.bound):
        alt = f"; {alternative} states a finite bound" if alternative else ""
        why = f" ({best.not_covered})" if best.not_covered else ""
        raise InvalidParameterError(
            "target_error", target, "a plan with a finite error statement",
            message=f"target_error={target:g} cannot be planned: this release states no "
                    f"finite error bound{why}{alt}; nothing was charged")
    raise InvalidParameterError(
        "target_error", target, f"at least {best.bound:.6g} {best.units}",
        message=f"target_error={target:g} {best.units} is not reachable: even epsilon = "
                f"{eps_max:g} states {best}; the best reachable bound is {best.bound:.6g} "
                f"{best.units}; nothing was charged")


def affordability(budget: Any) -> Callable[[float], bool]:
    """``epsilon -> bool``: whether ``budget`` can still pay a pure-epsilon release.

    ``budget``: a number (the remaining epsilon), an accountant with ``can_spend``
    (:class:`~privot.privacy.PrivacyAccountant`, a ledger's accountant), a
    :class:`~privot.privacy.ledger.Ledger` (its remaining epsilon, basic composition) or
    a callable ``epsilon -> bool`` (e.g. a Gaussian release's ``(epsilon, delta)`` check).
    """
    if callable(budget) and not hasattr(budget, "can_spend"):
        return lambda e: bool(budget(e))
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        rem = float(budget)
        return lambda e: e <= rem * (1.0 + 1e-12)
    if hasattr(budget, "can_spend"):
        from privot.privacy.types import PrivacyCost

        return lambda e: bool(budget.can_spend(PrivacyCost(e)))
    if hasattr(budget, "status"):
        rem = float(budget.status(pld=False).remaining_epsilon)
        return lambda e: e <= rem * (1.0 + 1e-12)
    raise InvalidParameterError("budget", type(budget).__name__,
                                "a remaining epsilon, an accountant, a Ledger or a "
                                "callable epsilon -> bool")


def _largest_affordable(affords: Callable[[float], bool], lo: float, hi: float) -> float:
    """The largest epsilon in ``[lo, hi]`` ``affords`` accepts (0 if none), by bisection."""
    if not affords(lo):
        return 0.0
    for _ in range(60):
        if hi / lo <= 1.0 + 1e-9:
            break
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if affords(mid) else (lo, mid)
    return lo


def refuse_unaffordable(plan: PlannedEpsilon, state: State, budget: Any, *,
                        epsilon_min: float = EPSILON_MIN) -> None:
    """Raise :class:`~privot.errors.BudgetExceededError` when ``budget``
    (:func:`affordability`) cannot pay ``plan``, naming the best error reachable with what
    is left (the bound at the largest affordable epsilon); return quietly otherwise."""
    eps_min = epsilon_min
    affords = affordability(budget)
    if affords(plan.epsilon):
        return
    best_eps = _largest_affordable(affords, eps_min, plan.epsilon)
    units = plan.statement.units
    if best_eps == 0.0:
        best = f"nothing: not even epsilon = {eps_min:g} is affordable"
    else:
        st = _statement(state, best_eps)
        best = f"{st.bound:.6g} {units} (at epsilon = {best_eps:.6g})"
    raise BudgetExceededError(
        f"target_error={plan.target:g} {units} needs epsilon = {plan.epsilon:.6g}, more "
        f"than the budget can still pay; the best error reachable with the remaining "
        f"budget is {best}; nothing was charged")


def _bisect(state: State, target: float, lo: float, hi: float, rel_tol: float
            ) -> tuple[float, float, int]:
    """Narrow ``(lo fails, hi meets)`` on log epsilon to ``hi / lo <= 1 + rel_tol``."""
    n = 0
    while hi / lo > 1.0 + rel_tol:
        mid = math.sqrt(lo * hi)
        n += 1
        if _statement(state, mid).bound <= target:
            hi = mid
        else:
            lo = mid
    return lo, hi, n


def epsilon_for_error(state: State, target: float, *, epsilon_min: float = EPSILON_MIN,
                      epsilon_max: float = EPSILON_MAX, rel_tol: float = REL_TOL,
                      budget: Any = None, alternative: str = "") -> PlannedEpsilon:
    """The smallest epsilon whose stated error bound is ``<= target``.

    Parameters
    ----------
    state : callable
        ``epsilon -> ErrorStatement``: the capability's statement, every other public
        parameter fixed (e.g. ``lambda e: heatmap_error(replace(params, epsilon=e))``).
    target : float
        The error to meet, in the statement's units (> 0).
    epsilon_min, epsilon_max : float
        The search interval.
    rel_tol : float, default 1e-3
        Relative width of the final bracket (in (0, 1)).
    budget : optional
        What can still be spent (:func:`affordability`); None: not checked.
    alternative : str
        Named in the refusal of a plan with no finite bound (what would state one).

    Returns
    -------
    PlannedEpsilon

    Raises
    ------
    InvalidParameterError
        Bad arguments, or (``name = "target_error"``) no epsilon up to ``epsilon_max``
        meets the target (the message gives the best reachable bound) or the plan
        states no finite bound.
    BudgetExceededError
        The epsilon found is more than ``budget`` can pay (the message gives the best
        error reachable with what is left).
    """
    target = _positive(target, "target_error")
    eps_min = _positive(epsilon_min, "epsilon_min")
    eps_max = _positive(epsilon_max, "epsilon_max")
    if eps_max <= eps_min:
        raise InvalidParameterError("epsilon_max", eps_max, f"> epsilon_min = {eps_min:g}")
    if not (isinstance(rel_tol, float) and 0 < rel_tol < 1):
        raise InvalidParameterError("rel_tol", rel_tol, "a float in (0, 1)")
    scan: list[tuple[float, float]] = []
    hit = None
    for eps in _scan_points(eps_min, eps_max):
        st = _statement(state, eps)
        scan.append((eps, float(st.bound)))
        if st.bound <= target:
            hit = (eps, st)
            break
    if hit is None:
        _refuse_unreachable(target, _statement(state, eps_max), eps_max, alternative, scan)
    monotone = all(b2 <= b1 * (1 + 1e-12) for (_, b1), (_, b2) in pairwise(scan))
    if len(scan) == 1:  # met at epsilon_min already
        eps, st, lo, n = hit[0], hit[1], 0.0, 0
    else:
        lo, eps, n = _bisect(state, target, scan[-2][0], hit[0], rel_tol)
        nice = _round_up(eps, min(eps * (1.0 + rel_tol), hit[0]))
        st = _statement(state, nice)
        n += 2
        if st.bound <= target:
            eps = nice
        else:  # not monotone between eps and nice: keep the bisection's point
            st = _statement(state, eps)
    plan = PlannedEpsilon(epsilon=eps, statement=st, target=target, lower=lo,
                          monotone_on_scan=monotone, evaluations=len(scan) + n, scan=scan)
    if budget is not None:
        refuse_unaffordable(plan, state, budget, epsilon_min=eps_min)
    return plan
