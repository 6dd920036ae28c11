"""The one sampling API (``privot.sampling.mechanism``): every mechanism's outputs lie in
its polytope, WPM exact and entropic agree, the release path is total, and the WPM's
privacy is audited exactly (Dirac channel, certified against e^eps) and empirically."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy import PrivacyAccountant
from privot.privacy.audit import audit
from privot.sampling import (
    MECHANISMS,
    WassersteinProjection,
    in_polytope,
    make_mechanism,
    wpm_exact,
)
from privot.sampling import mechanism as mechanism_module
from privot.sampling.device import (
    DEFAULT_BITS,
    max_likelihood_ratio,
    ratio_at_most_exp,
    snap_to_polytope,
)

GRID = np.stack(np.meshgrid(np.arange(4), np.arange(4)), -1).reshape(-1, 2) / 3.0  # k = 16
K = GRID.shape[0]


def _mu(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(K, 0.2), size=n)


@pytest.mark.parametrize("name", MECHANISMS)
def test_every_mechanism_outputs_distributions_in_its_polytope(name):
    mech = make_mechanism(name, points=GRID, epsilon=1.5)
    nu = mech.privatize(_mu(30))
    assert nu.shape == (30, mech.k_v)
    np.testing.assert_allclose(nu.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(in_polytope(nu, mech.base_measure, 1.5, atol=1e-9))
    one = mech.privatize(_mu(1)[0])
    assert one.shape == (mech.k_v,)
    ch = mech.channel()
    assert ch.shape == (K, mech.k_v) and np.all(in_polytope(ch, mech.base_measure, 1.5,
                                                            atol=1e-9))


def test_wpm_exact_is_the_lp_optimum_and_entropic_approaches_it():
    cost = np.linalg.norm(GRID[:, None] - GRID[None], axis=-1)
    mu = _mu(8, seed=1)
    exact = WassersteinProjection(cost, epsilon=1.0, base_measure="uniform")
    highs = wpm_exact(mu, cost, exact.base_measure, 1.0, solver="highs")
    w_exact = wpm_exact(mu, cost, exact.base_measure, 1.0).cost
    np.testing.assert_allclose(w_exact, highs.cost, atol=1e-9)
    nu = exact.privatize(mu)
    import ot

    # the released nu attains the LP optimum: W1(nu, mu) is the LP's value
    w_nu = np.array([ot.emd2(m, n, cost) for m, n in zip(mu, nu, strict=True)])
    np.testing.assert_allclose(w_nu, highs.cost, atol=1e-9)
    ent = WassersteinProjection(cost, epsilon=1.0, base_measure=exact.base_measure,
                                solver="entropic", lam=0.002 * cost.max(), n_iter=2000)
    nu_e = ent.privatize(mu)
    # W1(nu_e, mu) - W1(nu*, mu) <= Prop. 4.1's bound (plus the marginal error)
    w_e = np.array([ot.emd2(m, n, cost) for m, n in zip(mu, nu_e, strict=True)])
    bound = ent.lam * np.log(K * K)
    assert np.all(w_e - highs.cost <= bound + 1e-6)
    assert np.all(w_e >= highs.cost - 1e-7)


def test_optimal_base_measure_beats_uniform_in_the_worst_case():
    opt = make_mechanism("wpm", points=GRID, epsilon=2.0, base_measure="optimal")
    uni = make_mechanism("wpm", points=GRID, epsilon=2.0, base_measure="uniform")
    assert opt.worst_case_cost() <= uni.worst_case_cost() + 1e-12
    rel = opt.release_dict()
    assert rel["ldp_lower_bound_w_p"] <= rel["worst_case_w_p"] <= (
        rel["ldp_lower_bound_w_p"] * (1 + 0.011))
    # the worst case over Dirac inputs is attained by the mechanism itself (Thm 3.5)
    import ot

    cost = np.linalg.norm(GRID[:, None] - GRID[None], axis=-1)
    ch = opt.channel()
    worst = max(ot.emd2(np.eye(K)[i], ch[i], cost) for i in range(K))
    assert worst == pytest.approx(opt.worst_case_cost(), rel=1e-9, abs=1e-12)


def test_release_path_is_total_when_the_solver_fails(monkeypatch):
    mech = make_mechanism("wpm", points=GRID, epsilon=1.0, base_measure="uniform")

    def broken(*args, **kwargs):
        from privot.errors import ConvergenceError

        raise ConvergenceError("network simplex reached its iteration cap")

    monkeypatch.setattr(mechanism_module, "wpm_exact", broken)
    nu = mech.privatize(_mu(3))
    np.testing.assert_allclose(nu, np.tile(mech.base_measure / mech.base_measure.sum(),
                                           (3, 1)))
    assert np.all(in_polytope(nu, mech.base_measure, 1.0))


def test_release_path_is_total_when_the_entropic_solver_fails(monkeypatch):
    mech = make_mechanism("wpm-entropic", points=GRID, epsilon=1.0)

    def broken(*args, **kwargs):
        from privot.errors import ConvergenceError

        raise ConvergenceError("non-finite iterates")

    monkeypatch.setattr(mechanism_module, "wpm_entropic", broken)
    nu = mech.privatize(_mu(4))
    np.testing.assert_allclose(nu, np.tile(mech.base_measure / mech.base_measure.sum(),
                                           (4, 1)))
    assert np.all(in_polytope(nu, mech.base_measure, 1.0))


def test_entropic_fallback_is_per_user(monkeypatch):
    """Issue 23, item 4: a batch the solver fails on no longer sends every user of the
    batch to the fallback; each user is solved again alone, with its own fallback, so the
    other users get exactly their own (solo) result."""
    mech = make_mechanism("wpm-entropic", points=GRID, epsilon=1.0)
    real = mechanism_module.wpm_entropic
    poison = np.full(K, 1.0 / K)

    def fails_on_poison(mu, *args, **kwargs):
        from privot.errors import ConvergenceError

        if np.any(np.all(np.atleast_2d(mu) == poison, axis=1)):
            raise ConvergenceError("non-finite iterates")
        return real(mu, *args, **kwargs)

    monkeypatch.setattr(mechanism_module, "wpm_entropic", fails_on_poison)
    users = _mu(5, seed=3)
    batch = np.vstack([users[:2], poison, users[2:]])
    nu = mech.privatize(batch)
    fallback = mech.base_measure / mech.base_measure.sum()
    np.testing.assert_array_equal(nu[2], fallback)
    for row, user in zip(np.delete(nu, 2, axis=0), users, strict=True):
        np.testing.assert_array_equal(row, mech.privatize(user))  # its own solo result
    assert not np.allclose(np.delete(nu, 2, axis=0), fallback)
    assert np.all(in_polytope(nu, mech.base_measure, 1.0))


def test_a_user_the_entropic_solver_flags_alone_gets_the_fallback(monkeypatch):
    """The solver confines a numerical failure to its row (``on_failure="flag"``): that
    user gets the fallback, the others the batch's own results."""
    import dataclasses

    mech = make_mechanism("wpm-entropic", points=GRID, epsilon=1.0)
    real = mechanism_module.wpm_entropic
    users = _mu(6, seed=4)
    clean = mech.privatize(users)

    def flags_row_3(mu, *args, **kwargs):
        assert kwargs.get("on_failure") == "flag"
        res = real(mu, *args, **kwargs)
        failed = np.zeros(np.atleast_2d(mu).shape[0], dtype=bool)
        if failed.size > 3:
            failed[3] = True
        nu = np.array(res.nu)
        nu[failed] = np.nan
        return dataclasses.replace(res, nu=nu, failed=failed)

    monkeypatch.setattr(mechanism_module, "wpm_entropic", flags_row_3)
    nu = mech.privatize(users)
    np.testing.assert_array_equal(nu[3], mech.base_measure / mech.base_measure.sum())
    np.testing.assert_array_equal(np.delete(nu, 3, axis=0), np.delete(clean, 3, axis=0))


