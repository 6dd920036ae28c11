r"""Public entry point of paper 002: :func:`private_heatmap` and its result types.

.. code-block:: text

    points --(aggregate)--> s = sum_u p_u --(Algorithm 1: measure)--> y'   [epsilon-DP]
           --(Algorithm 2: reconstruct)--> s^, a^ = s^/|s^|_1 --(render)--> H   [post-processing]

``method="laplace"`` and ``method="threshold"`` replace the two middle steps by the
paper's baselines (Sec. 4). Derivations: ``docs/privacy/heatmaps.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._progress import progress_bar, show_progress
from privot._result import ReleaseResult
from privot._usable import check_usable, coordinate_column, swapped_axes_hint, usable_rows
from privot._validation import check_epsilon, check_int, check_nonnegative, check_positive
from privot.errors import InvalidDataError, InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.aggregate import CellSums, user_distributions_sum
from privot.heatmaps.baselines import (
    BaselineResult,
    laplace_baseline,
    threshold_baseline,
)
from privot.heatmaps.measure import (
    DEFAULT_GAMMA,
    DEFAULT_W,
    measure,
)
from privot.heatmaps.outputs import check_memory
from privot.heatmaps.reconstruct import (
    FULL_LP_MAX_RESOLUTION,
    LP_FORMS,
    Reconstruction,
    reconstruct,
)
from privot.heatmaps.render import gaussian_heatmap
from privot.privacy.budget import check_spender, ensure_affordable
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender

__all__ = [
    "DEFAULT_SIGMA",
    "METHODS",
    "CuratorDiagnostics",
    "HeatmapDiagnostics",
    "HeatmapRelease",
    "HeatmapResult",
    "private_heatmap",
]

METHODS = ("pyramid", "laplace", "threshold")
#: Default Gaussian filter width, in cells (a display choice; any value is post-processing).
DEFAULT_SIGMA = 2.0
_DEFAULT_COLUMNS = {"user": "user_id", "x": "x", "y": "y"}


@dataclass(frozen=True)
class CuratorDiagnostics:
    """Exact counts from the raw data. **Curator-only: not differentially private; do
    not publish them with the release.**

    Attributes
    ----------
    n_users : int
        Users with at least one point inside the bounds.
    n_points : int
        Points read (inside and outside).
    n_outside : int
        Points dropped (outside the bounds).
    n_users_empty : int
        Users with no point inside the bounds (they contribute nothing).
    """

    n_users: int
    n_points: int
    n_outside: int
    n_users_empty: int


@dataclass(frozen=True, repr=False)
class HeatmapRelease:
    r"""What was released and under which guarantee (publishable).

    Attributes
    ----------
    method : {"pyramid", "laplace", "threshold"}
    epsilon : float
        Total spent (pure DP, delta = 0).
    unit : str
        ``"user"``: all of one user's points.
    relation : Neighbouring
        ``ADD_REMOVE`` (one user added or removed).
    mechanism : str
        ``"laplace"`` (every release here is a Laplace mechanism).
    secure : bool
        False when a seeded generator was used: reproducible, **not fit for publication**.
    level_epsilons : mapping int -> float
        Budget per released level (pyramid: :math:`\varepsilon_i`, ``i = q..ell``;
        baselines: one entry for the leaf level).
    noise_scales : mapping int -> float
        Laplace scale per released level (unscaled units, incl. the rounding slack).
    values : tuple of arrays
        The released noisy values: pyramid :math:`\mathbf y'_q,\dots,\mathbf y'_\ell`;
        baselines the noisy cells :math:`\mathbf s + \nu`.
    start_level : int or None
        :math:`q` (pyramid only).
    w : int or None
    gamma : float or None
    threshold : float or None
        Percentage of cells kept (threshold baseline only).
    """

    method: str
    epsilon: float
    unit: str
    relation: Neighbouring
    mechanism: str
    secure: bool
    level_epsilons: Mapping[int, float]
    noise_scales: Mapping[int, float]
    values: tuple[np.ndarray, ...]
    start_level: int | None = None
    w: int | None = None
    gamma: float | None = None
    threshold: float | None = None

    def __repr__(self) -> str:
        levels = sorted(self.level_epsilons)
        span = (f"level {levels[0]}" if len(levels) == 1
                else f"levels {levels[0]}..{levels[-1]}")
        return (f"HeatmapRelease({self.method}, epsilon={self.epsilon:g}, {span}, "
                f"unit={self.unit}, {self.relation.value}"
                + ("" if self.secure else ", SEEDED") + ")")


@dataclass(frozen=True)
class HeatmapDiagnostics:
    """Diagnostics. ``curator_only`` holds exact data counts (not private); the rest is
    computed from the release only.

    Attributes
    ----------
    curator_only : CuratorDiagnostics
        **Not differentially private.**
    fallback_uniform : bool
        The post-processed estimate had zero mass and the distribution is uniform over
        the grid's covered cells.
    n_cells_positive : int
        Cells with positive mass in the estimate.
    lp_objective : float or None
        RECONSTRUCT's LP optimum (pyramid only).
    n_lp_variables : int or None
    reconstruction : Reconstruction or None
        Full RECONSTRUCT output (pyramid only).
    baseline : BaselineResult or None
        Full baseline output (baselines only).
    """

    curator_only: CuratorDiagnostics
    fallback_uniform: bool
    n_cells_positive: int
    lp_objective: float | None = None
    n_lp_variables: int | None = None
    reconstruction: Reconstruction | None = None
    baseline: BaselineResult | None = None


@dataclass(frozen=True, repr=False)
class HeatmapResult(ReleaseResult):
    r"""A private heatmap.

    Attributes
    ----------
    distribution : (Delta, Delta) float array
        :math:`\hat{\mathbf a}`, the private estimate of the users' average distribution
        (sums to 1).
    heatmap : (Delta, Delta) float array
        :math:`H^\sigma_{\hat{\mathbf a}}` (Sec. 2.3), sums to 1.
    estimate : (Delta, Delta) float array
        :math:`\hat{\mathbf s}` before normalisation (its sum estimates the user count).
    epsilon : float
        Spent.
    method : str
    sigma : float
        Filter width in cells.
    grid : Grid
    release : HeatmapRelease
    diagnostics : HeatmapDiagnostics
    seconds : mapping str -> float
        **Curator-only** (grows with the data). Wall time per stage: ``aggregate``, then
        ``measure`` and ``reconstruct`` (pyramid) or ``noise`` (baselines, noise and
        post-processing), ``render``, ``total``.

    Notes
    -----
    :meth:`release_dict` and :meth:`to_dict` are publishable; :meth:`curator_report`
    and ``diagnostics.curator_only`` hold exact counts and timings, never to be
    published. :meth:`save` writes the files of ``privot heatmap``, :meth:`plot` draws
    ``heatmap.png``. Arrays are ``[row, col]`` with row 0 at the southern edge ``y_min``
    (:mod:`privot.heatmaps.outputs`).
    """

    distribution: np.ndarray
    heatmap: np.ndarray
    estimate: np.ndarray
    epsilon: float
    method: str
    sigma: float
    grid: Grid
    release: HeatmapRelease
    diagnostics: HeatmapDiagnostics
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def secure(self) -> bool:
        """False when a seeded generator was used (not fit for publication)."""
        return self.release.secure

    @property
    def cost(self) -> PrivacyCost:
        """What the release spent: ``(epsilon, 0)``, pure DP."""
        return PrivacyCost(float(self.epsilon), 0.0)

    @property
    def relation(self) -> Neighbouring:
        """``ADD_REMOVE``: one user (all their points) added or removed."""
        return self.release.relation

    def release_dict(self) -> dict[str, Any]:
        """The publishable description of the release, JSON-ready (no arrays).

        A function of the public parameters and the noisy release only: no counts, no
        timings (DESIGN.md, "Publishable output").
        """
        rel = self.release
        return {"method": rel.method, "epsilon": rel.epsilon, "delta": 0.0,
                "unit": rel.unit, "relation": rel.relation.value, "secure": rel.secure,
                "mechanism": rel.mechanism,
                "level_epsilons": {str(k): v for k, v in rel.level_epsilons.items()},
                "noise_scales": {str(k): v for k, v in rel.noise_scales.items()},
                "grid": {"bounds": list(self.grid.bounds),
                         "resolution": self.grid.resolution, "aspect": self.grid.aspect},
                "start_level": rel.start_level, "w": rel.w, "gamma": rel.gamma,
                "sigma": self.sigma, "threshold": rel.threshold}

    def curator_report(self) -> dict[str, Any]:
        """Exact counts and timings: **not private, never publish**."""
        cur = self.diagnostics.curator_only
        return {"n_users": cur.n_users, "n_points": cur.n_points,
                "n_outside_or_unusable": cur.n_outside,
                "n_users_empty": cur.n_users_empty, "seconds": dict(self.seconds)}

    def summary(self) -> dict[str, Any]:
        """Summary numbers of the release (publishable: functions of the release)."""
        dist = self.distribution
        diag = self.diagnostics
        return {"mass": float(dist.sum()), "max_cell": float(dist.max()),
                "n_cells_positive": int(np.count_nonzero(dist > 0)),
                "fallback_uniform": bool(diag.fallback_uniform),
                "lp_objective": diag.lp_objective}

    def _public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict`'s publishable body: :meth:`release_dict` and :meth:`summary`
        (no arrays)."""
        return {"capability": "heatmap", **self.release_dict(), "summary": self.summary()}

    def __repr__(self) -> str:
        g = self.grid
        b = ", ".join(f"{v:g}" for v in g.bounds)
        return (f"HeatmapResult({self.method}, epsilon={self.epsilon:g}, grid={g.resolution}"
                f"x{g.resolution} over ({b}), sigma={self.sigma:g}, "
                f"mass={float(self.distribution.sum()):.4g}, "
                f"cells>0={int(np.count_nonzero(self.distribution > 0))}"
                + ("" if self.secure else ", SEEDED") + ")")

    def plot(self, ax: Any = None, *, scale: str | None = None, which: str = "heatmap",
             title: str | None = None, **kwargs: Any) -> Any:
        """Draw the filtered heatmap (``which="heatmap"``, the picture ``heatmap.png``)
        or the unsmoothed ``"distribution"``; see :func:`privot.heatmaps.plot.plot_heatmap`.

        ``scale`` in ``{"linear", "sqrt", "log"}`` (default ``"sqrt"``,
        :data:`privot.heatmaps.plot.DEFAULT_SCALE`). Returns the matplotlib Figure.
        """
        from privot.heatmaps.plot import DEFAULT_SCALE, plot_heatmap

        if which not in ("heatmap", "distribution"):
            raise InvalidParameterError("which", which, "'heatmap' or 'distribution'")
        scale = DEFAULT_SCALE if scale is None else scale
        values = self.heatmap if which == "heatmap" else self.distribution
        if title is None:
            title = self._title(which, scale)
        return plot_heatmap(values, self.grid, ax=ax, scale=scale, title=title, **kwargs)

    def _title(self, which: str, scale: str) -> str:
        name = ("pyramid (paper 002)" if self.method == "pyramid"
                else f"{self.method} baseline")
        first = (f"{name}, epsilon = {self.epsilon:g}, Delta = {self.grid.resolution}"
                 + ("" if self.secure else " (seeded)"))
        if which == "heatmap" and self.sigma > 0:
            smooth = (f"Gaussian filter sigma = {self.sigma:g} cells (Sec. 2.3), "
                      f"{scale} scale")
        else:
            smooth = f"unsmoothed release, {scale} scale"
        if self.method == "pyramid":
            blocks = "squares: mass RECONSTRUCT spreads evenly over left-out blocks"
        else:
            blocks = "per-cell noisy release"
        return f"{first}\n{smooth}\n{blocks}"

    def save(self, folder: Any, *, scale: str | None = None, crs: str | None = "auto",
             **kwargs: Any) -> dict[str, list[str]]:
        """Write the files ``privot heatmap`` writes into ``folder``
        (:func:`privot.heatmaps.outputs.save_heatmap`): the publishable release files
        and ``curator-report.json`` (curator-only).

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...], "notes": [...]}``.
        """
        from privot.heatmaps.outputs import save_heatmap

        return save_heatmap(self, folder, scale=scale, crs=crs, **kwargs)


