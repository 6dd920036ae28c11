"""Engines: the heatmap cell sums on the local and Spark backends.

Oracles: exact rational arithmetic (``fractions.Fraction``) for the sums, brute-force
numpy (``np.bincount``) and :func:`privot.heatmaps.user_distributions_sum` for
agreement to 1e-12; bit-identity between chunk sizes, input formats and backends.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from privot.datasets import GOWALLA_NYC_COLUMNS, DataNotFoundError, data_file
from privot.engines import (
    Backend,
    Compare,
    LocalBackend,
    SourceNotFoundError,
    aggregate_user_cells,
    get_backend,
)
from privot.engines.heatmap import FRACTION_BITS, FixedPointQuotient, _limb_bits
from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps import CellSums, Grid, user_distributions_sum

# pyspark's own complaints about pandas 3, not about privot
pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

GRID = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=8)
NYC = Grid(bounds=(-74.26, -73.70, 40.48, 40.92), resolution=256)


def _messy_points(seed: int = 0, n: int = 3000, n_users: int = 150) -> pd.DataFrame:
    """Points of ``n_users`` users, some outside the unit square, some NaN/inf, plus
    five users entirely outside and a few rows without a user id."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n_users, size=n).astype(float)
    x = rng.uniform(-0.2, 1.2, size=n)
    y = rng.uniform(-0.2, 1.2, size=n)
    x[:20] = np.nan
    y[20:30] = np.inf
    x[30:35] = 1.0  # far edge: outside (half-open)
    x[35:40] = 0.0  # near edge: inside
    users[40:45] = np.nan  # no user id
    # users with no point inside
    away = pd.DataFrame({"user_id": np.repeat(np.arange(1000.0, 1005.0), 3),
                         "longitude": 5.0, "latitude": 0.5})
    df = pd.DataFrame({"user_id": users, "longitude": x, "latitude": y})
    df = pd.concat([df, away], ignore_index=True)
    df["other"] = "text"  # a column the engines must not need
    return df


def _exact_oracle(df: pd.DataFrame, grid: Grid) -> tuple[np.ndarray, dict[str, int]]:
    """Correctly rounded s(c) by exact rationals, and the diagnostic counts."""
    d = grid.resolution
    x0, x1, y0, y1 = grid.bounds
    per_user: dict[float, list[int]] = {}
    n_outside = 0
    ids = set()
    for u, x, y in zip(df["user_id"], df["longitude"], df["latitude"], strict=True):
        if pd.isna(u):
            n_outside += 1
            continue
        ids.add(u)
        if not (math.isfinite(x) and math.isfinite(y) and x0 <= x < x1 and y0 <= y < y1):
            n_outside += 1
            continue
        col = min(math.floor((x - x0) / grid.cell_width), d - 1)
        row = min(math.floor((y - y0) / grid.cell_height), d - 1)
        per_user.setdefault(u, []).append(row * d + col)
    exact = [Fraction(0)] * (d * d)
    for cells in per_user.values():
        for c in cells:
            exact[c] += Fraction(1, len(cells))
    sums = np.array([float(v) for v in exact]).reshape(d, d)  # correctly rounded
    counts = {"n_users": len(per_user), "n_points": len(df), "n_outside": n_outside,
              "n_users_empty": len(ids) - len(per_user)}
    return sums, counts


def _assert_same(a: CellSums, b: CellSums) -> None:
    """Bit-identical sums and equal counts."""
    assert a.sums.dtype == b.sums.dtype == np.float64
    np.testing.assert_array_equal(a.sums, b.sums, strict=True)
    assert (a.n_users, a.n_points, a.n_outside, a.n_users_empty) == (
        b.n_users, b.n_points, b.n_outside, b.n_users_empty)


def _gowalla_path():
    try:
        return data_file("gowalla_nyc/checkins.tsv")
    except DataNotFoundError as exc:
        pytest.skip(f"Gowalla NYC data not available: {exc}")


# -- local engine ------------------------------------------------------------------------


def test_local_equals_exact_rational_oracle():
    df = _messy_points()
    got = aggregate_user_cells(df, grid=GRID)
    want, counts = _exact_oracle(df, GRID)
    np.testing.assert_array_equal(got.sums, want)
    assert got.n_users == counts["n_users"]
    assert got.n_points == counts["n_points"] == len(df)
    assert got.n_outside == counts["n_outside"]
    assert got.n_users_empty == counts["n_users_empty"] == 5


