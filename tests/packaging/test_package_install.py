"""The package a user installs (issue 29): one version, a wheel and an sdist that hold
what they should, and a wheel that installs with no extra into a fresh environment and
releases a heatmap from it.

The fresh environment installs the wheel's dependencies from the package index pinned
by the committed lock (``requirements/lock.txt``), as ``make test`` itself does; pip's
cache makes repeated runs fast (about 30 s on 2 cores).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib

import privot

ROOT = Path(__file__).resolve().parents[2]


def test_one_version_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    dynamic = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert dynamic["dynamic"]["version"] == {"attr": "privot.__version__"}
    assert importlib.metadata.version("privot") == privot.__version__
    # the changelog's newest entry names the current version
    first = re.search(r"^## \[(\d+\.\d+\.\d+[^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(),
                      re.M)
    assert first is not None and first.group(1) == privot.__version__


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """``python -m build`` (without isolation: the locked setuptools builds it, offline)."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                           str(out), str(ROOT)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list(out.glob("privot-*.whl"))
    sdists = list(out.glob("privot-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0]


def test_wheel_holds_the_package_typed_and_licensed(dist):
    wheel, _ = dist
    assert wheel.name == f"privot-{privot.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert "privot/py.typed" in names and "privot/cli/main.py" in names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]
    info = f"privot-{privot.__version__}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    entry = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "privot = privot.cli.main:console" in entry


def test_sdist_holds_tests_docs_and_changelog_not_results(dist):
    _, sdist = dist
    top = f"privot-{privot.__version__}/"
    names = {n.removeprefix(top) for n in tarfile.open(sdist).getnames()}
    for must in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml",
                 "requirements/lock.txt", "src/privot/py.typed",
                 "tests/packaging/test_package_install.py", "docs/ARCHITECTURE.md"):
        assert must in names, must
    assert not [n for n in names if n.startswith("benchmarks/")]


def test_wheel_installs_without_extras_and_releases_a_heatmap(dist, tmp_path):
    wheel, _ = dist
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    py = env / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "-c",
                           str(ROOT / "requirements" / "lock.txt"), str(wheel)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # no extra: neither matplotlib nor pandas nor torch came with it
    missing = subprocess.run(
        [str(py), "-c", "import importlib.util as u; print([m for m in ('matplotlib', "
                        "'pandas', 'torch') if u.find_spec(m)])"],
        capture_output=True, text=True, timeout=120)
    assert missing.stdout.strip() == "[]", missing.stdout + missing.stderr
    privot_cmd = env / "bin" / "privot"
    version = subprocess.run([str(privot_cmd), "--version"], capture_output=True,
                             text=True, timeout=120)
    assert version.stdout.strip() == f"privot {privot.__version__}"
    points = tmp_path / "points.csv"
    rows = [f"{u % 40},{(u * 37 % 100) / 100},{(u * 61 % 100) / 100}" for u in range(400)]
    points.write_text("uid,lon,lat\n" + "\n".join(rows) + "\n")
    out = tmp_path / "heatmap"
    run = subprocess.run([str(privot_cmd), "heatmap", str(points), "--bounds", "0", "1",
                          "0", "1", "--resolution", "16", "--user-column", "uid",
                          "--columns", "lon,lat", "--epsilon", "1", "-o", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    release = json.loads((out / "release.json").read_text())
    assert release["epsilon"] == pytest.approx(1.0)
    assert (out / "distribution.csv").exists() and not (out / "heatmap.png").exists()
    assert "heatmap.png skipped: matplotlib is not installed" in run.stdout
