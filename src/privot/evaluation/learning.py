"""Evaluation of a trained model: accuracy, fairness, distances, bootstrap intervals.

The learning part of :mod:`privot.evaluation` (``privot.learning.metrics`` re-exports
it), in three modules with one job each:

* :mod:`privot.evaluation.fairness` -- the metrics: errors (:func:`accuracy`,
  :func:`mean_squared_error`), fairlearn's disparity metrics with its definitions
  (:func:`selection_rates`, :func:`demographic_parity_difference`,
  :func:`demographic_parity_ratio`, :func:`equalized_odds_difference`,
  :func:`equalized_odds_ratio`), the indexes of paper 004 (App. B:
  :func:`disparate_impact`, :func:`equality_of_odds_indexes`) and the distances between
  the two groups' score distributions (:func:`ks_distance`,
  :func:`wasserstein_between_groups`);
* :mod:`privot.evaluation.learning_intervals` -- the percentile bootstrap
  (:func:`bootstrap_interval`, :class:`BootstrapEstimate`);
* this module -- one report of all of them with intervals (:func:`fairness_report` ->
  :class:`FairnessReport`), bootstrapped from resampling counts in one pass;

with the input conventions in :mod:`privot.evaluation.learning_inputs`. Every name is
importable from here.

Privacy
-------
**None of these metrics is differentially private.** They read the exact labels,
predictions and sensitive attributes of the curator's data (a training or a test set),
and a single row can change them. They belong in curator files (evaluation reports,
``curator-metrics.json``) only, never in a publishable release. Seeded bootstrap noise
(``rng``) is for reproducibility, not for privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.fairness import (
    _directions,
    _ks_sorted,
    accuracy,
    demographic_parity_difference,
    demographic_parity_ratio,
    disparate_impact,
    equality_of_odds_indexes,
    equalized_odds_difference,
    equalized_odds_ratio,
    ks_distance,
    mean_squared_error,
    selection_rates,
    wasserstein_between_groups,
)
from privot.evaluation.learning_inputs import (
    binary,
    float_array,
    group_codes,
    group_rates,
    ratio,
    same_length,
)
from privot.evaluation.learning_intervals import (
    BootstrapEstimate,
    _check_level,
    _finite_or_none,
    _percentile_interval,
    _resample_chunks,
    bootstrap_interval,
)

__all__ = [
    "accuracy",
    "mean_squared_error",
    "selection_rates",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "disparate_impact",
    "equality_of_odds_indexes",
    "ks_distance",
    "wasserstein_between_groups",
    "bootstrap_interval",
    "BootstrapEstimate",
    "FairnessReport",
    "fairness_report",
]

_TASKS = ("classification", "regression")


@dataclass(frozen=True, eq=False)
class FairnessReport:
    """Accuracy and fairness of a model's scores on the curator's data (not private).

    Fields that do not apply are ``None``: the classification metrics for a regression,
    the two-group metrics (``disparate_impact``, ``equality_of_odds``, ``ks``, ``w1``,
    ``w2``) when there are more than two groups, ``w1`` for scores with ``d > 1``.

    Attributes
    ----------
    task : {"classification", "regression"}
    n : int
        Number of rows.
    group_sizes : dict
        Rows per group (sorted group labels).
    level, n_resamples : float, int
        Of the bootstrap intervals.
    threshold : float or None
        Classification threshold (``y_pred = scores > threshold``).
    accuracy, mse : BootstrapEstimate or None
        Classification accuracy; regression mean squared error (:func:`mean_squared_error`).
    demographic_parity_difference, equalized_odds_difference : BootstrapEstimate or None
        fairlearn's definitions (classification).
    demographic_parity_ratio, equalized_odds_ratio : float or None
        fairlearn's definitions (classification).
    selection_rates : dict or None
        Per-group selection rate (classification).
    disparate_impact : float or None
        Paper eq. (17) (classification, two groups).
    equality_of_odds : (EO_0, EO_1) or None
        Paper eqs. (20), (19) (classification, two groups).
    ks : BootstrapEstimate or None
        KS statistic between the groups' scores; for ``d > 1`` the largest of the
        per-coordinate statistics.
    ks_by_coordinate : tuple of float or None
        Per-coordinate KS statistics (length ``d``).
    w1 : BootstrapEstimate or None
        W1 between the groups' 1-D scores.
    w2 : BootstrapEstimate or None
        W2 between the groups' scores (sliced W2 for ``d > 1``).
    """

    task: str
    n: int
    group_sizes: dict[Any, int]
    level: float
    n_resamples: int
    threshold: float | None = None
    accuracy: BootstrapEstimate | None = None
    mse: BootstrapEstimate | None = None
    demographic_parity_difference: BootstrapEstimate | None = None
    equalized_odds_difference: BootstrapEstimate | None = None
    demographic_parity_ratio: float | None = None
    equalized_odds_ratio: float | None = None
    selection_rates: dict[Any, float] | None = None
    disparate_impact: float | None = None
    equality_of_odds: tuple[float, float] | None = None
    ks: BootstrapEstimate | None = None
    ks_by_coordinate: tuple[float, ...] | None = None
    w1: BootstrapEstimate | None = None
    w2: BootstrapEstimate | None = None
    notes: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        parts = [f"task={self.task!r}", f"n={self.n}", f"groups={len(self.group_sizes)}"]
        for name in ("accuracy", "mse", "demographic_parity_difference",
                     "equalized_odds_difference", "ks", "w1", "w2"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        if self.disparate_impact is not None:
            parts.append(f"disparate_impact={self.disparate_impact:.4g}")
        return f"FairnessReport({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: plain floats and ints, string group keys, ``None`` (JSON
        ``null``) for fields that do not apply and for non-finite values."""
        out: dict[str, Any] = {
            "task": self.task, "n": int(self.n),
            "group_sizes": {str(g): int(c) for g, c in self.group_sizes.items()},
            "level": float(self.level), "n_resamples": int(self.n_resamples),
            "threshold": _finite_or_none(self.threshold),
        }
        for name in ("accuracy", "mse", "demographic_parity_difference",
                     "equalized_odds_difference", "ks", "w1", "w2"):
            value = getattr(self, name)
            out[name] = None if value is None else value.to_dict()
        for name in ("demographic_parity_ratio", "disparate_impact"):
            out[name] = _finite_or_none(getattr(self, name))
        out["equalized_odds_ratio"] = _finite_or_none(self.equalized_odds_ratio)
        out["selection_rates"] = (None if self.selection_rates is None else
                                  {str(g): float(r) for g, r in self.selection_rates.items()})
        out["equality_of_odds"] = (None if self.equality_of_odds is None else
                                   {"EO_0": _finite_or_none(self.equality_of_odds[0]),
                                    "EO_1": _finite_or_none(self.equality_of_odds[1])})
        out["ks_by_coordinate"] = (None if self.ks_by_coordinate is None else
                                   [_finite_or_none(v) for v in self.ks_by_coordinate])
        out["notes"] = list(self.notes)
        return out


