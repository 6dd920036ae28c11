r"""Population use of the local-DP sampling mechanisms (paper 003 at scale).

A whole table of users goes in, one :math:`\varepsilon`-LDP output index per user comes
out (:func:`sample_population`), and the server estimates the population distribution
from the released samples alone (:func:`estimate_linear`, :func:`estimate_direct`; the
k-RR frequency estimate is :func:`~privot.sampling.baselines.krr_estimate`). The input is
the engine step's :class:`~privot.sampling.engine_step.UserCellCounts`: user ``u`` holds
:math:`\mu_u(c) = k_{u,c} / n_u` over the ``k`` public cells.

Two variants, one guarantee:

* ``"direct"`` -- the paper's use: the device computes :math:`\nu_u = M[\mu_u]` (WPM,
  KPM, ...) and releases one sample of it (:func:`~privot.sampling.device.private_sample`:
  snapped into the certified integer polytope, drawn exactly). The best per-user utility;
  but :math:`\mu \mapsto M[\mu]` is not linear for WPM or KPM, so the histogram of the
  samples estimates :math:`\frac1n\sum_u M[\mu_u]`, not a known transform of the
  population :math:`\bar\mu = \frac1n \sum_u \mu_u` (:func:`estimate_direct`).
* ``"linear"`` -- the device draws one of its **own** cells :math:`i \sim \mu_u` exactly
  (a uniform integer in :math:`[0, n_u)` mapped through the integer cumulative counts),
  then releases a sample of the channel row :math:`M[\delta_i]` (snapped once into the
  certified integer polytope). The user's output law is :math:`\sum_i \mu_u(i) W_i`,
  linear in :math:`\mu_u`, so the server sees samples of :math:`\bar\mu W` with a
  **public** channel ``W`` and inverts it by iterative Bayesian update
  (:func:`estimate_linear`). For k-RR the two variants coincide.

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

Who reports
-----------
The **user list** is every distinct user id of the table: ``counts.user_ids`` (users with
at least one usable point inside the public bounds) and ``counts.empty_user_ids`` (the
others). It is **public**, as in every local-model deployment (the server receives one
report per user), and **every listed user reports exactly once**: a user with no usable
point inside the bounds reports through the same mechanism, at the same epsilon, from
the public default input :data:`DEFAULT_INPUT`, the uniform distribution over the ``k``
input points (direct: a sample of :math:`M[\mathbf 1/k]`; linear: a uniform cell ``i``,
then a sample of :math:`M[\delta_i]`, whose law is :math:`(\mathbf 1/k) W`). So the
number of reports is the length of the user list, a public number, and *whether* a user
has a usable point is protected like the rest of their data: the default's output law
lies in the same polytope :math:`Q_{m,\varepsilon}` as every other input's, so "no
usable point" and "these points" are two inputs of the same eps-LDP randomiser. (Such
users used to be left out while the number of reports was published: one user's only
point moving outside the bounds changed it deterministically, an infinite epsilon under
replace-one; issue 23.) The uniform input is the natural public default: it favours no
cell, it is a function of ``k`` only, and for the linear variant it keeps the reports
samples of :math:`\bar\mu W` for a population in which those users are spread evenly
(the server's EM estimate sees them as such). How many users had no usable point is
curator-only (:meth:`PopulationSample.curator_report`).

What each relation makes public (``docs/privacy/sampling.md``, ``docs/privacy/budget.md``):

* **local** (the guarantee stated here): any change of one user's data, including
  having no usable point, changes one report's law by at most a factor
  :math:`e^\varepsilon`; the user list is public.
* **replace-one of a user** (a ledger of that relation records the release at
  ``epsilon``, a group of 1): the user list is fixed and public; one user's data changes.
* **replace-one of a row**: not covered, a ledger of that relation refuses the release.
  A replaced row may move from one listed user to another (two reports change) but also
  take a user id not in the table, which adds a report (issue 24: it was recorded as a
  group of 2; ``tests/privacy/test_ledger_relations.py``).
* **add/remove of a user**: not protected (adding a user adds a report: participation is
  public in the local model); a ledger of that relation refuses the release.

Privacy
-------
Unit: one user's whole distribution :math:`\mu_u`. Relation: local (any two inputs of one
user, a user without a usable point included;
:attr:`~privot.privacy.types.Neighbouring.LOCAL`). Guarantee: pure
:math:`\varepsilon`-LDP per user, one report per user of the public user list (*Who
reports*); the accountant is charged
``epsilon`` **once** before anything is drawn (every user releases one sample of their
own data: parallel composition over users).

* Direct: :func:`~privot.sampling.device.private_sample` (certified integer bounds
  ``L <= w <= U``, :math:`U_j / L_j \le e^\varepsilon`).
* Linear: every snapped channel row :math:`W_i` lies in the certified box
  ``[L, U] / 2^b``; the user's exact output law :math:`\sum_i \mu_u(i) W_{ij}` is a convex
  combination of them and lies in the same box, so for any two inputs and every output
  ``j`` the ratio of probabilities is at most :math:`U_j / L_j \le e^\varepsilon`. Both
  draws are exact (integer comparisons on uniform bits), so the law *is* that mixture.

The estimators are post-processing of the released histogram and the public channel:
no extra budget. ``docs/privacy/sampling.md``, ``docs/privacy/sampling_device.md``.

Files and figures
-----------------
:meth:`PopulationSample.save` writes what ``privot sample`` writes (the CLI calls it:
one code path): publishable :data:`PUBLISHABLE_FILES` (``samples.csv``: the released
cells' centres, sorted, no user ids; ``base_measure.csv``; ``estimate.csv``;
``sample.png``; ``release.json``) and, unless ``curator=False``, the curator-only
:data:`CURATOR_FILES` (``curator-samples.csv``: the samples with user ids;
``curator-report.json``). :meth:`PopulationSample.plot` draws ``sample.png``
(:mod:`privot.sampling.plot`). Both need the public grid the counts were made on
(recorded from ``counts.grid``) with one output point per cell.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._progress import progress_bar, show_progress
from privot._result import (
    CURATOR_PREFIX,
    CURATOR_REPORT,
    ReleaseResult,
    write_curator_report,
    write_release,
)
from privot._validation import check_finite_array, check_int, check_nonnegative
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.noise import BitSource, check_rng, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender
from privot.sampling.baselines import krr_estimate
from privot.sampling.device import (
    DEFAULT_BITS,
    MAX_BITS,
    draw_index,
    grid_polytope,
    private_sample,
    snap_to_polytope,
)
from privot.sampling.engine_step import dense_distributions
from privot.sampling.mechanism import SamplingMechanism

__all__ = [
    "CURATOR_FILES",
    "DEFAULT_INPUT",
    "PUBLISHABLE_FILES",
    "VARIANTS",
    "PopulationDiagnostics",
    "PopulationSample",
    "estimate_direct",
    "estimate_linear",
    "estimate_population",
    "linear_law",
    "sample_population",
]

#: The two ways a population releases one sample per user.
VARIANTS = ("direct", "linear")
#: The public input of a listed user with no usable point inside the bounds (module
#: docstring, *Who reports*).
DEFAULT_INPUT = "uniform over the k input points"
#: Default batch: users per batch so that a dense ``(batch, max(k, k_v))`` float array
#: stays at about 32 MB.
_BATCH_ELEMENTS = 1 << 22
#: Bound on the total number of points (the uniform sampler's range, int64 sums).
_MAX_SIZE = 1 << 62
#: Tolerance on the rows of a given channel (they are snapped anyway).
_CHANNEL_ATOL = 1e-6
#: Every publishable file :meth:`PopulationSample.save` writes (``sample.png`` with
#: ``png=True``).
PUBLISHABLE_FILES = ("samples.csv", "base_measure.csv", "estimate.csv", "sample.png",
                     "release.json")
#: The curator-only files (user ids, exact counts, timings: never publish).
CURATOR_FILES = (CURATOR_PREFIX + "samples.csv", CURATOR_REPORT)


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
                "published": "the multiset of released output indices, without user ids"}

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
                "points": "cell centres"}

    def _public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict`'s publishable body: :meth:`release_dict` and the grid when
        known (no arrays; the histogram is :meth:`counts_per_output`)."""
        body: dict[str, Any] = {"capability": "sample", **self.release_dict()}
        if self._has_grid():
            body["grid"] = self.grid_dict()
        return body

    # -- the server's estimate (post-processing) ------------------------------------------

    def estimate(self) -> np.ndarray:
        """The server's estimate of the population distribution (cached): what
        :func:`estimate_population` returns, from the released histogram and the public
        parameters recorded here (the linear variant's channel; k-RR's epsilon).
        Post-processing: no budget."""
        cached = self.__dict__.get("_estimate")
        if cached is None:
            hist = self.counts_per_output()
            if self.variant == "linear":
                if self.channel is None:
                    raise InvalidParameterError(
                        "channel", None, "the public channel of a linear-variant sample "
                        "(use estimate_population(sample, mechanism))")
                cached = estimate_linear(hist, self.channel)
            elif self.mechanism_name == "krr":
                cached = krr_estimate(hist, epsilon=self.epsilon, project=True)
            else:
                cached = estimate_direct(hist)
            object.__setattr__(self, "_estimate", cached)
        return cached.copy()

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
             grid: Any = None, title: str | None = None, **kwargs: Any) -> Any:
        """Draw the public base measure, the released samples (count per cell) and the
        server's estimate over the grid: the picture ``sample.png``
        (:func:`privot.sampling.plot.plot_population_sample`).

        ``which`` picks panels (``"base_measure"``, ``"samples"``, ``"estimate"``);
        ``ax`` is one Axes per panel (None: a new Figure). ``grid`` overrides the
        recorded one. Returns the matplotlib Figure. Post-processing only.
        """
        from privot.sampling.plot import plot_population_sample

        g = self._grid(grid)
        names = [which] if isinstance(which, str) else list(which)
        arrays: dict[str, Any] = {}
        if "base_measure" in names:
            arrays["base_measure"] = self._base_measure()
        if "samples" in names:
            arrays["counts"] = self.counts_per_output()
        if "estimate" in names:
            arrays["estimate"] = self.estimate()
        return plot_population_sample(g, ax=ax, which=which,
                                      title=self._title() if title is None else title,
                                      **arrays, **kwargs)

    def save(self, folder: str | Path, *, grid: Any = None,
             release_extra: Mapping[str, Any] | None = None,
             curator: bool | Mapping[str, Any] = True, data_warnings: Sequence[str] = (),
             png: bool = True, title: str | None = None) -> dict[str, list[str]]:
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

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...], "notes": []}``: the names
            written.
        """
        g = self._grid(grid)
        m = self._base_measure()
        estimate = self.estimate()
        d = g.resolution
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        centres = g.cell_centre_points().tolist()  # Python floats: repr is exact
        public: list[str] = []
        # -- publishable: public parameters and the released multiset only -------------
        with open(folder / "samples.csv", "w", encoding="utf-8") as fh:
            fh.write("x,y,cell\n")
            for c in self.released().tolist():  # sorted: no user order, no ids
                fh.write(f"{centres[c][0]!r},{centres[c][1]!r},{c}\n")
        np.savetxt(folder / "base_measure.csv", m.reshape(d, d), delimiter=",",
                   fmt="%.12g")
        np.savetxt(folder / "estimate.csv", estimate.reshape(d, d), delimiter=",",
                   fmt="%.12g")
        public += ["samples.csv", "base_measure.csv", "estimate.csv"]
        if png:
            fig = self.plot(grid=g, title=title)
            fig.savefig(folder / "sample.png", dpi=110, bbox_inches="tight")
            public.append("sample.png")
        public.append("release.json")
        write_release(folder, {**self.release_dict(), **dict(release_extra or {}),
                               "grid": self.grid_dict(g)}, public)
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
        return {"publishable": sorted(public), "curator": sorted(written), "notes": []}


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


def _int_array(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidParameterError(f"counts.{name}", f"<array dtype {arr.dtype} shape "
                                    f"{arr.shape}>", "a 1-D integer array")
    return arr.astype(np.int64, copy=False)


def _check_counts(counts: object, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray, np.ndarray, np.ndarray]:
    """``(user_ids, indptr, cells, counts, sizes, empty_user_ids)`` after checking the CSR
    structure; ``empty_user_ids`` (none when ``counts`` has no such attribute) are the
    listed users without a distribution."""
    needed = ("user_ids", "indptr", "cells", "counts")
    if not all(hasattr(counts, a) for a in needed):
        raise InvalidParameterError("counts", type(counts).__name__,
                                    "a UserCellCounts (user_ids, indptr, cells, counts)")
    grid = getattr(counts, "grid", None)
    n_cells = getattr(grid, "n_cells", None)
    if n_cells is not None and int(n_cells) != k:
        raise InvalidParameterError(
            "counts", f"<counts over {n_cells} cells>",
            f"counts over the mechanism's k = {k} input points (one per grid cell)")
    indptr = _int_array(counts.indptr, "indptr")
    cells = _int_array(counts.cells, "cells")
    cnt = _int_array(counts.counts, "counts")
    user_ids = np.asarray(counts.user_ids)
    if indptr.size < 2:
        raise InvalidDataError("counts has no user with a point inside the bounds; nothing "
                               "to release (refused before any budget is charged)")
    if (indptr[0] != 0 or indptr[-1] != cells.size or cells.size != cnt.size
            or user_ids.shape != (indptr.size - 1,) or np.any(np.diff(indptr) < 1)):
        raise InvalidParameterError(
            "counts", "<inconsistent compressed rows>",
            "indptr from 0 to len(cells), increasing by >= 1 per user, len(counts) == "
            "len(cells), one user id per user")
    if np.any(cnt < 1):
        raise InvalidParameterError("counts.counts", int(cnt.min()), "integers >= 1")
    if np.any((cells < 0) | (cells >= k)):
        bad = int(cells[(cells < 0) | (cells >= k)][0])
        raise InvalidParameterError("counts.cells", bad,
                                    f"cell indices in [0, k) with k = {k}")
    if int(cnt.max()) * cnt.size >= _MAX_SIZE:  # keeps every (cumulative) sum in int64
        raise InvalidParameterError("counts.counts", "<too many points>",
                                    "fewer than 2**62 points in all")
    sizes = np.add.reduceat(cnt, indptr[:-1])
    empty = getattr(counts, "empty_user_ids", None)
    empty = user_ids[:0] if empty is None else np.asarray(empty)
    if empty.ndim != 1 or (empty.size and np.intersect1d(empty, user_ids).size):
        raise InvalidParameterError(
            "counts.empty_user_ids", "<array>",
            "a 1-D array of the user ids with no point inside, none of them in user_ids")
    return user_ids, indptr, cells, cnt, sizes, empty


def _check_channel(channel: object, k: int, k_v: int) -> np.ndarray:
    ch = check_finite_array(channel, "channel", ndim=2)
    if ch.shape != (k, k_v):
        raise InvalidParameterError("channel", f"<array of shape {ch.shape}>",
                                    f"a (k, k_v) = ({k}, {k_v}) array, row i = M[delta_i]")
    if np.any(ch < -_CHANNEL_ATOL) or np.any(np.abs(ch.sum(axis=1) - 1.0) > _CHANNEL_ATOL):
        raise InvalidParameterError("channel", "<rows that are not distributions>",
                                    f"non-negative rows summing to 1 (within {_CHANNEL_ATOL:g})")
    return ch


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------


def _draw_own_cells(src: BitSource, indptr: np.ndarray, cells: np.ndarray, cnt: np.ndarray,
                    sizes: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
    r"""One cell per listed user: with probability exactly :math:`k_{u,c} / n_u` for a
    user with a distribution, uniform over the ``k`` cells for the others.

    ``row[i]`` is list user ``i``'s row in the compressed counts, ``-1`` for a user
    without a distribution (the public default input, uniform over the cells). A uniform
    integer ``t`` in ``[0, n_u)`` (``[0, k)`` for a default user; exact rejection
    sampling), then the entry ``p`` of the user with ``C_{p-1} <= s_u + t < C_p``, ``C``
    the integer cumulative counts and ``s_u`` the user's offset: entry ``p`` is hit by
    exactly ``k_p`` values; a default user's cell is ``t`` itself.
    """
    has = row >= 0
    t = src.uniform_below(np.where(has, sizes[np.maximum(row, 0)], k))
    cum = np.cumsum(cnt)  # total points < 2**63
    before = np.concatenate(([0], cum))[indptr[:-1]]
    pos = np.searchsorted(cum, before[row[has]] + t[has], side="right")
    out = t.astype(np.int64)
    out[has] = cells[pos]
    return out


def _list_order(user_ids: np.ndarray, empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The user list (``user_ids`` and ``empty``, sorted by id: the order of the public
    list, so that which batch a user is solved in never depends on who has data) and
    ``row``: each listed user's row in the compressed counts, ``-1`` for the users of
    ``empty``."""
    if not empty.size:  # the common case, already sorted by the engine step
        return user_ids, np.arange(user_ids.size, dtype=np.int64)
    ids = np.concatenate([user_ids, empty])
    row = np.concatenate([np.arange(user_ids.size, dtype=np.int64),
                          np.full(empty.size, -1, dtype=np.int64)])
    order = np.argsort(ids, kind="stable")  # one column's ids: they sort together
    return ids[order], row[order]


