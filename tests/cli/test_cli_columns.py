"""One column convention across ``privot heatmap``, ``sample`` and ``barycenter``:
``--columns A,B[,...]`` for the coordinates, ``--user-column`` / ``--group-column`` for
the ids; the old ``--x-column`` / ``--y-column`` still parse (hidden), never together
with ``--columns``."""

from __future__ import annotations

import numpy as np
import pytest

from privot.cli.main import build_parser, main

HEAD = {"heatmap": ["heatmap", "in.csv", "--bounds", "0", "1", "0", "1", "--epsilon", "1"],
        "sample": ["sample", "in.csv", "--bounds", "0", "1", "0", "1", "--epsilon", "1"],
        "barycenter": ["barycenter", "in.csv", "--bounds", "0", "1", "0", "1",
                       "--epsilon", "1"]}


def _parse(command: str, *extra: str):
    return build_parser().parse_args([*HEAD[command], *extra])


@pytest.mark.parametrize("command", ["heatmap", "sample", "barycenter"])
def test_both_spellings_parse_to_the_same_columns(command):
    new = _parse(command, "--columns", "lon,lat")
    old = _parse(command, "--x-column", "lon", "--y-column", "lat")
    assert new.columns == old.columns == ["lon", "lat"]
    assert _parse(command).columns == ["longitude", "latitude"]
    assert _parse(command, "--x-column", "lon").columns == ["lon", "latitude"]
    assert _parse(command, "--y-column", "lat").columns == ["longitude", "lat"]
    assert _parse(command, "--columns", " lon , lat ").columns == ["lon", "lat"]


@pytest.mark.parametrize("command", ["heatmap", "sample"])
def test_id_column_is_user_column(command):
    assert _parse(command).user_column == "user_id"
    assert _parse(command, "--user-column", "uid").user_column == "uid"


def test_heatmap_defaults_are_the_librarys_one_column_rule():
    """Issue 25: privot heatmap, aggregate_user_cells and private_heatmap read the same
    columns when none are named (privot.heatmaps.points)."""
    import inspect

    from privot.heatmaps import (
        DEFAULT_USER_COLUMN,
        DEFAULT_X_COLUMN,
        DEFAULT_Y_COLUMN,
        aggregate_user_cells,
    )

    args = _parse("heatmap")
    assert args.user_column == DEFAULT_USER_COLUMN == "user_id"
    assert args.columns == [DEFAULT_X_COLUMN, DEFAULT_Y_COLUMN] == ["longitude", "latitude"]
    engine = inspect.signature(aggregate_user_cells).parameters
    assert (engine["user_column"].default, engine["x_column"].default,
            engine["y_column"].default) == (DEFAULT_USER_COLUMN, DEFAULT_X_COLUMN,
                                            DEFAULT_Y_COLUMN)


def test_barycenter_takes_d_columns_and_a_group_column():
    args = _parse("barycenter", "--columns", "a,b,c", "--group-column", "g")
    assert args.columns == ["a", "b", "c"] and args.group_column == "g"


@pytest.mark.parametrize("command", ["heatmap", "sample", "barycenter"])
@pytest.mark.parametrize("extra", [
    ("--columns", "lon,lat", "--x-column", "lon"),
    ("--y-column", "lat", "--columns", "lon,lat"),
    ("--x-column", "a", "--y-column", "b", "--columns", "a,b"),
])
def test_both_spellings_at_once_is_one_line_and_exit_2(capsys, command, extra):
    assert main([*HEAD[command], *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]
    assert "--columns" in err[0] and "--x-column" in err[0]


@pytest.mark.parametrize("command", ["heatmap", "sample"])
@pytest.mark.parametrize("value", ["lon", "lon,lat,alt", ","])
def test_a_grid_takes_exactly_two_columns(capsys, command, value):
    assert main([*HEAD[command], "--columns", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--columns" in err[0] and "2 comma-separated" in err[0]


def test_barycenter_needs_at_least_one_column(capsys):
    assert main([*HEAD["barycenter"], "--columns", ","]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--columns" in err[0]


@pytest.mark.parametrize("command", ["heatmap", "sample", "barycenter"])
def test_help_shows_the_one_convention_and_hides_the_old_spellings(capsys, command):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "--columns" in text
    assert "--x-column" not in text and "--y-column" not in text
    assert ("--group-column" if command == "barycenter" else "--user-column") in text


def test_the_old_spelling_gives_the_same_heatmap(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"uid": rng.integers(0, 100, n), "lon": rng.uniform(0, 1, n),
                          "lat": rng.uniform(0, 1, n)})
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    common = ["heatmap", str(path), "--bounds", "0", "1", "0", "1", "--epsilon", "1",
              "--resolution", "8", "--user-column", "uid", "--seed", "4"]
    assert main([*common, "--columns", "lon,lat", "-o", str(tmp_path / "new")]) == 0
    assert main([*common, "--x-column", "lon", "--y-column", "lat",
                 "-o", str(tmp_path / "old")]) == 0
    capsys.readouterr()
    np.testing.assert_array_equal(np.load(tmp_path / "new" / "distribution.npy"),
                                  np.load(tmp_path / "old" / "distribution.npy"))
