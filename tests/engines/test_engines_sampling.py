"""The sampling step (``privot.sampling.engine_step``): each user's cell counts over a
public grid, DuckDB == in-memory numpy == Spark, with a brute-force oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privot.errors import InvalidParameterError
from privot.heatmaps import Grid
from privot.sampling.engine_step import user_cell_counts, user_cell_counts_in_memory

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

GRID = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=8)


def _points(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    """Points inside, outside, on every cell edge and one ulp around it; missing ids,
    NaN and infinite coordinates; a user with only outside points."""
    rng = np.random.default_rng(seed)
    edges = np.arange(9) / 8.0
    near = np.concatenate([edges, np.nextafter(edges, -1.0), np.nextafter(edges, 2.0),
                           rng.uniform(-0.2, 1.2, size=40)])
    df = pd.DataFrame({"user": rng.integers(0, 300, size=n).astype(float),
                       "x": rng.choice(near, size=n), "y": rng.choice(near, size=n)})
    df.loc[::53, "user"] = np.nan
    df.loc[::61, "x"] = np.nan
    df.loc[::67, "y"] = np.inf
    df.loc[len(df)] = [999.0, 5.0, 5.0]  # only outside
    return df


def _brute(df: pd.DataFrame) -> dict:
    out: dict = {}
    for u, x, y in df[["user", "x", "y"]].itertuples(index=False):
        if u != u or not (0 <= x < 1 and 0 <= y < 1):  # NaN compares false
            continue
        cell = min(int(np.floor(y / 0.125)), 7) * 8 + min(int(np.floor(x / 0.125)), 7)
        out.setdefault(u, {}).setdefault(cell, 0)
        out[u][cell] += 1
    return out


def _as_dict(got) -> dict:
    return {float(u): {int(c): int(k) for c, k in zip(got.cells[a:b], got.counts[a:b],
                                                      strict=True)}
            for u, a, b in zip(got.user_ids, got.indptr[:-1], got.indptr[1:], strict=True)}


def _assert_same(a, b) -> None:
    np.testing.assert_array_equal(np.asarray(a.user_ids, dtype=float),
                                  np.asarray(b.user_ids, dtype=float))
    for f in ("indptr", "cells", "counts"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert (a.n_points, a.n_outside, a.n_users_empty) == (
        b.n_points, b.n_outside, b.n_users_empty)
    np.testing.assert_array_equal(np.asarray(a.empty_user_ids, dtype=float),
                                  np.asarray(b.empty_user_ids, dtype=float))


def test_duckdb_equals_brute_force_and_the_in_memory_path(tmp_path):
    df = _points()
    got = user_cell_counts(df, grid=GRID, user_column="user", x_column="x", y_column="y")
    assert _as_dict(got) == _brute(df)
    assert got.n_points == len(df)
    assert got.n_users_empty == 1  # user 999 (only outside)
    assert got.empty_user_ids.tolist() == [999.0]  # listed: it reports the default input
    assert got.n_points - got.n_outside == int(got.counts.sum())
    mem = user_cell_counts_in_memory(df["user"].to_numpy(), df["x"].to_numpy(),
                                     df["y"].to_numpy(), GRID)
    _assert_same(got, mem)
    df.to_parquet(tmp_path / "p.parquet")
    _assert_same(got, user_cell_counts(tmp_path / "p.parquet", grid=GRID, user_column="user",
                                       x_column="x", y_column="y"))
    # rows in another order: the same table
    shuffled = df.sample(frac=1.0, random_state=3)
    _assert_same(got, user_cell_counts(shuffled, grid=GRID, user_column="user",
                                       x_column="x", y_column="y"))


def test_distributions_are_each_users_empirical_distribution():
    df = _points(800, seed=2)
    got = user_cell_counts(df, grid=GRID, user_column="user", x_column="x", y_column="y")
    mu = got.distributions()
    assert mu.shape == (got.n_users, 64)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    brute = _brute(df)
    for i, u in enumerate(got.user_ids.tolist()):
        n_u = sum(brute[u].values())
        for c, k in brute[u].items():
            assert mu[i, c] == k / n_u
    np.testing.assert_array_equal(got.distributions(slice(3, 7)), mu[3:7])


def test_bad_arguments():
    df = _points(50)
    with pytest.raises(InvalidParameterError, match="grid"):
        user_cell_counts(df, grid=(0, 1, 0, 1), user_column="user", x_column="x",
                         y_column="y")
    with pytest.raises(InvalidParameterError, match="user_column"):
        user_cell_counts(df, grid=GRID, user_column="x", x_column="x", y_column="y")


@pytest.mark.spark
def test_spark_equals_duckdb(spark):
    df = _points(3000, seed=5)
    local = user_cell_counts(df, grid=GRID, user_column="user", x_column="x", y_column="y")
    remote = user_cell_counts(df, grid=GRID, user_column="user", x_column="x",
                              y_column="y", engine="spark", spark=spark)
    _assert_same(local, remote)
