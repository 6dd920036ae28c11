r"""The result of a private repair: :class:`RepairResult` (the released group laws and the
repair map to their Wasserstein barycenter).

:func:`~privot.learning.repair.private_repair` returns one. Publishable: the public
parameters, the group labels, sizes and weights (public by the relation), the noisy
histograms, the monotone CDFs, the quantile functions on the public levels, the
barycenter and the repair map itself (:meth:`RepairResult.transform`, usable on any
data). Curator-only: the number of clipped scores per group, timings, and any score the
map is applied to when it is the curator's own row (``curator-repaired-scores.csv``).

Files (:meth:`RepairResult.save`, what ``privot repair`` writes): publishable
:data:`PUBLISHABLE_FILES` (``release.json``, ``quantiles.csv``: level, one quantile
function per group, the barycenter; ``repair.png``), curator-only
``curator-report.json`` and, when rows are given, ``curator-repaired-scores.csv``.

Privacy
-------
No release here: the object carries the release of
:func:`~privot.learning.repair.private_repair` (pure epsilon-DP, replace-one-in-group,
``docs/privacy/repair.md``). Every publishable method reads the noisy counts and public
parameters only; :meth:`RepairResult.transform` is post-processing of them. The
*outputs* of ``transform`` on the curator's private rows are the curator's data
transformed, one row each: not a release (they are as private as the scores).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._result import (
    CURATOR_PREFIX,
    CURATOR_REPORT,
    ReleaseResult,
    write_curator_report,
    write_release,
)
from privot._validation import check_probability
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["CURATOR_FILES", "NOISE_FLAG", "PUBLISHABLE_FILES", "QUANTILES_FILE",
           "REPAIRED_FILE", "RepairDiagnostics", "RepairResult", "cdf_noise_sd"]

QUANTILES_FILE = "quantiles.csv"
FIGURE_FILE = "repair.png"
#: The publishable files of :meth:`RepairResult.save` (``repair.png`` with ``png=True``).
PUBLISHABLE_FILES = ("release.json", QUANTILES_FILE, FIGURE_FILE)
#: The curator's own rows with their repaired scores (never publish).
REPAIRED_FILE = CURATOR_PREFIX + "repaired-scores.csv"
CURATOR_FILES = (CURATOR_REPORT, REPAIRED_FILE)
#: A group whose stated CDF noise (:func:`cdf_noise_sd`) exceeds this is flagged
#: noise-dominated: its repair map is mostly noise.
NOISE_FLAG = 0.1


def cdf_noise_sd(bins: int, epsilon: float, size: int) -> float:
    """The stated noise of a group's CDF before post-processing, a public number.

    The standard deviation of the noisy cumulative count at the middle edge (the sum of
    ``bins // 2`` discrete Laplace draws of scale ``2 / epsilon``, variance
    ``2 a / (1 - a)^2`` each with ``a = exp(-epsilon / 2)``) divided by the public size.
    The isotonic fit and the pinned total can only shrink it.
    """
    a = math.exp(-epsilon / 2.0)
    var = 2.0 * a / (1.0 - a) ** 2
    return math.sqrt(max(1, bins // 2) * var) / float(size)


@dataclass(frozen=True)
class RepairDiagnostics:
    """**Curator-only** (not differentially private; never publish).

    Attributes
    ----------
    n_rows : int
        Rows read.
    n_clipped : mapping label -> int
        Scores outside the public bounds, clipped into them, per group.
    seconds : mapping str -> float
        Wall time per stage.
    """

    n_rows: int
    n_clipped: Mapping[Any, int]
    seconds: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class RepairResult(ReleaseResult):
    """The released group laws and the repair map to their barycenter.

    Attributes
    ----------
    params : RepairParams
        The public choices.
    bins : int
        The number of bins used (the caller's or :func:`~privot.learning.repair.default_bins`).
    labels, sizes : tuple
        Group labels (sorted) and sizes: public by the relation.
    weights : (k,) array
        The barycenter's public weights.
    edges : (bins + 1,) array
        The public bin edges over ``params.bounds``.
    noisy_counts : (k, bins) int64 array
        The release: each group's histogram plus discrete Laplace noise.
    cdfs : (k, bins + 1) array
        Monotone CDFs at the edges (post-processing).
    levels : (L,) array
        The public quantile levels ``0 .. 1``.
    quantiles : (k, L) array
        Each group's quantile function at the levels (post-processing).
    barycenter : (L,) array
        ``weights @ quantiles``: the barycenter's quantile function.
    cost : PrivacyCost
    relation : Neighbouring
        ``REPLACE_ONE_IN_GROUP``.
    secure : bool
        False when a seeded generator was used: **not for publication**.
    scale : float
        Discrete Laplace scale ``2 / epsilon``.
    cdf_sd : tuple of float
        :func:`cdf_noise_sd` per group (public).
    curator_only : RepairDiagnostics
    """

    params: Any
    bins: int
    labels: tuple
    sizes: tuple
    weights: np.ndarray
    edges: np.ndarray
    noisy_counts: np.ndarray
    cdfs: np.ndarray
    levels: np.ndarray
    quantiles: np.ndarray
    barycenter: np.ndarray
    cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    scale: float
    cdf_sd: tuple
    curator_only: RepairDiagnostics

    # -- the protocol ------------------------------------------------------------------

    @property
    def epsilon(self) -> float:
        """The epsilon spent (pure DP)."""
        return float(self.cost.epsilon)

    @property
    def theta(self) -> float:
        """The repair strength of :meth:`transform` by default."""
        return float(self.params.theta)

    @property
    def flags(self) -> list[str]:
        """Public warnings: groups whose stated CDF noise exceeds :data:`NOISE_FLAG`
        (their repair is dominated by noise). Empty when none."""
        return [f"noise-dominated: group {lab!r} (n={n}): CDF noise sd {sd:.3g} > "
                f"{NOISE_FLAG}; use a larger epsilon or fewer bins"
                for lab, n, sd in zip(self.labels, self.sizes, self.cdf_sd, strict=True)
                if sd > NOISE_FLAG]

    @property
    def degenerate(self) -> bool:
        """True when :attr:`flags` is not empty (a flagged release, not a success)."""
        return bool(self.flags)

    def release_dict(self) -> dict[str, Any]:
        """The publishable description, JSON-ready: public parameters, the public group
        labels and sizes, the noisy histograms (the quantile functions are
        ``quantiles.csv``)."""
        groups = [{"label": lab, "size": n, "weight": float(w),
                   "noisy_counts": self.noisy_counts[i].tolist(),
                   "cdf_noise_sd": sd}
                  for i, (lab, n, w, sd) in enumerate(zip(
                      self.labels, self.sizes, self.weights, self.cdf_sd, strict=True))]
        return {"capability": "repair", "epsilon": self.epsilon, "delta": 0.0,
                "guarantee": "pure epsilon-DP",
                "unit": "one record of one group",
                "relation": self.relation.value,
                "public_by_assumption": "the group labels and sizes",
                "mechanism": "discrete-laplace", "sensitivity": 2, "scale": self.scale,
                "secure": self.secure, "params": self.params.to_dict(), "bins": self.bins,
                "levels": int(self.levels.size), "groups": groups,
                "flags": self.flags, "degenerate": self.degenerate,
                "repair_map": "T_g(s) = (1 - theta) s + theta Q_bar(F_g(s)), s clipped "
                              "into bounds; F_g piecewise linear on the bin edges, Q_bar "
                              "piecewise linear on the levels",
                "derivation": "docs/privacy/repair.md"}

    def curator_report(self) -> dict[str, Any]:
        """Exact clipped counts and timings: **not private, never publish**."""
        cur = self.curator_only
        return {"n_rows": cur.n_rows, "n_clipped": {str(k): v for k, v in
                                                    cur.n_clipped.items()},
                "seconds": dict(cur.seconds)}

    def __repr__(self) -> str:
        return (f"RepairResult(epsilon={self.epsilon:g}, {len(self.labels)} groups, "
                f"bins={self.bins}, theta={self.theta:g}"
                + (", FLAGGED" if self.degenerate else "")
                + ("" if self.secure else ", SEEDED") + ")")

    # -- the repair map (post-processing) -----------------------------------------------

    def _codes(self, groups: Any, n: int) -> np.ndarray:
        g = np.asarray(groups)
        if g.ndim != 1 or g.shape[0] != n:
            raise InvalidParameterError("groups", groups,
                                        f"a 1-D array of group labels of length {n}")
        index = {lab: i for i, lab in enumerate(self.labels)}
        try:
            return np.fromiter((index[v] for v in g.tolist()), dtype=np.int64, count=n)
        except KeyError as exc:
            raise InvalidParameterError("groups", exc.args[0],
                                        f"one of the released groups {list(self.labels)}"
                                        ) from None

    def cdf(self, scores: Any, group: Any) -> np.ndarray:
        """The released CDF ``F_g`` of ``group`` at ``scores`` (clipped into the bounds)."""
        i = self._codes([group], 1)[0]
        lo, hi = self.params.bounds
        return np.interp(np.clip(np.asarray(scores, dtype=np.float64), lo, hi),
                         self.edges, self.cdfs[i])

    def transform(self, scores: Any, groups: Any, *, theta: float | None = None
                  ) -> np.ndarray:
        """Repair ``scores`` of rows of ``groups``: ``(1 - theta) s + theta Q_bar(F_g(s))``.

        Parameters
        ----------
        scores : (n,) array of finite floats
            Clipped into the public bounds first.
        groups : (n,) array
            Labels among the released :attr:`labels`.
        theta : float in [0, 1], optional
            Default the release's ``params.theta``.

        Returns
        -------
        (n,) float array

        Privacy
        -------
        Post-processing of the release: no budget. Applied to the curator's own rows, the
        output is their data transformed row by row (curator-only, as the scores are).
        """
        t = self.theta if theta is None else check_probability(theta, "theta")
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1:
            raise InvalidParameterError("scores", scores, "a 1-D array (n,)")
        if not np.all(np.isfinite(s)):
            raise InvalidDataError("scores has non-finite values (NaN or inf)")
        codes = self._codes(groups, s.size)
        lo, hi = self.params.bounds
        x = np.clip(s, lo, hi)
        u = np.empty_like(x)
        for i in range(len(self.labels)):
            m = codes == i
            u[m] = np.interp(x[m], self.edges, self.cdfs[i])
        return (1.0 - t) * x + t * np.interp(u, self.levels, self.barycenter)

    # -- figures and files --------------------------------------------------------------

    def plot(self, ax: Any = None) -> Any:
        """The groups' released quantile functions and the barycenter's (one Figure)."""
        import matplotlib

        if ax is None:
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(6.0, 4.2))
        else:
            fig = ax.figure
        for lab, q in zip(self.labels, self.quantiles, strict=True):
            ax.plot(self.levels, q, lw=1.2, label=f"group {lab}")
        ax.plot(self.levels, self.barycenter, "k--", lw=2.0, label="barycenter")
        ax.set_xlabel("level u")
        ax.set_ylabel("score quantile Q(u)")
        ax.set_ylim(*self.params.bounds)
        ax.set_title(f"private group quantiles, epsilon = {self.epsilon:g}"
                     + ("" if self.secure else " (seeded)"))
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        return fig

    def write_quantiles(self, path: str | Path) -> None:
        """``quantiles.csv``: ``level``, ``Q[<label>]`` per group, ``barycenter``."""
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["level", *(f"Q[{lab}]" for lab in self.labels), "barycenter"])
            for j, u in enumerate(self.levels):
                w.writerow([repr(float(u)), *(repr(float(q)) for q in self.quantiles[:, j]),
                            repr(float(self.barycenter[j]))])

    def save(self, folder: str | Path, *, rows: Mapping[str, Sequence[Any]] | None = None,
             release_extra: Mapping[str, Any] | None = None,
             curator: bool | Mapping[str, Any] = True, data_warnings: Sequence[str] = (),
             png: bool = True) -> dict[str, list[str]]:
        """Write the files ``privot repair`` writes into ``folder`` (created if needed).

        ``rows``: columns of the curator's own table (equal lengths) written as
        ``curator-repaired-scores.csv`` (curator-only; with ``curator=True``).
        ``release_extra``: public fields added to ``release.json``. ``curator``: also write
        ``curator-report.json`` (a mapping: merged into it, ``"seconds"`` merged with the
        release's timings). Returns the names written
        by audience ``{"publishable": [...], "curator": [...]}``.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        public = [QUANTILES_FILE]
        self.write_quantiles(folder / QUANTILES_FILE)
        if png:
            import matplotlib.pyplot as plt

            fig = self.plot()
            fig.savefig(folder / FIGURE_FILE, dpi=120)
            plt.close(fig)
            public.append(FIGURE_FILE)
        public.append("release.json")
        written_cur: list[str] = []
        if curator is not False:
            if rows is not None:
                _write_rows(folder / REPAIRED_FILE, rows)
                written_cur.append(REPAIRED_FILE)
            extra = dict(curator) if isinstance(curator, Mapping) else {}
            body = {**self.curator_report(), **extra, "data_warnings": list(data_warnings)}
            body["seconds"] = {**self.curator_report()["seconds"],
                               **dict(extra.get("seconds", {}))}
            written_cur.insert(0, CURATOR_REPORT)
            write_curator_report(folder, body, written_cur)
        write_release(folder, {**self.release_dict(), **dict(release_extra or {})}, public)
        return {"publishable": public, "curator": written_cur}


def _write_rows(path: Path, rows: Mapping[str, Sequence[Any]]) -> None:
    names = list(rows)
    columns = [list(np.asarray(rows[n]).tolist()) for n in names]
    if len({len(c) for c in columns}) > 1:
        raise InvalidParameterError("rows", {n: len(c) for n, c in zip(names, columns,
                                                                       strict=True)},
                                    "columns of equal length")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows(zip(*columns, strict=True))