class _ReportStat:
    """All bootstrapped metrics of a report, from resampling **counts**.

    A resample is given by how many times each row was drawn (``counts``, shape
    ``(b, n)`` for a chunk of ``b`` resamples). Group rates are weighted sums (one
    matrix product per chunk). KS and W1 are read off the cumulative counts of each
    group along the scores sorted once: :math:`F_a` at every sorted score is a cumulative
    sum, so a chunk needs no sort. W2 uses each group's pre-sorted values repeated by
    their counts and the rank coupling shared by all directions, as
    :func:`privot.ot.sliced_w2_squared` does.
    """

    def __init__(self, task: str, codes: np.ndarray, k: int, *, yt: np.ndarray,
                 pred: np.ndarray | None, scores: np.ndarray,
                 directions: np.ndarray | None) -> None:
        self.task, self.k, self.n = task, k, codes.shape[0]
        onehot = (codes[:, None] == np.arange(k)[None, :]).astype(np.float64)  # (n, k)
        if task == "classification":
            p = np.asarray(pred, dtype=np.float64)[:, None]
            pos = (yt == 1).astype(np.float64)[:, None]
            neg = 1.0 - pos
            self.cols = np.hstack([onehot, onehot * p, onehot * pos, onehot * pos * p,
                                   onehot * neg, onehot * neg * p])  # (n, 6k)
            self.correct = (yt == pred).astype(np.float64)
        else:
            self.cols = onehot
            self.sqerr = np.sum((scores - yt) ** 2, axis=1)
        self.two = k == 2
        if not self.two:
            return
        d = scores.shape[1]
        self.d = d
        # KS / W1: per coordinate, all rows sorted once
        self.cdf = []
        for c in range(d):
            order = np.argsort(scores[:, c], kind="stable")
            z = scores[order, c]
            ends = np.append(np.flatnonzero(np.diff(z) != 0), z.shape[0] - 1)
            self.cdf.append((order, codes[order] == 0, ends, np.diff(z)))
        # W2: per group, the columns (scores for d = 1, projections for d > 1) pre-sorted
        cols = scores if directions is None else scores @ directions.T
        self.take, self.sorted = [], []
        for g in (0, 1):
            rows = np.flatnonzero(codes == g)
            order = np.argsort(cols[rows], axis=0, kind="stable")  # (n_g, q)
            self.take.append(rows[order].T.ravel())  # row of each sorted value, column-major
            self.sorted.append(np.take_along_axis(cols[rows], order, axis=0).T.copy())

    def names(self) -> list[str]:
        first = (["accuracy", "demographic_parity_difference", "equalized_odds_difference"]
                 if self.task == "classification" else ["mse"])
        if not self.two:
            return first
        return first + ["ks"] + (["w1"] if self.d == 1 else []) + ["w2"]

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        c = counts.astype(np.float64)
        sums = c @ self.cols  # (b, 6k) or (b, k)
        k = self.k
        size = sums[:, :k]
        present = np.all(size > 0, axis=1)
        safe = np.where(size > 0, size, 1.0)
        if self.task == "classification":
            def rate(num: np.ndarray, den: np.ndarray) -> np.ndarray:
                return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)

            sel = sums[:, k:2 * k] / safe
            tpr = rate(sums[:, 3 * k:4 * k], sums[:, 2 * k:3 * k])
            fpr = rate(sums[:, 5 * k:6 * k], sums[:, 4 * k:5 * k])
            cols = [(c @ self.correct) / self.n, np.ptp(sel, axis=1),
                    np.maximum(np.ptp(tpr, axis=1), np.ptp(fpr, axis=1))]
        else:
            cols = [(c @ self.sqerr) / self.n]
        if self.two:
            ks = np.zeros(len(c))
            w1 = None
            for order, is0, ends, gaps in self.cdf:
                cs = c[:, order]
                f0 = np.cumsum(np.where(is0, cs, 0.0), axis=1) / safe[:, :1]
                f1 = np.cumsum(np.where(is0, 0.0, cs), axis=1) / safe[:, 1:2]
                gap = np.abs(f0 - f1)  # |F_0 - F_1| at each sorted score
                ks = np.maximum(ks, gap[:, ends].max(axis=1))
                w1 = gap[:, :-1] @ gaps  # integral of |F_0 - F_1| (used when d = 1)
            cols.append(ks)
            if self.d == 1:
                cols.append(w1)
            cols.append(np.array([self._w2(cnt) if ok else np.nan
                                  for cnt, ok in zip(counts, present, strict=True)]))
        out = np.column_stack(cols)
        out[~present] = np.nan
        return out

    def _w2(self, counts: np.ndarray) -> float:
        """W2 (sliced for d > 1) of one resample given by its row counts."""
        from privot.ot import rank_coupling

        reps = []
        for g in (0, 1):
            srt = self.sorted[g]  # (q, n_g), each row sorted
            flat = np.repeat(np.arange(srt.size), counts[self.take[g]])
            reps.append(srt.ravel()[flat].reshape(srt.shape[0], -1))  # (q, N_g), rows sorted
        x, y = reps
        n0, n1 = x.shape[1], y.shape[1]
        ri, rj, mass = rank_coupling(np.arange(1, n0 + 1, dtype=np.int64) * n1,
                                     np.arange(1, n1 + 1, dtype=np.int64) * n0)
        diff = x[:, ri] - y[:, rj]  # (q, K)
        w2sq = float(np.mean((diff * diff) @ (mass / float(n0 * n1))))
        return math.sqrt(max(w2sq, 0.0))


