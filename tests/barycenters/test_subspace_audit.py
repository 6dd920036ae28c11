"""Statistical audit of the subspace method's releases, unit = one point (replace-one).

Neighbouring inputs: one group of n = 20 points in d = 3 (unit coordinates, the ball
B_0(1/2)); D0 and D1 differ in row 0 only, ``-g`` in D0 and ``+g`` in D1 with
``g = R/sqrt(3) (1, 1, 1)`` on the sphere (R = 1/2). The identity basis and
``subspace_dim = d`` (no DP second moment), so the releases below are exactly the
moment round and the Lloyd rounds.

* Moment round (``cells = 1``), the whole :func:`subspace_release`: the sums change
  by ``2g`` (L1 ``2R sqrt 3`` = 0.78 of the L1 bound, L2 ``2R``, the L2 supremum), the
  squares not at all. Statistic: from the released mean ``means[0]`` (``n`` times it is
  the noisy sum), the Neyman-Pearson statistic of the pair -- ``sum_j |x_j - a_j| -
  |x_j - b_j|`` for Laplace, ``sum_j x_j`` for Gaussian noise.
* Lloyd round, the step itself: the release's own noise (``subspace._Noise`` of the
  plan, exactly what :func:`subspace_release` adds) on :func:`lloyd_statistic` with
  public centres ``-+0.1 (1, 1, 1)``: row 0 moves between the two cells, a pair that
  attains both the L1 and the L2 sensitivity, reduced to the Neyman-Pearson statistic.
  Claimed: the step's own share of the plan (its epsilon, or its GDP ``mu`` converted to
  ``(epsilon, delta)``).
* Lloyd path end to end (``cells = 2, rounds = 1``): the whole release reduced to a
  released summary, ``sum_j w_j <atom_j, (1, 1, 1)>`` (the summary's mean along the
  moved direction; order-invariant). Post-processing (normalised masses, centres kept
  below the count floor, the public k-means) hides much of the loss, so this audit is
  weak; it checks the path end to end.

Every assertion uses :func:`privot.privacy.audit.audit` at confidence 0.999: a correct
mechanism is reported ``violated`` with probability at most 1e-3 per test (the
false-alarm rate). Seeds are fixed, so the runs are reproducible.

Power ("canaries"): the same harness on plans whose noise is deliberately too small
(:func:`dataclasses.replace` on the frozen :class:`SubspacePlan` and its ``noise``
dict) must report a violation: scale / sigma divided by 10 for the moment round and
the Lloyd step (true epsilon 10 times the claim on the worst case), and by 20 for the
Lloyd noise alone end to end (the weak, post-processed statistic needs more).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from privot.barycenters import subspace
from privot.barycenters.subspace import (
    RADIUS,
    SubspacePlan,
    lloyd_sensitivity,
    lloyd_statistic,
    moment_statistic,
    plan_subspace,
    subspace_release,
)
from privot.privacy import accounting
from privot.privacy.audit import audit
from privot.privacy.types import PrivacyCost

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
N, D = 20, 3
G = RADIUS / math.sqrt(D) * np.ones(D)
CENTRES = np.stack([-0.1 * np.ones(D), 0.1 * np.ones(D)])  # public, for the Lloyd step
PURE = PrivacyCost(1.0)
APPROX = PrivacyCost(2.0, 1e-3)


def _pair(rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d0, d1 = rest.copy(), rest.copy()
    d0[0], d1[0] = -G, G
    return d0, d1


# moment round: the other rows at the centre; Lloyd: two clusters on the first axis
MOMENT_PAIR = _pair(np.zeros((N, D)))
_CLUSTERS = np.zeros((N, D))
_CLUSTERS[1:10, 0], _CLUSTERS[10:, 0] = 0.35, -0.35
LLOYD_PAIR = _pair(_CLUSTERS)


def _plan(budget: PrivacyCost, *, cells: int = 1, rounds: int = 0) -> SubspacePlan:
    return plan_subspace(sizes=[N], m=1, d0=D, budget=budget, subspace_dim=D, cells=cells,
                         rounds=rounds)


def _weakened(plan: SubspacePlan, factor: float, names: tuple[str, ...] | None = None
              ) -> SubspacePlan:
    """The plan with the noise of ``names`` (default all) ``factor`` times too small."""
    noise = {k: dict(v) for k, v in plan.noise.items()}
    for name in names or tuple(noise):
        if plan.mechanism == "gaussian":
            noise[name]["sigma"] /= factor
        else:
            noise[name]["epsilon"] *= factor  # Laplace scale = sensitivity / epsilon
    return dataclasses.replace(plan, noise=noise)


def _moment_sampler(plan: SubspacePlan):
    """Runs subspace_release; statistic: Neyman-Pearson of the pair on n * means[0]."""
    a, b = moment_statistic(MOMENT_PAIR[0])[:D], moment_statistic(MOMENT_PAIR[1])[:D]

    def sampler(data, n, rng):
        out = np.empty(n)
        for r in range(n):
            rel = subspace_release([data], plan=plan, basis=None, sizes=[N], m=1, rng=rng)
            x = N * rel.means[0]
            out[r] = (np.sum(np.abs(x - a) - np.abs(x - b)) if plan.mechanism == "laplace"
                      else np.sum(x))
        return out

    return sampler


def _lloyd_step_sampler(plan: SubspacePlan):
    """The plan's Lloyd noise on lloyd_statistic (public centres); Neyman-Pearson."""
    a, b = (lloyd_statistic(x, CENTRES) for x in LLOYD_PAIR)

    def sampler(data, n, rng):
        add_noise = subspace._Noise(plan, rng)
        exact = lloyd_statistic(data, CENTRES)
        out = np.empty(n)
        for r in range(n):
            x = add_noise("lloyd", exact)
            out[r] = (np.sum(np.abs(x - a) - np.abs(x - b)) if plan.mechanism == "laplace"
                      else float(x @ (b - a)))
        return out

    return sampler


