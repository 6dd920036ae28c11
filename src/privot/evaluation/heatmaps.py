r"""Heatmap quality metrics of paper 002 (Sec. 4): Similarity, Pearson, KL and EMD.

The heatmaps' part of :mod:`privot.evaluation` (``privot.heatmaps.metrics`` re-exports
it).

Every metric takes two non-negative :math:`\Delta\times\Delta` maps and normalises each
to total mass one first (so raw counts, sums and densities are all accepted):

* :func:`similarity` -- histogram intersection :math:`\sum_i \min(p_i, q_i)`, in
  ``[0, 1]``, 1 iff the maps are equal (higher is better);
* :func:`pearson` -- Pearson's correlation coefficient over the cells, in ``[-1, 1]``
  (higher is better);
* :func:`kl_divergence` -- the smoothed KL divergence of the saliency benchmark
  [BJO+19] (lower is better);
* :func:`grid_emd` -- the exact Earth Mover's Distance with the L1 ground distance
  between cell centres, paper 002 Sec. 2.1 (lower is better), without an
  :math:`n\times n` cost matrix; :func:`grid_emd_metres` in metres for a
  latitude/longitude :class:`~privot.grid.Grid`;
* :func:`heatmap_metrics` -- all four at once, as a :class:`HeatmapMetrics`.

These are evaluation tools for a curator who holds the true heatmap: they read the
raw data and are **not** differentially private releases.

Exact EMD on the grid
---------------------
With the L1 ground distance, the distance between two cell centres is the length of a
shortest path in the 4-neighbour grid graph whose horizontal edges have length
:math:`w` (cell width) and vertical edges :math:`h` (cell height). Optimal transport
with a shortest-path ground metric equals the minimum-cost flow (transshipment) on
that graph (Beckmann's formulation; Ling & Okada 2007, "EMD-L1"):

.. math::

    \mathrm{EMD}(p, q) = \min_{f \ge 0} \sum_{(u, v)} c_{uv} f_{uv}
    \quad\text{s.t.}\quad \sum_v f_{uv} - \sum_v f_{vu} = p_u - q_u ,

with :math:`4\Delta(\Delta-1)` directed edges instead of :math:`\Delta^4` pairs. The
problem does *not* split into independent 1-D problems; it is solved as one LP:

* ``method="network-simplex"`` (default when POT >= 0.9.6 offers its sparse solver):
  the transshipment is rewritten as a sparse transportation problem (each cell is a
  source with supply :math:`T + b_u^+` and a sink with demand :math:`T + b_u^-`, joined
  by a zero-cost arc, plus one arc per grid edge; :math:`T` = the mass to move, which
  bounds any cell's throughput in an acyclic optimal flow) and handed to POT's
  network simplex. The supplies are first rounded to integers (multiples of
  :math:`2^{-k}` of the moved mass, :math:`k = 52 - \lceil\log_2(\Delta^2+1)\rceil`,
  e.g. 35 at :math:`\Delta = 256`) that balance exactly, so the simplex runs without
  any rounding and its feasibility check (absolute, 1e-8) cannot misfire.
* ``method="highs"``: :func:`scipy.optimize.linprog` (HiGHS dual simplex) on the edge
  LP, supplies scaled to mean magnitude one, feasibility tolerances 1e-10. About ten
  times slower on realistic inputs; kept as an independent cross-check and fallback.

Either way the answer is **certified** on the unrounded input :math:`b = p - q`:

* *lower bound*: the solver's node potentials :math:`\psi` are projected onto the
  dual-feasible set :math:`\{|\psi_u - \psi_v| \le c_{uv}\}` by the L1 distance
  transform :math:`\psi'(u) = \min_v \psi(v) + d(u, v)` (two 1-D passes per axis), and
  :math:`\mathrm{LB} = \sum_u \psi'_u b_u \le \mathrm{EMD}` by weak duality;
* *upper bound*: the cost of a feasible flow for the exact :math:`b`, the smaller of
  (a) the solver's edge flows plus the leftover divergence (rounding residue) routed
  along rows then up the last column, and (b) the unique flow with divergence
  :math:`b` on a spanning tree made of the solver's flow-carrying edges completed by
  edges tight for :math:`\psi'` (on the optimal basis this flow is optimal and meets
  the lower bound).

The value returned is the lower bound, which equals the exact EMD whenever the
optimal basis of the rounded problem is optimal for :math:`b` (the generic case); the
gap ``UB - LB`` is checked (relative ``gap_rtol``) and a larger one raises
:class:`~privot.errors.ConvergenceError`. Measured gaps are below 1e-7 relative
(usually ~1e-15), and the value agrees with POT's dense ``ot.emd2`` on a cityblock
cost matrix to ~1e-15 relative (``tests/heatmaps/test_metrics.py``).

References
----------
.. [BJO+19] Z. Bylinskii, T. Judd, A. Oliva, A. Torralba, F. Durand. "What do
   different evaluation metrics tell us about saliency models?" IEEE TPAMI 41(3),
   2019.
.. [LO07] H. Ling, K. Okada. "An efficient Earth Mover's Distance algorithm for
   robust histogram comparison." IEEE TPAMI 29(5), 2007.

Privacy
-------
Evaluation, not a release: the metrics compare a private map with a reference, which
may be the exact non-private one, so their values can depend on the raw data and are
for the curator (benchmarks, the demo report), never published with a release. The
``epsilon`` of :func:`kl_divergence` is a smoothing constant, not a privacy budget.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from privot._validation import check_finite_array, check_int, check_positive
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.grid import EARTH_MEAN_RADIUS_M, Grid, latlon_cell_metres

__all__ = [
    "KL_EPS",
    "EARTH_MEAN_RADIUS_M",
    "GRID_EMD_METHODS",
    "HeatmapMetrics",
    "similarity",
    "pearson",
    "kl_divergence",
    "grid_emd",
    "grid_emd_metres",
    "latlon_cell_metres",
    "heatmap_metrics",
]

#: Smoothing constant of :func:`kl_divergence`: MATLAB's ``eps`` (2^-52), the value of
#: the MIT/Tuebingen saliency benchmark code of [BJO+19].
KL_EPS = float(np.finfo(np.float64).eps)

#: Solvers accepted by :func:`grid_emd` (``"auto"`` picks the first available).
GRID_EMD_METHODS = ("auto", "network-simplex", "highs")

_DEFAULT_MAX_ITER = 1_000_000_000
_DEFAULT_GAP_RTOL = 1e-6
_RESULT_OPTIMAL = 1  # POT's result code for an optimal solution


# -- validation ----------------------------------------------------------------------------


def _check_map(values: object, name: str) -> np.ndarray:
    """A finite, non-negative, square ``(Delta, Delta)`` map with a positive total."""
    arr = check_finite_array(values, name)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InvalidDataError(
            f"{name} must be a square (Delta, Delta) array, got shape {arr.shape}")
    if np.any(arr < 0):
        r, c = (int(v) for v in np.argwhere(arr < 0)[0])
        raise InvalidDataError(
            f"{name} must be non-negative; {name}[{r}, {c}]={arr[r, c]!r}")
    total = float(arr.sum())
    if not total > 0:
        raise InvalidDataError(
            f"{name} sums to {total!r}; a heatmap needs a positive total mass")
    return arr


def _check_pair(p: object, q: object, names: tuple[str, str] = ("p", "q"),
                ) -> tuple[np.ndarray, np.ndarray]:
    """Two valid maps of the same shape, each normalised to total mass one."""
    pa = _check_map(p, names[0])
    qa = _check_map(q, names[1])
    if pa.shape != qa.shape:
        raise InvalidDataError(
            f"{names[0]} and {names[1]} must have the same shape; got "
            f"{names[0]}.shape={pa.shape}, {names[1]}.shape={qa.shape}")
    return pa / pa.sum(), qa / qa.sum()


def _check_cell(cell: object, delta: int) -> tuple[float, float]:
    if cell is None:
        return 1.0 / delta, 1.0 / delta
    try:
        width, height = cell  # type: ignore[misc]
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError("cell", cell,
                                    "a pair (width, height) of finite numbers > 0") from exc
    return check_positive(width, "cell[0] (width)"), check_positive(height, "cell[1] (height)")


# -- simple metrics -------------------------------------------------------------------------


def similarity(p: np.ndarray, q: np.ndarray) -> float:
    r"""Histogram intersection of the two normalised maps (SIM of [BJO+19]).

    .. math::

        \mathrm{SIM}(p, q) = \sum_i \min(\hat p_i, \hat q_i), \qquad
        \hat p = p / \textstyle\sum_i p_i ,\ \hat q = q / \textstyle\sum_i q_i .

    Parameters
    ----------
    p, q : (Delta, Delta) arrays
        Non-negative maps with positive totals (counts, sums or densities).

    Returns
    -------
    float
        In ``[0, 1]``; 1 iff :math:`\hat p = \hat q`, 0 iff the supports are disjoint.
        Equals :math:`1 - \tfrac12\|\hat p - \hat q\|_1`. Higher is better.

    Notes
    -----
    The benchmark code of [BJO+19] also min-max rescales each map before normalising;
    that subtracts a map's minimum, which changes nothing for a heatmap with an empty
    cell and would be a data-dependent transform otherwise, so it is not done here.

    Raises
    ------
    InvalidDataError
        Not square, shapes differ, negative, NaN/inf or all-zero entries.
    """
    pn, qn = _check_pair(p, q)
    return float(np.minimum(pn, qn).sum())


def pearson(p: np.ndarray, q: np.ndarray) -> float:
    r"""Pearson's correlation coefficient between the cells of two maps (CC of [BJO+19]).

    .. math::

        \mathrm{CC}(p, q) = \frac{\sum_i (p_i - \bar p)(q_i - \bar q)}
        {\sqrt{\sum_i (p_i - \bar p)^2 \sum_i (q_i - \bar q)^2}} .

    Parameters
    ----------
    p, q : (Delta, Delta) arrays
        Non-negative maps with positive totals (the coefficient is scale invariant, so
        normalising changes nothing).

    Returns
    -------
    float
        In ``[-1, 1]``; higher is better. NaN when a map is constant (every cell
        equal), where the coefficient is undefined.

    Raises
    ------
    InvalidDataError
        As :func:`similarity`.
    """
    pn, qn = _check_pair(p, q)
    pc = (pn - pn.mean()).ravel()
    qc = (qn - qn.mean()).ravel()
    denom = math.sqrt(float(pc @ pc) * float(qc @ qc))
    if denom == 0.0:
        return float("nan")
    return float(np.clip(float(pc @ qc) / denom, -1.0, 1.0))


def kl_divergence(p: np.ndarray, q: np.ndarray, *, eps: float = KL_EPS) -> float:
    r"""Smoothed KL divergence :math:`\mathrm{KL}(p \,\|\, q)` of the saliency benchmark.

    Following [BJO+19] (``KLdiv`` of the MIT/Tuebingen saliency benchmark), with
    :math:`p` the reference (true) map and :math:`q` the estimate, both normalised to
    total mass one:

    .. math::

        \mathrm{KL}(p \,\|\, q) = \sum_i \hat p_i \,
        \log\!\Big(\varepsilon + \frac{\hat p_i}{\hat q_i + \varepsilon}\Big),
        \qquad \varepsilon = 2^{-52} \approx 2.2\times10^{-16} .

    Zero cells: a cell with :math:`\hat p_i = 0` contributes 0 (:math:`0\log(\cdot)=0`);
    a cell with :math:`\hat p_i > 0 = \hat q_i` contributes the large but finite
    :math:`\hat p_i \log(\varepsilon + \hat p_i/\varepsilon)` (about
    :math:`\hat p_i (36 + \log \hat p_i)`), so an estimate that misses mass is
    penalised heavily instead of scoring :math:`+\infty`. The result is the natural
    logarithm (nats). It is not symmetric: ``kl_divergence(true, estimate)``.

    Parameters
    ----------
    p : (Delta, Delta) array
        Reference map (the true heatmap), non-negative, positive total.
    q : (Delta, Delta) array
        Estimated map, same shape.
    eps : float, default :data:`KL_EPS`
        Smoothing constant :math:`\varepsilon > 0`.

    Returns
    -------
    float
        :math:`\ge 0` up to rounding (``kl_divergence(p, p)`` is 0 to ~1e-15); lower
        is better.

    Raises
    ------
    InvalidDataError
        As :func:`similarity`.
    InvalidParameterError
        ``eps`` not a finite number > 0.
    """
    e = check_positive(eps, "eps")
    pn, qn = _check_pair(p, q)
    mask = pn > 0
    pm = pn[mask]
    return float(np.sum(pm * np.log(e + pm / (qn[mask] + e))))


# -- exact EMD on the grid ------------------------------------------------------------------


def _grid_edges(delta: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected 4-neighbour edges ``(u, v)`` with ``u < v``; ``horizontal`` flags them."""
    idx = np.arange(delta * delta, dtype=np.int64).reshape(delta, delta)
    u = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    v = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    horizontal = np.zeros(u.size, dtype=bool)
    horizontal[: delta * (delta - 1)] = True
    return u, v, horizontal


