"""Statistical audit of Algorithm 1 (``privot.heatmaps.measure``), unit = one user.

Neighbouring inputs under add/remove-one-user: a small dataset D0 on a 4 x 4 grid and
D1 = D0 plus one user with four points (three in cell (0, 0), one in cell (0, 1)). With
``w = 4`` the first measured level is q = 1, so two levels (4 and 16 cells) are released
with budgets eps_1 + eps_2 = eps (gamma = 1/sqrt(2)).

Each run calls :func:`~privot.heatmaps.measure` itself (seeded generator from the
audit) and reduces the released levels to one statistic: the log-likelihood ratio of
D1 against D0 for independent Laplace noise of scale 1/eps_i,

    T = sum_i eps_i sum_c ( |z_ic - a_ic| - |z_ic - b_ic| ),  z_i = 2^i y'_i,

with a = P_i s(D0), b = P_i s(D1) (the Neyman-Pearson statistic for this pair, so the
threshold events the audit searches are the most informative ones).
:func:`privot.privacy.audit.audit` lower-bounds epsilon with Clopper-Pearson intervals
at confidence 0.999: a correct mechanism is reported ``violated`` with probability at
most 1e-3 per test (the false-alarm rate). Seeds are fixed, so runs are reproducible.

Two broken measurements must be caught: (1) the aggregation forgets the per-user
normalisation (each point weighs 1, so one user moves the pyramid by up to 4 in L1
while the noise is calibrated to 1), and (2) noise calibrated for eps / 0.3.
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.heatmaps import Grid, measure, pyramid, user_distributions_sum
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON = 1.0
W = 4  # q = floor(log2 sqrt 4) = 1: levels 1 and 2 of a 4 x 4 grid
GRID = Grid((0.0, 4.0, 0.0, 4.0), 4)

_USERS = np.array([1, 1, 2, 3, 3, 3, 4, 5, 5])
_X = np.array([0.5, 1.5, 2.5, 0.5, 0.5, 3.5, 1.5, 2.5, 2.6])
_Y = np.array([0.5, 2.5, 1.5, 3.5, 3.5, 0.5, 1.5, 2.5, 2.6])
# the added user: 3 points in cell (0, 0), 1 in cell (0, 1) (row 0, col 1)
_NEW_X = np.array([0.5, 0.6, 0.7, 1.5])
_NEW_Y = np.array([0.5, 0.6, 0.7, 0.5])


def _pair(normalise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    users1 = np.concatenate([_USERS, np.full(4, 99)])
    x1 = np.concatenate([_X, _NEW_X])
    y1 = np.concatenate([_Y, _NEW_Y])
    if normalise:
        return (user_distributions_sum(_USERS, _X, _Y, GRID).sums,
                user_distributions_sum(users1, x1, y1, GRID).sums)
    # the bug: per-point counts instead of per-user distributions
    def counts(x, y):
        return np.bincount(GRID.assign(x, y).cells, minlength=16).reshape(4, 4).astype(float)
    return counts(_X, _Y), counts(x1, y1)


def _sampler(s0: np.ndarray, s1: np.ndarray, *, noise_factor: float = 1.0):
    """Runs ``measure`` n times; reduces each release to the log-likelihood ratio T."""
    probe = measure(s0, epsilon=EPSILON, w=W, rng=np.random.default_rng(0))
    q, eps_i = probe.start_level, np.array(probe.epsilons)
    a = pyramid(s0, start_level=q)
    b = pyramid(s1, start_level=q)

    def sampler(s, n, rng):
        out = np.empty(n)
        for k in range(n):
            m = measure(s, epsilon=EPSILON / noise_factor, w=W, rng=rng)
            out[k] = sum(e * float(np.sum(np.abs(z - ai) - np.abs(z - bi)))
                         for e, z, ai, bi in zip(
                             eps_i, (np.ldexp(v, q + j) for j, v in enumerate(m.values)),
                             a, b, strict=True))
        return out

    return sampler


def test_the_neighbours_differ_by_one_user_of_l1_norm_one():
    s0, s1 = _pair()
    assert np.abs(s1 - s0).sum() == pytest.approx(1.0)
    for lv0, lv1 in zip(pyramid(s0, start_level=1), pyramid(s1, start_level=1), strict=True):
        assert np.abs(lv1 - lv0).sum() == pytest.approx(1.0)  # sensitivity 1 per level
    b0, b1 = _pair(normalise=False)
    assert np.abs(b1 - b0).sum() == 4.0  # the buggy aggregation moves by n_u = 4


def test_measure_passes_its_audit():
    s0, s1 = _pair()
    res = audit(_sampler(s0, s1), s0, s1, epsilon=EPSILON, n_runs=6_000,
                confidence=CONFIDENCE, rng=21)
    assert not res.violated, res.summary()
    # the audit has power: about 0.62 at these settings (the threshold events of T
    # approach the worst case e^eps only in the tail, which 6,000 runs sample sparsely)
    assert res.epsilon_lower > 0.45, res.summary()


def test_unnormalised_users_are_caught():
    s0, s1 = _pair(normalise=False)
    res = audit(_sampler(s0, s1), s0, s1, epsilon=EPSILON, n_runs=1_000,
                confidence=CONFIDENCE, rng=22)
    assert res.violated, res.summary()


def test_noise_scaled_down_is_caught():
    s0, s1 = _pair()
    res = audit(_sampler(s0, s1, noise_factor=0.3), s0, s1, epsilon=EPSILON, n_runs=2_000,
                confidence=CONFIDENCE, rng=23)
    assert res.violated, res.summary()
