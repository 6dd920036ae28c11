"""``SampleParams``: the one parameter style of ``sample_population`` (issue 25).

A frozen, validated object; keyword options build it; the historical call with the
mechanism in the params position is the same release, bit for bit; the module split of
``privot.sampling.population`` keeps the old import paths.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.sampling import SampleParams, make_mechanism
from privot.sampling.engine_step import UserCellCounts
from privot.sampling.population import sample_population

GRID = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=4)  # k = k_v = 16


@pytest.fixture(scope="module")
def mech():
    return make_mechanism("wpm", points=GRID.cell_centre_points(), epsilon=1.0)


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(3)
    n = 40
    cells = rng.integers(0, 16, size=n)
    return UserCellCounts(user_ids=np.arange(n) + 7, indptr=np.arange(n + 1, dtype=np.int64),
                          cells=cells.astype(np.int64),
                          counts=rng.integers(1, 4, size=n).astype(np.int64), grid=GRID,
                          n_points=n, n_outside=0, n_users_empty=0)


def test_fields_are_validated_naming_the_field(mech):
    channel = mech.channel()
    cases = [({"mechanism": "wpm"}, "mechanism"), ({}, "mechanism"),
             ({"mechanism": mech, "variant": "both"}, "variant"),
             ({"mechanism": mech, "bits": 62}, "bits"),
             ({"mechanism": mech, "bits": 0}, "bits"),
             ({"mechanism": mech, "batch_size": 0}, "batch_size"),
             ({"mechanism": mech, "channel": channel}, "channel"),  # direct: no channel
             ({"mechanism": mech, "variant": "linear", "channel": channel[:3]}, "channel"),
             ({"mechanism": mech, "variant": "linear", "channel": channel * 2}, "channel")]
    for kwargs, name in cases:
        with pytest.raises(InvalidParameterError, match=name) as info:
            SampleParams(**kwargs)
        assert info.value.name == name


def test_frozen_one_line_repr_and_to_dict(mech):
    params = SampleParams(mechanism=mech, variant="linear", channel=mech.channel())
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.variant = "direct"  # type: ignore[misc]
    text = repr(params)
    assert "\n" not in text and text.startswith("SampleParams(WassersteinProjection(")
    assert "variant='linear'" in text and "channel=<(16, 16) array>" in text
    assert "\n" not in repr(mech) and "epsilon=1" in repr(mech)
    device = repr(mech.sample(np.full(16, 1 / 16), rng=1))
    assert device == "DeviceSample(1 samples, epsilon=1 LDP, bits=61, SEEDED)"
    body = params.to_dict()
    json.dumps(body)
    assert body["variant"] == "linear" and body["channel"] == [16, 16]
    assert body["mechanism"]["mechanism"] == "wpm" and body["bits"] == 61
    assert params.replace(variant="direct", channel=None).variant == "direct"
    with pytest.raises(InvalidParameterError, match="spelling"):
        params.replace(spelling=1)


@pytest.mark.parametrize("variant", ["direct", "linear"])
def test_every_spelling_is_the_same_release(mech, counts, variant):
    """The historical call, keyword options and a params object: the same bytes."""
    old = sample_population(counts, mech, variant=variant, rng=13)
    by_keywords = sample_population(counts, mechanism=mech, variant=variant, rng=13)
    by_params = sample_population(counts, SampleParams(mechanism=mech, variant=variant),
                                  rng=13)
    replaced = sample_population(counts, SampleParams(mechanism=mech), variant=variant,
                                 rng=13)
    for got in (by_keywords, by_params, replaced):
        np.testing.assert_array_equal(got.indices, old.indices)
        assert got.release_dict() == old.release_dict()


def test_mechanism_twice_is_refused(mech, counts):
    with pytest.raises(InvalidParameterError, match="params"):
        sample_population(counts, mech, mechanism=mech)
    with pytest.raises(InvalidParameterError, match="spelling"):
        sample_population(counts, mech, spelling=1)


def test_accountant_without_spend_is_refused_before_anything(mech, counts):
    with pytest.raises(InvalidParameterError, match="accountant"):
        sample_population(counts, mech, accountant=object())
    with pytest.raises(InvalidParameterError, match="accountant"):
        mech.sample(np.full(16, 1 / 16), accountant=object())


def test_the_split_modules_keep_the_old_paths():
    from privot.sampling import estimators, params, population, result

    assert population.PopulationSample is result.PopulationSample
    assert population.PopulationDiagnostics is result.PopulationDiagnostics
    assert population.CURATOR_FILES is result.CURATOR_FILES
    assert population.PUBLISHABLE_FILES is result.PUBLISHABLE_FILES
    assert population.DEFAULT_INPUT is result.DEFAULT_INPUT
    assert population.VARIANTS is params.VARIANTS
    for name in ("estimate_direct", "estimate_linear", "estimate_population", "linear_law"):
        assert getattr(population, name) is getattr(estimators, name)