def _dense_rows(indptr: np.ndarray, cells: np.ndarray, cnt: np.ndarray, sizes: np.ndarray,
                row: np.ndarray, k: int) -> np.ndarray:
    r"""``(len(row), k)`` inputs of a batch of listed users: :math:`\mu_u` for a user with a
    distribution, the public default (uniform over the ``k`` points) for the others."""
    has = row >= 0
    out = np.full((row.size, k), 1.0 / k)
    if not np.any(has):
        return out
    r = row[has]
    a, b = int(r[0]), int(r[-1]) + 1
    if b - a == r.size and np.all(np.diff(r) == 1):  # the list keeps the counts' order
        out[has] = dense_distributions(indptr, cells, cnt, sizes, a, b, k)
        return out
    for i, j in zip(np.flatnonzero(has).tolist(), r.tolist(), strict=True):
        out[i] = dense_distributions(indptr, cells, cnt, sizes, j, j + 1, k)[0]
    return out


def sample_population(counts: Any, mechanism: SamplingMechanism, *,
                      variant: str = "direct",
                      rng: np.random.Generator | BitSource | int | None = None,
                      accountant: Spender | None = None,
                      batch_size: int | None = None,
                      channel: object | None = None,
                      bits: int = DEFAULT_BITS,
                      progress: bool | None = None) -> PopulationSample:
    r"""One :math:`\varepsilon`-LDP report per user of a whole table.

    Every user of the user list reports exactly once: the users with a distribution
    (``counts.user_ids``) and those without a usable point inside the bounds
    (``counts.empty_user_ids``), who report through the same mechanism, at the same
    epsilon, from the public default input: the uniform distribution over the ``k``
    input points (module docstring, *Who reports*). The number of reports is the length
    of the user list, public.

    Parameters
    ----------
    counts : UserCellCounts
        Each user's cell counts (:func:`~privot.sampling.engine_step.user_cell_counts`,
        any engine): ``user_ids``, ``indptr``, ``cells``, ``counts`` and, when present,
        ``empty_user_ids`` (the listed users without a distribution; an object without
        that attribute lists ``user_ids`` only); the cells index the mechanism's ``k``
        input points (when ``counts.grid`` is given, ``grid.n_cells`` must equal ``k``).
    mechanism : SamplingMechanism
        Built once from public parameters (:func:`~privot.sampling.mechanism.make_mechanism`).
    variant : {"direct", "linear"}, default "direct"
        ``"direct"``: release a sample of :math:`M[\mu_u]`; ``"linear"``: draw
        :math:`i \sim \mu_u` exactly, release a sample of :math:`M[\delta_i]` (see the
        module docstring).
    rng : numpy.random.Generator, BitSource, int or None
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): the OS CSPRNG, the only choice fit for publication. A seeded
        generator gives a reproducible sample marked ``secure=False``.
    accountant : PrivacyAccountant, optional
        Charged ``epsilon`` once (relation ``local``) after every check and before
        anything is drawn.
    batch_size : int, optional
        Direct variant: users privatised at once (memory ``batch * max(k, k_v)``
        floats); linear variant: users drawn at once. Default: about 32 MB of floats.
    channel : (k, k_v) array, optional
        Linear variant: :meth:`mechanism.channel() <SamplingMechanism.channel>` computed
        beforehand (it is public; computing it costs ``k`` projections, so callers cache
        it). Whatever it holds, its rows are snapped into the certified polytope of the
        mechanism's base measure before use.
    bits : int, default 61
        Grid exponent of the integer laws, in ``[1, 61]``.
    progress : bool, optional
        A progress bar of the users on stderr: None (default) only when stderr is a
        terminal, True/False force it (privot's one rule, :mod:`privot._progress`). It
        counts the public user list only and draws nothing.

    Returns
    -------
    PopulationSample

    Raises
    ------
    InvalidParameterError
        An unknown ``variant``, a ``mechanism`` that is not a
        :class:`SamplingMechanism`, ``counts`` whose cells do not index its ``k`` points,
        a ``channel`` of the wrong shape, ``batch_size < 1``; naming the parameter.
    InvalidDataError
        No user in ``counts`` with a point inside the bounds (a curator refusal, before
        anything is charged).
    BudgetExceededError
        The accountant cannot afford ``epsilon`` (nothing is drawn).

    Notes
    -----
    The work per user depends on the data only through its size ``n_u`` (linear: the
    exact uniform draw; direct: the mechanism's :meth:`privatize`, total by design, with
    a fixed iteration count for the entropic solver; the exact LP's running time varies,
    which only the device itself sees in the local model). Users are processed in the
    order of the user list, in batches of a public size, so which batch a user is in
    never depends on another user's data.

    Privacy
    -------
    Unit: one user's whole distribution. Relation: local. Pure
    :math:`\varepsilon`-LDP per user, one report each, charged once; the user list and
    the number of reports are public (module docstring; ``docs/privacy/sampling.md``).
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    t0 = time.perf_counter()
    if variant not in VARIANTS:
        raise InvalidParameterError("variant", variant, f"one of {VARIANTS}")
    if not isinstance(mechanism, SamplingMechanism):
        raise InvalidParameterError("mechanism", type(mechanism).__name__,
                                    "a privot.sampling.SamplingMechanism")
    b = check_int(bits, "bits", minimum=1, maximum=MAX_BITS)
    show = show_progress(progress)
    if accountant is not None and not hasattr(accountant, "spend"):
        raise InvalidParameterError("accountant", accountant,
                                    "None or an object with spend() (a PrivacyAccountant)")
    k, k_v, eps = int(mechanism.k), int(mechanism.k_v), float(mechanism.epsilon)
    data_ids, indptr, cells, cnt, sizes, empty = _check_counts(counts, k)
    user_ids, row = _list_order(data_ids, empty)  # the public user list, one report each
    n = int(row.size)
    width = max(k, k_v)
    batch = (max(1, _BATCH_ELEMENTS // width) if batch_size is None
             else check_int(batch_size, "batch_size", minimum=1))
    src, secure = resolve_rng(rng)
    poly = grid_polytope(mechanism.base_measure, epsilon=eps, bits=b)
    seconds: dict[str, float] = {}
    weights = None
    shift = 0.0
    if variant == "linear":
        t1 = time.perf_counter()
        ch = (mechanism.channel() if channel is None else _check_channel(channel, k, k_v))
        weights = snap_to_polytope(ch, polytope=poly)  # public: the channel only
        shift = float(np.abs(weights * 2.0 ** -b - ch).sum(axis=1).max())
        seconds["channel"] = time.perf_counter() - t1
    elif channel is not None:
        raise InvalidParameterError("channel", "<array>", "None for variant='direct'")
    description = mechanism.release_dict()
    cost = PrivacyCost(eps)
    if accountant is not None:  # once, before anything is drawn
        accountant.spend(cost, mechanism=f"ldp-population-sample ({variant})",
                         relation=Neighbouring.LOCAL,
                         params={"variant": variant, "mechanism": mechanism.name,
                                 "k": k, "k_v": k_v, "bits": b, "users": n,
                                 "default_input": DEFAULT_INPUT})
    out = np.empty(n, dtype=np.int64)
    bar = progress_bar(show, total=n, desc=f"LDP samples ({variant})", unit="user")
    t2 = time.perf_counter()
    if variant == "linear":
        own = _draw_own_cells(src, indptr, cells, cnt, sizes, row, k)
        for start in range(0, n, batch):
            stop = min(n, start + batch)
            out[start:stop] = draw_index(weights[own[start:stop]], b, rng=src)
            bar.update(stop - start)
        seconds["draw"] = time.perf_counter() - t2
    else:
        privatize = 0.0
        for start in range(0, n, batch):
            stop = min(n, start + batch)
            ta = time.perf_counter()
            nu = mechanism.privatize(_dense_rows(indptr, cells, cnt, sizes, row[start:stop],
                                                 k))
            privatize += time.perf_counter() - ta
            got = private_sample(nu, base_measure=mechanism.base_measure, epsilon=eps,
                                 rng=src, bits=b)
            out[start:stop] = got.indices
            shift = max(shift, got.max_shift)
            bar.update(stop - start)
        seconds["privatize"] = privatize
        seconds["draw"] = time.perf_counter() - t2 - privatize
    bar.close()
    seconds["total"] = time.perf_counter() - t0

    def _opt(name: str) -> int | None:
        v = getattr(counts, name, None)
        return None if v is None else int(v)

    diag = PopulationDiagnostics(n_users=n, n_points=_opt("n_points"),
                                 n_outside=_opt("n_outside"),
                                 n_users_empty=_opt("n_users_empty"), max_shift=shift,
                                 seconds=seconds, n_users_default=int(empty.size))
    grid = getattr(counts, "grid", None)
    if int(getattr(grid, "n_cells", -1)) != k:
        grid = None
    return PopulationSample(indices=out, user_ids=user_ids, variant=variant,
                            mechanism=description, epsilon=eps, k=k, k_v=k_v, cost=cost,
                            relation=Neighbouring.LOCAL, secure=secure, bits=b,
                            curator_only=diag, grid=grid,
                            base_measure=np.array(mechanism.base_measure, dtype=np.float64),
                            channel=ch if variant == "linear" else None)


# ---------------------------------------------------------------------------------------
# Server side (post-processing of the released histogram)
# ---------------------------------------------------------------------------------------


def _check_sample_counts(sample_counts: object) -> np.ndarray:
    c = check_finite_array(sample_counts, "sample_counts", ndim=1)
    if np.any(c < 0):
        raise InvalidParameterError("sample_counts", float(c.min()),
                                    "non-negative counts (one per output point)")
    if float(c.sum()) <= 0:
        raise InvalidParameterError("sample_counts", "<all zero>",
                                    "counts with a positive total (at least one report)")
    return c


def linear_law(mu: object, channel: object) -> np.ndarray:
    r"""The linear variant's output law :math:`\mu W` of each user, ``(k_v,)`` or
    ``(n, k_v)``.

    With the snapped integer channel ``W = w / 2**b`` this is the exact law of the
    released index (:func:`sample_population`); with the float channel it differs by at
    most the snapping shift (about ``2 k_v 2^-b`` in L1 for a channel inside the polytope).
    """
    ch = check_finite_array(channel, "channel", ndim=2)
    m = check_finite_array(mu, "mu")
    if m.ndim not in (1, 2) or m.shape[-1] != ch.shape[0]:
        raise InvalidParameterError("mu", f"<array of shape {m.shape}>",
                                    f"(k,) or (n, k) with k = {ch.shape[0]} (channel rows)")
    return m @ ch


def estimate_direct(sample_counts: object) -> np.ndarray:
    r"""The empirical histogram of the direct variant's reports, ``(k_v,)``.

    What a naive server does. It estimates :math:`\frac1n\sum_u M[\mu_u]`, the mean of
    the users' *privatised* laws, not the population :math:`\bar\mu`. The target is
    biased towards the base measure: it lies in the polytope :math:`Q_{m,\varepsilon}`
    (every coordinate within :math:`e^{\pm\varepsilon/2} m_j`), and for WPM its
    :math:`W_p` distance to :math:`\bar\mu` is at most the worst-case cost of Thm 3.5
    (joint convexity of :math:`W_p^p`). Since :math:`M` is not linear there is no public
    transform to undo (the linear variant and :func:`estimate_linear` exist for that).
    Post-processing (no budget).

    Parameters
    ----------
    sample_counts : (k_v,) array
        Reports per output point (:meth:`PopulationSample.counts_per_output`).
    """
    c = _check_sample_counts(sample_counts)
    return c / c.sum()


def estimate_linear(sample_counts: object, channel: object, *, n_iter: int = 1000,
                    tol: float = 1e-9, init: object | None = None) -> np.ndarray:
    r"""Iterative Bayesian update (EM) for the population behind the linear variant.

    Given ``N`` reports with counts :math:`c_j` of samples of :math:`\theta W`, the
    maximum-likelihood population :math:`\theta` on the simplex is the fixed point of
    (Agrawal and Aggarwal 2001; Agrawal, Srikant and Thomas 2005)

    .. math:: \theta_i \leftarrow \sum_j \frac{c_j}{N}
              \frac{\theta_i W_{ij}}{\sum_l \theta_l W_{lj}},

    started at the uniform distribution (or ``init``), each step a distribution; it
    stops after ``n_iter`` steps or when the L1 change is below ``tol``. Post-processing
    of the released histogram and the public channel: no budget, and the stopping rule
    reads the release only.

    Parameters
    ----------
    sample_counts : (k_v,) array
        Reports per output point.
    channel : (k, k_v) array
        The public channel, row ``i`` the law of a report given input ``i``
        (:meth:`SamplingMechanism.channel`; the snapped integer one is within about
        ``2 k_v 2^-61`` in L1).
    n_iter : int, default 1000
        >= 1.
    tol : float, default 1e-9
        >= 0 (0: always ``n_iter`` steps).
    init : (k,) array, optional
        Positive starting distribution (default uniform).

    Returns
    -------
    (k,) float array
        A distribution over the ``k`` input points. When two inputs have the same channel
        row they are not identifiable, and EM keeps the split of ``init`` between them.
    """
    c = _check_sample_counts(sample_counts)
    ch = check_finite_array(channel, "channel", ndim=2)
    if ch.shape[1] != c.size:
        raise InvalidParameterError("channel", f"<array of shape {ch.shape}>",
                                    f"(k, k_v) with k_v = {c.size} (len(sample_counts))")
    if np.any(ch < 0) or np.any(np.abs(ch.sum(axis=1) - 1.0) > _CHANNEL_ATOL):
        raise InvalidParameterError("channel", "<rows that are not distributions>",
                                    f"non-negative rows summing to 1 (within {_CHANNEL_ATOL:g})")
    steps = check_int(n_iter, "n_iter", minimum=1)
    stop = check_nonnegative(tol, "tol")
    k = ch.shape[0]
    if init is None:
        theta = np.full(k, 1.0 / k)
    else:
        theta = check_finite_array(init, "init", ndim=1)
        if theta.size != k or np.any(theta <= 0):
            raise InvalidParameterError("init", "<array>",
                                        f"a positive (k,) distribution with k = {k}")
        theta = theta / theta.sum()
    f = c / c.sum()
    for _ in range(steps):
        pred = theta @ ch
        ratio = np.divide(f, pred, out=np.zeros_like(f), where=pred > 0)
        new = theta * (ch @ ratio)
        total = new.sum()
        if total <= 0:  # every report on an output no input in the support can give
            break
        new /= total
        change = float(np.abs(new - theta).sum())
        theta = new
        if change <= stop:
            break
    return theta


def estimate_population(sample: PopulationSample, mechanism: SamplingMechanism, *,
                        channel: object | None = None) -> np.ndarray:
    """The server's estimate of the population distribution from released reports.

    EM through the public channel (:func:`estimate_linear`) for the linear variant;
    k-RR's debiased frequencies projected onto the simplex for k-RR; else the histogram
    (:func:`estimate_direct`, the mean of the users' laws). Post-processing of the
    released histogram and public parameters only: no budget. ``channel``: the
    mechanism's channel when the caller already has it (else the one the sample
    recorded, else ``k`` projections). :meth:`PopulationSample.estimate` gives the same
    without the mechanism.
    """
    hist = sample.counts_per_output()
    if sample.variant == "linear":
        if channel is None:  # the one the reports were drawn through, when recorded
            channel = sample.channel if sample.channel is not None else mechanism.channel()
        return estimate_linear(hist, channel)
    if mechanism.name == "krr":
        return krr_estimate(hist, epsilon=mechanism.epsilon, project=True)
    return estimate_direct(hist)
