"""What importing privot, and a refused command, load (issue 27: fixed costs).

Not a timing test: fresh interpreters import a capability, or run a CLI command that is
refused for a bad public parameter, and list which heavy third-party packages ended up
in ``sys.modules``. POT (``ot``) imports torch through its backend and scikit-learn and
pandas through ``ot.lowrank``: privot imports it inside the functions that call it, so
a capability that never solves with POT never pays for it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Never loaded by importing a capability (POT and what it drags in; the plots).
NOT_ON_IMPORT = ("ot", "torch", "sklearn", "pandas", "matplotlib")
#: Never loaded by a refused command either (it is refused before the library loads).
NOT_ON_REFUSAL = (*NOT_ON_IMPORT, "scipy", "duckdb", "pyarrow", "privot.heatmaps",
                  "privot.barycenters", "privot.sampling", "privot.privacy")

_LOADED = """
import json, sys
heavy = json.loads(sys.argv[1])
loaded = sorted(h for h in heavy if h in sys.modules)
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _loaded(body: str, heavy: tuple[str, ...], *argv: str) -> dict:
    """Run ``body`` (which sets ``code``) in a fresh interpreter; what it loaded."""
    out = subprocess.run([sys.executable, "-c", body + _LOADED, json.dumps(heavy), *argv],
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["privot.heatmaps", "privot.barycenters",
                                    "privot.sampling", "privot.ot", "privot.grid",
                                    "privot.bounds", "privot.evaluation.heatmaps",
                                    "privot.evaluation.sampling"])
def test_importing_a_capability_loads_no_pot_torch_sklearn_pandas_matplotlib(module):
    result = _loaded(f"import {module}\ncode = 0\n", NOT_ON_IMPORT)
    assert result["loaded"] == []


def test_the_grid_loads_no_scipy():
    result = _loaded("import privot.grid, privot.bounds\ncode = 0\n", ("scipy",))
    assert result["loaded"] == []


_REFUSED = """
import sys
from privot.cli.main import main
code = main(sys.argv[2:])
"""

_CSV_ROWS = "user_id,longitude,latitude,x,y,grp,score\n1,0.5,0.5,0.5,0.5,a,0.5\n"


@pytest.mark.parametrize("command", [
    ["heatmap", "{csv}", "--bounds", "0", "1", "0", "1", "--epsilon", "0"],
    ["heatmap", "{csv}", "--bounds", "1", "0", "0", "1", "--epsilon", "1"],
    ["barycenter", "{csv}", "--columns", "x,y", "--group-column", "grp", "--bounds", "0",
     "1", "0", "1", "--m", "4", "--epsilon", "0"],
    ["barycenter", "{csv}", "--columns", "x,y", "--bounds", "0", "1", "0", "1", "--m",
     "0", "--epsilon", "1"],
    ["sample", "{csv}", "--bounds", "0", "1", "0", "1", "--epsilon", "0"],
    ["sample", "{csv}", "--bounds", "0", "1", "0", "1", "--epsilon", "1",
     "--resolution", "65"],
    ["learn", "{csv}", "--target", "y", "--sensitive", "grp", "--sensitive-values", "a,b",
     "--epsilon", "0"],
    ["repair", "{csv}", "--score-column", "score", "--group-column", "grp",
     "--epsilon", "0"],
], ids=lambda c: f"{c[0]}-{c[-2]}{c[-1]}")
def test_a_refused_command_loads_no_library(command, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text(_CSV_ROWS)
    argv = [a.format(csv=csv) for a in command] + ["-o", str(tmp_path / "out")]
    result = _loaded(_REFUSED, NOT_ON_REFUSAL, *argv)
    assert result["code"] == 2  # refused: a bad public parameter
    assert result["loaded"] == []
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_heatmap_release_loads_no_pot_torch_sklearn_pandas(tmp_path):
    pytest.importorskip("duckdb")
    pytest.importorskip("matplotlib")
    csv = tmp_path / "in.csv"
    csv.write_text("user_id,longitude,latitude\n"
                   + "".join(f"{i % 7},{(i % 10) / 10 + 0.05},{(i % 3) / 3 + 0.1}\n"
                             for i in range(60)))
    argv = ["heatmap", str(csv), "--bounds", "0", "1", "0", "1", "--epsilon", "1",
            "--resolution", "16", "--seed", "1", "--quiet", "-o", str(tmp_path / "out")]
    result = _loaded(_REFUSED, ("ot", "torch", "sklearn", "pandas"), *argv)
    assert result["code"] == 0 and (tmp_path / "out" / "heatmap.png").exists()
    assert result["loaded"] == []


def test_an_exact_solve_leaves_pot_whole_for_the_user():
    """POT loaded on demand by privot is the user's POT: its torch backend, where torch
    is installed, stays available (no backend switched off for privot's own use)."""
    pytest.importorskip("ot")
    body = """
import os
import numpy as np
import privot.ot
x = np.array([[0.0], [1.0]])
w = privot.ot.wasserstein_distance(x, x + 1.0, p=1)
import ot.backend
torch_backend = any(type(b).__name__ == "TorchBackend" for b in ot.backend.get_backend_list())
try:
    import torch  # noqa: F401
    has_torch = True
except ImportError:
    has_torch = False
code = [round(w, 12), torch_backend == has_torch,
        "POT_BACKEND_DISABLE_PYTORCH" not in os.environ]
"""
    result = _loaded(body, ("ot",))
    assert result["code"] == [1.0, True, True]
    assert result["loaded"] == ["ot"]  # the solve loaded POT, on demand


_CONSOLE = """
import sys
saved = sys.argv
sys.argv = ["privot", *saved[2:]]  # as the executable sees them
from privot.cli.main import console
code = console()
sys.argv = saved
"""


@pytest.mark.parametrize("command", ["barycenter", "sample"])
def test_the_barycenter_and_sample_commands_load_no_torch(command, tmp_path):
    """The ``privot`` executable (:func:`privot.cli.main.console`) switches POT's array
    backends off for the commands that never use them: a release that solves with POT's
    exact solver still loads no torch. ``main()`` in-process changes nothing (above)."""
    pytest.importorskip("duckdb")
    csv = tmp_path / "in.csv"
    csv.write_text("user_id,longitude,latitude,x,y,grp\n"
                   + "".join(f"{i},{(i % 10) / 10 + 0.05},{(i % 3) / 3 + 0.1},"
                             f"{(i % 10) / 10 + 0.05},{(i % 7) / 7 + 0.1},{'ab'[i % 2]}\n"
                             for i in range(80)))
    common = ["--bounds", "0", "1", "0", "1", "--epsilon", "1", "--seed", "1", "--quiet",
              "-o", str(tmp_path / "out")]
    argv = ([command, str(csv), "--columns", "x,y", "--group-column", "grp", "--m", "4",
             "--method", "coreset"] if command == "barycenter"
            else [command, str(csv), "--resolution", "4"]) + common
    result = _loaded(_CONSOLE, ("ot", "torch"), *argv)
    assert result["code"] == 0 and (tmp_path / "out" / "release.json").exists()
    assert result["loaded"] == ["ot"]  # POT's exact solver ran, without torch
