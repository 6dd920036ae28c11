"""Statistical audits of every mechanism in ``privot.privacy``.

Each mechanism runs many times on a pair of neighbouring inputs and
:func:`privot.privacy.audit.audit` lower-bounds its epsilon with Clopper-Pearson
intervals. A correct mechanism is reported ``violated`` with probability at most
``1 - confidence`` = 1e-3 per test (the false-alarm rate); the seeds are fixed, so a
run is reproducible. Each mechanism is also run *broken* (noise calibrated for a larger
epsilon than it claims) and the audit must catch it.

Samplers are vectorised: one call of the mechanism on ``n`` copies of the input with a
seeded generator gives ``n`` independent releases of the same (per-coordinate)
distribution, because every coordinate gets independent noise of the calibrated scale.
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.privacy import noise
from privot.privacy.audit import audit
from privot.privacy.mechanisms import (
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
)

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
RUNS = 200_000


def _laplace(factor: float = 1.0):
    """Counts differing by one user (L1 sensitivity 1); ``factor`` < 1 breaks it."""
    def sampler(d, n, rng):
        return laplace_mechanism(np.full(n, float(d)), sensitivity=1.0,
                                 epsilon=1.0 / factor, rng=rng).value
    return sampler


def _laplace_vector(factor: float = 1.0):
    """Per-coordinate sensitivities (1, 2): neighbours move (0.5, 1), weighted L1 = 1."""
    sens = np.array([1.0, 2.0])

    def sampler(d, n, rng):
        x = np.tile(np.asarray(d, dtype=float), (n, 1))
        out = laplace_mechanism(x, sensitivity=sens, epsilon=1.0 / factor, rng=rng).value
        return out[:, 0] + out[:, 1] / 2.0  # the weighted sum the loss depends on
    return sampler


def _gaussian(calibration: str, eps: float, factor: float = 1.0):
    def sampler(d, n, rng):
        rel = gaussian_mechanism(np.full(n, float(d)), sensitivity=1.0, epsilon=eps,
                                 delta=1e-5, calibration=calibration, rng=rng)
        # breaking: shrink the noise around the true value by `factor`
        return d + (rel.value - d) * factor
    return sampler


def _discrete_laplace(factor: float = 1.0):
    def sampler(d, n, rng):
        return discrete_laplace_mechanism(np.full(n, d, dtype=np.int64), sensitivity=1,
                                          epsilon=1.0 / factor, rng=rng).value
    return sampler


def _polya_sum(factor: float = 1.0):
    """Shuffle-model noise: 20 parties' Polya shares summed onto a count."""
    def sampler(d, n, rng):
        shares = noise.polya_laplace_shares(20, factor * 1.0, size=n, rng=rng)
        return d + shares.sum(axis=0)
    return sampler


@pytest.mark.parametrize("name,sampler,lower", [
    ("laplace", _laplace(), 0.8),
    ("discrete-laplace", _discrete_laplace(), 0.8),
    ("polya-shares", _polya_sum(), 0.8),
])
def test_pure_mechanisms_pass_their_audit(name, sampler, lower):
    res = audit(sampler, 0, 1, epsilon=1.0, n_runs=RUNS, confidence=CONFIDENCE, rng=11)
    assert not res.violated, res.summary()
    assert res.epsilon_lower > lower, res.summary()  # the audit has power


def test_laplace_vector_neighbour_pair():
    res = audit(_laplace_vector(), (0.0, 0.0), (0.5, 1.0), epsilon=1.0, n_runs=RUNS,
                confidence=CONFIDENCE, rng=12)
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.5


@pytest.mark.parametrize("name,sampler", [
    ("laplace", _laplace(0.3)),
    ("discrete-laplace", _discrete_laplace(0.3)),
    ("polya-shares", _polya_sum(0.3)),
])
def test_broken_pure_mechanisms_are_caught(name, sampler):
    res = audit(sampler, 0, 1, epsilon=1.0, n_runs=RUNS, confidence=CONFIDENCE, rng=13)
    assert res.violated, res.summary()


def test_broken_laplace_vector_is_caught():
    res = audit(_laplace_vector(0.3), (0.0, 0.0), (0.5, 1.0), epsilon=1.0, n_runs=RUNS,
                confidence=CONFIDENCE, rng=14)
    assert res.violated, res.summary()


# The classic calibration adds more noise than needed, so its audit shows less.
@pytest.mark.parametrize("calibration,eps,power", [("analytic", 1.0, 0.3),
                                                   ("analytic", 3.0, 0.3),
                                                   ("classic", 0.9, 0.2)])
def test_gaussian_passes_its_audit(calibration, eps, power):
    res = audit(_gaussian(calibration, eps), 0.0, 1.0, epsilon=eps, delta=1e-5,
                n_runs=RUNS, confidence=CONFIDENCE, rng=15)
    assert not res.violated, res.summary()
    assert res.epsilon_lower > power * eps, res.summary()


@pytest.mark.parametrize("calibration,eps", [("analytic", 1.0), ("classic", 0.9)])
def test_broken_gaussian_is_caught(calibration, eps):
    res = audit(_gaussian(calibration, eps, factor=0.25), 0.0, 1.0, epsilon=eps,
                delta=1e-5, n_runs=RUNS, confidence=CONFIDENCE, rng=16)
    assert res.violated, res.summary()


def _exponential(factor: float = 1.0, candidates: int = 10):
    """Neighbours move every score by 1 (sensitivity 1): candidate 0 scores 1 on D0 and
    0 on D1, the others the reverse. With 10 candidates and eps = 1,
    P_D0[0] / P_D1[0] = (e^.5 / (e^.5 + 9)) / (1 / (1 + 9 e^.5)) = 2.46 (ln 0.90)."""
    def sampler(d, n, rng):
        scores = np.full(candidates, float(d))
        scores[0] = 1.0 - d
        return np.array([exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0 / factor,
                                               rng=rng).value == 0 for _ in range(n)],
                        dtype=float)
    return sampler


@pytest.mark.slow
def test_exponential_mechanism_passes_its_audit():
    res = audit(_exponential(), 0, 1, epsilon=1.0, n_runs=20_000, confidence=CONFIDENCE,
                rng=17)
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.5, res.summary()


@pytest.mark.slow
def test_broken_exponential_mechanism_is_caught():
    res = audit(_exponential(0.3), 0, 1, epsilon=1.0, n_runs=4_000, confidence=CONFIDENCE,
                rng=18)
    assert res.violated, res.summary()
