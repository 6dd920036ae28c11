r"""The result types of :func:`~privot.heatmaps.private_heatmap`.

:class:`HeatmapResult` (the release and its post-processing), :class:`HeatmapRelease`
(what was released, publishable), :class:`HeatmapDiagnostics` and
:class:`CuratorDiagnostics` (exact counts: curator-only). :mod:`privot.heatmaps.api`
re-exports them.

Privacy
-------
:meth:`HeatmapResult.release_dict` and :meth:`HeatmapResult.to_dict` are functions of
the public parameters and the noisy release (publishable);
:meth:`HeatmapResult.curator_report` and :class:`CuratorDiagnostics` hold exact counts
of the data and timings: **not differentially private, never publish them**.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._result import ReleaseResult
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.baselines import BaselineResult
from privot.heatmaps.outputs import save_heatmap
from privot.heatmaps.plot import DEFAULT_SCALE, plot_heatmap
from privot.heatmaps.reconstruct import Reconstruction
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["CuratorDiagnostics", "HeatmapDiagnostics", "HeatmapRelease", "HeatmapResult"]


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


@dataclass(frozen=True, repr=False)
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
    uncovered_error : dict or None
        The pyramid's data-dependent error term, measured on the exact data
        (:func:`privot.heatmaps.error.uncovered_term`; in ``curator-report.json``).
    """

    curator_only: CuratorDiagnostics
    fallback_uniform: bool
    n_cells_positive: int
    lp_objective: float | None = None
    n_lp_variables: int | None = None
    reconstruction: Reconstruction | None = None
    baseline: BaselineResult | None = None
    uncovered_error: dict | None = None

    def __repr__(self) -> str:
        # one line: the full reconstruction / baseline (arrays) only by name
        lp = "" if self.lp_objective is None else f", lp_objective={self.lp_objective:.6g}"
        part = ("reconstruction" if self.reconstruction is not None
                else "baseline" if self.baseline is not None else "none")
        return (f"HeatmapDiagnostics(cells>0={self.n_cells_positive}, "
                f"fallback_uniform={self.fallback_uniform}{lp}, detail={part}, "
                "curator_only=<exact counts, not private>)")


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
    error : ErrorStatement or None
        The error stated from the public parameters before the release
        (:func:`~privot.heatmaps.error.heatmap_error`; ``docs/errors/heatmaps.md``).
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
    error: ErrorStatement | None = None

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
                "sigma": self.sigma, "threshold": rel.threshold,
                "error": None if self.error is None else self.error.to_dict()}

    def curator_report(self) -> dict[str, Any]:
        """Exact counts and timings: **not private, never publish**."""
        cur = self.diagnostics.curator_only
        report = {"n_users": cur.n_users, "n_points": cur.n_points,
                  "n_outside_or_unusable": cur.n_outside,
                  "n_users_empty": cur.n_users_empty, "seconds": dict(self.seconds)}
        if self.diagnostics.uncovered_error is not None:
            report["error_not_covered_measured"] = dict(self.diagnostics.uncovered_error)
        return report

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
             tessellation: Any = None, tessellation_id: str | None = None,
             **kwargs: Any) -> dict[str, list[str]]:
        """Write the files ``privot heatmap`` writes into ``folder``
        (:func:`privot.heatmaps.outputs.save_heatmap`): the publishable release files
        and ``curator-report.json`` (curator-only). With a public ``tessellation`` (a
        GeoJSON/GeoParquet file or a :class:`~privot.heatmaps.tessellation.Tessellation`;
        ``tessellation_id``: its id property) also ``tiles.csv`` and ``tiles.geojson``.

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...], "notes": [...]}``.
        """
        return save_heatmap(self, folder, scale=scale, crs=crs, tessellation=tessellation,
                            tessellation_id=tessellation_id, **kwargs)
