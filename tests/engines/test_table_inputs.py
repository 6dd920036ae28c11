"""Polars and Arrow tables as inputs (issue 29): the same release as pandas, bit for bit.

Every entry point that reads a table (``private_heatmap`` in memory and on DuckDB,
``aggregate_user_cells``, ``user_cell_counts`` -> ``sample_population``,
``coreset_leaf_counts`` with a group column -> ``private_barycenter``, the groups of
``private_barycenter``, ``read_columns``) is given the same rows as a pandas
``DataFrame``, a polars ``DataFrame`` and ``LazyFrame``, and a pyarrow ``Table`` and
``RecordBatch`` (nulls where pandas has NaN/None); the seeded releases' publishable files
must have the same SHA-256 (``golden.seeded_releases.digest``). Also: the tables are
recognised without importing polars or pyarrow, messages name the accepted kinds, a
polars frame on DuckDB without pyarrow is refused naming the extra, Spark takes them.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

from golden.seeded_releases import digest  # noqa: E402
from privot.barycenters import PublicBounds, coreset_leaf_counts, private_barycenter  # noqa: E402
from privot.engines import read_columns  # noqa: E402
from privot.engines.base import check_source  # noqa: E402
from privot.engines.tables import (  # noqa: E402
    describe_table,
    is_table,
    table_columns,
    table_kind,
)
from privot.errors import (  # noqa: E402
    InvalidDataError,
    InvalidParameterError,
    MissingExtraError,
)
from privot.grid import Grid  # noqa: E402
from privot.heatmaps import aggregate_user_cells, private_heatmap  # noqa: E402
from privot.sampling import make_mechanism, sample_population  # noqa: E402
from privot.sampling.engine_step import user_cell_counts  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]

GRID = Grid((0.0, 1.0, 0.0, 1.0), 16)
KINDS = ("polars", "polars-lazy", "arrow", "arrow-batch")


def _points(seed: int = 0, n: int = 1200, users: int = 80) -> pd.DataFrame:
    """Points with text user ids (some missing), NaN/inf coordinates, rows outside the
    unit square, an integer column and a column the steps never read."""
    gen = np.random.default_rng(seed)
    user = np.array([f"u{i:03d}" for i in gen.integers(0, users, n)], dtype=object)
    user[:7] = None
    x = gen.beta(2, 5, n) * 1.1
    y = gen.beta(5, 2, n) * 1.1
    x[10:20] = np.nan
    y[20:25] = np.inf
    return pd.DataFrame({"user_id": user, "longitude": x, "latitude": y,
                         "visits": gen.integers(0, 9, n), "note": "text"})


def _as(kind: str, df: pd.DataFrame):
    """The same rows as ``kind`` (polars: pandas NaN becomes null, as from_pandas does)."""
    if kind == "pandas":
        return df
    if kind.startswith("polars"):
        frame = pl.from_pandas(df)
        return frame.lazy() if kind == "polars-lazy" else frame
    if kind == "arrow-batch":
        table = pa.Table.from_pandas(df, preserve_index=False).combine_chunks()
        return table.to_batches()[0]
    return pa.Table.from_pandas(df, preserve_index=False)


# -- recognition -----------------------------------------------------------------------


def test_table_kinds_are_recognised_by_their_class_module():
    df = _points(n=10)
    assert [table_kind(_as(k, df)) for k in ("pandas", *KINDS)] == [
        "pandas", "polars", "polars-lazy", "arrow", "arrow"]
    for other in (None, "points.csv", {"x": [1.0]}, np.zeros((2, 2)), [df]):
        assert table_kind(other) is None and not is_table(other)
    # duck typing: a class named like polars' is taken for one, nothing imported
    fake = type("DataFrame", (), {"__module__": "polars.dataframe.frame"})()
    assert table_kind(fake) == "polars"
    assert describe_table(_as("arrow", df)) == "the pyarrow Table"
    assert table_columns(_as("polars-lazy", df)) == list(df.columns)


def test_nothing_imports_polars_or_pyarrow_unless_given_one(tmp_path):
    code = """
