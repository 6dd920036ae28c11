"""Issue 8: every output folder is safe to publish.

The rule (DESIGN.md, "Publishable output"): what a command writes into its output folder
(but for the ``curator-`` files), prints on stdout, or raises after charging is a
function of the public parameters and the noisy release only. The strongest check is
direct: two inputs whose *release* is the same (they differ only in rows the mechanism
never sees as different) must give byte-identical publishable files under the same seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privot.cli._output import CURATOR_PREFIX
from privot.cli.main import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

HEATMAP = ["heatmap", "--bounds", "0", "1", "0", "1", "--epsilon", "1", "--resolution", "16",
           "--user-column", "uid", "--x-column", "lon", "--y-column", "lat", "--seed", "5"]
BARYCENTER = ["barycenter", "--columns", "lon,lat", "--bounds", "0", "1", "0", "1", "--m",
              "4", "--epsilon", "1", "--seed", "5"]
SAMPLE = ["sample", "--bounds", "0", "1", "0", "1", "--epsilon", "2", "--resolution", "6",
          "--user-column", "uid", "--x-column", "lon", "--y-column", "lat", "--seed", "5"]
COMMANDS = {"heatmap": HEATMAP, "barycenter": BARYCENTER, "sample": SAMPLE}


def _frame(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, 150, n), "lon": rng.uniform(0.1, 0.9, n),
                         "lat": rng.uniform(0.2, 0.8, n)})


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _publishable(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if not p.name.startswith(CURATOR_PREFIX)}


def _far_row_pair(tmp_path, far_a: float, far_b: float):
    """Two inputs differing in one coordinate of one row, both values outside [0, 1]
    on the same side (dropped by the heatmap, clipped to the same point by the box)."""
    a, b = _frame(), _frame()
    a.loc[0, "lon"], b.loc[0, "lon"] = far_a, far_b
    return _write(a, tmp_path / "a.csv"), _write(b, tmp_path / "b.csv")


@pytest.mark.parametrize("command", ["heatmap", "barycenter", "sample"])
def test_publishable_files_are_a_function_of_the_release(tmp_path, capsys, command):
    """Same seed, same release: byte-identical publishable files and stdout. Before the
    fix, release.json carried exact counts, wall-clock seconds and the data warning
    'overflow encountered in multiply', and barycenter.png drew the raw rows."""
    path_a, path_b = _far_row_pair(tmp_path, 7.0, 1e300)
    base = COMMANDS[command]
    outs, printed = [], []
    for name, path in (("a", path_a), ("b", path_b)):
        out = tmp_path / f"out-{name}"
        rc, stdout, _ = _run(capsys, [base[0], path, *base[1:], "-o", out])
        assert rc == 0
        outs.append(_publishable(out))
        printed.append(stdout.replace(str(out), "OUT"))
    assert outs[0].keys() == outs[1].keys()
    for name in outs[0]:
        assert outs[0][name] == outs[1][name], f"{name} depends on the raw data"
    assert printed[0] == printed[1]


def test_data_warnings_go_to_the_curator_only(tmp_path, capsys):
    """A row at 1e300 in a ball: whatever warning the arithmetic raises is curator-only."""
    frame = _frame()
    frame.loc[0, "lon"] = 1e300
    path = _write(frame, tmp_path / "far.csv")
    out = tmp_path / "out"
    rc, stdout, stderr = _run(capsys, ["barycenter", path, "--columns", "lon,lat", "--ball",
                                       "0.5", "0.5", "0.5", "--m", "4", "--epsilon", "1",
                                       "--seed", "1", "-o", out])
    assert rc == 0
    release = (out / "release.json").read_text()
    assert "warning" not in release.lower() and "overflow" not in release
    report = json.loads((out / "curator-report.json").read_text())
    assert report["rows_clipped_per_group"] == {"all": 1}
    for line in report["data_warnings"]:
        assert line in stderr


def test_most_rows_dropped_warns_the_curator_loudly(tmp_path, capsys):
    frame = _frame()
    frame.loc[:399, "lon"] = 5.0  # 400 of 600 points outside
    path = _write(frame, tmp_path / "mostly.csv")
    out = tmp_path / "out"
    rc, stdout, stderr = _run(capsys, ["heatmap", path, *HEATMAP[1:], "-o", out])
    assert rc == 0
    assert "most rows" in stderr and "curator-only warning" in stderr
    assert "most rows" not in stdout
    assert "most rows" not in (out / "release.json").read_text()
    report = json.loads((out / "curator-report.json").read_text())
    assert any("DataWarning" in w and "most rows" in w for w in report["data_warnings"])


def _swapped(tmp_path):
    frame = _frame()
    frame["lat"] = frame["lat"] + 40.0  # latitudes 40.2..40.8, longitudes 0.1..0.9
    return _write(frame.rename(columns={"lon": "lat", "lat": "lon"}), tmp_path / "sw.csv")


def _header_only(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("uid,lon,lat\n")
    return path


def _text_column(tmp_path):
    frame = _frame()
    frame["lon"] = "somewhere"
    return _write(frame, tmp_path / "text.csv")


@pytest.mark.parametrize("command", ["heatmap", "barycenter"])
@pytest.mark.parametrize("make,needle", [(_swapped, "swapped"), (_header_only, "no rows"),
                                         (_text_column, "no usable row")])
def test_nothing_usable_is_refused_with_exit_2_and_nothing_written(
        tmp_path, capsys, command, make, needle):
    """Before the fix each of these gave exit 0 and a believable pure-noise release."""
    path = make(tmp_path)
    out = tmp_path / "out"
    if command == "heatmap":
        argv = ["heatmap", path, "--bounds", "0", "1", "40", "41", *HEATMAP[6:], "-o", out]
    else:
        argv = ["barycenter", path, "--columns", "lon,lat", "--bounds", "0", "1", "40", "41",
                *BARYCENTER[8:], "-o", out]
    rc, stdout, stderr = _run(capsys, argv)
    assert rc == 2
    errors = [line for line in stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and needle in errors[0], stderr
    assert "nothing was charged" in errors[0].lower()
    assert not out.exists()


def test_existing_output_folder_needs_force(tmp_path, capsys):
    path = _write(_frame(), tmp_path / "in.csv")
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "curator-data.png").write_bytes(b"stale")
    rc, _, stderr = _run(capsys, ["barycenter", path, *BARYCENTER[1:], "-o", out])
    assert rc == 2 and "--force" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["curator-data.png", "notes.txt"]
    rc, _, _ = _run(capsys, ["barycenter", path, *BARYCENTER[1:], "-o", out, "--force"])
    assert rc == 0
    names = sorted(p.name for p in out.iterdir())
    assert "curator-data.png" not in names  # the stale curator file of an earlier run
    assert "notes.txt" in names  # not privot's: left alone
    assert {"support.csv", "release.json", "curator-report.json"} <= set(names)


def test_plot_data_is_a_curator_file(tmp_path, capsys):
    path = _write(_frame(), tmp_path / "in.csv")
    out = tmp_path / "out"
    rc, stdout, _ = _run(capsys, ["barycenter", path, *BARYCENTER[1:], "-o", out,
                                  "--plot-data"])
    assert rc == 0
    assert (out / "curator-data.png").stat().st_size > 5000
    release = json.loads((out / "release.json").read_text())
    assert "curator-data.png" not in release["publishable_files"]
    assert "curator-only (do not publish): curator-data.png" in stdout


@pytest.mark.parametrize("command", ["heatmap", "barycenter", "sample"])
def test_help_names_the_publishable_files(capsys, command):
    rc, out, _ = _run(capsys, [command, "--help"])
    text = " ".join(out.split())
    assert rc == 0
    assert "Publishable:" in text and "curator-report.json" in text
    assert "never publish" in text
    if command == "barycenter":
        assert "group labels" in text and "NOT protected" in text