def _lloyd_release_sampler(plan: SubspacePlan):
    """Runs subspace_release (cells = 2, rounds = 1); statistic: sum_j w_j <atom_j, 1>."""
    def sampler(data, n, rng):
        out = np.empty(n)
        for r in range(n):
            rel = subspace_release([data], plan=plan, basis=None, sizes=[N], m=1, rng=rng)
            out[r] = float(rel.weights[0] @ rel.atoms[0].sum(axis=1))
        return out

    return sampler


def _step_claim(plan: SubspacePlan, delta: float) -> tuple[float, float]:
    """The Lloyd step's own guarantee in the plan."""
    step = plan.noise["lloyd"]
    if plan.mechanism == "laplace":
        return step["epsilon"], 0.0
    return accounting.gdp_to_epsilon(step["mu"], delta), delta


def test_the_pairs_are_neighbours_and_worst_case_for_the_lloyd_step():
    for d0, d1 in (MOMENT_PAIR, LLOYD_PAIR):
        assert np.count_nonzero(np.any(d0 != d1, axis=1)) == 1
        assert np.all(np.linalg.norm(d0, axis=1) <= RADIUS + 1e-15)
        assert np.all(np.linalg.norm(d1, axis=1) <= RADIUS + 1e-15)
    a, b = (lloyd_statistic(x, CENTRES) for x in LLOYD_PAIR)
    # attained (to rounding: the float sum is one ulp above; the grid slack covers it)
    assert math.isclose(np.abs(a - b).sum(), lloyd_sensitivity(D, "l1"), rel_tol=1e-14)
    assert math.isclose(np.linalg.norm(a - b), lloyd_sensitivity(D, "l2"), rel_tol=1e-14)
    plan = _plan(PURE, cells=2, rounds=1)
    assert plan.mechanism == "laplace" and not plan.pca and plan.rounds == 1


# ------------------------------------------------------------------------------------
# moment round, whole release
# ------------------------------------------------------------------------------------


