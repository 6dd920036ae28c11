"""Statistical audit of the heatmap baselines (paper 002, Sec. 4): Laplace per cell and
its top-t% threshold variant, run through their production calls.

Unit: one user; relation: add/remove one user. D0 is the per-user cell sum of the
heatmap audit's users on a 4 x 4 grid, D1 adds a user with four points (three in cell
(0, 0), one in cell (0, 1)), so the sums differ by one distribution of L1 norm 1. Each
release is reduced to the Neyman-Pearson statistic of the pair for the released noisy
cells, ``T = eps * sum_c (|z_c - a_c| - |z_c - b_c|)``; the zeroing, the top-t% cut and
the normalisation are post-processing of ``z``. :func:`privot.privacy.audit.audit` at
confidence 0.999: a correct mechanism is reported ``violated`` with probability at most
1e-3 per assertion (the false-alarm rate). Seeds are fixed. The audit's power is checked
on a broken aggregation that forgets the per-user normalisation (one user moves the
cells by 4 in L1 while the noise is calibrated to 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.heatmaps import Grid, user_distributions_sum
from privot.heatmaps.baselines import laplace_baseline, threshold_baseline
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON = 1.0
GRID = Grid((0.0, 4.0, 0.0, 4.0), 4)
USERS = np.array([1, 1, 2, 3, 3, 3, 4, 5, 5])
X = np.array([0.5, 1.5, 2.5, 0.5, 0.5, 3.5, 1.5, 2.5, 2.6])
Y = np.array([0.5, 2.5, 1.5, 3.5, 3.5, 0.5, 1.5, 2.5, 2.6])
NEW_X = np.array([0.5, 0.6, 0.7, 1.5])
NEW_Y = np.array([0.5, 0.6, 0.7, 0.5])
BASELINES = {"laplace": laplace_baseline,
             "threshold": lambda s, **kw: threshold_baseline(s, top_percent=25.0, **kw)}


def _pair(normalise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    users1, x1, y1 = (np.concatenate([USERS, np.full(4, 99)]), np.concatenate([X, NEW_X]),
                      np.concatenate([Y, NEW_Y]))
    if normalise:
        return (user_distributions_sum(USERS, X, Y, GRID).sums,
                user_distributions_sum(users1, x1, y1, GRID).sums)

    def counts(x, y):  # the bug: per-point counts instead of per-user distributions
        return np.bincount(GRID.assign(x, y).cells, minlength=16).reshape(4, 4).astype(float)
    return counts(X, Y), counts(x1, y1)


def _sampler(release, a: np.ndarray, b: np.ndarray):
    def sampler(sums, n, rng):
        out = np.empty(n)
        for k in range(n):
            z = release(sums, epsilon=EPSILON, rng=rng).noisy
            out[k] = EPSILON * float(np.sum(np.abs(z - a) - np.abs(z - b)))
        return out
    return sampler


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_passes_its_audit(name):
    s0, s1 = _pair()
    assert np.abs(s1 - s0).sum() == pytest.approx(1.0)
    res = audit(_sampler(BASELINES[name], s0, s1), s0, s1, epsilon=EPSILON, n_runs=4000,
                confidence=CONFIDENCE, rng=3)
    assert not res.violated, res
    assert res.epsilon_lower > 0.4, res  # the statistic sees the added user


def test_the_audit_catches_a_baseline_without_per_user_normalisation():
    s0, s1 = _pair(normalise=False)
    assert np.abs(s1 - s0).sum() == 4.0
    res = audit(_sampler(laplace_baseline, s0, s1), s0, s1, epsilon=EPSILON, n_runs=4000,
                confidence=CONFIDENCE, rng=4)
    assert res.violated, res
