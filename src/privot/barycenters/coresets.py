r"""The private coreset of paper 000 (Alg. 2): He, Vershynin and Zhu's Private Measure Mechanism.

He, Vershynin and Zhu, *Algorithmically Effective Differentially Private Synthetic
Data* (COLT 2023, their Algorithm 4), as used by paper 000 (Sec. 5, Thm 5.2, App. F.2)
and paper 001:

.. code-block:: text

    1: map the points into B_0(1/2) with the public bounds (geometry.PublicBounds)
    2: binary partition of the public box: level j halves every level-(j-1) cell along
       coordinate (j-1) mod d, j = 1..D, D ~ log2(eps n)          (leaf_index)
    3: for j = 1..D: noisy counts of all 2^j level-j cells,
       discrete Laplace of scale 2/eps_j, sum_j eps_j = eps      (noisy_level_counts)
    4: top-down: non-negative integer counts, children summing to their parent,
       root = n                                                   (consistent_counts)
    5: data-independently, place count(leaf) points in each leaf cell: uniform,
       uniform in the cell shrunk by (240 d)^(1/d) ("scaled", paper 000 App. F.2),
       or at the centre; optionally only inside a public region  (place_points)
    6: optionally subsample ``size`` of them
    7: for a solver, optionally merge the points by cells of the same public partition
       into at most ``max_atoms`` weighted atoms                   (cell_atoms)

Steps 4-7 read only the output of step 3 and public parameters: post-processing.

Privacy (unit: one point of one group; relation: replace one point, group sizes
public -- paper 000, Definition 4) and the noise schedule are derived in
``docs/privacy/barycenters.md``, section *Private coreset*.

Everything is in **unit coordinates** (inside :math:`B_0(1/2)`);
:meth:`PrivateCoreset.caller_points` maps back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._usable import usable_rows
from privot._validation import check_epsilon, check_int
from privot.barycenters._repr import short_repr
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.regions import Region
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.budget import TaggedSpender, check_spender, ensure_affordable
from privot.privacy.mechanisms import discrete_laplace_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Release, Spender

__all__ = [
    "MAX_DEPTH",
    "PLACEMENTS",
    "SCHEDULES",
    "PrivateCoreset",
    "cell_atoms",
    "consistent_counts",
    "coreset_from_leaf_counts",
    "default_depth",
    "leaf_cells",
    "interleave_cells",
    "leaf_index",
    "level_diameters",
    "noise_schedule",
    "noisy_level_counts",
    "place_points",
    "private_coreset",
    "scaled_shrink_factor",
]

#: Deepest partition allowed: levels 1..22 hold 2^23 - 2 (about 8.4 million) noisy
#: cells in all, every one of them noised (empty cells included), dense per level
#: (the deepest level is a 32 MiB int64 array; about 0.3 s of secure sampling).
MAX_DEPTH = 22
#: Noise schedules accepted by name.
SCHEDULES = ("optimal", "uniform")
#: Placement rules.
PLACEMENTS = ("uniform", "scaled", "centre")
#: Default number of rejection tries per point when a region is given.
DEFAULT_MAX_TRIES = 100
#: Sensitivity of one level's count vector under replace-one (-1 in one cell, +1 in one).
LEVEL_SENSITIVITY = 2
#: Points handled at once by the placement (times d floats per array).
_PLACE_BLOCK = 1 << 22


# ---------------------------------------------------------------------------------------
# The partition
# ---------------------------------------------------------------------------------------


def _check_depth(depth: object) -> int:
    return check_int(depth, "depth", minimum=1, maximum=MAX_DEPTH)


def _splits(depth: int, dim: int) -> np.ndarray:
    """``m_c``: how many of levels 1..depth halve coordinate ``c`` (level j halves
    coordinate (j - 1) mod d)."""
    c = np.arange(dim)
    return np.where(c < depth, (depth - 1 - c) // dim + 1, 0).astype(np.int64)


def _as_box(cell_box: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.asarray(cell_box[0], dtype=np.float64).reshape(-1)
    hi = np.asarray(cell_box[1], dtype=np.float64).reshape(-1)
    if lo.shape != hi.shape or np.any(~(lo < hi)):
        raise InvalidParameterError("cell_box", (lo, hi), "(lower, upper) with lower < upper")
    return lo, hi


def leaf_index(unit_points: np.ndarray, *, cell_box: tuple[np.ndarray, np.ndarray],
               depth: int) -> np.ndarray:
    r"""Leaf id (binary code of the path from the root) of each point.

    Level :math:`j = 1..D` halves every cell along coordinate :math:`(j-1) \bmod d`.
    Along coordinate :math:`c`, halved :math:`m_c` times in all, a point's index is
    :math:`k_c = \lfloor 2^{m_c}(u_c - \ell_c)/(h_c - \ell_c)\rfloor` clipped to
    :math:`[0, 2^{m_c} - 1]` (cells half-open, the upper face belonging to the last
    cell). The leaf id has the level-1 bit most significant:

    .. math:: \mathrm{id} = \sum_{j=1}^{D} b_j\, 2^{D-j}, \quad
              b_j = \text{bit } (m_c - 1 - t) \text{ of } k_c,\ c = (j-1) \bmod d,\
              t = \lfloor (j-1)/d\rfloor,

    so the level-:math:`j` ancestor of a leaf is ``id >> (D - j)``.

    Parameters
    ----------
    unit_points : (n, d) array
        Finite points (outside ``cell_box`` they are clipped to the border cells).
    cell_box : (lower, upper)
        The partitioned box (:meth:`PublicBounds.cell_box`).
    depth : int
        :math:`D`, 1..:data:`MAX_DEPTH`.

    Returns
    -------
    (n,) int64 array in :math:`[0, 2^D)`.
    """
    depth = _check_depth(depth)
    lo, hi = _as_box(cell_box)
    u = np.asarray(unit_points, dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != lo.size:
        raise InvalidDataError(f"unit_points must have shape (n, {lo.size}), got {u.shape}")
    m = _splits(depth, lo.size)
    k = {}
    for c in np.flatnonzero(m > 0).tolist():
        t = (u[:, c] - lo[c]) / (hi[c] - lo[c])
        kc = np.floor(np.ldexp(t, int(m[c])))
        k[c] = np.clip(kc, 0, (1 << int(m[c])) - 1).astype(np.int64)
    return interleave_cells(k, depth=depth, dim=lo.size)


def interleave_cells(k: dict[int, np.ndarray], *, depth: int, dim: int) -> np.ndarray:
    r"""Leaf ids from the per-coordinate cell indices :math:`k_c` (see :func:`leaf_index`).

    Parameters
    ----------
    k : dict
        ``{c: (n,) int64}`` for every coordinate ``c`` with :math:`m_c > 0`, each in
        :math:`[0, 2^{m_c})`.
    depth, dim : int

    Returns
    -------
    (n,) int64 array: bit :math:`m_c - 1 - t` of :math:`k_c` becomes bit :math:`D - j`
    of the id, :math:`c = (j-1) \bmod d`, :math:`t = \lfloor (j-1)/d \rfloor`.
    """
    m = _splits(depth, dim)
    n = next(iter(k.values())).shape[0] if k else 0
    ids = np.zeros(n, dtype=np.int64)
    for j in range(1, depth + 1):
        c, t = (j - 1) % dim, (j - 1) // dim
        bit = (k[c] >> (int(m[c]) - 1 - t)) & 1
        ids |= bit << (depth - j)
    return ids


def _leaf_k(ids: np.ndarray, depth: int, dim: int) -> dict[int, np.ndarray]:
    """Inverse of :func:`leaf_index`: the per-coordinate indices ``k_c`` of each leaf."""
    m = _splits(depth, dim)
    k = {c: np.zeros(ids.shape[0], dtype=np.int64) for c in np.flatnonzero(m > 0).tolist()}
    for j in range(1, depth + 1):
        c, t = (j - 1) % dim, (j - 1) // dim
        bit = (ids >> (depth - j)) & 1
        k[c] |= bit << (int(m[c]) - 1 - t)
    return k


def leaf_cells(leaf_ids: np.ndarray, *, cell_box: tuple[np.ndarray, np.ndarray],
               depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, each ``(n, d)``: the leaf cells of ``leaf_ids`` (unit coords)."""
    depth = _check_depth(depth)
    lo, hi = _as_box(cell_box)
    ids = np.asarray(leaf_ids, dtype=np.int64).reshape(-1)
    d = lo.size
    m = _splits(depth, d)
    lower = np.broadcast_to(lo, (ids.size, d)).copy()
    upper = np.broadcast_to(hi, (ids.size, d)).copy()
    for c, kc in _leaf_k(ids, depth, d).items():
        w = np.ldexp(hi[c] - lo[c], -int(m[c]))
        lower[:, c] = lo[c] + kc * w
        upper[:, c] = np.where(kc == (1 << int(m[c])) - 1, hi[c], lo[c] + (kc + 1) * w)
    return lower, upper


