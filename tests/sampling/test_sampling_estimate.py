"""The linear variant's population estimate (issue 26, part 4): EM stopped by a public
rule, never worse than the reports' histogram on average, with bootstrap intervals.

Statistical tests use fixed seeds (deterministic: no false alarms on rerun); the
tolerances are stated in each test and in ``docs/sampling_estimate.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.evaluation.sampling import population_w_p
from privot.grid import Grid
from privot.sampling import cost_matrix, make_mechanism
from privot.sampling.estimators import (
    estimate_intervals,
    estimate_linear,
    estimate_linear_stopped,
    stopping_iterations,
)

RES = 8
GRID = Grid((0.0, 1.0, 0.0, 1.0), RES, aspect="stretch", dyadic=False)
POINTS = GRID.cell_centre_points()
COST = cost_matrix(POINTS, POINTS)


@pytest.fixture(scope="module")
def channel():
    return make_mechanism("wpm", points=POINTS, epsilon=2.0).channel()


def _population(kind: str) -> np.ndarray:
    """Two public synthetic populations over the 8 x 8 cells: a peaked blob, a spread
    one."""
    d2 = ((POINTS - [0.3, 0.6]) ** 2).sum(axis=1)
    theta = np.exp(-d2 / (2 * (0.08 if kind == "peaked" else 0.3) ** 2))
    return theta / theta.sum()


def _reports(theta, channel, n, rng):
    """n users, each one point of the population, then one draw of its channel row (the
    linear variant's law)."""
    points = rng.choice(theta.size, n, p=theta)
    cum = np.cumsum(channel[points], axis=1)
    out = np.minimum((cum < rng.random(n)[:, None] * cum[:, -1:]).sum(axis=1),
                     theta.size - 1)
    # the population of these n users: their points
    return np.bincount(points, minlength=theta.size) / n, np.bincount(
        out, minlength=theta.size).astype(float)


def test_stopping_rule_is_the_documented_formula():
    for n, eps in ((50, 1.0), (140, 2.0), (10_000, 4.0), (1, 8.0)):
        assert stopping_iterations(n, eps) == max(1, math.ceil(3 * math.sqrt(n) / eps ** 1.25))
    assert stopping_iterations(140, 2.0) == 15
    assert stopping_iterations(500, 2.0) > stopping_iterations(140, 2.0)
    assert stopping_iterations(140, 4.0) < stopping_iterations(140, 1.0)
    for bad in ((0, 2.0), (140, 0.0), (-1, 1.0), (140, float("nan"))):
        with pytest.raises(InvalidParameterError):
            stopping_iterations(*bad)


def test_estimate_reads_the_public_histogram_only(channel):
    """Same reports -> same estimate and intervals: the rule reads n (the histogram's
    total) and epsilon, and the bootstrap its fixed seed."""
    rng = np.random.default_rng(0)
    _, counts = _reports(_population("peaked"), channel, 140, rng)
    a = estimate_linear_stopped(counts, channel, epsilon=2.0)
    b = estimate_linear_stopped(counts.copy(), channel.copy(), epsilon=2.0)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(
        a, estimate_linear(counts, channel, n_iter=stopping_iterations(140, 2.0), tol=0.0))
    assert a.sum() == pytest.approx(1.0) and np.all(a >= 0)
    i1 = estimate_intervals(counts, channel, epsilon=2.0, n_boot=50, cost=COST)
    i2 = estimate_intervals(counts, channel, epsilon=2.0, n_boot=50, cost=COST)
    np.testing.assert_array_equal(i1.lower, i2.lower)
    np.testing.assert_array_equal(i1.upper, i2.upper)
    assert i1.w1_radius == i2.w1_radius and i1.w1_radius > 0
    np.testing.assert_array_equal(i1.estimate, a)
    assert np.all(i1.lower <= i1.upper)
    assert i1.release_dict()["n_iter"] == 15


def test_never_worse_than_the_histogram_on_average(channel):
    """Mean W_1 to the population over 20 fixed seeds, for 50 and 200 reports on a
    peaked and a spread population: the stopped EM is at most the reports' histogram's
    plus 5% (the stated tolerance: on the spread population with 50 reports nothing
    beats the histogram, the ratio is 1.007, where the converged EM's is 1.55)."""
    for kind in ("peaked", "spread"):
        theta = _population(kind)
        for n in (50, 200):
            w = {"raw": [], "mle": [], "stopped": []}
            for seed in range(20):
                pop, counts = _reports(theta, channel, n, np.random.default_rng([seed, n]))
                w["raw"].append(population_w_p(pop, counts / n, COST))
                w["mle"].append(population_w_p(pop, estimate_linear(counts, channel), COST))
                w["stopped"].append(population_w_p(
                    pop, estimate_linear_stopped(counts, channel, epsilon=2.0), COST))
            mean = {k: float(np.mean(v)) for k, v in w.items()}
            assert mean["stopped"] <= 1.05 * mean["raw"], (kind, n, mean)


def test_intervals_cover_at_the_stated_rate(channel):
    """Simulation, 30 fixed seeds, 140 reports, peaked population, nominal level 0.9:
    W_1(population, estimate) is within the bootstrap radius in at least 85% of the
    seeds (measured: 28 of 30; a correct 90% bound misses about 1 seed in 10, so the
    stated tolerance allows 4 misses), and the share of cells whose population mass lies
    in its interval, averaged over the seeds, is at least 0.8 (measured 0.87; the
    per-cell intervals are indicative, docs/sampling_estimate.md)."""
    theta = _population("peaked")
    cells, inside = [], []
    for seed in range(30):
        pop, counts = _reports(theta, channel, 140, np.random.default_rng([seed, 7]))
        iv = estimate_intervals(counts, channel, epsilon=2.0, level=0.9, n_boot=100,
                                cost=COST)
        cells.append(np.mean((pop >= iv.lower - 1e-12) & (pop <= iv.upper + 1e-12)))
        inside.append(population_w_p(pop, iv.estimate, COST) <= iv.w1_radius)
    print("cell coverage", np.mean(cells), "radius coverage", np.mean(inside))
    assert np.mean(cells) >= 0.8
    assert np.mean(inside) >= 0.85


def test_histogram_and_krr_intervals():
    counts = np.array([5, 0, 3, 2], dtype=float)
    iv = estimate_intervals(counts, estimator="histogram", n_boot=50)
    np.testing.assert_allclose(iv.estimate, counts / 10)
    assert iv.n_iter == 0 and np.all(iv.lower <= iv.estimate + 1e-12)
    kv = estimate_intervals(counts, estimator="krr", epsilon=1.0, n_boot=50)
    assert kv.estimate.sum() == pytest.approx(1.0)


def test_bad_interval_arguments(channel):
    counts = np.ones(RES * RES)
    with pytest.raises(InvalidParameterError, match="level"):
        estimate_intervals(counts, channel, epsilon=2.0, level=1.0)
    with pytest.raises(InvalidParameterError, match="n_boot"):
        estimate_intervals(counts, channel, epsilon=2.0, n_boot=1)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        estimate_intervals(counts, channel)
    with pytest.raises(InvalidParameterError, match="estimator"):
        estimate_intervals(counts, channel, epsilon=2.0, estimator="em")
    with pytest.raises(InvalidParameterError, match="cost"):
        estimate_intervals(counts, channel, epsilon=2.0, n_boot=5, cost=np.ones((3, 3)))
