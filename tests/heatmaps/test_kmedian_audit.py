"""Statistical audit of :func:`~privot.heatmaps.kmedian.private_kmedian` (paper 002, App. A).

The whole production call is run (Algorithm 1 on the points' cell indicators, the
RECONSTRUCT LP, the k-median on the coreset), on neighbouring inputs under its stated
relation: add/remove one point (one user = one point). D0 has seven points on a 4 x 4
grid, D1 adds one in cell (0, 0). With ``w = 4`` the measured levels are 1 and 2, with
budgets eps_1 + eps_2 = eps.

Each release is reduced to the Neyman-Pearson statistic of the pair for the released
levels (the log-likelihood ratio of D1 against D0 under Laplace noise of scale
1/eps_i), ``T = sum_i eps_i sum_c (|z_ic - a_ic| - |z_ic - b_ic|)``, ``z_i = 2^i y'_i``
and ``a, b`` the exact pyramids of the two inputs; the coreset and the centres are
post-processing of ``y'`` and need no statistic of their own.
:func:`privot.privacy.audit.audit` lower-bounds epsilon with Clopper-Pearson intervals at
confidence 0.999: a correct mechanism is reported ``violated`` with probability at most
1e-3 per assertion (the false-alarm rate). Seeds are fixed, so runs are reproducible.
The audit's power is checked on the same call run with three times the claimed epsilon.
"""

from __future__ import annotations

import numpy as np

from privot.heatmaps import Grid, pyramid
from privot.heatmaps.kmedian import private_kmedian
from privot.privacy.audit import audit

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
EPSILON = 1.0
W = 4
GRID = Grid((0.0, 4.0, 0.0, 4.0), 4)
D0 = np.array([[0.5, 0.5], [1.5, 2.5], [2.5, 1.5], [0.5, 3.5], [3.5, 0.5], [1.5, 1.5],
               [2.5, 2.5]])
D1 = np.vstack([D0, [[0.6, 0.6]]])  # one point added, in cell (0, 0)


def _cells(points: np.ndarray) -> np.ndarray:
    """Exact per-cell counts (each point its cell's indicator, L1 norm 1)."""
    return np.bincount(GRID.assign(points[:, 0], points[:, 1]).cells,
                       minlength=16).reshape(4, 4).astype(float)


def _sampler(run_epsilon: float):
    probe = private_kmedian(D0, grid=GRID, k=1, epsilon=EPSILON, w=W, n_init=1,
                            max_iter=5, rng=np.random.default_rng(0)).measurements
    q, eps_i = probe.start_level, np.array(probe.epsilons)
    a, b = pyramid(_cells(D0), start_level=q), pyramid(_cells(D1), start_level=q)

    def sampler(points, n, rng):
        out = np.empty(n)
        for k in range(n):
            m = private_kmedian(points, grid=GRID, k=1, epsilon=run_epsilon, w=W, n_init=1,
                                max_iter=5, rng=rng).measurements
            z = (np.ldexp(v, q + j) for j, v in enumerate(m.values))
            out[k] = sum(e * float(np.sum(np.abs(zi - ai) - np.abs(zi - bi)))
                         for e, zi, ai, bi in zip(eps_i, z, a, b, strict=True))
        return out

    return sampler


def test_neighbours_differ_by_one_point():
    assert np.abs(_cells(D1) - _cells(D0)).sum() == 1.0


def test_private_kmedian_passes_its_audit():
    res = audit(_sampler(EPSILON), D0, D1, epsilon=EPSILON, n_runs=2000,
                confidence=CONFIDENCE, rng=1)
    assert not res.violated, res
    assert res.epsilon_lower > 0.3, res  # the statistic sees the added point


def test_the_audit_catches_three_times_the_claimed_epsilon():
    res = audit(_sampler(3 * EPSILON), D0, D1, epsilon=EPSILON, n_runs=2000,
                confidence=CONFIDENCE, rng=2)
    assert res.violated, res
