r"""Fair repair of a model's scores to the Wasserstein barycenter, with private group laws.

A second route to fairness beside the in-training penalty of :func:`private_learning`:
post-process a trained model's scores so that every group's score distribution becomes
(``theta = 1``) the Wasserstein barycenter of the groups' distributions, or moves part
of the way there (``0 < theta < 1``, partial repair). In one dimension the barycenter's
quantile function is the weighted average of the groups' quantile functions,

.. math:: \bar Q(u) = \sum_g w_g Q_g(u), \qquad
          T_g(s) = (1 - \theta)\, s + \theta\, \bar Q(F_g(s)),

(Gordaliza et al. 2019; Chzhen et al. 2020; Le Gouic et al. 2020), and the repair map of
group ``g`` needs only ``F_g`` and the ``Q_g``: one released histogram per group. No
per-example gradient, no torch: scores are numpy arrays.

.. code-block:: python

    result = private_repair(scores, groups, epsilon=1.0, bounds=(0.0, 1.0))
    fair = result.transform(new_scores, new_groups)   # post-processing, any data

Steps (:func:`private_repair`): clip the scores into the public ``bounds`` (counted,
curator-only); count each group's clipped scores on ``bins`` equal public bins; one
:func:`~privot.privacy.mechanisms.discrete_laplace_mechanism` call over all the groups'
histograms (sensitivity 2); then post-processing only: each group's noisy cumulative
counts are made monotone (isotonic least squares) and pinned to ``[0, n_g]`` with the
public size ``n_g`` as the total, giving a piecewise-linear CDF ``F_g`` on the bin
edges; its generalised inverse ``Q_g`` on a public grid of ``levels``; the barycenter
``Q_bar = sum_g w_g Q_g`` with public weights (the group proportions ``n_g / n`` or
equal weights); the repair map above (:class:`~privot.learning.repair_result.RepairResult`).

Privacy
-------
Unit: one record of one group. Relation: replace one record inside one group
(:attr:`~privot.privacy.types.Neighbouring.REPLACE_ONE_IN_GROUP`; the group labels and
sizes are public, as in the rest of :mod:`privot.learning`). Replacing one record moves
one clipped score from one bin to another bin of the same group's histogram: L1
sensitivity 2 over the concatenated histograms of all the groups (they are disjoint).
The discrete Laplace mechanism of scale ``2 / epsilon`` on the integer counts is pure
``epsilon``-DP (exact sampling, no floating-point rounding); everything after it
(monotone CDFs, quantiles, barycenter, repair map, figures) is post-processing.
``bounds``, ``bins``, ``levels``, ``theta`` and the weights are public: given by the
caller or set by a rule of public quantities (:func:`default_bins`: the public group
sizes and epsilon), never read from the scores. Derivation: ``docs/privacy/repair.md``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._params import ReleaseParams, build_params
from privot._validation import check_epsilon, check_int, check_probability
from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.repair_result import RepairDiagnostics, RepairResult, cdf_noise_sd
from privot.privacy.mechanisms import discrete_laplace_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, check_spender

__all__ = ["DEFAULT_LEVELS", "MAX_BINS", "MAX_EPSILON", "MIN_BINS", "SENSITIVITY", "WEIGHTS",
           "RepairParams", "default_bins", "group_histograms", "monotone_cdf",
           "private_repair", "quantile_function"]

#: L1 sensitivity of the concatenated group histograms under replace-one-in-group.
SENSITIVITY = 2
#: The barycenter's weights: the public group proportions, or equal weights.
WEIGHTS = ("sizes", "equal")
#: Default number of quantile levels ``0, 1/(L-1), ..., 1`` the release tabulates.
DEFAULT_LEVELS = 201
#: The bins rule's range (:func:`default_bins`).
MIN_BINS, MAX_BINS = 4, 512
#: The largest epsilon accepted: the exact discrete Laplace sampler takes scales
#: ``2 / epsilon >= 2**-8`` (a larger epsilon would be refused by the sampler after the
#: charge); at 512 the noise is zero with probability above ``1 - 1e-100``.
MAX_EPSILON = 512.0


def default_bins(sizes: Sequence[int], epsilon: float) -> int:
    r"""The public default number of bins: a rule of the public group sizes and epsilon.

    The CDF read off ``B`` equal bins has a discretisation error of at most one bin's
    mass (about ``1 / B`` of the range for a smooth law) and a noise error, at the middle
    edge, of standard deviation about ``sqrt(B) * sqrt(2) * (2 / epsilon) / n`` (half of
    the ``B`` discrete Laplace draws of scale ``2 / epsilon`` summed, for the smallest
    group ``n = min n_g``). Balancing the two gives

    .. math:: B = \operatorname{round}\Big( (\varepsilon\, n_{\min} / (2\sqrt 2))^{2/3}
              \Big), \quad\text{clipped to } [4, 512].

    Public: the sizes are public by the relation, epsilon is the caller's.
    """
    n_min = min(int(n) for n in sizes)
    eps = check_epsilon(epsilon)
    raw = (eps * n_min / (2.0 * math.sqrt(2.0))) ** (2.0 / 3.0)
    return int(min(MAX_BINS, max(MIN_BINS, round(raw))))


def _check_bounds(bounds: object) -> tuple[float, float]:
    allowed = "two finite numbers lo < hi (the public range of the scores)"
    try:
        lo, hi = (float(b) for b in bounds)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InvalidParameterError("bounds", bounds, allowed) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError("bounds", bounds, allowed)
    return lo, hi


@dataclass(frozen=True, kw_only=True)
class RepairParams(ReleaseParams):
    """The public choices of a private repair (frozen, validated when built).

    Attributes
    ----------
    epsilon : float, default 1.0
        Pure epsilon-DP of the release, in (0, 512] (:data:`MAX_EPSILON`).
    bounds : (float, float), default (0.0, 1.0)
        Public range of the scores (probabilities by default); scores outside are
        clipped into it (counted, curator-only). Never taken from the data.
    bins : int or None, default None
        Number of equal bins of ``bounds`` per group histogram, 2 to 100,000; None:
        :func:`default_bins` (a rule of the public sizes and epsilon).
    theta : float, default 1.0
        Repair strength in [0, 1]: 1 maps every group onto the barycenter, 0 leaves the
        scores unchanged (``T_g(s) = (1 - theta) s + theta Q_bar(F_g(s))``).
    levels : int, default 201
        Number of quantile levels ``0, 1/(L-1), ..., 1`` tabulated (2 to 100,000).
    weights : {"sizes", "equal"}, default "sizes"
        Barycenter weights: the public group proportions ``n_g / n``, or ``1 / k``.
    """

    epsilon: float = 1.0
    bounds: tuple[float, float] = (0.0, 1.0)
    bins: int | None = None
    theta: float = 1.0
    levels: int = DEFAULT_LEVELS
    weights: str = "sizes"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.epsilon > MAX_EPSILON:
            raise InvalidParameterError("epsilon", self.epsilon,
                                        f"a number in (0, {MAX_EPSILON:g}]")
        object.__setattr__(self, "bounds", _check_bounds(self.bounds))
        if self.bins is not None:
            object.__setattr__(self, "bins",
                               check_int(self.bins, "bins", minimum=2, maximum=100_000))
        object.__setattr__(self, "theta", check_probability(self.theta, "theta"))
        object.__setattr__(self, "levels",
                           check_int(self.levels, "levels", minimum=2, maximum=100_000))
        if self.weights not in WEIGHTS:
            raise InvalidParameterError("weights", self.weights, f"one of {WEIGHTS}")


# -- the data-touching step --------------------------------------------------------------


def _check_inputs(scores: object, groups: object) -> tuple[np.ndarray, np.ndarray]:
    """Finite 1-D scores and 1-D labels of the same length, at least two groups."""
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError("scores", scores, "a 1-D array of numbers") from None
    if s.ndim != 1 or s.size == 0:
        raise InvalidParameterError("scores", scores, "a non-empty 1-D array (n,)")
    if not np.all(np.isfinite(s)):
        bad = int(np.sum(~np.isfinite(s)))
        raise InvalidDataError(f"scores has {bad} non-finite value(s) (NaN or inf); give "
                               "finite scores (nothing was charged)")
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != s.shape[0]:
        raise InvalidParameterError("groups", groups,
                                    f"a 1-D array of group labels of length {s.size}")
    if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
        raise InvalidDataError("groups has missing (NaN) labels; give every row a group "
                               "(nothing was charged)")
    return s, g


def group_histograms(scores: np.ndarray, codes: np.ndarray, k: int,
                     bounds: tuple[float, float], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(k, bins)`` int64 counts of the clipped scores per group, and the number
    of clipped scores per group (**curator-only**, not private).

    Bin ``b`` is ``[lo + b h, lo + (b + 1) h)``, the last one closed (``h = (hi - lo) /
    bins``); a score outside ``bounds`` is clipped to the nearest bound first.
    """
    lo, hi = bounds
    clipped = (scores < lo) | (scores > hi)
    x = np.clip(scores, lo, hi)
    idx = np.floor((x - lo) / (hi - lo) * bins).astype(np.int64)
    idx = np.clip(idx, 0, bins - 1)
    counts = np.bincount(codes * bins + idx, minlength=k * bins).reshape(k, bins)
    n_clipped = np.bincount(codes, weights=clipped, minlength=k).astype(np.int64)
    return counts.astype(np.int64), n_clipped