import sys, numpy as np
import privot.heatmaps, privot.barycenters, privot.sampling, privot.engines.tables
from privot.heatmaps import Grid, private_heatmap
g = np.random.default_rng(0)
r = private_heatmap({"user_id": np.arange(50) % 7, "longitude": g.random(50),
                     "latitude": g.random(50)}, grid=Grid((0, 1, 0, 1), 8), epsilon=1.0, rng=1)
print(sorted(m for m in ("polars", "pyarrow") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# -- the same releases -----------------------------------------------------------------


@pytest.fixture(scope="module")
def points() -> pd.DataFrame:
    return _points()


@pytest.fixture(scope="module")
def heatmap_digest(points):
    return digest(private_heatmap(points, grid=GRID, epsilon=1.0, rng=11))


@pytest.mark.parametrize("engine", [None, "duckdb"])
@pytest.mark.parametrize("kind", KINDS)
def test_private_heatmap_releases_the_same_bytes(points, heatmap_digest, kind, engine):
    result = private_heatmap(_as(kind, points), grid=GRID, epsilon=1.0, rng=11,
                             engine=engine)
    assert digest(result) == heatmap_digest


@pytest.mark.parametrize("kind", KINDS)
def test_aggregate_user_cells_the_same_sums(points, kind):
    expect = aggregate_user_cells(points, grid=GRID)
    got = aggregate_user_cells(_as(kind, points), grid=GRID)
    assert got.sums.tobytes() == expect.sums.tobytes()
    assert (got.n_users, got.n_points, got.n_outside) == (
        expect.n_users, expect.n_points, expect.n_outside)


@pytest.fixture(scope="module")
def sample_expected(points):
    counts = user_cell_counts(points, grid=Grid((0.0, 1.0, 0.0, 1.0), 4))
    mech = make_mechanism("krr", points=counts.grid.cell_centre_points(), epsilon=1.0)
    return counts, digest(sample_population(counts, mech, variant="direct", rng=13))


@pytest.mark.parametrize("kind", KINDS)
def test_user_cell_counts_and_sample_population_the_same(points, sample_expected, kind):
    expect, expect_digest = sample_expected
    got = user_cell_counts(_as(kind, points), grid=expect.grid)
    for field in ("user_ids", "indptr", "cells", "counts", "empty_user_ids"):
        np.testing.assert_array_equal(getattr(got, field), getattr(expect, field))
        assert getattr(got, field).dtype == getattr(expect, field).dtype
    assert (got.n_points, got.n_outside, got.n_users_empty) == (
        expect.n_points, expect.n_outside, expect.n_users_empty)
    mech = make_mechanism("krr", points=got.grid.cell_centre_points(), epsilon=1.0)
    assert digest(sample_population(got, mech, variant="direct", rng=13)) == expect_digest


BOUNDS = PublicBounds.box([-1.0, -1.0], [1.0, 1.0])


def _groups_frame(seed: int = 1) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    parts = [pd.DataFrame(gen.normal(0.2 * g, 0.3, (300, 2)), columns=["x", "y"])
             .assign(group=f"g{g}") for g in range(3)]
    df = pd.concat(parts, ignore_index=True)
    df.loc[[5, 400], "x"] = np.nan  # unusable rows count in their group's size
    return df


@pytest.fixture(scope="module")
def coreset_expected():
    counts = coreset_leaf_counts(_groups_frame(), bounds=BOUNDS, depth=8,
                                 coordinate_columns=["x", "y"], group_column="group")
    return counts, digest(private_barycenter(counts, m=4, epsilon=2.0, rng=12))


@pytest.mark.parametrize("kind", KINDS)
def test_barycenter_from_a_group_column_the_same(coreset_expected, kind):
    expect, expect_digest = coreset_expected
    got = coreset_leaf_counts(_as(kind, _groups_frame()), bounds=BOUNDS, depth=8,
                              coordinate_columns=["x", "y"], group_column="group")
    assert sorted(got.counts) == sorted(expect.counts)
    for g in expect.counts:
        for a, b in zip(got.counts[g], expect.counts[g], strict=True):
            np.testing.assert_array_equal(a, b)
    assert (got.n, got.n_clipped, got.n_unusable) == (
        expect.n, expect.n_clipped, expect.n_unusable)
    assert digest(private_barycenter(got, m=4, epsilon=2.0, rng=12)) == expect_digest


@pytest.mark.parametrize("method", ["coreset", "subspace"])
@pytest.mark.parametrize("kind", ["pandas", *KINDS])
def test_barycenter_groups_as_tables_the_same(kind, method):
    df = _groups_frame()
    parts = [df.loc[df["group"] == g, ["x", "y"]].reset_index(drop=True)
             for g in ("g0", "g1", "g2")]
    arrays = [p.to_numpy() for p in parts]
    expect = digest(private_barycenter(arrays, bounds=BOUNDS, m=4, epsilon=2.0,
                                       method=method, rng=12))
    tables = [_as(kind, p) for p in parts]
    assert digest(private_barycenter(tables, bounds=BOUNDS, m=4, epsilon=2.0,
                                     method=method, rng=12)) == expect
    # one table alone is one group, as one (n, d) array is
    one = digest(private_barycenter(arrays[0], bounds=BOUNDS, m=4, epsilon=2.0,
                                    method=method, rng=12))
    assert digest(private_barycenter(tables[0], bounds=BOUNDS, m=4, epsilon=2.0,
                                     method=method, rng=12)) == one


@pytest.mark.parametrize("kind", KINDS)
def test_read_columns_the_same(points, kind):
    cols = ["user_id", "longitude", "visits"]
    expect = read_columns(points, columns=cols, float_columns=["longitude"])
    got = read_columns(_as(kind, points), columns=cols, float_columns=["longitude"])
    for c in cols:
        np.testing.assert_array_equal(got[c], expect[c])
        assert got[c].dtype == expect[c].dtype


# -- messages --------------------------------------------------------------------------


def test_messages_name_the_accepted_tables():
    with pytest.raises(InvalidParameterError, match="polars DataFrame.*pyarrow Table"):
        check_source(object())
    with pytest.raises(InvalidParameterError, match="polars DataFrame.*pyarrow Table"):
        private_heatmap(object(), grid=GRID, epsilon=1.0, rng=1)
    with pytest.raises(InvalidParameterError, match="polars DataFrame.*pyarrow Table"):
        user_cell_counts(42, grid=GRID)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("engine", [None, "duckdb"])
def test_a_missing_column_names_the_table_columns(kind, engine):
    table = _as(kind, pd.DataFrame({"uid": ["a"], "lon": [0.5], "lat": [0.5]}))
    with pytest.raises((InvalidParameterError, InvalidDataError),
                       match=r"'uid', 'lon', 'lat'") as info:
        private_heatmap(table, grid=GRID, epsilon=1.0, rng=1, engine=engine)
    if engine == "duckdb":
        assert describe_table(table) in str(info.value)


def test_sep_or_names_with_a_table_is_refused():
    table = _as("arrow", _points(n=10))
    with pytest.raises(InvalidParameterError, match="in-memory table"):
        user_cell_counts(table, grid=GRID, sep=",")


def test_polars_on_duckdb_without_pyarrow_names_the_extra(monkeypatch):
    frame = _as("polars", _points(n=100))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    with pytest.raises(MissingExtraError, match="pyarrow"):
        user_cell_counts(frame, grid=GRID)
    # the in-memory path needs no pyarrow
    private_heatmap(frame, grid=GRID, epsilon=1.0, rng=1)


# -- Spark -----------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_takes_polars_and_arrow_tables(spark, points, sample_expected):
    expect, _ = sample_expected
    for kind in ("polars", "polars-lazy", "arrow"):
        got = user_cell_counts(_as(kind, points), grid=expect.grid, engine="spark",
                               spark=spark)
        for field in ("user_ids", "indptr", "cells", "counts", "empty_user_ids"):
            np.testing.assert_array_equal(getattr(got, field), getattr(expect, field))
        assert (got.n_points, got.n_outside) == (expect.n_points, expect.n_outside)
