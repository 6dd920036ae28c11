"""Total free-support barycenters: ``on_failure="fallback"`` always answers.

The three levels: the requested method (plans repaired when a network simplex stops at
its public budget), the exact fixed point from the same start, and the start itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import privot.ot._barycenter as bary_mod
from privot.errors import ConvergenceError, InvalidParameterError
from privot.ot import free_support_barycenter, solution_weights


def _groups(seed=0, k=3, n=60):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        angle = 2 * np.pi * i / k
        out.append(0.3 * np.array([np.cos(angle), np.sin(angle)])
                   + 0.05 * rng.standard_normal((n, 2)))
    pooled = np.concatenate(out)
    return out, pooled[rng.choice(pooled.shape[0], 6, replace=False)]


def test_fallback_is_the_same_answer_when_nothing_fails():
    groups, init = _groups()
    for method in ("sinkhorn", "exact"):
        a = free_support_barycenter(groups, init=init, method=method, reg=1e-2)
        b = free_support_barycenter(groups, init=init, method=method, reg=1e-2,
                                    on_failure="fallback")
        np.testing.assert_array_equal(a.support, b.support)
        assert a.cost == b.cost and b.fallback is None and b.failure is None
        assert a.fallback is None and b.non_optimal_plans == 0


def test_capped_plans_raise_or_are_repaired(capped_emd):
    groups, init = _groups(1)
    with pytest.raises(ConvergenceError, match="network simplex"):
        free_support_barycenter(groups, init=init, method="exact", n_outer=3)
    fit = free_support_barycenter(groups, init=init, method="exact", n_outer=3,
                                  on_failure="fallback")
    assert fit.fallback is None and fit.non_optimal_plans > 0
    assert np.all(np.isfinite(fit.support)) and np.isfinite(fit.cost)
    plans = solution_weights(fit.support, groups, on_failure="fallback")
    for t, g in zip(plans, groups, strict=True):
        assert np.all(t >= 0)
        np.testing.assert_allclose(t.sum(axis=1), 1 / len(g), atol=1e-12)
        np.testing.assert_allclose(t.sum(axis=0), 1 / 6, atol=1e-12)
    with pytest.raises(ConvergenceError):
        solution_weights(fit.support, groups)


def test_a_failed_sinkhorn_falls_back_to_the_exact_fixed_point(nan_sinkhorn):
    groups, init = _groups(2)
    with pytest.raises(ConvergenceError, match="non-finite"):
        free_support_barycenter(groups, init=init, reg=1e-2, n_outer=5)
    fit = free_support_barycenter(groups, init=init, reg=1e-2, n_outer=5,
                                  on_failure="fallback")
    assert fit.fallback == "exact" and "ConvergenceError" in fit.failure
    exact = free_support_barycenter(groups, init=init, method="exact", n_outer=5)
    np.testing.assert_array_equal(fit.support, exact.support)
    assert fit.cost == exact.cost and fit.n_outer == exact.n_outer


def test_when_everything_fails_the_start_is_returned(monkeypatch):
    groups, init = _groups(3)
    monkeypatch.setattr(bary_mod, "support_update",
                        lambda x, w, p, init, *a: np.zeros_like(init))
    with pytest.raises(ConvergenceError, match="collapsed"):
        free_support_barycenter(groups, init=init, method="exact", n_outer=2)
    fit = free_support_barycenter(groups, init=init, method="exact", n_outer=2,
                                  on_failure="fallback")
    assert fit.fallback == "initial" and fit.n_outer == 0 and not fit.converged
    np.testing.assert_array_equal(fit.support, init)
    assert "collapsed" in fit.failure and np.isfinite(fit.cost)
    # the default start: k-means++ atoms of the pooled input, drawn with the caller's rng
    fit = free_support_barycenter(groups, m=4, method="sinkhorn", n_outer=2, rng=5,
                                  on_failure="fallback")
    assert fit.fallback == "initial"
    pooled = np.concatenate(groups)
    assert all(np.any(np.all(pooled == atom, axis=1)) for atom in fit.support)


def test_pot_failures_fall_back_too():
    groups, init = _groups(4)
    far = [g + np.array([30.0, 0.0]) * i for i, g in enumerate(groups)]  # kernel underflow
    with pytest.raises(ConvergenceError, match="POT's sinkhorn"):
        free_support_barycenter(far, init=init, method="pot-sinkhorn", reg=1e-3)
    fit = free_support_barycenter(far, init=init, method="pot-sinkhorn", reg=1e-3,
                                  on_failure="fallback")
    assert fit.fallback in ("exact", "initial") and np.all(np.isfinite(fit.support))


def test_on_failure_is_validated():
    groups, init = _groups()
    with pytest.raises(InvalidParameterError, match="on_failure"):
        free_support_barycenter(groups, init=init, on_failure="ignore")
    with pytest.raises(InvalidParameterError, match="on_failure"):
        solution_weights(init, groups, on_failure="ignore")
