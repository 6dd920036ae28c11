"""Property tests (hypothesis) for the closed-form 1-D W2^2."""

import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privot.ot import w2_squared_1d, w2_squared_1d_with_grad

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
samples = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: arrays(np.float64, n, elements=finite))
SETTINGS = settings(max_examples=60, deadline=None)


def _tol(x, y):
    scale = max(1.0, float(np.max(np.abs(x))), float(np.max(np.abs(y))))
    return 1e-9 * scale**2


@SETTINGS
@given(samples, samples)
def test_symmetric_and_nonnegative(x, y):
    v = w2_squared_1d(x, y)
    assert v >= 0.0
    assert v == pytest.approx(w2_squared_1d(y, x), rel=1e-12, abs=_tol(x, y))


@SETTINGS
@given(samples)
def test_zero_on_itself(x):
    assert w2_squared_1d(x, x) == 0.0
    # and on a permuted copy (same empirical measure)
    assert w2_squared_1d(x, x[::-1]) == 0.0


@SETTINGS
@given(samples, samples, finite)
def test_translation_invariance(x, y, c):
    v = w2_squared_1d(x, y)
    assert w2_squared_1d(x + c, y + c) == pytest.approx(v, rel=1e-9, abs=_tol(x, y) * 10)


@SETTINGS
@given(samples, samples)
def test_agrees_with_exact_lp(x, y):
    lp = ot.emd2(ot.unif(len(x)), ot.unif(len(y)), (x[:, None] - y[None, :]) ** 2)
    assert w2_squared_1d(x, y) == pytest.approx(lp, rel=1e-8, abs=_tol(x, y))


@SETTINGS
@given(samples, samples)
def test_gradients_sum_to_zero_and_euler(x, y):
    # W2^2 is 2-homogeneous in (x, y): <grad, (x, y)> = 2 W2^2 (Euler), gradients sum to 0
    v, gx, gy = w2_squared_1d_with_grad(x, y)
    assert gx.sum() + gy.sum() == pytest.approx(0.0, abs=_tol(x, y) * 1e3)
    assert float(gx @ x + gy @ y) == pytest.approx(2 * v, rel=1e-8, abs=_tol(x, y) * 1e3)
