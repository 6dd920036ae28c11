"""Input validation shared by every module: one place, one wording.

Each helper returns the validated value (converted to the canonical type) or raises
:class:`~privot.errors.InvalidParameterError` / :class:`~privot.errors.InvalidDataError`
naming the parameter, the value and what is allowed. No ``assert``: validation must
survive ``python -O``.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from privot.errors import InvalidDataError, InvalidParameterError, plain_repr

__all__ = [
    "renamed_argument",
    "check_group_sequence",
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_int",
    "check_finite_array",
    "check_points",
    "check_weights",
]


def _as_float(name: str, value: object, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise InvalidParameterError(name, value, allowed)
    return float(value)


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """A privacy parameter epsilon: a finite real number > 0."""
    allowed = "a finite number > 0"
    eps = _as_float(name, epsilon, allowed)
    if not math.isfinite(eps) or eps <= 0:
        raise InvalidParameterError(name, epsilon, allowed)
    return eps


def check_delta(delta: object, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A privacy parameter delta in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    allowed = "a number in [0, 1)" if allow_zero else "a number in (0, 1)"
    d = _as_float(name, delta, allowed)
    if not math.isfinite(d) or d < 0 or d >= 1 or (d == 0 and not allow_zero):
        raise InvalidParameterError(name, delta, allowed)
    return d


def check_positive(value: object, name: str) -> float:
    """A finite real number > 0."""
    allowed = "a finite number > 0"
    v = _as_float(name, value, allowed)
    if not math.isfinite(v) or v <= 0:
        raise InvalidParameterError(name, value, allowed)
    return v


def check_nonnegative(value: object, name: str) -> float:
    """A finite real number >= 0."""
    allowed = "a finite number >= 0"
    v = _as_float(name, value, allowed)
    if not math.isfinite(v) or v < 0:
        raise InvalidParameterError(name, value, allowed)
    return v


def check_probability(value: object, name: str, *, open_left: bool = False,
                      open_right: bool = False) -> float:
    """A probability in [0, 1], optionally excluding either end."""
    lo = "(0" if open_left else "[0"
    hi = "1)" if open_right else "1]"
    allowed = f"a number in {lo}, {hi}"
    v = _as_float(name, value, allowed)
    if (not math.isfinite(v) or v < 0 or v > 1 or (open_left and v == 0)
            or (open_right and v == 1)):
        raise InvalidParameterError(name, value, allowed)
    return v


def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer (bool refused) within ``[minimum, maximum]``."""
    parts = []
    if minimum is not None:
        parts.append(f">= {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    allowed = "an integer" + (" " + " and ".join(parts) if parts else "")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidParameterError(name, value, allowed)
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise InvalidParameterError(name, value, allowed)
    return v


def check_finite_array(values: object, name: str, *, ndim: int | None = None,
                       allow_empty: bool = False, dtype: type = np.float64) -> np.ndarray:
    """Convert to a float array; refuse NaN/inf, a wrong ``ndim`` or (by default) empty input."""
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"{name} must be numeric, got {type(values).__name__}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise InvalidDataError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise InvalidDataError(f"{name} is empty (shape {arr.shape}); at least one value is needed")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise InvalidDataError(
            f"{name} has {bad} non-finite value(s) (NaN or inf); all must be finite")
    return arr


def check_points(points: object, name: str = "points") -> np.ndarray:
    """A finite, non-empty ``(n, d)`` array; a 1-D input is read as ``(n, 1)``."""
    arr = check_finite_array(points, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InvalidDataError(f"{name} must have shape (n, d), got shape {arr.shape}")
    return arr


def check_weights(weights: object | None, n: int, name: str = "weights", *,
                  normalise: bool = True) -> np.ndarray:
    """Non-negative finite weights of length ``n`` with a positive sum.

    ``None`` gives uniform weights. With ``normalise`` the result sums to one.
    """
    if weights is None:
        return np.full(n, 1.0 / n) if normalise else np.ones(n)
    w = check_finite_array(weights, name, ndim=1)
    if w.shape[0] != n:
        raise InvalidDataError(f"{name} has length {w.shape[0]} but there are {n} points")
    if np.any(w < 0):
        i = int(np.flatnonzero(w < 0)[0])
        raise InvalidDataError(f"{name} must be non-negative; {name}[{i}]={plain_repr(w[i])}")
    total = float(w.sum())
    if total <= 0:
        raise InvalidDataError(f"{name} sum to {plain_repr(total)}; the total must be > 0")
    return w / total if normalise else w


def check_group_sequence(groups: object, name: str = "groups") -> list:
    """``k >= 1`` groups as a list: a sequence of ``(n_i, d)`` arrays, not one 2-D array.

    The shape and values of each group are the caller's to check (finite points, or
    rows that may be unusable).
    """
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        raise InvalidDataError(
            f"{name} must be a sequence of k point clouds (n_i, d), got a single 2-D array "
            f"of shape {groups.shape}; wrap it in a list for k = 1")
    try:
        items = list(groups)  # type: ignore[call-overload]
    except TypeError as exc:
        raise InvalidDataError(
            f"{name} must be a sequence of (n_i, d) arrays, got {type(groups).__name__}"
        ) from exc
    if not items:
        raise InvalidDataError(f"{name} is empty (k = 0); at least one is needed")
    return items


def renamed_argument(new_name: str, new: object, old_name: str, old: object, *,
                     default: object, stacklevel: int = 3) -> object:
    """The value of an argument renamed ``old_name`` -> ``new_name``, old name kept
    for a release as a deprecated alias.

    ``new`` and ``old`` are what the caller passed (None: not given). ``old`` alone:
    a :class:`DeprecationWarning` naming both, and its value is used; both: refused
    (:class:`~privot.errors.InvalidParameterError` naming the old one); neither:
    ``default``.
    """
    if old is None:
        return default if new is None else new
    if new is not None:
        raise InvalidParameterError(
            old_name, old, f"not together with {new_name}=: {old_name}= is the deprecated "
            f"name of {new_name}=, pass {new_name}= only")
    import warnings

    warnings.warn(f"{old_name}= is deprecated; use {new_name}= (same values)",
                  DeprecationWarning, stacklevel=stacklevel)
    return old
