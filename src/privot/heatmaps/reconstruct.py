r"""Algorithm 2 of paper 002 (RECONSTRUCT): from noisy pyramid levels to a distribution.

.. code-block:: text

    Algorithm 2 RECONSTRUCT (paper 002, Sec. 3.2; Sec. 4: start at the first measured level q)
    1: Input: noisy measurements y'_i, i = q..ell
    2: Parameters: w
    3: S_q <- C_{2^q}                          (all 4^q <= w cells of level q)
    4: for i = q+1, ..., ell do
    5:     T_i <- children(S_{i-1})
    6:     S_i <- the min(w, |T_i|) cells of T_i with the largest y'_i
    7: end for
    8: S <- U_i S_i and y^ <- y'|_S            (zero outside S)
    9: return s^ <- argmin_{s >= 0} || y^ - P s ||_1   (rows of the measured levels)

Line 9 is a linear program over :math:`\Delta^2` variables. It is solved here in the
paper's compact form (Sec. 4, "Implementation details") with :math:`O(w\ell)` variables:
one per kept leaf (the cells of :math:`S_\ell`) and one per *left-out* cell (a cell of
:math:`T_i\setminus S_i`, any level :math:`i>q`), because every leaf lies either in
:math:`S_\ell` or below exactly one left-out cell, the objective depends on the mass
inside a left-out cell :math:`L` of level :math:`i` only through its total
:math:`m_L` (all rows inside :math:`L` have :math:`\hat y = 0`, costing
:math:`m_L\sum_{j=i}^{\ell}2^{-j}` however :math:`m_L` is placed), and the rows of
:math:`S` see only totals of kept leaves and left-out cells. The reduction and its
equivalence with the full LP are derived in ``docs/privacy/heatmaps.md``; each left-out
cell's mass is then spread uniformly over its leaves (any placement has the same
objective). ``lp="full"`` solves the direct LP over all leaves (``Delta <= 64``), for
comparison.

Everything here is post-processing of the released measurements: no privacy cost.
It is also **total**: HiGHS runs under a public iteration budget (a function of the LP's
size, which depends only on ``w`` and the levels), and if it does not return an
optimum the estimate is the documented fallback "finest kept level, clipped at 0"
(flagged ``lp_fallback``); nothing here raises because of the values released.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps.measure import Measurements
from privot.heatmaps.pyramid import children_flat, pyramid

__all__ = ["FULL_LP_MAX_RESOLUTION", "LP_FORMS", "Reconstruction", "lp_budget", "reconstruct"]

LP_FORMS = ("compact", "full")
#: Largest resolution for which ``lp="full"`` (Delta^2 variables) is allowed.
FULL_LP_MAX_RESOLUTION = 64
#: HiGHS presolve is switched on above this many LP rows.
_PRESOLVE_ROWS = 2000
#: HiGHS iteration budget: at least this many iterations ...
LP_MIN_ITER = 10_000
#: ... and this many per row and per column of the LP (measured: the compact LP of
#: Delta = 4096, w = 1000, 16,512 x 30,280, needs about 8,000 simplex iterations).
LP_ITER_PER_UNIT = 10


def lp_budget(n_rows: int, n_cols: int) -> int:
    """HiGHS iteration budget of an ``n_rows x n_cols`` LP: a function of its size only
    (public: the sizes depend on ``w`` and the levels, not on the values)."""
    return max(LP_MIN_ITER, LP_ITER_PER_UNIT * (int(n_rows) + int(n_cols)))


@dataclass(frozen=True, repr=False)
class Reconstruction:
    r"""Output of RECONSTRUCT.

    Attributes
    ----------
    estimate : (Delta, Delta) float array
        :math:`\hat{\mathbf{s}} \ge 0`, the LP solution (unnormalised; its sum estimates
        the number of users).
    distribution : (Delta, Delta) float array
        :math:`\hat{\mathbf{a}} = \hat{\mathbf{s}}/\|\hat{\mathbf{s}}\|_1`; uniform over
        the covered cells when :math:`\hat{\mathbf{s}} = 0` (see ``fallback_uniform``).
    objective : float
        The LP optimum :math:`\|\hat{\mathbf{y}} - \mathbf{P}\hat{\mathbf{s}}\|_1` over the
        rows of the measured levels.
    lp : {"compact", "full"}
        Which LP was solved.
    start_level, levels, w : int
        :math:`q`, :math:`\ell` and the number of cells kept per level.
    kept : tuple of int arrays
        ``kept[j]``: sorted flat indices of :math:`S_i`, ``i = start_level + j``.
    left_out : tuple of int arrays
        ``left_out[j]``: sorted flat indices of :math:`T_i \setminus S_i` (empty for
        ``i = start_level``).
    y_hat : tuple of arrays
        :math:`\hat{\mathbf{y}}_i = \mathbf{y}'_i|_{S_i}` (line 8), ``(2^i, 2^i)``.
    n_variables, n_constraints : int
        Size of the LP solved.
    fallback_uniform : bool
        True when the LP returned zero total mass and ``distribution`` is the uniform
        fallback.
    solver_message : str
        HiGHS's status message.
    lp_fallback : bool
        True when HiGHS did not return an optimum within its budget (:func:`lp_budget`)
        and ``estimate`` is the fallback: the finest level's kept cells,
        :math:`\max(2^\ell\hat{\mathbf{y}}_\ell, 0)` on :math:`S_\ell`, zero elsewhere
        (``objective`` is then that estimate's objective, not the LP optimum). A
        function of the release: publishable.
    """

    estimate: np.ndarray
    distribution: np.ndarray
    objective: float
    lp: str
    start_level: int
    levels: int
    w: int
    kept: tuple[np.ndarray, ...]
    left_out: tuple[np.ndarray, ...]
    y_hat: tuple[np.ndarray, ...]
    n_variables: int
    n_constraints: int
    fallback_uniform: bool
    solver_message: str
    lp_fallback: bool = False

    def objective_of(self, s: np.ndarray) -> float:
        r""":math:`\|\hat{\mathbf{y}} - \mathbf{P}s\|_1` over the measured rows, for any
        ``(Delta, Delta)`` array ``s`` (the LP objective of line 9)."""
        return _objective_of(self.y_hat, self.start_level, s)

    def __repr__(self) -> str:
        d = self.distribution.shape[0]
        return (f"Reconstruction({self.lp} LP, {d}x{d}, levels {self.start_level}.."
                f"{self.levels}, w={self.w}, objective={self.objective:.6g}, "
                f"variables={self.n_variables}, fallback_uniform={self.fallback_uniform}, "
                f"lp_fallback={self.lp_fallback})")


def _objective_of(y_hat: Sequence[np.ndarray], q: int, s: np.ndarray) -> float:
    levels = pyramid(np.asarray(s, dtype=np.float64), start_level=q)
    return math.fsum(float(np.abs(yh - np.ldexp(ps, -(q + j))).sum())
                     for j, (yh, ps) in enumerate(zip(y_hat, levels, strict=True)))


def _parse(measurements: Measurements | Sequence[np.ndarray],
           w: int | None) -> tuple[list[np.ndarray], int, int]:
    """Level arrays, q and w from a Measurements or a list of ``y'_q, ..., y'_ell``."""
    if isinstance(measurements, Measurements):
        values = list(measurements.values)
        w = measurements.w if w is None else w
    else:
        if w is None:
            raise InvalidParameterError("w", None, "an integer >= 1 (required when "
                                        "measurements is a list of level arrays)")
        try:
            values = [np.asarray(v, dtype=np.float64) for v in measurements]
        except (TypeError, ValueError) as exc:
            raise InvalidDataError("measurements must be a Measurements or a sequence of "
                                   "(2^i, 2^i) arrays") from exc
    w = check_int(w, "w", minimum=1)
    if not values:
        raise InvalidDataError("measurements has no level")
    side = values[0].shape[0] if values[0].ndim == 2 else -1
    if side < 1 or side & (side - 1):
        raise InvalidDataError(f"the first level has shape {values[0].shape}; expected "
                               "(2^q, 2^q)")
    q = side.bit_length() - 1
    for j, v in enumerate(values):
        m = 1 << (q + j)
        if v.shape != (m, m):
            raise InvalidDataError(f"level {q + j} has shape {v.shape}; expected ({m}, {m})")
        if not np.all(np.isfinite(v)):
            raise InvalidDataError(f"level {q + j} has non-finite values")
    return values, q, w


def _select(values: list[np.ndarray], q: int, w: int
            ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Lines 3-7: S_i (kept) and T_i minus S_i (left out), sorted flat indices."""
    kept = [np.arange(values[0].size, dtype=np.int64)]  # line 3: S_q = C_{2^q}
    left = [np.empty(0, dtype=np.int64)]
    for j in range(1, len(values)):
        i = q + j
        t = children_flat(i - 1, kept[-1])  # line 5: T_i = children(S_{i-1})
        order = np.argsort(-values[j].ravel()[t], kind="stable")  # ties: fixed order
        k = min(w, t.size)  # line 6: the min(w, |T_i|) largest y'_i
        kept.append(np.sort(t[order[:k]]))
        left.append(np.sort(t[order[k:]]))
    return kept, left


def _ancestor(level: int, cells: np.ndarray, target: int) -> np.ndarray:
    """Flat index at level ``target`` (<= level) of the ancestor of each flat cell."""
    r, c = np.divmod(cells, 1 << level)
    sh = level - target
    return (r >> sh) * (1 << target) + (c >> sh)


def _solve(cost: np.ndarray, rows: np.ndarray, cols: np.ndarray, n_rows: int,
           b: np.ndarray, row_weight: np.ndarray) -> tuple[np.ndarray | None, float, str]:
    r"""min cost.x + row_weight.u  s.t.  |b - A x| <= u,  x, u >= 0 (HiGHS).

    ``A`` (``n_rows x len(cost)``) has a 1 at each ``(rows[k], cols[k])``: row ``r`` sums
    the variables below cell ``r``. ``b_r`` is the *unscaled* measurement
    :math:`2^{i}\hat y_r` of a level-``i`` cell and ``row_weight_r = 2^-i``, so
    ``row_weight_r * u_r`` equals :math:`|\hat y_r - 2^{-i}\,\mathrm{mass}_r|` at the
    optimum (the :math:`t_c` of ``docs/privacy/heatmaps.md`` is :math:`2^{-i}u_c`; rows
    scaled to 0/1 coefficients for conditioning). The constraints are
    :math:`A x - u \le b` and :math:`-A x - u \le -b`.

    The LP is always feasible (``x = 0``, ``u = |b|``) and bounded below by 0; HiGHS runs
    under :func:`lp_budget` iterations. Returns ``x`` None when it does not report an
    optimum with a finite solution (the caller then uses its fallback).
    """
    n_x = cost.size
    nnz = rows.size
    diag = np.arange(n_rows)
    r = np.concatenate([rows, rows + n_rows, diag, diag + n_rows])
    c = np.concatenate([cols, cols, n_x + diag, n_x + diag])
    v = np.concatenate([np.ones(nnz), -np.ones(nnz), -np.ones(2 * n_rows)])
    a_ub = sparse.csc_matrix((v, (r, c)), shape=(2 * n_rows, n_x + n_rows))
    # presolve only pays for itself on large programs (the compact LP is a few hundred rows)
    options = {"presolve": n_rows > _PRESOLVE_ROWS,
               "maxiter": lp_budget(a_ub.shape[0], a_ub.shape[1])}
    res = optimize.linprog(np.concatenate([cost, row_weight]), A_ub=a_ub,
                           b_ub=np.concatenate([b, -b]), bounds=(0, None), method="highs",
                           options=options)
    msg = f"HiGHS status {res.status}: {res.message}"
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x[:n_x])):
        return None, math.nan, msg
    return np.maximum(res.x[:n_x], 0.0), float(res.fun), str(res.message)


