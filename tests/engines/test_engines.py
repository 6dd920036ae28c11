"""Engines: the heatmap cell sums (``privot.heatmaps.engine_step``) on DuckDB and Spark.

Oracles: exact rational arithmetic (``fractions.Fraction``) for the sums, brute-force
numpy (``np.bincount``) for agreement to 1e-12; bit-identity with
:func:`privot.heatmaps.user_distributions_sum` (the in-memory path), between input
formats, row orders, thread counts and engines; the fixed-point digits checked against
exact Python integers on adversarial numerators and denominators, on both engines and in
memory.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from privot.datasets import GOWALLA_NYC_COLUMNS, DataNotFoundError, data_file
from privot.engines import Engine, SourceNotFoundError, get_engine, read_columns
from privot.engines.duckdb import DuckDBEngine
from privot.errors import InvalidDataError, InvalidParameterError
from privot.heatmaps import CellSums, Grid, aggregate_user_cells, user_distributions_sum
from privot.heatmaps.engine_step import _digit

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



def _adversarial_points() -> pd.DataFrame:
    """Points on and next to every cell edge of GRID (the float rounding of
    ``floor((x - x0) / w)`` decides them), at the far edges, and users with awkward
    point counts (primes, one user with 1,000 points)."""
    edges = np.arange(9) / 8.0
    near = np.concatenate([edges, np.nextafter(edges, -1.0), np.nextafter(edges, 2.0),
                           [1.0 - 2**-53, 0.1, 0.3, 0.7, 1 / 3, 2 / 3]])
    xs, ys = np.meshgrid(near, near[::-1])
    xs, ys = xs.ravel(), ys.ravel()
    users = np.arange(xs.size) % 97  # 97 users, prime-ish counts
    users[::7] = 500  # one big user
    return pd.DataFrame({"user_id": users, "longitude": xs, "latitude": ys})


# -- DuckDB (the default engine) -------------------------------------------------------


def test_duckdb_equals_exact_rational_oracle():
    df = _messy_points()
    got = aggregate_user_cells(df, grid=GRID)
    want, counts = _exact_oracle(df, GRID)
    np.testing.assert_array_equal(got.sums, want)
    assert got.n_users == counts["n_users"]
    assert got.n_points == counts["n_points"] == len(df)
    assert got.n_outside == counts["n_outside"]
    assert got.n_users_empty == counts["n_users_empty"] == 5


def test_adversarial_cell_edges_equal_the_exact_oracle():
    df = _adversarial_points()
    got = aggregate_user_cells(df, grid=GRID)
    want, counts = _exact_oracle(df, GRID)
    np.testing.assert_array_equal(got.sums, want)
    assert (got.n_users, got.n_outside) == (counts["n_users"], counts["n_outside"])
    ref = user_distributions_sum(df["user_id"].to_numpy(), df["longitude"].to_numpy(),
                                 df["latitude"].to_numpy(), GRID)
    np.testing.assert_array_equal(got.sums, ref.sums)


def test_duckdb_matches_bruteforce_numpy_and_the_in_memory_path():
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
    np.testing.assert_array_equal(got.sums, ref.sums)
    assert (got.n_users, got.n_outside, got.n_users_empty) == (
        ref.n_users, ref.n_outside, ref.n_users_empty)
    assert math.isclose(math.fsum(got.sums.ravel()), got.n_users, rel_tol=1e-12)


def test_row_order_and_thread_count_do_not_change_a_bit():
    df = _messy_points(seed=3)
    shuffled = df.sample(frac=1.0, random_state=5).reset_index(drop=True)
    _assert_same(aggregate_user_cells(df, grid=GRID, engine=DuckDBEngine(threads=1)),
                 aggregate_user_cells(shuffled, grid=GRID, engine=DuckDBEngine(threads=2)))


def test_many_users_in_one_cell_overflow_int64_digit_sums_exactly():
    """20,000 one-point users in one cell: the per-cell digit sum 20,000 * 2**48 passes
    2**62 (the split of the wide sum into two int64 halves), and users of 3 points add
    thirds; the result is the correctly rounded exact sum."""
    n1 = 20_000
    users = np.concatenate([np.arange(n1), np.repeat(np.arange(n1, n1 + 5), 3)])
    x = np.concatenate([np.full(n1, 0.01), np.tile([0.01, 0.5, 0.9], 5)])
    df = pd.DataFrame({"user_id": users, "longitude": x, "latitude": 0.01})
    got = aggregate_user_cells(df, grid=GRID)
    assert got.sums[0, 0] == float(n1 + Fraction(5, 3))
    assert got.sums[0, 4] == float(Fraction(5, 3))
    assert got.n_users == n1 + 5


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


MESSY_CSV = ("user_id,longitude,latitude\n"
             "a,0.25,0.25\n"
             "a,,0.25\n"          # empty coordinate
             "a,abc,0.25\n"       # not a number
             "a,1_0,0.25\n"       # a digit separator: not a number
             "b,nan,0.75\n"       # NaN
             "b,0.75,inf\n"       # infinite
             ",0.75,0.75\n"       # no user id
             "c, 0.75 ,0.75\n")   # spaces around a number: parsed


def test_missing_coordinates_and_ids_are_dropped_as_outside(tmp_path):
    path = tmp_path / "messy.csv"
    path.write_text(MESSY_CSV)
    got = aggregate_user_cells(path, grid=Grid(bounds=(0, 1, 0, 1), resolution=2))
    np.testing.assert_array_equal(got.sums, [[1.0, 0.0], [0.0, 1.0]])
    assert (got.n_users, got.n_points, got.n_outside, got.n_users_empty) == (2, 8, 6, 1)


def test_read_columns_applies_the_float_rule(tmp_path):
    path = tmp_path / "messy.csv"
    path.write_text(MESSY_CSV)
    cols = read_columns(path, columns=["user_id", "longitude"], float_columns=["longitude"])
    np.testing.assert_array_equal(
        cols["longitude"], [0.25, np.nan, np.nan, np.nan, np.nan, 0.75, 0.75, 0.75])
    assert cols["user_id"].tolist() == ["a", "a", "a", "a", "b", "b", None, "c"]
    frame = pd.DataFrame({"v": pd.array([1, None, 3], dtype="Int64"),
                          "d": [2**60 + 1, 0, -5]})
    got = read_columns(frame, columns=["v", "d"], float_columns=["v", "d"])
    np.testing.assert_array_equal(got["v"], [1.0, np.nan, 3.0])
    np.testing.assert_array_equal(got["d"], [float(2**60 + 1), 0.0, -5.0])


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
    (tmp_path / "p.csv").write_text("user,longitude,latitude\n1,0.5,0.5\n")
    with pytest.raises(InvalidDataError, match=r"'user_id'.*available columns"):
        aggregate_user_cells(tmp_path / "p.csv", grid=GRID)


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
    with pytest.raises(InvalidParameterError, match="spark"):
        aggregate_user_cells(df, grid=GRID, spark=object())
    (tmp_path / "points.txt").write_text("a|b\n")
    with pytest.raises(InvalidParameterError, match="sep="):
        aggregate_user_cells(tmp_path / "points.txt", grid=GRID)
    with pytest.raises(InvalidDataError, match="must hold numbers"):
        aggregate_user_cells(df.assign(longitude=True), grid=GRID)


def test_parquet_csv_gzip_and_dataframe_agree_bit_for_bit(tmp_path):
    df = _messy_points(seed=4)
    df.to_parquet(tmp_path / "p.parquet")
    (tmp_path / "folder").mkdir()
    df.iloc[:1000].to_parquet(tmp_path / "folder" / "part-0.parquet")
    df.iloc[1000:].to_parquet(tmp_path / "folder" / "part-1.parquet")
    df.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    whole = aggregate_user_cells(df, grid=GRID)
    _assert_same(aggregate_user_cells(tmp_path / "p.parquet", grid=GRID), whole)
    _assert_same(aggregate_user_cells(tmp_path / "folder", grid=GRID), whole)
    # text user ids: "3.0" for the float ids above, the same users
    _assert_same(aggregate_user_cells(tmp_path / "p.tsv", grid=GRID), whole)
    df.to_csv(tmp_path / "p.csv.gz", index=False, compression="gzip")
    _assert_same(aggregate_user_cells(tmp_path / "p.csv.gz", grid=GRID), whole)


def test_headerless_gowalla_matches_in_memory_reference():
    path = _gowalla_path()
    from privot.datasets import load_gowalla_nyc

    df = load_gowalla_nyc()
    got = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS, engine="local")
    ref = user_distributions_sum(df["user_id"].to_numpy(), df["longitude"].to_numpy(),
                                 df["latitude"].to_numpy(), NYC)
    np.testing.assert_array_equal(got.sums, ref.sums)
    assert (got.n_users, got.n_points, got.n_outside, got.n_users_empty) == (
        ref.n_users, ref.n_points, ref.n_outside, ref.n_users_empty)
    _assert_same(got, aggregate_user_cells(df, grid=NYC))


# the fixed-point digits, on adversarial numerators and denominators
_BIG = [1, 2, 3, 7, 2**31 - 1, 2**31, 2**32 + 1, 10**12 + 39, 2**48 - 1, 2**48,
        2**48 + 1, 2**61 - 1, 2**62 - 1, 2**62, 2**63 - 25, 2**63 - 1]
# the step's own digit expressions: the BIGINT path for n < 2**31, the wide one above
DIGITS_SQL = f"""
SELECT k, n, d1, d2, {_digit("r2", "{div}")} AS d3
FROM (SELECT k, n, d1, {_digit("r1", "{div}")} AS d2, {_digit("r1", "%")} AS r2
      FROM (SELECT k, n, {_digit("k", "{div}")} AS d1, {_digit("k", "%")} AS r1
            FROM {{source}}) q1) q2
