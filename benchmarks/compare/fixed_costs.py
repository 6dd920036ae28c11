"""Fixed costs of a privot command (issue 27, part 1): start-up, imports, refusals and
the end-to-end ``privot heatmap`` against its own stages.

Cases:

* ``fixed_costs.cli_refusal``: ``privot heatmap <csv> --bounds 0 1 0 1 --epsilon 0`` (a
  fresh process refused before any heavy import) against ``python -c "import numpy"``;
  goal 4x.
* ``fixed_costs.import_heatmaps``: ``python -c "import privot.heatmaps"`` against
  ``python -c "import numpy"``; reported (no goal).
* ``fixed_costs.heatmap_end_to_end``: ``privot heatmap`` on a 10^5-row CSV (a fresh
  process: start-up, imports, DuckDB aggregation, release, every output file) against
  its own stages run in this process from the library API (aggregation + release + one
  PNG, imports already paid); goal 2x. The check compares the two PNGs' bytes.

``privot demo`` (minutes) is not a case: its time is measured by hand.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from compare.case import Case

_TMP = Path(tempfile.mkdtemp(prefix="privot-fixed-costs-"))
_CSV = _TMP / "points.csv"
_SEED = 1
_BOUNDS = ("0", "1", "0", "1")


def _privot() -> list[str]:
    """The console script next to this interpreter, else ``python -m privot.cli.main``."""
    script = Path(sys.executable).with_name("privot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "privot.cli.main"]


def _run(cmd: list[str], expect: int = 0) -> int:
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    if proc.returncode != expect:
        raise AssertionError(f"{cmd[:3]} exited {proc.returncode}: {proc.stderr[-500:]}")
    return proc.returncode


def _write_csv(n: int) -> None:
    """``n`` points of ``n // 5`` users (two blobs in the unit square), seeded."""
    if _CSV.exists() and sum(1 for _ in _CSV.open()) == n + 1:
        return
    rng = np.random.default_rng(0)
    users = rng.integers(0, max(1, n // 5), n)
    x = np.clip(rng.normal(0.4, 0.15, n), 0.0, 0.999)
    y = np.clip(rng.normal(0.6, 0.2, n), 0.0, 0.999)
    with _CSV.open("w") as f:
        f.write("user_id,longitude,latitude\n")
        f.write("".join(f"{u},{a:.6f},{b:.6f}\n" for u, a, b in zip(users, x, y, strict=True)))


def _python(code: str) -> int:
    return _run([sys.executable, "-c", code])


def _refusal_case(n_csv: int) -> Case:
    cmd = [*_privot(), "heatmap", str(_CSV), "--bounds", *_BOUNDS, "--epsilon", "0",
           "-o", str(_TMP / "refused")]
    return Case(name="fixed_costs.cli_refusal",
                workload="privot heatmap <csv> --bounds 0 1 0 1 --epsilon 0 (exit 2)",
                peer='python -c "import numpy"',
                run_privot=lambda: _run(cmd, expect=2),
                run_peer=lambda: _python("import numpy"), goal=4.0,
                setup=lambda: _write_csv(n_csv), repeats=7,
                note="fresh processes; epsilon is checked before the library is imported")


def _import_case() -> Case:
    return Case(name="fixed_costs.import_heatmaps", workload='python -c "import privot.heatmaps"',
                peer='python -c "import numpy"',
                run_privot=lambda: _python("import privot.heatmaps"),
                run_peer=lambda: _python("import numpy"), goal=None, repeats=7,
                note="fresh processes; POT, torch, scikit-learn, matplotlib, pandas not loaded")


def _cli_heatmap() -> bytes:
    out = _TMP / "cli"
    _run([*_privot(), "heatmap", str(_CSV), "--bounds", *_BOUNDS, "--epsilon", "1",
          "--seed", str(_SEED), "-o", str(out), "--force", "--quiet"])
    return (out / "heatmap.png").read_bytes()


def _stages() -> bytes:
    """Aggregation (DuckDB) + release + one PNG, as the CLI runs them (same seed)."""
    import matplotlib.pyplot as plt

    from privot.grid import Grid
    from privot.heatmaps import HeatmapParams, aggregate_user_cells, private_heatmap

    grid = Grid(tuple(float(b) for b in _BOUNDS), 256, aspect="square")
    sums = aggregate_user_cells(str(_CSV), grid=grid, engine="duckdb")
    result = private_heatmap(sums, HeatmapParams(grid=grid, epsilon=1.0),
                             rng=np.random.default_rng(_SEED))
    png = _TMP / "stages.png"
    fig = result.plot(scale="sqrt")
    fig.savefig(png, dpi=120, format="png", bbox_inches="tight")
    plt.close(fig)
    return png.read_bytes()


def _end_to_end_case(n: int) -> Case:
    return Case(name="fixed_costs.heatmap_end_to_end",
                workload=f"privot heatmap, {n:,} rows, Delta 256, every output file",
                peer="its own stages in-process: aggregation + release + one PNG",
                run_privot=_cli_heatmap, run_peer=_stages, goal=2.0,
                setup=lambda: _write_csv(n), repeats=5,
                check=lambda a, b: {"same_png_bytes": a == b},
                note="privot: a fresh process (start-up, imports, all files); peer: "
                     "imports already paid")


def cases(quick: bool) -> list[Case]:
    n = 20_000 if quick else 100_000
    return [_refusal_case(n), _import_case(), _end_to_end_case(n)]
