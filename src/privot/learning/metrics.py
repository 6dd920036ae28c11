"""Accuracy and fairness metrics for models trained with :mod:`privot.learning`.

Three families, all numpy in, plain Python floats (or numpy arrays) out; torch tensors
are accepted and converted:

* **errors**: :func:`accuracy`, :func:`mean_squared_error`;
* **fairlearn's disparity metrics**, with exactly the definitions and argument convention
  of ``fairlearn.metrics`` (``method="between_groups"``, ``agg="worst_case"``) for any
  number of groups: :func:`selection_rates`, :func:`demographic_parity_difference`,
  :func:`demographic_parity_ratio`, :func:`equalized_odds_difference`,
  :func:`equalized_odds_ratio`;
* **the paper's indexes** (paper 004, App. B, eqs 17, 19, 20) and **distributional
  distances** between the two groups' score distributions: :func:`disparate_impact`,
  :func:`equality_of_odds_indexes`, :func:`ks_distance`,
  :func:`wasserstein_between_groups`;

plus a percentile bootstrap (:func:`bootstrap_interval`) and one report of all of them
with intervals (:func:`fairness_report` -> :class:`FairnessReport`).

Conventions: labels and predictions that must be binary take values in ``{0, 1}`` (or
booleans); 1 is the positive class. ``sensitive`` holds one group label per row (any
sortable values: ints, strings, booleans). The two-group metrics call the *first* of the
sorted group labels "A = 0" and the second "A = 1" (for ``{0, 1}`` this is the natural
order). Undefined ratios (a zero denominator) are ``inf`` or ``nan`` as documented per
function, without numpy warnings.

Privacy
-------
**None of these metrics is differentially private.** They read the exact labels,
predictions and sensitive attributes of the curator's data (a training or a test set),
and a single row can change them. They belong in curator files (evaluation reports,
``curator-report.json``) only, never in a publishable release. Seeded bootstrap noise
(``rng``) is for reproducibility, not for privacy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError

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
_AGGS = ("worst_case", "mean")
# Bootstrap rows are gathered in chunks of about this many indices (memory bound).
_CHUNK_INDICES = 1_000_000


# --------------------------------------------------------------------------- helpers


def _to_numpy(x: Any) -> np.ndarray:
    """A numpy array from a numpy-like or a torch tensor (detached, on the CPU)."""
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _column(x: Any, name: str) -> np.ndarray:
    """Any 1-D array, or an ``(n, 1)`` one read as ``(n,)``; refuse empty input."""
    arr = _to_numpy(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidDataError(f"{name} must have shape (n,) or (n, 1), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidDataError(f"{name} is empty; at least one row is needed")
    return arr


def _float_array(x: Any, name: str, *, max_ndim: int = 2) -> np.ndarray:
    """A finite float array of shape ``(n,)`` or ``(n, d)`` with ``n >= 1``."""
    arr = _to_numpy(x)
    try:
        arr = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"{name} must be numeric, got dtype {arr.dtype}") from exc
    if arr.ndim < 1 or arr.ndim > max_ndim:
        shapes = "(n,)" if max_ndim == 1 else "(n,) or (n, d)"
        raise InvalidDataError(f"{name} must have shape {shapes}, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.size == 0:
        raise InvalidDataError(f"{name} is empty (shape {arr.shape}); at least one row is needed")
    if not np.all(np.isfinite(arr)):
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise InvalidDataError(f"{name} has {bad} non-finite value(s) (NaN or inf)")
    return arr


def _scores_1d(x: Any, name: str) -> np.ndarray:
    """Finite float scores of shape ``(n,)`` (an ``(n, 1)`` input is flattened)."""
    arr = _float_array(x, name)
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise InvalidDataError(
                f"{name} must be 1-D scores, shape (n,) or (n, 1), got shape {arr.shape}")
        arr = arr[:, 0]
    return arr


def _binary(x: Any, name: str) -> np.ndarray:
    """Values in ``{0, 1}`` (or booleans) as an int8 array of shape ``(n,)``."""
    arr = _column(x, name)
    if arr.dtype == bool:
        return arr.astype(np.int8)
    try:
        num = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"{name} must be binary (values in {{0, 1}}), got dtype "
                               f"{arr.dtype}") from exc
    ok = (num == 0) | (num == 1)
    if not np.all(ok):
        bad = np.unique(arr[~ok])[:5].tolist()
        raise InvalidDataError(
            f"{name} must be binary with values in {{0, 1}}; found other values, e.g. {bad}")
    return num.astype(np.int8)


def _same_length(n: int, **arrays: np.ndarray) -> None:
    for name, arr in arrays.items():
        if arr.shape[0] != n:
            first = next(iter(arrays))
            raise InvalidDataError(
                f"{name} has {arr.shape[0]} rows but {first} has {n}; lengths must match")


def _groups(sensitive: Any, n: int, name: str = "sensitive_features",
            *, minimum: int = 1) -> tuple[list[Any], np.ndarray]:
    """Sorted group labels (Python scalars) and each row's group code in ``0..k-1``."""
    arr = _column(sensitive, name)
    if arr.shape[0] != n:
        raise InvalidDataError(
            f"{name} has {arr.shape[0]} rows but the predictions have {n}; lengths must match")
    try:
        labels, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise InvalidDataError(f"{name} must hold sortable group labels of one type") from exc
    if labels.dtype.kind == "f" and np.any(np.isnan(labels)):
        raise InvalidDataError(f"{name} has NaN group labels")
    if len(labels) < minimum:
        raise InvalidDataError(
            f"{name} has {len(labels)} group(s) {labels.tolist()}; at least {minimum} "
            "are needed")
    return [v.item() if isinstance(v, np.generic) else v for v in labels], codes.reshape(-1)


