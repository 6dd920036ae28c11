"""Free-support barycenters: Algorithms 3 and 4 of paper 000, the exact and Sinkhorn
fixed points, POT wrappers, loud failures and input validation."""

import warnings

import numpy as np
import ot
import pytest
from scipy.optimize import minimize
from scipy.spatial.distance import pdist, squareform

import privot.ot._barycenter as bary_mod
from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.ot import (
    BarycenterFit,
    barycenter_cost,
    free_support_barycenter,
    solution_weights,
    support_points,
)
from privot.ot._barycenter_sinkhorn import (
    _solve_log,
    _solve_scaling,
    batched_cost,
    pad_groups,
)
from privot.ot._barycenter_steps import is_collapsed


def _blobs(rng, k, n, d=2, radius=0.3, spread=0.05):
    """k Gaussian blobs on a circle of the given radius, clipped to the ball of radius 1/2."""
    out = []
    for i in range(k):
        angle = 2 * np.pi * i / k + 0.3
        centre = np.zeros(d)
        centre[:2] = radius * np.array([np.cos(angle), np.sin(angle)])
        ni = n[i] if isinstance(n, (list, tuple)) else n
        x = centre + spread * rng.standard_normal((ni, d))
        r = np.linalg.norm(x, axis=1, keepdims=True)
        out.append(np.where(r > 0.5, x * 0.5 / r, x))
    return out


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    groups = _blobs(rng, 3, 120)
    pooled = np.concatenate(groups)
    init = pooled[rng.choice(pooled.shape[0], 10, replace=False)]
    return groups, init


@pytest.fixture(scope="module")
def exact_small(small):
    groups, init = small
    return free_support_barycenter(groups, init=init, method="exact")


# ----------------------------------------------------------------------------- Algorithm 4


def _random_plans(rng, sizes, m):
    return [rng.random((n, m)) * (rng.random((n, m)) < 0.4) for n in sizes]


def test_support_points_p2_is_weighted_mean():
    rng = np.random.default_rng(0)
    groups = [rng.random((15, 3)), rng.random((9, 3))]
    plans = _random_plans(rng, [15, 9], 4)
    plans[0][:, 0] += 0.1  # every atom gets mass
    beta = np.array([0.3, 0.7])
    got = support_points(groups, plans, group_weights=beta)
    w = np.concatenate([beta[0] * plans[0], beta[1] * plans[1]])
    x = np.concatenate(groups)
    want = (w.T @ x) / w.sum(axis=0)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _phi(y, x, w, p):
    return float(np.sum(w * np.linalg.norm(x - y, axis=1) ** p))


def _grad_phi(y, x, w, p):
    """Gradient of ``_phi`` at ``y`` (not a data point): sum_i p w_i |y - x_i|^(p-2) (y - x_i)."""
    diff = y - x
    dist = np.linalg.norm(diff, axis=1)
    assert dist.min() > 0, "y is a data point: use the subgradient condition there"
    return np.sum((p * w * dist ** (p - 2))[:, None] * diff, axis=0), dist


def _strong_convexity(y, x, w, p):
    """A modulus mu with phi(z) - phi(z') - <grad phi(z'), z - z'> >= mu/2 |z - z'|^2 on the
    convex hull of the data and ``y`` (where the minimiser y* lies), for p > 1.

    The Hessian of |r|^p is p |r|^(p-2) (I + (p-2) r r^T / |r|^2). For 1 < p <= 2 it is
    >= p (p-1) |r|^(p-2) >= p (p-1) D^(p-2) with D the diameter of the hull. For p >= 3
    it is >= p |r|^(p-2); Jensen (t^(p-2) convex) and the triangle inequality
    sum_i w_i |z - x_i| >= sum_ik w_i w_k |x_i - x_k| / (2W) give
    sum_i w_i |z - x_i|^(p-2) >= W (sum_ik w_i w_k |x_i - x_k| / (2 W^2))^(p-2) for all z.
    """
    total = float(w.sum())
    if 1 < p <= 2:
        diameter = float(pdist(np.vstack([x, y])).max())
        return p * (p - 1) * diameter ** (p - 2) * total
    assert p >= 3, "no bound written for 2 < p < 3"
    pairs = float(np.sum(w[:, None] * w[None, :] * squareform(pdist(x))))
    return p * total * (pairs / (2 * total**2)) ** (p - 2)


