"""Statistical audit of output perturbation (``output_perturbation``), unit = one point.

Neighbouring inputs under replace-one (paper 000 Def. 4): k = 2 groups, m = 1 atom,
k' = 1 part. Group 0 is the single point (-1/2, 0) in D0 and (1/2, 0) in D1 (the two
ends of a diameter of the unit ball B_0(1/2): the worst case), group 1 is the origin.
With m = 1 every plan is the whole group, so each step releases the mean of group means
plus noise: the two inputs' outputs differ by exactly the sensitivity sqrt(m)/(k k') =
1/2 in the first coordinate at every step.

Each run calls :func:`output_perturbation` itself (T = 3 steps, analytic calibration,
seeded generator from the audit) and reduces the release to the Neyman-Pearson
statistic for this pair: the sum over steps of the first coordinate of the released
atom. :func:`privot.privacy.audit.audit` lower-bounds epsilon with Clopper-Pearson
intervals at confidence 0.999: a correct mechanism is reported ``violated`` with
probability at most 1e-3 per test (the false-alarm rate). Seeds are fixed.

A broken calibration must be caught: the sensitivity computed as if the data lived in
a ball of radius 1/8 (a quarter of the true one), i.e. noise 4 times too small.
"""

from __future__ import annotations

import numpy as np

from privot.barycenters import perturbation
from privot.barycenters.perturbation import output_perturbation
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON, DELTA = 1.0, 1e-3
ANCHOR = np.zeros((1, 2))


def _pair():
    other = np.zeros((1, 2))
    return ([np.array([[-0.5, 0.0]]), other], [np.array([[0.5, 0.0]]), other])


def _sampler(groups, n, rng):
    out = np.empty(n)
    for r in range(n):
        rel = output_perturbation(groups, ANCHOR, epsilon=EPSILON, delta=DELTA, iterations=3,
                                  rng=rng)
        out[r] = sum(step[0, 0] for step in rel.trajectory)
    return out


def test_output_perturbation_is_not_flagged():
    d0, d1 = _pair()
    res = audit(_sampler, d0, d1, epsilon=EPSILON, delta=DELTA, n_runs=6_000,
                confidence=CONFIDENCE, rng=2026)
    assert not res.violated, res
    assert res.epsilon_lower > 0.2  # the pair is informative: the audit is not vacuous


def test_too_little_noise_is_flagged(monkeypatch):
    real = perturbation.perturbation_sensitivity

    def quarter(m, group_weights, splits):
        return real(m, group_weights, splits) / 4

    monkeypatch.setattr(perturbation, "perturbation_sensitivity", quarter)
    d0, d1 = _pair()
    res = audit(_sampler, d0, d1, epsilon=EPSILON, delta=DELTA, n_runs=6_000,
                confidence=CONFIDENCE, rng=2027)
    assert res.violated, res
