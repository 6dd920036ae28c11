r"""The result of a population sample: :class:`PopulationSample` (paper 003 at scale).

:func:`~privot.sampling.population.sample_population` returns one; it holds the
curator-side reports (one output index per user of the public user list) and the public
parameters, says what may be published and writes the files of ``privot sample``. The
server's estimate from the released histogram is :meth:`PopulationSample.estimate`
(:mod:`privot.sampling.estimators`).

Publishable output
------------------
What the server sees, and what :meth:`PopulationSample.release_dict` and
:meth:`PopulationSample.counts_per_output` (equivalently :meth:`PopulationSample.released`,
the sorted multiset) carry, is the **multiset of released indices, without user ids**,
plus the public parameters (mechanism, epsilon, grid of ``k`` input and ``k_v`` output
points) and the number of reports. Each report is eps-LDP on its own, so attaching ids
would not break the guarantee; but ids are curator data, and no estimator here needs
them. :attr:`PopulationSample.indices` (aligned with :attr:`PopulationSample.user_ids`),
the counts read and dropped, the snapping shift and the timings are **curator-only**
(:meth:`PopulationSample.curator_report`).

Files and figures
-----------------
:meth:`PopulationSample.save` writes what ``privot sample`` writes (the CLI calls it:
one code path): publishable :data:`PUBLISHABLE_FILES` (``samples.csv``: the released
cells' centres, sorted, no user ids; ``base_measure.csv``; ``estimate.csv``;
``estimate_intervals.csv``, the estimate's per-cell bootstrap intervals, and
``estimate_uncertainty.json``, its :math:`W_1` radius
(:meth:`PopulationSample.estimate_intervals`, up to :data:`INTERVALS_MAX_CELLS` cells);
``sample.png``; ``release.json``, whose
``estimate`` field names the estimator and its public stopping rule: nothing in
``release.json`` depends on the samples) and, unless ``curator=False``, the curator-only
:data:`CURATOR_FILES` (``curator-samples.csv``: the samples with user ids;
``curator-report.json``). :meth:`PopulationSample.plot` draws ``sample.png``
(:mod:`privot.sampling.plot`). Both need the public grid the counts were made on
(recorded from ``counts.grid``) with one output point per cell.

Privacy
-------
No release here: the object carries a release made by
:func:`~privot.sampling.population.sample_population` (pure eps-LDP per user, one report
each, relation local; ``docs/privacy/sampling.md``). Its publishable methods read the
released multiset and public parameters only; the estimate is post-processing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._jsonable import write_json
from privot._optional import figure_possible
from privot._result import (
    CURATOR_PREFIX,
    CURATOR_REPORT,
    ReleaseResult,
    write_curator_report,
    write_release,
)
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyCost
from privot.sampling.baselines import krr_estimate
from privot.sampling.cost import cost_matrix
from privot.sampling.estimators import (
    ESTIMATORS,
    EstimateIntervals,
    estimate_direct,
    estimate_intervals,
    estimate_linear,
    estimate_linear_stopped,
    stopping_iterations,
)

__all__ = [
    "CURATOR_FILES",
    "DEFAULT_INPUT",
    "INTERVALS_MAX_CELLS",
    "RADIUS_MAX_CELLS",
    "PUBLISHABLE_FILES",
    "PopulationDiagnostics",
    "PopulationSample",
]

#: The public input of a listed user with no usable point inside the bounds
#: (:mod:`privot.sampling.population`, *Who reports*).
DEFAULT_INPUT = "uniform over the k input points"
#: Every publishable file :meth:`PopulationSample.save` writes (``sample.png`` with
#: ``png=True``).
PUBLISHABLE_FILES = ("samples.csv", "base_measure.csv", "estimate.csv",
                     "estimate_intervals.csv", "estimate_uncertainty.json", "sample.png",
                     "release.json")
#: :meth:`PopulationSample.save` writes ``estimate_intervals.csv`` (the estimate's
#: bootstrap intervals) up to this many cells (the bootstrap runs ``n_boot`` fits).
INTERVALS_MAX_CELLS = 1024
#: :meth:`PopulationSample.estimate_intervals` computes the :math:`W_1` radius (``n_boot``
#: exact transports) up to this many cells (about 4 s at 256 cells, a minute at 1024).
RADIUS_MAX_CELLS = 400
#: The curator-only files (user ids, exact counts, timings: never publish).
CURATOR_FILES = (CURATOR_PREFIX + "samples.csv", CURATOR_REPORT)


#: How the per-cell files (``estimate.csv``, ``base_measure.csv``,
#: ``estimate_intervals.csv``, ``samples.csv``) number the cells (``release.json``'s
#: ``grid.cells``).
CELL_ORDER = ("cell = row * resolution + col; row 0 is the southern row (y_min), col 0 "
              "the western column (x_min); x, y: the cell's centre")
#: Values below this are the solvers' round-off (an EM estimate of 1e-107), not
#: information: written as 0.
ROUND_OFF = 1e-12


def write_cell_values(path: Path, name: str, values: np.ndarray, centres: list,
                      resolution: int) -> None:
    """One row per cell, ``cell,x,y,row,col,<name>`` (:data:`CELL_ORDER`), values to 12
    significant digits with ``|v| <`` :data:`ROUND_OFF` written as 0 (post-processing of
    public values)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = np.where(np.abs(v) < ROUND_OFF, 0.0, v)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"cell,x,y,row,col,{name}\n")
        for c, (x, y) in enumerate(centres):
            row, col = divmod(c, resolution)
            fh.write(f"{c},{x!r},{y!r},{row},{col},{v[c]:.12g}\n")