def _bootstrap_counts(stat: _ReportStat, n: int, n_resamples: int, level: float,
                      rng: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    est = stat(np.ones((1, n), dtype=np.int64))[0]
    gen = np.random.default_rng(rng)
    values = np.empty((n_resamples, est.shape[0]))
    row = 0
    for idx in _resample_chunks(n, n_resamples, gen):
        b = idx.shape[0]
        flat = (idx + (np.arange(b) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=b * n).reshape(b, n)
        values[row:row + b] = stat(counts)
        row += b
    low, high = _percentile_interval(values, level)
    return est, low, high


def fairness_report(y_true: Any, scores: Any, sensitive: Any, *, threshold: float = 0.5,
                    task: str = "classification", n_resamples: int = 1000,
                    level: float = 0.95, rng: np.random.Generator | int | None = None,
                    n_projections: int = 100) -> FairnessReport:
    """Every metric of this module on one data set, with bootstrap intervals.

    The bootstrap resamples rows jointly (as :func:`bootstrap_interval`), with the
    **same** resamples for all metrics; a resample missing a group is left out.
    Intervals are given for accuracy (or MSE), the demographic parity and equalized odds
    differences, KS, W1 and W2; ratios, selection rates and the paper's indexes are point
    estimates. Cost: one pass over the data per resample, without sorting; the sliced W2
    (regression with ``d > 1``) costs ``O(n * n_projections)`` per resample.

    Parameters
    ----------
    y_true : (n,) array of {0, 1}, or (n,) / (n, d) array for regression
        Labels (classification) or targets (regression, same shape as ``scores``).
    scores : (n,) or (n, 1) array, or (n, d) array for regression
        Classification: predicted probability of class 1; decisions are
        ``scores > threshold``. Regression: predictions.
    sensitive : (n,) array
        Group label of each row (first sorted label is ``A = 0``); the two-group metrics
        need exactly two groups and are ``None`` otherwise.
    threshold : float, default 0.5
        Classification threshold (the paper's :math:`I(g_\\theta(x) > 1/2)`).
    task : {"classification", "regression"}, default "classification"
    n_resamples : int, default 1000
    level : float in (0, 1), default 0.95
    rng : numpy.random.Generator or int, optional
        Bootstrap randomness (fresh entropy when None).
    n_projections : int, default 100
        Directions of the sliced W2 (regression with ``d > 1``), drawn from the fixed
        public seed 0 (as :func:`wasserstein_between_groups`).

    Returns
    -------
    FairnessReport
    """
    if task not in _TASKS:
        raise InvalidParameterError("task", task, f"one of {_TASKS}")
    B = check_int(n_resamples, "n_resamples", minimum=1)
    lvl = _check_level(level)
    L = check_int(n_projections, "n_projections", minimum=1)
    s = float_array(scores, "scores")
    n = s.shape[0]
    labels, codes = group_codes(sensitive, n, "sensitive")
    k = len(labels)
    sizes = {g: int(c) for g, c in zip(labels, np.bincount(codes, minlength=k), strict=True)}
    common: dict[str, Any] = {"task": task, "n": n, "group_sizes": sizes, "level": lvl,
                              "n_resamples": B}
    fields: dict[str, Any] = {}
    if task == "classification":
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)) \
                or not math.isfinite(float(threshold)):
            raise InvalidParameterError("threshold", threshold, "a finite number")
        if s.ndim == 2 and s.shape[1] != 1:
            raise InvalidDataError(
                f"scores must have shape (n,) or (n, 1) for classification, got {s.shape}")
        s2 = s.reshape(-1, 1)
        yt = binary(y_true, "y_true")
        same_length(n, scores=s2, y_true=yt)
        pred = (s2[:, 0] > float(threshold)).astype(np.int8)
        stat = _ReportStat(task, codes, k, yt=yt, pred=pred, scores=s2, directions=None)
        sel = group_rates(pred, codes, k)
        fields.update(
            threshold=float(threshold),
            demographic_parity_ratio=ratio(sel.min(), sel.max()),
            equalized_odds_ratio=equalized_odds_ratio(yt, pred, sensitive_features=codes),
            selection_rates={g: float(r) for g, r in zip(labels, sel, strict=True)})
        if k == 2:
            fields.update(disparate_impact=disparate_impact(pred, codes),
                          equality_of_odds=equality_of_odds_indexes(yt, pred, codes))
    else:
        s2 = s[:, None] if s.ndim == 1 else s
        yt = float_array(y_true, "y_true")
        yt2 = yt[:, None] if yt.ndim == 1 else yt
        same_length(n, scores=s2, y_true=yt2)
        if yt2.shape[1] != s2.shape[1]:
            raise InvalidDataError(f"y_true has {yt2.shape[1]} columns but scores has "
                                   f"{s2.shape[1]}; they must match")
        d = s2.shape[1]
        dirs = _directions(d, L, 0) if d > 1 else None
        stat = _ReportStat(task, codes, k, yt=yt2, pred=None, scores=s2, directions=dirs)
        if k == 2 and d > 1:
            fields["notes"] = (f"w2 is the sliced W2 over {L} directions (seed 0); ks is the "
                               "largest of the per-coordinate KS statistics",)
    est, low, high = _bootstrap_counts(stat, n, B, lvl, rng)
    for i, name in enumerate(stat.names()):
        fields[name] = BootstrapEstimate(float(est[i]), float(low[i]), float(high[i]))
    if k == 2:
        x, y = np.sort(s2[codes == 0], axis=0), np.sort(s2[codes == 1], axis=0)
        fields["ks_by_coordinate"] = tuple(_ks_sorted(x[:, c], y[:, c])
                                           for c in range(s2.shape[1]))
    return FairnessReport(**common, **fields)
