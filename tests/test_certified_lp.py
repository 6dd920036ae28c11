"""The LP oracle of the tests (``tests/certified_lp.py``) accepts optimal answers only."""

from __future__ import annotations

import numpy as np
import pytest

import certified_lp
from certified_lp import certified_linprog, certify_lp

# min x0 + 2 x1 + 3 x2  s.t.  x0 + x1 + x2 = 1,  x0 <= 0.4,  x >= 0:  x* = (0.4, 0.6, 0),
# value 1.6; duals: y_eq = 2 (the price of mass), y_ub = -1 (x0 is worth 1 less than x1)
C = np.array([1.0, 2.0, 3.0])
LP = {"A_eq": np.ones((1, 3)), "b_eq": [1.0], "A_ub": np.array([[1.0, 0.0, 0.0]]),
      "b_ub": [0.4], "bounds": (0, None)}
X_STAR, Y_EQ, Y_UB = np.array([0.4, 0.6, 0.0]), np.array([2.0]), np.array([-1.0])


def test_the_optimum_is_certified_and_found():
    upper, lower = certify_lp(C, x=X_STAR, y_eq=Y_EQ, y_ub=Y_UB, **LP)
    assert upper == pytest.approx(1.6, abs=1e-15) and lower == pytest.approx(1.6, abs=1e-15)
    value, x = certified_linprog(C, **LP)
    assert value == pytest.approx(1.6, abs=1e-12)
    np.testing.assert_allclose(x, X_STAR, atol=1e-12)


@pytest.mark.parametrize(("x", "y_eq", "y_ub", "match"), [
    ([0.3, 0.7, 0.0], Y_EQ, Y_UB, "duality gap"),           # feasible, not optimal
    ([0.4, 0.6, 1e-6], Y_EQ, Y_UB, "violates an equality"),  # not feasible
    ([0.5, 0.5, 0.0], Y_EQ, Y_UB, "violates an inequality"),
    ([0.4, 0.6, -1e-6], Y_EQ, Y_UB, "outside its bounds"),
    (X_STAR, [1.0], [0.0], "duality gap"),                   # a weak dual bound
    (X_STAR, [2.5], [-1.0], "not dual feasible"),            # r_j < 0 on x_j <= inf
])
def test_wrong_answers_are_refused(x, y_eq, y_ub, match):
    with pytest.raises(AssertionError, match=match):
        certify_lp(C, x=x, y_eq=np.asarray(y_eq), y_ub=np.asarray(y_ub), **LP)


def test_the_solvers_status_is_not_read(monkeypatch):
    """An optimal point with a pessimistic status is accepted; no point is refused."""
    real = certified_lp.linprog

    def pessimistic(*args, **kwargs):
        res = real(*args, **kwargs)
        res.status, res.success, res.message = 4, False, "Numerical difficulties"
        return res

    monkeypatch.setattr(certified_lp, "linprog", pessimistic)
    assert certified_linprog(C, **LP)[0] == pytest.approx(1.6, abs=1e-12)

    def nothing(*args, **kwargs):
        res = real(*args, **kwargs)
        res.x = None
        return res

    monkeypatch.setattr(certified_lp, "linprog", nothing)
    with pytest.raises(AssertionError, match="no point"):
        certified_linprog(C, **LP)
