"""The shared error statement (issue 28): its checks and its JSON shape."""

from __future__ import annotations

import json
import math

import pytest

from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError


def test_statement_serialises_with_every_field():
    s = ErrorStatement(metric="EMD(release, truth)", bound=2.5, confidence=0.95,
                       units="cells", covers="the noise", not_covered="the tail",
                       derivation="docs/errors/heatmaps.md", details={"km": 1.2})
    d = json.loads(json.dumps(s.to_dict()))
    assert d == {"metric": "EMD(release, truth)", "bound": 2.5, "confidence": 0.95,
                 "units": "cells", "covers": "the noise", "not_covered": "the tail",
                 "derivation": "docs/errors/heatmaps.md", "details": {"km": 1.2}}
    assert str(s) == "EMD(release, truth) <= 2.5 cells with probability 0.95"


def test_an_infinite_bound_is_json_null_and_worst_case_says_no_probability():
    s = ErrorStatement(metric="W1", bound=math.inf, confidence=1.0, units="km",
                       covers="nothing")
    assert s.to_dict()["bound"] is None
    assert str(s) == "W1 <= inf km"


@pytest.mark.parametrize("field,value", [("bound", -1.0), ("bound", math.nan),
                                         ("bound", "1"), ("confidence", 0.0),
                                         ("confidence", 1.5)])
def test_bad_statements_are_refused(field, value):
    kw = {"metric": "m", "bound": 1.0, "confidence": 0.9, "units": "u", "covers": "c",
          field: value}
    with pytest.raises(InvalidParameterError, match=field):
        ErrorStatement(**kw)
