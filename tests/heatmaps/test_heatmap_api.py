"""Tests of the public entry point ``private_heatmap`` (api.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.heatmaps import (
    CellSums,
    Grid,
    HeatmapParams,
    HeatmapResult,
    gaussian_heatmap,
    private_heatmap,
    user_distributions_sum,
)
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.types import Neighbouring

GRID = Grid((0.0, 1.0, 0.0, 1.0), 32)


def _frame(n_users=60, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        centre = rng.choice([0.2, 0.7], size=2)
        k = int(rng.integers(1, 8))
        pts = centre + rng.normal(0, 0.03, (k, 2))
        rows += [(f"u{u}", a, b) for a, b in pts]
    rows.append(("far", 5.0, 5.0))  # a user entirely outside the bounds
    return pd.DataFrame(rows, columns=["user_id", "lon", "lat"])


@pytest.mark.parametrize("method", ["pyramid", "laplace", "threshold"])
def test_private_heatmap_result(method):
    df = _frame()
    res = private_heatmap(df, grid=GRID, epsilon=2.0, x="lon", y="lat", method=method,
                          threshold=5.0, rng=np.random.default_rng(0))
    assert isinstance(res, HeatmapResult) and res.method == method
    assert res.distribution.shape == res.heatmap.shape == (32, 32)
    assert res.distribution.sum() == pytest.approx(1.0) and np.all(res.distribution >= 0)
    assert res.heatmap.sum() == pytest.approx(1.0) and np.all(res.heatmap >= -1e-15)
    np.testing.assert_allclose(res.heatmap, gaussian_heatmap(res.distribution, sigma=2.0))
    rel = res.release
    assert rel.unit == "user" and rel.relation is Neighbouring.ADD_REMOVE
    assert rel.mechanism == "laplace" and not rel.secure and not res.secure
    assert res.epsilon == rel.epsilon <= 2.0
    assert math.fsum(rel.level_epsilons.values()) == pytest.approx(2.0, rel=1e-15)
    cur = res.diagnostics.curator_only
    inside = df[(df.lon >= 0) & (df.lon < 1) & (df.lat >= 0) & (df.lat < 1)]
    assert cur.n_points == len(df) and cur.n_outside == len(df) - len(inside)
    assert cur.n_users == inside.user_id.nunique() and cur.n_users_empty == 1
    assert set(res.seconds) >= {"aggregate", "render", "total"}
    if method == "pyramid":
        assert rel.start_level == 2 and rel.w == 20 and len(rel.values) == 4
        assert sorted(rel.level_epsilons) == [2, 3, 4, 5]
        assert res.diagnostics.reconstruction is not None
        assert res.diagnostics.lp_objective == res.diagnostics.reconstruction.objective
        assert {"measure", "reconstruct"} <= set(res.seconds)
    else:
        assert list(rel.level_epsilons) == [5] and res.diagnostics.baseline is not None
        assert (rel.threshold == 5.0) == (method == "threshold")


def test_input_forms_give_the_same_release():
    df = _frame(seed=1)
    users, xs, ys = df.user_id.to_numpy(), df.lon.to_numpy(), df.lat.to_numpy()
    cs = user_distributions_sum(users, xs, ys, GRID)
    kw = {"grid": GRID, "epsilon": 1.0}
    a = private_heatmap(df, x="lon", y="lat", rng=np.random.default_rng(3), **kw)
    b = private_heatmap(user=users, x=xs, y=ys, rng=np.random.default_rng(3), **kw)
    c = private_heatmap(cs, rng=np.random.default_rng(3), **kw)
    d = private_heatmap({"user_id": users, "x": xs, "y": ys}, x="x", y="y",
                        rng=np.random.default_rng(3), **kw)
    for r in (b, c, d):
        np.testing.assert_array_equal(r.distribution, a.distribution)
        np.testing.assert_array_equal(r.heatmap, a.heatmap)


def test_recovers_a_concentrated_population():
    # 400 users in two cells: with eps = 5 the estimate puts nearly all mass there
    users = np.repeat(np.arange(400), 3)
    x = np.where(users < 200, 0.1, 0.8) + 0.001
    y = np.where(users < 200, 0.1, 0.6) + 0.001
    res = private_heatmap(user=users, x=x, y=y, grid=GRID, epsilon=5.0,
                          rng=np.random.default_rng(0))
    c1, c2 = GRID.assign(np.array([0.101, 0.801]), np.array([0.101, 0.601])).cells
    mass = res.distribution.ravel()[[c1, c2]]
    assert mass.sum() > 0.9 and abs(mass[0] - mass[1]) < 0.1


def test_accountant_gets_each_level_and_a_small_one_refuses_first():
    acct = PrivacyAccountant(1.0)
    res = private_heatmap(_frame(), grid=GRID, epsilon=1.0, x="lon", y="lat",
                          accountant=acct, rng=np.random.default_rng(0))
    assert [e.params["level"] for e in acct.ledger] == sorted(res.release.level_epsilons)
    assert acct.spent.epsilon == pytest.approx(1.0, rel=1e-15)
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        private_heatmap(_frame(), grid=GRID, epsilon=0.1, x="lon", y="lat", accountant=acct,
                        rng=rng)
    assert rng.bit_generator.state == state and len(acct.ledger) == len(res.release.values)


@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -2.0}, "epsilon"),
    ({"w": 0}, "w"),
    ({"gamma": -1.0}, "gamma"),
    ({"sigma": -1.0}, "sigma"),
    ({"method": "gaussian"}, "method"),
    ({"threshold": 0.0}, "threshold"),
    ({"threshold": 150.0}, "threshold"),
    ({"lp": "sparse"}, "lp"),
    ({"grid": (0, 1, 0, 1)}, "grid"),
    ({"user": "uid"}, "user"),
    ({"x": "longitude"}, "x"),
    ({"accountant": 3}, "accountant"),
])
def test_bad_parameters_name_themselves(kwargs, name):
    args = {"grid": GRID, "epsilon": 1.0, "x": "lon", "y": "lat"}
    args.update(kwargs)
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(_frame(), **args)
    assert info.value.name == name


def test_grid_resolution_must_be_a_power_of_two():
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(_frame(), grid=Grid((0, 1, 0, 1), 100), epsilon=1.0)
    assert info.value.name == "resolution"


def test_bad_data_is_refused():
    df = _frame()
    with pytest.raises(InvalidDataError, match="no points"):
        private_heatmap(df.iloc[:0], grid=GRID, epsilon=1.0, x="lon", y="lat")
    # a missing coordinate or user id is an unusable row: dropped and counted on every
    # path (DataFrame, arrays, engines), never an error (issue 8, item 9)
    bad = df.copy()
    bad.loc[3, "lat"] = np.nan
    bad["user_id"] = bad["user_id"].astype(object)
    bad.loc[0, "user_id"] = None
    got = private_heatmap(bad, grid=GRID, epsilon=1.0, x="lon", y="lat",
                          rng=np.random.default_rng(0))
    arrays = private_heatmap(grid=GRID, epsilon=1.0, user=bad.user_id.to_numpy(),
                             x=bad.lon.to_numpy(), y=bad.lat.to_numpy(),
                             rng=np.random.default_rng(0))
    ref = private_heatmap(df.drop(index=[0, 3]), grid=GRID, epsilon=1.0, x="lon", y="lat",
                          rng=np.random.default_rng(0))
    assert np.array_equal(got.distribution, ref.distribution)
    assert np.array_equal(arrays.distribution, ref.distribution)
    assert got.diagnostics.curator_only.n_outside == ref.diagnostics.curator_only.n_outside + 2
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(df.drop(columns="user_id"), grid=GRID, epsilon=1.0, x="lon", y="lat")
    assert info.value.name == "user" and "columns are" in str(info.value)
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(grid=GRID, epsilon=1.0, x=np.zeros(3), y=np.zeros(3))
    assert info.value.name == "user"
    with pytest.raises(InvalidDataError, match="has 2 values"):
        private_heatmap(grid=GRID, epsilon=1.0, user=np.arange(3), x=np.zeros(2),
                        y=np.zeros(3))
    with pytest.raises(InvalidDataError, match="no usable row"):  # a text column as x
        private_heatmap(grid=GRID, epsilon=1.0, user=np.arange(2), x=np.array(["a", "b"]),
                        y=np.zeros(2))
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap([1, 2, 3], grid=GRID, epsilon=1.0)
    assert info.value.name == "data"
    cs = CellSums(np.zeros((16, 16)), 0, 0, 0, 0)
    with pytest.raises(InvalidDataError, match="resolution"):
        private_heatmap(cs, grid=GRID, epsilon=1.0)
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(CellSums(np.zeros((32, 32)), 0, 0, 0, 0), grid=GRID, epsilon=1.0,
                        x=np.zeros(2))
    assert info.value.name == "x"


def test_full_lp_only_on_small_grids():
    big = Grid((0.0, 1.0, 0.0, 1.0), 128)
    acct = PrivacyAccountant(1.0)
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(_frame(), grid=big, epsilon=1.0, x="lon", y="lat", lp="full",
                        accountant=acct, rng=np.random.default_rng(0))
    assert info.value.name == "lp" and acct.ledger == ()  # refused before any charge
    res = private_heatmap(_frame(), grid=GRID, epsilon=1.0, x="lon", y="lat", lp="full",
                          rng=np.random.default_rng(0))
    assert res.diagnostics.reconstruction.lp == "full"


# -- the one column rule (issue 25): user_id / longitude / latitude everywhere --------------


def test_default_columns_are_the_engines_and_the_clis():
    """A table that works with aggregate_user_cells works with private_heatmap as is."""
    from privot.heatmaps import aggregate_user_cells

    df = _frame(seed=2).rename(columns={"lon": "longitude", "lat": "latitude"})
    a = private_heatmap(df, grid=GRID, epsilon=1.0, rng=np.random.default_rng(4))
    b = private_heatmap(aggregate_user_cells(df, grid=GRID), grid=GRID, epsilon=1.0,
                        rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.distribution, b.distribution)


@pytest.mark.parametrize("columns,example", [
    (["user_id", "x", "y"], 'x="x", y="y"'),
    (["user_id", "lon", "lat"], 'x="lon", y="lat"'),
])
def test_missing_default_columns_say_how_to_name_them(columns, example):
    df = _frame().rename(columns=dict(zip(["user_id", "lon", "lat"], columns, strict=True)))
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(df, grid=GRID, epsilon=1.0)
    err = info.value
    assert err.name == "x" and err.value == "longitude"
    assert "columns are" in str(err) and str(columns) in str(err)
    assert example in str(err) and "user_id, longitude, latitude" in str(err)


# -- HeatmapParams: the parameter object --------------------------------------------------


def test_params_object_and_keywords_give_the_same_bytes():
    kw = {"grid": GRID, "epsilon": 1.0, "method": "threshold", "threshold": 5.0,
          "sigma": 1.5}
    a = private_heatmap(_frame(), x="lon", y="lat", rng=np.random.default_rng(5), **kw)
    params = HeatmapParams(**kw)
    b = private_heatmap(_frame(), params, x="lon", y="lat", rng=np.random.default_rng(5))
    c = private_heatmap(_frame(), HeatmapParams(grid=GRID, epsilon=3.0), x="lon", y="lat",
                        rng=np.random.default_rng(5), **{k: v for k, v in kw.items()
                                                         if k != "grid"})
    for r in (b, c):
        np.testing.assert_array_equal(r.distribution, a.distribution)
        np.testing.assert_array_equal(r.heatmap, a.heatmap)
        assert r.release_dict() == a.release_dict()


def test_params_validate_when_built_and_when_replaced():
    p = HeatmapParams(grid=GRID, epsilon=1)
    assert p.epsilon == 1.0 and isinstance(p.epsilon, float) and p.w == 20
    assert p.replace(method="laplace").method == "laplace" and p.method == "pyramid"
    with pytest.raises(InvalidParameterError) as info:
        HeatmapParams(grid=GRID, epsilon=1.0, sigma=-1.0)
    assert info.value.name == "sigma"
    with pytest.raises(InvalidParameterError) as info:
        p.replace(gamma=0.0)
    assert info.value.name == "gamma"
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(_frame(), p, x="lon", y="lat", bins=3)
    assert info.value.name == "bins" and "epsilon" in str(info.value)
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(_frame(), {"epsilon": 1.0}, x="lon", y="lat")
    assert info.value.name == "params"


def test_params_repr_and_dict_are_one_line_and_public():
    p = HeatmapParams(grid=GRID, epsilon=0.5, method="threshold", threshold=2.0)
    text = repr(p)
    assert "\n" not in text and text.startswith("HeatmapParams(threshold, epsilon=0.5")
    assert "threshold=2%" in text and "32x32" in text
    d = p.to_dict()
    assert d["grid"] == {"bounds": [0.0, 1.0, 0.0, 1.0], "resolution": 32,
                         "aspect": GRID.aspect}
    assert d["epsilon"] == 0.5 and d["method"] == "threshold" and d["lp"] == "compact"
    res = private_heatmap(_frame(), p, x="lon", y="lat", rng=np.random.default_rng(0))
    assert "\n" not in repr(res.diagnostics)
    assert repr(res.diagnostics).startswith("HeatmapDiagnostics(")


def test_old_import_paths_keep_working():
    """Issue 25: the result types moved to heatmaps.result, the memory check to
    heatmaps.memory; api and outputs re-export them."""
    from privot.heatmaps import api, memory, outputs, params, result

    for name in ("CuratorDiagnostics", "HeatmapDiagnostics", "HeatmapRelease",
                 "HeatmapResult"):
        assert getattr(api, name) is getattr(result, name)
    assert api.METHODS is params.METHODS and api.DEFAULT_SIGMA == params.DEFAULT_SIGMA
    for name in ("check_memory", "memory_estimate", "memory_limit", "parse_size",
                 "MEMORY_COPIES", "DEFAULT_MEMORY_FRACTION"):
        assert getattr(outputs, name) is getattr(memory, name)


def test_engine_and_file_give_the_in_memory_bytes(tmp_path):
    """engine= (and a path) aggregates with aggregate_user_cells: the same cell sums,
    bit for bit, so the same seeded release."""
    df = _frame(seed=3)
    kw = {"grid": GRID, "epsilon": 1.0, "x": "lon", "y": "lat"}
    a = private_heatmap(df, rng=np.random.default_rng(6), **kw)
    b = private_heatmap(df, engine="duckdb", rng=np.random.default_rng(6), **kw)
    path = tmp_path / "points.csv"
    df.to_csv(path, index=False)
    c = private_heatmap(path, rng=np.random.default_rng(6), **kw)
    d = private_heatmap(str(path), engine="local", rng=np.random.default_rng(6), **kw)
    for r in (b, c, d):
        np.testing.assert_array_equal(r.distribution, a.distribution)
        np.testing.assert_array_equal(r.heatmap, a.heatmap)
        assert r.diagnostics.curator_only == a.diagnostics.curator_only
    with pytest.raises(InvalidParameterError) as info:
        private_heatmap(CellSums(np.zeros((32, 32)), 0, 0, 0, 0), grid=GRID, epsilon=1.0,
                        engine="duckdb")
    assert info.value.name == "engine"
