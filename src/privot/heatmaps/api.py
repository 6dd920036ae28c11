r"""Public entry point of paper 002: :func:`private_heatmap`.

.. code-block:: text

    points --(aggregate)--> s = sum_u p_u --(Algorithm 1: measure)--> y'   [epsilon-DP]
           --(Algorithm 2: reconstruct)--> s^, a^ = s^/|s^|_1 --(render)--> H   [post-processing]

``method="laplace"`` and ``method="threshold"`` replace the two middle steps by the
paper's baselines (Sec. 4). The public choices are a
:class:`~privot.heatmaps.params.HeatmapParams`; the input is read by
:mod:`~privot.heatmaps.points`; the result types live in
:mod:`~privot.heatmaps.result` (re-exported here). Derivations:
``docs/privacy/heatmaps.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from privot._params import build_params
from privot._progress import progress_bar, show_progress
from privot._usable import check_usable, refuse_swapped_axes
from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.aggregate import CellSums
from privot.heatmaps.baselines import laplace_baseline, threshold_baseline
from privot.heatmaps.engine_step import aggregate_user_cells
from privot.heatmaps.error import heatmap_error, uncovered_term
from privot.heatmaps.measure import measure
from privot.heatmaps.memory import check_memory
from privot.heatmaps.params import DEFAULT_SIGMA, METHODS, HeatmapParams
from privot.heatmaps.points import (
    DEFAULT_USER_COLUMN,
    DEFAULT_X_COLUMN,
    DEFAULT_Y_COLUMN,
    cell_sums_from_input,
)
from privot.heatmaps.reconstruct import reconstruct
from privot.heatmaps.render import gaussian_heatmap
from privot.heatmaps.result import (
    CuratorDiagnostics,
    HeatmapDiagnostics,
    HeatmapRelease,
    HeatmapResult,
)
from privot.privacy.budget import check_spender, ensure_affordable
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, Spender

__all__ = [
    "DEFAULT_SIGMA",
    "METHODS",
    "CuratorDiagnostics",
    "HeatmapDiagnostics",
    "HeatmapParams",
    "HeatmapRelease",
    "HeatmapResult",
    "private_heatmap",
]


def _cell_sums(data: Any, user: Any, x: Any, y: Any, grid: Grid, engine: Any
               ) -> tuple[CellSums, Callable[[], str] | None]:
    """The cell sums of the input, in memory or on an engine (the same bits either way,
    :mod:`~privot.heatmaps.engine_step`), and the curator's hint of swapped axes."""
    if engine is None and not isinstance(data, (str, os.PathLike)):
        return cell_sums_from_input(data, user, x, y, grid)
    if data is None or isinstance(data, CellSums):
        raise InvalidParameterError("engine", engine, "None when data is a CellSums or None "
                                    "(an engine reads a file or a DataFrame)")
    # a file (DuckDB unless engine says otherwise) or a DataFrame on the engine given
    cells = aggregate_user_cells(
        data, grid=grid, user_column=DEFAULT_USER_COLUMN if user is None else user,
        x_column=DEFAULT_X_COLUMN if x is None else x,
        y_column=DEFAULT_Y_COLUMN if y is None else y,
        engine="duckdb" if engine is None else engine)
    return cells, None


def _scales(releases: Any, first_level: int) -> dict[int, float]:
    return {first_level + j: float(np.max(r.params["scale"])) for j, r in enumerate(releases)}


def _pyramid_release(cells: CellSums, p: HeatmapParams, covered: np.ndarray,
                     curator: CuratorDiagnostics, accountant: Spender | None,
                     rng: Any, bar: Any, seconds: dict[str, float]) -> tuple[
                         HeatmapRelease, HeatmapDiagnostics, np.ndarray, np.ndarray]:
    """Algorithm 1 (``measure``, epsilon-DP) then Algorithm 2 (``reconstruct``)."""
    t1 = time.perf_counter()
    meas = measure(cells, epsilon=p.epsilon, w=p.w, gamma=p.gamma, accountant=accountant,
                   rng=rng)
    bar.update()
    t2 = time.perf_counter()
    rec = reconstruct(meas, lp=p.lp, covered=covered)
    bar.update()
    seconds.update(measure=t2 - t1, reconstruct=time.perf_counter() - t2)
    release = HeatmapRelease(
        method=p.method, epsilon=meas.epsilon, unit="user", relation=Neighbouring.ADD_REMOVE,
        mechanism="laplace", secure=meas.secure, level_epsilons=meas.level_epsilons,
        noise_scales=_scales(meas.releases, meas.start_level), values=meas.values,
        start_level=meas.start_level, w=p.w, gamma=p.gamma)
    diagnostics = HeatmapDiagnostics(
        curator_only=curator, fallback_uniform=rec.fallback_uniform,
        n_cells_positive=int(np.count_nonzero(rec.estimate > 0)),
        lp_objective=rec.objective, n_lp_variables=rec.n_variables, reconstruction=rec,
        # curator-only: what the public error statement leaves out, on the exact data
        uncovered_error=uncovered_term(cells.sums, list(rec.kept), rec.start_level))
    return release, diagnostics, rec.distribution, rec.estimate


