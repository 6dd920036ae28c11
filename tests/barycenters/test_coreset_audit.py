"""Statistical audit of the private coreset (Private Measure Mechanism), unit = one point.

Neighbouring inputs under replace-one-point (group size public): D0 has six points in
[0, 1] (bounds the unit box), D1 is D0 with its point 0.05 replaced by 0.95. At depth 2
(the leaves are the quarters of [0, 1]) the replacement moves one unit from leaf 0 to
leaf 3: level 1 changes by (-1, +1) and level 2 by (-1, 0, 0, +1), L1 distance 2 at
both levels -- the worst case the noise is calibrated to.

Two audits, both with :func:`privot.privacy.audit.audit` at confidence 0.999 (a
correct mechanism is reported ``violated`` with probability at most 1e-3 per test: the
false-alarm rate); seeds are fixed, so runs are reproducible:

* the noisy level counts (:func:`noisy_level_counts`, the only step that reads the
  data), reduced to the Neyman-Pearson statistic for this pair,
  ``T = sum_j (eps_j / 2) sum_c (|z_jc - a_jc| - |z_jc - b_jc|)`` (the log-likelihood
  ratio of D1 against D0 for discrete Laplace noise of scale 2/eps_j), so the audit's
  threshold events are the most informative ones;
* the whole release (:func:`private_coreset`, consistency and placement included),
  reduced to the released count of leaf 3 minus that of leaf 0 (post-processing only
  loses information, so this audit is weaker but checks the end-to-end path).

Broken variants must be caught: the noise calibrated for sensitivity 1 instead of 2
(noise scale halved, true epsilon 2 eps) on the noisy counts, where the audit is
sharp; and, end to end, noise scaled down four-fold (true epsilon 4 eps), since the
post-processed release shows only part of the privacy loss (about 0.5 of the claimed
1 at these settings).
"""

from __future__ import annotations

import numpy as np

from privot.barycenters.coresets import (
    leaf_index,
    noise_schedule,
    noisy_level_counts,
    private_coreset,
)
from privot.barycenters.geometry import PublicBounds
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON = 1.0
DEPTH = 2
BOUNDS = PublicBounds.box([0.0], [1.0])
D0 = np.array([[0.05], [0.3], [0.4], [0.6], [0.7], [0.8]])
D1 = np.array([[0.95], [0.3], [0.4], [0.6], [0.7], [0.8]])
SCHEDULE = noise_schedule(EPSILON, depth=DEPTH, cell_box=BOUNDS.cell_box())


def _levels_exact(points: np.ndarray) -> list[np.ndarray]:
    ids = leaf_index(BOUNDS.to_unit(points)[0], cell_box=BOUNDS.cell_box(), depth=DEPTH)
    leaves = np.bincount(ids, minlength=1 << DEPTH)
    return [leaves.reshape(1 << j, -1).sum(axis=1) for j in range(1, DEPTH + 1)]


def _noise_sampler(*, noise_factor: float = 1.0):
    """Runs noisy_level_counts n times; each run reduced to the log-likelihood ratio."""
    a, b = _levels_exact(D0), _levels_exact(D1)

    def sampler(points, n, rng):
        unit = BOUNDS.to_unit(points)[0]
        ids, cnt = np.unique(leaf_index(unit, cell_box=BOUNDS.cell_box(), depth=DEPTH),
                             return_counts=True)
        out = np.empty(n)
        for k in range(n):
            levels, _ = noisy_level_counts(ids, cnt, depth=DEPTH,
                                           level_epsilons=SCHEDULE / noise_factor, rng=rng)
            out[k] = sum(e / 2.0 * float(np.sum(np.abs(z - ai) - np.abs(z - bi)))
                         for e, z, ai, bi in zip(SCHEDULE, levels, a, b, strict=True))
        return out

    return sampler


def _release_sampler(*, noise_factor: float = 1.0):
    """Runs the whole private_coreset; statistic: released count of leaf 3 minus leaf 0."""
    def sampler(points, n, rng):
        out = np.empty(n)
        for k in range(n):
            leaves = private_coreset(points, bounds=BOUNDS, epsilon=EPSILON / noise_factor,
                                     depth=DEPTH, placement="centre",
                                     rng=rng).dense_leaf_counts()
            out[k] = leaves[3] - leaves[0]
        return out
    return sampler


def test_the_neighbours_differ_by_one_replaced_point():
    for lv0, lv1 in zip(_levels_exact(D0), _levels_exact(D1), strict=True):
        assert np.abs(lv1 - lv0).sum() == 2  # the sensitivity the noise is calibrated to
    assert D0.shape == D1.shape and np.count_nonzero(np.any(D0 != D1, axis=1)) == 1


def test_noisy_counts_pass_their_audit():
    res = audit(_noise_sampler(), D0, D1, epsilon=EPSILON, n_runs=30_000,
                confidence=CONFIDENCE, rng=31)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.6, res.summary()  # the audit has power


def test_whole_release_passes_its_audit():
    res = audit(_release_sampler(), D0, D1, epsilon=EPSILON, n_runs=10_000,
                confidence=CONFIDENCE, rng=32)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.2, res.summary()  # about 0.3: post-processing hides some


def test_noise_for_sensitivity_one_is_caught():
    res = audit(_noise_sampler(noise_factor=0.5), D0, D1, epsilon=EPSILON, n_runs=10_000,
                confidence=CONFIDENCE, rng=33)
    print(res.summary())
    assert res.violated, res.summary()


def test_whole_release_with_quartered_noise_is_caught():
    res = audit(_release_sampler(noise_factor=0.25), D0, D1, epsilon=EPSILON, n_runs=10_000,
                confidence=CONFIDENCE, rng=34)
    print(res.summary())
    assert res.violated, res.summary()

