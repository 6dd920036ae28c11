"""The barycenters' error statement (issue 28): coverage and informativeness.

Synthetic data where the data-dependent part of the bound vanishes: every group is a
point mass (all its rows at one point), so the best m-atom barycenter is every atom at
the groups' weighted mean and the excess of the mean-only subspace plan is its noise
term alone. Over N seeded releases the observed excess may exceed the bound at most at
the stated rate 1 - confidence: the test fails when the exceedances are more than a
one-sided binomial test allows at a false-alarm rate of 1e-3. Informative: the bound is
at most 4x the median observed excess (k = 1, where the bound loses no cancellation
between groups). Derivation: docs/errors/barycenters.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privot.barycenters import (
    BarycenterParams,
    PublicBounds,
    SubspaceOptions,
    barycenter_error,
    private_barycenter,
)

N_RELEASES = 200
FALSE_ALARM = 1e-3


def _allowed(n: int, confidence: float) -> int:
    """Largest exceedance count a bound holding at ``confidence`` passes, one-sided
    binomial test at :data:`FALSE_ALARM`: P(Bin(n, 1 - confidence) > c) <= FALSE_ALARM."""
    c = int(stats.binom.isf(FALSE_ALARM, n, 1.0 - confidence))
    while stats.binom.sf(c, n, 1.0 - confidence) > FALSE_ALARM:
        c += 1
    return c


def _excess(points: list[np.ndarray], beta: np.ndarray, support: np.ndarray) -> float:
    """Excess W2^2 cost of ``support`` (uniform atoms) over the exact barycenter of point
    masses at ``points`` (every atom at their weighted mean)."""
    x = np.asarray(points)
    mean = beta @ x
    cost = sum(b * float(((support - xi) ** 2).sum(axis=1).mean())
               for b, xi in zip(beta, x, strict=True))
    best = float(beta @ ((x - mean) ** 2).sum(axis=1))
    return cost - best


def _observed(params: BarycenterParams, points: list[np.ndarray], sizes: list[int],
              beta: np.ndarray) -> tuple[np.ndarray, float]:
    """Observed excesses of N seeded releases and the statement each one carried."""
    groups = [np.repeat(p[None], n, axis=0) for p, n in zip(points, sizes, strict=True)]
    out, bounds = [], set()
    for seed in range(N_RELEASES):
        with pytest.warns(UserWarning, match="degenerate"):
            res = private_barycenter(groups, params, rng=seed)
        out.append(_excess(points, beta, res.support))
        bounds.add(res.error.bound)
    assert len(bounds) == 1  # the statement does not depend on the noise
    return np.array(out), bounds.pop()


CASES = {
    # the default plan in high dimension with eps n < 800: Laplace, d' = 0
    "laplace-default": dict(d=24, delta=None, subspace_dim=None, eps=1.0, n=200),
    # Gaussian noise with the mean-only plan asked for
    "gaussian-mean-only": dict(d=12, delta=1e-5, subspace_dim=0, eps=2.0, n=150),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mean_only_bound_covers_and_is_informative(name: str) -> None:
    case = CASES[name]
    d = case["d"]
    rng = np.random.default_rng(7)
    bounds = PublicBounds.box([-2.0] * d, [2.0] * d)
    point = rng.uniform(-0.5, 0.5, d)
    params = BarycenterParams(m=3, epsilon=case["eps"], delta=case["delta"], bounds=bounds,
                              method="subspace",
                              subspace=SubspaceOptions(subspace_dim=case["subspace_dim"]))
    stated = barycenter_error(params, [case["n"]], d)
    assert stated.details["subspace_dim"] == 0 and math.isfinite(stated.bound)
    excess, bound = _observed(params, [point], [case["n"]], np.ones(1))
    assert bound == stated.bound  # the API states what the release states
    assert excess.min() >= -1e-9
    exceed = int((excess > bound).sum())
    assert exceed <= _allowed(N_RELEASES, stated.confidence), (exceed, bound)
    assert bound <= 4.0 * float(np.median(excess)), (bound, np.median(excess))


def test_several_groups_bound_covers() -> None:
    """k = 3, unequal sizes and weights: the bound still covers (it drops the
    cancellation between the groups' noise, so it is looser here: not asserted
    informative)."""
    d, sizes = 16, [120, 200, 300]
    beta = np.array([0.5, 0.3, 0.2])
    rng = np.random.default_rng(3)
    points = [rng.uniform(-0.4, 0.4, d) for _ in sizes]
    params = BarycenterParams(m=2, epsilon=1.0, bounds=PublicBounds.ball([0.0] * d, 1.0),
                              method="subspace", group_weights=beta.tolist())
    stated = barycenter_error(params, sizes, d)
    excess, bound = _observed(params, points, sizes, beta)
    assert bound == stated.bound
    assert int((excess > bound).sum()) <= _allowed(N_RELEASES, stated.confidence)


def test_statement_is_public_and_in_release_json(tmp_path) -> None:
    """Two datasets with the same public parameters get the same statement; it is
    release.json's "error"."""
    d, n = 20, 100
    params = BarycenterParams(m=2, epsilon=1.0, bounds=PublicBounds.box([0.0] * d, [1.0] * d))
    rng = np.random.default_rng(0)
    a = private_barycenter([rng.uniform(0, 1, (n, d))], params, rng=1)
    b = private_barycenter([np.full((n, d), 0.25)], params, rng=2)
    assert a.error == b.error == barycenter_error(params, [n], d)
    assert a.release_dict()["error"] == a.error.to_dict()
    import json

    a.save(tmp_path, png=False, curator=False)
    body = json.loads((tmp_path / "release.json").read_text())
    assert body["error"]["bound"] == pytest.approx(a.error.bound)
    # caller units: the statement scales with the bounds' diameter squared
    wide = BarycenterParams(m=2, epsilon=1.0, bounds=PublicBounds.box([0.0] * d, [3.0] * d))
    assert barycenter_error(wide, [n], d).bound == pytest.approx(9 * a.error.bound)