def _two_groups(sensitive: Any, n: int, name: str = "sensitive") -> np.ndarray:
    """Group codes in ``{0, 1}`` for exactly two groups (first sorted label = 0)."""
    labels, codes = _groups(sensitive, n, name)
    if len(labels) != 2:
        raise InvalidDataError(
            f"{name} must have exactly two groups, got {len(labels)}: {labels[:10]}")
    return codes


def _ratio(num: float, den: float) -> float:
    """``num / den``; ``inf`` for ``x / 0`` with ``x > 0`` and ``nan`` for ``0 / 0``."""
    if den == 0:
        return math.inf if num > 0 else math.nan
    return float(num) / float(den)


def _group_rates(pred: np.ndarray, codes: np.ndarray, k: int,
                 mask: np.ndarray | None = None) -> np.ndarray:
    """Per-group mean of ``pred`` over rows in ``mask`` (0 for an empty cell, like sklearn)."""
    if mask is not None:
        pred, codes = pred[mask], codes[mask]
    count = np.bincount(codes, minlength=k).astype(np.float64)
    hits = np.bincount(codes, weights=pred.astype(np.float64), minlength=k)
    out = np.zeros(k)
    np.divide(hits, count, out=out, where=count > 0)
    return out


def _cond_rate(pred: np.ndarray, mask: np.ndarray) -> float:
    """``P(pred = 1 | mask)``; ``nan`` when no row is in ``mask``."""
    m = int(mask.sum())
    return float(pred[mask].sum()) / m if m else math.nan


