"""Fixed-size batches: distinct, the right size, uniform over k-subsets."""

import itertools

import numpy as np
import pytest
from scipy import stats

from privot.errors import InvalidParameterError
from privot.learning.sampler import fixed_size_indices


def test_every_subset_is_equally_likely():
    """Chi-square over the 10 subsets of size 2 of 5 records, 50,000 draws. False-alarm
    rate 1e-4 (fixed seed: deterministic)."""
    rng = np.random.default_rng(0)
    subsets = {s: i for i, s in enumerate(itertools.combinations(range(5), 2))}
    counts = np.zeros(len(subsets))
    for _ in range(50_000):
        counts[subsets[tuple(fixed_size_indices(5, 2, rng=rng).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize(("n", "k"), [(1, 1), (7, 7), (1000, 1), (30_000, 6_000)])
def test_distinct_sorted_and_in_range(n, k):
    idx = fixed_size_indices(n, k, rng=np.random.default_rng(1))
    assert idx.shape == (k,) and idx.dtype == np.int64
    assert np.all(np.diff(idx) > 0) and idx[0] >= 0 and idx[-1] < n


def test_bad_sizes_are_refused():
    with pytest.raises(InvalidParameterError, match="batch size"):
        fixed_size_indices(5, 6)
    with pytest.raises(InvalidParameterError, match="batch size"):
        fixed_size_indices(5, 0)
