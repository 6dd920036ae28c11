"""Differentiable W2 / sliced W2 in torch: values and gradients against numpy, autograd
finite differences and the explicit rank-weight formula of Props 3.1-3.2."""

import numpy as np
import pytest
import torch

from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.wasserstein import (
    quantile_segments,
    random_directions,
    sliced_w2_squared,
    w2_squared_1d,
)
from privot.ot import sliced_w2_squared as sliced_np
from privot.ot import w2_squared_1d as w2_np


def _dense_r(n, m):
    i, j, length = quantile_segments(n, m, dtype=torch.float64)
    r = np.zeros((n, m))
    np.add.at(r, (i.numpy(), j.numpy()), length.numpy())
    return r


@pytest.mark.parametrize(("n", "m"), [(1, 1), (1, 5), (7, 3), (10, 10), (13, 29), (64, 48)])
def test_rank_weights_have_the_marginals_of_eq_11(n, m):
    r = _dense_r(n, m)
    np.testing.assert_allclose(r.sum(1), 1 / n, rtol=1e-12)
    np.testing.assert_allclose(r.sum(0), 1 / m, rtol=1e-12)
    assert (r > 0).sum() <= n + m - 1


@pytest.mark.parametrize(("n", "m"), [(5, 5), (7, 3), (13, 29), (200, 151)])
def test_value_matches_numpy(n, m):
    rng = np.random.default_rng(n * 100 + m)
    u, v = rng.normal(size=n), rng.normal(1.0, 2.0, size=m)
    got = w2_squared_1d(torch.tensor(u), torch.tensor(v)).item()
    assert got == pytest.approx(w2_np(u, v), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize(("n", "m"), [(6, 4), (9, 17)])
def test_gradient_is_prop_3_2(n, m):
    rng = np.random.default_rng(3)
    u = torch.tensor(rng.normal(size=n), requires_grad=True)
    v = torch.tensor(rng.normal(size=m), requires_grad=True)
    gu, gv = torch.autograd.grad(w2_squared_1d(u, v), (u, v))
    r = _dense_r(n, m)
    sigma = np.argsort(np.argsort(u.detach().numpy()))
    tau = np.argsort(np.argsort(v.detach().numpy()))
    rr = r[np.ix_(sigma, tau)]                       # R_{sigma(i), tau(j)}
    diff = u.detach().numpy()[:, None] - v.detach().numpy()[None, :]
    np.testing.assert_allclose(gu.numpy(), 2 * (rr * diff).sum(1), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gv.numpy(), 2 * (rr * -diff).sum(0), rtol=1e-10, atol=1e-14)


def test_gradients_pass_finite_differences():
    rng = np.random.default_rng(4)
    u = torch.tensor(rng.normal(size=8), requires_grad=True)   # distinct: differentiable
    v = torch.tensor(rng.normal(size=5), requires_grad=True)
    assert torch.autograd.gradcheck(w2_squared_1d, (u, v), eps=1e-7, atol=1e-6)
    x = torch.tensor(rng.normal(size=(9, 3)), requires_grad=True)
    y = torch.tensor(rng.normal(size=(6, 3)), requires_grad=True)
    dirs = random_directions(3, 7, generator=torch.Generator().manual_seed(0),
                             dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda a, b: sliced_w2_squared(a, b, directions=dirs), (x, y), eps=1e-7, atol=1e-6)


def test_sliced_matches_numpy_with_the_same_directions():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(40, 3)), rng.normal(0.5, 1.5, size=(25, 3))
    dirs = random_directions(3, 20, generator=torch.Generator().manual_seed(1),
                             dtype=torch.float64)
    got = sliced_w2_squared(torch.tensor(x), torch.tensor(y), directions=dirs).item()
    assert got == pytest.approx(sliced_np(x, y, directions=dirs.numpy()), rel=1e-12)


def test_sliced_in_one_dimension_is_exact_w2():
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(30, 1)), rng.normal(size=(20, 1))
    got = sliced_w2_squared(torch.tensor(x), torch.tensor(y), n_projections=50).item()
    assert got == pytest.approx(w2_np(x[:, 0], y[:, 0]), rel=1e-12)


def test_directions_are_unit_and_come_from_the_generator():
    a = random_directions(4, 100, generator=torch.Generator().manual_seed(7))
    b = random_directions(4, 100, generator=torch.Generator().manual_seed(7))
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(torch.linalg.vector_norm(a, dim=1), torch.ones(100))


def test_bad_input_names_the_parameter():
    with pytest.raises(InvalidDataError, match="u is empty"):
        w2_squared_1d(torch.zeros(0), torch.zeros(3))
    with pytest.raises(InvalidParameterError, match="u="):
        w2_squared_1d(np.zeros(3), torch.zeros(3))
    with pytest.raises(InvalidDataError, match="different dimensions"):
        sliced_w2_squared(torch.zeros(3, 2), torch.zeros(3, 3))
    with pytest.raises(InvalidParameterError, match="n_projections"):
        random_directions(3, 0)