def test_local_matches_bruteforce_numpy():
    rng = np.random.default_rng(1)
    n = 20_000
    users = rng.integers(0, 700, size=n)
    x, y = rng.uniform(-0.1, 1.1, size=n), rng.beta(2, 5, size=n)
    got = aggregate_user_cells(pd.DataFrame({"u": users, "x": x, "y": y}), grid=GRID,
                               user_column="u", x_column="x", y_column="y")
    kept = (x >= 0) & (x < 1) & (y >= 0) & (y < 1)
    cells = (np.minimum(np.floor(y[kept] / GRID.cell_height), 7) * 8
             + np.minimum(np.floor(x[kept] / GRID.cell_width), 7)).astype(int)
    n_u = np.bincount(users[kept], minlength=700)
    brute = np.bincount(cells, weights=1.0 / n_u[users[kept]], minlength=64).reshape(8, 8)
    np.testing.assert_allclose(got.sums, brute, rtol=1e-12, atol=0)
    ref = user_distributions_sum(users, x, y, GRID)
    np.testing.assert_allclose(got.sums, ref.sums, rtol=1e-12, atol=0)
    assert (got.n_users, got.n_outside, got.n_users_empty) == (
        ref.n_users, ref.n_outside, ref.n_users_empty)
    assert math.isclose(math.fsum(got.sums.ravel()), got.n_users, rel_tol=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 7, 1000])
def test_local_chunked_equals_unchunked_bit_for_bit(chunk_size, tmp_path):
    df = _messy_points(seed=2, n=400, n_users=40)
    whole = aggregate_user_cells(df, grid=GRID, chunk_size=10**6)
    _assert_same(aggregate_user_cells(df, grid=GRID, chunk_size=chunk_size), whole)
    path = tmp_path / "points.csv"
    df.to_csv(path, index=False)
    _assert_same(aggregate_user_cells(path, grid=GRID, chunk_size=chunk_size), whole)


def test_row_order_does_not_change_a_bit():
    df = _messy_points(seed=3)
    shuffled = df.sample(frac=1.0, random_state=5).reset_index(drop=True)
    _assert_same(aggregate_user_cells(df, grid=GRID, chunk_size=50),
                 aggregate_user_cells(shuffled, grid=GRID, chunk_size=333))


def test_points_outside_and_users_without_point_inside():
    df = pd.DataFrame({
        "user_id": [1, 1, 1, 2, 2, 3, 3, 4],
        "longitude": [0.1, 0.6, 2.0, 0.1, -0.5, 5.0, 1.0, 0.9],
        "latitude": [0.1, 0.6, 0.5, 0.1, 0.5, 0.5, 0.5, 0.9],
    })
    got = aggregate_user_cells(df, grid=Grid(bounds=(0, 1, 0, 1), resolution=2))
    # user 1: two points inside (1/2 each), user 2: one (1), user 3: none, user 4: one
    np.testing.assert_array_equal(got.sums, [[1.5, 0.0], [0.0, 1.5]])
    assert got.n_points == 8
    assert got.n_outside == 4  # x=2.0, x=-0.5, x=5.0 and x=1.0 (far edge, half-open)
    assert got.n_users == 3
    assert got.n_users_empty == 1
    assert got.sums.sum() == got.n_users


def test_missing_coordinates_and_ids_are_dropped_as_outside(tmp_path):
    path = tmp_path / "messy.csv"
    path.write_text("user_id,longitude,latitude\n"
                    "a,0.25,0.25\n"
                    "a,,0.25\n"          # empty coordinate
                    "a,abc,0.25\n"       # not a number
                    "b,nan,0.75\n"       # NaN
                    "b,0.75,inf\n"       # infinite
                    ",0.75,0.75\n"       # no user id
                    "c, 0.75 ,0.75\n")   # spaces around a number: parsed
    got = aggregate_user_cells(path, grid=Grid(bounds=(0, 1, 0, 1), resolution=2))
    np.testing.assert_array_equal(got.sums, [[1.0, 0.0], [0.0, 1.0]])
    assert (got.n_users, got.n_points, got.n_outside, got.n_users_empty) == (2, 7, 5, 1)


def test_sums_add_up_to_n_users_on_gowalla():
    path = _gowalla_path()
    got = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS)
    assert got.n_users == 7115 and got.n_points == 138_957
    assert math.isclose(math.fsum(got.sums.ravel()), got.n_users, rel_tol=1e-13)
    assert got.sums.shape == (256, 256) and np.all(got.sums >= 0)


def test_empty_input_gives_zero_users(tmp_path):
    empty = pd.DataFrame({"user_id": pd.Series([], dtype="int64"),
                          "longitude": pd.Series([], dtype="float64"),
                          "latitude": pd.Series([], dtype="float64")})
    path = tmp_path / "empty.csv"
    path.write_text("user_id,longitude,latitude\n")
    for source in (empty, path):
        got = aggregate_user_cells(source, grid=GRID)
        assert got.sums.shape == (8, 8) and not got.sums.any()
        assert (got.n_users, got.n_points, got.n_outside, got.n_users_empty) == (0, 0, 0, 0)