def level_diameters(cell_box: tuple[np.ndarray, np.ndarray], depth: int) -> np.ndarray:
    r"""Diameter :math:`\mathrm{diam}_j` of the level-:math:`j` cells, ``j = 0..depth``.

    A level-:math:`j` cell has side :math:`(h_c - \ell_c)\,2^{-m_c(j)}` along
    coordinate :math:`c`, :math:`m_c(j)` the number of levels :math:`\le j` that halve
    :math:`c`. ``out[0]`` is the diameter of the whole box.
    """
    depth = _check_depth(depth)
    lo, hi = _as_box(cell_box)
    w = hi - lo
    return np.array([float(np.linalg.norm(np.ldexp(w, -_splits(j, lo.size))))
                     if j else float(np.linalg.norm(w)) for j in range(depth + 1)])


def default_depth(epsilon: float, n: int) -> int:
    r""":math:`D = \lceil\log_2(\varepsilon n)\rceil` clamped to ``[1, MAX_DEPTH]``.

    ``n`` is the public group size. At that depth the expected number of points per
    leaf is about :math:`1/\varepsilon`, the noise scale of one count.
    """
    eps = check_epsilon(epsilon)
    n = check_int(n, "n", minimum=1)
    x = eps * n
    if x <= 2.0:
        return 1
    return max(1, min(MAX_DEPTH, math.ceil(math.log2(x))))