@pytest.mark.parametrize("p", [1.0, 1.5, 3.0])
def test_support_points_minimise_the_convex_objective(p):
    """privot's atoms are certified minimisers of phi_j by privot's own maths: for p > 1,
    |y - y*| <= |grad phi(y)| / mu (strong convexity) is asserted below 1e-5; for p = 1,
    Weiszfeld's step from privot's point, grad phi / sum_i (w_i / |y - x_i|), is within
    10x privot's stopping tolerance ``tol * scale`` (``support_points``' contract). A
    Nelder-Mead run is only an independent reference point: privot's objective must be no
    larger than its value (its position and success flag are not read)."""
    rng = np.random.default_rng(1)
    groups = [rng.random((25, 2)), rng.random((20, 2))]
    plans = [rng.random((25, 3)), rng.random((20, 3))]
    got = support_points(groups, plans, p=p)
    x = np.concatenate(groups)
    w = 0.5 * np.concatenate(plans)
    scale = float(np.ptp(x, axis=0).max())
    for j in range(3):
        grad, dist = _grad_phi(got[j], x, w[:, j], p)
        if p > 1:
            bound = np.linalg.norm(grad) / _strong_convexity(got[j], x, w[:, j], p)
            assert bound <= 1e-5, f"atom {j} may be {bound:.3g} away from the minimiser"
            # the certificate is not vacuous: 1e-4 away from privot's atom it fails
            off = got[j] + np.array([1e-4, 0.0])
            far, _ = _grad_phi(off, x, w[:, j], p)
            assert np.linalg.norm(far) / _strong_convexity(off, x, w[:, j], p) > 1e-5
        else:
            step = np.linalg.norm(grad) / np.sum(w[:, j] / dist)
            assert step <= 10 * 1e-10 * scale, f"atom {j}: Weiszfeld would move {step:.3g}"
        ref = minimize(_phi, x.mean(axis=0), args=(x, w[:, j], p), method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20_000})
        assert _phi(got[j], x, w[:, j], p) <= _phi(ref.x, x, w[:, j], p) + 1e-9