def _column(data: Any, name: str, value: object) -> np.ndarray:
    col = _DEFAULT_COLUMNS[name] if value is None else value
    if isinstance(col, np.ndarray) or (not isinstance(col, str) and hasattr(col, "__len__")):
        raise InvalidParameterError(name, type(col).__name__, "a column name of data (pass "
                                    "data=None to give arrays)")
    columns = list(data.columns) if hasattr(data, "columns") else list(data.keys())
    if col not in columns:
        raise InvalidParameterError(name, col, f"a column of data; its columns are {columns}")
    v = data[col]
    # missing values stay missing: user_distributions_sum drops such rows (the one rule)
    return v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v)


def _points(data: Any, user: object, x: object, y: object, grid: Grid
            ) -> tuple[CellSums, Callable[[], str] | None]:
    """CellSums from a CellSums, a DataFrame / mapping of columns, or arrays, and a
    function giving the curator's hint when most rows are dropped."""
    if isinstance(data, CellSums):
        for name, v in (("user", user), ("x", x), ("y", y)):
            if v is not None:
                raise InvalidParameterError(name, v, "None when data is a CellSums")
        if data.resolution != grid.resolution:
            raise InvalidDataError(f"data is a CellSums of resolution {data.resolution} but "
                                   f"grid has resolution {grid.resolution}")
        return data, None
    if data is None:
        cols = {}
        for name, v in (("user", user), ("x", x), ("y", y)):
            if v is None or isinstance(v, str):
                raise InvalidParameterError(
                    name, v, "an array when data is None (or pass a DataFrame or a "
                    "CellSums as data)")
            cols[name] = np.asarray(v)
    elif hasattr(data, "columns") or isinstance(data, Mapping):
        cols = {name: _column(data, name, v) for name, v in (("user", user), ("x", x),
                                                              ("y", y))}
    else:
        raise InvalidParameterError("data", type(data).__name__,
                                    "a pandas DataFrame, a mapping of columns, a CellSums "
                                    "or None (with user=, x=, y= arrays)")
    for name, arr in cols.items():
        if arr.ndim != 1:
            raise InvalidDataError(f"{name} must be 1-D, got shape {arr.shape}")
    n = cols["user"].shape[0]
    if n == 0:
        raise InvalidDataError("the input has no points (0 rows); at least one is needed")
    for name in ("x", "y"):
        if cols[name].shape[0] != n:
            raise InvalidDataError(f"{name} has {cols[name].shape[0]} values but user has {n}")
    xy = np.column_stack([coordinate_column(cols["x"], "x"), coordinate_column(cols["y"], "y")])
    cells = user_distributions_sum(cols["user"], xy[:, 0], xy[:, 1], grid)

    def hint() -> str:
        return swapped_axes_hint(xy[usable_rows(xy)], grid.contains)
    return cells, hint


