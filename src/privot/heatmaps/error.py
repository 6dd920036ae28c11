r"""The error a private heatmap will have, from its public parameters (issue 28).

:func:`heatmap_error` states, before anything is spent, a bound on the Earth Mover's
Distance (L1 ground distance between cell centres, the metric of paper 002, Sec. 2.1)
between the released distribution :math:`\hat{\mathbf a}` and the true one
:math:`\mathbf a = \mathbf s / n`, for the pyramid mechanism (Algorithms 1 + 2):

.. math::

    n\,\mathrm{EMD}(\hat{\mathbf a}, \mathbf a) \;\le\;
    (2\Delta - 1)\,\|\nu_q\|_1 + 2\Delta \sum_{i=q+1}^{\ell} 2^{-i}\,
    \|\nu_i|_{S_i}\|_1 \;\le\; 2\Delta N ,

where level ``q`` (every cell kept) is fitted exactly by the LP,
:math:`\mathbf P_q\hat{\mathbf s} = \max(\mathbf P_q\mathbf s + \nu_q, 0)`, and :math:`N` bounds the
weighted noise on the cells RECONSTRUCT keeps, at the stated confidence by a Chernoff
bound on the Laplace noise (``docs/errors/heatmaps.md`` derives it, beside the earlier,
looser :math:`2 R_q \Delta N` bound). The number of users ``n`` is **not public**
(privot releases no count; the sum of the estimate is only a noisy one), so the
statement bounds ``n x EMD`` in
``cells x users``; given a public lower bound on ``n`` the caller gets the EMD itself.
What no public bound can cover -- the mass outside the best ``w``-sparse (tree-sparse)
approximation of ``s``, and true mass the noisy top-``w`` selection drops -- is named in
``not_covered``.

Privacy
-------
A function of public parameters only (grid, epsilon, w, gamma and the caller's
``n_users``): publishable, the same for any two inputs. No noise, no data.
"""

from __future__ import annotations

import math

import numpy as np

from privot._validation import check_int
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError
from privot.grid import latlon_cell_metres
from privot.heatmaps.blocks import geographic_bounds
from privot.heatmaps.measure import level_budgets, start_level
from privot.heatmaps.params import HeatmapParams

__all__ = ["DEFAULT_CONFIDENCE", "dropped_term", "heatmap_error", "noise_quantile",
           "uncovered_term"]

#: Default probability (over the noise) with which the stated bound holds.
DEFAULT_CONFIDENCE = 0.99
#: Largest relative rounding slack of :func:`~privot.privacy.mechanisms.laplace_mechanism`.
_SLACK = 2.0 ** -20
_DERIVATION = "docs/errors/heatmaps.md"


def _level_sizes(w: int, q: int, ell: int) -> list[tuple[int, int]]:
    """``(|T_i|, |S_i|)`` for ``i = q..ell``: cells RECONSTRUCT looks at and keeps."""
    return [(min(4 ** i, 4 * w) if i > q else 4 ** i, min(4 ** i, w))
            for i in range(q, ell + 1)]


def noise_quantile(weights: np.ndarray, counts: np.ndarray, kept: np.ndarray,
                   confidence: float) -> float:
    r"""A ``confidence`` upper bound on :math:`\sum_i \omega_i\,\mathrm{top}_{m_i}(|X_{i}|)`.

    For each group ``i``, ``counts[i]`` i.i.d. exponentials of mean ``weights[i]`` (the
    magnitudes of Laplace noise); ``top_m`` is the sum of the ``kept[i]`` largest. With
    the threshold :math:`\tau_i = \omega_i \ln(M_i / m_i)`,
    :math:`\mathrm{top}_m \le m\tau + \sum (X - \tau)_+`, and the Chernoff bound on the
    sum of the :math:`(X-\tau)_+` (MGF :math:`1 - e^{-\tau/\omega} + e^{-\tau/\omega} /
    (1 - \lambda\omega)`) is minimised over :math:`\lambda` on a grid.

    Parameters
    ----------
    weights, counts, kept : (L,) arrays
        Mean magnitude, number of cells and number kept per group.
    confidence : float
        In (0, 1).

    Returns
    -------
    float
    """
    a = np.asarray(weights, dtype=np.float64)
    m_all = np.asarray(counts, dtype=np.float64)
    m_kept = np.asarray(kept, dtype=np.float64)
    lam = np.linspace(1e-4, 1 - 1e-4, 2000)[:, None] / a.max()
    best = math.inf
    # tau = c * mean * ln(M/m) for a few fixed c: each is a valid bound at this
    # confidence, and c is chosen from the public figures only, so the least is too
    for c in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0):
        tau = c * a * np.log(m_all / m_kept)
        p_over = np.exp(-tau / a)  # P(X > tau)
        mgf = 1.0 - p_over + p_over / (1.0 - lam * a)
        log_mgf = (m_all * np.log(mgf)).sum(axis=1)
        t = (log_mgf + math.log(1.0 / (1.0 - confidence))) / lam[:, 0]
        best = min(best, float(np.sum(m_kept * tau) + t.min()))
    return best