def test_sample_charges_once_and_is_reproducible_with_a_seed():
    mech = make_mechanism("wpm", points=GRID, epsilon=1.0)
    acc = PrivacyAccountant(1.0)
    out = mech.sample(_mu(50), rng=np.random.default_rng(3), accountant=acc)
    assert out.indices.shape == (50,) and out.secure is False
    assert acc.spent.epsilon == pytest.approx(1.0)
    again = mech.sample(_mu(50), rng=np.random.default_rng(3))
    np.testing.assert_array_equal(out.indices, again.indices)


@pytest.mark.parametrize("solver", ["exact", "entropic"])
def test_wpm_dirac_channel_is_certified_eps_ldp(solver):
    """The exact worst case (Dirac inputs, Prop. B.2) on the integers the device draws
    from: max ratio <= e^eps (certified), and > e^eps for a mechanism built at 2 eps
    that claims eps (so the check can fail)."""
    eps = 1.0
    mech = make_mechanism("wpm" if solver == "exact" else "wpm-entropic", points=GRID,
                          epsilon=eps)
    w = snap_to_polytope(mech.channel(), base_measure=mech.base_measure, epsilon=eps)
    assert ratio_at_most_exp(max_likelihood_ratio(w, DEFAULT_BITS), eps)
    loose = make_mechanism("wpm", points=GRID, epsilon=2 * eps)
    wl = snap_to_polytope(loose.channel(), base_measure=loose.base_measure,
                          epsilon=2 * eps)
    assert not ratio_at_most_exp(max_likelihood_ratio(wl, DEFAULT_BITS), eps)