def test_missing_column_names_it_and_the_available_ones(tmp_path):
    df = pd.DataFrame({"user": [1], "longitude": [0.5], "latitude": [0.5]})
    with pytest.raises(InvalidDataError, match=r"'user_id'.*available columns.*'user'"):
        aggregate_user_cells(df, grid=GRID)
    path = tmp_path / "p.parquet"
    df.to_parquet(path)
    with pytest.raises(InvalidDataError, match=r"'lon'.*available columns"):
        aggregate_user_cells(path, grid=GRID, user_column="user", x_column="lon")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SourceNotFoundError, match="does not exist"):
        aggregate_user_cells(tmp_path / "nope.csv", grid=GRID)
    with pytest.raises(FileNotFoundError):
        aggregate_user_cells(str(tmp_path / "nope.parquet"), grid=GRID)


def test_bad_arguments_are_refused(tmp_path):
    df = _messy_points()
    with pytest.raises(InvalidParameterError, match="engine"):
        aggregate_user_cells(df, grid=GRID, engine="dask")
    with pytest.raises(InvalidParameterError, match="grid"):
        aggregate_user_cells(df, grid=(0, 1, 0, 1))
    with pytest.raises(InvalidParameterError, match="three different columns"):
        aggregate_user_cells(df, grid=GRID, x_column="latitude")
    with pytest.raises(InvalidParameterError, match="chunk_size"):
        aggregate_user_cells(df, grid=GRID, chunk_size=0)
    (tmp_path / "points.txt").write_text("a|b\n")
    with pytest.raises(InvalidParameterError, match="sep="):
        aggregate_user_cells(tmp_path / "points.txt", grid=GRID)
    with pytest.raises(InvalidDataError, match="must hold numbers"):
        aggregate_user_cells(df.assign(longitude=True), grid=GRID)


def test_parquet_csv_and_dataframe_agree_bit_for_bit(tmp_path):
    df = _messy_points(seed=4)
    df.to_parquet(tmp_path / "p.parquet")
    df.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    whole = aggregate_user_cells(df, grid=GRID)
    _assert_same(aggregate_user_cells(tmp_path / "p.parquet", grid=GRID, chunk_size=64), whole)
    # text user ids: "3.0" for the float ids above, the same users
    _assert_same(aggregate_user_cells(tmp_path / "p.tsv", grid=GRID, chunk_size=64), whole)
    df.to_csv(tmp_path / "p.csv.gz", index=False, compression="gzip")
    _assert_same(aggregate_user_cells(tmp_path / "p.csv.gz", grid=GRID, chunk_size=64), whole)


@pytest.mark.parametrize("kind", ["packed-direct", "packed-sorted", "hashed"])
def test_local_grouping_paths_agree_with_pandas_groupby(kind):
    """The local engine groups integer keys by direct addressing or a stable sort, and
    anything else by hashing; all must give pandas' groupby sums, missing keys kept."""
    rng = np.random.default_rng(11)
    n = 5000
    a = rng.integers(-3, 40, size=n)
    b = rng.integers(0, 7, size=n)
    if kind == "packed-sorted":
        a = a * 2**40 + 17  # a span far beyond the direct-addressing table
    df = pd.DataFrame({"a": a, "b": b, "v": rng.integers(0, 1000, size=n)})
    if kind == "hashed":
        df["a"] = df["a"].astype(str).where(df["a"] % 5 != 0, None)  # text, some missing
    backend = LocalBackend(chunk_size=700)
    data = backend.read(df, columns=["a", "b", "v"])
    counts = backend.collect_to_numpy(backend.count_per_key(data, ["a", "b"], out="n"),
                                      ["a", "b", "n"])
    sums = backend.collect_to_numpy(backend.sum_per_key(data, ["a", "b"], {"s": "v"}),
                                    ["a", "b", "s"])
    ref = df.groupby(["a", "b"], dropna=False).agg(n=("v", "size"), s=("v", "sum"))
    want_n = {(str(k1), int(k2)): int(r.n) for (k1, k2), r in ref.iterrows()}
    want_s = {(str(k1), int(k2)): int(r.s) for (k1, k2), r in ref.iterrows()}
    got_n = {(str(k1), int(k2)): int(v) for k1, k2, v in zip(
        counts["a"], counts["b"], counts["n"], strict=True)}
    got_s = {(str(k1), int(k2)): int(v) for k1, k2, v in zip(
        sums["a"], sums["b"], sums["s"], strict=True)}
    assert len(got_n) == len(counts["n"]) and len(got_s) == len(sums["s"])  # one row a key
    assert got_n == want_n
    assert got_s == want_s


