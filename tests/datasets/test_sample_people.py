"""``sample_people``: a uniform sample of people *without* replacement from places.

The tiny population below (5 places of 3, 1, 2, 1, 1 people, N = 8) tells the draw
apart from ``rng.choice(P, n, p=population / N)`` (with replacement): that sampler fails
the exact-count, at-most-population, variance and joint-law tests (checked in
``test_a_with_replacement_sampler_fails_these_checks``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import privot.datasets.packaged as packaged
from privot.datasets import sample_people
from privot.errors import InvalidParameterError

POP = np.array([3, 1, 2, 1, 1])
N = int(POP.sum())


def _with_replacement(population, n, *, rng):
    """The old demo / benchmark draw, for the negative control."""
    p = np.asarray(population, float)
    return np.random.default_rng(rng).choice(p.size, size=n, p=p / p.sum())


@pytest.fixture(params=["hypergeometric", "distinct-person-numbers"])
def sampler(request, monkeypatch):
    """``sample_people`` on both of its paths (totals below / above numpy's 10**9)."""
    if request.param == "distinct-person-numbers":
        monkeypatch.setattr(packaged, "_HYPERGEOMETRIC_LIMIT", 0)
    return sample_people


def _all_full_draws_exact(draw) -> bool:
    return all(np.array_equal(np.bincount(draw(POP, N, rng=seed), minlength=POP.size), POP)
               for seed in range(20))


def _never_above_population(draw, n: int = 7, trials: int = 2000) -> bool:
    gen = np.random.default_rng(1)
    return all(np.all(np.bincount(draw(POP, n, rng=gen), minlength=POP.size) <= POP)
               for _ in range(trials))


def _count_moments(draw, n: int = 4, trials: int = 10_000):
    gen = np.random.default_rng(2)
    counts = np.array([np.bincount(draw(POP, n, rng=gen), minlength=POP.size)
                       for _ in range(trials)])
    return counts.mean(0), counts.var(0)


def test_whole_population_returns_each_place_exactly_its_population(sampler):
    assert _all_full_draws_exact(sampler)
    idx = sampler(POP, N, rng=0)
    assert idx.shape == (N,) and np.issubdtype(idx.dtype, np.integer)


def test_a_place_is_never_drawn_more_often_than_its_population(sampler):
    assert _never_above_population(sampler)


def test_marginal_frequencies_and_finite_population_variance(sampler):
    n = 4
    mean, var = _count_moments(sampler, n)
    p = POP / N
    # 10,000 seeded draws: the standard error of a mean count is <= 0.008
    np.testing.assert_allclose(mean, n * p, atol=0.04)
    # hypergeometric variance n p (1 - p) (N - n) / (N - 1); with replacement it would
    # be n p (1 - p), 7/4 times larger here (0.94 vs 0.54 for the first place)
    np.testing.assert_allclose(var, n * p * (1 - p) * (N - n) / (N - 1), atol=0.05)


def _joint_tv(draw, n: int = 4, trials: int = 10_000) -> float:
    """Total variation between the drawn counts per place and their exact law."""
    gen = np.random.default_rng(3)
    seen: dict[tuple, int] = {}
    for _ in range(trials):
        key = tuple(np.bincount(draw(POP, n, rng=gen), minlength=POP.size).tolist())
        seen[key] = seen.get(key, 0) + 1
    exact = {c: math.prod(math.comb(int(k), j) for k, j in zip(POP, c, strict=True))
             / math.comb(N, n)
             for c in itertools.product(*(range(n + 1) for _ in POP)) if sum(c) == n}
    return 0.5 * sum(abs(seen.get(c, 0) / trials - w) for c, w in exact.items())


def test_joint_law_is_the_multivariate_hypergeometric(sampler):
    # 10,000 seeded draws over 22 possible outcomes: sampling noise alone gives TV ~ 0.02
    assert _joint_tv(sampler) < 0.04


def test_order_is_shuffled(sampler):
    """Each position holds place i with probability population[i] / N."""
    gen = np.random.default_rng(4)
    draws = np.array([sampler(POP, 5, rng=gen) for _ in range(5000)])
    for pos in (draws[:, 0], draws[:, -1]):  # standard error <= 0.007
        np.testing.assert_allclose(np.bincount(pos, minlength=POP.size) / pos.size,
                                   POP / N, atol=0.035)


def test_a_with_replacement_sampler_fails_these_checks():
    assert not _all_full_draws_exact(_with_replacement)
    assert not _never_above_population(_with_replacement)
    _, var = _count_moments(_with_replacement)
    p = POP / N
    assert not np.allclose(var, 4 * p * (1 - p) * (N - 4) / (N - 1), atol=0.05)
    assert _joint_tv(_with_replacement) > 0.1


def test_us_sized_population_and_totals_above_numpy_limit():
    gen = np.random.default_rng(5)
    pop = gen.integers(0, 25_000, size=21_000)  # about 2.6e8 people, like the US places
    assert 10**8 < pop.sum() < 10**9
    idx = sample_people(pop, 200_000, rng=gen)
    counts = np.bincount(idx, minlength=pop.size)
    assert idx.size == 200_000 and np.all(counts <= pop)
    assert np.all(counts[pop == 0] == 0)
    big = np.array([600_000_000, 600_000_000, 1, 0])  # N >= 10**9: distinct person numbers
    idx = sample_people(big, 1000, rng=6)
    counts = np.bincount(idx, minlength=4)
    assert counts.sum() == 1000 and counts[2] <= 1 and counts[3] == 0


def test_seeded_draws_repeat_and_n_zero():
    assert np.array_equal(sample_people(POP, 5, rng=7), sample_people(POP, 5, rng=7))
    assert sample_people(POP, 0, rng=0).shape == (0,)
    assert np.array_equal(sample_people([0, 4, 0], 4, rng=0), [1, 1, 1, 1])


@pytest.mark.parametrize("population", [
    [3, -1, 2],                      # negative
    [3.0, 1.0],                      # floats, even integral ones
    np.array([[1, 2], [3, 4]]),      # not 1-D
    [],                              # empty
    np.array([True, False]),         # booleans
    np.array([2**62, 2**62]),        # total >= 2**63
    ["3", "1"],
])
def test_bad_population(population):
    with pytest.raises(InvalidParameterError) as err:
        sample_people(population, 1, rng=0)
    assert err.value.name == "population"


@pytest.mark.parametrize("n", [N + 1, -1, 2.0, True, None])
def test_bad_n(n):
    with pytest.raises(InvalidParameterError) as err:
        sample_people(POP, n, rng=0)
    assert err.value.name == "n"


def test_n_above_an_empty_population():
    with pytest.raises(InvalidParameterError, match="<= 0"):
        sample_people([0, 0], 1, rng=0)


@pytest.mark.parametrize("rng", [-1, 1.5, "seed", np.random.RandomState(0)])
def test_bad_rng(rng):
    with pytest.raises(InvalidParameterError) as err:
        sample_people(POP, 1, rng=rng)
    assert err.value.name == "rng"