@pytest.mark.parametrize(("method", "delta"), [("coreset", None), ("perturbation", 1e-5)])
def test_uncovered_methods_say_so(method: str, delta: float | None) -> None:
    params = BarycenterParams(m=2, epsilon=1.0, delta=delta, method=method,
                              bounds=PublicBounds.box([0.0, 0.0], [1.0, 1.0]))
    stated = barycenter_error(params, [50, 60], 2)
    assert math.isinf(stated.bound) and stated.not_covered
    assert stated.to_dict()["bound"] is None and "paper" in stated.details
    auto = BarycenterParams(m=2, epsilon=1.0, bounds=params.bounds)
    assert barycenter_error(auto, [50], 2).details["method"] == "coreset"


def test_auto_rule_matches_the_api() -> None:
    from privot.barycenters.api import choose_method

    for d in range(1, 6):
        auto = BarycenterParams(m=2, epsilon=1.0,
                                bounds=PublicBounds.box([0.0] * d, [1.0] * d))
        assert barycenter_error(auto, [50], d).details["method"] == choose_method(d)


def test_lloyd_plan_not_covered_and_confidence_checked() -> None:
    d = 6
    params = BarycenterParams(m=4, epsilon=2.0, bounds=PublicBounds.box([0.0] * d, [1.0] * d),
                              method="subspace", subspace=SubspaceOptions(subspace_dim=2))
    stated = barycenter_error(params, [500], d)
    assert math.isinf(stated.bound) and "d' = 2" in stated.not_covered
    with pytest.raises(Exception, match="confidence"):
        barycenter_error(params, [500], d, confidence=1.5)


def test_tail_bounds_hold_on_draws() -> None:
    """The two tail bounds against their own distributions (10^5 draws)."""
    from privot.barycenters.error import gaussian_square_tail, laplace_square_tail

    rng = np.random.default_rng(11)
    w, dims = [1.0, 0.25], [5, 9]
    lap = (rng.exponential(size=(100_000, 5)) ** 2).sum(1) + 0.25 * (
        rng.exponential(size=(100_000, 9)) ** 2).sum(1)
    gau = (rng.standard_normal((100_000, 5)) ** 2).sum(1) + 0.25 * (
        rng.standard_normal((100_000, 9)) ** 2).sum(1)
    for alpha in (0.05, 0.01):
        assert (lap > laplace_square_tail(w, dims, alpha)).mean() <= alpha
        assert (gau > gaussian_square_tail(w, dims, alpha)).mean() <= alpha
        # and not wildly loose: within 2.5x the true quantile
        assert laplace_square_tail(w, dims, alpha) <= 2.5 * np.quantile(lap, 1 - alpha)


# ------------------------------------------------------------------------------------
# The one-cell plan (each group released as its DP Gaussian): its summary W2^2
# ------------------------------------------------------------------------------------


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(s)
    return (vecs * np.sqrt(np.maximum(vals, 0.0))) @ vecs.T


