r"""Is a trained classifier degenerate? The curator's check of a (constant) model.

A DP-SGD run that did not learn often ends with a model predicting one class for
(almost) everyone: its accuracy is the base rate and every parity gap is zero, which a
fairness summary must never present as a success. :func:`degenerate_predictions` states
the rule and measures it.

The rule (public constants, no tuning on data):

* **constant model**: at least :data:`CONSTANT_SHARE` (99%) of the evaluated rows get
  the same predicted class (score above ``threshold`` or not);
* **constant within a group**: a group of the sensitive attribute whose selection rate
  is exactly 0 or 1 (reported beside, as ``constant_groups``; with both groups constant
  in the same class the model is constant).

A model flagged ``degenerate`` is reported with :data:`DEGENERATE_NOTE`: its parity gap
is small because it decides nothing, not because it is fair.

Privacy
-------
**Not differentially private**: it reads the exact scores and sensitive attributes of
the curator's data. Its result belongs to the curator (stderr, ``curator-`` files),
never to a release.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["CONSTANT_SHARE", "DEGENERATE_NOTE", "degenerate_predictions"]

#: Share of the evaluated rows in one predicted class from which a model is "constant".
CONSTANT_SHARE = 0.99
#: What a summary says of a degenerate model's parity gap.
DEGENERATE_NOTE = "constant model: parity gap 0 is not fairness"


def degenerate_predictions(scores: Any, sensitive: Any = None, *, threshold: float = 0.5,
                           share: float = CONSTANT_SHARE) -> dict[str, Any]:
    """The degenerate-model check of one set of scores (curator-only).

    Parameters
    ----------
    scores : array, shape (n,)
        Predicted probabilities of class 1; the decision is ``scores > threshold`` (as
        :func:`privot.evaluation.learning.fairness_report`).
    sensitive : array, shape (n,), optional
        Group of each row; gives the selection rate per group and ``constant_groups``.
    threshold : float, default 0.5
    share : float, default :data:`CONSTANT_SHARE`
        In (0.5, 1]: the share of one class from which the model is constant.

    Returns
    -------
    dict
        ``degenerate`` (bool), ``majority_class`` (0 or 1), ``majority_share``,
        ``selection_rate``, ``selection_rates`` (by group, when ``sensitive`` is given),
        ``constant_groups``, ``rule`` and, when degenerate, ``note``
        (:data:`DEGENERATE_NOTE`). JSON-able.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.size == 0:
        raise InvalidDataError("no scores to check: at least one row is needed")
    if not 0.5 < float(share) <= 1.0:
        raise InvalidParameterError("share", share, "a number in (0.5, 1]")
    pred = s > float(threshold)
    rate = float(pred.mean())
    majority = int(rate > 0.5)
    top = max(rate, 1.0 - rate)
    out: dict[str, Any] = {"majority_class": majority, "majority_share": top,
                           "selection_rate": rate, "threshold": float(threshold)}
    constant_groups: list[str] = []
    if sensitive is not None:
        a = np.asarray(sensitive).reshape(-1)
        if a.shape[0] != s.shape[0]:
            raise InvalidDataError(f"scores has {s.shape[0]} rows but sensitive has "
                                   f"{a.shape[0]}")
        rates = {}
        for value in sorted(set(a.tolist()), key=str):
            r = float(pred[a == value].mean())
            rates[str(value)] = r
            if r in (0.0, 1.0):
                constant_groups.append(str(value))
        out["selection_rates"] = rates
    out["constant_groups"] = constant_groups
    out["degenerate"] = bool(top >= float(share))
    out["rule"] = (f"degenerate when at least {float(share):.0%} of the evaluated rows get "
                   "one predicted class; constant_groups: groups whose selection rate is "
                   "0 or 1")
    if out["degenerate"]:
        out["note"] = DEGENERATE_NOTE
    return out
