r"""The server's estimators: post-processing of the released reports (paper 003 at scale).

What the server holds after :func:`~privot.sampling.population.sample_population` is the
histogram of the released output indices, ``sample_counts`` ``(k_v,)`` (the multiset,
without user ids), and the public parameters. From them alone:

* :func:`estimate_direct` -- the direct variant's empirical histogram, an estimate of
  :math:`\frac1n\sum_u M[\mu_u]` (biased towards the base measure: :math:`M` is not
  linear, so there is nothing public to invert);
* :func:`estimate_linear` -- the linear variant's population :math:`\bar\mu` by
  iterative Bayesian update (EM) through the public channel ``W`` ``(k, k_v)``, whose
  reports are samples of :math:`\bar\mu W` (:func:`linear_law`);
* :func:`estimate_population` -- the right one of the two for a released sample (k-RR:
  :func:`~privot.sampling.baselines.krr_estimate`, the debiased frequencies projected
  onto the simplex).

Privacy
-------
No release here. Every function reads the released histogram and public parameters
only (the channel, epsilon, the mechanism's name): post-processing of an eps-LDP
release, no budget. ``docs/privacy/sampling.md``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from privot._validation import check_finite_array, check_int, check_nonnegative
from privot.errors import InvalidParameterError
from privot.sampling._checks import CHANNEL_ATOL as _CHANNEL_ATOL
from privot.sampling.baselines import krr_estimate
from privot.sampling.mechanism import SamplingMechanism

__all__ = [
    "ReleasedReports",
    "estimate_direct",
    "estimate_linear",
    "estimate_population",
    "linear_law",
]


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


def estimate_population(sample: ReleasedReports, mechanism: SamplingMechanism, *,
                        channel: object | None = None) -> np.ndarray:
    """The server's estimate of the population distribution from released reports.

    EM through the public channel (:func:`estimate_linear`) for the linear variant;
    k-RR's debiased frequencies projected onto the simplex for k-RR; else the histogram
    (:func:`estimate_direct`, the mean of the users' laws). Post-processing of the
    released histogram and public parameters only: no budget. ``channel``: the
    mechanism's channel when the caller already has it (else the one the sample
    recorded, else ``k`` projections).
    :meth:`~privot.sampling.result.PopulationSample.estimate` gives the same without the
    mechanism.
    """
    hist = sample.counts_per_output()
    if sample.variant == "linear":
        if channel is None:  # the one the reports were drawn through, when recorded
            channel = sample.channel if sample.channel is not None else mechanism.channel()
        return estimate_linear(hist, channel)
    if mechanism.name == "krr":
        return krr_estimate(hist, epsilon=mechanism.epsilon, project=True)
    return estimate_direct(hist)