def _lipschitz_envelope(psi: np.ndarray, wx: float, wy: float) -> np.ndarray:
    r"""Largest :math:`\psi' \le \psi` with :math:`|\psi'_u - \psi'_v| \le c_{uv}` on the grid.

    :math:`\psi'(u) = \min_v \psi(v) + d_1(u, v)`: the L1 distance transform, separable
    into forward/backward passes along columns then rows.
    """
    g = psi.copy()
    delta = g.shape[0]
    for c in range(1, delta):
        np.minimum(g[:, c], g[:, c - 1] + wx, out=g[:, c])
    for c in range(delta - 2, -1, -1):
        np.minimum(g[:, c], g[:, c + 1] + wx, out=g[:, c])
    for r in range(1, delta):
        np.minimum(g[r], g[r - 1] + wy, out=g[r])
    for r in range(delta - 2, -1, -1):
        np.minimum(g[r], g[r + 1] + wy, out=g[r])
    return g


def _routing_cost(r: np.ndarray, wx: float, wy: float) -> float:
    """Cost of a feasible flow with divergence ``r`` (rows to the last column, then up it)."""
    along_rows = np.cumsum(r, axis=1)
    col_flow = np.cumsum(along_rows[:, -1])
    return float(wx * np.abs(along_rows[:, :-1]).sum() + wy * np.abs(col_flow[:-1]).sum())


