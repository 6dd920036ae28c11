"""One ``rng`` rule for the four capabilities (issue 25): None, a numpy Generator, a
BitSource or an int seed, the seed meaning ``numpy.random.default_rng(seed)`` (the same
release bit for bit, recorded ``secure=False``); anything else refused by name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fair_data import logistic_model, two_group_table
from privot.errors import InvalidParameterError
from privot.privacy.noise import BitSource

BAD = [True, -1, 1.5, "0", np.random.RandomState(0)]


def test_check_rng_rule():
    from privot.privacy.noise import check_rng

    assert check_rng(None) is None
    g = np.random.default_rng(3)
    assert check_rng(g) is g

    class Bits(BitSource):
        def words(self, n):
            return np.zeros(n, dtype=np.uint64)

    b = Bits()
    assert check_rng(b) is b
    for seed in (0, np.int64(7)):
        got = check_rng(seed)
        assert isinstance(got, np.random.Generator)
        assert got.integers(2**62) == np.random.default_rng(int(seed)).integers(2**62)
    for bad in BAD:
        with pytest.raises(InvalidParameterError) as info:
            check_rng(bad)
        assert info.value.name == "rng" and "int seed" in str(info.value)
    with pytest.raises(InvalidParameterError, match="BitSource"):
        check_rng(b, bits=False)


def _heatmap(rng):
    from privot.heatmaps import Grid, private_heatmap

    gen = np.random.default_rng(0)
    df = pd.DataFrame({"user_id": np.repeat(np.arange(40), 3),
                       "x": gen.uniform(0, 1, 120), "y": gen.uniform(0, 1, 120)})
    res = private_heatmap(df, grid=Grid((0.0, 1.0, 0.0, 1.0), 16), epsilon=1.0, x="x", y="y",
                          rng=rng)
    return res.heatmap, res.release.secure


def _barycenter(rng):
    from privot.barycenters import PublicBounds, private_barycenter

    gen = np.random.default_rng(0)
    groups = [gen.uniform(-1, 1, (300, 2)) for _ in range(3)]
    res = private_barycenter(groups, bounds=PublicBounds.box([-1.0, -1.0], [1.0, 1.0]),
                             m=4, epsilon=1.0, rng=rng)
    return res.support, res.secure


def _sample(rng):
    from privot.sampling import private_sample

    res = private_sample(np.tile([0.2, 0.3, 0.5], (50, 1)),
                         base_measure=np.array([0.3, 0.3, 0.4]), epsilon=1.0, rng=rng)
    return res.indices, res.secure


def _learning(rng):
    torch = pytest.importorskip("torch")
    from privot.learning import make_private

    x, y, a = two_group_table(0)
    model = logistic_model()
    t = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), (x, y, a),
                     penalty="sp", alpha=0.5, noise_multiplier=4.0, target_delta=1e-5,
                     steps=3, rng=rng)
    t.train()
    params = np.concatenate([p.detach().numpy().ravel() for p in t.model.parameters()])
    return params, t.privacy_report()["secure_randomness"]


CAPABILITIES = [_heatmap, _barycenter, _sample, _learning]


@pytest.mark.parametrize("run", CAPABILITIES, ids=lambda f: f.__name__.strip("_"))
def test_int_seed_is_the_seeded_generator(run):
    """``rng=0`` is accepted everywhere and gives the release of ``default_rng(0)``."""
    by_seed, secure = run(0)
    by_gen, _ = run(np.random.default_rng(0))
    np.testing.assert_array_equal(by_seed, by_gen)
    assert secure is False


@pytest.mark.parametrize("run", CAPABILITIES, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("bad", [True, -1, "0"], ids=repr)
def test_bad_rng_is_refused_by_name(run, bad):
    with pytest.raises(InvalidParameterError) as info:
        run(bad)
    assert info.value.name == "rng"
