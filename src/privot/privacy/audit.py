"""Empirical privacy auditing: a statistical lower bound on a mechanism's epsilon.

A mechanism M is (epsilon, delta)-DP only if, for every pair of neighbouring inputs
D0, D1 and every event E,

.. math:: \\Pr[M(D_0) \\in E] \\le e^{\\varepsilon} \\Pr[M(D_1) \\in E] + \\delta .

So any event whose probabilities we can bound from samples gives a *lower* bound

.. math:: \\varepsilon \\ge \\ln \\frac{\\underline{p_0} - \\delta}{\\overline{p_1}}

where :math:`\\underline{p_0}` is a lower confidence limit for
:math:`\\Pr[M(D_0)\\in E]` and :math:`\\overline{p_1}` an upper one for
:math:`\\Pr[M(D_1)\\in E]` (Clopper-Pearson, exact binomial intervals). If the
lower bound exceeds the claimed epsilon, the claim is false (up to the stated
false-alarm rate). This is the approach of Jagielski et al. 2020 and Nasr et al.
2021 ("Adversary instantiation"), applied to one chosen event.

How the event is chosen without biasing the interval
----------------------------------------------------
Samples of a scalar statistic of the output are drawn on both inputs and split in
two independent halves. The first half only *selects* the event (a threshold
``T > t`` or ``T < t``, in either direction between D0 and D1, maximising the
empirical bound); the second half *estimates* its probabilities. Because the event
is fixed before the estimation half is looked at, the Clopper-Pearson intervals keep
their coverage. With confidence ``1 - alpha`` for the pair of intervals (Bonferroni:
``alpha/2`` each), the probability that the reported lower bound exceeds the true
epsilon of a correct mechanism is at most ``alpha``: that is the false-alarm rate.

See ``docs/privacy/audit.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._validation import check_delta, check_epsilon, check_int, check_probability
from privot.errors import InvalidDataError

__all__ = [
    "AuditResult",
    "audit",
    "clopper_pearson",
    "epsilon_lower_bound",
    "repeat",
]

#: A sampler draws ``n`` independent outputs (reduced to a scalar statistic) of the
#: mechanism on one input: ``sampler(data, n, rng) -> (n,) array``.
Sampler = Callable[[Any, int, np.random.Generator], np.ndarray]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided ``1 - alpha`` binomial confidence interval (Clopper-Pearson).

    Parameters
    ----------
    successes, trials : int
        Observed count ``k`` out of ``n`` trials, ``0 <= k <= n``, ``n >= 1``.
    alpha : float
        In (0, 1). Each one-sided limit holds with probability ``1 - alpha/2``.

    Returns
    -------
    (lower, upper) : tuple of float
    """
    k = check_int(successes, "successes", minimum=0)
    n = check_int(trials, "trials", minimum=1)
    if k > n:
        raise InvalidDataError(f"successes={k} exceeds trials={n}")
    alpha = check_probability(alpha, "alpha", open_left=True, open_right=True)
    from scipy import stats  # lazy: scipy.stats costs ~0.3 s on every release's import

    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def epsilon_lower_bound(k0: int, k1: int, n: int, *, delta: float = 0.0,
                        alpha: float = 0.05) -> float:
    """Lower confidence bound on epsilon from one event's counts.

    The event occurred ``k0`` times in ``n`` runs on D0 and ``k1`` times in ``n`` runs
    on D1. Returns ``ln((p0_lo - delta) / p1_hi)`` (or 0 when that is not positive),
    with each limit at one-sided level ``1 - alpha/2`` so that both hold together with
    probability at least ``1 - alpha``.
    """
    p0_lo, _ = clopper_pearson(k0, n, alpha)
    _, p1_hi = clopper_pearson(k1, n, alpha)
    numerator = p0_lo - delta
    if numerator <= 0 or p1_hi <= 0:
        return 0.0
    return max(0.0, math.log(numerator / p1_hi))


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes
    ----------
    epsilon_lower : float
        Lower confidence bound on the mechanism's true epsilon (0 when nothing is shown).
    epsilon_empirical : float
        The same event's plug-in estimate ``ln((p0 - delta)/p1)`` on the estimation half
        (no confidence margin; for reading, not for judging).
    claimed_epsilon, claimed_delta : float
        The guarantee under test.
    confidence : float
        ``1 - alpha``: the false-alarm rate of ``violated`` is at most ``alpha``.
    n_runs : int
        Runs per input (both halves together).
    event : str
        The distinguishing event, e.g. ``"T > 0.4183 on D0 vs D1"``.
    counts : tuple of int
        ``(k0, k1, n_estimation)``: the event's counts on the estimation half.
    """

    epsilon_lower: float
    epsilon_empirical: float
    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    n_runs: int
    event: str
    counts: tuple[int, int, int]

    @property
    def violated(self) -> bool:
        """True when the lower bound exceeds the claim: the claim is refuted."""
        return self.epsilon_lower > self.claimed_epsilon

    def summary(self) -> str:
        """One readable paragraph."""
        verdict = ("VIOLATED: the claimed epsilon is refuted" if self.violated
                   else "consistent with the claim")
        return (f"audit ({self.n_runs} runs per input, confidence {self.confidence:.4g}): "
                f"epsilon >= {self.epsilon_lower:.4f} (empirical {self.epsilon_empirical:.4f}) "
                f"vs claimed {self.claimed_epsilon:.4g}"
                + (f", delta {self.claimed_delta:.3g}" if self.claimed_delta else "")
                + f"; event {self.event}; {verdict}")


def repeat(mechanism: Callable[[Any, np.random.Generator], Any],
           statistic: Callable[[Any], float] | None = None, *,
           progress: bool = False) -> Sampler:
    """Turn a single-shot mechanism into a :data:`Sampler` by calling it ``n`` times.

    Parameters
    ----------
    mechanism : callable ``(data, rng) -> output``
        One run of the mechanism.
    statistic : callable ``output -> float``, optional
        Reduces an output to the scalar the audit thresholds (default ``float``).
    progress : bool
        Show a tqdm progress bar (for long audits).
    """
    reduce = statistic if statistic is not None else float

    def sampler(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        from tqdm.auto import trange

        return np.fromiter((reduce(mechanism(data, rng))
                            for _ in trange(n, disable=not progress, leave=False,
                                            desc="audit")), dtype=float, count=n)

    return sampler


def _best_threshold(s0: np.ndarray, s1: np.ndarray, *, delta: float,
                    alpha: float) -> tuple[float, bool, bool]:
    """Pick the threshold event maximising the lower bound on the selection half.

    Returns ``(t, upper, swap)``: the event is ``T > t`` when ``upper`` else ``T < t``,
    with D0 and D1 exchanged when ``swap``.
    """
    n = s0.size
    candidates = np.unique(np.concatenate([s0, s1]))
    if candidates.size > 512:  # quantiles of the pooled sample are enough to search
        candidates = np.unique(np.quantile(np.concatenate([s0, s1]),
                                           np.linspace(0.0, 1.0, 513)))
    sorted0, sorted1 = np.sort(s0), np.sort(s1)
    # counts of T > t and T < t for every candidate t, by binary search
    gt0 = n - np.searchsorted(sorted0, candidates, side="right")
    gt1 = n - np.searchsorted(sorted1, candidates, side="right")
    lt0 = np.searchsorted(sorted0, candidates, side="left")
    lt1 = np.searchsorted(sorted1, candidates, side="left")
    best = (-1.0, 0.0, True, False)
    for upper, c0, c1 in ((True, gt0, gt1), (False, lt0, lt1)):
        for swap, a, b in ((False, c0, c1), (True, c1, c0)):
            # cheap screening with the plug-in ratio, then exact bounds on the top few
            with np.errstate(divide="ignore", invalid="ignore"):
                plug = np.log(np.maximum(a / n - delta, 0) / np.maximum(b, 1) * n)
            plug[~np.isfinite(plug)] = -np.inf
            for i in np.argsort(plug)[-8:]:
                lb = epsilon_lower_bound(int(a[i]), int(b[i]), n, delta=delta, alpha=alpha)
                if lb > best[0]:
                    best = (lb, float(candidates[i]), upper, swap)
    return best[1], best[2], best[3]


def audit(sampler: Sampler, data0: Any, data1: Any, *, epsilon: float, delta: float = 0.0,
          n_runs: int = 100_000, confidence: float = 0.99,
          rng: np.random.Generator | int | None = None) -> AuditResult:
    """Audit a mechanism on one pair of neighbouring inputs.

    Parameters
    ----------
    sampler : callable ``(data, n, rng) -> (n,) array``
        Draws ``n`` independent runs of the mechanism on ``data``, each reduced to a
        scalar statistic. Use :func:`repeat` to wrap a single-shot mechanism; a
        vectorised sampler is much faster.
    data0, data1 : any
        Neighbouring inputs under the mechanism's stated relation.
    epsilon, delta : float
        The claimed guarantee.
    n_runs : int
        Runs per input, >= 100; half select the event, half estimate it.
    confidence : float
        ``1 - alpha``, in (0, 1). A correct mechanism is reported ``violated`` with
        probability at most ``alpha``.
    rng : numpy Generator or int, optional
        Randomness of the *audit* (passed to the sampler). Audits are experiments: a
        seed makes them reproducible.

    Returns
    -------
    AuditResult
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    n_runs = check_int(n_runs, "n_runs", minimum=100)
    confidence = check_probability(confidence, "confidence", open_left=True, open_right=True)
    alpha = 1.0 - confidence
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    half = n_runs // 2
    draws = []
    for data in (data0, data1):
        s = np.asarray(sampler(data, 2 * half, gen), dtype=float).reshape(-1)
        if s.size != 2 * half:
            raise InvalidDataError(f"sampler returned {s.size} values; expected {2 * half}")
        if not np.all(np.isfinite(s)):
            raise InvalidDataError("sampler returned non-finite statistics")
        draws.append(s)
    sel0, est0 = draws[0][:half], draws[0][half:]
    sel1, est1 = draws[1][:half], draws[1][half:]

    t, upper, swap = _best_threshold(sel0, sel1, delta=delta, alpha=alpha)
    in0 = (est0 > t) if upper else (est0 < t)
    in1 = (est1 > t) if upper else (est1 < t)
    k0, k1 = int(in0.sum()), int(in1.sum())
    if swap:
        k0, k1 = k1, k0
    lower = epsilon_lower_bound(k0, k1, half, delta=delta, alpha=alpha)
    p0, p1 = k0 / half, k1 / half
    empirical = (math.log((p0 - delta) / p1) if p1 > 0 and p0 > delta
                 else (math.inf if p0 > delta else 0.0))
    first, second = ("D1", "D0") if swap else ("D0", "D1")
    event = f"T {'>' if upper else '<'} {t:.6g} on {first} vs {second}"
    return AuditResult(epsilon_lower=lower, epsilon_empirical=max(0.0, empirical),
                       claimed_epsilon=epsilon, claimed_delta=delta, confidence=confidence,
                       n_runs=2 * half, event=event, counts=(k0, k1, half))