def test_headerless_gowalla_matches_in_memory_reference():
    path = _gowalla_path()
    from privot.datasets import load_gowalla_nyc

    df = load_gowalla_nyc()
    got = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS, chunk_size=50_000)
    ref = user_distributions_sum(df["user_id"].to_numpy(), df["longitude"].to_numpy(),
                                 df["latitude"].to_numpy(), NYC)
    np.testing.assert_allclose(got.sums, ref.sums, rtol=1e-12, atol=0)
    assert (got.n_users, got.n_points, got.n_outside, got.n_users_empty) == (
        ref.n_users, ref.n_points, ref.n_outside, ref.n_users_empty)
    _assert_same(got, aggregate_user_cells(df, grid=NYC))


@pytest.mark.parametrize("bound", [1, 3000, 2**31, 2**40])
def test_fixed_point_quotient_is_the_truncated_exact_quotient(bound):
    rng = np.random.default_rng(bound)
    den = rng.integers(1, bound + 1, size=200, dtype=np.int64)
    num = rng.integers(0, den + 1, dtype=np.int64) * rng.integers(1, 4, size=200)
    fn = FixedPointQuotient("num", "den", _limb_bits(bound))
    parts = fn.pandas(pd.DataFrame({"num": num, "den": den}))
    for i in range(200):
        value = Fraction(int(parts[fn.names[0]][i]))
        for j, name in enumerate(fn.names[1:], start=1):
            digit = int(parts[name][i])
            assert 0 <= digit < 2**fn.limb_bits
            value += Fraction(digit, 2 ** (j * fn.limb_bits))
        exact = Fraction(int(num[i]), int(den[i]))
        assert 0 <= exact - value < Fraction(1, 2**FRACTION_BITS)


def test_backend_protocol_on_local_engine():
    backend = get_backend("local", chunk_size=2)
    assert isinstance(backend, Backend) and isinstance(backend, LocalBackend)
    assert get_backend(backend) is backend
    df = pd.DataFrame({"k": [1, 1, 2, None], "v": [1, 2, 3, 4]})
    data = backend.read(df, columns=["k", "v"])
    counts = backend.collect_to_numpy(backend.count_per_key(data, ["k"], out="n"), ["k", "n"])
    got = sorted(str(pair) for pair in zip(counts["k"].tolist(), counts["n"].tolist(),
                                           strict=True))
    assert got == ["(1.0, 2)", "(2.0, 1)", "(nan, 1)"]  # the missing key is a key
    sums = backend.sum_per_key(backend.filter(data, Compare("v", ">", 1)), (), {"t": "v"})
    assert backend.collect_to_numpy(sums, ["t"])["t"].tolist() == [9]
    assert backend.count(data) == 4


# -- Spark engine ------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_equals_local_bit_for_bit_on_gowalla(spark):
    path = _gowalla_path()
    local = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS)
    dist = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS, engine="spark",
                                spark=spark)
    _assert_same(dist, local)
    # hence the same seeded release, bit for bit
    from privot.privacy.mechanisms import laplace_mechanism

    a = laplace_mechanism(local.sums, sensitivity=1.0, epsilon=1.0,
                          rng=np.random.default_rng(7))
    b = laplace_mechanism(dist.sums, sensitivity=1.0, epsilon=1.0,
                          rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.value, b.value)


@pytest.mark.spark
@pytest.mark.parametrize("native", [True, False], ids=["native", "mapInPandas"])
def test_spark_equals_local_bit_for_bit_on_parquet(spark, native, tmp_path):
    from privot.engines.spark import SparkBackend

    df = _messy_points(seed=5)
    df.to_parquet(tmp_path / "points.parquet")
    local = aggregate_user_cells(tmp_path / "points.parquet", grid=GRID, chunk_size=100)
    dist = aggregate_user_cells(tmp_path / "points.parquet", grid=GRID,
                                engine=SparkBackend(spark, native=native))
    _assert_same(dist, local)
    want, counts = _exact_oracle(df, GRID)
    np.testing.assert_array_equal(dist.sums, want)


@pytest.mark.spark
def test_spark_missing_column_and_messy_text(spark, tmp_path):
    with pytest.raises(InvalidDataError, match=r"'user_id'.*available columns"):
        aggregate_user_cells(pd.DataFrame({"u": [1], "longitude": [0.5], "latitude": [0.5]}),
                             grid=GRID, engine="spark", spark=spark)
    path = tmp_path / "messy.csv"
    path.write_text("user_id,longitude,latitude\na,0.25,0.25\na,,0.25\na,abc,0.25\n"
                    "b,nan,0.75\nb,0.75,inf\n,0.75,0.75\nc, 0.75 ,0.75\n")
    _assert_same(aggregate_user_cells(path, grid=Grid(bounds=(0, 1, 0, 1), resolution=2),
                                      engine="spark", spark=spark),
                 aggregate_user_cells(path, grid=Grid(bounds=(0, 1, 0, 1), resolution=2)))
