"""The papers' synthetic generators: shapes, determinism, documented statistics.

Statistical checks use fixed seeds (so they are deterministic); each tolerance is at
least 5 standard errors of the checked statistic, a false-alarm rate below 1e-6 per
check had the seed been random.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from privot.datasets import (
    fairness_biased_data,
    gaussian_mixture_r10,
    gaussian_to_circle,
    ring_dirichlet,
)
from privot.errors import InvalidParameterError

GENERATORS = [
    lambda rng: gaussian_mixture_r10(50, k=3, rng=rng),
    lambda rng: ring_dirichlet(5, rng=rng),
    lambda rng: fairness_biased_data(40, rng=rng),
    lambda rng: gaussian_to_circle(30, rng=rng),
]


def _arrays(result):
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if isinstance(getattr(result, f.name), np.ndarray)}


# ------------------------------------------------------------------- common behaviour


@pytest.mark.parametrize("make", GENERATORS)
def test_same_seed_same_data_and_generator_accepted(make):
    a, b, c = make(7), make(7), make(8)
    d = make(np.random.default_rng(7))
    for name, arr in _arrays(a).items():
        assert np.array_equal(arr, _arrays(b)[name]), name
        assert np.array_equal(arr, _arrays(d)[name]), name
    assert any(not np.array_equal(arr, _arrays(c)[name])
               for name, arr in _arrays(a).items())


@pytest.mark.parametrize("make", GENERATORS)
def test_results_frozen_and_read_only(make):
    res = make(0)
    first = next(iter(dataclasses.fields(res))).name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(res, first, None)
    for name, arr in _arrays(res).items():
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError):
            arr.flat[0] = 0


@pytest.mark.parametrize("bad", [None, -1, 1.5, True, "0"])
def test_rng_validated(bad):
    with pytest.raises(InvalidParameterError, match="rng"):
        gaussian_to_circle(3, rng=bad)


def test_generator_is_advanced_not_copied():
    gen = np.random.default_rng(3)
    a = gaussian_to_circle(10, rng=gen)
    b = gaussian_to_circle(10, rng=gen)
    assert not np.array_equal(a.source, b.source)


# ------------------------------------------------------------------- Gaussian mixture


def test_mixture_shapes_and_means():
    d = gaussian_mixture_r10(7, k=3, rng=0)
    assert d.points.shape == (3, 7, 10)
    assert d.components.shape == (3, 7)
    assert len(d.groups) == 3 and d.groups[0].shape == (7, 10)
    expected = {(0.25, 0.25), (0.25, -0.25), (-0.25, 0.25), (-0.25, -0.25)}
    assert {tuple(m[:2]) for m in d.means} == expected
    assert np.all(d.means[:, 2:] == 0)


def test_mixture_statistics_unprojected():
    n, k, std = 20_000, 2, 0.05
    d = gaussian_mixture_r10(n, k=k, std=std, radius=None, rng=1)
    pts = d.points.reshape(-1, 10)
    comp = d.components.ravel()
    # Equal weights: each frequency ~ 1/4, s.e. sqrt(3/16 / 40000) ~ 0.0022.
    np.testing.assert_allclose(np.bincount(comp, minlength=4) / comp.size, 0.25, atol=0.012)
    # Mixture mean is 0; coordinate s.e. <= sqrt(0.065 / 40000) ~ 0.0013.
    np.testing.assert_allclose(pts.mean(axis=0), 0.0, atol=0.007)
    for c in range(4):
        sel = pts[comp == c]
        # component mean: s.e. 0.05 / sqrt(~10000) = 5e-4
        np.testing.assert_allclose(sel.mean(axis=0), d.means[c], atol=0.003)
        # per-coordinate std: relative s.e. ~ 1/sqrt(2 * 10000) = 0.7 %
        np.testing.assert_allclose(sel.std(axis=0), std, rtol=0.04)
    assert d.n_projected == 0 and d.radius is None


def test_mixture_projection_onto_ball():
    raw = gaussian_mixture_r10(2000, k=2, std=0.1, radius=None, rng=5)
    proj = gaussian_mixture_r10(2000, k=2, std=0.1, radius=0.5, rng=5)
    norms_raw = np.linalg.norm(raw.points, axis=-1)
    norms = np.linalg.norm(proj.points, axis=-1)
    outside = norms_raw > 0.5
    assert proj.n_projected == int(outside.sum()) > 0  # std 0.1 pushes many out
    assert np.all(norms <= 0.5 + 1e-12)
    np.testing.assert_allclose(norms[outside], 0.5)
    assert np.array_equal(proj.points[~outside], raw.points[~outside])
    # direction is kept
    cos = np.sum(proj.points[outside] * raw.points[outside], axis=-1) / (
        norms[outside] * norms_raw[outside])
    np.testing.assert_allclose(cos, 1.0)


def test_mixture_default_keeps_most_points_inside():
    # Documented: about 99.2 % of points inside B(0, 1/2) at std = 0.05.
    d = gaussian_mixture_r10(10_000, k=2, rng=2)
    frac = d.n_projected / d.components.size
    assert 0.002 < frac < 0.016  # s.e. sqrt(0.008 / 20000) ~ 6e-4


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"n": 0}, "n"), ({"k": 0}, "k"), ({"std": 0.0}, "std"), ({"dim": 1}, "dim"),
    ({"radius": -1.0}, "radius")])
def test_mixture_validation(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        gaussian_mixture_r10(rng=0, **kwargs)


# ------------------------------------------------------------------- ring Dirichlet


def test_ring_support_and_distance():
    d = ring_dirichlet(3, rng=0)
    k = 30
    assert np.array_equal(d.support, np.arange(k))
    D = d.distance
    assert D.shape == (k, k)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0)
    assert D[0, 1] == 1 and D[0, k - 1] == 1 and D[0, 15] == 15 and D.max() == k // 2
    # triangle inequality d(i,j) <= d(i,l) + d(l,j)
    assert np.all(D[:, None, :] <= D[:, :, None] + D[None, :, :])
    np.testing.assert_allclose(np.linalg.norm(d.coordinates, axis=1), 1.0)
    np.testing.assert_array_equal(d.cost_matrix(2), D ** 2)
    np.testing.assert_array_equal(d.cost_matrix(1), D)


def test_ring_distributions_are_dirichlet():
    n_users, k, alpha = 20_000, 30, 0.1
    d = ring_dirichlet(n_users, k=k, concentration=alpha, rng=4)
    P = d.distributions
    assert P.shape == (n_users, k)
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    # E mu_i = 1/k; Var mu_i = (1/k)(1-1/k)/(k alpha + 1) ~ 0.008, s.e. ~ 6e-4
    np.testing.assert_allclose(P.mean(axis=0), 1 / k, atol=0.004)
    # E sum mu_i^2 = (alpha + 1) / (k alpha + 1) = 0.275; s.e. ~ 0.0014
    assert np.mean(np.sum(P ** 2, axis=1)) == pytest.approx((alpha + 1) / (k * alpha + 1),
                                                             abs=0.008)
    # marginal mu_0 ~ Beta(alpha, (k-1) alpha): KS test, false alarm 1e-6
    assert stats.kstest(P[:, 0], stats.beta(alpha, (k - 1) * alpha).cdf).pvalue > 1e-6


def test_ring_validation():
    with pytest.raises(InvalidParameterError, match="k"):
        ring_dirichlet(k=1, rng=0)
    with pytest.raises(InvalidParameterError, match="concentration"):
        ring_dirichlet(concentration=0, rng=0)
    with pytest.raises(InvalidParameterError, match="n_users"):
        ring_dirichlet(0, rng=0)


# ------------------------------------------------------------------- fairness data


def test_fairness_structure():
    d = fairness_biased_data(500, rng=0)
    assert d.x.shape == (500, 16)
    assert d.x_core.shape == (500, 8) and d.x_spurious.shape == (500, 8)
    assert set(np.unique(d.a)) <= {0, 1} and set(np.unique(d.y)) <= {0, 1}
    # step 2: Y = I(Y2 > 1 - Y1)
    assert np.array_equal(d.y, (d.y_continuous[:, 1] > 1 - d.y_continuous[:, 0]).astype(int))
    assert np.all((d.y_continuous >= 0) & (d.y_continuous <= 1))


def test_fairness_statistics_paper_defaults():
    n, p = 30_000, 0.7
    d = fairness_biased_data(rng=11)
    assert d.x.shape == (n, 16)
    # P(A = Y) = p: s.e. sqrt(0.21 / 30000) ~ 0.0026
    assert np.mean(d.a == d.y) == pytest.approx(p, abs=0.015)
    # E n_j = n/2, E n_jj = p n/2, E n_j,1-j = (1-p) n/2 (App. B); s.e. <= ~87 rows
    for j in (0, 1):
        assert np.sum(d.a == j) == pytest.approx(n / 2, abs=450)
        assert np.sum((d.a == j) & (d.y == j)) == pytest.approx(p * n / 2, abs=450)
        assert np.sum((d.a == j) & (d.y == 1 - j)) == pytest.approx((1 - p) * n / 2, abs=450)
    # X_core = tile(Y^C) + N(0, 1/5); X_sp = A + N(0, 2/5); variance rel. s.e. ~0.8 %
    res_core = d.x_core - np.tile(d.y_continuous, 4)
    res_sp = d.x_spurious - d.a[:, None]
    np.testing.assert_allclose(res_core.var(axis=0), 1 / 5, rtol=0.05)
    np.testing.assert_allclose(res_sp.var(axis=0), 2 / 5, rtol=0.05)
    np.testing.assert_allclose(res_core.mean(axis=0), 0, atol=0.015)
    # core columns alternate Y1, Y2: correlation with the right coordinate is high
    assert np.corrcoef(d.x_core[:, 0], d.y_continuous[:, 0])[0, 1] > 0.4
    assert abs(np.corrcoef(d.x_core[:, 0], d.y_continuous[:, 1])[0, 1]) < 0.05


def test_fairness_options():
    a = fairness_biased_data(200, rng=3)
    b = fairness_biased_data(200, centre_response=True, rng=3)
    np.testing.assert_allclose(b.y_continuous, a.y_continuous - 0.5)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    c = fairness_biased_data(300, p=1.0, d_core=4, d_spurious=0, rng=3)
    assert np.array_equal(c.a, c.y) and c.x.shape == (300, 4)
    e = fairness_biased_data(300, p=0.0, rng=3)
    assert np.array_equal(e.a, 1 - e.y)
    with pytest.raises(InvalidParameterError, match="d_core"):
        fairness_biased_data(10, d_core=3, rng=0)
    with pytest.raises(InvalidParameterError, match="p"):
        fairness_biased_data(10, p=1.5, rng=0)


# ------------------------------------------------------------------- Gaussian -> circle


def test_gaussian_to_circle():
    d = gaussian_to_circle(rng=9)
    n = 100_000
    assert d.source.shape == (n, 2) and d.target.shape == (n, 2)
    np.testing.assert_allclose(np.linalg.norm(d.target, axis=1), 0.75)
    # source ~ N(0, I): mean s.e. 0.0032, covariance entries s.e. <= 0.0045
    np.testing.assert_allclose(d.source.mean(axis=0), 0, atol=0.02)
    np.testing.assert_allclose(np.cov(d.source.T), np.eye(2), atol=0.03)
    # target angle uniform on [0, 2 pi): KS test, false alarm 1e-6
    angle = np.mod(np.arctan2(d.target[:, 1], d.target[:, 0]), 2 * np.pi)
    assert stats.kstest(angle / (2 * np.pi), "uniform").pvalue > 1e-6
    assert gaussian_to_circle(10, radius=2.0, rng=0).radius == 2.0
    with pytest.raises(InvalidParameterError, match="radius"):
        gaussian_to_circle(10, radius=0, rng=0)