def _compact(values: list[np.ndarray], q: int, kept: list[np.ndarray],
             left: list[np.ndarray]) -> tuple[np.ndarray | None, float, int, int, str]:
    """Line 9 with one variable per kept leaf and per left-out cell (O(w ell))."""
    ell = q + len(values) - 1
    d = 1 << ell
    # rows: the cells of S, level by level; row offset of level i
    offsets = np.cumsum([0] + [k.size for k in kept])
    n_rows = int(offsets[-1])
    # variables: kept leaves first, then left-out cells level by level
    groups = [(ell, kept[-1], True)] + [(q + j, left[j], False)
                                        for j in range(1, len(values)) if left[j].size]
    cols, rows, costs, var_off = [], [], [], 0
    for lv, cells, is_leaf in groups:
        n = cells.size
        idx = var_off + np.arange(n)
        # a variable's mass enters the row of each of its ancestors in S, levels q..lv-1,
        # and its own row for a kept leaf (left-out cells have no row in S)
        top = lv if is_leaf else lv - 1
        for j in range(q, top + 1):
            anc = _ancestor(lv, cells, j)
            pos = np.searchsorted(kept[j - q], anc)  # every ancestor is in S_j
            rows.append(offsets[j - q] + pos)
            cols.append(idx)
        # objective: kept leaves cost only through rows; a left-out cell of level lv
        # costs sum_{j=lv..ell} 2^-j per unit of mass (its rows and all rows below it)
        kappa = 0.0 if is_leaf else math.fsum(math.ldexp(1.0, -j) for j in range(lv, ell + 1))
        costs.append(np.full(n, kappa))
        var_off += n
    n_vars = var_off
    b = np.concatenate([np.ldexp(values[j].ravel()[kept[j]], q + j)
                        for j in range(len(values))])
    weight = np.concatenate([np.full(kept[j].size, math.ldexp(1.0, -(q + j)))
                             for j in range(len(values))])
    x, fun, msg = _solve(np.concatenate(costs), np.concatenate(rows), np.concatenate(cols),
                         n_rows, b, weight)
    if x is None:
        return None, fun, n_vars + n_rows, 2 * n_rows, msg

    s_hat = np.zeros((d, d))
    s_hat.ravel()[kept[-1]] = x[:kept[-1].size]
    var_off = kept[-1].size
    for lv, cells, _ in groups[1:]:
        mass = x[var_off:var_off + cells.size]
        var_off += cells.size
        m, blk = 1 << lv, 1 << (ell - lv)
        dens = np.zeros((m, m))
        dens.ravel()[cells] = mass / (blk * blk)  # spread uniformly over its leaves
        s_hat.reshape(m, blk, m, blk)[...] += dens[:, None, :, None]
    return s_hat, fun, n_vars + n_rows, 2 * n_rows, msg


