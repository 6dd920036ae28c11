"""``BarycenterResult``: short repr, ``to_dict``, ``save`` (the files of ``privot
barycenter``, one code path with the CLI) and ``plot``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.barycenters.result import CURATOR_FILES, PUBLISHABLE_FILES
from privot.errors import InvalidDataError, InvalidParameterError

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

BOX = PublicBounds.box([0.0, 0.0], [1.0, 1.0])
#: The CLI's settings (privot barycenter defaults), so that the library run below
#: makes the same release under the same seed.
SETTINGS = {"m": 6, "epsilon": 1.0, "delta": None, "method": "auto",
            "population_size": None, "projection_dim": "auto", "splits": None,
            "iterations": 1, "calibration": "analytic", "reg": 1e-3, "placement": "scaled",
            "region": None}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    rows = []
    for g, centre in enumerate(([0.3, 0.3], [0.7, 0.6])):
        pts = np.clip(np.asarray(centre) + 0.08 * rng.normal(size=(400, 2)), 0, 1)
        rows.append(pd.DataFrame({"x": pts[:, 0], "y": pts[:, 1], "grp": f"g{g}"}))
    out = pd.concat(rows, ignore_index=True)
    out.loc[0, "x"] = 7.0  # clipped
    out.loc[1, "y"] = np.nan  # unusable
    return out


@pytest.fixture(scope="module")
def groups(frame):
    return [frame.loc[frame["grp"] == g, ["x", "y"]].to_numpy(float) for g in ("g0", "g1")]


@pytest.fixture(scope="module")
def result(groups):
    return private_barycenter(groups, bounds=BOX, rng=np.random.default_rng(2), **SETTINGS)


def test_repr_is_one_short_line(result):
    text = repr(result)
    assert "\n" not in text and "[" not in text and len(text) < 200
    assert text.startswith("BarycenterResult(coreset, m=6, d=2, k=2 groups")
    assert "epsilon=1" in text and "delta=0" in text and "SEEDED" in text


def test_to_dict_is_json_ready_and_keeps_the_audiences_apart(result):
    both = result.to_dict(curator=True)
    assert set(both) == {"release", "curator_only"}
    json.dumps(both)  # plain Python values
    public = result.to_dict(curator=False)
    assert set(public) == {"release"}
    text = json.dumps(public)
    assert "clipped" not in text and "seconds" not in text


def test_plot_returns_a_figure(result):
    from matplotlib.figure import Figure

    fig = result.plot(columns=["lon", "lat"])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "lon" and ax.get_ylabel() == "lat"
    other = Figure()
    ax2 = other.add_subplot()
    assert result.plot(ax=ax2) is other


def test_save_without_curator_writes_the_publishable_files_only(result, tmp_path):
    written = result.save(tmp_path / "pub", curator=False)
    names = sorted(p.name for p in (tmp_path / "pub").iterdir())
    assert names == sorted(PUBLISHABLE_FILES) == written["publishable"]
    assert written["curator"] == []
    rel = json.loads((tmp_path / "pub" / "release.json").read_text())
    assert rel["columns"] == ["x", "y"] and rel["groups"] == ["group 0", "group 1"]
    assert rel["publishable_files"] == sorted(PUBLISHABLE_FILES)
    with pytest.raises(InvalidParameterError, match="data"):
        result.save(tmp_path / "no", curator=False, data=[np.zeros((3, 2))])


def test_save_with_the_raw_groups_draws_the_curator_figure(result, groups, tmp_path):
    written = result.save(tmp_path / "cur", data=groups, group_names=["g0", "g1"])
    assert written["curator"] == sorted(CURATOR_FILES)
    assert (tmp_path / "cur" / "curator-data.png").stat().st_size > 5000
    rel = json.loads((tmp_path / "cur" / "release.json").read_text())
    assert "curator-data.png" not in rel["publishable_files"]


def test_wrong_number_of_names_is_refused(result, tmp_path):
    with pytest.raises(InvalidParameterError, match="columns"):
        result.save(tmp_path / "a", columns=["x"])
    with pytest.raises(InvalidParameterError, match="group_names"):
        result.save(tmp_path / "b", group_names=["only one"])


def test_three_dimensional_support_has_no_png(tmp_path):
    rng = np.random.default_rng(1)
    box = PublicBounds.box([0.0] * 3, [1.0] * 3)
    res = private_barycenter(rng.uniform(size=(300, 3)), bounds=box, m=3, epsilon=1.0,
                             rng=0)
    assert "d=3, k=1 group," in repr(res)
    written = res.save(tmp_path / "three")
    assert "barycenter.png" not in written["publishable"] and written["notes"]
    header = (tmp_path / "three" / "support.csv").read_text().splitlines()[0]
    assert header == "x,y,z,weight"
    with pytest.raises(InvalidDataError, match="2-D"):
        res.plot()


def test_save_writes_what_the_cli_writes(frame, result, tmp_path, capsys):
    from privot.cli import barycenter as cli
    from privot.cli.main import main

    assert cli.PUBLISHABLE == PUBLISHABLE_FILES
    path = tmp_path / "groups.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "cli"
    assert main(["barycenter", str(path), "--columns", "x,y", "--group-column", "grp",
                 "--bounds", "0", "1", "0", "1", "--m", "6", "--epsilon", "1", "--seed", "2",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    lib = tmp_path / "lib"
    written = result.save(lib, columns=["x", "y"], group_names=["g0", "g1"])
    public = sorted(p.name for p in out.iterdir() if not p.name.startswith("curator-"))
    assert public == written["publishable"]
    assert (lib / "support.csv").read_text() == (out / "support.csv").read_text()
    rel_cli = json.loads((out / "release.json").read_text())
    rel_lib = json.loads((lib / "release.json").read_text())
    assert rel_cli.pop("engine") == "duckdb"  # the only key the CLI adds
    assert rel_cli == rel_lib
    cur_cli = json.loads((out / "curator-report.json").read_text())
    cur_lib = json.loads((lib / "curator-report.json").read_text())
    assert set(cur_cli.pop("seconds")) == {"read", "release"}  # the CLI's timings
    for body in (cur_cli, cur_lib):
        body.pop("diagnostics")  # solver timings differ run to run
    assert cur_cli == cur_lib