def test_weiszfeld_when_the_median_is_a_data_point():
    # a heavy point: the geometric median is that point (weight 5 > sum of the others)
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.3, -0.8]])
    plan = np.array([[5.0], [1.0], [1.0], [1.0], [1.0]])
    # start exactly on another data point: the Vardi-Zhang rule must move off it
    got = support_points([x], [plan], p=1, init=np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(got[0], [0.0, 0.0], atol=1e-9)
    # and starting on the median it stays there
    got = support_points([x], [plan], p=1, init=np.array([[0.0, 0.0]]))
    np.testing.assert_allclose(got[0], [0.0, 0.0], atol=1e-12)


def test_weiszfeld_collinear_median():
    # 1-D median of 1, 2, 10 (equal weights) is 2, a data point
    x = np.array([[1.0], [2.0], [10.0]])
    got = support_points([x], [np.ones((3, 1))], p=1)
    np.testing.assert_allclose(got, [[2.0]], atol=1e-7)


def test_support_points_empty_atom_needs_init():
    x = np.random.default_rng(2).random((6, 2))
    plan = np.zeros((6, 2))
    plan[:, 0] = 1.0
    with pytest.raises(InvalidDataError, match="atom 1"):
        support_points([x], [plan])
    init = np.array([[9.0, 9.0], [7.0, 7.0]])
    got = support_points([x], [plan], init=init)
    np.testing.assert_allclose(got[1], [7.0, 7.0])
    np.testing.assert_allclose(got[0], x.mean(axis=0))


def test_support_points_rejects_bad_plans():
    x = np.zeros((4, 2))
    with pytest.raises(InvalidDataError, match=r"plans\[0\]"):
        support_points([x], [np.ones((3, 2))])
    with pytest.raises(InvalidDataError, match=r"plans\[0\]"):
        support_points([x], [-np.ones((4, 2))])
    with pytest.raises(InvalidDataError, match="plans has 2 entries"):
        support_points([x], [np.ones((4, 2))] * 2)


# ----------------------------------------------------------------------------- Algorithm 3, cost


def test_solution_weights_are_optimal_plans():
    rng = np.random.default_rng(4)
    groups = [rng.random((12, 2)), rng.random((7, 2))]
    a1 = rng.random(12) + 0.1
    support = rng.random((5, 2))
    plans = solution_weights(support, groups, measure_weights=[a1, None][:1] + [np.ones(7)])
    assert [t.shape for t in plans] == [(12, 5), (7, 5)]
    np.testing.assert_allclose(plans[0].sum(axis=1), a1 / a1.sum(), atol=1e-12)
    np.testing.assert_allclose(plans[1].sum(axis=1), np.full(7, 1 / 7), atol=1e-12)
    for t in plans:
        np.testing.assert_allclose(t.sum(axis=0), np.full(5, 0.2), atol=1e-12)
    assert np.count_nonzero(plans[1]) <= 7 + 5 - 1
    ref = ot.emd2(a1 / a1.sum(), ot.unif(5), ot.dist(groups[0], support))
    assert float(np.sum(plans[0] * ot.dist(groups[0], support))) == pytest.approx(ref, rel=1e-12)


def test_barycenter_cost_matches_emd2_by_hand():
    rng = np.random.default_rng(5)
    groups = [rng.random((10, 3)), rng.random((14, 3)), rng.random((6, 3))]
    weights = [rng.random(10) + 0.1, None, rng.random(6) + 0.1]
    weights[1] = np.ones(14)
    beta = np.array([1.0, 2.0, 5.0])
    support = rng.random((4, 3))
    b = rng.random(4) + 0.2
    for p in (1, 2, 1.5):
        got = barycenter_cost(groups, support, support_weights=b, measure_weights=weights,
                              group_weights=beta, p=p)
        want = sum(bt / beta.sum() * ot.emd2(w / w.sum(), b / b.sum(),
                                             ot.dist(x, support, metric="euclidean") ** p)
                   for x, w, bt in zip(groups, weights, beta, strict=True))
        assert got == pytest.approx(want, rel=1e-10)


# ----------------------------------------------------------------------------- exact solver


def test_exact_1d_barycenter_is_the_quantile_average():
    rng = np.random.default_rng(6)
    x, y = rng.normal(0, 1, 20)[:, None], rng.normal(3, 0.5, 20)[:, None]
    init = rng.random((20, 1))
    fit = free_support_barycenter([x, y], init=init, method="exact")
    want = (np.sort(x[:, 0]) + np.sort(y[:, 0])) / 2
    np.testing.assert_allclose(np.sort(fit.support[:, 0]), want, atol=1e-12)
    assert fit.converged
    # the barycenter cost of the quantile average: half the W2^2 between x and y over 2
    w2 = ot.emd2(ot.unif(20), ot.unif(20), ot.dist(x, y))
    assert fit.cost == pytest.approx(w2 / 4, rel=1e-10)


def test_exact_two_point_masses():
    fit = free_support_barycenter([np.array([[0.0, 0.0]]), np.array([[0.4, 0.2]])], m=1,
                                  method="exact", rng=0)
    np.testing.assert_allclose(fit.support, [[0.2, 0.1]], atol=1e-15)
    assert fit.cost == pytest.approx(0.05, rel=1e-12)
    fit = free_support_barycenter([np.array([[0.0, 0.0]]), np.array([[0.4, 0.2]])], m=1,
                                  method="exact", group_weights=np.array([3.0, 1.0]), rng=0)
    np.testing.assert_allclose(fit.support, [[0.1, 0.05]], atol=1e-15)


def test_exact_history_decreases_and_matches_pot(small, exact_small):
    groups, init = small
    h = exact_small.history
    assert np.all(np.diff(h) <= 1e-12)
    assert exact_small.cost <= h[-1] + 1e-12
    pot = free_support_barycenter(groups, init=init, method="pot-exact")
    assert pot.cost == pytest.approx(exact_small.cost, rel=1e-9)
    assert exact_small.cost == pytest.approx(barycenter_cost(groups, exact_small.support),
                                             rel=1e-12)


# ----------------------------------------------------------------------------- sinkhorn solver


def test_sinkhorn_close_to_exact_at_small_reg_without_polish(small, exact_small):
    groups, init = small
    fit = free_support_barycenter(groups, init=init, reg=1e-3, polish=0)
    assert isinstance(fit, BarycenterFit)
    assert fit.method == "sinkhorn" and fit.reg == 1e-3
    assert fit.cost <= exact_small.cost * 1.02
    assert fit.history.shape == (fit.n_outer,)
    np.testing.assert_allclose(fit.weights, np.full(10, 0.1))
    assert fit.cost == pytest.approx(barycenter_cost(groups, fit.support), rel=1e-12)


def test_polish_does_not_increase_the_exact_cost(small):
    groups, init = small
    costs = [free_support_barycenter(groups, init=init, reg=5e-3, polish=k).cost
             for k in (0, 1, 3)]
    assert costs[1] <= costs[0] + 1e-12
    assert costs[2] <= costs[1] + 1e-12


def test_sinkhorn_matches_pot_fixed_point_at_moderate_reg(small):
    groups, init = small
    ours = free_support_barycenter(groups, init=init, reg=0.01, polish=0, n_outer=30,
                                   tol=1e-12, n_inner=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ot.bregman.free_support_sinkhorn_barycenter(
            groups, [ot.unif(120)] * 3, init, 0.01, numItermax=30, numInnerItermax=5000,
            stopThr=1e-12, method="sinkhorn_log", stopInnerThr=1e-12)
    np.testing.assert_allclose(ours.support, ref, atol=1e-6)


def _far_apart(n=60, seed=8):
    """Two tight groups at opposite ends of the ball: costs up to ~0.85 between groups."""
    rng = np.random.default_rng(seed)
    a = np.array([-0.43, 0.0]) + 0.02 * rng.standard_normal((n, 2))
    b = np.array([0.43, 0.0]) + 0.02 * rng.standard_normal((n, 2))
    init = np.concatenate([a[:4], b[:4]])
    return [a, b], init


def test_no_collapse_at_reg_1e3_where_pot_fails():
    groups, init = _far_apart()
    fit = free_support_barycenter(groups, init=init, reg=1e-3, polish=0)
    exact = free_support_barycenter(groups, init=init, method="exact")
    assert np.all(np.isfinite(fit.support))
    assert not is_collapsed(fit.support, groups)
    # 8 distinct atoms (the blobs are narrower than sqrt(reg), so the entropic fixed point
    # is shrunk towards the centre, but not collapsed) and a near-optimal exact cost
    assert len(np.unique(np.round(fit.support, 9), axis=0)) == 8
    assert fit.cost <= exact.cost * 1.01
    # one exact polishing step restores the spread of the exact barycenter
    polished = free_support_barycenter(groups, init=init, reg=1e-3, polish=1)
    assert np.ptp(polished.support, axis=0).max() > 0.5 * np.ptp(exact.support, axis=0).max()
    assert polished.cost <= fit.cost
    with pytest.raises(ConvergenceError, match="POT's sinkhorn"):
        free_support_barycenter(groups, init=init, reg=1e-3, method="pot-sinkhorn")


def test_sinkhorn_unequal_group_sizes():
    rng = np.random.default_rng(9)
    groups = _blobs(rng, 3, [40, 150, 90])
    pooled = np.concatenate(groups)
    init = pooled[rng.choice(pooled.shape[0], 8, replace=False)]
    fit = free_support_barycenter(groups, init=init, reg=2e-3, polish=0)
    exact = free_support_barycenter(groups, init=init, method="exact")
    assert fit.cost <= exact.cost * 1.02
    # padding rows carry no mass: the same fit on the groups listed in another order
    fit2 = free_support_barycenter(groups[::-1], init=init, reg=2e-3, polish=0)
    np.testing.assert_allclose(fit2.support, fit.support, atol=1e-6)


def test_sinkhorn_general_p(small):
    groups, init = small
    fit = free_support_barycenter(groups, init=init, p=1, reg=2e-3, polish=0, n_outer=10)
    exact = free_support_barycenter(groups, init=init, p=1, method="exact", n_outer=10)
    assert fit.cost <= exact.cost * 1.03


def test_scaling_and_log_domain_inner_solvers_agree(small):
    groups, init = small
    pad = pad_groups(groups[:2] + [groups[2][:50]], [np.full(120, 1 / 120)] * 2
                     + [np.full(50, 1 / 50)])
    cost = batched_cost(pad, init, 2.0)
    b = np.full(10, 0.1)
    g0 = np.zeros((3, 10))
    s1 = _solve_scaling(pad, b, cost, g0, 0.01, 5000, 1e-12)
    s2 = _solve_log(pad, b, cost, g0, 0.01, 5000, 1e-12)
    assert s1 is not None and not s1.log_domain and s2.log_domain
    np.testing.assert_allclose(s1.plans(), s2.plans(), atol=1e-12)
    np.testing.assert_allclose(s1.plans()[2, 50:], 0.0)


def test_nan_inside_the_solver_raises_not_returns(small, nan_sinkhorn):
    groups, init = small
    with pytest.raises(ConvergenceError, match="non-finite"):
        free_support_barycenter(groups, init=init, reg=1e-2, n_outer=3)


def test_collapsed_output_raises(small, monkeypatch):
    groups, init = small
    monkeypatch.setattr(bary_mod, "support_update",
                        lambda x, w, p, init, *a: np.zeros_like(init))
    with pytest.raises(ConvergenceError, match="collapsed"):
        free_support_barycenter(groups, init=init, method="exact", n_outer=2)


def test_is_collapsed():
    groups = [np.array([[0.0, 0.0], [0.1, 0.0]])]
    assert is_collapsed(np.zeros((3, 2)), groups)
    assert not is_collapsed(np.array([[0.0, 0.0], [0.05, 0.0]]), groups)
    assert not is_collapsed(np.zeros((1, 2)), groups)
    assert not is_collapsed(np.zeros((3, 2)), [np.zeros((2, 2))])  # Dirac inputs


def test_default_init_is_seeded_and_on_the_data(small):
    groups, _ = small
    f1 = free_support_barycenter(groups, m=6, method="exact", n_outer=1, rng=11)
    f2 = free_support_barycenter(groups, m=6, method="exact", n_outer=1,
                                 rng=np.random.default_rng(11))
    np.testing.assert_array_equal(f1.support, f2.support)
    assert f1.support.shape == (6, 2) and f1.n_outer == 1


# ----------------------------------------------------------------------------- bad input

_X = [np.zeros((3, 2)), np.ones((4, 2))]


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"measures": []}, InvalidDataError, "measures"),
        ({"measures": [np.zeros((3, 2)), np.zeros((0, 2))]}, InvalidDataError, "measures"),
        ({"measures": [np.zeros((3, 2)), np.array([[np.nan, 0.0]])]}, InvalidDataError,
         r"measures\[1\]"),
        ({"measures": [np.zeros((3, 2)), np.zeros((3, 3))]}, InvalidDataError, "dimension"),
        ({"m": 0}, InvalidParameterError, "m=0"),
        ({"m": 8}, InvalidParameterError, "m=8"),
        ({"m": None}, InvalidParameterError, "m=None"),
        ({"reg": 0.0}, InvalidParameterError, "reg=0.0"),
        ({"reg": -1e-3}, InvalidParameterError, "reg"),
        ({"p": 0.5}, InvalidParameterError, "p=0.5"),
        ({"method": "lbfgs"}, InvalidParameterError, "method='lbfgs'"),
        ({"n_outer": 0}, InvalidParameterError, "n_outer"),
        ({"n_inner": 0}, InvalidParameterError, "n_inner"),
        ({"tol": 0}, InvalidParameterError, "tol"),
        ({"polish": -1}, InvalidParameterError, "polish"),
        ({"polish": 2, "method": "exact"}, InvalidParameterError, "polish"),
        ({"p": 1, "method": "pot-exact"}, InvalidParameterError, "p=1"),
        ({"rng": "seed"}, InvalidParameterError, "rng"),
        ({"init": np.zeros((2, 3))}, InvalidDataError, "init"),
        ({"init": np.zeros((2, 2)), "m": 3}, InvalidDataError, "m=3"),
        ({"group_weights": np.array([1.0, -1.0])}, InvalidDataError, "group_weights"),
        ({"measure_weights": [np.ones(3)]}, InvalidDataError, "measure_weights"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, exc, name):
    args = {"measures": _X, "m": 2, "rng": 0}
    args.update(kwargs)
    measures = args.pop("measures")
    with pytest.raises(exc, match=name):
        free_support_barycenter(measures, **args)