def _edge_ids(tail: np.ndarray, head: np.ndarray, delta: int) -> np.ndarray:
    """Index in :func:`_grid_edges` order of the undirected edge of each arc."""
    lo = np.minimum(tail, head)
    r, c = np.divmod(lo, delta)
    return np.where(np.abs(head - tail) == 1, r * (delta - 1) + c,
                    delta * (delta - 1) + lo)


def _tree_flow_cost(b: np.ndarray, delta: int, cx: float, cy: float, env: np.ndarray,
                    support: np.ndarray) -> float:
    """Cost of the unique flow with divergence ``b`` on a spanning tree of the grid.

    The tree prefers the solver's flow-carrying edges, then edges tight for the
    feasible potentials ``env``: on the optimal basis this flow is optimal for the
    exact ``b`` and its cost meets the dual bound.
    """
    u, v, horizontal = _grid_edges(delta)
    w = np.where(horizontal, cx, cy)
    slack = w - np.abs(env[u] - env[v])
    tight = slack <= 1e-9 * w
    weight = np.where(support, 1.0, np.where(tight, 2.0, 3.0))
    n = delta * delta
    graph = sp.coo_array((weight, (u, v)), shape=(n, n)).tocsr()
    from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree  # lazy

    tree = minimum_spanning_tree(graph)
    order, pred = breadth_first_order(tree, 0, directed=False, return_predecessors=True)
    if order.size != n:  # the grid graph is connected: cannot happen
        return math.inf
    sub = b.copy()
    sub_list = sub.tolist()
    pred_list = pred.tolist()
    for node in order[:0:-1].tolist():  # leaves first: subtree sums of b
        sub_list[pred_list[node]] += sub_list[node]
    sub = np.asarray(sub_list)
    child = order[1:]
    parent = pred[child]
    cost = np.where(np.abs(parent - child) == 1, cx, cy)
    return float(np.sum(cost * np.abs(sub[child])))


