"""Users given by their cell (``SamplingMechanism.sample_cells``): the same samples as
the dense one-hot path, validated inputs, and the segment search of ``TableSampler``
equal to the plain scan of the cumulative weights."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.noise import BitSource
from privot.sampling import make_mechanism
from privot.sampling.device import TableSampler, grid_polytope, private_sample_cells
from secure_bits import secure_source


def _points(side: int) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"), -1)
    return g.reshape(-1, 2) / (side - 1)


def _one_hot(cells: np.ndarray, k: int) -> np.ndarray:
    x = np.zeros((cells.size, k))
    x[np.arange(cells.size), cells] = 1.0
    return x


@pytest.mark.parametrize("name,side,eps,form", [
    ("krr", 20, 1.0, True), ("krr", 4, 0.3, None), ("krr", 6, 8.0, None),
    ("kpm", 5, 2.0, None), ("exp", 4, 1.0, False)])
def test_cells_draw_what_the_one_hot_rows_draw(name, side, eps, form):
    """Without the 16-bit prefix draw (a table not of the k-RR form, or that draw turned
    off), the same indices as the dense one-hot rows from the same bit source."""
    k = side * side
    mech = make_mechanism(name, points=_points(side), epsilon=eps)
    sampler = mech._cell_sampler()
    if form is not None:  # k-RR on 400 cells: the prefix form; exp: dense rows
        assert (sampler._prefix is not None) is form
    sampler._prefix = None  # the one-word-per-user draw of private_sample
    # more users than one block of private_sample (65536 // k): the draws span blocks
    cells = np.random.default_rng(5).integers(0, k, 3 * (1 << 16) // k + 7)
    for seed in (0, 1):
        fast = mech.sample_cells(cells, rng=seed)
        dense = mech.sample(_one_hot(cells, k), rng=seed)
        np.testing.assert_array_equal(fast.indices, dense.indices)
        assert fast.max_shift == dense.max_shift and fast.bits == dense.bits
        assert fast.secure is dense.secure is False
    # the production entropy path (OS source class on a seeded byte stream)
    fast = mech.sample_cells(cells, rng=secure_source(7))
    dense = mech.sample(_one_hot(cells, k), rng=secure_source(7))
    np.testing.assert_array_equal(fast.indices, dense.indices)
    assert fast.secure and dense.secure


class _Words(BitSource):
    """Hands out prepared uint64 words, in order (to choose each user's bits)."""

    def __init__(self, *batches: np.ndarray) -> None:
        self.batches = [np.asarray(b, dtype=np.uint64) for b in batches]

    def words(self, n: int) -> np.ndarray:
        out = self.batches.pop(0)
        assert out.size == n
        return out


@pytest.mark.parametrize("name,side,eps", [("krr", 10, 1.0), ("krr", 20, 0.05),
                                           ("krr", 20, 5.0), ("krr", 30, 1.0)])
def test_prefix_draw_is_the_index_of_the_whole_word(name, side, eps):
    """Every 16-bit prefix ``h``, several rows: the index drawn is #{j : c_j <= u} for
    ``u = h 2**45 + l``, for the lowest and the highest ``l`` (so for every ``l`` when
    the rest is not drawn) and random ones: the law is exactly ``w / 2**61``."""
    k = side * side
    mech = make_mechanism(name, points=_points(side), epsilon=eps)
    sampler = mech._cell_sampler()
    assert sampler._prefix is not None
    moves = sampler._prefix[-1]
    rest = sampler.polytope.bits - 16
    h = np.arange(1 << 16, dtype=np.int64)
    n_open = int(np.count_nonzero(moves))
    assert 0 < n_open < 0.05 * h.size
    gen = np.random.default_rng(3)
    for c in (0, 1, 57, k - 1):
        cs = sampler.cumulative[c]
        for low in (np.zeros(n_open, np.int64), np.full(n_open, (1 << rest) - 1),
                    gen.integers(0, 1 << rest, n_open)):
            src = _Words(h.astype(np.uint16).view(np.uint64),
                         low.astype(np.uint64) << np.uint64(64 - rest))
            got = sampler.draw_cells(src, np.full(h.size, c))
            u = h << rest
            u[moves] += low
            np.testing.assert_array_equal(got, np.searchsorted(cs, u, side="right"))
            top = (h << rest) + (1 << rest) - 1  # decided prefixes: the same at the top
            np.testing.assert_array_equal(got[~moves],
                                          np.searchsorted(cs, top, side="right")[~moves])


def test_krr_cells_law_is_the_certified_channel():
    mech = make_mechanism("krr", points=_points(3), epsilon=1.0)
    sampler = mech._cell_sampler()
    poly = grid_polytope(mech.base_measure, epsilon=1.0)
    assert np.all(sampler.weights >= poly.lower) and np.all(sampler.weights <= poly.upper)
    assert np.all(sampler.weights.sum(axis=1) == poly.total)
    cells = np.full(200_000, 4)
    got = np.bincount(mech.sample_cells(cells, rng=3).indices, minlength=9) / cells.size
    law = sampler.weights[4] / poly.total
    assert np.max(np.abs(got - law)) < 5 * np.sqrt(law.max() / cells.size)


def test_segment_search_equals_the_scan():
    """Tables with a few entries off a row's majority (the segment search) and dense
    rows (the scan): both give #{j : c_j <= u} for every u, including the boundaries."""
    gen = np.random.default_rng(2)
    k_v = 12
    m = np.full(k_v, 1.0 / k_v)
    poly = grid_polytope(m, epsilon=4.0)
    base = np.full((5, k_v), 1.0 / k_v)
    base[0, 3] += 0.02
    base[0, 7] -= 0.02
    base[1, 0] += 0.03
    base[1, 11] -= 0.03
    base[2, [2, 5, 9]] += [0.01, 0.01, -0.02]
    for table in (base, gen.dirichlet(np.full(k_v, 50.0), size=4)):
        sampler = TableSampler(table, poly)
        rows = np.repeat(np.arange(table.shape[0]), 3 * k_v + 200)
        cs = sampler.cumulative[rows]
        edges = np.concatenate([cs[:, :k_v], cs[:, :k_v] - 1], axis=1)
        u = np.concatenate([np.clip(edges[np.arange(rows.size), gen.integers(0, 2 * k_v,
                                                                              rows.size)],
                                    0, poly.total - 1),
                            gen.integers(0, poly.total, rows.size)])
        cells = np.concatenate([rows, rows])
        want = np.count_nonzero(sampler.cumulative[cells] <= u[:, None], axis=1)
        np.testing.assert_array_equal(sampler.draw(u, cells), want)


def test_cells_are_validated_and_charged_once():
    mech = make_mechanism("krr", points=_points(2), epsilon=1.0)
    for bad in (np.array([0, 4]), np.array([-1]), np.array([0.0, 1.0]),
                np.array([[0, 1]]), np.array([True, False])):
        with pytest.raises(InvalidDataError):
            mech.sample_cells(bad, rng=0)
    acc = PrivacyAccountant(1.5)
    out = mech.sample_cells(np.array([0, 1, 2, 3]), rng=0, accountant=acc)
    assert out.indices.shape == (4,) and acc.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):  # charged before anything is drawn
        mech.sample_cells(np.array([0]), rng=0, accountant=acc)
    with pytest.raises(InvalidParameterError):
        private_sample_cells(object(), np.array([0]))  # type: ignore[arg-type]
