r"""The baselines of paper 002, Sec. 4 ("Baselines"): Laplace noise on every cell.

* :func:`laplace_baseline` ([LXD+19]): add Laplace noise to each cell of the sum
  :math:`\mathbf{s}`, zero out the negative cells, normalise.
* :func:`threshold_baseline`: the same noisy cells, then keep only the top ``t`` percent
  of them (zero out the rest), "more suited to sparse data".

Both release one vector, :math:`\mathbf{s} + \nu` with
:math:`\nu \sim \mathrm{Lap}(1/\varepsilon)^{\Delta^2}`; everything after the noise is
post-processing with data-independent rules (the number of kept cells depends only on
``t`` and :math:`\Delta`). Every parameter, ``covered`` included, is checked before the
budget is charged; after the noise nothing can fail (zeroing, a top-``t`` selection, a
normalisation with a public uniform fallback): the path is total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privot._validation import check_epsilon, check_positive
from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps.aggregate import CellSums
from privot.heatmaps.measure import _as_sums
from privot.privacy.budget import TaggedSpender, check_spender, ensure_affordable
from privot.privacy.mechanisms import laplace_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, Release, Spender

__all__ = ["BaselineResult", "laplace_baseline", "threshold_baseline", "threshold_count"]


@dataclass(frozen=True, repr=False)
class BaselineResult:
    r"""A baseline release and its post-processing.

    Attributes
    ----------
    noisy : (Delta, Delta) float array
        The released :math:`\mathbf{s} + \nu` (before any post-processing).
    estimate : (Delta, Delta) float array
        Post-processed, non-negative: negatives zeroed (and, for the threshold variant,
        all but the top cells zeroed).
    distribution : (Delta, Delta) float array
        ``estimate`` normalised to sum 1; uniform over the covered cells when
        ``estimate`` is all zero (``fallback_uniform``).
    release : Release
        The Laplace release (cost, scale, ``secure`` flag).
    epsilon : float
        Spent.
    top_percent : float or None
        ``t`` of the threshold variant; None for the plain baseline.
    n_kept : int
        Cells with positive mass in ``estimate``.
    fallback_uniform : bool
        True when every cell was zeroed and ``distribution`` is the uniform fallback.
    """

    noisy: np.ndarray
    estimate: np.ndarray
    distribution: np.ndarray
    release: Release
    epsilon: float
    top_percent: float | None
    n_kept: int
    fallback_uniform: bool

    @property
    def secure(self) -> bool:
        """False when a seeded generator was used (not fit for publication)."""
        return self.release.secure

    def __repr__(self) -> str:
        d = self.distribution.shape[0]
        kind = ("laplace" if self.top_percent is None
                else f"threshold top {self.top_percent:g}%")
        return (f"BaselineResult({kind}, epsilon={self.epsilon:g}, {d}x{d}, "
                f"cells kept={self.n_kept}, fallback_uniform={self.fallback_uniform}"
                + ("" if self.secure else ", SEEDED") + ")")


def threshold_count(top_percent: float, n_cells: int) -> int:
    """Cells kept by the threshold baseline: ``ceil(top_percent / 100 * n_cells)``, at
    least 1 (a data-independent rule: it depends only on ``t`` and the grid)."""
    t = check_positive(top_percent, "top_percent")
    if t > 100:
        raise InvalidParameterError("top_percent", top_percent, "a percentage in (0, 100]")
    # round the product first so that e.g. 1% of 10,000 cells is exactly 100
    return max(1, min(n_cells, math.ceil(round(t / 100.0 * n_cells, 9))))


def _top_cells(flat: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values in O(n); ties broken by lowest index (the
    order of a stable descending sort)."""
    kth = -np.partition(-flat, k - 1)[k - 1]  # the k-th largest value
    above = np.flatnonzero(flat > kth)
    ties = np.flatnonzero(flat == kth)[:k - above.size]
    return np.concatenate([above, ties])


def _covered_mask(covered: np.ndarray | None, d: int) -> np.ndarray:
    """The fallback's public mask, checked before anything is charged."""
    mask = np.ones((d, d), dtype=bool) if covered is None else np.asarray(covered, dtype=bool)
    if mask.shape != (d, d) or not mask.any():
        raise InvalidDataError(f"covered must be a ({d}, {d}) bool array with a True cell")
    return mask