def _full(values: list[np.ndarray], q: int, kept: list[np.ndarray]
          ) -> tuple[np.ndarray | None, float, int, int, str]:
    """Line 9 as written: one variable per leaf, one row per cell of every measured level."""
    ell = q + len(values) - 1
    d = 1 << ell
    leaves = np.arange(d * d, dtype=np.int64)
    rows, offset, b, weight = [], 0, [], []
    for j in range(len(values)):
        i = q + j
        rows.append(offset + _ancestor(ell, leaves, i))
        y_hat = np.zeros(values[j].size)
        y_hat[kept[j]] = values[j].ravel()[kept[j]]  # line 8: y^ = y'|_S
        b.append(np.ldexp(y_hat, i))
        weight.append(np.full(values[j].size, math.ldexp(1.0, -i)))
        offset += values[j].size
    x, fun, msg = _solve(np.zeros(d * d), np.concatenate(rows), np.tile(leaves, len(values)),
                         offset, np.concatenate(b), np.concatenate(weight))
    return (None if x is None else x.reshape(d, d)), fun, d * d + offset, 2 * offset, msg


def _finest_level_fallback(values: list[np.ndarray], q: int,
                           kept: list[np.ndarray]) -> np.ndarray:
    r"""The fallback estimate: :math:`\max(2^\ell y'_\ell, 0)` on :math:`S_\ell`, 0 elsewhere."""
    ell = q + len(values) - 1
    d = 1 << ell
    s_hat = np.zeros((d, d))
    s_hat.ravel()[kept[-1]] = np.maximum(np.ldexp(values[-1].ravel()[kept[-1]], ell), 0.0)
    return s_hat