def test_wpm_empirical_audit_on_far_dirac_inputs():
    """200k device draws per input (the two far corners), confidence 0.999: a correct
    mechanism is flagged with probability <= 1e-3; a mechanism run at 2 eps claiming
    eps is flagged."""
    eps = 1.0

    def sampler_for(mech):
        def sampler(data, n, rng):
            mu = np.zeros((1, K))
            mu[0, data] = 1.0
            nu = np.repeat(mech.privatize(mu), n, axis=0)
            from privot.sampling import private_sample

            return private_sample(nu, base_measure=mech.base_measure,
                                  epsilon=mech.epsilon, rng=rng).indices.astype(float)
        return sampler

    good = make_mechanism("wpm", points=GRID, epsilon=eps)
    res = audit(sampler_for(good), 0, K - 1, epsilon=eps, n_runs=200_000,
                confidence=0.999, rng=np.random.default_rng(5))
    assert not res.violated, res.summary()
    assert res.epsilon_lower > 0.5, res.summary()
    bad = make_mechanism("wpm", points=GRID, epsilon=2 * eps)
    broken = audit(sampler_for(bad), 0, K - 1, epsilon=eps, n_runs=200_000,
                   confidence=0.999, rng=np.random.default_rng(6))
    assert broken.violated, broken.summary()


@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon": 0}, "epsilon"),
    ({"epsilon": 1, "base_measure": "median"}, "base_measure"),
    ({"epsilon": 1, "base_measure": np.full(K, 10.0)}, "base_measure"),
    ({"epsilon": 1, "solver": "fast"}, "solver"),
    ({"epsilon": 1, "lam": 0}, "lam"),
    ({"epsilon": 1, "n_iter": 0}, "n_iter"),
    ({"epsilon": 1, "p": 0.5}, "p"),
])
def test_bad_parameters_name_themselves(kwargs, name):
    cost = np.linalg.norm(GRID[:, None] - GRID[None], axis=-1)
    with pytest.raises(InvalidParameterError, match=name):
        WassersteinProjection(cost, **kwargs)


def test_bad_inputs_name_themselves():
    mech = make_mechanism("kpm", points=GRID, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="mu"):
        mech.privatize(np.full(K, 0.5))
    with pytest.raises(InvalidDataError, match="mu"):
        mech.privatize(np.full(K + 1, 1 / (K + 1)))
    with pytest.raises(InvalidDataError, match="cost"):
        WassersteinProjection(-np.ones((3, 3)), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="mechanism"):
        make_mechanism("laplace", points=GRID, epsilon=1.0)