# --------------------------------------------------------------------------- errors


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Fraction of rows where the prediction equals the label.

    Parameters
    ----------
    y_true, y_pred : (n,) arrays
        Labels and predictions (any comparable values; ``(n, 1)`` is read as ``(n,)``).

    Returns
    -------
    float
        :math:`\\frac1n \\sum_i I(\\hat y_i = y_i)` in ``[0, 1]``.
    """
    yt = _column(y_true, "y_true")
    yp = _column(y_pred, "y_pred")
    _same_length(yt.shape[0], y_true=yt, y_pred=yp)
    return float(np.mean(yt == yp))


def mean_squared_error(y_true: Any, y_pred: Any) -> float:
    """Mean over rows of the squared Euclidean norm of the error.

    For multi-output targets this is :math:`\\frac1n \\sum_i \\|\\hat y_i - y_i\\|_2^2`
    (the paper's regression loss), i.e. ``d`` times scikit-learn's
    ``mean_squared_error``, which also averages over the ``d`` outputs.

    Parameters
    ----------
    y_true, y_pred : (n,) or (n, d) arrays
        Targets and predictions of the same shape (``(n,)`` and ``(n, 1)`` are the same).

    Returns
    -------
    float
    """
    yt = _float_array(y_true, "y_true")
    yp = _float_array(y_pred, "y_pred")
    yt = yt[:, None] if yt.ndim == 1 else yt
    yp = yp[:, None] if yp.ndim == 1 else yp
    _same_length(yt.shape[0], y_true=yt, y_pred=yp)
    if yt.shape[1] != yp.shape[1]:
        raise InvalidDataError(
            f"y_pred has {yp.shape[1]} columns but y_true has {yt.shape[1]}; they must match")
    return float(np.mean(np.sum((yp - yt) ** 2, axis=1)))


# --------------------------------------------------------------------------- fairlearn's


def selection_rates(y_pred: Any, sensitive: Any) -> dict[Any, float]:
    """Selection rate :math:`P(\\hat Y = 1 \\mid A = a)` of each group.

    Parameters
    ----------
    y_pred : (n,) array of {0, 1}
        Binary predictions.
    sensitive : (n,) array
        Group label of each row.

    Returns
    -------
    dict
        Group label (a Python scalar) to its selection rate, in sorted label order.
    """
    yp = _binary(y_pred, "y_pred")
    labels, codes = _groups(sensitive, yp.shape[0], "sensitive")
    rates = _group_rates(yp, codes, len(labels))
    return {g: float(r) for g, r in zip(labels, rates, strict=True)}


def _dp_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> np.ndarray:
    yt = _column(y_true, "y_true")
    yp = _binary(y_pred, "y_pred")
    _same_length(yt.shape[0], y_true=yt, y_pred=yp)
    labels, codes = _groups(sensitive_features, yp.shape[0])
    return _group_rates(yp, codes, len(labels))


def demographic_parity_difference(y_true: Any, y_pred: Any, *,
                                  sensitive_features: Any) -> float:
    """Largest minus smallest group selection rate (fairlearn's definition).

    Same as ``fairlearn.metrics.demographic_parity_difference`` with
    ``method="between_groups"``: :math:`\\max_a P(\\hat Y=1|A=a) - \\min_a P(\\hat Y=1|A=a)`.

    Parameters
    ----------
    y_true : (n,) array
        Labels; only their number is used (fairlearn's argument convention).
    y_pred : (n,) array of {0, 1}
        Binary predictions.
    sensitive_features : (n,) array
        Group label of each row (any number of groups >= 1; one group gives 0).

    Returns
    -------
    float
        In ``[0, 1]``; 0 means equal selection rates.
    """
    rates = _dp_rates(y_true, y_pred, sensitive_features)
    return float(rates.max() - rates.min())


def demographic_parity_ratio(y_true: Any, y_pred: Any, *, sensitive_features: Any) -> float:
    """Smallest over largest group selection rate (fairlearn's definition).

    Same arguments as :func:`demographic_parity_difference`.

    Returns
    -------
    float
        In ``[0, 1]``; 1 means equal selection rates; ``nan`` when no group selects
        anyone (0 / 0, as fairlearn).
    """
    rates = _dp_rates(y_true, y_pred, sensitive_features)
    return _ratio(rates.min(), rates.max())


def _eo_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> tuple[np.ndarray, ...]:
    yt = _binary(y_true, "y_true")
    yp = _binary(y_pred, "y_pred")
    _same_length(yt.shape[0], y_true=yt, y_pred=yp)
    labels, codes = _groups(sensitive_features, yp.shape[0])
    k = len(labels)
    return _group_rates(yp, codes, k, yt == 1), _group_rates(yp, codes, k, yt == 0)


def _check_agg(agg: str) -> None:
    if agg not in _AGGS:
        raise InvalidParameterError("agg", agg, f"one of {_AGGS}")


def equalized_odds_difference(y_true: Any, y_pred: Any, *, sensitive_features: Any,
                              agg: str = "worst_case") -> float:
    """Largest between-group gap of true- or false-positive rates (fairlearn's definition).

    Same as ``fairlearn.metrics.equalized_odds_difference`` with
    ``method="between_groups"``: the larger (``agg="worst_case"``) or the mean
    (``agg="mean"``) of the TPR difference
    :math:`\\max_a P(\\hat Y=1|A=a,Y=1) - \\min_a P(\\hat Y=1|A=a,Y=1)` and the FPR
    difference (same with :math:`Y = 0`). As in fairlearn (scikit-learn's normalised
    confusion matrix), a group with no row of a label value has rate 0 for that label.

    Parameters
    ----------
    y_true : (n,) array of {0, 1}
        Binary labels.
    y_pred : (n,) array of {0, 1}
        Binary predictions.
    sensitive_features : (n,) array
        Group label of each row (any number of groups >= 1).
    agg : {"worst_case", "mean"}, default "worst_case"

    Returns
    -------
    float
        In ``[0, 1]``; 0 means equalized odds hold exactly.
    """
    _check_agg(agg)
    tpr, fpr = _eo_rates(y_true, y_pred, sensitive_features)
    diffs = (tpr.max() - tpr.min(), fpr.max() - fpr.min())
    return float(max(diffs) if agg == "worst_case" else np.mean(diffs))


def equalized_odds_ratio(y_true: Any, y_pred: Any, *, sensitive_features: Any,
                         agg: str = "worst_case") -> float:
    """Smaller (or mean) of the TPR and FPR min/max ratios (fairlearn's definition).

    Same arguments as :func:`equalized_odds_difference`. Each ratio is
    :math:`\\min_a r_a / \\max_a r_a`; ``agg="worst_case"`` takes the smaller one.

    Returns
    -------
    float
        In ``[0, 1]``; 1 means equalized odds hold exactly. A ratio is ``nan`` when it
        is 0 / 0 (no group has a positive prediction among the rows of that label); the
        result then follows fairlearn exactly: ``"worst_case"`` is Python's
        ``min(tpr_ratio, fpr_ratio)`` (``nan`` if the TPR ratio is ``nan``, the TPR
        ratio if only the FPR ratio is), ``"mean"`` skips a ``nan`` (pandas' ``mean``).
    """
    _check_agg(agg)
    tpr, fpr = _eo_rates(y_true, y_pred, sensitive_features)
    ratios = (_ratio(tpr.min(), tpr.max()), _ratio(fpr.min(), fpr.max()))
    if agg == "worst_case":
        return float(min(ratios))  # fairlearn's (order-dependent) rule for a NaN
    finite = [r for r in ratios if not math.isnan(r)]
    return float(np.mean(finite)) if finite else math.nan


# --------------------------------------------------------------------------- paper's indexes


def disparate_impact(y_pred: Any, sensitive: Any) -> float:
    """Disparate impact of paper 004, App. B, eq. (17).

    .. math::

        DI(G) = \\frac{P(G(X) = 1 \\mid A = 0)}{P(G(X) = 1 \\mid A = 1)} .

    Parameters
    ----------
    y_pred : (n,) array of {0, 1}
        Binary decisions :math:`G(X)`.
    sensitive : (n,) array
        Exactly two groups; the first sorted label is ``A = 0``.

    Returns
    -------
    float
        1 means statistical parity. ``inf`` when group 1 is never selected but group 0
        is; ``nan`` when neither is (0 / 0).
    """
    yp = _binary(y_pred, "y_pred")
    codes = _two_groups(sensitive, yp.shape[0])
    return _ratio(_cond_rate(yp, codes == 0), _cond_rate(yp, codes == 1))


def equality_of_odds_indexes(y_true: Any, y_pred: Any, sensitive: Any) -> tuple[float, float]:
    """The equality-of-odds indexes of paper 004, App. B, eqs. (19) and (20).

    .. math::

        EO_j(G) = \\frac{P(G(X) = 1 \\mid A = 0, Y = j)}{P(G(X) = 1 \\mid A = 1, Y = j)},
        \\qquad j = 0, 1 .

    Parameters
    ----------
    y_true : (n,) array of {0, 1}
        Binary labels :math:`Y`.
    y_pred : (n,) array of {0, 1}
        Binary decisions :math:`G(X)`.
    sensitive : (n,) array
        Exactly two groups; the first sorted label is ``A = 0``.

    Returns
    -------
    (EO_0, EO_1) : tuple of float
        1 means parity. Each is ``inf`` for ``x / 0`` with ``x > 0`` and ``nan`` for
        0 / 0 or when a cell ``(A = a, Y = j)`` has no row (its rate is undefined).
    """
    yt = _binary(y_true, "y_true")
    yp = _binary(y_pred, "y_pred")
    _same_length(yt.shape[0], y_true=yt, y_pred=yp)
    codes = _two_groups(sensitive, yp.shape[0])
    out = []
    for j in (0, 1):
        num = _cond_rate(yp, (codes == 0) & (yt == j))
        den = _cond_rate(yp, (codes == 1) & (yt == j))
        out.append(math.nan if math.isnan(num) or math.isnan(den) else _ratio(num, den))
    return out[0], out[1]


# --------------------------------------------------------------------------- distances


def _ks_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sample KS statistic of sorted samples (scipy's ``ks_2samp`` statistic)."""
    z = np.concatenate([x, y])
    fx = np.searchsorted(x, z, side="right") / x.shape[0]
    fy = np.searchsorted(y, z, side="right") / y.shape[0]
    return float(np.max(np.abs(fx - fy)))


def _w1_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """W1 of sorted samples: the integral of ``|F_x - F_y|`` (scipy's formula)."""
    z = np.sort(np.concatenate([x, y]), kind="stable")  # merges two sorted runs
    gaps = np.diff(z)
    fx = np.searchsorted(x, z[:-1], side="right") / x.shape[0]
    fy = np.searchsorted(y, z[:-1], side="right") / y.shape[0]
    return float(np.sum(np.abs(fx - fy) * gaps))


def _w2_1d(x: np.ndarray, y: np.ndarray) -> float:
    from privot.ot import w2_squared_1d

    return math.sqrt(max(w2_squared_1d(x, y), 0.0))


def _directions(d: int, n_projections: int, rng: Any) -> np.ndarray:
    """The public directions of the sliced W2: ``(L, d)`` unit rows from seed ``rng``."""
    from privot.ot import random_directions

    return random_directions(d, n_projections=n_projections, rng=rng)


def _sliced_w2(x: np.ndarray, y: np.ndarray, directions: np.ndarray) -> float:
    from privot.ot import sliced_w2_squared

    return math.sqrt(max(sliced_w2_squared(x, y, directions=directions), 0.0))


def ks_distance(scores: Any, sensitive: Any) -> float:
    """Two-sample Kolmogorov-Smirnov statistic between the two groups' scores.

    :math:`\\sup_z |F_0(z) - F_1(z)|` for the empirical CDFs of the scores of the two
    groups (the statistic of ``scipy.stats.ks_2samp``; no p-value).

    Parameters
    ----------
    scores : (n,) or (n, 1) array
        1-D scores (e.g. predicted probabilities).
    sensitive : (n,) array
        Exactly two groups.

    Returns
    -------
    float
        In ``[0, 1]``; 0 means identical empirical distributions.
    """
    s = _scores_1d(scores, "scores")
    codes = _two_groups(sensitive, s.shape[0])
    return _ks_sorted(np.sort(s[codes == 0]), np.sort(s[codes == 1]))


def wasserstein_between_groups(scores: Any, sensitive: Any, *, p: int = 2,
                               n_projections: int = 100, rng: int = 0) -> float:
    """:math:`W_p` between the empirical score distributions of the two groups.

    For 1-D scores: ``p=1`` is the integral of :math:`|F_0 - F_1|` (same as
    ``scipy.stats.wasserstein_distance``) and ``p=2`` is the square root of
    :func:`privot.ot.w2_squared_1d` (closed form, paper 004 Prop. 3.1).
    For scores of shape ``(n, d)`` with ``d > 1`` only ``p=2`` is allowed and the value
    is the **sliced** W2, the square root of :func:`privot.ot.sliced_w2_squared` over
    ``n_projections`` directions drawn from the fixed public seed ``rng`` (so repeated
    calls use the same directions and are comparable).

    Parameters
    ----------
    scores : (n,) or (n, d) array
        Scores or predictions.
    sensitive : (n,) array
        Exactly two groups.
    p : {1, 2}, default 2
    n_projections : int, default 100
        Number of directions of the sliced estimate (``d > 1`` only).
    rng : int, default 0
        Seed of the directions (``d > 1`` only); public, not a privacy noise source.

    Returns
    -------
    float
        :math:`W_p \\ge 0` (not squared).
    """
    if isinstance(p, bool) or p not in (1, 2):
        raise InvalidParameterError("p", p, "1 or 2")
    s = _float_array(scores, "scores")
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    codes = _two_groups(sensitive, s.shape[0])
    x, y = s[codes == 0], s[codes == 1]
    if s.ndim == 1:
        return _w1_sorted(np.sort(x), np.sort(y)) if p == 1 else _w2_1d(x, y)
    if p != 2:
        raise InvalidParameterError(
            "p", p, f"2 for scores with d = {s.shape[1]} > 1 columns (sliced W2)")
    L = check_int(n_projections, "n_projections", minimum=1)
    return _sliced_w2(x, y, _directions(s.shape[1], L, rng))


# --------------------------------------------------------------------------- bootstrap


def _check_level(level: Any) -> float:
    allowed = "a number in (0, 1)"
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise InvalidParameterError("level", level, allowed)
    v = float(level)
    if not 0.0 < v < 1.0:
        raise InvalidParameterError("level", level, allowed)
    return v


def _resample_chunks(n: int, n_resamples: int, gen: np.random.Generator):
    """Yield ``(b, n)`` index arrays, ``n_resamples`` rows in total."""
    step = max(1, _CHUNK_INDICES // max(n, 1))
    done = 0
    while done < n_resamples:
        b = min(step, n_resamples - done)
        yield gen.integers(0, n, size=(b, n))
        done += b


def _percentile_interval(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-column percentile interval of ``(B, m)`` resampled values, non-finite ones
    left out; an error when more than half of a column is left out."""
    ok = np.isfinite(values)
    if np.any(ok.sum(axis=0) < max(1, values.shape[0] // 2)):
        raise InvalidDataError(
            "the statistic is undefined (NaN, inf or a missing group) on more than half of "
            "the bootstrap resamples; a group is probably too small")
    alpha = (1.0 - level) / 2.0
    vals = np.where(ok, values, np.nan)
    low, high = np.nanquantile(vals, [alpha, 1.0 - alpha], axis=0)
    return low, high


def _bootstrap(stat: Callable[..., Any], arrays: Sequence[np.ndarray], n_resamples: int,
               level: float, rng: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint row bootstrap of a vector statistic: estimates, lows and highs, shape (m,)."""
    est = np.atleast_1d(np.asarray(stat(*arrays), dtype=np.float64))
    gen = np.random.default_rng(rng)
    n = arrays[0].shape[0]
    values = np.full((n_resamples, est.shape[0]), np.nan)
    row = 0
    for idx in _resample_chunks(n, n_resamples, gen):
        for i in idx:
            try:
                values[row] = stat(*(a[i] for a in arrays))
            except InvalidDataError:  # e.g. a group absent from this resample
                pass
            row += 1
    low, high = _percentile_interval(values, level)
    return est, low, high


def bootstrap_interval(statistic: Callable[..., float], *arrays: Any, n_resamples: int = 1000,
                       level: float = 0.95,
                       rng: np.random.Generator | int | None = None) -> tuple[float, float, float]:
    """Percentile bootstrap interval of a statistic of row-aligned arrays.

    Each resample draws ``n`` row indices with replacement and applies them to **all**
    arrays jointly (rows stay together). Indices are drawn in vectorised chunks; the
    statistic is called once per resample. A resample on which the statistic raises
    :class:`~privot.errors.InvalidDataError` (e.g. a group absent from it) or returns a
    non-finite value is left out; more than half left out is an error.

    Parameters
    ----------
    statistic : callable
        ``statistic(*arrays) -> float``.
    *arrays : arrays with the same first dimension ``n``
        E.g. ``y_true, y_pred, sensitive``.
    n_resamples : int, default 1000
    level : float in (0, 1), default 0.95
        Coverage of the two-sided interval.
    rng : numpy.random.Generator or int, optional
        Resampling randomness (fresh entropy when None); seed it for reproducibility.

    Returns
    -------
    (estimate, low, high) : tuple of float
        ``statistic(*arrays)`` and the ``(1 - level) / 2`` and ``(1 + level) / 2``
        quantiles of the resampled statistics.
    """
    if not callable(statistic):
        raise InvalidParameterError("statistic", statistic, "a callable")
    B = check_int(n_resamples, "n_resamples", minimum=1)
    lvl = _check_level(level)
    if not arrays:
        raise InvalidDataError("arrays: at least one array is needed")
    arrs = [_to_numpy(a) for a in arrays]
    for k, a in enumerate(arrs):
        if a.ndim == 0 or a.shape[0] == 0:
            raise InvalidDataError(f"arrays[{k}] is empty or a scalar (shape {a.shape})")
    n = arrs[0].shape[0]
    for k, a in enumerate(arrs[1:], start=1):
        if a.shape[0] != n:
            raise InvalidDataError(
                f"arrays[{k}] has {a.shape[0]} rows but arrays[0] has {n}; lengths must match")

    def scalar(*xs: np.ndarray) -> float:
        return float(statistic(*xs))

    est, low, high = _bootstrap(scalar, arrs, B, lvl, rng)
    return float(est[0]), float(low[0]), float(high[0])


# --------------------------------------------------------------------------- report


def _finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class BootstrapEstimate:
    """A point estimate with its percentile bootstrap interval ``[low, high]``."""

    estimate: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        """Plain floats; a non-finite value becomes ``None`` (JSON ``null``)."""
        return {"estimate": _finite_or_none(self.estimate), "low": _finite_or_none(self.low),
                "high": _finite_or_none(self.high)}

    def __str__(self) -> str:
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}]"


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
    s = _float_array(scores, "scores")
    n = s.shape[0]
    labels, codes = _groups(sensitive, n, "sensitive")
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
        yt = _binary(y_true, "y_true")
        _same_length(n, scores=s2, y_true=yt)
        pred = (s2[:, 0] > float(threshold)).astype(np.int8)
        stat = _ReportStat(task, codes, k, yt=yt, pred=pred, scores=s2, directions=None)
        sel = _group_rates(pred, codes, k)
        fields.update(
            threshold=float(threshold),
            demographic_parity_ratio=_ratio(sel.min(), sel.max()),
            equalized_odds_ratio=equalized_odds_ratio(yt, pred, sensitive_features=codes),
            selection_rates={g: float(r) for g, r in zip(labels, sel, strict=True)})
        if k == 2:
            fields.update(disparate_impact=disparate_impact(pred, codes),
                          equality_of_odds=equality_of_odds_indexes(yt, pred, codes))
    else:
        s2 = s[:, None] if s.ndim == 1 else s
        yt = _float_array(y_true, "y_true")
        yt2 = yt[:, None] if yt.ndim == 1 else yt
        _same_length(n, scores=s2, y_true=yt2)
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
