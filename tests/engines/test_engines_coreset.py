"""The private-coreset leaf counts (``privot.barycenters.engine_step``): DuckDB ==
in-memory numpy == Spark, bit for bit, and the same seeded release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privot.barycenters import coreset_leaf_counts
from privot.barycenters.coresets import leaf_index, private_coreset
from privot.barycenters.geometry import PublicBounds
from privot.errors import InvalidParameterError

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

BOUNDS = PublicBounds.box([0.0, -1.0, 5.0], [2.0, 1.0, 6.0])
COLS = ["a", "b", "c"]
DEPTH = 7


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform([-0.2, -1.2, 4.9], [2.2, 1.2, 6.1], size=(n, 3))  # some outside
    df = pd.DataFrame(x, columns=COLS)
    df["group"] = rng.choice(["g1", "g2", "g3"], size=n)
    return df


def _numpy_counts(df: pd.DataFrame) -> dict:
    out = {}
    for g, part in df.groupby("group"):
        unit, nc = BOUNDS.to_unit(part[COLS].to_numpy())
        ids, cnt = np.unique(leaf_index(unit, cell_box=BOUNDS.cell_box(), depth=DEPTH),
                             return_counts=True)
        out[g] = (ids, cnt, len(part), nc)
    return out


def _assert_same(got, expect):
    assert sorted(got.counts) == sorted(expect)
    for g, (ids, cnt, n, nc) in expect.items():
        np.testing.assert_array_equal(got.counts[g][0], ids)
        np.testing.assert_array_equal(got.counts[g][1], cnt)
        assert got.n[g] == n and got.n_clipped[g] == nc


@pytest.mark.parametrize("threads", [1, 2])
def test_duckdb_equals_numpy(threads):
    from privot.engines.duckdb import DuckDBEngine

    df = _frame()
    got = coreset_leaf_counts(df, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS,
                              group_column="group", engine=DuckDBEngine(threads=threads))
    _assert_same(got, _numpy_counts(df))


def test_csv_and_parquet_sources_and_driver_release(tmp_path):
    df = _frame(500, seed=1)
    csv, pq = tmp_path / "pts.csv", tmp_path / "pts.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(pq)
    a = coreset_leaf_counts(csv, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS,
                            group_column="group")
    b = coreset_leaf_counts(pq, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS,
                            group_column="group")
    _assert_same(a, _numpy_counts(df))
    _assert_same(b, _numpy_counts(df))
    # the driver-side release equals the in-memory mechanism with the same seed
    part = df[df["group"] == "g2"][COLS].to_numpy()
    cs = a.coreset("g2", epsilon=1.0, rng=9)
    ref = private_coreset(part, bounds=BOUNDS, epsilon=1.0, depth=DEPTH, rng=9)
    np.testing.assert_array_equal(cs.points, ref.points)
    assert cs.n_clipped == ref.n_clipped


def test_no_group_and_unusable_rows_are_left_out_but_keep_the_size():
    """The one rule (privot._usable): a row with a NaN/inf coordinate is in no leaf,
    counted in n_unusable, and still in the public size n; the driver-side release
    equals the in-memory mechanism on the same rows."""
    df = _frame(200)[COLS].copy()
    df.loc[3, "a"] = np.nan
    df.loc[5, "c"] = np.inf
    got = coreset_leaf_counts(df, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS)
    assert list(got.counts) == [None] and got.n[None] == 200
    assert got.n_unusable[None] == 2
    kept = df.drop(index=[3, 5]).to_numpy()
    unit, nc = BOUNDS.to_unit(kept)
    ids, cnt = np.unique(leaf_index(unit, cell_box=BOUNDS.cell_box(), depth=DEPTH),
                         return_counts=True)
    np.testing.assert_array_equal(got.counts[None][0], ids)
    np.testing.assert_array_equal(got.counts[None][1], cnt)
    assert got.n_clipped[None] == nc
    cs = got.coreset(None, epsilon=1.0, rng=4)
    ref = private_coreset(df.to_numpy(), bounds=BOUNDS, epsilon=1.0, depth=DEPTH, rng=4)
    np.testing.assert_array_equal(cs.points, ref.points)
    assert cs.n == ref.n == 200


@pytest.mark.parametrize("kwargs,name", [
    ({"coordinate_columns": ["a", "b"]}, "coordinate_columns"),
    ({"coordinate_columns": ["a", "a", "b"]}, "coordinate_columns"),
    ({"group_column": "a"}, "group_column"),
    ({"depth": 0}, "depth"),
    ({"bounds": None}, "bounds"),
    ({"backend": "dask"}, "engine"),
])
def test_bad_arguments(kwargs, name):
    args = {"bounds": BOUNDS, "depth": DEPTH, "coordinate_columns": COLS, **kwargs}
    with pytest.raises(InvalidParameterError) as info:
        coreset_leaf_counts(_frame(10), **args)
    assert info.value.name == name


BALL = PublicBounds.ball([1.0, -2.0], 3.0)


def _ball_frame() -> pd.DataFrame:
    """Points on, just inside and just outside the sphere, far away (1e300), with NaN
    and infinite coordinates, and a missing group label."""
    rng = np.random.default_rng(8)
    angles = rng.uniform(0, 2 * np.pi, size=400)
    radius = np.concatenate([np.full(100, 3.0), np.nextafter(np.full(100, 3.0), 0),
                             np.nextafter(np.full(100, 3.0), 9), rng.uniform(0, 6, 100)])
    x = np.column_stack([1.0 + radius * np.cos(angles), -2.0 + radius * np.sin(angles)])
    x[:3] = [[1e300, -1e300], [1.0, -2.0], [-1e300, 5.0]]
    x[3, 0], x[4, 1] = np.nan, np.inf
    df = pd.DataFrame(x, columns=["p", "q"])
    df["group"] = np.where(np.arange(400) % 3 == 0, "a", "b")
    df.loc[7, "group"] = None
    return df


def _in_memory(df: pd.DataFrame, bounds: PublicBounds, cols: list[str], depth: int,
               group) -> tuple:
    rows = (df["group"].isna() if group is None else df["group"] == group).to_numpy()
    x = df.loc[rows, cols].to_numpy(dtype=float)
    usable = np.all(np.isfinite(x), axis=1)
    unit, nc = bounds.to_unit(x[usable])
    ids, cnt = np.unique(leaf_index(unit, cell_box=bounds.cell_box(), depth=depth),
                         return_counts=True)
    return ids, cnt, int(rows.sum()), nc, x


def _check_ball(got, df) -> None:
    assert list(got.counts) == ["a", "b", None]
    for g in got.counts:
        ids, cnt, n, nc, x = _in_memory(df, BALL, ["p", "q"], 12, g)
        np.testing.assert_array_equal(got.counts[g][0], ids)
        np.testing.assert_array_equal(got.counts[g][1], cnt)
        assert (got.n[g], got.n_clipped[g]) == (n, nc)
        if g == "b":  # the driver-side release equals the in-memory mechanism's
            cs = got.coreset(g, epsilon=1.0, rng=5)
            ref = private_coreset(x, bounds=BALL, epsilon=1.0, depth=12, rng=5)
            np.testing.assert_array_equal(cs.points, ref.points)


def test_duckdb_ball_bounds_equal_the_in_memory_path(tmp_path):
    df = _ball_frame()
    _check_ball(coreset_leaf_counts(df, bounds=BALL, depth=12, coordinate_columns=["p", "q"],
                                    group_column="group"), df)
    df.to_csv(tmp_path / "ball.csv.gz", index=False, compression="gzip")
    text = coreset_leaf_counts(tmp_path / "ball.csv.gz", bounds=BALL, depth=12,
                               coordinate_columns=["p", "q"], group_column="group")
    _check_ball(text, df)


@pytest.mark.spark
def test_spark_ball_bounds_equal_duckdb_and_the_in_memory_path(spark):
    df = _ball_frame()
    _check_ball(coreset_leaf_counts(df, bounds=BALL, depth=12, coordinate_columns=["p", "q"],
                                    group_column="group", engine="spark", spark=spark), df)


@pytest.mark.spark
def test_spark_equals_local(spark, tmp_path):
    df = _frame(2000, seed=4)
    pq = tmp_path / "pts.parquet"
    df.to_parquet(pq)
    local = coreset_leaf_counts(pq, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS,
                                group_column="group")
    remote = coreset_leaf_counts(pq, bounds=BOUNDS, depth=DEPTH, coordinate_columns=COLS,
                                 group_column="group", engine="spark", spark=spark)
    _assert_same(remote, _numpy_counts(df))
    for g in local.counts:
        np.testing.assert_array_equal(local.counts[g][0], remote.counts[g][0])
        np.testing.assert_array_equal(local.counts[g][1], remote.counts[g][1])
    a = local.coreset("g1", epsilon=0.5, rng=3)
    b = remote.coreset("g1", epsilon=0.5, rng=3)
    np.testing.assert_array_equal(a.points, b.points)


def _boundary_frame(bounds: PublicBounds, depth: int, seed: int = 11) -> pd.DataFrame:
    """Points on and one ulp around every cell face of the finest cells, on the box
    faces, outside the box, plus unusable rows: where float differences would show."""
    from privot.barycenters.coresets import _splits

    rng = np.random.default_rng(seed)
    m = _splits(depth, bounds.dim)
    cols = []
    for c in range(bounds.dim):
        lo, hi = float(bounds.lower[c]), float(bounds.upper[c])
        faces = lo + (hi - lo) * np.arange((1 << int(m[c])) + 1) / (1 << int(m[c]))
        near = np.concatenate([faces, np.nextafter(faces, -np.inf),
                               np.nextafter(faces, np.inf), [lo - 1.0, hi + 1e-300, hi * 3]])
        cols.append(rng.choice(near, size=4000))
    df = pd.DataFrame(np.column_stack(cols), columns=[f"x{c}" for c in range(bounds.dim)])
    df.iloc[::97, 0] = np.nan
    df.iloc[::89, -1] = np.inf
    df["group"] = rng.choice(["a", "b"], size=len(df))
    return df


@pytest.mark.parametrize("depth", [1, 2, 9, 22])
def test_box_sql_equals_the_row_function_on_cell_faces(depth):
    """The pure-SQL box step and the numpy row function (the in-memory operations) give
    the same codes bit for bit, on the adversarial floats (faces +- one ulp)."""
    from privot.barycenters.engine_step import leaf_codes

    bounds = PublicBounds.box([0.1, -3.0, 1e-3], [0.7, 5.0, 2e-3])  # unequal sides
    df = _boundary_frame(bounds, depth)
    cols = [f"x{c}" for c in range(3)]
    got = coreset_leaf_counts(df, bounds=bounds, depth=depth, coordinate_columns=cols,
                              group_column="group")
    for g, part in df.groupby("group"):
        code = leaf_codes(*(part[c].to_numpy() for c in cols), bounds=bounds, depth=depth)
        usable = code >= 0
        ids, cnt = np.unique(code[usable] // 2, return_counts=True)
        np.testing.assert_array_equal(got.counts[g][0], ids)
        np.testing.assert_array_equal(got.counts[g][1], cnt)
        assert got.n[g] == len(part)
        assert got.n_unusable[g] == int(np.count_nonzero(~usable))
        assert got.n_clipped[g] == int(np.count_nonzero(code[usable] % 2))


@pytest.mark.spark
def test_spark_box_sql_equals_duckdb_on_cell_faces(spark):
    bounds = PublicBounds.box([0.1, -3.0, 1e-3], [0.7, 5.0, 2e-3])
    df = _boundary_frame(bounds, 22, seed=5)
    cols = [f"x{c}" for c in range(3)]
    local = coreset_leaf_counts(df, bounds=bounds, depth=22, coordinate_columns=cols,
                                group_column="group")
    remote = coreset_leaf_counts(df, bounds=bounds, depth=22, coordinate_columns=cols,
                                 group_column="group", engine="spark", spark=spark)
    assert sorted(local.counts) == sorted(remote.counts)
    for g in local.counts:
        np.testing.assert_array_equal(local.counts[g][0], remote.counts[g][0])
        np.testing.assert_array_equal(local.counts[g][1], remote.counts[g][1])
    assert (local.n, local.n_clipped, local.n_unusable) == (
        remote.n, remote.n_clipped, remote.n_unusable)


def test_backend_is_a_deprecated_alias_of_engine():
    """Issue 25: ``engine=`` as everywhere; ``backend=`` warns, gives the same counts, and
    is refused together with ``engine=``."""
    args = {"bounds": BOUNDS, "depth": DEPTH, "coordinate_columns": COLS,
            "group_column": "group"}
    new = coreset_leaf_counts(_frame(50), engine="duckdb", **args)
    with pytest.warns(DeprecationWarning, match="backend= is deprecated; use engine="):
        old = coreset_leaf_counts(_frame(50), backend="duckdb", **args)
    assert new.counts.keys() == old.counts.keys()
    for g in new.counts:
        for a, b in zip(new.counts[g], old.counts[g], strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(InvalidParameterError) as info:
        coreset_leaf_counts(_frame(50), engine="duckdb", backend="duckdb", **args)
    assert info.value.name == "backend"
    with pytest.raises(InvalidParameterError) as info:
        coreset_leaf_counts(_frame(10), engine="dask", **args)
    assert info.value.name == "engine"