def test_bad_input_allowed_values_are_stated():
    with pytest.raises(InvalidParameterError) as info:
        free_support_barycenter(_X, m=2, method="nope")
    assert info.value.name == "method" and "sinkhorn" in info.value.allowed
    with pytest.raises(InvalidParameterError) as info:
        free_support_barycenter(_X, m=99, rng=0)
    assert info.value.allowed == "an integer >= 1 and <= 7"


def test_repeated_points_are_merged_without_changing_the_measure():
    rng = np.random.default_rng(42)
    places = rng.uniform(-0.4, 0.4, size=(30, 2))
    idx = rng.integers(0, 30, 3000)
    multiset = places[idx]
    counts = np.bincount(idx, minlength=30).astype(float)
    keep = counts > 0
    support = rng.uniform(-0.3, 0.3, size=(5, 2))
    a = barycenter_cost([multiset], support)
    b = barycenter_cost([places[keep]], support, measure_weights=[counts[keep]])
    assert a == pytest.approx(b, rel=1e-12)
    fit = free_support_barycenter([multiset], init=support, method="exact")
    fit_w = free_support_barycenter([places[keep]], init=support, method="exact",
                                    measure_weights=[counts[keep]])
    assert fit.cost == pytest.approx(fit_w.cost, rel=1e-9)