def _baseline_release(cells: CellSums, p: HeatmapParams, covered: np.ndarray,
                      curator: CuratorDiagnostics, accountant: Spender | None,
                      rng: Any, bar: Any, seconds: dict[str, float]) -> tuple[
                          HeatmapRelease, HeatmapDiagnostics, np.ndarray, np.ndarray]:
    """The baselines of Sec. 4: Laplace per cell, optionally thresholded."""
    t1 = time.perf_counter()
    if p.method == "laplace":
        base = laplace_baseline(cells, epsilon=p.epsilon, accountant=accountant, rng=rng,
                                covered=covered)
    else:
        base = threshold_baseline(cells, epsilon=p.epsilon, top_percent=p.threshold,
                                  accountant=accountant, rng=rng, covered=covered)
    bar.update()
    seconds.update(noise=time.perf_counter() - t1)
    ell = p.grid.levels
    release = HeatmapRelease(
        method=p.method, epsilon=base.epsilon, unit="user", relation=Neighbouring.ADD_REMOVE,
        mechanism="laplace", secure=base.secure, level_epsilons={ell: base.epsilon},
        noise_scales=_scales([base.release], ell), values=(base.noisy,),
        threshold=p.threshold if p.method == "threshold" else None)
    diagnostics = HeatmapDiagnostics(curator_only=curator,
                                     fallback_uniform=base.fallback_uniform,
                                     n_cells_positive=base.n_kept, baseline=base)
    return release, diagnostics, base.distribution, base.estimate


