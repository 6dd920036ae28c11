"""Statistical audit of the private repair's release
(:func:`privot.learning.repair.private_repair`), run through its production call.

Unit: one record of one group; relation: replace one record inside one group (labels and
sizes public). D0 has two groups of scores on [0, 1] with 8 bins; D1 replaces one score
of group 0 in bin 1 by one in bin 6, so the concatenated histograms differ by 1 in two
cells (L1 distance 2, the sensitivity). Each release is reduced to the Neyman-Pearson
statistic of the pair for the noisy counts of those two cells,
``T = (eps / 2) * sum_c (|z_c - a_c| - |z_c - b_c|)``; the CDFs, quantiles and the
barycenter are post-processing of the counts. :func:`privot.privacy.audit.audit` at
confidence 0.999: a correct mechanism is reported ``violated`` with probability at most
1e-3 per assertion (the false-alarm rate). Seeds are fixed. The audit's power is checked
on a broken variant calibrated to sensitivity 1 instead of 2 (its true epsilon is twice
the claim). The audit is run twice on the correct release: with a seeded numpy generator
and on the production entropy path (the OS-CSPRNG source class fed seeded raw bytes,
``tests/secure_bits.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import privot.learning.repair as repair_module
from privot.learning.repair import group_histograms, private_repair
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON = 1.0
BINS = 8
CELLS = (1, 6)  # group 0's bins that the replaced record leaves and enters
GROUPS = np.array([0] * 6 + [1] * 5)
SCORES0 = np.array([0.05, 0.15, 0.2, 0.4, 0.55, 0.9, 0.1, 0.3, 0.6, 0.7, 0.95])


def _pair():
    s1 = SCORES0.copy()
    s1[1] = 0.8  # bin 1 -> bin 6, same group: replace-one-in-group
    return SCORES0, s1


def _sampler(a: np.ndarray, b: np.ndarray):
    def sampler(scores, n, rng):
        out = np.empty(n)
        for k in range(n):
            z = private_repair(scores, GROUPS, epsilon=EPSILON, bins=BINS, levels=2,
                               rng=rng).noisy_counts[0, list(CELLS)]
            out[k] = EPSILON / 2 * float(np.sum(np.abs(z - a) - np.abs(z - b)))
        return out
    return sampler


def _counts(scores):
    return group_histograms(scores, GROUPS, 2, (0.0, 1.0), BINS)[0][0, list(CELLS)]


def test_the_repair_release_passes_its_audit():
    s0, s1 = _pair()
    h0, h1 = (group_histograms(s, GROUPS, 2, (0.0, 1.0), BINS)[0] for s in (s0, s1))
    assert np.abs(h1 - h0).sum() == 2  # the sensitivity, reached
    res = audit(_sampler(_counts(s0), _counts(s1)), s0, s1, epsilon=EPSILON, n_runs=4000,
                confidence=CONFIDENCE, rng=3)
    assert not res.violated, res
    assert res.epsilon_lower > 0.4, res  # the statistic sees the replaced record


def test_the_audit_catches_a_repair_calibrated_to_sensitivity_one(monkeypatch):
    monkeypatch.setattr(repair_module, "SENSITIVITY", 1)  # the bug: one bin, not two
    s0, s1 = _pair()
    res = audit(_sampler(_counts(s0), _counts(s1)), s0, s1, epsilon=EPSILON, n_runs=4000,
                confidence=CONFIDENCE, rng=4)
    assert res.violated, res


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_the_noise_scale_is_two_over_epsilon(epsilon):
    r = private_repair(SCORES0, GROUPS, epsilon=epsilon, bins=BINS, rng=0)
    assert r.scale == pytest.approx(2.0 / epsilon)


def test_the_audit_on_the_production_entropy_path():
    """The same audit with the noise drawn by the OS-CSPRNG code path (fed seeded raw
    bytes, ``tests/secure_bits.py``), the path a publishable release takes."""
    from secure_bits import secure_source

    s0, s1 = _pair()
    a, b = _counts(s0), _counts(s1)

    def sampler(scores, n, rng):
        out = np.empty(n)
        for k in range(n):
            r = private_repair(scores, GROUPS, epsilon=EPSILON, bins=BINS, levels=2,
                               rng=secure_source(int(rng.integers(2**32))))
            assert r.secure
            z = r.noisy_counts[0, list(CELLS)]
            out[k] = EPSILON / 2 * float(np.sum(np.abs(z - a) - np.abs(z - b)))
        return out

    res = audit(sampler, s0, s1, epsilon=EPSILON, n_runs=4000, confidence=CONFIDENCE,
                rng=5)
    assert not res.violated, res
    assert res.epsilon_lower > 0.4, res
