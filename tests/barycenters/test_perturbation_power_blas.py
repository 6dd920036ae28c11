"""The noisy Lloyd step's power weights (privot.ot.power_diagram_weights) after issue 27's
speed-ups: the same bits whatever the caller's BLAS threads, the caller's setting back
afterwards, and the soft assignment's buffer reuse bit-identical to the plain formula.
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.ot import power_diagram_weights
from privot.ot._exact import squared_euclidean
from privot.ot._semi_discrete import _soft

threadpoolctl = pytest.importorskip("threadpoolctl")


def _cloud(seed: int, p: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    return (gen.uniform(-0.5, 0.5, (p, 2)), gen.random(p), gen.uniform(-0.4, 0.4, (m, 2)))


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "blas"]


def test_power_weights_same_bits_whatever_the_callers_blas_threads():
    # (3000, 24): without the one-thread limit, OpenBLAS's 1 and 2 threads give weights
    # that differ in the last bits on a 2-core machine (the Hessian's long reduction)
    x, w, a = _cloud(3, 3000, 24)
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        one = power_diagram_weights(x, w, a)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        two = power_diagram_weights(x, w, a)
    assert np.array_equal(one, two)
    # and they split the cloud into equal masses (the solver still does its job)
    cells = np.argmin(squared_euclidean(x, a) - one[None, :], axis=1)
    mass = np.bincount(cells, weights=w / w.sum(), minlength=len(a))
    assert np.abs(mass * len(a) - 1.0).max() <= 0.02


def test_power_weights_give_the_callers_blas_threads_back():
    x, w, a = _cloud(4, 500, 6)
    before = _blas_threads()
    power_diagram_weights(x, w, a)
    assert _blas_threads() == before


@pytest.mark.parametrize("eps", [0.3, 1e-3, 1e-7])
def test_soft_assignment_bit_identical_to_the_plain_formula(eps):
    x, w, a = _cloud(5, 700, 9)
    w = w / w.sum()
    b = np.full(len(a), 1.0 / len(a))
    psi = np.random.default_rng(6).normal(0.0, 0.01, len(a))
    cost = squared_euclidean(x, a)
    with np.errstate(all="ignore"):
        value, pi = _soft(psi, cost, w, b, eps)
        # the formula before issue 27 (one temporary per operation)
        z = (psi[None, :] - cost) / eps
        top = z.max(axis=1, keepdims=True)
        e = np.exp(z - top)
        s = e.sum(axis=1, keepdims=True)
        expected = float(w @ (-eps * (np.log(s[:, 0]) + top[:, 0])) + b @ psi)
        assert np.array_equal(pi, e / s)
    assert value == expected
    assert cost.flags.writeable and not np.shares_memory(pi, cost)