def _noise_terms(p: HeatmapParams, confidence: float) -> dict[str, float]:
    r"""The per-level public figures and the noise bound ``N``: a ``confidence`` bound on
    :math:`(1 - 1/2\Delta)\|\nu_q\|_1 + \sum_{i>q} 2^{-i} \|\nu_i|_{S_i}\|_1`."""
    ell = p.grid.levels
    q = start_level(p.w, ell)
    eps = level_budgets(p.epsilon, levels=ell, q=q, gamma=p.gamma)
    sizes = _level_sizes(p.w, q, ell)
    # Laplace scale incl. the rounding slack, rounded up; |discrete Laplace| <= g + Exp(b)
    # and rounding moves a value by <= g/2, g = 2^-20 4^-i: a deterministic 2g per cell
    scales = (1.0 + _SLACK) * (1.0 + 1e-12) / eps
    grid_steps = np.array([_SLACK * 4.0 ** -i for i in range(q, ell + 1)])
    level_w = np.array([2.0 ** -i for i in range(q, ell + 1)])
    # level q is fitted exactly by the LP: its noise enters the EMD with weight
    # (2 Delta - 1) / (2 Delta) rather than through the LP's F (derivation, step 4')
    level_w[0] = 1.0 - 0.5 / p.grid.resolution
    counts = np.array([s[0] for s in sizes], dtype=np.float64)
    kept = np.array([s[1] for s in sizes], dtype=np.float64)
    n_bound = noise_quantile(level_w * scales, counts, kept, confidence)
    n_bound += float(np.sum(level_w * kept * 2.0 * grid_steps))
    return {"q": q, "ell": ell, "noise": n_bound,
            "level_epsilons": {str(q + j): float(e) for j, e in enumerate(eps)},
            "kept": {str(q + j): int(k) for j, k in enumerate(kept)}}


def _units(p: HeatmapParams) -> dict[str, float]:
    """Bound-units per cell: ``(width + height) / 2`` of a cell (a level cell's L1
    diameter in these units is that times its diameter in cells), and metres for a
    longitude/latitude grid when the bounds can be read as degrees."""
    g = p.grid
    out = {"bounds_units_per_cell": 0.5 * (g.cell_width + g.cell_height)}
    x0, _, y0, _ = g.bounds
    extent = (x0, x0 + g.cell_width * g.resolution, y0, y0 + g.cell_height * g.resolution)
    if geographic_bounds(extent):  # the grid's extent (square aspect may pass the bounds)
        try:
            width, height = latlon_cell_metres(g)  # equirectangular, privot.grid
        except InvalidParameterError:  # not readable as degrees after all: no metres
            return out
        out["metres_per_cell_if_lonlat"] = 0.5 * (width + height)
    return out


def heatmap_error(params: HeatmapParams, *, n_users: int | None = None,
                  confidence: float = DEFAULT_CONFIDENCE) -> ErrorStatement:
    r"""The EMD a heatmap release with these public parameters will have, stated first.

    Parameters
    ----------
    params : HeatmapParams
        The release's public choices (grid, epsilon, method, w, gamma).
    n_users : int, optional
        A public lower bound on the number of users with a point inside the bounds
        (privot does not release it). None: the bound is on ``n x EMD`` in
        ``cells x users``; given, on the EMD itself in cells (the bound falls with ``n``,
        so a lower bound is enough).
    confidence : float, default 0.99
        Probability over the noise with which the bound holds, in (0, 1).

    Returns
    -------
    ErrorStatement
        ``bound`` in cells (or cells x users); ``details`` gives the noise term, its
        factor and the bound in the bounds' units (and metres on a lon/lat grid).

    Raises
    ------
    InvalidParameterError
        ``params`` not a HeatmapParams, ``n_users < 1`` or ``confidence`` outside (0, 1).
    """
    if not isinstance(params, HeatmapParams):
        raise InvalidParameterError("params", params, "a HeatmapParams")
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise InvalidParameterError("confidence", confidence, "a number in (0, 1)")
    n = None if n_users is None else check_int(n_users, "n_users", minimum=1)
    delta = params.grid.resolution
    details: dict = {"n_users": n, "resolution": delta, "method": params.method}
    if params.method == "pyramid":
        terms = _noise_terms(params, float(confidence))
        factor = 2.0 * delta  # n EMD <= 2 Delta N (docs/errors/heatmaps.md, "Result")
        details.update(terms, factor=factor)
        covers = ("the Laplace noise of Algorithm 1 and RECONSTRUCT (paper 002, Lemma 3.5, "
                  "the LP's optimality and its exact fit of level q), the normalisation, "
                  "the unmeasured levels < q")
        not_covered = ("the data-dependent part: the mass of s outside its best w-sparse "
                       "(tree-sparse) approximation, and true mass that the noisy top-w "
                       "selection drops (none when the occupied cells are at most w per "
                       "level and each holds more users than the noise on the kept cells)")
    elif params.method == "laplace":
        # every cell released, negatives clipped (only closer to s >= 0): ||z||_1 <= ||nu||_1
        scale = (1.0 + _SLACK) * (1.0 + 1e-12) / params.epsilon
        cells = float(delta * delta)
        noise = noise_quantile(np.array([scale]), np.array([cells]), np.array([cells]),
                               float(confidence)) + 2 * _SLACK * 4.0 ** -params.grid.levels
        factor = 2.0 * (delta - 1)
        details.update(noise=noise, factor=factor)
        terms = {"noise": noise}
        covers = "the Laplace noise on every cell and the normalisation"
        not_covered = ""
    else:
        return ErrorStatement(
            metric="EMD(release, true distribution) x n_users", bound=math.inf,
            confidence=1.0, units="cells x users", covers="nothing",
            not_covered=("the threshold baseline keeps the top t% of cells by noisy value: "
                         "how much true mass it drops depends on the data"),
            derivation=_DERIVATION, details=details)
    per_user = factor * terms["noise"]
    per_unit = _units(params)
    if n is None:
        bound, metric, units = per_user, "EMD(release, true distribution) x n_users", \
            "cells x users"
    else:
        bound = min(per_user / n, 2.0 * (delta - 1))  # the grid's L1 diameter caps it
        metric, units = "EMD(release, true distribution)", "cells"
    details.update(per_unit)
    details["bound_in_bounds_units"] = bound * per_unit["bounds_units_per_cell"]
    if "metres_per_cell_if_lonlat" in per_unit:
        details["bound_km_if_lonlat"] = bound * per_unit["metres_per_cell_if_lonlat"] / 1e3
    return ErrorStatement(metric=metric, bound=float(bound), confidence=float(confidence),
                          units=units, covers=covers, not_covered=not_covered,
                          derivation=_DERIVATION, details=details)