def _noisy_cells(sums: np.ndarray | CellSums, epsilon: float, accountant: Spender | None,
                 rng: np.random.Generator | None, method: str) -> tuple[np.ndarray, Release]:
    eps = check_epsilon(epsilon)
    check_spender(accountant)
    s = _as_sums(sums)
    ensure_affordable(accountant, eps, f"the {method} baseline")
    spender = (None if accountant is None else
               TaggedSpender(accountant, {"release": f"heatmap-{method}",
                                          "query": "s (cell sums, every cell)"}))
    # one vector of Delta^2 cells, L1 sensitivity 1 per user
    rel = laplace_mechanism(s, sensitivity=1.0, epsilon=eps, accountant=spender, rng=rng,
                            relation=Neighbouring.ADD_REMOVE)
    return np.asarray(rel.value, dtype=np.float64), rel


def _finish(noisy: np.ndarray, estimate: np.ndarray, rel: Release, top: float | None,
            mask: np.ndarray) -> BaselineResult:
    total = float(estimate.sum())
    fallback = not total > 0
    if fallback:
        dist = mask / float(np.count_nonzero(mask))
    else:
        dist = estimate / total
    return BaselineResult(noisy=noisy, estimate=estimate, distribution=dist, release=rel,
                          epsilon=rel.cost.epsilon, top_percent=top,
                          n_kept=int(np.count_nonzero(estimate > 0)),
                          fallback_uniform=fallback)


def laplace_baseline(sums: np.ndarray | CellSums, *, epsilon: float,
                     accountant: Spender | None = None,
                     rng: np.random.Generator | int | None = None,
                     covered: np.ndarray | None = None) -> BaselineResult:
    r"""Laplace noise on every cell, negatives zeroed, normalised ([LXD+19]).

    Parameters
    ----------
    sums : (Delta, Delta) array or CellSums
        :math:`\mathbf{s} = \sum_u\mathbf{p}_u`, each user's distribution of L1 norm <= 1:
        enforced by construction in a :class:`~privot.heatmaps.aggregate.CellSums` from
        :func:`~privot.heatmaps.aggregate.user_distributions_sum` or an engine; a raw
        array is the caller's statement that it holds (not checkable on an aggregate).
    epsilon : float
        > 0.
    accountant : PrivacyAccountant, optional
        Charged ``epsilon`` once (checked to fit before any noise).
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS CSPRNG; a seeded generator marks the release ``secure=False``.
    covered : (Delta, Delta) bool array, optional
        Cells of the uniform fallback when every noisy cell is negative (checked before
        anything is charged: at least one True cell).

    Returns
    -------
    BaselineResult

    Privacy
    -------
    Unit: one user; relation: add/remove one user. :math:`\mathbf{s}` changes by one
    user's distribution, L1 norm <= 1, so one
    :func:`~privot.privacy.mechanisms.laplace_mechanism` call with sensitivity 1 on all
    :math:`\Delta^2` cells is pure :math:`\varepsilon`-DP. Zeroing and normalising are
    post-processing. ``docs/privacy/heatmaps.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    s = _as_sums(sums)
    mask = _covered_mask(covered, s.shape[0])  # checked before any charge or noise
    noisy, rel = _noisy_cells(s, epsilon, accountant, rng, "laplace")
    return _finish(noisy, np.maximum(noisy, 0.0), rel, None, mask)


def threshold_baseline(sums: np.ndarray | CellSums, *, epsilon: float,
                       top_percent: float = 1.0, accountant: Spender | None = None,
                       rng: np.random.Generator | int | None = None,
                       covered: np.ndarray | None = None) -> BaselineResult:
    r"""Laplace noise on every cell, then keep only the top ``top_percent`` % of cells.

    The :func:`threshold_count` cells with the largest noisy values are kept (ties broken
    by cell order), all others zeroed, and kept cells that are still negative are zeroed
    too; then normalised. Paper 002 uses e.g. ``t = 0.01`` (%) or 1 %.

    Parameters
    ----------
    sums, epsilon, accountant, rng, covered
        As in :func:`laplace_baseline`.
    top_percent : float, default 1.0
        ``t`` in (0, 100]: percentage of the :math:`\Delta^2` cells kept. A public
        parameter; the count kept depends only on it and the grid.

    Returns
    -------
    BaselineResult

    Privacy
    -------
    As :func:`laplace_baseline` (one Laplace release of all cells, pure
    :math:`\varepsilon`-DP); the top-``t`` selection reads only the noisy values and
    the public ``t``: post-processing. ``docs/privacy/heatmaps.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    s = _as_sums(sums)
    k = threshold_count(top_percent, s.size)  # validated before any charge or noise
    mask = _covered_mask(covered, s.shape[0])
    noisy, rel = _noisy_cells(s, epsilon, accountant, rng, "threshold")
    flat = noisy.ravel()
    top = _top_cells(flat, k)
    est = np.zeros_like(flat)
    est[top] = np.maximum(flat[top], 0.0)
    return _finish(noisy, est.reshape(noisy.shape), rel, float(top_percent), mask)