def _scales(releases: Any, first_level: int) -> dict[int, float]:
    return {first_level + j: float(np.max(r.params["scale"])) for j, r in enumerate(releases)}


def private_heatmap(data: Any = None, *, grid: Grid, epsilon: float, user: Any = None,
                    x: Any = None, y: Any = None, w: int = DEFAULT_W,
                    gamma: float = DEFAULT_GAMMA, sigma: float = DEFAULT_SIGMA,
                    method: str = "pyramid", threshold: float = 1.0, lp: str = "compact",
                    accountant: Spender | None = None,
                    rng: np.random.Generator | int | None = None,
                    max_memory: int | str | None = None,
                    progress: bool | None = None) -> HeatmapResult:
    r"""A user-level :math:`\varepsilon`-DP heatmap (paper 002) or one of its baselines.

    Parameters
    ----------
    data : DataFrame, mapping of columns, CellSums, or None
        * a pandas DataFrame (or a dict of arrays): one row per point; ``user``, ``x``,
          ``y`` name its columns (defaults ``"user_id"``, ``"x"``, ``"y"``);
        * None: ``user``, ``x``, ``y`` are the ``(n,)`` arrays themselves;
        * a :class:`~privot.heatmaps.aggregate.CellSums` already aggregated on ``grid``
          (e.g. by an engine).
    grid : Grid
        Public grid (bounds and resolution :math:`\Delta`); never derived from the data.
    epsilon : float
        Total budget > 0.
    user, x, y : str or array, optional
        Column names (with a DataFrame) or arrays (with ``data=None``). ``x`` is the
        longitude for geographic data.
    w : int, default 20
        Cells kept per level (pyramid); sets :math:`q = \lfloor\log_2\sqrt w\rfloor`.
    gamma : float, default 1/sqrt(2)
        Decay of the per-level budgets (pyramid).
    sigma : float, default 2.0
        Gaussian filter width in cells (>= 0) for ``heatmap``.
    method : {"pyramid", "laplace", "threshold"}
        Algorithms 1+2 of the paper, or the baselines of its Sec. 4.
    threshold : float, default 1.0
        ``method="threshold"``: keep the top ``threshold`` percent of cells, in (0, 100].
    lp : {"compact", "full"}
        RECONSTRUCT's LP (``"full"`` only for ``Delta <= 64``).
    accountant : PrivacyAccountant, optional
        Charged what the release spends (pyramid: one entry per measured level); a
        budget too small is refused before any noise is drawn.
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS CSPRNG. A seeded generator marks the release ``secure=False``.
    max_memory : int or str, optional
        Memory limit (bytes, or ``"16GB"``) for the dense ``Delta x Delta`` arrays; a
        resolution needing more is refused before the data is read
        (:func:`privot.heatmaps.outputs.check_memory`). None: half the machine's RAM.
    progress : bool, optional
        A bar of the release's steps on stderr (noise, reconstruction for the pyramid,
        filter): None (default) only when stderr is a terminal, True/False force it
        (privot's one rule, :mod:`privot._progress`). It shows nothing of the data.

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
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"one of {METHODS}")
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    eps = check_epsilon(epsilon)
    w = check_int(w, "w", minimum=1)
    gamma = check_positive(gamma, "gamma")
    sig = check_nonnegative(sigma, "sigma")
    top = check_positive(threshold, "threshold")
    if top > 100:
        raise InvalidParameterError("threshold", threshold, "a percentage in (0, 100]")
    if lp not in LP_FORMS:
        raise InvalidParameterError("lp", lp, f"one of {LP_FORMS}")
    if method == "pyramid" and lp == "full" and grid.resolution > FULL_LP_MAX_RESOLUTION:
        raise InvalidParameterError("lp", lp, f"'compact' for resolution {grid.resolution}; "
                                    f"the full LP is only allowed up to "
                                    f"{FULL_LP_MAX_RESOLUTION}")
    check_memory(grid.resolution, max_memory=max_memory)  # before the data is read
    show = show_progress(progress)
    check_spender(accountant)
    ensure_affordable(accountant, eps, f"private_heatmap(method={method!r})")

    cells, hint = _points(data, user, x, y, grid)
    # a curator decision on the exact counts, before anything is charged
    check_usable(n_rows=cells.n_points, n_unusable=0, n_outside=cells.n_outside,
                 what="the input", outside="outside the bounds or unusable (dropped)",
                 hint=hint)
    t1 = time.perf_counter()
    seconds = {"aggregate": t1 - t0}
    covered = grid.covered_mask()
    curator = CuratorDiagnostics(n_users=cells.n_users, n_points=cells.n_points,
                                 n_outside=cells.n_outside, n_users_empty=cells.n_users_empty)
    bar = progress_bar(show, total=3 if method == "pyramid" else 2,
                       desc=f"private heatmap ({method})", unit="step")
    if method == "pyramid":
        meas = measure(cells, epsilon=eps, w=w, gamma=gamma, accountant=accountant, rng=rng)
        bar.update()
        t2 = time.perf_counter()
        rec = reconstruct(meas, lp=lp, covered=covered)
        bar.update()
        t3 = time.perf_counter()
        seconds.update(measure=t2 - t1, reconstruct=t3 - t2)
        release = HeatmapRelease(
            method=method, epsilon=meas.epsilon, unit="user", relation=Neighbouring.ADD_REMOVE,
            mechanism="laplace", secure=meas.secure, level_epsilons=meas.level_epsilons,
            noise_scales=_scales(meas.releases, meas.start_level), values=meas.values,
            start_level=meas.start_level, w=w, gamma=gamma)
        distribution, estimate = rec.distribution, rec.estimate
        diagnostics = HeatmapDiagnostics(
            curator_only=curator, fallback_uniform=rec.fallback_uniform,
            n_cells_positive=int(np.count_nonzero(estimate > 0)),
            lp_objective=rec.objective, n_lp_variables=rec.n_variables, reconstruction=rec)
    else:
        if method == "laplace":
            base = laplace_baseline(cells, epsilon=eps, accountant=accountant, rng=rng,
                                    covered=covered)
        else:
            base = threshold_baseline(cells, epsilon=eps, top_percent=top,
                                      accountant=accountant, rng=rng, covered=covered)
        bar.update()
        t3 = time.perf_counter()
        seconds.update(noise=t3 - t1)
        ell = grid.levels
        release = HeatmapRelease(
            method=method, epsilon=base.epsilon, unit="user", relation=Neighbouring.ADD_REMOVE,
            mechanism="laplace", secure=base.secure, level_epsilons={ell: base.epsilon},
            noise_scales=_scales([base.release], ell), values=(base.noisy,),
            threshold=top if method == "threshold" else None)
        distribution, estimate = base.distribution, base.estimate
        diagnostics = HeatmapDiagnostics(curator_only=curator,
                                         fallback_uniform=base.fallback_uniform,
                                         n_cells_positive=base.n_kept, baseline=base)
    heat = gaussian_heatmap(distribution, sigma=sig)
    bar.update()
    bar.close()
    t4 = time.perf_counter()
    seconds.update(render=t4 - t3, total=t4 - t0)
    return HeatmapResult(distribution=distribution, heatmap=heat, estimate=estimate,
                         epsilon=release.epsilon, method=method, sigma=sig, grid=grid,
                         release=release, diagnostics=diagnostics, seconds=seconds)
