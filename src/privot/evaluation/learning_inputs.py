"""The input conventions of the learning metrics (:mod:`privot.evaluation.learning`).

Numpy in (torch tensors accepted: detached and moved to the CPU), shapes checked, and
:class:`~privot.errors.InvalidDataError` naming the argument otherwise. Labels and
predictions that must be binary take values in ``{0, 1}`` (or booleans). ``sensitive``
holds one group label per row (any sortable values); :func:`group_codes` numbers the
sorted labels ``0..k-1``, so the two-group metrics call the *first* sorted label
"A = 0". Also the per-group rate helpers the metrics share.

Privacy
-------
No computation of its own; the values these helpers read are the curator's exact data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privot.errors import InvalidDataError

__all__ = [
    "binary",
    "column",
    "conditional_rate",
    "float_array",
    "group_codes",
    "group_rates",
    "ratio",
    "same_length",
    "scores_1d",
    "to_numpy",
    "two_group_codes",
]


def to_numpy(x: Any) -> np.ndarray:
    """A numpy array from a numpy-like or a torch tensor (detached, on the CPU)."""
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def column(x: Any, name: str) -> np.ndarray:
    """Any 1-D array, or an ``(n, 1)`` one read as ``(n,)``; refuse empty input."""
    arr = to_numpy(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidDataError(f"{name} must have shape (n,) or (n, 1), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidDataError(f"{name} is empty; at least one row is needed")
    return arr


def float_array(x: Any, name: str, *, max_ndim: int = 2) -> np.ndarray:
    """A finite float array of shape ``(n,)`` or ``(n, d)`` with ``n >= 1``."""
    arr = to_numpy(x)
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


def scores_1d(x: Any, name: str) -> np.ndarray:
    """Finite float scores of shape ``(n,)`` (an ``(n, 1)`` input is flattened)."""
    arr = float_array(x, name)
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise InvalidDataError(
                f"{name} must be 1-D scores, shape (n,) or (n, 1), got shape {arr.shape}")
        arr = arr[:, 0]
    return arr


def binary(x: Any, name: str) -> np.ndarray:
    """Values in ``{0, 1}`` (or booleans) as an int8 array of shape ``(n,)``."""
    arr = column(x, name)
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


def same_length(n: int, **arrays: np.ndarray) -> None:
    """Refuse an array (named by its keyword) whose first dimension is not ``n``."""
    for name, arr in arrays.items():
        if arr.shape[0] != n:
            first = next(iter(arrays))
            raise InvalidDataError(
                f"{name} has {arr.shape[0]} rows but {first} has {n}; lengths must match")


def group_codes(sensitive: Any, n: int, name: str = "sensitive_features",
            *, minimum: int = 1) -> tuple[list[Any], np.ndarray]:
    """Sorted group labels (Python scalars) and each row's group code in ``0..k-1``."""
    arr = column(sensitive, name)
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


def two_group_codes(sensitive: Any, n: int, name: str = "sensitive") -> np.ndarray:
    """Group codes in ``{0, 1}`` for exactly two groups (first sorted label = 0)."""
    labels, codes = group_codes(sensitive, n, name)
    if len(labels) != 2:
        raise InvalidDataError(
            f"{name} must have exactly two groups, got {len(labels)}: {labels[:10]}")
    return codes


def ratio(num: float, den: float) -> float:
    """``num / den``; ``inf`` for ``x / 0`` with ``x > 0`` and ``nan`` for ``0 / 0``."""
    if den == 0:
        return math.inf if num > 0 else math.nan
    return float(num) / float(den)


def group_rates(pred: np.ndarray, codes: np.ndarray, k: int,
                 mask: np.ndarray | None = None) -> np.ndarray:
    """Per-group mean of ``pred`` over rows in ``mask`` (0 for an empty cell, like sklearn)."""
    if mask is not None:
        pred, codes = pred[mask], codes[mask]
    count = np.bincount(codes, minlength=k).astype(np.float64)
    hits = np.bincount(codes, weights=pred.astype(np.float64), minlength=k)
    out = np.zeros(k)
    np.divide(hits, count, out=out, where=count > 0)
    return out


def conditional_rate(pred: np.ndarray, mask: np.ndarray) -> float:
    """``P(pred = 1 | mask)``; ``nan`` when no row is in ``mask``."""
    m = int(mask.sum())
    return float(pred[mask].sum()) / m if m else math.nan
