"""What :func:`~privot.barycenters.private_barycenter` returns, and its files.

:meth:`BarycenterResult.save` writes what ``privot barycenter`` writes (the CLI calls
it: one code path):

publishable (the public parameters and the noisy release only; :data:`PUBLISHABLE_FILES`)
    ``support.csv`` (the coordinate columns and ``weight``), ``barycenter.png`` (2-D
    only: the support over the public bounds and region), ``release.json``.
curator-only (exact statistics of the raw data; :data:`CURATOR_FILES`)
    ``curator-report.json`` (rows, clipped and unusable rows per group, timings,
    diagnostics, data warnings) and, when the raw groups are given,
    ``curator-data.png`` (the support over the raw rows). Their names start with
    ``curator-``; with ``curator=False`` none is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._optional import figure_possible
from privot._result import (
    CURATOR_PREFIX,
    CURATOR_REPORT,
    ReleaseResult,
    write_curator_report,
    write_release,
)
from privot.barycenters.geometry import PublicBounds
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["CURATOR_FILES", "PUBLIC_INPUTS", "PUBLISHABLE_FILES", "BarycenterResult",
           "default_columns", "default_group_names"]

#: Every publishable file :meth:`BarycenterResult.save` may write (``barycenter.png``
#: for 2-D data only).
PUBLISHABLE_FILES = ("support.csv", "barycenter.png", "release.json")
#: The curator-only files (``curator-data.png`` only when the raw groups are given).
CURATOR_FILES = (CURATOR_REPORT, CURATOR_PREFIX + "data.png")

#: What the replace-one guarantee takes as public, said in every release.
PUBLIC_INPUTS = ("the group labels, the number of groups and each group's size (rows, "
                 "unusable ones included) are published exactly: replace-one neighbouring "
                 "keeps them fixed, so the guarantee covers the rows' coordinates only")


def default_columns(d: int) -> list[str]:
    """Names of ``d`` coordinate columns when the caller gives none: ``x, y`` (``z``)
    up to three, else ``x1 .. xd``."""
    return list("xyz"[:d]) if d <= 3 else [f"x{i + 1}" for i in range(d)]


def default_group_names(k: int) -> list[str]:
    """Names of ``k`` groups when the caller gives none: ``all`` for one group (as
    ``privot barycenter`` without ``--group-column``), else ``group 0 .. group k-1``."""
    return ["all"] if k == 1 else [f"group {i}" for i in range(k)]


def distinct_atoms(support: np.ndarray) -> int:
    """The number of distinct rows of a released support: a function of the release,
    publishable."""
    return int(len(np.unique(np.asarray(support, dtype=np.float64), axis=0)))


@dataclass(frozen=True, eq=False, repr=False)
class BarycenterResult(ReleaseResult):
    """A private barycenter and everything needed to judge it.

    Attributes
    ----------
    support : (m, d) array
        The private support points, in the caller's coordinates.
    weights : (m,) array
        Uniform, ``1/m`` (paper 000 Assumption 2).
    method : str
        ``"coreset"`` (paper 000 Alg. 2) or ``"perturbation"`` (Alg. 1 / paper 001
        Thm 5, Prop. 6, with privot's anchored step).
    cost : PrivacyCost
        The guarantee for the data the caller describes: on the population when
        ``population_size`` was given (amplified by subsampling), else on the groups.
    sample_cost : PrivacyCost
        What the mechanism spent on the groups themselves.
    relation : Neighbouring
        ``REPLACE_ONE_IN_GROUP``: one point of one group replaced by another of that
        group, the group sizes public (paper 000 Def. 4).
    secure : bool
        False when a seeded generator was used (reproducible, not for publication).
    bounds : PublicBounds
        The public geometry the data were mapped with.
    n_clipped : tuple of int
        **Curator-only.** Usable rows clipped into the bounds, per group (exact).
    params : dict
        Every setting and calibration value (m, p, depth, d', k', sigma, reg, ...);
        public parameters only (group sizes are public by the neighbouring relation).
    diagnostics : dict
        **Curator-only.** Timings and solver details (``seconds_*`` grow with the data).
    n_unusable : tuple of int
        **Curator-only.** Rows with a missing or non-numeric coordinate, per group:
        left out of the mechanism, kept in the public group sizes.

    Notes
    -----
    :meth:`release_dict` is the publishable part (a function of the public parameters
    and the noisy release only); :meth:`curator_report` holds the exact counts and
    timings, which must not be published (DESIGN.md, "Publishable output").
    :meth:`save` writes the files of ``privot barycenter``, :meth:`plot` draws
    ``barycenter.png``.
    """

    support: np.ndarray
    weights: np.ndarray
    method: str
    cost: PrivacyCost
    sample_cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    bounds: PublicBounds
    n_clipped: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    n_unusable: tuple[int, ...] = ()
    error: ErrorStatement | None = None

    @property
    def epsilon(self) -> float:
        """The epsilon of :attr:`cost` (the guarantee for the data the caller describes)."""
        return float(self.cost.epsilon)

    @property
    def delta(self) -> float:
        """The delta of :attr:`cost`."""
        return float(self.cost.delta)

    @property
    def m(self) -> int:
        """Number of support points."""
        return int(self.support.shape[0])

    @property
    def distinct_atoms(self) -> int:
        """Number of distinct support points (a function of the release: publishable).
        Below :attr:`m` the release is degenerate: it repeats points (for example every
        atom at one mean); :attr:`degenerate` says so and ``release.json`` carries it."""
        return distinct_atoms(self.support)

    @property
    def degenerate(self) -> bool:
        """True when the support has fewer distinct points than ``m`` (public)."""
        return self.distinct_atoms < self.m

    def evaluate(self, groups: Sequence[np.ndarray], *,
                 references: dict[str, np.ndarray] | None = None,
                 max_points: int | None = None,
                 rng: np.random.Generator | int | None = None) -> dict[str, float]:
        """Exact cost on ``groups`` and W2 to ``references``; see
        :func:`~privot.evaluation.barycenters.evaluate_barycenter`. Reads the raw
        groups: an evaluation, not a release."""
        # curator-only, imported when asked: no release path imports the evaluation
        # namespace (through the package's re-export of it)
        from privot.barycenters.evaluation import evaluate_barycenter

        return evaluate_barycenter(groups, self.support, p=self.params.get("p", 2),
                                   group_weights=self.params.get("group_weights"),
                                   references=references, max_points=max_points, rng=rng)

    def release_dict(self) -> dict[str, Any]:
        """The publishable part, JSON-ready: support, weights, guarantee, parameters.

        A function of the public parameters and the noisy release only. It states what
        the guarantee takes as public: the group labels and sizes are published exactly.
        """
        out = {
            "method": self.method,
            "support": self.support.tolist(),
            "weights": self.weights.tolist(),
            "privacy": {"epsilon": self.cost.epsilon, "delta": self.cost.delta,
                        "sample_epsilon": self.sample_cost.epsilon,
                        "sample_delta": self.sample_cost.delta,
                        "unit": "one row (one person in one group)",
                        "relation": self.relation.value, "secure": self.secure,
                        "public_by_assumption": PUBLIC_INPUTS},
            "bounds": {"kind": self.bounds.kind, "lower": self.bounds.lower.tolist(),
                       "upper": self.bounds.upper.tolist()},
            "params": self.params,
        }
        if self.error is not None:  # public parameters only, stated before the charge
            out["error"] = self.error.to_dict()
        if self.degenerate:  # only then, so the files of a full release keep their bytes
            out["degenerate"] = {"distinct_atoms": self.distinct_atoms, "m": self.m,
                                 "note": "fewer distinct support points than m: the "
                                         "release repeats points"}
        return out

    def curator_report(self) -> dict[str, Any]:
        """Exact counts and timings of the raw data: **not private, never publish**."""
        return {"rows_clipped_per_group": list(self.n_clipped),
                "rows_unusable_per_group": list(self.n_unusable),
                "diagnostics": self.diagnostics}

    @property
    def d(self) -> int:
        """Dimension of the support points."""
        return int(self.support.shape[1])

    @property
    def k(self) -> int:
        """Number of groups (public)."""
        sizes = self.params.get("group_sizes")
        return int(self.params.get("k", len(sizes) if sizes is not None else 1))

    def _public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict`'s publishable body: ``{"release": release_dict()}``; with
        ``to_dict(curator=True)`` also ``"curator_only"``: :meth:`curator_report` (the two
        audiences apart, for a caller who stores both: publish only ``release``).

        Changed in issue 25: ``to_dict()`` is publishable only by default (it used to
        include ``"curator_only"``); ask for it with ``curator=True``."""
        return {"release": self.release_dict()}

    def __repr__(self) -> str:
        c = self.cost
        return (f"BarycenterResult({self.method}, m={self.m}, d={self.d}, k={self.k} "
                f"group{'s' if self.k != 1 else ''}, epsilon={c.epsilon:g}, "
                f"delta={c.delta:g}, {self.bounds.kind} bounds"
                + ("" if self.secure else ", SEEDED") + ")")

    # -- figures and files ----------------------------------------------------------------

    def _columns(self, columns: Sequence[str] | None) -> list[str]:
        return _names(columns, "columns", default_columns(self.d),
                      "one per coordinate of the support")

    def _group_names(self, group_names: Sequence[str] | None) -> list[str]:
        return _names(group_names, "group_names", default_group_names(self.k),
                      "one per group")

    def plot(self, ax: Any = None, *, columns: Sequence[str] | None = None,
             region: Any = None, data: Sequence[np.ndarray] | None = None,
             group_names: Sequence[str] | None = None, title: str | None = None,
             **kwargs: Any) -> Any:
        """Draw the private support over the public bounds (and ``region``'s outline):
        the picture ``barycenter.png`` (2-D supports only).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there; None: a new ``Figure`` (no pyplot state).
        columns : sequence of 2 str, optional
            Axis labels (the coordinate columns); default ``x, y``.
        region : Region, optional
            The public region given to :func:`~privot.barycenters.private_barycenter`
            (its outline is drawn when it has ``vertices``).
        data : sequence of (n_i, 2) arrays, optional
            The raw groups, drawn under the support: **a curator-only figure**
            (``curator-data.png``; its title says so). Never publish it.
        group_names : sequence of str, optional
            Legend labels of ``data``'s groups.
        title : str, optional
            Default: method, ``m`` and epsilon.
        **kwargs
            Passed to :func:`~privot.barycenters.plot.plot_barycenters`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from privot.barycenters.plot import plot_barycenters

        if self.d != 2:
            raise InvalidDataError(f"plot draws 2-D supports only; this one has d = {self.d}")
        cols = self._columns(columns)
        outline = None if region is None else getattr(region, "vertices", None)
        groups = [] if data is None else [np.asarray(g, dtype=float) for g in data]
        names = None
        if data is not None:
            names = (self._group_names(group_names) if len(groups) == self.k
                     else (None if group_names is None else list(group_names)))
        if title is None:
            title = (("CURATOR ONLY (raw rows shown): " if data is not None else "")
                     + f"private barycenter, m = {self.m}, epsilon = {self.cost.epsilon:g}")
        return plot_barycenters(groups, {f"private ({self.method})": self.support},
                                group_names=names, outline=outline, xlabel=cols[0],
                                ylabel=cols[1], bounds=self.bounds, title=title, ax=ax,
                                **kwargs)

    def release_files_dict(self, *, columns: Sequence[str] | None = None,
                           group_names: Sequence[str] | None = None) -> dict[str, Any]:
        """The body of ``release.json``: :meth:`release_dict` without the support and
        weights (they are ``support.csv``), with the coordinate ``columns``, the group
        labels and their sizes (public by the relation). Publishable."""
        names = self._group_names(group_names)
        body = self.release_dict()
        body.pop("support")
        body.pop("weights")
        body.update({"columns": self._columns(columns), "groups": names,
                     "group_sizes": self._by_group(names, self.params.get("group_sizes"))})
        return body

    @staticmethod
    def _by_group(names: list[str], values: Sequence[Any] | None) -> dict[str, Any] | None:
        """``{name: value}`` per group; None when the values are not known (a result
        built by hand without them)."""
        if values is None or len(values) != len(names):
            return None
        return dict(zip(names, values, strict=True))

    def save(self, folder: str | Path, *, columns: Sequence[str] | None = None,
             group_names: Sequence[str] | None = None, region: Any = None,
             release_extra: Mapping[str, Any] | None = None,
             curator: bool | Mapping[str, Any] = True,
             data: Sequence[np.ndarray] | None = None, data_warnings: Sequence[str] = (),
             png: bool = True) -> dict[str, list[str]]:
        """Write the files ``privot barycenter`` writes into ``folder`` (created if
        needed; files of the same names are replaced).

        Parameters
        ----------
        folder : str or Path
        columns : sequence of str, optional
            The ``d`` coordinate column names (``support.csv``'s header, the axes);
            default :func:`default_columns`.
        group_names : sequence of str, optional
            The ``k`` group labels (public by the relation); default
            :func:`default_group_names`.
        region : Region, optional
            Drawn in ``barycenter.png`` (see :meth:`plot`).
        release_extra : mapping, optional
            Public fields added to ``release.json`` (the CLI adds its engine).
        curator : bool or mapping, default True
            Also write the curator-only files (``curator-report.json``, and
            ``curator-data.png`` when ``data`` is given); False: the publishable files
            only. A mapping: True, its fields merged into ``curator-report.json`` (the
            CLI's timings).
        data : sequence of (n_i, 2) arrays, optional
            The raw groups, for ``curator-data.png`` (curator-only; 2-D only).
        data_warnings : sequence of str
            Warnings raised while the data was read (curator-only).
        png : bool, default True
            Draw ``barycenter.png`` (2-D supports; needs matplotlib, the ``plot`` extra).

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...], "notes": [...]}``: the names
            written and one-line notes (publishable: functions of public values).
        """
        cols = self._columns(columns)
        names = self._group_names(group_names)
        if data is not None and curator is False:
            raise InvalidParameterError("data", "<raw groups>",
                                        "None when curator=False (it draws a curator file)")
        if data is not None and self.d != 2:
            raise InvalidParameterError("data", "<raw groups>",
                                        "None for a support that is not 2-D")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        public: list[str] = []
        notes: list[str] = []
        # -- publishable: the public parameters and the noisy release only --------------
        np.savetxt(folder / "support.csv", np.column_stack([self.support, self.weights]),
                   delimiter=",", header=",".join([*cols, "weight"]), comments="",
                   fmt="%.10g")
        public.append("support.csv")
        if png and self.d == 2 and figure_possible("barycenter.png", notes):
            fig = self.plot(columns=cols, region=region)
            fig.savefig(folder / "barycenter.png", dpi=120, bbox_inches="tight")
            public.append("barycenter.png")
        elif png and self.d != 2:
            notes.append(f"barycenter.png skipped: the support is {self.d}-D (2-D only)")
        public.append("release.json")
        write_release(folder, {**self.release_files_dict(columns=cols, group_names=names),
                               **dict(release_extra or {})}, public)
        # -- curator-only: exact statistics of the raw data ----------------------------
        written: list[str] = []
        if curator is not False:
            if data is not None and figure_possible(CURATOR_FILES[1], notes):
                fig = self.plot(columns=cols, region=region, data=data, group_names=names)
                fig.savefig(folder / CURATOR_FILES[1], dpi=120, bbox_inches="tight")
                written.append(CURATOR_FILES[1])
            written.append(CURATOR_FILES[0])
            report = self.curator_report()
            counts = {"rows_per_group": self._by_group(names, self.params.get("group_sizes")),
                      "rows_clipped_per_group": self._by_group(
                          names, report["rows_clipped_per_group"]),
                      "rows_unusable_per_group": self._by_group(
                          names, report["rows_unusable_per_group"])}
            extra = dict(curator) if isinstance(curator, Mapping) else {}
            write_curator_report(folder, {**counts, **extra,
                                          "diagnostics": report["diagnostics"],
                                          "data_warnings": list(data_warnings)}, written)
        return {"publishable": sorted(public), "curator": sorted(written), "notes": notes}


def _names(given: Sequence[str] | None, name: str, default: list[str],
           what: str) -> list[str]:
    """``given`` as strings, of the default's length (``default`` when None)."""
    if given is None:
        return default
    names = [str(g) for g in given]
    if len(names) != len(default):
        raise InvalidParameterError(name, names, f"{len(default)} names, {what}")
    return names
