"""Tests of the auditing machinery itself (the mechanisms' audits live in test_audits.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.audit import audit, clopper_pearson, epsilon_lower_bound, repeat


def test_clopper_pearson_closed_forms():
    # k = 0: upper limit solves (1-p)^n = alpha/2; k = n: lower limit solves p^n = alpha/2.
    lo, hi = clopper_pearson(0, 10, 0.05)
    assert lo == 0.0
    assert hi == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-9)
    lo, hi = clopper_pearson(10, 10, 0.05)
    assert hi == 1.0
    assert lo == pytest.approx(0.025 ** (1 / 10), rel=1e-9)


def test_clopper_pearson_covers_at_stated_rate():
    # Coverage of a 90% interval for p = 0.3, n = 50 over 2,000 seeded trials: exact
    # intervals are conservative, so coverage >= 0.9 up to binomial noise (sd ~0.0067);
    # the bound 0.88 has a false-alarm rate below 1e-3.
    rng = np.random.default_rng(0)
    ks = rng.binomial(50, 0.3, size=2000)
    covered = [lo <= 0.3 <= hi for lo, hi in (clopper_pearson(int(k), 50, 0.1) for k in ks)]
    assert np.mean(covered) >= 0.88


def test_epsilon_lower_bound_is_log_ratio_of_limits():
    lb = epsilon_lower_bound(5000, 1000, 10000, alpha=0.01)
    assert 0 < lb < math.log(5.0)
    # with delta as large as p0 nothing can be shown
    assert epsilon_lower_bound(5000, 1000, 10000, delta=0.6, alpha=0.01) == 0.0


def _laplace_sampler(scale):
    return lambda d, n, rng: d + rng.laplace(0.0, scale, n)


def test_correct_laplace_is_not_flagged_and_bound_is_informative():
    # Laplace with scale 1/eps on counts differing by 1 is exactly eps-DP.
    # False-alarm rate of `violated`: <= 1 - confidence = 1e-3.
    res = audit(_laplace_sampler(1.0), 0.0, 1.0, epsilon=1.0, n_runs=200_000,
                confidence=0.999, rng=7)
    assert not res.violated
    assert 0.85 < res.epsilon_lower <= 1.0  # the audit is tight enough to be useful


def test_broken_mechanism_is_caught():
    # noise 3x too small: true epsilon 3 for a claimed 1
    res = audit(_laplace_sampler(1.0 / 3), 0.0, 1.0, epsilon=1.0, n_runs=100_000,
                confidence=0.999, rng=8)
    assert res.violated
    assert res.epsilon_lower > 2.0
    assert "VIOLATED" in res.summary()


def test_direction_swap_found():
    # D1 is the "larger" input: the event is chosen with the roles swapped.
    res = audit(_laplace_sampler(0.25), 1.0, 0.0, epsilon=1.0, n_runs=20_000, rng=3)
    assert res.violated


def test_repeat_wraps_single_shot_mechanism():
    sampler = repeat(lambda d, rng: d + rng.laplace(0.0, 1.0))
    out = sampler(2.0, 500, np.random.default_rng(0))
    assert out.shape == (500,)
    assert abs(np.median(out) - 2.0) < 0.2


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "delta": 1.0}, "delta"),
    ({"epsilon": 1.0, "n_runs": 10}, "n_runs"),
    ({"epsilon": 1.0, "confidence": 1.0}, "confidence"),
])
def test_bad_parameters_name_themselves(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        audit(_laplace_sampler(1.0), 0.0, 1.0, **kwargs)


def test_sampler_returning_wrong_size_or_nan_is_refused():
    with pytest.raises(InvalidDataError, match="expected"):
        audit(lambda d, n, rng: np.zeros(3), 0.0, 1.0, epsilon=1.0, n_runs=200)
    with pytest.raises(InvalidDataError, match="non-finite"):
        audit(lambda d, n, rng: np.full(n, np.nan), 0.0, 1.0, epsilon=1.0, n_runs=200)