@dataclass(frozen=True)
class PopulationDiagnostics:
    """**Curator-only** (not differentially private; never publish with the release).

    Attributes
    ----------
    n_users : int
        Listed users (the reports).
    n_points, n_outside, n_users_empty : int or None
        From the engine step (rows read, rows dropped, user ids with no row inside);
        None when ``counts`` did not carry them.
    n_users_default : int
        Listed users without a usable point inside the bounds, who reported from the
        public default input :data:`DEFAULT_INPUT`.
    max_shift : float
        Largest L1 distance between a float law and its snapped integer law (direct:
        the users' ``nu``; linear: the channel rows, a public quantity).
    seconds : mapping str -> float
        Wall time per stage (``privatize`` or ``channel``, ``draw``, ``total``).
    """

    n_users: int
    n_points: int | None
    n_outside: int | None
    n_users_empty: int | None
    max_shift: float
    seconds: Mapping[str, float] = field(default_factory=dict)
    n_users_default: int = 0


@dataclass(frozen=True, repr=False)
class PopulationSample(ReleaseResult):
    """One eps-LDP report per user of the user list.

    Attributes
    ----------
    indices : (n_users,) int64 array
        **Curator-side**: the output index of each user, aligned with :attr:`user_ids`.
        What is published is their multiset (:meth:`counts_per_output`).
    user_ids : (n_users,) array
        **Curator-side**: the user list, ``counts.user_ids`` and
        ``counts.empty_user_ids`` (sorted by id), one report each.
    variant : {"direct", "linear"}
    mechanism : mapping
        The mechanism's public description (:meth:`SamplingMechanism.release_dict`).
    epsilon : float
        Per user, pure LDP.
    k, k_v : int
        Input and output points.
    cost : PrivacyCost
    relation : Neighbouring
        ``LOCAL``.
    secure : bool
        False when a seeded generator was used: reproducible, **not fit for publication**.
    bits : int
        Grid exponent of the integer laws (``w / 2**bits``).
    curator_only : PopulationDiagnostics
    grid : Grid or None
        The public grid of the input cells (``counts.grid``), when known.
    base_measure : (k_v,) array or None
        The mechanism's public base measure ``m``.
    channel : (k, k_v) array or None
        Linear variant: the public channel the reports were drawn through (before
        snapping), for the server's estimate (:meth:`estimate`).
    error : ErrorStatement or None
        The error statement, computed from the public parameters before the charge
        (:func:`~privot.sampling.error.sample_error`: the worst-case per-user
        :math:`W_1` between a user's distribution and the law of its report; the
        population estimate's figure in ``error.details["population"]``); None when no
        ground distance was known (a mechanism without a cost and no grid).

    Notes
    -----
    :meth:`release_dict`, :meth:`counts_per_output`, :meth:`released` and
    :meth:`to_dict` are publishable; :attr:`indices` with :attr:`user_ids` and
    :meth:`curator_report` are curator-only. :meth:`save` writes the files of
    ``privot sample``, :meth:`plot` draws ``sample.png``.
    """

    indices: np.ndarray
    user_ids: np.ndarray
    variant: str
    mechanism: Mapping[str, Any]
    epsilon: float
    k: int
    k_v: int
    cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    bits: int
    curator_only: PopulationDiagnostics
    grid: Any = None
    base_measure: np.ndarray | None = None
    channel: np.ndarray | None = None
    error: ErrorStatement | None = None

    @property
    def n_reports(self) -> int:
        """The number of reports: the length of the public user list (one per user,
        with a usable point inside the bounds or not)."""
        return int(self.indices.size)

    def counts_per_output(self) -> np.ndarray:
        """``(k_v,)`` int64: how many users released each output point (publishable)."""
        return np.bincount(self.indices, minlength=self.k_v).astype(np.int64)

    def released(self) -> np.ndarray:
        """The released multiset as a sorted ``(n_users,)`` array, without ids
        (publishable; the same information as :meth:`counts_per_output`)."""
        return np.sort(self.indices)

    def release_dict(self) -> dict[str, Any]:
        """The publishable description, JSON-ready (the histogram is
        :meth:`counts_per_output`): public parameters and the number of reports only."""
        return {"variant": self.variant, "mechanism": dict(self.mechanism),
                "epsilon": self.epsilon, "delta": 0.0,
                "guarantee": "pure epsilon-LDP per user (one report each)",
                "unit": "one user's whole distribution",
                "relation": self.relation.value, "secure": self.secure, "bits": self.bits,
                "k": self.k, "k_v": self.k_v, "n_reports": self.n_reports,
                "reports": "one per user of the user list (public); a user with no usable "
                           "point inside the bounds reports through the same mechanism "
                           "from the public default input",
                "default_input": DEFAULT_INPUT,
                "published": "the multiset of released output indices, without user ids",
                "error": None if self.error is None else self.error.to_dict()}

    def curator_report(self) -> dict[str, Any]:
        """Exact counts, the snapping shift and timings: **not private, never publish**
        (nor :attr:`indices` with :attr:`user_ids`)."""
        cur = self.curator_only
        return {"n_users": cur.n_users, "n_users_default_input": cur.n_users_default,
                "n_points": cur.n_points,
                "n_outside_or_unusable": cur.n_outside, "n_users_empty": cur.n_users_empty,
                "max_shift": cur.max_shift, "seconds": dict(cur.seconds)}

    # -- summary ------------------------------------------------------------------------

    @property
    def mechanism_name(self) -> str:
        """The mechanism's name (``wpm``, ``wpm-entropic``, ``kpm``, ``exp``, ``krr``)."""
        return str(self.mechanism.get("mechanism", "?"))

    def __repr__(self) -> str:
        g = self.grid
        where = (f", grid={g.resolution}x{g.resolution}" if g is not None
                 and hasattr(g, "resolution") else "")
        return (f"PopulationSample({self.mechanism_name} {self.variant}, "
                f"epsilon={self.epsilon:g} LDP, {self.n_reports} reports, k={self.k}, "
                f"k_v={self.k_v}{where}" + ("" if self.secure else ", SEEDED") + ")")

    def grid_dict(self, grid: Any = None) -> dict[str, Any]:
        """The public grid, as ``release.json`` states it (publishable)."""
        g = self._grid(grid)
        return {"bounds": list(g.bounds), "resolution": g.resolution, "aspect": g.aspect,
                "points": "cell centres", "cells": CELL_ORDER}

    def _public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict`'s publishable body: :meth:`release_dict` and the grid when
        known (no arrays; the histogram is :meth:`counts_per_output`)."""
        body: dict[str, Any] = {"capability": "sample", **self.release_dict()}
        if self._has_grid():
            body["grid"] = self.grid_dict()
        return body

    # -- the server's estimate (post-processing) ------------------------------------------

    def estimate(self, estimator: str = "stopped") -> np.ndarray:
        """The server's estimate of the population distribution (cached): what
        :func:`~privot.sampling.estimators.estimate_population` returns, from the
        released histogram and the public parameters recorded here (the linear variant's
        channel and epsilon; k-RR's epsilon). Post-processing: no budget.

        ``estimator`` (linear variant): ``"stopped"`` (default), EM stopped after
        :func:`~privot.sampling.estimators.stopping_iterations` steps, a rule of the
        public number of reports and epsilon; ``"mle"``, EM to convergence (the default
        before issue 26, which overfits few reports; ``docs/sampling_estimate.md``).
        """
        if estimator not in ESTIMATORS:
            raise InvalidParameterError("estimator", estimator, f"one of {ESTIMATORS}")
        cache = self.__dict__.setdefault("_estimates", {})
        key = estimator if self.variant == "linear" else "-"
        cached = cache.get(key)
        if cached is None:
            hist = self.counts_per_output()
            if self.variant == "linear":
                channel = self._channel()
                cached = (estimate_linear(hist, channel) if estimator == "mle" else
                          estimate_linear_stopped(hist, channel, epsilon=self.epsilon))
            elif self.mechanism_name == "krr":
                cached = krr_estimate(hist, epsilon=self.epsilon, project=True)
            else:
                cached = estimate_direct(hist)
            cache[key] = cached
        return cached.copy()

    def _channel(self) -> np.ndarray:
        if self.channel is None:
            raise InvalidParameterError(
                "channel", None, "the public channel of a linear-variant sample "
                "(use estimate_population(sample, mechanism))")
        return np.asarray(self.channel, dtype=np.float64)

    def estimate_intervals(self, *, level: float = 0.9, n_boot: int = 200,
                           grid: Any = None) -> EstimateIntervals:
        """The uncertainty statement of the default :meth:`estimate` (publishable,
        cached for the default arguments): bootstrap intervals per cell
        (:func:`~privot.sampling.estimators.estimate_intervals`; the linear variant: a
        parametric bootstrap through the public channel; otherwise the released
        histogram resampled) and, when the public grid is known and has at most
        :data:`RADIUS_MAX_CELLS` cells, a :math:`W_1` radius in the grid's coordinate
        units (Euclidean between cell centres; else ``w1_radius`` is None). Post-processing:
        no budget; a fixed public seed, so the same reports give the same intervals."""
        default = level == 0.9 and n_boot == 200 and grid is None
        cached = self.__dict__.get("_intervals") if default else None
        if cached is None:
            cost = None
            if self._has_grid(grid) and self.k <= RADIUS_MAX_CELLS:
                pts = self._grid(grid).cell_centre_points()
                cost = cost_matrix(pts, pts)
            hist = self.counts_per_output()
            if self.variant == "linear":
                cached = estimate_intervals(hist, self._channel(), epsilon=self.epsilon,
                                            level=level, n_boot=n_boot, cost=cost)
            else:
                krr = self.mechanism_name == "krr"
                cached = estimate_intervals(hist, epsilon=self.epsilon if krr else None,
                                            estimator="krr" if krr else "histogram",
                                            level=level, n_boot=n_boot, cost=cost)
            if default:
                object.__setattr__(self, "_intervals", cached)
        return cached

    def _save_intervals(self, folder: Path, g: Any, centres: list,
                        recorded: bool) -> list[str]:
        """Write ``estimate_intervals.csv`` (per cell) and ``estimate_uncertainty.json``
        (the :math:`W_1` statement): publishable, from the released reports only."""
        iv = self.estimate_intervals(grid=None if recorded else g)
        with open(folder / "estimate_intervals.csv", "w", encoding="utf-8") as fh:
            fh.write("cell,x,y,estimate,lower,upper\n")
            for c, (x, y) in enumerate(centres):
                fh.write(f"{c},{x!r},{y!r},{iv.estimate[c]:.12g},{iv.lower[c]:.12g},"
                         f"{iv.upper[c]:.12g}\n")
        write_json(folder / "estimate_uncertainty.json",
                   {"about": "the default estimate (the 'estimate' column of "
                             "estimate_intervals.csv; estimate.csv unless another "
                             "estimator was asked for)",
                    **iv.release_dict(), "w1_radius_units": "grid coordinates",
                    "statement": f"W1(population, estimate) <= w1_radius at nominal level "
                                 f"{iv.level:g}; per-cell intervals in "
                                 "estimate_intervals.csv (indicative)"})
        return ["estimate_intervals.csv", "estimate_uncertainty.json"]

    def estimate_dict(self, estimator: str = "stopped") -> dict[str, Any]:
        """What ``release.json``'s ``estimate`` field says of :meth:`estimate`
        (publishable: the estimator, its public rule, the intervals' summary)."""
        if self.variant != "linear":
            return {"estimator": "krr-debiased" if self.mechanism_name == "krr"
                    else "report histogram", "file": "estimate.csv"}
        body: dict[str, Any] = {"file": "estimate.csv", "estimator": estimator}
        if estimator == "mle":
            body["rule"] = "EM to convergence (1000 steps or L1 change <= 1e-9)"
        else:
            body["rule"] = "EM from uniform, stopped after ceil(3 sqrt(n) / eps^1.25) steps"
            body["n_iter"] = stopping_iterations(self.n_reports, self.epsilon)
        return body

    # -- figures and files --------------------------------------------------------------

    def _has_grid(self, grid: Any = None) -> bool:
        g = self.grid if grid is None else grid
        return g is not None and int(getattr(g, "n_cells", -1)) == self.k == self.k_v

    def _grid(self, grid: Any = None) -> Any:
        g = self.grid if grid is None else grid
        if not self._has_grid(g):
            raise InvalidParameterError(
                "grid", g, f"the public Grid the counts were made on, with k = k_v = "
                f"{self.k} cells (one input and output point per cell); this sample "
                f"has k = {self.k}, k_v = {self.k_v}")
        return g

    def _base_measure(self) -> np.ndarray:
        if self.base_measure is None:
            raise InvalidParameterError("base_measure", None,
                                        "the mechanism's public base measure (recorded by "
                                        "sample_population)")
        return np.asarray(self.base_measure, dtype=np.float64)

    def _title(self) -> str:
        return f"{self.mechanism_name} ({self.variant}), epsilon = {self.epsilon:g}"

    def plot(self, ax: Any = None, *, which: str | Sequence[str] = ("base_measure",
                                                                     "samples", "estimate"),
             grid: Any = None, title: str | None = None, estimator: str = "stopped",
             columns: Sequence[str] | None = None, **kwargs: Any) -> Any:
        """Draw the public base measure, the released samples (count per cell) and the
        server's estimate over the grid: the picture ``sample.png``
        (:func:`privot.sampling.plot.plot_population_sample`).

        ``which`` picks panels (``"base_measure"``, ``"samples"``, ``"estimate"``);
        ``ax`` is one Axes per panel (None: a new Figure). ``grid`` overrides the
        recorded one; ``estimator`` picks the linear variant's estimate
        (:meth:`estimate`). ``columns``: the data's two coordinate column names (x, y),
        the axis labels (default ``x (grid coordinates)``, ``y (grid coordinates)``).
        Returns the matplotlib Figure. Post-processing only.
        """
        from privot.sampling.plot import plot_population_sample

        g = self._grid(grid)
        if columns is not None:
            if isinstance(columns, str) or len(columns) != 2:
                raise InvalidParameterError("columns", columns,
                                            "two column names (x, y), the axis labels")
            xname, yname = (str(c) for c in columns)
            kwargs = {"xlabel": xname, "ylabel": yname, **kwargs}
        names = [which] if isinstance(which, str) else list(which)
        arrays: dict[str, Any] = {}
        if "base_measure" in names:
            arrays["base_measure"] = self._base_measure()
        if "samples" in names:
            arrays["counts"] = self.counts_per_output()
        if "estimate" in names:
            arrays["estimate"] = self.estimate(estimator)
        return plot_population_sample(g, ax=ax, which=which,
                                      title=self._title() if title is None else title,
                                      **arrays, **kwargs)

    def save(self, folder: str | Path, *, grid: Any = None,
             release_extra: Mapping[str, Any] | None = None,
             curator: bool | Mapping[str, Any] = True, data_warnings: Sequence[str] = (),
             png: bool = True, title: str | None = None,
             estimator: str = "stopped",
             columns: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Write the files ``privot sample`` writes into ``folder`` (created if needed;
        files of the same names are replaced).

        Parameters
        ----------
        folder : str or Path
        grid : Grid, optional
            The public grid; default the one recorded from ``counts.grid``.
        release_extra : mapping, optional
            Public fields added to ``release.json`` (the CLI adds its engine).
        curator : bool or mapping, default True
            Also write the curator-only files (``curator-samples.csv`` with the user
            ids, ``curator-report.json``); False: the publishable files only. A mapping:
            True, its fields merged into ``curator-report.json`` (``"seconds"`` merged
            with the release's timings).
        data_warnings : sequence of str
            Warnings raised while the data was read (curator-only).
        png : bool, default True
            Draw ``sample.png`` (needs matplotlib, the ``plot`` extra).
        title : str, optional
            Title of ``sample.png`` (default: mechanism, variant, epsilon).
        estimator : {"stopped", "mle"}, default "stopped"
            The linear variant's estimate written to ``estimate.csv``
            (:meth:`estimate`). ``estimate_intervals.csv`` holds the default
            estimate's bootstrap intervals (:meth:`estimate_intervals`), written up to
            :data:`INTERVALS_MAX_CELLS` cells.
        columns : sequence of two str, optional
            The data's coordinate column names (x, y): the axis labels of ``sample.png``
            (``privot sample`` passes ``--columns``); the files are unchanged.

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...], "notes": []}``: the names
            written.
        """
        g = self._grid(grid)
        m = self._base_measure()
        estimate = self.estimate(estimator)
        d = g.resolution
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        centres = g.cell_centre_points().tolist()  # Python floats: repr is exact
        public: list[str] = []
        notes: list[str] = []
        # -- publishable: public parameters and the released multiset only -------------
        with open(folder / "samples.csv", "w", encoding="utf-8") as fh:
            fh.write("x,y,cell\n")
            for c in self.released().tolist():  # sorted: no user order, no ids
                fh.write(f"{centres[c][0]!r},{centres[c][1]!r},{c}\n")
        write_cell_values(folder / "base_measure.csv", "mass", m, centres, d)
        write_cell_values(folder / "estimate.csv", "estimate", estimate, centres, d)
        public += ["samples.csv", "base_measure.csv", "estimate.csv"]
        est_body = self.estimate_dict(estimator)
        if self.k <= INTERVALS_MAX_CELLS:
            public += self._save_intervals(folder, g, centres, grid is None)
            est_body["intervals"] = "estimate_intervals.csv"
            est_body["uncertainty"] = "estimate_uncertainty.json"
        if png and figure_possible("sample.png", notes):
            fig = self.plot(grid=g, title=title, estimator=estimator, columns=columns)
            fig.savefig(folder / "sample.png", dpi=110, bbox_inches="tight")
            public.append("sample.png")
        public.append("release.json")
        write_release(folder, {**self.release_dict(), **dict(release_extra or {}),
                               "grid": self.grid_dict(g), "estimate": est_body}, public)
        # -- curator-only: the samples with their user ids, exact counts, timings ------
        written: list[str] = []
        if curator is not False:
            with open(folder / CURATOR_FILES[0], "w", encoding="utf-8") as fh:
                fh.write("user_id,x,y,cell\n")
                for u, c in zip(self.user_ids.tolist(), self.indices.tolist(), strict=True):
                    fh.write(f"{u},{centres[c][0]!r},{centres[c][1]!r},{c}\n")
            written = list(CURATOR_FILES)
            report = self.curator_report()
            extra = dict(curator) if isinstance(curator, Mapping) else {}
            if "seconds" in extra:
                report["seconds"] = {**report["seconds"], **dict(extra.pop("seconds"))}
            write_curator_report(folder, {**report, **extra,
                                          "data_warnings": list(data_warnings)}, written)
        return {"publishable": sorted(public), "curator": sorted(written), "notes": notes}
