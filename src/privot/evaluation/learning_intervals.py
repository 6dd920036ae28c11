"""Percentile bootstrap intervals of the learning metrics (the curator's evaluation).

Part of :mod:`privot.evaluation.learning` (which re-exports every name here):
:func:`bootstrap_interval` resamples rows jointly with replacement, in vectorised chunks
of indices, and :class:`BootstrapEstimate` holds an estimate with its interval.

Privacy
-------
**Not differentially private**: a statistic of the curator's exact data with an
interval. The resampling randomness (``rng``, seeded for reproducibility) is no privacy
noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.learning_inputs import to_numpy

__all__ = ["BootstrapEstimate", "bootstrap_interval"]

# Bootstrap rows are gathered in chunks of about this many indices (memory bound).
_CHUNK_INDICES = 1_000_000


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
    arrs = [to_numpy(a) for a in arrays]
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


# --------------------------------------------------------------------------- estimates


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