def _round_balanced(x: np.ndarray, total: int) -> np.ndarray:
    """Non-negative int64 rounding of ``x >= 0`` (float sum ~ ``total``) summing to ``total``."""
    floor = np.floor(x)
    out = floor.astype(np.int64)
    frac = x - floor
    deficit = total - int(out.sum())
    if deficit > 0:
        out[np.argsort(-frac, kind="stable")[:deficit]] += 1
    elif deficit < 0:
        cand = np.flatnonzero(out > 0)
        out[cand[np.argsort(frac[cand], kind="stable")[:-deficit]]] -= 1
    return out


def _pot_has_sparse_emd() -> bool:
    try:
        from ot.lp.emd_wrap import emd_c_sparse  # noqa: F401
    except ImportError:
        return False
    return True


def _solve_network_simplex(bplus: np.ndarray, bminus: np.ndarray, delta: int, cx: float,
                           cy: float, max_iter: int,
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Transshipment as a sparse transportation problem for POT's network simplex.

    ``bplus`` / ``bminus`` are the positive and negative parts of the (normalised)
    supply. Returns ``(psi, tail, head, flow, scale)``: node potentials, the grid-edge
    flows in solver units and the factor turning solver units into mass.
    """
    n = delta * delta
    k = 52 - math.ceil(math.log2(n + 1))
    big = 1 << k
    splus = _round_balanced(bplus * (big / bplus.sum()), big)
    sminus = _round_balanced(bminus * (big / bminus.sum()), big)
    # integers below 2**53 in every partial sum: the simplex never rounds a flow
    a = (big + splus).astype(np.float64)
    d = (big + sminus).astype(np.float64)
    u, v, horizontal = _grid_edges(delta)
    w = np.where(horizontal, cx, cy)
    nodes = np.arange(n, dtype=np.int64)
    rows = np.concatenate([nodes, u, v])
    cols = np.concatenate([nodes, v, u])
    costs = np.concatenate([np.zeros(n), w, w])  # the explicit zeros are the self arcs
    cost_matrix = sp.coo_array((costs, (rows, cols)), shape=(n, n))
    import ot  # lazy: POT's package import loads torch and scikit-learn (~2-3 s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the result code is checked below
        plan, log = ot.emd(a, d, cost_matrix, numItermax=max_iter, log=True,
                           check_marginals=False)
    code = int(log["result_code"])
    if code != _RESULT_OPTIMAL:
        raise ConvergenceError(
            f"POT's network simplex did not reach an optimal grid flow "
            f"(max_iter={max_iter}): {log.get('warning') or f'result code {code}'}")
    plan = sp.coo_array(plan)
    off = plan.row != plan.col
    scale = 0.5 * (float(bplus.sum()) + float(bminus.sum())) / big
    psi = np.asarray(log["u"], dtype=np.float64)
    return psi, plan.row[off].astype(np.int64), plan.col[off].astype(np.int64), \
        np.asarray(plan.data[off], dtype=np.float64), scale


def _solve_highs(b: np.ndarray, delta: int, cx: float, cy: float, max_iter: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The edge LP with :func:`scipy.optimize.linprog` (HiGHS dual simplex)."""
    n = delta * delta
    u, v, horizontal = _grid_edges(delta)
    tail = np.concatenate([u, v])
    head = np.concatenate([v, u])
    w = np.where(horizontal, cx, cy)
    c = np.concatenate([w, w])
    m = tail.size
    arange = np.arange(m)
    incidence = sp.csr_array(
        (np.concatenate([np.ones(m), -np.ones(m)]),
         (np.concatenate([tail, head]), np.concatenate([arange, arange]))), shape=(n, m))
    scale = float(np.abs(b).sum()) / n  # supplies of mean magnitude one
    res = linprog(c, A_eq=incidence, b_eq=b / scale, bounds=(0, None), method="highs-ds",
                  options={"primal_feasibility_tolerance": 1e-10,
                           "dual_feasibility_tolerance": 1e-10, "maxiter": max_iter})
    if res.status != 0:
        raise ConvergenceError(
            f"HiGHS did not reach an optimal grid flow (max_iter={max_iter}): {res.message}")
    flow = np.maximum(res.x, 0.0)
    keep = flow > 0
    return (np.asarray(res.eqlin.marginals, dtype=np.float64), tail[keep], head[keep],
            flow[keep], scale)


def _grid_emd_bounds(pn: np.ndarray, qn: np.ndarray, wx: float, wy: float, method: str,
                     max_iter: int) -> tuple[float, float]:
    """Certified ``(lower, upper)`` bounds on the EMD of two normalised maps."""
    delta = pn.shape[0]
    b = (pn - qn).ravel()
    bplus = np.maximum(b, 0.0)
    bminus = np.maximum(-b, 0.0)
    if delta == 1 or not (bplus.any() and bminus.any()):
        return 0.0, 0.0
    unit = min(wx, wy)
    cx, cy = wx / unit, wy / unit  # the solver sees costs 1 and an aspect ratio
    if method == "network-simplex":
        psi, tail, head, flow, scale = _solve_network_simplex(bplus, bminus, delta, cx, cy,
                                                              max_iter)
    else:
        psi, tail, head, flow, scale = _solve_highs(b, delta, cx, cy, max_iter)
    # lower bound: weak duality with the potentials made exactly feasible
    env = _lipschitz_envelope(psi.reshape(delta, delta), cx, cy).ravel()
    env -= env.mean()
    lower = max(float(env @ b), 0.0)
    # upper bounds: (a) the solver's flow plus routing of the divergence it leaves over
    # (rounding residue); (b) the exact tree flow on the solver's support + tight edges
    n = delta * delta
    horizontal = np.abs(head - tail) == 1
    primal = float(np.sum(flow * np.where(horizontal, cx, cy))) * scale
    div = (np.bincount(tail, weights=flow, minlength=n)
           - np.bincount(head, weights=flow, minlength=n)) * scale
    upper = primal + _routing_cost((b - div).reshape(delta, delta), cx, cy)
    if upper - lower > 1e-12 * upper:
        support = np.zeros(2 * delta * (delta - 1), dtype=bool)
        support[_edge_ids(tail, head, delta)] = True
        upper = min(upper, _tree_flow_cost(b, delta, cx, cy, env, support))
    return lower * unit, upper * unit


def _check_method(method: object) -> str:
    if not isinstance(method, str) or method not in GRID_EMD_METHODS:
        raise InvalidParameterError("method", method, f"one of {GRID_EMD_METHODS}")
    if method == "auto":
        return "network-simplex" if _pot_has_sparse_emd() else "highs"
    if method == "network-simplex" and not _pot_has_sparse_emd():
        raise InvalidParameterError("method", method,
                                    "'highs' or 'auto': this POT has no sparse network "
                                    "simplex (needs pot >= 0.9.6)")
    return method


def grid_emd(p: np.ndarray, q: np.ndarray, *, cell: tuple[float, float] | None = None,
             method: str = "auto", max_iter: int = _DEFAULT_MAX_ITER,
             gap_rtol: float = _DEFAULT_GAP_RTOL) -> float:
    r"""Exact Earth Mover's Distance with the L1 ground distance between cell centres.

    Paper 002, Sec. 2.1: for maps normalised to mass one,

    .. math::

        \mathrm{EMD}(p, q) = \min_{\gamma \in \Pi(\hat p, \hat q)}
        \sum_{x, y \in G_\Delta} \gamma(x, y)\, \|x - y\|_1 ,
        \qquad \|x - y\|_1 = w\,|c_x - c_y| + h\,|r_x - r_y| ,

    with :math:`(r, c)` the cell's row and column and :math:`w \times h` the cell size.
    Computed as a min-cost flow on the 4-neighbour grid graph (about
    :math:`4\Delta^2` arcs, no :math:`\Delta^2\times\Delta^2` cost matrix), certified by a
    primal/dual bracket; see the module docstring.

    Parameters
    ----------
    p, q : (Delta, Delta) arrays
        Non-negative maps with positive totals; each is normalised to mass one. Row
        ``r`` is along ``y`` and column ``c`` along ``x`` (the layout of
        :class:`~privot.grid.Grid`).
    cell : (width, height), optional
        Cell side lengths along ``x`` (between columns) and ``y`` (between rows).
        Default ``(1/Delta, 1/Delta)``: the unit square :math:`[0, 1)^2` of the paper,
        where the EMD lies in ``[0, 2]``. ``(1, 1)`` measures in cells.
    method : {"auto", "network-simplex", "highs"}
        Solver (see the module docstring). ``"auto"`` uses POT's sparse network simplex
        when available, else HiGHS.
    max_iter : int, default 10**9
        Iteration limit of the solver.
    gap_rtol : float, default 1e-6
        Largest accepted relative gap between the certified upper and lower bounds
        (the value returned is the lower bound; the gap is typically far smaller).

    Returns
    -------
    float
        The EMD in the units of ``cell``.

    Raises
    ------
    InvalidDataError
        ``p`` or ``q`` not square, shapes differ, negative, NaN/inf or all-zero.
    InvalidParameterError
        A bad ``cell``, ``method``, ``max_iter`` or ``gap_rtol``.
    ConvergenceError
        The solver stopped without an optimum, or the certified gap exceeds
        ``gap_rtol``.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.zeros((8, 8)); p[2, 1] = 1.0
    >>> q = np.zeros((8, 8)); q[2, 4] = 1.0
    >>> grid_emd(p, q)  # three cells to the right on the unit square: 3/8
    0.375
    """
    pn, qn = _check_pair(p, q)
    wx, wy = _check_cell(cell, pn.shape[0])
    solver = _check_method(method)
    it = check_int(max_iter, "max_iter", minimum=1, maximum=2**31 - 1)
    rtol = check_positive(gap_rtol, "gap_rtol")
    lower, upper = _grid_emd_bounds(pn, qn, wx, wy, solver, it)
    # an absolute floor: rounding of a mass-one problem on a grid of diameter D
    floor = 1e-13 * (wx + wy) * pn.shape[0]
    if upper - lower > rtol * max(upper, 0.0) + floor:
        raise ConvergenceError(
            f"grid_emd could not certify the optimum: lower bound {lower!r}, upper bound "
            f"{upper!r} (relative gap above gap_rtol={rtol!r}); try method='highs'")
    return lower


# -- metres on latitude/longitude grids -----------------------------------------------------


def grid_emd_metres(p: np.ndarray, q: np.ndarray, grid: Grid, *, method: str = "auto",
                    max_iter: int = _DEFAULT_MAX_ITER,
                    gap_rtol: float = _DEFAULT_GAP_RTOL) -> float:
    r"""EMD in metres between two heatmaps on a longitude/latitude grid.

    The ground distance is the L1 (Manhattan) distance in local metres between cell
    centres, :math:`w|\Delta c| + h|\Delta r|` with the cell size of
    :func:`latlon_cell_metres` (local equirectangular approximation at the grid's
    mid-latitude, WGS84 mean radius): the paper's L1 ground distance with each axis
    measured in metres. It is not the great-circle distance (for a diagonal move it is
    up to :math:`\sqrt2` times larger).

    Parameters
    ----------
    p, q : (Delta, Delta) arrays
        Heatmaps on ``grid`` (``Delta == grid.resolution``), non-negative, positive
        totals.
    grid : Grid
        Bounds ``(lon_min, lon_max, lat_min, lat_max)`` in degrees.
    method, max_iter, gap_rtol
        As :func:`grid_emd`.

    Returns
    -------
    float
        EMD in metres, for mass-one maps (the average distance one unit of mass moves).

    Raises
    ------
    InvalidDataError
        Bad maps (as :func:`grid_emd`), or maps whose side is not ``grid.resolution``.
    InvalidParameterError
        A grid outside the valid latitude/longitude range, or bad solver parameters.
    ConvergenceError
        As :func:`grid_emd`.
    """
    width, height = latlon_cell_metres(grid)
    pa = _check_map(p, "p")
    if pa.shape != (grid.resolution, grid.resolution):
        raise InvalidDataError(
            f"p has shape {pa.shape} but the grid is {grid.resolution} x {grid.resolution}")
    return grid_emd(pa, q, cell=(width, height), method=method, max_iter=max_iter,
                    gap_rtol=gap_rtol)


# -- all four -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeatmapMetrics:
    """The four heatmap metrics of paper 002, Sec. 4, of an estimate against the truth.

    Attributes
    ----------
    similarity : float
        :func:`similarity`, in ``[0, 1]``; higher is better.
    pearson : float
        :func:`pearson`, in ``[-1, 1]`` (NaN for a constant map); higher is better.
    kl_divergence : float
        :func:`kl_divergence` ``(true, estimate)`` in nats; lower is better.
    emd : float
        :func:`grid_emd` in the units of ``cell`` (the unit square by default); lower is
        better.
    """

    similarity: float
    pearson: float
    kl_divergence: float
    emd: float


def heatmap_metrics(true: np.ndarray, estimate: np.ndarray, *,
                    cell: tuple[float, float] | None = None,
                    kl_eps: float = KL_EPS, method: str = "auto") -> HeatmapMetrics:
    """Similarity, Pearson, KL and EMD of ``estimate`` against ``true`` (paper 002, Sec. 4).

    Parameters
    ----------
    true : (Delta, Delta) array
        The true (non-private) heatmap; non-negative, positive total.
    estimate : (Delta, Delta) array
        The released heatmap, same shape.
    cell : (width, height), optional
        Cell size for the EMD, as in :func:`grid_emd` (default: the unit square).
    kl_eps : float, default :data:`KL_EPS`
        Smoothing constant of :func:`kl_divergence`.
    method : {"auto", "network-simplex", "highs"}
        EMD solver, as in :func:`grid_emd`.

    Returns
    -------
    HeatmapMetrics

    Raises
    ------
    InvalidDataError
        Either map not square, shapes differ, negative, NaN/inf or all-zero; the
        message names ``true`` or ``estimate``.
    InvalidParameterError, ConvergenceError
        As :func:`kl_divergence` and :func:`grid_emd`.
    """
    t, e = _check_pair(true, estimate, ("true", "estimate"))
    return HeatmapMetrics(
        similarity=similarity(t, e),
        pearson=pearson(t, e),
        kl_divergence=kl_divergence(t, e, eps=kl_eps),
        emd=grid_emd(t, e, cell=cell, method=method),
    )
