r"""The server's estimators: post-processing of the released reports (paper 003 at scale).

What the server holds after :func:`~privot.sampling.population.sample_population` is the
histogram of the released output indices, ``sample_counts`` ``(k_v,)`` (the multiset,
without user ids), and the public parameters. From them alone:

* :func:`estimate_direct` -- the direct variant's empirical histogram, an estimate of
  :math:`\frac1n\sum_u M[\mu_u]` (biased towards the base measure: :math:`M` is not
  linear, so there is nothing public to invert);
* :func:`estimate_linear` -- the linear variant's population :math:`\bar\mu` by
  iterative Bayesian update (EM) through the public channel ``W`` ``(k, k_v)``, whose
  reports are samples of :math:`\bar\mu W` (:func:`linear_law`); run to convergence
  it is the maximum-likelihood estimate, which overfits few reports;
* :func:`estimate_linear_stopped` -- the same EM **stopped early**, after
  :func:`stopping_iterations` steps, a rule of the public ``n`` and ``epsilon``
  (``docs/sampling_estimate.md``): the linear variant's default estimate;
* :func:`estimate_intervals` -- a parametric bootstrap of the released reports through
  the public channel: per-cell intervals and, given the ground cost, a :math:`W_1`
  radius (:class:`EstimateIntervals`), the estimate's uncertainty statement;
* :func:`estimate_population` -- the right one for a released sample (k-RR:
  :func:`~privot.sampling.baselines.krr_estimate`, the debiased frequencies projected
  onto the simplex).

Privacy
-------
No release here. Every function reads the released histogram and public parameters
only (the channel, epsilon, the mechanism's name): post-processing of an eps-LDP
release, no budget. The stopping rule reads the number of reports and epsilon only; the
bootstrap draws its own public randomness from a fixed seed (not privacy noise: the
same reports give the same intervals). ``docs/privacy/sampling.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from privot._validation import check_finite_array, check_int, check_nonnegative
from privot.errors import InvalidParameterError
from privot.sampling._checks import CHANNEL_ATOL as _CHANNEL_ATOL
from privot.sampling.baselines import krr_estimate
from privot.sampling.mechanism import SamplingMechanism

__all__ = [
    "ESTIMATORS",
    "STOP_EXPONENT",
    "STOP_SCALE",
    "EstimateIntervals",
    "ReleasedReports",
    "estimate_direct",
    "estimate_intervals",
    "estimate_linear",
    "estimate_linear_stopped",
    "estimate_population",
    "linear_law",
    "stopping_iterations",
]

#: The linear variant's estimators: ``"stopped"`` (EM stopped by
#: :func:`stopping_iterations`, the default) and ``"mle"`` (EM to convergence,
#: :func:`estimate_linear`'s defaults; privot's estimate before issue 26).
ESTIMATORS = ("stopped", "mle")
#: The stopping rule's constants, ``t = ceil(STOP_SCALE * sqrt(n) / epsilon **
#: STOP_EXPONENT)``: calibrated on Gowalla NYC and MplsStops reports (16 x 16 grid, WPM,
#: epsilon 1, 2, 4, n 50 to 10000; ``docs/sampling_estimate.md``), never on the data
#: being estimated.
STOP_SCALE = 3.0
STOP_EXPONENT = 1.25


class ReleasedReports(Protocol):
    """What :func:`estimate_population` reads of a released sample (a
    :class:`~privot.sampling.result.PopulationSample`): its public histogram, its
    variant and the public channel it recorded."""

    variant: str
    channel: np.ndarray | None

    def counts_per_output(self) -> np.ndarray:
        """``(k_v,)`` int64: reports per output point."""
        ...


def _check_sample_counts(sample_counts: object) -> np.ndarray:
    c = check_finite_array(sample_counts, "sample_counts", ndim=1)
    if np.any(c < 0):
        raise InvalidParameterError("sample_counts", float(c.min()),
                                    "non-negative counts (one per output point)")
    if float(c.sum()) <= 0:
        raise InvalidParameterError("sample_counts", "<all zero>",
                                    "counts with a positive total (at least one report)")
    return c


def linear_law(mu: object, channel: object) -> np.ndarray:
    r"""The linear variant's output law :math:`\mu W` of each user, ``(k_v,)`` or
    ``(n, k_v)``.

    With the snapped integer channel ``W = w / 2**b`` this is the exact law of the
    released index (:func:`~privot.sampling.population.sample_population`); with the
    float channel it differs by at most the snapping shift (about ``2 k_v 2^-b`` in L1
    for a channel inside the polytope).
    """
    ch = check_finite_array(channel, "channel", ndim=2)
    m = check_finite_array(mu, "mu")
    if m.ndim not in (1, 2) or m.shape[-1] != ch.shape[0]:
        raise InvalidParameterError("mu", f"<array of shape {m.shape}>",
                                    f"(k,) or (n, k) with k = {ch.shape[0]} (channel rows)")
    return m @ ch


def estimate_direct(sample_counts: object) -> np.ndarray:
    r"""The empirical histogram of the direct variant's reports, ``(k_v,)``.

    What a naive server does. It estimates :math:`\frac1n\sum_u M[\mu_u]`, the mean of
    the users' *privatised* laws, not the population :math:`\bar\mu`. The target is
    biased towards the base measure: it lies in the polytope :math:`Q_{m,\varepsilon}`
    (every coordinate within :math:`e^{\pm\varepsilon/2} m_j`), and for WPM its
    :math:`W_p` distance to :math:`\bar\mu` is at most the worst-case cost of Thm 3.5
    (joint convexity of :math:`W_p^p`). Since :math:`M` is not linear there is no public
    transform to undo (the linear variant and :func:`estimate_linear` exist for that).
    Post-processing (no budget).

    Parameters
    ----------
    sample_counts : (k_v,) array
        Reports per output point
        (:meth:`~privot.sampling.result.PopulationSample.counts_per_output`).
    """
    c = _check_sample_counts(sample_counts)
    return c / c.sum()


def estimate_linear(sample_counts: object, channel: object, *, n_iter: int = 1000,
                    tol: float = 1e-9, init: object | None = None) -> np.ndarray:
    r"""Iterative Bayesian update (EM) for the population behind the linear variant.

    Given ``N`` reports with counts :math:`c_j` of samples of :math:`\theta W`, the
    maximum-likelihood population :math:`\theta` on the simplex is the fixed point of
    (Agrawal and Aggarwal 2001; Agrawal, Srikant and Thomas 2005)

    .. math:: \theta_i \leftarrow \sum_j \frac{c_j}{N}
              \frac{\theta_i W_{ij}}{\sum_l \theta_l W_{lj}},

    started at the uniform distribution (or ``init``), each step a distribution; it
    stops after ``n_iter`` steps or when the L1 change is below ``tol``. Post-processing
    of the released histogram and the public channel: no budget, and the stopping rule
    reads the release only.

    Parameters
    ----------
    sample_counts : (k_v,) array
        Reports per output point.
    channel : (k, k_v) array
        The public channel, row ``i`` the law of a report given input ``i``
        (:meth:`SamplingMechanism.channel`; the snapped integer one is within about
        ``2 k_v 2^-61`` in L1).
    n_iter : int, default 1000
        >= 1.
    tol : float, default 1e-9
        >= 0 (0: always ``n_iter`` steps).
    init : (k,) array, optional
        Positive starting distribution (default uniform).

    Returns
    -------
    (k,) float array
        A distribution over the ``k`` input points. When two inputs have the same channel
        row they are not identifiable, and EM keeps the split of ``init`` between them.
    """
    c = _check_sample_counts(sample_counts)
    ch = check_finite_array(channel, "channel", ndim=2)
    if ch.shape[1] != c.size:
        raise InvalidParameterError("channel", f"<array of shape {ch.shape}>",
                                    f"(k, k_v) with k_v = {c.size} (len(sample_counts))")
    if np.any(ch < 0) or np.any(np.abs(ch.sum(axis=1) - 1.0) > _CHANNEL_ATOL):
        raise InvalidParameterError("channel", "<rows that are not distributions>",
                                    f"non-negative rows summing to 1 (within {_CHANNEL_ATOL:g})")
    steps = check_int(n_iter, "n_iter", minimum=1)
    stop = check_nonnegative(tol, "tol")
    k = ch.shape[0]
    if init is None:
        theta = np.full(k, 1.0 / k)
    else:
        theta = check_finite_array(init, "init", ndim=1)
        if theta.size != k or np.any(theta <= 0):
            raise InvalidParameterError("init", "<array>",
                                        f"a positive (k,) distribution with k = {k}")
        theta = theta / theta.sum()
    f = c / c.sum()
    for _ in range(steps):
        pred = theta @ ch
        ratio = np.divide(f, pred, out=np.zeros_like(f), where=pred > 0)
        new = theta * (ch @ ratio)
        total = new.sum()
        if total <= 0:  # every report on an output no input in the support can give
            break
        new /= total
        change = float(np.abs(new - theta).sum())
        theta = new
        if change <= stop:
            break
    return theta


def stopping_iterations(n_reports: object, epsilon: object) -> int:
    r"""The public early-stopping rule of :func:`estimate_linear_stopped`: the number of
    EM steps for ``n_reports`` reports at ``epsilon``,

    .. math:: t(n, \varepsilon) = \Big\lceil 3 \sqrt{n} \,/\, \varepsilon^{1.25}
              \Big\rceil \quad (\ge 1).

    EM started at the uniform distribution first removes the channel's blur and then
    fits the reports' multinomial noise (the maximum-likelihood limit puts mass on cells
    that only noise supports); the more reports, the more steps the signal carries, and
    a sharper channel (larger epsilon) removes the blur in fewer steps. A function of
    the public ``n`` and ``epsilon`` only (the number of cells enters through the
    calibration grid, 256 cells); ``docs/sampling_estimate.md``.
    """
    n = check_nonnegative(n_reports, "n_reports")
    eps = check_nonnegative(epsilon, "epsilon")
    if n <= 0 or eps <= 0:
        raise InvalidParameterError("n_reports" if n <= 0 else "epsilon",
                                    n if n <= 0 else eps, "> 0")
    return max(1, math.ceil(STOP_SCALE * math.sqrt(n) / eps ** STOP_EXPONENT))


def estimate_linear_stopped(sample_counts: object, channel: object, *, epsilon: float,
                            n_iter: int | None = None) -> np.ndarray:
    """The linear variant's default population estimate: :func:`estimate_linear` from the
    uniform distribution, stopped after ``n_iter`` steps (default
    :func:`stopping_iterations` of the number of reports and ``epsilon``; no tolerance:
    always that many steps).

    Regularisation by early stopping: on 50 to 10000 reports of four public data sets
    (16 x 16 cells, WPM, epsilon 1 to 4) its mean :math:`W_1` to the population was at
    most 1.02 times the reports' own histogram's (below it in 46 of 48 settings), where
    the converged EM (``"mle"``) was up to 1.26 times it (``docs/sampling_estimate.md``,
    ``benchmarks/bench_sampling_estimate.py``). Post-processing of the released histogram
    and the public channel: the rule reads ``n`` (the sum of ``sample_counts``) and
    ``epsilon``, no budget.
    """
    c = _check_sample_counts(sample_counts)
    steps = (stopping_iterations(float(c.sum()), epsilon) if n_iter is None
             else check_int(n_iter, "n_iter", minimum=1))
    return estimate_linear(c, channel, n_iter=steps, tol=0.0)


@dataclass(frozen=True)
class EstimateIntervals:
    r"""The uncertainty statement of a population estimate (publishable: computed from the
    released reports, the public channel and a fixed bootstrap seed only).

    Attributes
    ----------
    estimate : (k,) array
        The estimate the intervals are about.
    lower, upper : (k,) arrays
        Per-cell basic-bootstrap intervals at ``level``: ``2 est - q_hi`` and
        ``2 est - q_lo`` of the bootstrap re-estimates' quantiles, clipped to [0, 1]
        (indicative: they cover fewer cells than ``level`` says).
    level : float
        Nominal two-sided level of each cell's interval.
    n_boot, seed : int
        Bootstrap replicates and the public seed of their draws.
    n_iter : int
        EM steps of the estimator (the same rule for every replicate; 0 for the
        histogram and k-RR estimates).
    estimator : str
        ``"stopped"``, ``"histogram"`` or ``"krr"`` (:func:`estimate_intervals`).
    w1_radius : float or None
        With a ground cost, the statement :math:`W_1(\text{population}, \text{estimate})
        \le` ``w1_radius`` at ``level``: the ``level`` quantile of :math:`W_1` between
        the bootstrap re-estimates and the estimate plus the :math:`W_1` between their
        mean and the estimate, in the cost's units.
    """

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    n_boot: int
    seed: int
    n_iter: int
    estimator: str = "stopped"
    w1_radius: float | None = None

    def release_dict(self) -> dict[str, Any]:
        """The publishable summary (no arrays): method, level, replicates, radius."""
        how = ("parametric bootstrap of the estimate through the public channel"
               if self.estimator == "stopped" else "bootstrap of the released histogram")
        return {"method": f"{how}; basic intervals per cell (indicative); W1 radius: "
                          "the level quantile of W1(re-estimate, estimate) plus "
                          "W1(mean re-estimate, estimate)",
                "estimator": self.estimator, "level": self.level,
                "level_is": "nominal (measured coverage: docs/sampling_estimate.md)",
                "n_boot": self.n_boot, "seed": self.seed, "n_iter": self.n_iter,
                "w1_radius": self.w1_radius}


def _em_rows(counts: np.ndarray, ch: np.ndarray, steps: int) -> np.ndarray:
    """EM from uniform for every row of ``counts`` ``(B, k_v)`` at once, ``steps`` steps."""
    f = counts / counts.sum(axis=1, keepdims=True)
    theta = np.full((counts.shape[0], ch.shape[0]), 1.0 / ch.shape[0])
    for _ in range(steps):
        pred = theta @ ch
        ratio = np.divide(f, pred, out=np.zeros_like(f), where=pred > 0)
        theta = theta * (ratio @ ch.T)
        theta /= np.maximum(theta.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    return theta


def estimate_intervals(sample_counts: object, channel: object | None = None, *,
                       epsilon: float | None = None, estimator: str = "stopped",
                       level: float = 0.9, n_boot: int = 200, seed: int = 0,
                       cost: object | None = None) -> EstimateIntervals:
    r"""Bootstrap intervals of a population estimate: its uncertainty statement.

    ``estimator="stopped"`` (the linear variant; needs ``channel`` and ``epsilon``): a
    **parametric** bootstrap of :func:`estimate_linear_stopped`. From the estimate
    :math:`\hat\theta`, ``n_boot`` report histograms are drawn from the multinomial of
    ``n`` reports with law :math:`\hat\theta W` (what the reports would be if the
    estimate were the population), each re-estimated by the same rule.
    ``"histogram"`` (:func:`estimate_direct`) and ``"krr"`` (k-RR's debiased estimate;
    needs ``epsilon``): the histogram of the released reports is resampled
    (multinomial of ``n`` draws from it) and re-estimated.

    **The statement** (with ``cost`` ``(k, k)``, the public ground cost between the
    points): :math:`W_1(\bar\mu, \hat\theta) \le` ``w1_radius``, the ``level``
    quantile of :math:`W_1(\hat\theta^*_b, \hat\theta)` over the replicates plus the
    bootstrap bias :math:`W_1(\overline{\hat\theta^*}, \hat\theta)` (the bootstrap
    world's population is the smooth estimate, so the spread alone understates the
    shrinkage of a peaked population). Measured on simulations of four public data sets
    (``docs/sampling_estimate.md``) it held at least as often as ``level`` says.

    **Per cell**, indicative only: the basic bootstrap interval
    :math:`[2\hat\theta_i - q_{hi}, 2\hat\theta_i - q_{lo}]` of the re-estimates'
    ``level`` quantiles, clipped to [0, 1]; it corrects the shrinkage to first order
    only, and the measured share of cells covered is below ``level`` (0.6 to 0.8 at
    0.9, ``docs/sampling_estimate.md``). Post-processing: the draws come from
    ``numpy.random.default_rng(seed)``, public randomness unrelated to the privacy
    noise, so the same reports give the same intervals.
    """
    c = _check_sample_counts(sample_counts)
    if estimator not in ("stopped", "histogram", "krr"):
        raise InvalidParameterError("estimator", estimator,
                                    "'stopped', 'histogram' or 'krr'")
    lev = float(level)
    if not 0.0 < lev < 1.0:
        raise InvalidParameterError("level", level, "a number in (0, 1)")
    boots = check_int(n_boot, "n_boot", minimum=2)
    seed_ = check_int(seed, "seed", minimum=0)
    n = float(c.sum())
    rng = np.random.default_rng(seed_)
    steps = 0
    if estimator == "stopped":
        if channel is None or epsilon is None:
            raise InvalidParameterError("channel" if channel is None else "epsilon", None,
                                        "the public channel and epsilon of the linear "
                                        "variant")
        steps = stopping_iterations(n, epsilon)
        est = estimate_linear_stopped(c, channel, epsilon=epsilon)
        ch = np.asarray(channel, dtype=np.float64)
        law = np.clip(est @ ch, 0.0, None)
        draws = rng.multinomial(int(round(n)), law / law.sum(), size=boots)
        reps = _em_rows(draws.astype(np.float64), ch, steps)
    else:
        f = c / n
        draws = rng.multinomial(int(round(n)), f, size=boots).astype(np.float64)
        if estimator == "krr":
            if epsilon is None:
                raise InvalidParameterError("epsilon", None, "k-RR's epsilon")
            est = krr_estimate(c, epsilon=epsilon, project=True)
            reps = np.array([krr_estimate(d, epsilon=epsilon, project=True) for d in draws])
        else:
            est = f
            reps = draws / draws.sum(axis=1, keepdims=True)
    q_lo, q_hi = np.quantile(reps, [(1 - lev) / 2, (1 + lev) / 2], axis=0)
    lower = np.clip(2 * est - q_hi, 0.0, 1.0)
    upper = np.clip(2 * est - q_lo, 0.0, 1.0)
    radius = None
    if cost is not None:
        spread = float(np.quantile(_w1_to(reps, est, cost), lev))
        radius = spread + float(_w1_to(reps.mean(axis=0)[None, :], est, cost)[0])
    return EstimateIntervals(estimate=est, lower=lower, upper=upper, level=lev,
                             n_boot=boots, seed=seed_, n_iter=steps, estimator=estimator,
                             w1_radius=radius)


def _w1_to(rows: np.ndarray, target: np.ndarray, cost: object) -> np.ndarray:
    r"""Exact :math:`\langle\gamma^*, C\rangle` between each row and ``target``."""
    import ot

    cm = check_finite_array(cost, "cost", ndim=2)
    if cm.shape != (target.size, target.size):
        raise InvalidParameterError("cost", f"<array of shape {cm.shape}>",
                                    f"(k, k) with k = {target.size}")
    return np.array([float(ot.emd2(r / r.sum(), target, cm, numItermax=1_000_000))
                     for r in rows])


def estimate_population(sample: ReleasedReports, mechanism: SamplingMechanism, *,
                        channel: object | None = None,
                        estimator: str = "stopped") -> np.ndarray:
    """The server's estimate of the population distribution from released reports.

    EM through the public channel for the linear variant, stopped by the public rule
    (``estimator="stopped"``, :func:`estimate_linear_stopped`, the default) or run to
    convergence (``"mle"``, :func:`estimate_linear`); k-RR's debiased frequencies
    projected onto the simplex for k-RR; else the histogram (:func:`estimate_direct`, the
    mean of the users' laws). Post-processing of the
    released histogram and public parameters only: no budget. ``channel``: the
    mechanism's channel when the caller already has it (else the one the sample
    recorded, else ``k`` projections).
    :meth:`~privot.sampling.result.PopulationSample.estimate` gives the same without the
    mechanism.
    """
    if estimator not in ESTIMATORS:
        raise InvalidParameterError("estimator", estimator, f"one of {ESTIMATORS}")
    hist = sample.counts_per_output()
    if sample.variant == "linear":
        if channel is None:  # the one the reports were drawn through, when recorded
            channel = sample.channel if sample.channel is not None else mechanism.channel()
        if estimator == "mle":
            return estimate_linear(hist, channel)
        return estimate_linear_stopped(hist, channel, epsilon=mechanism.epsilon)
    if mechanism.name == "krr":
        return krr_estimate(hist, epsilon=mechanism.epsilon, project=True)
    return estimate_direct(hist)