def private_heatmap(data: Any = None, params: HeatmapParams | None = None, *,
                    user: Any = None, x: Any = None, y: Any = None,
                    accountant: Spender | None = None,
                    rng: np.random.Generator | int | None = None,
                    progress: bool | None = None,
                    engine: Any = None,
                    max_memory: int | str | None = None,
                    **options: Any) -> HeatmapResult:
    r"""A user-level :math:`\varepsilon`-DP heatmap (paper 002) or one of its baselines.

    Parameters
    ----------
    data : table, mapping of columns, path, CellSums, or None
        * a table (a pandas or polars DataFrame, a polars LazyFrame, a pyarrow Table:
          the same release, bit for bit, from each; :mod:`privot.engines.tables`) or a
          dict of arrays: one row per point; ``user``, ``x``, ``y`` name its columns
          (defaults ``"user_id"``, ``"longitude"``, ``"latitude"``: the columns of
          :func:`~privot.heatmaps.aggregate_user_cells` and ``privot heatmap``;
          :mod:`privot.heatmaps.points`);
        * a path to a CSV/TSV/Parquet file of such rows (read by an engine, DuckDB
          unless ``engine`` names another);
        * None: ``user``, ``x``, ``y`` are the ``(n,)`` arrays themselves;
        * a :class:`~privot.heatmaps.aggregate.CellSums` already aggregated on the grid
          (e.g. by an engine).
    params : HeatmapParams, optional
        The public choices of the release (:class:`~privot.heatmaps.params.HeatmapParams`:
        ``grid``, ``epsilon``, ``method``, ``w``, ``gamma``, ``sigma``, ``threshold``,
        ``lp``). None: built from ``**options``.
    user, x, y : str or array, optional
        Column names (with a table) or arrays (with ``data=None``). ``x`` is the
        longitude for geographic data. A table without the default columns needs them
        named, e.g. ``x="x", y="y"``.
    accountant : PrivacyAccountant, optional
        Charged what the release spends (pyramid: one entry per measured level); a
        budget too small is refused before any noise is drawn.
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS CSPRNG. A seeded generator marks the release ``secure=False``.
    progress : bool, optional
        A bar of the release's steps on stderr (noise, reconstruction for the pyramid,
        filter): None (default) only when stderr is a terminal, True/False force it
        (privot's one rule, :mod:`privot._progress`). It shows nothing of the data.
    engine : {"duckdb", "spark", "local"} or Engine, optional
        Aggregate a file or DataFrame with
        :func:`~privot.heatmaps.aggregate_user_cells` on this engine (the same cell sums,
        bit for bit, as in memory). None: in memory, or DuckDB for a path.
    max_memory : int or str, optional
        Memory limit (bytes, or ``"16GB"``) for the dense ``Delta x Delta`` arrays; a
        resolution needing more is refused before the data is read
        (:func:`privot.heatmaps.memory.check_memory`). None: half the machine's RAM.
    **options
        Fields of :class:`~privot.heatmaps.params.HeatmapParams` (``grid=``,
        ``epsilon=``, ``method=``...): they build ``params``, or replace its fields.

    Returns
    -------
    HeatmapResult

    Raises
    ------
    InvalidParameterError
        A parameter outside its range (``epsilon <= 0``, ``w < 1``, unknown ``method``,
        missing column, a ``resolution`` whose arrays exceed ``max_memory``...), naming
        it.
    InvalidDataError
        Empty input, NaN/inf coordinates, mismatched lengths, missing user ids.
    BudgetExceededError
        The accountant cannot afford ``epsilon`` (nothing is charged, no noise drawn).

    Privacy
    -------
    Unit: one user (all of their points). Relation: add/remove one user. Guarantee:
    pure :math:`\varepsilon`-DP, basic composition of Laplace releases with L1
    sensitivity 1 each (:func:`~privot.heatmaps.measure.measure`,
    :func:`~privot.heatmaps.baselines.laplace_baseline`); reconstruction, thresholding
    and rendering are post-processing. Points outside the grid's bounds are dropped
    (their count is curator-only). ``docs/privacy/heatmaps.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    t0 = time.perf_counter()
    p = build_params(HeatmapParams, params, options)
    grid = p.grid
    check_memory(grid.resolution, max_memory=max_memory)  # before the data is read
    show = show_progress(progress)
    check_spender(accountant)
    ensure_affordable(accountant, p.epsilon, f"private_heatmap(method={p.method!r})")
    error = heatmap_error(p)  # public parameters only, before anything is read or spent

    cells, hint = _cell_sums(data, user, x, y, grid, engine)
    # curator decisions on the exact counts, before anything is charged
    if not isinstance(data, CellSums):
        refuse_swapped_axes(
            n_rows=cells.n_points, n_outside=cells.n_outside, what="the input",
            n_outside_swapped=lambda: _cell_sums(
                data, user, DEFAULT_Y_COLUMN if y is None else y,
                DEFAULT_X_COLUMN if x is None else x, grid, engine)[0].n_outside)
    check_usable(n_rows=cells.n_points, n_unusable=0, n_outside=cells.n_outside,
                 what="the input", outside="outside the bounds or unusable (dropped)",
                 hint=hint)
    seconds = {"aggregate": time.perf_counter() - t0}
    curator = CuratorDiagnostics(n_users=cells.n_users, n_points=cells.n_points,
                                 n_outside=cells.n_outside, n_users_empty=cells.n_users_empty)
    bar = progress_bar(show, total=3 if p.method == "pyramid" else 2,
                       desc=f"private heatmap ({p.method})", unit="step")
    step = _pyramid_release if p.method == "pyramid" else _baseline_release
    release, diagnostics, distribution, estimate = step(
        cells, p, grid.covered_mask(), curator, accountant, rng, bar, seconds)
    t3 = time.perf_counter()
    heat = gaussian_heatmap(distribution, sigma=p.sigma)
    bar.update()
    bar.close()
    t4 = time.perf_counter()
    seconds.update(render=t4 - t3, total=t4 - t0)
    return HeatmapResult(distribution=distribution, heatmap=heat, estimate=estimate,
                         epsilon=release.epsilon, method=p.method, sigma=p.sigma, grid=grid,
                         release=release, diagnostics=diagnostics, seconds=seconds,
                         error=error)