def _gaussian_w2(m1: np.ndarray, s1: np.ndarray, m2: np.ndarray, s2: np.ndarray) -> float:
    """W2^2 between N(m1, s1) and N(m2, s2) (the Bures formula)."""
    r = _psd_sqrt(s1)
    cross = _psd_sqrt(r @ s2 @ r)
    return float(((m1 - m2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(cross))


#: one-cell plans: (d, epsilon, delta, sizes, beta); the defaults for d <= 4 except the
#: Gaussian one (cells=1 asked for). Largest measured bound / median (this machine,
#: N = 200; docs section 4): 30.4.
ONE_CELL = {
    "laplace-diagonal": (2, 1.0, 0.0, [200], [1.0]),
    "laplace-full": (2, 4.0, 0.0, [1000], [1.0]),
    "gaussian-diagonal": (3, 2.0, 1e-5, [300], [1.0]),
    "laplace-full-d4": (4, 4.0, 0.0, [800], [1.0]),
    "laplace-three-groups": (2, 1.0, 0.0, [150, 200, 300], [0.5, 0.3, 0.2]),
}
ONE_CELL_RATIO = 32.0


def _one_cell_observed(name: str) -> tuple[np.ndarray, float, float]:
    """Observed summary W2^2 (unit coordinates) of N seeded one-cell releases, the
    statement's bound in unit coordinates and its confidence. Each group is three point
    masses 0.01 apart near the ball's edge (|mean| about 0.45 = 0.9 R): the Bures term is
    then close to Powers-Stormer's bound (S near 0) and the mean term close to 2R|delta|.
    """
    from privot.barycenters.release import sample_budget
    from privot.barycenters.subspace import plan_subspace, subspace_release

    d, eps, delta, sizes, beta = ONE_CELL[name]
    params = BarycenterParams(m=2, epsilon=eps, delta=delta or None, method="subspace",
                              bounds=PublicBounds.ball([0.0] * d, 0.5),
                              group_weights=beta,
                              subspace=SubspaceOptions(cells=1 if delta else None))
    stated = barycenter_error(params, sizes, d)
    plan = plan_subspace(sizes=sizes, m=2, d0=d, budget=sample_budget(eps, delta, sizes, None),
                         cells=1 if delta else None)
    assert plan.rounds == 0 and not plan.pca and plan.subspace_dim == d
    rng = np.random.default_rng(5)
    groups = []
    for n in sizes:
        centre = rng.standard_normal(d)
        centre *= 0.45 / np.linalg.norm(centre)
        groups.append((centre + 0.01 * rng.uniform(-1, 1, (3, d)))[rng.integers(0, 3, n)])
    means = [g.mean(axis=0) for g in groups]
    covs = [np.cov(g.T, bias=True).reshape(d, d) for g in groups]
    if not plan.covariance:  # a diagonal plan is compared with the diagonal Gaussian
        covs = [np.diag(np.diag(c)) for c in covs]
    out = []
    for seed in range(N_RELEASES):
        rel = subspace_release(groups, plan=plan, basis=None, sizes=sizes, m=2, rng=seed)
        out.append(sum(b * _gaussian_w2(means[i], covs[i], rel.means[i], rel.covariances[i])
                       for i, b in enumerate(beta)))
    return np.array(out), stated.details["bound_unit_coordinates"], stated.confidence


@pytest.mark.parametrize("name", list(ONE_CELL))
def test_one_cell_bound_covers(name: str) -> None:
    excess, bound, confidence = _one_cell_observed(name)
    assert math.isfinite(bound) and excess.min() >= -1e-12
    exceed = int((excess > bound).sum())
    assert exceed <= _allowed(N_RELEASES, confidence), (exceed, bound)
    # the measured looseness (docs section 4), so that a looser bound fails
    assert bound <= ONE_CELL_RATIO * float(np.median(excess)), (bound, np.median(excess))


@pytest.mark.xfail(strict=True, reason="the one-cell bound is 9-30x the median summary W2^2 "
                   "(a linear-in-noise term whose 95th percentile alone is 3-6x its median "
                   "with Laplace noise): not informative by the 4x rule (docs section 4)")
def test_one_cell_bound_is_within_4x_of_median() -> None:
    excess, bound, _ = _one_cell_observed("gaussian-diagonal")
    assert bound <= 4.0 * float(np.median(excess))


def test_one_cell_statement_is_what_the_release_states() -> None:
    d, n = 2, 200
    params = BarycenterParams(m=4, epsilon=1.0, method="subspace",
                              bounds=PublicBounds.box([0.0] * d, [2.0] * d))
    stated = barycenter_error(params, [n], d)
    assert math.isfinite(stated.bound) and stated.metric.startswith("summary W2^2")
    assert "solver" in stated.not_covered and stated.details["subspace_dim"] == d
    rng = np.random.default_rng(0)
    res = private_barycenter([rng.uniform(0, 2, (n, d))], params, rng=1)
    assert res.error == stated
    # caller units: the unit bound over the bounds' scale squared
    assert stated.bound == pytest.approx(stated.details["bound_unit_coordinates"]
                                         / params.bounds.scale**2)