def test_moment_round_laplace_passes_its_audit():
    plan = _plan(PURE)
    assert plan.mechanism == "laplace" and set(plan.noise) == {"moments"}
    res = audit(_moment_sampler(plan), *MOMENT_PAIR, epsilon=PURE.epsilon, n_runs=6_000,
                confidence=CONFIDENCE, rng=41)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.2, res.summary()  # the pair is informative (true 0.78)


def test_moment_round_gaussian_passes_its_audit():
    plan = _plan(APPROX)
    assert plan.mechanism == "gaussian"
    res = audit(_moment_sampler(plan), *MOMENT_PAIR, epsilon=APPROX.epsilon,
                delta=APPROX.delta, n_runs=6_000, confidence=CONFIDENCE, rng=42)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.2, res.summary()  # true about 1.8 at delta 1e-3


def test_moment_round_with_tenth_of_the_laplace_noise_is_caught():
    plan = _weakened(_plan(PURE), 10)
    res = audit(_moment_sampler(plan), *MOMENT_PAIR, epsilon=PURE.epsilon, n_runs=2_000,
                confidence=CONFIDENCE, rng=43)
    print(res.summary())
    assert res.violated, res.summary()


def test_moment_round_with_tenth_of_the_gaussian_noise_is_caught():
    plan = _weakened(_plan(APPROX), 10)
    res = audit(_moment_sampler(plan), *MOMENT_PAIR, epsilon=APPROX.epsilon,
                delta=APPROX.delta, n_runs=2_000, confidence=CONFIDENCE, rng=44)
    print(res.summary())
    assert res.violated, res.summary()


# ------------------------------------------------------------------------------------
# Lloyd round: the step (sharp) and the path end to end (weak)
# ------------------------------------------------------------------------------------


def test_lloyd_step_passes_its_audit():
    for budget, seed, floor in ((PrivacyCost(2.0), 51, 0.1), (PrivacyCost(4.0, 1e-3), 52,
                                                                 0.8)):
        plan = _plan(budget, cells=2, rounds=1)
        eps, delta = _step_claim(plan, budget.delta)
        res = audit(_lloyd_step_sampler(plan), *LLOYD_PAIR, epsilon=eps, delta=delta,
                    n_runs=6_000, confidence=CONFIDENCE, rng=seed)
        print(res.summary())
        assert not res.violated, res.summary()
        assert res.epsilon_lower > floor, res.summary()


def test_lloyd_step_with_tenth_of_the_noise_is_caught():
    for budget, seed in ((PrivacyCost(2.0), 53), (PrivacyCost(4.0, 1e-3), 54)):
        honest = _plan(budget, cells=2, rounds=1)
        eps, delta = _step_claim(honest, budget.delta)
        res = audit(_lloyd_step_sampler(_weakened(honest, 10, ("lloyd",))), *LLOYD_PAIR,
                    epsilon=eps, delta=delta, n_runs=2_000, confidence=CONFIDENCE, rng=seed)
        print(res.summary())
        assert res.violated, res.summary()


def test_lloyd_release_passes_its_audit():
    plan = _plan(PURE, cells=2, rounds=1)
    res = audit(_lloyd_release_sampler(plan), *LLOYD_PAIR, epsilon=PURE.epsilon,
                n_runs=1_500, confidence=CONFIDENCE, rng=55)
    print(res.summary())
    assert not res.violated, res.summary()


def test_lloyd_release_with_twentieth_of_the_lloyd_noise_is_caught():
    plan = _weakened(_plan(PURE, cells=2, rounds=1), 20, ("lloyd",))
    res = audit(_lloyd_release_sampler(plan), *LLOYD_PAIR, epsilon=PURE.epsilon,
                n_runs=1_500, confidence=CONFIDENCE, rng=56)
    print(res.summary())
    assert res.violated, res.summary()


# ------------------------------------------------------------------------------------
# moment round with the whole second moment (covariance=True): the step
# ------------------------------------------------------------------------------------

