"""``privot.evaluation.sampling``: exact W_p error measures of the sampling mechanisms."""

from __future__ import annotations

import numpy as np
import ot
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.evaluation.sampling import per_user_w_p, population_w_p
from privot.sampling import cost_matrix, make_mechanism

LINE = np.arange(5, dtype=np.float64)[:, None]  # five points on a line, unit spacing


def test_diracs_on_a_line():
    cost = cost_matrix(LINE, LINE)  # |i - j|
    mu = np.eye(5)[[0, 1]]
    nu = np.eye(5)[[4, 1]]
    np.testing.assert_allclose(per_user_w_p(mu, nu, cost), [4.0, 0.0])
    # W_2 with the squared cost: the root is taken
    assert per_user_w_p(mu[0], nu[0], cost ** 2, p=2)[0] == pytest.approx(4.0)
    assert population_w_p(mu[0], np.full(5, 0.2), cost) == pytest.approx(2.0)


def test_matches_pot_for_a_mechanism():
    pts = np.random.default_rng(0).random((9, 2))
    cost = cost_matrix(pts, pts)
    mech = make_mechanism("kpm", points=pts, epsilon=1.0)
    mu = np.random.default_rng(1).dirichlet(np.ones(9), size=4)
    nu = mech.privatize(mu)
    want = [ot.emd2(a, b, cost) for a, b in zip(mu, nu, strict=True)]
    np.testing.assert_allclose(per_user_w_p(mu, nu, cost), want, rtol=1e-12, atol=1e-15)


def test_refusals():
    cost = cost_matrix(LINE, LINE)
    with pytest.raises(InvalidDataError, match="mu"):
        per_user_w_p(np.ones(4) / 4, np.ones(5) / 5, cost)
    with pytest.raises(InvalidDataError, match="nu"):
        per_user_w_p(np.ones(5) / 5, np.ones(5), cost)
    with pytest.raises(InvalidDataError, match="rows"):
        per_user_w_p(np.eye(5)[:2], np.eye(5)[:3], cost)
    with pytest.raises(InvalidParameterError, match="p"):
        per_user_w_p(np.eye(5)[:1], np.eye(5)[:1], cost, p=0.5)
    with pytest.raises(InvalidDataError, match="population"):
        population_w_p(np.eye(5)[:2], np.ones(5) / 5, cost)
