"""The parameter objects of private_barycenter: built from keywords or given, validated,
one-line reprs, the same release either way, options of another method refused or
warned about."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from privot.barycenters import (
    BarycenterParams,
    CoresetOptions,
    PerturbationOptions,
    PublicBounds,
    SubspaceOptions,
    private_barycenter,
)
from privot.barycenters.params import OPTION_GROUPS
from privot.errors import InvalidDataError, InvalidParameterError

BOX = PublicBounds.box([-1.0, -1.0], [1.0, 1.0])


def _groups(n=300, seed=0, d=2):
    gen = np.random.default_rng(seed)
    return [np.clip(gen.normal(0.2 * g, 0.3, (n, d)), -1, 1) for g in range(2)]


def test_a_params_object_gives_the_same_release_as_keywords():
    kw = {"bounds": BOX, "m": 4, "epsilon": 1.0, "method": "coreset", "placement": "uniform",
          "reg": 0.01}
    a = private_barycenter(_groups(), rng=3, **kw)
    b = private_barycenter(_groups(), BarycenterParams.from_options(kw), rng=3)
    c = private_barycenter(_groups(), BarycenterParams(
        m=4, epsilon=1.0, bounds=BOX, method="coreset", reg=0.01,
        coreset=CoresetOptions(placement="uniform")), rng=3)
    for other in (b, c):
        np.testing.assert_array_equal(a.support, other.support)
        assert json.dumps(a.release_dict()) == json.dumps(other.release_dict())


@pytest.mark.filterwarnings("ignore:output perturbation noise is large")
def test_options_beside_an_object_replace_its_fields():
    base = BarycenterParams(m=4, epsilon=1.0, bounds=BOX, method="perturbation", delta=1e-5)
    res = private_barycenter(_groups(), base, step="anchored", splits=2, rng=1)
    assert res.params["step"] == "anchored" and res.params["splits"] == 2
    assert base.perturbation.step == "lloyd"  # frozen: the object itself is unchanged


def test_keywords_are_routed_to_the_option_objects():
    p = BarycenterParams.from_options({"m": 3, "epsilon": 2.0, "depth": 5, "step": "anchored",
                                       "splits": 4, "cells": 2})
    assert p.coreset.depth == 5 and p.perturbation.splits == 4 and p.subspace.cells == 2
    q = p.replace(depth=6, shrinkage=False)
    assert q.coreset.depth == 6 and q.perturbation.shrinkage is False and q.subspace.cells == 2
    r = p.replace(coreset=CoresetOptions(placement="centre"), depth=7)
    assert r.coreset.placement == "centre" and r.coreset.depth == 7


def test_option_names_are_unique():
    names = [n for c in (BarycenterParams, *OPTION_GROUPS.values()) for n in c.field_names()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("make, name", [
    (lambda: BarycenterParams.from_options({"m": 3, "epsilon": 1.0, "colour": "red"}),
     "colour"),
    (lambda: BarycenterParams(m=0, epsilon=1.0), "m"),
    (lambda: BarycenterParams(m=3, epsilon=1.0, delta=1.5), "delta"),
    (lambda: BarycenterParams(m=3, epsilon=1.0, coreset="deep"), "coreset"),
    (lambda: CoresetOptions(placement="corner"), "placement"),
    (lambda: CoresetOptions(depth=0), "depth"),
    (lambda: PerturbationOptions(splits=3), "splits"),  # step="lloyd"
    (lambda: PerturbationOptions(step="anchored", iterations=0), "iterations"),
    (lambda: PerturbationOptions(anchor=np.array([[np.nan, 0.0]])), "anchor"),
    (lambda: SubspaceOptions(image_shape=(2, 2)), "image_shape"),  # without basis="dct"
    (lambda: SubspaceOptions(complement_mean="yes"), "complement_mean"),
])
def test_every_field_is_validated_when_built(make, name):
    with pytest.raises((InvalidParameterError, InvalidDataError)) as err:
        make()
    assert getattr(err.value, "name", None) == name or name in str(err.value)


def test_params_must_be_a_barycenter_params():
    with pytest.raises(InvalidParameterError) as err:
        private_barycenter(_groups(), {"m": 3, "epsilon": 1.0}, bounds=BOX)
    assert err.value.name == "params"


def test_reprs_are_one_line_and_short():
    anchor = np.zeros((400, 2))
    p = BarycenterParams(m=400, epsilon=1.0, bounds=BOX, method="perturbation", delta=1e-6,
                         perturbation=PerturbationOptions(anchor=anchor, step="anchored"))
    for obj in (p, p.perturbation, p.coreset, p.subspace):
        text = repr(obj)
        assert "\n" not in text and len(text) < 300, text
    assert "<array (400, 2)>" in repr(p.perturbation)
    assert repr(CoresetOptions()) == "CoresetOptions()"
    json.dumps(p.to_dict())  # JSON-ready


def test_an_option_of_another_method_is_warned_about_when_not_read():
    with pytest.warns(UserWarning, match="step ignored"):
        private_barycenter(_groups(), bounds=BOX, m=3, epsilon=1.0, method="coreset",
                           step="anchored", rng=0)
    anchor = np.zeros((3, 2))
    with pytest.warns(UserWarning, match="depth ignored"):
        private_barycenter(_groups(), bounds=BOX, m=3, epsilon=1.0, delta=1e-5,
                           method="perturbation", anchor=anchor, depth=4, rng=0)
    box6 = PublicBounds.box(-np.ones(6), np.ones(6))
    with pytest.warns(UserWarning, match="placement ignored"):
        private_barycenter(_groups(d=6), bounds=box6, m=3, epsilon=1.0, method="subspace",
                           placement="uniform", rng=0)


def test_defaults_raise_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        private_barycenter(_groups(), bounds=BOX, m=3, epsilon=1.0, method="coreset",
                           iterations=1, calibration="analytic", rng=0)


def test_an_option_the_method_would_misread_is_refused():
    with pytest.raises(InvalidParameterError) as err:
        private_barycenter(_groups(), bounds=BOX, m=3, epsilon=1.0, method="coreset",
                           rounds=2, rng=0)
    assert err.value.name == "rounds"
