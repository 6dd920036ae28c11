"""Free-support Wasserstein barycenters with fixed uniform weights (non-private).

Given k discrete measures :math:`\\mu_i = \\sum_l a_{il} \\delta_{x_{il}}` and group
weights :math:`\\beta`, find m atoms :math:`\\nu^{(1)}, \\dots, \\nu^{(m)}` of
:math:`\\nu = \\frac1m \\sum_j \\delta_{\\nu^{(j)}}` minimising

.. math::

    F(\\nu) = \\sum_{i=1}^k \\beta_i\\, W_p^p(\\mu_i, \\nu)

(paper 000, objective (1) under Assumption 2). Every method is the fixed point "plans
for the current support, then Algorithm 4 for the plans"; they differ in the plans:

* ``"sinkhorn"`` (default): entropic plans from batched, stabilised Sinkhorn
  (:mod:`privot.ot._barycenter_sinkhorn`), warm-started across outer iterations, with
  epsilon-scaling on the initial support, then ``polish`` exact steps;
* ``"exact"``: exact plans (Algorithm 3, network simplex);
* ``"pot-sinkhorn"``, ``"pot-exact"``: POT's :func:`ot.bregman.free_support_sinkhorn_barycenter`
  and :func:`ot.lp.free_support_barycenter`, for comparison.

With ``on_failure="fallback"`` the solver is *total*: a failure of the requested method
(non-finite or collapsed atoms, failed Sinkhorn potentials, POT's numerical errors)
falls back to the exact fixed point from the same start, with the public budget
``n_outer`` and feasible plans under a public iteration budget
(:func:`~privot.ot.budgeted_plan`); if that fails too, to the start itself (``m`` atoms
of the pooled input support chosen by the k-means++ rule with the caller's generator,
or the caller's ``init``). :attr:`BarycenterFit.fallback` says which was used.

Privacy
-------
Non-private numerics (``epsilon`` here is the entropic regularisation). The private
barycenters call these solvers on already private coresets only (post-processing,
``privot.barycenters.api``); output perturbation adds noise to its own anchored step,
whose sensitivity is derived in ``docs/privacy/barycenters.md``, not to these outputs.
A release path calls it with ``on_failure="fallback"`` so that it always answers after
the budget is charged; which fallback was used is a function of the (private) input
measures only, so it is as publishable as the support.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privot._progress import progress_bar
from privot._validation import check_int, check_positive
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.ot._barycenter_sinkhorn import batched_cost, pad_groups, solve_entropic
from privot.ot._barycenter_steps import (
    ON_FAILURE,
    Planner,
    check_measures,
    check_support,
    exact_cost,
    exact_plans,
    is_collapsed,
    merge_duplicates,
    plans_cost,
    squared_displacement,
    support_update,
)
from privot.ot._common import as_generator, check_p

__all__ = ["BarycenterFit", "free_support_barycenter", "BARYCENTER_METHODS", "FALLBACKS",
           "ON_FAILURE"]

#: Methods accepted by :func:`free_support_barycenter`.
BARYCENTER_METHODS = ("sinkhorn", "exact", "pot-sinkhorn", "pot-exact")
#: Values of :attr:`BarycenterFit.fallback` (None: the requested method answered).
FALLBACKS = ("exact", "initial")
#: Numerical failures that ``on_failure="fallback"`` turns into a fallback.
#: ValueError and RuntimeError too: after validation, POT and scipy report numerical
#: trouble with them, and a release path must not stop on it.
_FAILURES = (ConvergenceError, ArithmeticError, np.linalg.LinAlgError, ValueError,
             RuntimeError)

#: Default number of exact polishing steps after the Sinkhorn fixed point.
DEFAULT_POLISH = 1
#: Epsilon-scaling: start at the largest cost, divide by this factor per stage.
_EPS_FACTOR = 4.0
#: Marginal tolerance of the intermediate epsilon-scaling stages.
_STAGE_TOL = 1e-3


@dataclass(frozen=True, eq=False)
class BarycenterFit:
    """Result of :func:`free_support_barycenter`.

    Attributes
    ----------
    support : (m, d) array
        Atoms :math:`\\nu^{(j)}` of the barycenter.
    weights : (m,) array
        Their weights, uniform :math:`1/m`.
    cost : float
        Exact objective :math:`\\sum_i \\beta_i W_p^p(\\mu_i, \\nu)` of the returned
        support (network simplex), whatever the method.
    method : str
        One of ``BARYCENTER_METHODS``.
    n_outer : int
        Outer (support-update) iterations run, polishing steps included.
    converged : bool
        Whether the squared displacement :math:`\\sum_j \\|\\Delta \\nu^{(j)}\\|^2` fell
        to ``tol`` before ``n_outer`` iterations (always False for ``"pot-*"``, which do
        not report it).
    history : (n_outer,) array
        The objective the method minimises, one value per outer iteration, at the support
        before the update: entropic dual value :math:`\\sum_i \\beta_i (\\langle f_i, a_i
        \\rangle + \\langle g_i, b\\rangle)` for Sinkhorn iterations, exact cost for exact
        ones (polishing steps included); empty for ``"pot-*"``.
    reg : float or None
        Entropic regularisation (None for exact methods).
    fallback : {None, "exact", "initial"}
        ``on_failure="fallback"`` only: None when ``method`` answered; ``"exact"`` when it
        failed and the support is the exact fixed point from the same start (``n_outer``,
        ``converged`` and ``history`` are then that run's); ``"initial"`` when that failed
        too and the support is the start (k-means++ atoms of the pooled input, or
        ``init``; ``n_outer`` 0). Always None with ``on_failure="raise"``.
    failure : str or None
        The error(s) that caused the fallback (type and message), else None.
    non_optimal_plans : int
        ``on_failure="fallback"`` only: exact plans (polishing, fallback steps and the
        final cost) whose network simplex stopped at its public budget
        (:func:`~privot.ot.plan_budget`) and that were repaired into feasible couplings;
        ``cost`` is then an upper bound of the exact objective.
    """

    support: np.ndarray
    weights: np.ndarray
    cost: float
    method: str
    n_outer: int
    converged: bool
    history: np.ndarray
    reg: float | None
    fallback: str | None = None
    failure: str | None = None
    non_optimal_plans: int = 0


def _initial_support(pooled: np.ndarray, mass: np.ndarray, m: int,
                     rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (D^2 sampling) on the pooled weighted points."""
    first = int(rng.choice(pooled.shape[0], p=mass))
    chosen = [first]
    d2 = np.sum((pooled - pooled[first]) ** 2, axis=1)
    for _ in range(1, m):
        prob = mass * d2
        total = float(prob.sum())
        if total <= 0:  # fewer distinct points than atoms: draw from the mass
            prob = mass * (~np.isin(np.arange(pooled.shape[0]), chosen))
            total = float(prob.sum())
        if total <= 0:  # every distinct point already chosen: repeat one by its mass
            prob, total = mass, float(mass.sum())
        nxt = int(rng.choice(pooled.shape[0], p=prob / total))
        chosen.append(nxt)
        d2 = np.minimum(d2, np.sum((pooled - pooled[nxt]) ** 2, axis=1))
    return pooled[np.array(chosen)].copy()


def free_support_barycenter(measures: Sequence[np.ndarray], *, m: int | None = None,
                            init: np.ndarray | None = None,
                            measure_weights: Sequence[np.ndarray] | None = None,
                            group_weights: np.ndarray | None = None, p: float = 2,
                            method: str = "sinkhorn", reg: float = 1e-3, n_outer: int = 50,
                            n_inner: int = 100, tol: float = 1e-5, polish: int | None = None,
                            rng: np.random.Generator | int | None = None,
                            on_failure: str = "raise", progress: bool = False
                            ) -> BarycenterFit:
    """Free-support Wasserstein barycenter with m uniformly weighted atoms.

    Minimises :math:`F(\\nu) = \\sum_i \\beta_i W_p^p(\\mu_i, \\nu)` over
    :math:`\\nu = \\frac1m \\sum_j \\delta_{\\nu^{(j)}}` by the fixed point

    .. math::

        T_i^{(t)} = \\text{plan}(\\mu_i, \\nu^{(t)}), \\qquad
        \\nu^{(j), (t+1)} = \\operatorname*{arg\\,min}_y \\sum_i \\beta_i \\sum_l
        T_i^{(t)}[l, j]\\, \\|x_{il} - y\\|^p ,

    whose second step is paper 000's Algorithm 4 (for ``p = 2`` the weighted mean
    :math:`\\nu^{(j)} = m \\sum_i \\beta_i (T_i^T X_i)_j`). The plans are exact
    (``"exact"``, Algorithm 3) or entropic with regularisation ``reg`` (``"sinkhorn"``:
    :math:`\\min_{T \\in \\Pi(a_i, b)} \\langle T, C_i\\rangle + \\varepsilon\\,
    \\mathrm{KL}(T \\| a_i b^T)`). With exact plans each step cannot increase
    :math:`F`. Iterations stop when :math:`\\sum_j \\|\\nu^{(j),(t+1)} -
    \\nu^{(j),(t)}\\|^2 \\le` ``tol`` (POT's criterion) or after ``n_outer`` steps.

    ``"sinkhorn"`` solves the k entropic problems together, padded to ``(k, max n_i, m)``,
    with stabilised scaling iterations (absorption into log-potentials, log-domain
    fallback), epsilon-scaling from the largest cost down to ``reg`` on the initial
    support, warm-started column potentials across outer iterations, and an inner
    stopping rule on the L1 marginal error (``tol``, at most ``n_inner`` iterations). It
    then runs ``polish`` exact steps (default ``DEFAULT_POLISH``), which remove most of the
    entropic bias. It never returns a non-finite or collapsed support (all atoms on one
    point while the measures are spread out): it raises ``ConvergenceError`` instead.

    Parameters
    ----------
    measures : sequence of k arrays (n_i, d)
        Supports of the input measures (sizes may differ, ``k >= 1``). Costs are
        absolute: ``reg`` is on the scale of :math:`\\|x - y\\|^p` (for data in a ball of
        radius 1/2 all costs are at most 1).
    m : int, optional
        Number of atoms, ``1 <= m <= sum_i n_i``. Required unless ``init`` is given.
    init : (m, d) array, optional
        Initial atoms; by default k-means++ seeding (D^2 sampling) on the pooled
        measure :math:`\\sum_i \\beta_i \\mu_i`, drawn with ``rng``.
    measure_weights : sequence of k arrays (n_i,), optional
        Weights :math:`a_i` (normalised to one; uniform by default).
    group_weights : (k,) array, optional
        :math:`\\beta` (normalised to one; uniform ``1/k`` by default).
    p : float, default 2
        Exponent of the ground cost :math:`\\|x - y\\|^p`, ``p >= 1``. ``"pot-*"`` methods
        need ``p = 2``.
    method : {"sinkhorn", "exact", "pot-sinkhorn", "pot-exact"}
        See above.
    reg : float, default 1e-3
        Entropic regularisation :math:`\\varepsilon > 0` (Sinkhorn methods).
    n_outer : int, default 50
        Maximum outer (support-update) iterations, polishing excluded.
    n_inner : int, default 100
        Maximum Sinkhorn iterations per outer iteration (and per epsilon-scaling stage).
    tol : float, default 1e-5
        Outer tolerance on the squared displacement and inner tolerance on the L1
        marginal error. Measured on the solver benchmark (k = 4, n = 2,000, m = 48):
        1e-5 is 2-3x faster than 1e-7 with the same exact cost (within 0.01%).
    polish : int, optional
        Exact steps after ``"sinkhorn"`` (``DEFAULT_POLISH`` if None; 0 for none). Not
        allowed for other methods.
    rng : numpy.random.Generator or int, optional
        Randomness of the default initialisation (an int is a seed). None draws a fresh
        generator from OS entropy (not reproducible); numpy's global state is never used.
    on_failure : {"raise", "fallback"}, default "raise"
        ``"raise"``: a numerical failure raises ``ConvergenceError`` (below).
        ``"fallback"``: the call always answers once its inputs are valid. Every exact
        plan is solved within the budget :func:`~privot.ot.plan_budget` ``(n_i, m)``,
        ``n_i`` the support size of measure ``i`` after repeated points are merged (a
        function of the input measures, so public when they are private coresets), and
        repaired into a feasible coupling if the budget runs out; if ``method`` fails
        (``ConvergenceError``, a floating-point or numerical error), the exact fixed
        point is run from the same start for at most ``n_outer`` steps; if that fails
        too, the start is returned. :attr:`BarycenterFit.fallback` and ``failure`` say
        what happened. For release paths (post-processing after the budget is charged).
    progress : bool, default False
        A ``tqdm.auto`` bar on stderr over the outer iterations (polishing and fallback
        steps included); nothing is printed when False.

    Returns
    -------
    BarycenterFit

    Raises
    ------
    InvalidDataError
        No measure, an empty or non-finite cloud, mismatched dimensions, bad weights,
        ``init`` of the wrong shape or inconsistent with ``m``.
    InvalidParameterError
        ``m`` outside ``[1, sum_i n_i]``, ``reg <= 0``, ``p < 1``, an unknown ``method``,
        ``n_outer``/``n_inner < 1``, ``tol <= 0``, ``polish < 0``, a bad ``rng`` or an
        unknown ``on_failure``.
    ConvergenceError
        ``on_failure="raise"`` only: non-finite or collapsed support, a failed network
        simplex.
    """
    clouds, weights, beta = check_measures(measures, measure_weights, group_weights)
    if not isinstance(method, str) or method not in BARYCENTER_METHODS:
        raise InvalidParameterError("method", method, f"one of {BARYCENTER_METHODS}")
    pp = check_p(p)
    eps = check_positive(reg, "reg")
    outer = check_int(n_outer, "n_outer", minimum=1)
    inner = check_int(n_inner, "n_inner", minimum=1)
    tolerance = check_positive(tol, "tol")
    if polish is not None and method != "sinkhorn":
        raise InvalidParameterError("polish", polish,
                                    f"None for method={method!r} (polishing is for 'sinkhorn')")
    n_polish = DEFAULT_POLISH if polish is None else check_int(polish, "polish", minimum=0)
    if method.startswith("pot-") and pp != 2:
        raise InvalidParameterError("p", p, f"2 for method={method!r} (POT's solvers)")
    if on_failure not in ON_FAILURE:
        raise InvalidParameterError("on_failure", on_failure, f"one of {ON_FAILURE}")
    if not isinstance(progress, bool):
        raise InvalidParameterError("progress", progress, "True or False")
    planner = Planner(on_failure)
    n_total = sum(x.shape[0] for x in clouds)
    clouds, weights = merge_duplicates(clouds, weights)
    pooled = np.concatenate(clouds)
    if init is None:
        if m is None:
            raise InvalidParameterError("m", m, "an integer >= 1 when init is not given")
        mm = check_int(m, "m", minimum=1, maximum=n_total)
        gen = np.random.default_rng() if rng is None else as_generator(rng)
        mass = np.concatenate([bt * w for bt, w in zip(beta, weights, strict=True)])
        start = _initial_support(pooled, mass / mass.sum(), mm, gen)
    else:
        start = check_support(init, clouds[0].shape[1], "init")
        if m is not None and check_int(m, "m", minimum=1) != start.shape[0]:
            raise InvalidDataError(f"init has {start.shape[0]} atoms but m={m}")
        mm = start.shape[0]
    b = np.full(mm, 1.0 / mm)

    fallback = failure = None
    history: list[float] = []
    bar = progress_bar(progress, total=outer + (n_polish if method == "sinkhorn" else 0),
                       desc=f"barycenter ({method}, {sum(x.shape[0] for x in clouds)} atoms)",
                       unit="it")
    try:
        try:
            support, n_done, converged = _run_method(
                method, clouds, weights, beta, start, b, pp, eps, outer, inner, tolerance,
                n_polish, history, planner, bar)
        except _FAILURES as exc:
            if on_failure == "raise":
                raise
            failure = f"{method}: {type(exc).__name__}: {exc}"
            history = []
            bar.set_postfix_str("fallback: exact")
            try:  # the exact fixed point from the same start, public budget n_outer
                support, n_done, converged = _run_exact(clouds, weights, beta, start, b, pp,
                                                        outer, tolerance, history, planner,
                                                        bar)
                _guard(support, clouds, "exact", eps)
                fallback = "exact"
            except _FAILURES as exc2:
                failure += f"; exact: {type(exc2).__name__}: {exc2}"
                history = []
                support, n_done, converged = start.copy(), 0, False
                fallback = "initial"
        bar.set_postfix_str("exact cost")
        cost = exact_cost(clouds, weights, beta, support, b, pp, planner)
    finally:
        bar.close()
    return BarycenterFit(support=support, weights=b, cost=cost, method=method,
                         n_outer=n_done, converged=converged,
                         history=np.asarray(history, dtype=np.float64),
                         reg=eps if "sinkhorn" in method else None, fallback=fallback,
                         failure=failure, non_optimal_plans=planner.non_optimal)


def _run_method(method, clouds, weights, beta, start, b, pp, eps, outer, inner, tolerance,
                n_polish, history, planner, bar=None):
    """The requested method, its polishing steps and the guard (raises on failure)."""
    if method == "pot-exact" or method == "pot-sinkhorn":
        support = _run_pot(method, clouds, weights, beta, start, b, eps, outer, inner, tolerance)
        n_done, converged = outer, False
        if bar is not None:
            bar.update(outer)
    else:
        support, n_done, converged = start, 0, False
        if method == "sinkhorn":
            support, n_done, converged = _run_sinkhorn(
                clouds, weights, beta, start, b, pp, eps, outer, inner, tolerance, history, bar)
            steps = n_polish
            if bar is not None and n_polish:
                bar.set_postfix_str("polish")
        else:
            steps = outer
        support, n_exact, conv_exact = _run_exact(clouds, weights, beta, support, b, pp, steps,
                                                  tolerance, history, planner, bar)
        n_done += n_exact
        converged = conv_exact if method == "exact" else converged
    _guard(support, clouds, method, eps)
    return support, n_done, converged


def _guard(support: np.ndarray, clouds: list[np.ndarray], method: str, eps: float) -> None:
    if not np.all(np.isfinite(support)):
        raise ConvergenceError(
            f"free-support barycenter (method={method!r}, reg={eps!r}) produced non-finite "
            "atoms; increase reg or use method='sinkhorn' or 'exact'")
    if is_collapsed(support, clouds):
        raise ConvergenceError(
            f"free-support barycenter (method={method!r}, reg={eps!r}) collapsed all "
            f"{support.shape[0]} atoms onto one point although the measures are spread out "
            "(kernel underflow); increase reg or use method='sinkhorn' or 'exact'")


def _run_exact(clouds, weights, beta, support, b, p, steps, tol, history, planner, bar=None):
    pooled = np.concatenate(clouds)
    converged = False
    n_done = 0
    for n_done in range(1, steps + 1):  # noqa: B007 (used after the loop)
        plans = exact_plans(clouds, weights, support, b, p, planner)
        history.append(plans_cost(clouds, plans, support, beta, p))
        w = np.concatenate([bt * t for bt, t in zip(beta, plans, strict=True)])
        new = support_update(pooled, w, p, support)
        disp = squared_displacement(support, new)
        support = new
        if bar is not None:
            bar.update(1)
        if disp <= tol:
            converged = True
            break
    return support, n_done, converged


def _eps_schedule(cost_max: float, reg: float) -> list[float]:
    """Geometric epsilon-scaling stages from the largest cost down to (excluding) reg.

    ``S = ceil(log(cost_max / reg) / log(_EPS_FACTOR))`` stages
    :math:`\\varepsilon_s = reg\\,(cost_{max}/reg)^{(S-s)/S}`, ``s = 0..S-1``: a ratio of at
    most ``_EPS_FACTOR`` between consecutive stages, landing exactly on ``reg``.
    """
    if cost_max <= reg:
        return []
    n_stages = math.ceil(math.log(cost_max / reg) / math.log(_EPS_FACTOR))
    ratio = cost_max / reg
    return [reg * ratio ** ((n_stages - s) / n_stages) for s in range(n_stages)]


def _run_sinkhorn(clouds, weights, beta, start, b, p, eps, outer, inner, tol, history,
                  bar=None):
    pad = pad_groups(clouds, weights)
    k, m = len(clouds), start.shape[0]
    x_flat = pad.x
    g = np.zeros((k, m))
    support = start
    cost = batched_cost(pad, support, p)
    for e in _eps_schedule(float(np.max(cost[pad.mask])), eps):
        g = solve_entropic(pad, b, cost, g, e, inner, max(tol, _STAGE_TOL)).g
    converged = False
    n_done = 0
    f = None
    for n_done in range(1, outer + 1):  # noqa: B007 (used after the loop)
        if n_done > 1:
            cost = batched_cost(pad, support, p)
        sol = solve_entropic(pad, b, cost, g, eps, inner, tol, f)
        f, g = sol.f, sol.g
        history.append(float(np.sum(beta * (np.sum(np.where(pad.mask, pad.a * sol.f, 0.0),
                                                    axis=1) + sol.g @ b))))
        if p == 2:
            cols = sol.column_sums()  # (k, m), equal to b up to rounding
            num = np.einsum("k,kmd->md", beta, sol.barycentric(x_flat))
            new = num / np.einsum("k,km->m", beta, cols)[:, None]
        else:
            plans = sol.plans()
            w = np.concatenate([bt * t[: x.shape[0]]
                                for bt, t, x in zip(beta, plans, clouds, strict=True)])
            new = support_update(np.concatenate(clouds), w, p, support)
        if not np.all(np.isfinite(new)):
            raise ConvergenceError(
                f"free-support Sinkhorn barycenter: non-finite atoms at outer iteration "
                f"{n_done} (reg={eps!r}); increase reg")
        disp = squared_displacement(support, new)
        support = new
        if bar is not None:
            bar.update(1)
        if disp <= tol:
            converged = True
            break
    if is_collapsed(support, clouds):
        raise ConvergenceError(
            f"free-support Sinkhorn barycenter collapsed all {m} atoms onto one point "
            f"(reg={eps!r}); increase reg or use method='exact'")
    return support, n_done, converged


def _run_pot(method, clouds, weights, beta, start, b, eps, outer, inner, tol):
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "pot-exact":
            support = ot.lp.free_support_barycenter(
                clouds, weights, start.copy(), b=b, weights=beta, numItermax=outer,
                stopThr=tol)
        else:
            support = ot.bregman.free_support_sinkhorn_barycenter(
                clouds, weights, start.copy(), eps, b=b, weights=beta, numItermax=outer,
                numInnerItermax=inner, stopThr=tol)
    support = np.asarray(support, dtype=np.float64)
    numerical = [str(w.message) for w in caught
                 if "numerical error" in str(w.message).lower()
                 or "overflow" in str(w.message).lower()
                 or "invalid value" in str(w.message).lower()]
    if numerical or not np.all(np.isfinite(support)) or is_collapsed(support, clouds):
        what = ("non-finite atoms" if not np.all(np.isfinite(support)) else
                "all atoms collapsed onto one point" if is_collapsed(support, clouds) else
                f"{len(numerical)} numerical warning(s), e.g. {numerical[0]!r}")
        raise ConvergenceError(
            f"POT's {method.removeprefix('pot-')} free-support barycenter failed at "
            f"reg={eps!r}: {what}; its plain scaling iterations under/overflow at small reg. "
            "Use method='sinkhorn' (stabilised) or a larger reg")
    for w in caught:  # pass the remaining warnings (e.g. non-convergence) on
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return support
