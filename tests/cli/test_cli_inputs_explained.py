"""Inputs read or refused in plain words, outputs that say what shaped them (issue 29)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _heatmap(path, out):
    return ["heatmap", path, "--bounds", 0, 1, 0, 1, "--resolution", 8, "--user-column",
            "uid", "--columns", "lon,lat", "--epsilon", 1, "--seed", 1, "-o", out]


def test_mixed_line_endings_refused_in_one_line_with_the_fix(capsys, tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"uid,lon,lat\r\n1,0.1,0.2\n2,0.3,0.4\r\n3,0.5,0.6\n4,0.7,0.8\r\n")
    rc, _, err = _run(capsys, _heatmap(path, tmp_path / "h"))
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert rc == 2 and len(lines) == 1, err
    assert "mixes Windows (CRLF) and Unix (LF) line endings" in lines[0]
    assert f"sed -i 's/\\r$//' {path}" in lines[0] and not (tmp_path / "h").exists()
    # the command it names makes the file readable
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
    rc, _, err = _run(capsys, _heatmap(path, tmp_path / "h"))
    assert rc == 0, err


def test_other_unreadable_csv_is_one_short_line(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('uid,lon,lat\n1,"0.1,0.2\n')
    rc, _, err = _run(capsys, _heatmap(path, tmp_path / "h"))
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("privot: --seed")]
    assert rc == 2 and len(lines) == 1 and len(lines[0]) < 600, err
    assert "could not read" in lines[0]


def test_barycenter_region_recorded_in_release_json(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 400  # people inside the contiguous US, two groups
    frame = pd.DataFrame({"lon": rng.uniform(-100, -85, n), "lat": rng.uniform(33, 42, n),
                          "grp": np.repeat(["a", "b"], n // 2)})
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "b"
    rc, _, err = _run(capsys, ["barycenter", path, "--columns", "lon,lat", "--group-column",
                               "grp", "--bounds", -125, -66, 24, 50, "--method", "coreset",
                               "--region", "continental-us", "--m", 6, "--epsilon", 1,
                               "--seed", 2, "-o", out])
    assert rc == 0, err
    region = json.loads((out / "release.json").read_text())["params"]["region"]
    assert region["kind"] == "polygon" and region["name"] == "continental-us"
    assert len(region["vertices"]) > 50
