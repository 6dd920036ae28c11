"""Start-up time of the ``privot`` command (issue 9: ``privot --help`` under 0.3 s).

Runs, as fresh subprocesses and in alternating order, ``privot --help``,
``privot heatmap --help``, an argument error (``privot calibrate --epsilon x ...``), the
baseline ``python -c pass`` and, for reference, ``python -c "import privot.privacy"``
(roughly what every invocation paid before the subcommands imported their dependencies
lazily). Records the median wall time of each and its ratio to the baseline.

Writes ``benchmarks/results/cli_startup.json``. Run: ``python benchmarks/bench_cli_startup.py``
(about 30 s; ``--runs N`` to change the runs per command, default 11).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_S = 0.3  # issue 9: `privot --help` under 0.3 s


def _privot() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m``."""
    script = Path(sys.executable).with_name("privot")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "privot.cli.main"]


def _commands() -> dict[str, list[str]]:
    privot = _privot()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "privot --help": [*privot, "--help"],
        "privot heatmap --help": [*privot, "heatmap", "--help"],
        "privot calibrate (argument error)": [
            *privot, "calibrate", "--epsilon", "x", "--delta", "1e-5", "--steps", "10",
            "--sampling-rate", "0.1"],
        "import privot.privacy (reference)": [sys.executable, "-c", "import privot.privacy"],
    }


def _once(cmd: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False)
    return time.perf_counter() - t0, proc.returncode


def main(runs: int) -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    commands = _commands()
    for cmd in commands.values():  # warm the page cache and the .pyc files
        _once(cmd)
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    codes: dict[str, set[int]] = {name: set() for name in commands}
    for _ in range(runs):  # alternating, so drift in machine load hits every command
        for name, cmd in commands.items():
            s, rc = _once(cmd)
            seconds[name].append(s)
            codes[name].add(rc)
    base = statistics.median(seconds["python -c pass"])
    rows = {}
    for name, values in seconds.items():
        med = statistics.median(values)
        rows[name] = {"median_s": med, "min_s": min(values), "max_s": max(values),
                      "ratio_to_python": med / base, "over_python_s": med - base,
                      "exit_codes": sorted(codes[name])}
    help_s = rows["privot --help"]["median_s"]
    out = {
        "benchmark": "privot CLI start-up: fresh subprocesses, alternating, median",
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
        "settings": {"runs_per_command": runs,
                     "privot": " ".join(Path(a).name for a in _privot()),
                     "target_privot_help_s": TARGET_S},
        "results": rows,
        "summary": {"privot_help_median_s": help_s,
                    "privot_help_ratio_to_python": rows["privot --help"]["ratio_to_python"],
                    "heatmap_help_median_s": rows["privot heatmap --help"]["median_s"],
                    "meets_target": help_s < TARGET_S},
    }
    (RESULTS / "cli_startup.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11, help="runs per command (default 11)")
    result = main(ap.parse_args().runs)
    for name, row in result["results"].items():
        print(f"{name:<36} median {1e3 * row['median_s']:7.1f} ms  "
              f"x{row['ratio_to_python']:5.1f} of python -c pass  exit {row['exit_codes']}")
    print(f"target privot --help < {TARGET_S} s: "
          f"{'met' if result['summary']['meets_target'] else 'NOT met'}")