def reconstruct(measurements: Measurements | Sequence[np.ndarray], *, w: int | None = None,
                lp: str = "compact", covered: np.ndarray | None = None) -> Reconstruction:
    r"""RECONSTRUCT (Algorithm 2): top-``w`` tree selection, then the L1 LP of line 9.

    Parameters
    ----------
    measurements : Measurements or sequence of arrays
        The output of :func:`~privot.heatmaps.measure.measure`, or the scaled levels
        :math:`\mathbf{y}'_q, \dots, \mathbf{y}'_\ell` themselves (shapes
        ``(2^q, 2^q), ..., (Delta, Delta)``; e.g. exact values
        :math:`2^{-i}\mathbf{P}_i\mathbf{s}` to test recovery).
    w : int, optional
        Cells kept per level; default ``measurements.w`` (required for a sequence).
    lp : {"compact", "full"}, default "compact"
        ``"compact"``: the :math:`O(w\ell)`-variable LP (Sec. 4). ``"full"``: the LP over
        all :math:`\Delta^2` leaves, only for ``Delta <= 64`` (for comparison; same
        optimum).
    covered : (Delta, Delta) bool array, optional
        Cells the uniform fallback spreads over when the LP returns zero mass
        (:meth:`Grid.covered_mask() <privot.grid.Grid.covered_mask>`); default
        all cells.

    Returns
    -------
    Reconstruction

    Raises
    ------
    InvalidParameterError
        Unknown ``lp``, ``lp="full"`` above ``Delta = 64``, ``w < 1``.
    InvalidDataError
        Measurements of the wrong shapes or non-finite; ``covered`` not a
        ``(Delta, Delta)`` bool array with a True cell (checked first, whatever the
        values).

    Privacy
    -------
    Post-processing of released measurements: no privacy cost, nothing data-dependent
    is read. Total: HiGHS runs under the public budget :func:`lp_budget`; if it does
    not return an optimum the estimate is the finest kept level clipped at 0
    (``lp_fallback``). ``docs/privacy/heatmaps.md`` (compact LP derivation).
    """
    if lp not in LP_FORMS:
        raise InvalidParameterError("lp", lp, f"one of {LP_FORMS}")
    values, q, w = _parse(measurements, w)
    ell = q + len(values) - 1
    d = 1 << ell
    if lp == "full" and d > FULL_LP_MAX_RESOLUTION:
        raise InvalidParameterError("lp", lp, f"'compact' for resolution {d}; the full LP "
                                    f"is only allowed up to {FULL_LP_MAX_RESOLUTION}")
    mask = (np.ones((d, d), dtype=bool) if covered is None
            else np.asarray(covered, dtype=bool))
    if mask.shape != (d, d) or not mask.any():
        raise InvalidDataError(f"covered must be a ({d}, {d}) bool array with a True "
                               "cell")
    kept, left = _select(values, q, w)
    if lp == "compact":
        s_hat, fun, n_vars, n_cons, msg = _compact(values, q, kept, left)
    else:
        s_hat, fun, n_vars, n_cons, msg = _full(values, q, kept)
    lp_fallback = s_hat is None

    y_hat = []
    for j, v in enumerate(values):
        yh = np.zeros_like(v)
        yh.ravel()[kept[j]] = v.ravel()[kept[j]]
        y_hat.append(yh)

    if s_hat is None:  # HiGHS gave no optimum: documented post-processing rule, flagged
        s_hat = _finest_level_fallback(values, q, kept)
        fun = _objective_of(y_hat, q, s_hat)
    total = float(s_hat.sum())
    fallback = not total > 0
    if fallback:  # post-processing rule, stated in diagnostics
        dist = mask / float(np.count_nonzero(mask))
    else:
        dist = s_hat / total
    return Reconstruction(estimate=s_hat, distribution=dist, objective=fun, lp=lp,
                          start_level=q, levels=ell, w=w, kept=tuple(kept),
                          left_out=tuple(left), y_hat=tuple(y_hat), n_variables=n_vars,
                          n_constraints=n_cons, fallback_uniform=fallback,
                          solver_message=msg, lp_fallback=lp_fallback)
