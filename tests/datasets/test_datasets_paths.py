"""Resolution of the shared data folder: explicit path, environment variable, walk-up."""

from __future__ import annotations

from pathlib import Path

import pytest

import privot.datasets._paths as paths
from privot.datasets import DATA_DIR_ENV, DataNotFoundError, data_file, resolve_data_dir
from privot.errors import PrivotError


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No env var, cwd in an empty tmp tree, package source 'located' in that tree."""
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    fake_pkg = tmp_path / "proj" / "src" / "privot" / "datasets"
    fake_pkg.mkdir(parents=True)
    monkeypatch.setattr(paths, "__file__", str(fake_pkg / "_paths.py"))
    work = tmp_path / "elsewhere" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


def test_explicit_path_wins_over_env(tmp_path, monkeypatch):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(DATA_DIR_ENV, str(b))
    assert resolve_data_dir(a) == a.resolve()
    assert resolve_data_dir(str(a)) == a.resolve()


def test_env_var_used_when_no_explicit_path(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert resolve_data_dir() == tmp_path.resolve()


def test_env_var_pointing_nowhere_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(DataNotFoundError, match=DATA_DIR_ENV):
        resolve_data_dir()


def test_explicit_missing_dir_is_an_error(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        resolve_data_dir(tmp_path / "nope")
    assert "nope" in str(info.value)
    assert DATA_DIR_ENV in str(info.value)
    # Catchable both as privot's base error and as the built-in.
    assert isinstance(info.value, PrivotError)
    assert isinstance(info.value, FileNotFoundError)


def test_nothing_found_names_where_it_looked(isolated):
    with pytest.raises(DataNotFoundError) as info:
        resolve_data_dir()
    msg = str(info.value)
    assert DATA_DIR_ENV in msg
    assert str(Path.cwd() / "shared" / "data") in msg


def test_walk_up_from_cwd_finds_sibling_shared_data(isolated):
    target = isolated / "elsewhere" / "shared" / "data"
    target.mkdir(parents=True)
    assert resolve_data_dir() == target.resolve()


def test_walk_up_several_levels_nearest_first(isolated):
    far = isolated / "shared" / "data"
    far.mkdir(parents=True)
    # cwd is tmp/elsewhere/deep: tmp/shared/data is two levels up
    assert resolve_data_dir() == far.resolve()
    near = isolated / "elsewhere" / "deep" / "shared" / "data"
    near.mkdir(parents=True)
    assert resolve_data_dir() == near.resolve()


def test_package_location_route_alone(tmp_path_factory, monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    root = tmp_path_factory.mktemp("pkgroute")
    fake_pkg = root / "proj" / "src" / "privot" / "datasets"
    fake_pkg.mkdir(parents=True)
    (root / "shared" / "data").mkdir(parents=True)
    monkeypatch.setattr(paths, "__file__", str(fake_pkg / "_paths.py"))
    other = tmp_path_factory.mktemp("cwd_without_data")
    monkeypatch.chdir(other)
    # Only valid if no shared/data exists above the other tmp dir.
    if any((a / "shared" / "data").is_dir() for a in [other.resolve(), *other.resolve().parents]):
        pytest.skip("a shared/data folder exists above the temporary directory")
    assert resolve_data_dir() == (root / "shared" / "data").resolve()


def test_data_file_missing_file_names_it(tmp_path):
    with pytest.raises(DataNotFoundError, match="adult/adult.data"):
        data_file("adult/adult.data", tmp_path)


def test_loader_error_when_folder_lacks_file(tmp_path):
    from privot.datasets import load_gowalla_nyc

    with pytest.raises(DataNotFoundError, match="gowalla_nyc/checkins.tsv"):
        load_gowalla_nyc(tmp_path)
