"""Log-domain Sinkhorn: agreement with POT, stability at small reg, loud failures."""

import dataclasses

import numpy as np
import ot
import pytest

from privot.errors import ConvergenceError, InvalidDataError, InvalidParameterError
from privot.ot import SinkhornResult, sinkhorn


@pytest.fixture
def problem():
    rng = np.random.default_rng(7)
    x, y = rng.random((30, 2)), rng.random((22, 2))
    a = rng.random(30) + 0.1
    a /= a.sum()
    return a, ot.unif(22), ot.dist(x, y)


@pytest.mark.parametrize("reg", [0.5, 0.05, 0.01])
def test_matches_pot_sinkhorn_log(problem, reg):
    a, b, cost = problem
    res = sinkhorn(cost, a=a, b=b, reg=reg, tol=1e-11, max_iter=20_000)
    ref = ot.bregman.sinkhorn_log(a, b, cost, reg, stopThr=1e-13, numItermax=100_000)
    assert res.converged
    np.testing.assert_allclose(res.plan, ref, atol=1e-9)
    assert res.cost == pytest.approx(float(np.sum(ref * cost)), rel=1e-7)


def test_matches_pot_plain_sinkhorn_at_large_reg(problem):
    a, b, cost = problem
    res = sinkhorn(cost, a=a, b=b, reg=0.1, tol=1e-11)
    ref = ot.sinkhorn(a, b, cost, 0.1, stopThr=1e-13, numItermax=100_000)
    np.testing.assert_allclose(res.plan, ref, atol=1e-9)


def test_result_fields_and_duality(problem):
    a, b, cost = problem
    res = sinkhorn(cost, a=a, b=b, reg=0.05, tol=1e-12, max_iter=50_000)
    assert isinstance(res, SinkhornResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.cost = 0.0  # type: ignore[misc]
    assert res.plan.shape == (30, 22) and res.f.shape == (30,) and res.g.shape == (22,)
    assert res.marginal_error < 1e-10
    assert res.n_iter >= 1 and res.reg == 0.05
    # at the fixed point the entropic objective equals the dual value <f, a> + <g, b>
    assert res.objective == pytest.approx(float(res.f @ a + res.g @ b), rel=1e-8)
    # entropic plans are more diffuse and cost more than the exact LP
    assert res.cost >= ot.emd2(a, b, cost) - 1e-12


def test_finite_at_tiny_reg_where_the_kernel_underflows():
    """Unit-scale data, two far-apart clusters, reg = 1e-3: most entries of the Gibbs
    kernel exp(-C/reg) underflow to 0 in float64 (the largest is ~1e-173), so a solver
    that forms the kernel cannot represent the entropic plan, whose entries are all
    positive (POT 0.9's plain ``ot.sinkhorn`` returns a broken plan here; that is POT's
    behaviour and is not asserted). privot works on log-potentials."""
    rng = np.random.default_rng(0)
    x = rng.random((20, 2)) * 0.3
    y = rng.random((15, 2)) * 0.3 + 0.7
    cost = ot.dist(x, y)
    assert np.mean(np.exp(-cost / 1e-3) == 0.0) > 0.5  # the regime, in numpy's floats
    res = sinkhorn(cost, reg=1e-3, max_iter=100_000, on_nonconvergence="raise")
    assert res.converged
    assert np.all(np.isfinite(res.plan)) and np.all(np.isfinite(res.f))
    assert res.plan.sum() == pytest.approx(1.0, abs=1e-7)
    exact = ot.emd2(ot.unif(20), ot.unif(15), cost)
    assert res.cost == pytest.approx(exact, rel=1e-2)


def test_nonconvergence_policies(problem):
    a, b, cost = problem
    with pytest.raises(ConvergenceError, match="did not converge"):
        sinkhorn(cost, a=a, b=b, reg=0.01, max_iter=2, on_nonconvergence="raise")
    with pytest.warns(RuntimeWarning, match="did not converge"):
        res = sinkhorn(cost, a=a, b=b, reg=0.01, max_iter=2)
    assert not res.converged and res.n_iter == 2
    assert res.marginal_error > 1e-8


def test_non_finite_potentials_raise():
    with pytest.raises(ConvergenceError, match="non-finite"):
        sinkhorn(np.full((3, 4), 1e300), reg=1e-10)


def test_zero_weights_carry_no_mass(problem):
    _, b, cost = problem
    a = np.full(30, 1 / 28)
    a[[0, 5]] = 0.0
    res = sinkhorn(cost, a=a, b=b, reg=0.05, tol=1e-10)
    assert np.all(res.plan[[0, 5]] == 0.0)
    assert np.all(np.isfinite(res.f))
    np.testing.assert_allclose(res.plan.sum(axis=1), a, atol=1e-9)


def test_validation(problem):
    a, b, cost = problem
    for reg in (0.0, -1.0, np.nan):
        with pytest.raises(InvalidParameterError, match="reg"):
            sinkhorn(cost, reg=reg)
    with pytest.raises(InvalidParameterError, match="on_nonconvergence"):
        sinkhorn(cost, reg=0.1, on_nonconvergence="ignore")  # type: ignore[arg-type]
    with pytest.raises(InvalidDataError, match="cost"):
        sinkhorn(np.ones(5), reg=0.1)
    bad = cost.copy()
    bad[0, 0] = np.inf
    with pytest.raises(InvalidDataError, match="non-finite"):
        sinkhorn(bad, reg=0.1)
    with pytest.raises(InvalidDataError, match="same total mass"):
        sinkhorn(cost, reg=0.1, a=a, b=2 * b)
    with pytest.raises(InvalidDataError, match="non-negative"):
        sinkhorn(cost, reg=0.1, a=-a, b=b)