def dropped_term(levels: list, kept: list, start: int, resolution: int
                 ) -> tuple[float, list[float]]:
    r"""``(D, drops)``: :math:`D = 2\Delta \sum_{j > q} 2^{-j} \lVert P_j s \text{ off }
    S_j \rVert_1` and each level's true mass outside its kept cells ``S_j``
    (:func:`uncovered_term`; the benchmark's bracket of the best selection).

    Parameters
    ----------
    levels : list of arrays
        The exact pyramid sums from level ``start`` (``pyramid(s, start_level=q)``).
    kept : sequence of int arrays
        Per level, the flat indices of the kept cells.
    start : int
        ``q``.
    resolution : int
        ``Delta``.
    """
    drops = [float(lv.sum() - lv.ravel()[np.asarray(k, dtype=np.int64)].sum())
             for lv, k in zip(levels, kept, strict=True)]
    d = 2.0 * resolution * math.fsum(math.ldexp(x, -(start + j))
                                     for j, x in enumerate(drops) if j > 0)
    return d, drops


def uncovered_term(sums: np.ndarray, kept: list, start: int) -> dict:
    r"""The data-dependent term the statement does not cover, measured on the exact data:
    **curator-only** (not private, never publish).

    ``docs/errors/heatmaps.md`` proves :math:`n\,\mathrm{EMD} \le R + D` for any data,
    with :math:`R \le 2\Delta N` the noise part (what :func:`heatmap_error` bounds) and

    .. math:: D = 2\Delta \sum_{j > q} 2^{-j} \lVert P_j s \text{ off } S_j \rVert_1,

    the true mass of each level outside the cells RECONSTRUCT kept (:math:`S_j`), so
    ``EMD <= bound + D / n`` holds at the statement's confidence. On Gowalla NYC
    (Delta = 128) ``D / n`` was 8.1-8.7 cells, above the noise bound from epsilon 1
    (``benchmarks/bench_error_heatmap.py``).

    Parameters
    ----------
    sums : (Delta, Delta) array
        The exact per-cell sums of the users' distributions (total mass ``n``).
    kept : sequence of int arrays
        Per level from ``start``, the flat indices of the kept cells (the
        reconstruction's ``kept``).
    start : int
        The start level ``q``.

    Returns
    -------
    dict
        ``dropped_term_over_n_cells`` (``D / n``), the dropped mass share per level, and
        the rule.
    """
    from privot.heatmaps.pyramid import pyramid

    s = np.asarray(sums, dtype=np.float64)
    n = float(s.sum())
    d, drops = dropped_term(pyramid(s, start_level=start), kept, start, s.shape[0])
    return {"dropped_term_over_n_cells": d / n if n > 0 else 0.0,
            "dropped_mass_share_per_level": {str(start + j): (x / n if n > 0 else 0.0)
                                             for j, x in enumerate(drops)},
            "rule": "EMD(release, true) <= error.bound + dropped_term_over_n_cells (cells) "
                    "at the statement's confidence; D = 2 Delta sum_{j>q} 2^-j |P_j s off "
                    "S_j|_1, the true mass the kept cells miss (docs/errors/heatmaps.md). "
                    "Measured on the exact data: NOT private, never publish"}
