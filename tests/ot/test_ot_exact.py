"""Exact W_p via POT's network simplex: agreement, plans, metrics and loud failures."""

import numpy as np
import ot
import pytest

from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.ot import ground_cost, optimal_plan, wasserstein_distance


@pytest.fixture
def clouds():
    rng = np.random.default_rng(11)
    return rng.normal(size=(40, 3)), rng.normal(size=(27, 3)) + 0.7


def test_w2_matches_pot_emd2(clouds):
    x, y = clouds
    expected = ot.emd2(ot.unif(40), ot.unif(27), ot.dist(x, y)) ** 0.5
    assert wasserstein_distance(x, y) == pytest.approx(expected, rel=1e-12)


def test_weighted_wp_matches_pot(clouds):
    x, y = clouds
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = rng.random(27)
    b *= a.sum() / b.sum()
    cost = ot.dist(x, y, metric="euclidean") ** 3
    expected = ot.emd2(a, b, cost) ** (1 / 3)
    assert wasserstein_distance(x, y, a=a, b=b, p=3) == pytest.approx(expected, rel=1e-10)


def test_plan_marginals_and_value(clouds):
    x, y = clouds
    plan = optimal_plan(x, y, p=1)
    assert plan.shape == (40, 27)
    np.testing.assert_allclose(plan.sum(axis=1), np.full(40, 1 / 40), atol=1e-12)
    np.testing.assert_allclose(plan.sum(axis=0), np.full(27, 1 / 27), atol=1e-12)
    assert np.count_nonzero(plan > 1e-15) <= 40 + 27 - 1
    value = float(np.sum(plan * ground_cost(x, y, p=1)))
    assert value == pytest.approx(wasserstein_distance(x, y, p=1), rel=1e-12)


def test_w1_on_the_line_matches_closed_form():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=30), rng.exponential(size=45)
    assert wasserstein_distance(x, y, p=1) == pytest.approx(
        ot.wasserstein_1d(x, y, p=1), rel=1e-10)


@pytest.mark.parametrize("metric", ["cityblock", "chebyshev"])
def test_other_metrics(clouds, metric):
    x, y = clouds
    from scipy.spatial.distance import cdist

    cost = cdist(x, y, metric=metric) ** 2
    expected = ot.emd2(ot.unif(40), ot.unif(27), cost) ** 0.5
    assert wasserstein_distance(x, y, metric=metric) == pytest.approx(expected, rel=1e-12)
    assert wasserstein_distance(x, y, metric=metric) != pytest.approx(
        wasserstein_distance(x, y), rel=1e-3)


def test_distance_to_itself_is_zero(clouds):
    x, _ = clouds
    assert wasserstein_distance(x, x) == pytest.approx(0.0, abs=1e-12)


def test_max_iter_reached_raises():
    rng = np.random.default_rng(0)
    x, y = rng.random((200, 2)), rng.random((150, 2))
    with pytest.raises(ConvergenceError, match="numItermax reached"):
        wasserstein_distance(x, y, max_iter=10)
    with pytest.raises(ConvergenceError, match="max_iter=10"):
        optimal_plan(x, y, max_iter=10)


def test_mass_mismatch_and_bad_parameters(clouds):
    x, y = clouds
    with pytest.raises(InvalidDataError, match="same total mass"):
        wasserstein_distance(x, y, a=np.ones(40), b=np.ones(27))
    with pytest.raises(InvalidParameterError, match="metric"):
        wasserstein_distance(x, y, metric="cosine")
    with pytest.raises(InvalidParameterError, match="max_iter"):
        optimal_plan(x, y, max_iter=0)
    with pytest.raises(InvalidDataError, match="same dimension"):
        wasserstein_distance(x, y[:, :2])


def test_one_given_weight_vector_takes_its_mass(clouds):
    x, y = clouds
    a = np.full(40, 2.0 / 40)  # total mass 2: b defaults to uniform with mass 2
    plan = optimal_plan(x, y, a=a)
    np.testing.assert_allclose(plan.sum(axis=0), np.full(27, 2.0 / 27), atol=1e-12)