# -- post-processing of the noisy histograms ----------------------------------------------


def monotone_cdf(noisy_counts: np.ndarray, size: int) -> np.ndarray:
    """The CDF on the ``bins + 1`` edges from one group's noisy counts (post-processing).

    The noisy cumulative counts at the inner edges are fitted by isotonic least squares
    (non-decreasing), clipped into ``[0, n]`` and divided by the public size ``n``; the
    first edge has CDF 0 and the last 1 (every clipped score lies in the bins, so the
    total is the public ``n``, not a noisy one). Returns ``(bins + 1,)`` floats,
    non-decreasing, from 0 to 1.
    """
    from scipy.optimize import isotonic_regression

    c = np.asarray(noisy_counts, dtype=np.float64)
    inner = np.cumsum(c)[:-1]
    if inner.size:
        inner = isotonic_regression(inner, increasing=True).x
    inner = np.clip(inner, 0.0, float(size)) / float(size)
    return np.concatenate([[0.0], inner, [1.0]])


def quantile_function(cdf: np.ndarray, edges: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The generalised inverse ``Q(u) = inf{x : F(x) >= u}`` of the piecewise-linear CDF
    ``F`` through ``(edges, cdf)``, at ``levels`` in [0, 1] (post-processing)."""
    u = np.asarray(levels, dtype=np.float64)
    j = np.clip(np.searchsorted(cdf, u, side="left"), 1, cdf.size - 1)
    f0, f1 = cdf[j - 1], cdf[j]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(f1 > f0, (u - f0) / (f1 - f0), 0.0)
    q = edges[j - 1] + np.clip(t, 0.0, 1.0) * (edges[j] - edges[j - 1])
    return np.where(u <= 0.0, edges[0], q)


# -- the entry point ----------------------------------------------------------------------


def private_repair(scores: Any, groups: Any, params: RepairParams | None = None, *,
                   accountant: Any = None, rng: Any = None, progress: bool | None = None,
                   **options: Any) -> RepairResult:
    """Release each group's score distribution privately; return the repair to their
    Wasserstein barycenter.

    Parameters
    ----------
    scores : (n,) array of float
        A trained model's scores of the curator's rows (finite; outside ``bounds``
        clipped and counted, curator-only).
    groups : (n,) array
        Group label of each row (at least two distinct labels). The labels and the group
        sizes are public (the relation).
    params : RepairParams, optional
        The public choices; keyword ``options`` build it or replace its fields
        (:func:`privot._params.build_params`).
    accountant : Spender, optional
        Charged ``epsilon`` (replace-one-in-group) once, before the noise is drawn.
    rng : None, numpy Generator, BitSource or int
        The one rng rule (:func:`~privot.privacy.noise.check_rng`); None: the OS CSPRNG.
    progress : bool, optional
        Accepted for the common shape; the release is one vectorised step (no bar).

    Returns
    -------
    RepairResult
        The released group CDFs and quantile functions, the barycenter and the repair map
        (:meth:`RepairResult.transform`), publishable; the clipped counts curator-only.

    Raises
    ------
    InvalidParameterError, InvalidDataError
        Bad parameters, non-finite scores, mismatched lengths or fewer than two groups:
        refused before anything is charged.

    Privacy
    -------
    Unit: one record of one group; relation: replace-one-in-group (labels and sizes
    public). One discrete Laplace release of the ``(k, bins)`` histograms, sensitivity
    2, scale ``2 / epsilon``: pure epsilon-DP. The rest is post-processing
    (``docs/privacy/repair.md``).
    """
    del progress  # one vectorised step: nothing to report
    p = build_params(RepairParams, params, options)
    check_spender(accountant)
    rng = check_rng(rng)
    s, g = _check_inputs(scores, groups)
    try:
        labels, codes, sizes = np.unique(g, return_inverse=True, return_counts=True)
    except TypeError:
        raise InvalidParameterError("groups", groups, "labels of one sortable type (all "
                                    "numbers or all strings, none missing)") from None
    if labels.size < 2:
        raise InvalidParameterError("groups", f"{labels.size} distinct label(s)",
                                    "at least two groups to repair between")
    bins = p.bins if p.bins is not None else default_bins(sizes, p.epsilon)
    start = time.perf_counter()
    counts, n_clipped = group_histograms(s, codes.reshape(-1), labels.size, p.bounds, bins)
    seconds = {"histograms": time.perf_counter() - start}
    release = discrete_laplace_mechanism(
        counts, sensitivity=SENSITIVITY, epsilon=p.epsilon, accountant=accountant,
        rng=rng, relation=Neighbouring.REPLACE_ONE_IN_GROUP)  # charged, then drawn
    # -- post-processing only from here: the noisy counts and public quantities
    noisy = np.asarray(release.value, dtype=np.int64)
    edges = np.linspace(p.bounds[0], p.bounds[1], bins + 1)
    levels = np.linspace(0.0, 1.0, p.levels)
    cdfs = np.stack([monotone_cdf(noisy[i], int(sizes[i])) for i in range(labels.size)])
    quantiles = np.stack([quantile_function(c, edges, levels) for c in cdfs])
    weights = (sizes / sizes.sum() if p.weights == "sizes"
               else np.full(labels.size, 1.0 / labels.size))
    seconds["total"] = time.perf_counter() - start
    diag = RepairDiagnostics(n_rows=int(s.size), n_clipped=dict(zip(
        labels.tolist(), n_clipped.tolist(), strict=True)), seconds=seconds)
    return RepairResult(
        params=p, bins=bins, labels=tuple(labels.tolist()),
        sizes=tuple(int(n) for n in sizes), weights=weights, edges=edges,
        noisy_counts=noisy, cdfs=cdfs, levels=levels, quantiles=quantiles,
        barycenter=weights @ quantiles, cost=release.cost,
        relation=Neighbouring.REPLACE_ONE_IN_GROUP, secure=release.secure,
        scale=float(release.params["scale"]),
        cdf_sd=tuple(cdf_noise_sd(bins, p.epsilon, int(n)) for n in sizes),
        curator_only=diag)