# ---------------------------------------------------------------------------------------
# The noise schedule
# ---------------------------------------------------------------------------------------


def _fit_total(raw: np.ndarray, eps: float) -> np.ndarray:
    out = raw / math.fsum(raw.tolist()) * eps
    while math.fsum(out.tolist()) > eps:  # float rounding may overshoot by an ulp or two
        out = np.nextafter(out, 0.0)
    return out


def noise_schedule(epsilon: float, *, depth: int,
                   cell_box: tuple[np.ndarray, np.ndarray] | None = None,
                   kind: str = "optimal") -> np.ndarray:
    r"""Per-level budgets :math:`\varepsilon_1..\varepsilon_D` with sum ``epsilon``.

    ``"optimal"`` minimises the bound on the expected W1 error
    :math:`\frac{c}{n}\sum_j a_j/\varepsilon_j` with
    :math:`a_j = 2^j\,\mathrm{diam}_{j-1}` (a level-:math:`j` count error of about the
    noise scale :math:`2/\varepsilon_j` in each of the :math:`2^j` cells moves mass
    within the parent cell, at most :math:`\mathrm{diam}_{j-1}` per unit) under
    :math:`\sum_j\varepsilon_j = \varepsilon`: by Lagrange (or Cauchy-Schwarz)

    .. math:: \varepsilon_j = \varepsilon\,\frac{\sqrt{a_j}}{\sum_{k=1}^{D}\sqrt{a_k}},
              \qquad \min = \frac{c}{n\varepsilon}\Big(\sum_j\sqrt{a_j}\Big)^2 .

    For a cube and levels that are multiples of :math:`d`,
    :math:`\mathrm{diam}_{j} \propto 2^{-j/d}`, so
    :math:`\varepsilon_j \propto 2^{j(1 - 1/d)/2}` (uniform for :math:`d = 1`).
    ``"uniform"``: :math:`\varepsilon/D` each. Derivation:
    ``docs/privacy/barycenters.md``.

    Parameters
    ----------
    epsilon : float
        Total, > 0.
    depth : int
        :math:`D`.
    cell_box : (lower, upper), optional
        The partitioned box (unit coordinates); required for ``"optimal"``.
    kind : {"optimal", "uniform"}

    Returns
    -------
    (depth,) float array, ``out[j-1]`` = :math:`\varepsilon_j`; its ``math.fsum`` is at
    most ``epsilon`` and equal to it up to a few ulps.
    """
    eps = check_epsilon(epsilon)
    depth = _check_depth(depth)
    if kind == "uniform":
        return _fit_total(np.ones(depth), eps)
    if kind == "optimal":
        if cell_box is None:
            raise InvalidParameterError("cell_box", None, "the partitioned box for "
                                        "kind='optimal'")
        diam = level_diameters(cell_box, depth)
        a = np.ldexp(diam[:-1], np.arange(1, depth + 1))  # a_j = 2^j diam_{j-1}
        return _fit_total(np.sqrt(a), eps)
    raise InvalidParameterError("schedule", kind, f"one of {SCHEDULES} or an array of "
                                "per-level epsilons")


