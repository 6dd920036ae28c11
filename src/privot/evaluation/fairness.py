"""Accuracy and fairness metrics of a trained model (the curator's evaluation).

Part of :mod:`privot.evaluation.learning` (which re-exports every name here). Three
families, numpy in (torch tensors accepted), plain Python floats out:

* **errors**: :func:`accuracy`, :func:`mean_squared_error`;
* **fairlearn's disparity metrics**, with exactly the definitions and argument convention
  of ``fairlearn.metrics`` (``method="between_groups"``, ``agg="worst_case"``) for any
  number of groups: :func:`selection_rates`, :func:`demographic_parity_difference`,
  :func:`demographic_parity_ratio`, :func:`equalized_odds_difference`,
  :func:`equalized_odds_ratio`;
* **the paper's indexes** (paper 004, App. B, eqs 17, 19, 20) and **distributional
  distances** between the two groups' score distributions: :func:`disparate_impact`,
  :func:`equality_of_odds_indexes`, :func:`ks_distance`,
  :func:`wasserstein_between_groups`.

Conventions: :mod:`privot.evaluation.learning_inputs`. Undefined ratios (a zero
denominator) are ``inf`` or ``nan`` as documented per function, without numpy warnings.

Privacy
-------
**None of these metrics is differentially private.** They read the exact labels,
predictions and sensitive attributes of the curator's data, and a single row can change
them: curator files only, never a publishable release.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.learning_inputs import (
    binary,
    column,
    conditional_rate,
    float_array,
    group_codes,
    group_rates,
    ratio,
    same_length,
    scores_1d,
    two_group_codes,
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
]

_AGGS = ("worst_case", "mean")


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
    yt = column(y_true, "y_true")
    yp = column(y_pred, "y_pred")
    same_length(yt.shape[0], y_true=yt, y_pred=yp)
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
    yt = float_array(y_true, "y_true")
    yp = float_array(y_pred, "y_pred")
    yt = yt[:, None] if yt.ndim == 1 else yt
    yp = yp[:, None] if yp.ndim == 1 else yp
    same_length(yt.shape[0], y_true=yt, y_pred=yp)
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
    yp = binary(y_pred, "y_pred")
    labels, codes = group_codes(sensitive, yp.shape[0], "sensitive")
    rates = group_rates(yp, codes, len(labels))
    return {g: float(r) for g, r in zip(labels, rates, strict=True)}


def _dp_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> np.ndarray:
    yt = column(y_true, "y_true")
    yp = binary(y_pred, "y_pred")
    same_length(yt.shape[0], y_true=yt, y_pred=yp)
    labels, codes = group_codes(sensitive_features, yp.shape[0])
    return group_rates(yp, codes, len(labels))


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
    return ratio(rates.min(), rates.max())


def _eo_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> tuple[np.ndarray, ...]:
    yt = binary(y_true, "y_true")
    yp = binary(y_pred, "y_pred")
    same_length(yt.shape[0], y_true=yt, y_pred=yp)
    labels, codes = group_codes(sensitive_features, yp.shape[0])
    k = len(labels)
    return group_rates(yp, codes, k, yt == 1), group_rates(yp, codes, k, yt == 0)


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
    ratios = (ratio(tpr.min(), tpr.max()), ratio(fpr.min(), fpr.max()))
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
    yp = binary(y_pred, "y_pred")
    codes = two_group_codes(sensitive, yp.shape[0])
    return ratio(conditional_rate(yp, codes == 0), conditional_rate(yp, codes == 1))


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
    yt = binary(y_true, "y_true")
    yp = binary(y_pred, "y_pred")
    same_length(yt.shape[0], y_true=yt, y_pred=yp)
    codes = two_group_codes(sensitive, yp.shape[0])
    out = []
    for j in (0, 1):
        num = conditional_rate(yp, (codes == 0) & (yt == j))
        den = conditional_rate(yp, (codes == 1) & (yt == j))
        out.append(math.nan if math.isnan(num) or math.isnan(den) else ratio(num, den))
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
    s = scores_1d(scores, "scores")
    codes = two_group_codes(sensitive, s.shape[0])
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
    s = float_array(scores, "scores")
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    codes = two_group_codes(sensitive, s.shape[0])
    x, y = s[codes == 0], s[codes == 1]
    if s.ndim == 1:
        return _w1_sorted(np.sort(x), np.sort(y)) if p == 1 else _w2_1d(x, y)
    if p != 2:
        raise InvalidParameterError(
            "p", p, f"2 for scores with d = {s.shape[1]} > 1 columns (sliced W2)")
    L = check_int(n_projections, "n_projections", minimum=1)
    return _sliced_w2(x, y, _directions(s.shape[1], L, rng))