"""


def _quotient_pairs() -> pd.DataFrame:
    ns, ks = [], []
    for n in _BIG:
        for k in {1, 2, n // 3, n // 2, n - 1, n}:
            if 1 <= k <= n:
                ns.append(n)
                ks.append(k)
    return pd.DataFrame({"k": np.array(ks, dtype=np.int64), "n": np.array(ns, dtype=np.int64)})


def _check_digits(got: dict) -> None:
    assert len(got["k"]) > 50
    for k, n, d1, d2, d3 in zip(*(got[c] for c in ("k", "n", "d1", "d2", "d3")),
                                strict=True):
        assert 0 <= d2 < 2**32 and 0 <= d3 < 2**32 and 0 <= d1 <= 2**32
        assert (int(d1) << 64) + (int(d2) << 32) + int(d3) == (int(k) << 96) // int(n), (k, n)


def test_fixed_point_digits_are_the_exact_floor_on_duckdb():
    pairs = _quotient_pairs()
    _check_digits(DuckDBEngine().query(DIGITS_SQL, pairs, columns={"k": "k", "n": "n"}))


def test_fixed_point_digits_are_the_exact_floor_in_memory():
    from privot.heatmaps.aggregate import fixed_point_digits

    pairs = _quotient_pairs()
    d1, d2, d3 = fixed_point_digits(pairs["k"].to_numpy(), pairs["n"].to_numpy())
    _check_digits({"k": pairs["k"], "n": pairs["n"], "d1": d1, "d2": d2, "d3": d3})


def test_engine_protocol_and_names():
    engine = get_engine("local")
    assert isinstance(engine, Engine) and isinstance(engine, DuckDBEngine)
    assert get_engine("duckdb").name == "duckdb"
    assert get_engine(engine) is engine
    with pytest.raises(InvalidParameterError, match="threads"):
        DuckDBEngine(threads=0)


# -- Spark engine: the same SQL text --------------------------------------------------


@pytest.mark.spark
def test_fixed_point_digits_are_the_exact_floor_on_spark(spark):
    pairs = _quotient_pairs()
    _check_digits(get_engine("spark", spark=spark).query(DIGITS_SQL, pairs,
                                                         columns={"k": "k", "n": "n"}))


@pytest.mark.spark
def test_spark_equals_duckdb_bit_for_bit_on_gowalla(spark):
    path = _gowalla_path()
    local = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS)
    dist = aggregate_user_cells(path, grid=NYC, names=GOWALLA_NYC_COLUMNS, engine="spark",
                                spark=spark)
    _assert_same(dist, local)
    # hence the same seeded release, bit for bit
    from privot.heatmaps import private_heatmap

    a = private_heatmap(local, grid=NYC, epsilon=1.0, rng=np.random.default_rng(7))
    b = private_heatmap(dist, grid=NYC, epsilon=1.0, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.distribution, b.distribution)
    np.testing.assert_array_equal(a.heatmap, b.heatmap)


@pytest.mark.spark
def test_spark_equals_duckdb_and_the_oracle_on_adversarial_data(spark, tmp_path):
    df = pd.concat([_messy_points(seed=5), _adversarial_points()], ignore_index=True)
    df.to_parquet(tmp_path / "points.parquet")
    many = pd.DataFrame({"user_id": np.arange(20_000.0), "longitude": 0.01,
                         "latitude": 0.01})
    for source in (tmp_path / "points.parquet", df, many):
        local = aggregate_user_cells(source, grid=GRID)
        dist = aggregate_user_cells(source, grid=GRID, engine="spark", spark=spark)
        _assert_same(dist, local)
    want, _ = _exact_oracle(df, GRID)
    np.testing.assert_array_equal(aggregate_user_cells(df, grid=GRID, engine="spark",
                                                       spark=spark).sums, want)


@pytest.mark.spark
def test_spark_missing_column_and_messy_text(spark, tmp_path):
    with pytest.raises(InvalidDataError, match=r"'user_id'.*available columns"):
        aggregate_user_cells(pd.DataFrame({"u": [1], "longitude": [0.5], "latitude": [0.5]}),
                             grid=GRID, engine="spark", spark=spark)
    path = tmp_path / "messy.csv"
    path.write_text(MESSY_CSV)
    grid = Grid(bounds=(0, 1, 0, 1), resolution=2)
    _assert_same(aggregate_user_cells(path, grid=grid, engine="spark", spark=spark),
                 aggregate_user_cells(path, grid=grid))