# row 0: g against its reflection in the first axis, (R/sqrt 3)(1, -1, -1): the sums
# change by (0, 2, 2) R/sqrt 3 and two off-diagonal products by 2R^2/3 (L1 0.54 of the
# bound 2R sqrt 3 + 4R^2)
_REFLECTED = RADIUS / math.sqrt(D) * np.array([1.0, -1.0, -1.0])
COVARIANCE_PAIR = (MOMENT_PAIR[0].copy(), MOMENT_PAIR[0].copy())
COVARIANCE_PAIR[0][0], COVARIANCE_PAIR[1][0] = G, _REFLECTED


def _covariance_step_sampler(plan: SubspacePlan, source=None):
    """The plan's moment noise (what subspace_release adds) on the whole-second-moment
    statistic; Neyman-Pearson statistic of the pair (Laplace noise, equal scales).
    ``source``: a noise source used instead of the audit's generator (the production
    entropy path, :func:`secure_bits.secure_source`)."""
    a, b = (moment_statistic(x, covariance=True) for x in COVARIANCE_PAIR)

    def sampler(data, n, rng):
        add_noise = subspace._Noise(plan, rng if source is None else source)
        exact = moment_statistic(data, covariance=True)
        out = np.empty(n)
        for r in range(n):
            x = add_noise("moments", exact)
            out[r] = np.sum(np.abs(x - a) - np.abs(x - b))
        return out

    return sampler


def _covariance_plan(budget: PrivacyCost) -> SubspacePlan:
    return plan_subspace(sizes=[N], m=1, d0=D, budget=budget, subspace_dim=D, cells=1,
                         covariance=True)


def test_covariance_moment_round_passes_its_audit():
    plan = _covariance_plan(PURE)
    assert plan.covariance and plan.mechanism == "laplace"
    a, b = (moment_statistic(x, covariance=True) for x in COVARIANCE_PAIR)
    assert a.shape == (D + D * (D + 1) // 2,)
    assert np.abs(a - b).sum() <= plan.noise["moments"]["sensitivity"]
    res = audit(_covariance_step_sampler(plan), *COVARIANCE_PAIR, epsilon=PURE.epsilon,
                n_runs=30_000, confidence=CONFIDENCE, rng=61)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.15, res.summary()  # the pair is informative (true 0.54)


def test_covariance_moment_round_with_tenth_of_the_noise_is_caught():
    plan = _weakened(_covariance_plan(PURE), 10)
    res = audit(_covariance_step_sampler(plan), *COVARIANCE_PAIR, epsilon=PURE.epsilon,
                n_runs=2_000, confidence=CONFIDENCE, rng=62)
    print(res.summary())
    assert res.violated, res.summary()


def test_covariance_release_runs_the_audited_noise():
    """subspace_release with covariance=True adds exactly the plan's moment noise to
    the whole-second-moment statistic: its released mean and covariance are those of
    the noisy statistic (post-processing), on the same seeded stream."""
    plan = _covariance_plan(PURE)
    data = MOMENT_PAIR[0]
    rel = subspace_release([data], plan=plan, basis=None, sizes=[N], m=1,
                           rng=np.random.default_rng(7))
    noisy = subspace._Noise(plan, np.random.default_rng(7))(
        "moments", moment_statistic(data, covariance=True))
    mean = subspace.into_ball(noisy[:D] / N)
    np.testing.assert_allclose(rel.means[0], mean)
    cov = subspace.released_covariance(noisy[D:] / N, mean, np.zeros(D, bool), full=True)
    np.testing.assert_allclose(rel.covariances[0], cov)


def test_covariance_moment_round_passes_its_audit_on_the_secure_path():
    """The same audit with the noise drawn by the production entropy path (the OS-CSPRNG
    code, fed a seeded byte stream): the path a publishable release takes."""
    from secure_bits import secure_source

    plan = _covariance_plan(PURE)
    assert subspace._Noise(plan, secure_source(0)).secure  # the production branch
    sampler = _covariance_step_sampler(plan, secure_source(63))
    res = audit(sampler, *COVARIANCE_PAIR, epsilon=PURE.epsilon, n_runs=30_000,
                confidence=CONFIDENCE, rng=63)
    print(res.summary())
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.15, res.summary()