def _resolve_schedule(schedule: object, eps: float, depth: int,
                      cell_box: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, str]:
    if isinstance(schedule, str):
        return noise_schedule(eps, depth=depth, cell_box=cell_box, kind=schedule), schedule
    try:
        arr = np.asarray(schedule, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError("schedule", schedule, f"one of {SCHEDULES} or an "
                                    "array of per-level epsilons") from exc
    if arr.shape != (depth,):
        raise InvalidParameterError("schedule", schedule,
                                    f"an array of {depth} per-level epsilons (one per "
                                    f"level of depth={depth})")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidParameterError("schedule", schedule, "finite per-level epsilons > 0")
    total = math.fsum(arr.tolist())
    if abs(total - eps) > 1e-9 * eps:
        raise InvalidParameterError("schedule", schedule,
                                    f"per-level epsilons summing to epsilon={eps!r} "
                                    f"(within 1e-9 relative); they sum to {total!r}")
    return arr.copy(), "explicit"


# ---------------------------------------------------------------------------------------
# Step 3: the noisy counts (the only step that reads the data)
# ---------------------------------------------------------------------------------------








def _check_leaf_counts(leaf_ids: object, counts: object, depth: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    ids = np.asarray(leaf_ids).reshape(-1)
    cnt = np.asarray(counts).reshape(-1)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise InvalidDataError(f"leaf_ids must be integers, got dtype {ids.dtype}")
    if cnt.size and not np.issubdtype(cnt.dtype, np.integer):
        raise InvalidDataError(f"counts must be integers, got dtype {cnt.dtype}")
    if ids.shape != cnt.shape:
        raise InvalidDataError(f"leaf_ids has {ids.size} entries but counts has {cnt.size}")
    ids, cnt = ids.astype(np.int64), cnt.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= (1 << depth)):
        raise InvalidDataError(f"leaf_ids must lie in [0, 2**depth) = [0, {1 << depth}) "
                               f"for depth={depth}")
    if np.any(cnt < 0):
        raise InvalidDataError("counts must be non-negative")
    return ids, cnt


def noisy_level_counts(leaf_ids: np.ndarray, counts: np.ndarray, *, depth: int,
                       level_epsilons: np.ndarray, accountant: Spender | None = None,
                       rng: np.random.Generator | None = None
                       ) -> tuple[tuple[np.ndarray, ...], tuple[Release, ...]]:
    r"""Step 3: every level's cell counts plus discrete Laplace noise of scale 2/eps_j.

    Parameters
    ----------
    leaf_ids, counts : (m,) int arrays
        Exact number of points in each listed leaf (unlisted leaves hold 0; repeated
        ids add up).
    depth : int
        :math:`D`.
    level_epsilons : (depth,) array
        :math:`\varepsilon_j` > 0 for levels 1..D.
    accountant : Spender, optional
        Charged once per level (``"discrete-laplace"``, tagged ``release``/``level``).
    rng : numpy.random.Generator, optional
        None: OS CSPRNG (secure). A seeded generator: reproducible, not secure.

    Returns
    -------
    levels : tuple of D int64 arrays
        ``levels[j-1]`` has the :math:`2^j` noisy counts of level :math:`j`
        (**every** cell, empty ones included, is noised).
    releases : tuple of Release

    Privacy
    -------
    Unit: one point. Relation: replace one point by another of its group
    (``REPLACE_ONE_IN_GROUP``; the group sizes are public). Replacing a point
    moves one unit of count from one level-:math:`j` cell to another (or nowhere), so
    each level's count vector has L1 sensitivity 2; each level is one
    :func:`~privot.privacy.mechanisms.discrete_laplace_mechanism` call with sensitivity 2
    and :math:`\varepsilon_j` (pure, exact). Basic composition: pure
    :math:`\sum_j\varepsilon_j`-DP. ``docs/privacy/barycenters.md``.
    """
    depth = _check_depth(depth)
    ids, cnt = _check_leaf_counts(leaf_ids, counts, depth)
    eps_levels = np.asarray(level_epsilons, dtype=np.float64).reshape(-1)
    if eps_levels.shape != (depth,):
        raise InvalidParameterError("level_epsilons", level_epsilons,
                                    f"an array of {depth} per-level epsilons")
    check_spender(accountant)
    ensure_affordable(accountant, math.fsum(eps_levels.tolist()), "the private coreset")
    leaves = np.zeros(1 << depth, dtype=np.int64)
    np.add.at(leaves, ids, cnt)  # exact integer sums (repeated ids add up)
    levels, releases = [], []
    for j in range(1, depth + 1):
        shift = depth - j
        exact = leaves.reshape(1 << j, 1 << shift).sum(axis=1) if shift else leaves
        spender = (None if accountant is None else
                   TaggedSpender(accountant, {"release": "private-coreset", "level": j,
                                              "query": f"counts of the 2^{j} level-{j} "
                                                       "cells"}))
        rel = discrete_laplace_mechanism(exact.astype(np.int64), sensitivity=LEVEL_SENSITIVITY,
                                         epsilon=float(eps_levels[j - 1]),
                                         accountant=spender, rng=rng,
                                         relation=Neighbouring.REPLACE_ONE_IN_GROUP)
        levels.append(np.asarray(rel.value, dtype=np.int64))
        releases.append(rel)
    return tuple(levels), tuple(releases)


# ---------------------------------------------------------------------------------------
# Step 4: consistency (post-processing)
# ---------------------------------------------------------------------------------------


def consistent_counts(levels: tuple[np.ndarray, ...] | list[np.ndarray], n: int
                      ) -> np.ndarray:
    r"""Step 4: consistent non-negative integer counts, top-down from the root ``n``.

    For each parent with consistent count :math:`c` and noisy children :math:`y_L, y_R`:
    clamp :math:`a = \max(y_L, 0)`, :math:`b = \max(y_R, 0)`; if :math:`a + b > 0` the
    left child gets :math:`\lfloor c\,a/(a+b) + 1/2\rfloor` (exact integer arithmetic)
    and the right child the rest; if :math:`a = b = 0` the split is even, the left child
    taking the odd unit. Children are then non-negative and sum exactly to the parent.

    Parameters
    ----------
    levels : sequence of D int arrays
        ``levels[j-1]`` of length :math:`2^j` (as from :func:`noisy_level_counts`).
    n : int
        The public root count, >= 0.

    Returns
    -------
    (2^D,) int64 array of leaf counts, summing to ``n``.
    """
    n = check_int(n, "n", minimum=0)
    parent = np.array([n], dtype=np.int64)
    for j, y in enumerate(levels, start=1):
        y = np.asarray(y).reshape(-1)
        if y.shape != (1 << j,) or not np.issubdtype(y.dtype, np.integer):
            raise InvalidDataError(f"levels[{j - 1}] must be {1 << j} integer counts, got "
                                   f"shape {y.shape} and dtype {y.dtype}")
        a = np.maximum(y[0::2], 0).astype(np.int64)
        b = np.maximum(y[1::2], 0).astype(np.int64)
        s = a + b
        big = parent.size and int(parent.max()) * max(int(s.max()), 1) >= (1 << 60)
        if big:  # exact Python integers rather than an int64 overflow
            p_o, a_o, s_o = parent.astype(object), a.astype(object), s.astype(object)
            safe = np.where(s > 0, s_o, 1)
            left = np.where(s > 0, (2 * p_o * a_o + safe) // (2 * safe),
                            (p_o + 1) // 2).astype(np.int64)
        else:
            safe = np.where(s > 0, s, 1)
            left = np.where(s > 0, (2 * parent * a + safe) // (2 * safe), (parent + 1) // 2)
        child = np.empty(1 << j, dtype=np.int64)
        child[0::2] = left
        child[1::2] = parent - left
        parent = child
    return parent


# ---------------------------------------------------------------------------------------
# Step 5: placement (post-processing, data-independent)
# ---------------------------------------------------------------------------------------


def scaled_shrink_factor(dim: int) -> float:
    r""":math:`(240\,d)^{1/d}`: the factor the ``"scaled"`` placement shrinks each leaf
    cell by about its centre (paper 000, App. F.2; paper 001: "we scale the noise down
    by :math:`(240d)^{1/d}`")."""
    d = check_int(dim, "dim", minimum=1)
    return float((240.0 * d) ** (1.0 / d))


def _draw(lower: np.ndarray, upper: np.ndarray, rule: str, gen: np.random.Generator,
          shrink: float) -> np.ndarray:
    centre = (lower + upper) / 2.0
    if rule == "centre":
        return centre
    half = (upper - lower) / 2.0
    if rule == "scaled":
        half = half / shrink
    return centre + half * gen.uniform(-1.0, 1.0, size=lower.shape)


def _project_ball(points: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(points, axis=1)
    out = norm > 0.5
    if np.any(out):
        points[out] *= (0.5 / norm[out])[:, None]
    return points


def place_points(leaf_counts: np.ndarray, *, bounds: PublicBounds, depth: int,
                 placement: str = "scaled", region: Region | None = None,
                 rng: np.random.Generator | None = None,
                 max_tries: int = DEFAULT_MAX_TRIES) -> tuple[np.ndarray, int]:
    r"""Step 5: ``leaf_counts[l]`` points in each leaf cell ``l``, data-independently.

    Rules: ``"uniform"`` in the cell; ``"scaled"`` uniform in the cell shrunk about its
    centre by :func:`scaled_shrink_factor`; ``"centre"`` at the cell centre. For ball
    bounds, points outside :math:`B_0(1/2)` (from cells of the bounding cube) are
    projected radially onto it.

    With a ``region`` (tested in caller coordinates, after the projection), each point
    is redrawn until it lies in the region: tries ``0 .. max_tries//2 - 1`` use the
    rule (for ``"centre"``, only the first try; later ones are uniform), the later ones
    are uniform in the whole cell. Points still outside after ``max_tries`` are dropped.

    Returns
    -------
    points : (N, d) array, unit coordinates
    n_outside_region : int
        Points dropped by the region filter.
    """
    if placement not in PLACEMENTS:
        raise InvalidParameterError("placement", placement, f"one of {PLACEMENTS}")
    depth = _check_depth(depth)
    max_tries = check_int(max_tries, "max_tries", minimum=1)
    if region is not None and not hasattr(region, "contains"):
        raise InvalidParameterError("region", region, "None or an object with "
                                    "contains(points) -> bool array (a Region)")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng()
    counts = np.asarray(leaf_counts, dtype=np.int64).reshape(-1)
    ids = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    d = bounds.dim
    box = bounds.cell_box()
    shrink = scaled_shrink_factor(d)
    block = max(1, _PLACE_BLOCK // d)
    parts, dropped = [], 0
    for start in range(0, ids.size, block):
        lower, upper = leaf_cells(ids[start:start + block], cell_box=box, depth=depth)
        pts = _draw(lower, upper, placement, gen, shrink)
        if bounds.kind == "ball":
            pts = _project_ball(pts)
        if region is not None:
            ok = _inside(region, bounds, pts)
            for t in range(1, max_tries):
                todo = np.flatnonzero(~ok)
                if todo.size == 0:
                    break
                rule = placement if (t < max_tries // 2 and placement != "centre") \
                    else "uniform"
                new = _draw(lower[todo], upper[todo], rule, gen, shrink)
                if bounds.kind == "ball":
                    new = _project_ball(new)
                pts[todo] = new
                ok[todo] = _inside(region, bounds, new)
            dropped += int(np.count_nonzero(~ok))
            pts = pts[ok]
        parts.append(pts)
    out = np.concatenate(parts, axis=0) if parts else np.empty((0, d))
    return out, dropped


def _inside(region: Region, bounds: PublicBounds, unit_points: np.ndarray) -> np.ndarray:
    mask = np.asarray(region.contains(bounds.from_unit(unit_points)))
    if mask.shape != (unit_points.shape[0],):
        raise InvalidDataError(f"region.contains returned shape {mask.shape}; expected "
                               f"({unit_points.shape[0]},)")
    return mask.astype(bool)


# ---------------------------------------------------------------------------------------
# Step 7: weighted atoms for a solver (post-processing, public partition)
# ---------------------------------------------------------------------------------------


def cell_atoms(points: np.ndarray, *, bounds: PublicBounds, depth: int, max_atoms: int
               ) -> tuple[np.ndarray, np.ndarray, int]:
    r"""Step 7: the coreset as at most ``max_atoms`` weighted atoms, by public cells.

    The points are grouped by the cell of the coreset's own public partition
    (:func:`leaf_index` on ``bounds.cell_box()``) that holds them, at the deepest level
    :math:`L \le` ``depth`` with at most ``max_atoms`` non-empty cells (level ``depth``
    when the points already occupy few enough leaves). Each non-empty cell becomes one
    atom, at the mean of its points, weighted by their number. The empirical measure of
    the points is thereby moved by at most the level-:math:`L` cell diameter per unit of
    mass (in :math:`W_p`), and is unchanged where a cell's points coincide: with
    ``"centre"`` placement at level ``depth`` the atoms are the distinct leaf centres
    with their counts, exactly the same measure as the points.

    Parameters
    ----------
    points : (N, d) array
        Coreset points in unit coordinates (:attr:`PrivateCoreset.points`).
    bounds : PublicBounds
    depth : int
        The coreset's depth (the partition the points were placed on).
    max_atoms : int
        At most this many atoms, ``>= 1`` (level 0, one atom, always qualifies).

    Returns
    -------
    atoms : (A, d) array
        ``A <= max_atoms`` atoms in unit coordinates (the order of their cells' ids).
    counts : (A,) int64 array
        Points per atom (summing to ``N``).
    level : int
        The level :math:`L` of the cells used.

    Privacy
    -------
    Post-processing: reads only the coreset points (a function of the released noisy
    counts and public randomness), the public partition and public ``max_atoms``; never
    the raw data. ``docs/privacy/barycenters.md``.
    """
    depth = _check_depth(depth)
    cap = check_int(max_atoms, "max_atoms", minimum=1)
    x = np.asarray(points, dtype=np.float64)
    d = bounds.dim
    if x.ndim != 2 or x.shape[1] != d:
        raise InvalidDataError(f"points must have shape (N, {d}), got {x.shape}")
    if x.shape[0] == 0:
        return np.empty((0, d)), np.empty(0, dtype=np.int64), depth
    ids = leaf_index(x, cell_box=bounds.cell_box(), depth=depth)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    level = depth
    while level > 0:  # ancestors of sorted ids stay sorted: count the changes
        anc = sorted_ids >> (depth - level)
        if 1 + int(np.count_nonzero(anc[1:] != anc[:-1])) <= cap:
            break
        level -= 1
    anc = sorted_ids >> (depth - level)
    starts = np.flatnonzero(np.r_[True, anc[1:] != anc[:-1]])
    counts = np.diff(np.r_[starts, anc.size]).astype(np.int64)
    group = np.repeat(np.arange(starts.size), counts)
    xs = x[order]
    first = xs[starts]
    # first point + mean offset: exact where a cell's points coincide (centre placement)
    off = xs - first[group]
    atoms = first + np.stack([np.bincount(group, weights=off[:, c], minlength=starts.size)
                              for c in range(d)], axis=1) / counts[:, None]
    return atoms, counts, level


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PrivateCoreset:
    r"""A private coreset: synthetic points whose empirical measure is close in W1.

    Attributes
    ----------
    points : (N, d) array
        The synthetic points in **unit coordinates** (inside :math:`B_0(1/2)`);
        :meth:`caller_points` maps them back. ``N = n`` unless the region filter
        dropped some or ``size`` subsampled.
    leaf_ids, leaf_counts : (m,) int64 arrays
        The consistent private counts of the non-empty leaves (sparse; see
        :meth:`dense_leaf_counts`). They sum to ``n``.
    depth : int
    level_epsilons : (depth,) array
        :math:`\varepsilon_j`; they sum to ``cost.epsilon``.
    cost : PrivacyCost
        Pure :math:`\sum_j\varepsilon_j`-DP.
    relation : Neighbouring
        ``REPLACE_ONE_IN_GROUP`` (one point of the group replaced; the group size is
        public).
    secure : bool
        False when a seeded generator was used: reproducible, **not fit for publication**.
    n : int
        The public group size (root count).
    n_clipped : int
        Input points outside the public bounds, clipped (curator-side diagnostic, not
        private).
    placement : str
    n_outside_region : int
        Points the region filter could not place (a function of the private counts and
        public parameters only).
    bounds : PublicBounds
    params : dict
        ``schedule``, ``scales`` (per level, 2/eps_j), ``shrink``, ``max_tries``,
        ``size``, ``region``.
    """

    points: np.ndarray
    leaf_ids: np.ndarray
    leaf_counts: np.ndarray
    depth: int
    level_epsilons: np.ndarray
    cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    n: int
    n_clipped: int
    placement: str
    n_outside_region: int
    bounds: PublicBounds
    params: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return short_repr(self, ("n", "points", "depth", "epsilon", "placement", "secure"))

    @property
    def epsilon(self) -> float:
        """The epsilon spent."""
        return self.cost.epsilon

    def caller_points(self) -> np.ndarray:
        """The points in caller units (:meth:`PublicBounds.from_unit`)."""
        return self.bounds.from_unit(self.points)

    def dense_leaf_counts(self) -> np.ndarray:
        """``(2^depth,)`` int64 counts of every leaf."""
        out = np.zeros(1 << self.depth, dtype=np.int64)
        out[self.leaf_ids] = self.leaf_counts
        return out


def _generators(rng: object) -> tuple[np.random.Generator | None, np.random.Generator]:
    """(noise rng, placement rng): None -> secure noise and an OS-seeded placement rng."""
    g = check_rng(rng, bits=False)
    return (None, np.random.default_rng()) if g is None else (g, g)


def coreset_from_leaf_counts(leaf_ids: np.ndarray, counts: np.ndarray, n: int | None = None,
                             *, bounds: PublicBounds, epsilon: float,
                             depth: int | None = None,
                             schedule: str | np.ndarray = "optimal",
                             placement: str = "scaled", region: Region | None = None,
                             size: int | None = None,
                             rng: np.random.Generator | int | None = None,
                             accountant: Spender | None = None, n_clipped: int = 0,
                             max_tries: int = DEFAULT_MAX_TRIES) -> PrivateCoreset:
    r"""Steps 3-6 of the Private Measure Mechanism from exact leaf counts.

    The entry point of the engines (:func:`~privot.barycenters.engine_step.
    coreset_leaf_counts` computes the counts at scale on DuckDB or Spark);
    :func:`private_coreset` = leaf counting + this.

    Parameters
    ----------
    leaf_ids, counts : (m,) int arrays
        Exact counts of the leaves of the depth-``depth`` partition of
        ``bounds.cell_box()`` (ids as in :func:`leaf_index`); unlisted leaves are empty.
    n : int, optional
        The public group size (default ``counts.sum()``); at least ``counts.sum()``. Rows
        not counted in any leaf are unusable rows (a missing or non-numeric coordinate,
        :mod:`privot._usable`): they stay in the public size, and the consistency step
        spreads the root count ``n`` over the noisy leaves.
    bounds : PublicBounds
    epsilon : float
        Total budget > 0.
    depth : int, optional
        Default :func:`default_depth` ``(epsilon, n)``. Required to match the depth the
        ids were computed at.
    schedule, placement, region, size, rng, accountant
        As in :func:`private_coreset`.
    n_clipped : int
        Recorded as is (the caller's clipping diagnostic).
    max_tries : int
        Rejection tries per point with a region.

    Returns
    -------
    PrivateCoreset

    Privacy
    -------
    As :func:`private_coreset`, for the data set whose exact leaf counts these are.
    """
    if not isinstance(bounds, PublicBounds):
        raise InvalidParameterError("bounds", bounds, "a privot PublicBounds")
    eps = check_epsilon(epsilon)
    total = int(np.asarray(counts, dtype=np.int64).sum()) if np.size(counts) else 0
    n_pub = total if n is None else check_int(n, "n", minimum=1)
    if n_pub < 1:
        raise InvalidDataError("the group is empty (counts sum to 0); at least one point "
                               "is needed")
    if n_pub < total:
        raise InvalidDataError(f"counts sum to {total} but n={n_pub}; n is the public "
                               "group size, at least the number of points counted")
    depth = default_depth(eps, n_pub) if depth is None else _check_depth(depth)
    ids, cnt = _check_leaf_counts(leaf_ids, counts, depth)
    if placement not in PLACEMENTS:
        raise InvalidParameterError("placement", placement, f"one of {PLACEMENTS}")
    if size is not None:
        size = check_int(size, "size", minimum=1)
    if region is not None and not hasattr(region, "contains"):
        raise InvalidParameterError("region", region, "None or an object with "
                                    "contains(points) -> bool array (a Region)")
    box = bounds.cell_box()
    level_eps, schedule_name = _resolve_schedule(schedule, eps, depth, box)
    noise_rng, place_rng = _generators(rng)

    levels, releases = noisy_level_counts(ids, cnt, depth=depth, level_epsilons=level_eps,
                                          accountant=accountant, rng=noise_rng)
    leaves = consistent_counts(levels, n_pub)
    to_place = leaves
    if region is None and size is not None and n_pub > size:
        # without a region every slot is placed independently, so choosing the slots
        # first and placing only those has the same distribution (and is cheaper)
        slots = place_rng.choice(n_pub, size=size, replace=False)
        owner = np.searchsorted(np.cumsum(leaves), slots, side="right")
        to_place = np.bincount(owner, minlength=leaves.size).astype(np.int64)
    points, dropped = place_points(to_place, bounds=bounds, depth=depth,
                                   placement=placement, region=region, rng=place_rng,
                                   max_tries=max_tries)
    if size is not None and points.shape[0] > size:
        keep = place_rng.choice(points.shape[0], size=size, replace=False)
        points = points[np.sort(keep)]
    nz = np.flatnonzero(leaves)
    spent = math.fsum(level_eps.tolist())
    params = {"schedule": schedule_name,
              "scales": [float(r.params["scale"]) for r in releases],
              "shrink": scaled_shrink_factor(bounds.dim) if placement == "scaled" else 1.0,
              "max_tries": max_tries, "size": size,
              "region": None if region is None else type(region).__name__}
    return PrivateCoreset(points=points, leaf_ids=nz.astype(np.int64),
                          leaf_counts=leaves[nz], depth=depth, level_epsilons=level_eps,
                          cost=PrivacyCost(spent), relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                          secure=all(r.secure for r in releases), n=n_pub,
                          n_clipped=int(n_clipped), placement=placement,
                          n_outside_region=dropped, bounds=bounds, params=params)


def private_coreset(points: np.ndarray, *, bounds: PublicBounds, epsilon: float,
                    depth: int | None = None, schedule: str | np.ndarray = "optimal",
                    placement: str = "scaled", region: Region | None = None,
                    size: int | None = None, rng: np.random.Generator | int | None = None,
                    accountant: Spender | None = None,
                    max_tries: int = DEFAULT_MAX_TRIES) -> PrivateCoreset:
    r"""Private coreset of one group: He, Vershynin and Zhu's Private Measure Mechanism.

    Parameters
    ----------
    points : (n, d) array
        The group's points in caller units. ``n`` (the group size, rows) is public. A
        row with a non-finite coordinate (NaN for a missing value) is unusable: it is
        left out of the counts and stays in ``n`` (:mod:`privot._usable`); at least one
        row must be usable.
    bounds : PublicBounds
        Public box or ball (never derived from the data); points outside are clipped.
    epsilon : float
        Total budget > 0.
    depth : int, optional
        Partition depth 1..:data:`MAX_DEPTH`; default
        :math:`\lceil\log_2(\varepsilon n)\rceil` clamped (:func:`default_depth`).
    schedule : {"optimal", "uniform"} or (depth,) array
        Per-level budgets (:func:`noise_schedule`); an array must have ``depth``
        positive entries summing to ``epsilon`` (within 1e-9 relative).
    placement : {"scaled", "uniform", "centre"}
        Where the points go in each leaf (:func:`place_points`).
    region : Region, optional
        Public region (caller coordinates) the points must fall in; points that cannot
        be placed inside are dropped (``n_outside_region``).
    size : int, optional
        Keep ``size`` of the points, chosen uniformly without replacement (all if fewer).
    rng : numpy Generator or int, optional
        None (default): secure noise (OS CSPRNG) and an OS-seeded placement generator.
        A seed or generator makes the release reproducible and ``secure=False``.
    accountant : PrivacyAccountant, optional
        Charged once per level (``discrete-laplace``, tagged ``release="private-coreset"``
        and ``level``); the whole release is checked to fit first.
    max_tries : int
        Rejection tries per point with a region.

    Returns
    -------
    PrivateCoreset

    Privacy
    -------
    Unit: one point of the group. Relation: replace one point, group size public
    (``Neighbouring.REPLACE_ONE_IN_GROUP``; paper 000, Definition 4). The clipping and the
    leaf
    of a point depend on that point alone, so a replacement changes one leaf count by
    -1 and one by +1: every level's count vector has L1 sensitivity 2. The root count
    ``n`` is public and not noised. Level :math:`j` gets discrete Laplace noise of scale
    :math:`2/\varepsilon_j` (exact, secure sampler) on every one of its :math:`2^j`
    cells: pure :math:`\varepsilon_j`-DP; basic composition over the levels: pure
    :math:`\varepsilon = \sum_j\varepsilon_j`-DP. Consistency, placement, the region
    filter and subsampling read only the noisy counts and public parameters
    (post-processing). ``docs/privacy/barycenters.md``.

    Examples
    --------
    >>> import numpy as np
    >>> from privot.barycenters.geometry import PublicBounds
    >>> x = np.random.default_rng(0).uniform(0, 1, size=(1000, 2))
    >>> cs = private_coreset(x, bounds=PublicBounds.box([0, 0], [1, 1]), epsilon=1.0,
    ...                      rng=0)
    >>> cs.points.shape, cs.depth, cs.secure
    ((1000, 2), 10, False)
    """
    if not isinstance(bounds, PublicBounds):
        raise InvalidParameterError("bounds", bounds, "a privot PublicBounds")
    eps = check_epsilon(epsilon)
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError("points must be numeric (n, d) coordinates; use NaN for a "
                               "missing value") from exc
    if x.ndim != 2 or x.shape[0] == 0:
        raise InvalidDataError(f"points must be a non-empty (n, d) array, got shape {x.shape}")
    usable = usable_rows(x)
    if not usable.any():
        raise InvalidDataError(f"points: none of the {x.shape[0]} rows has finite "
                               "coordinates; at least one usable row is needed")
    unit, n_clipped = bounds.to_unit(x[usable])
    n = x.shape[0]  # the public size counts unusable rows too (replace-one, n public)
    depth = default_depth(eps, n) if depth is None else _check_depth(depth)
    ids = leaf_index(unit, cell_box=bounds.cell_box(), depth=depth)
    leaf, cnt = np.unique(ids, return_counts=True)
    return coreset_from_leaf_counts(leaf, cnt.astype(np.int64), n, bounds=bounds,
                                    epsilon=eps, depth=depth, schedule=schedule,
                                    placement=placement, region=region, size=size, rng=rng,
                                    accountant=accountant, n_clipped=n_clipped,
                                    max_tries=max_tries)
