"""Real-data loaders on the actual shared data (counts from shared/data/README.md)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from privot.datasets import (
    DataNotFoundError,
    load_adult,
    load_gowalla_nyc,
    load_uniss_fixations,
    resolve_data_dir,
)
from privot.errors import InvalidParameterError, MissingExtraError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def data_dir():
    try:
        return resolve_data_dir()
    except DataNotFoundError as exc:  # pragma: no cover - only without shared/data
        pytest.skip(f"shared data not available: {exc}")


@pytest.fixture(scope="module")
def gowalla(data_dir):
    return load_gowalla_nyc(data_dir)


# ----------------------------------------------------------------------------- Gowalla


def test_gowalla_counts_and_types(gowalla):
    df = gowalla
    assert list(df.columns) == ["user_id", "time", "latitude", "longitude", "location_id"]
    assert len(df) == 138_957
    assert df["user_id"].nunique() == 7_115
    assert df["location_id"].nunique() == 21_509
    assert df["user_id"].dtype == np.int64
    assert df["location_id"].dtype == np.int64
    assert df["latitude"].dtype == np.float64
    assert pd.api.types.is_datetime64_any_dtype(df["time"])
    assert str(df["time"].dt.tz) == "UTC"
    assert int(df.duplicated().sum()) == 6  # exact duplicates kept, as in the source


def test_gowalla_ranges(gowalla):
    df = gowalla
    assert df["latitude"].min() == pytest.approx(40.4844, abs=1e-4)
    assert df["latitude"].max() == pytest.approx(40.9176, abs=1e-4)
    assert df["longitude"].min() == pytest.approx(-74.2586, abs=1e-4)
    assert df["longitude"].max() == pytest.approx(-73.7013, abs=1e-4)
    assert df["time"].min().strftime("%Y-%m") == "2009-04"
    assert df["time"].max().strftime("%Y-%m") == "2010-10"
    per_user = df.groupby("user_id").size()
    assert per_user.median() == 5
    assert per_user.max() == 1_794


def test_gowalla_nrows_and_first_row(data_dir):
    df = load_gowalla_nyc(data_dir, nrows=3)
    assert len(df) == 3
    assert df.loc[0, "user_id"] == 0
    assert df.loc[0, "time"] == pd.Timestamp("2010-10-12T00:21:28Z")
    assert df.loc[0, "location_id"] == 23261
    with pytest.raises(InvalidParameterError, match="nrows"):
        load_gowalla_nyc(data_dir, nrows=0)


def test_gowalla_via_env_var(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVOT_DATA_DIR", str(data_dir))
    monkeypatch.chdir(tmp_path)
    assert len(load_gowalla_nyc(nrows=10)) == 10


# ----------------------------------------------------------------------------- Uniss


def test_uniss_fixations(data_dir):
    df = load_uniss_fixations(data_dir)
    assert len(df) == 19_902
    assert list(df.columns) == ["image_id", "participant", "gender", "fixation_index", "x",
                                "y", "duration_ms", "media_width", "media_height"]
    assert df["participant"].nunique() == 20
    assert df["image_id"].nunique() == 119
    assert set(df["gender"].unique()) == {"M", "F"}
    assert (df["media_width"] == 562).all() and (df["media_height"] == 762).all()
    assert df["x"].between(0, 561).all() and df["y"].between(0, 761).all()
    assert df.loc[0, "participant"] == "00"  # zero-padded ids kept as strings
    assert (df["fixation_index"] >= 1).all()


def test_uniss_with_stimuli(data_dir):
    df = load_uniss_fixations(data_dir, with_stimuli=True)
    assert len(df) == 19_902
    assert df["file_name"].notna().all()
    assert df.loc[df["image_id"] == 0, "file_name"].unique().tolist() == ["AF09SAS.JPG"]
    assert df["file_name"].str.endswith(".JPG").all()


# ----------------------------------------------------------------------------- Adult


@pytest.mark.parametrize(("split", "rows", "positives"),
                         [("train", 32_561, 7_841), ("test", 16_281, 3_846),
                          ("all", 48_842, 11_687)])
def test_adult_splits(data_dir, split, rows, positives):
    df = load_adult(data_dir, split=split)
    assert len(df) == rows
    assert len(df.columns) == 16
    assert df.columns[0] == "age" and df.columns[-2] == "label" and df.columns[-1] == "income"
    assert set(df["label"].unique()) == {"<=50K", ">50K"}  # test's "." removed
    assert int(df["income"].sum()) == positives
    assert ((df["income"] == 1) == (df["label"] == ">50K")).all()
    assert not df.isin(["?"]).any().any()
    assert df["age"].dtype == np.int64


def test_adult_missing_values_are_nan(data_dir):
    df = load_adult(data_dir, split="train")
    # Known missing counts of the UCI training file.
    assert int(df["workclass"].isna().sum()) == 1_836
    assert int(df["occupation"].isna().sum()) == 1_843
    assert int(df["native-country"].isna().sum()) == 583
    assert int(df["age"].isna().sum()) == 0


def test_adult_bad_split(data_dir):
    with pytest.raises(InvalidParameterError, match="split"):
        load_adult(data_dir, split="validation")


def test_adult_tolerates_cross_validator_line(tmp_path):
    # Some copies of adult.test start with "|1x3 Cross validator"; the loader skips it.
    folder = tmp_path / "adult"
    folder.mkdir()
    (folder / "columns.txt").write_text(
        "age, workclass, fnlwgt, education, education-num, marital-status, occupation, "
        "relationship, race, sex, capital-gain, capital-loss, hours-per-week, "
        "native-country, label\n")
    (folder / "adult.test").write_text(
        "|1x3 Cross validator\n"
        "25, Private, 226802, 11th, 7, Never-married, ?, Own-child, Black, Male, 0, 0, 40, "
        "United-States, <=50K.\n"
        "28, Local-gov, 336951, Assoc-acdm, 12, Married-civ-spouse, Protective-serv, "
        "Husband, White, Male, 0, 0, 40, United-States, >50K.\n\n")
    df = load_adult(tmp_path, split="test")
    assert len(df) == 2
    assert df["income"].tolist() == [0, 1]
    assert pd.isna(df.loc[0, "occupation"])


# ----------------------------------------------------------------------------- extras


def test_missing_pandas_names_the_extra(data_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    for call in (lambda: load_gowalla_nyc(data_dir, nrows=1),
                 lambda: load_uniss_fixations(data_dir),
                 lambda: load_adult(data_dir)):
        with pytest.raises(MissingExtraError, match=r"privot\[datasets\]"):
            call()
