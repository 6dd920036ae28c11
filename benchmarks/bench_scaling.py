"""Scaling of the two data-heavy commands: ``privot heatmap`` and ``privot barycenter``
(the CLI, default engine DuckDB) from 10^4 to 10^8 rows, 10x steps.

Data: synthetic Parquet, generated once by DuckDB into ``--data-dir`` (default
``/tmp/privot-scaling``, never in the repo): ``n`` rows of ``n / 10`` users (user_id,
longitude, latitude), coordinates from a deterministic hash of the row number (same
file on every run), uniform on a box 2% wider than the public NYC bounds (about 4% of
the rows fall outside). Each command runs as a fresh subprocess (``--quiet``, seeded,
into a temporary output folder), one at a time: wall time of the process, and its peak
resident memory: ``ru_maxrss`` of the process (``os.wait4``; DuckDB's threads are in
it) and the peak RSS of its process tree sampled from /proc every 0.05 s
(``bench_engines._tree_rss``).

Growth exponents: the slope of log(time) and of log(memory) against log(rows), fitted
by least squares over the largest three sizes run (1: linear; fixed costs, such as the
heatmap's reconstruction and the barycenter's solver, flatten the small sizes), and
over the last 10x step alone (``exponents_last_step``). Writes
``benchmarks/results/scaling.json`` and ``scaling.png`` (log-log, time and memory).
Run: ``python benchmarks/bench_scaling.py`` (``--max-rows 10000000`` to stop at 10^7;
10^8 rows take minutes per command on 2 cores and need about 2 GB of disk).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
BOUNDS = (-74.26, -73.70, 40.48, 40.92)  # the public NYC box of bench_engines
#: The installed ``privot`` command (the console script beside this interpreter).
PRIVOT = [str(Path(sys.executable).with_name("privot"))]
COMMANDS = {
    "heatmap": ["heatmap", "--bounds", *map(str, BOUNDS), "--epsilon", "1"],
    "barycenter": ["barycenter", "--bounds", *map(str, BOUNDS), "--epsilon", "1"],
}


def make_data(path: Path, rows: int) -> dict:
    """``rows`` synthetic check-ins of ``rows // 10`` users as Parquet (DuckDB, streamed)."""
    import duckdb

    x0, x1, y0, y1 = BOUNDS
    pad_x, pad_y = 0.01 * (x1 - x0), 0.01 * (y1 - y0)
    u = "(hash(i, {k}) % 4294967296) / 4294967296.0"  # a uniform in [0, 1) per row
    sql = (f"SELECT CAST(hash(i, 1) % {max(rows // 10, 1)} AS BIGINT) AS user_id, "
           f"{x0 - pad_x!r} + {x1 - x0 + 2 * pad_x!r} * {u.format(k=2)} AS longitude, "
           f"{y0 - pad_y!r} + {y1 - y0 + 2 * pad_y!r} * {u.format(k=3)} AS latitude "
           f"FROM range({rows}) t(i)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    t0 = time.perf_counter()
    with duckdb.connect() as con:
        con.execute("SET enable_progress_bar = false")
        con.execute(f"COPY ({sql}) TO '{tmp}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)")
    tmp.rename(path)
    return {"rows": rows, "users": max(rows // 10, 1), "generate_s": time.perf_counter() - t0,
            "mb": path.stat().st_size / 2**20}


def run_command(args: list[str], timeout: float) -> dict:
    """Wall time and peak memory of one ``privot`` subprocess."""
    from bench_engines import _tree_rss

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="privot-scaling-out-") as out:
        cmd = [*PRIVOT, *args, "--output", out, "--force", "--seed", "0", "--quiet"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak, done = [0], threading.Event()

        def poll() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _tree_rss(proc.pid))
                time.sleep(0.05)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        timer.cancel()
        done.set()
        thread.join()
        err = proc.stderr.read().decode(errors="replace").strip()
        proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code:
        return {"error": (err.splitlines() or [f"exit {code}"])[-1][:300], "wall_s": wall}
    return {"wall_s": round(wall, 3), "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
            "peak_tree_rss_mb": round(peak[0] / 2**20, 1), "load_avg_1min_before": load}


def exponent(rows: list[int], values: list[float], last: int = 3) -> float | None:
    """Least-squares slope of log(value) against log(rows) over the ``last`` largest."""
    pairs = [(r, v) for r, v in zip(rows, values, strict=True) if v and v > 0][-last:]
    if len(pairs) < 2:
        return None
    r, v = np.log10([p[0] for p in pairs]), np.log10([p[1] for p in pairs])
    return round(float(np.polyfit(r, v, 1)[0]), 3)


def plot(report: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, key, label in ((axes[0], "wall_s", "wall time (s)"),
                           (axes[1], "maxrss_mb", "peak resident memory (MB)")):
        for name, runs in report["runs"].items():
            ok = [r for r in runs if key in r]
            if not ok:
                continue
            slope = report["exponents"][name][key]
            ax.loglog([r["rows"] for r in ok], [r[key] for r in ok], "o-",
                      label=f"privot {name} (slope {slope})")
        rows = np.array(report["sizes"], dtype=float)
        ax.loglog(rows, rows / rows[-1] * max(
            (r.get(key, 0) for runs in report["runs"].values() for r in runs), default=1),
            ":", c="grey", label="slope 1 (linear)")
        ax.set_xlabel("rows")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"privot CLI scaling, DuckDB engine, {report['cpu_count']} cores "
                 "(slopes fitted over the largest three sizes)")
    fig.tight_layout()
    fig.savefig(RESULTS / "scaling.png", dpi=110)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-rows", type=int, default=10_000)
    parser.add_argument("--max-rows", type=int, default=100_000_000)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/privot-scaling"))
    parser.add_argument("--only", choices=sorted(COMMANDS))
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args(argv)
    sizes = []
    n = args.min_rows
    while n <= args.max_rows:
        sizes.append(n)
        n *= 10
    names = [args.only] if args.only else list(COMMANDS)
    report = {"cpu_count": os.cpu_count(), "bounds": BOUNDS, "sizes": sizes, "data": {},
              "runs": {name: [] for name in names}, "exponents": {}}
    for rows in sizes:
        path = args.data_dir / f"checkins_{rows}.parquet"
        if not path.exists():
            free = shutil.disk_usage(args.data_dir.parent).free / 2**30
            need = 25 * rows / 2**30  # about 20 bytes a row in Parquet, with a margin
            if need > free:
                print(f"skipping {rows:.0e} rows: about {need:.1f} GiB needed, "
                      f"{free:.1f} GiB free", flush=True)
                break
            report["data"][str(rows)] = make_data(path, rows)
        else:
            report["data"][str(rows)] = {"rows": rows, "mb": path.stat().st_size / 2**20}
        for name in names:
            res = {"rows": rows, **run_command([*COMMANDS[name][:1], str(path),
                                                 *COMMANDS[name][1:]], args.timeout)}
            report["runs"][name].append(res)
            print(name, res, flush=True)
    report["exponents_last_step"] = {}
    for name, runs in report["runs"].items():
        ok = [r for r in runs if "error" not in r]
        for out, last in (("exponents", 3), ("exponents_last_step", 2)):
            report[out][name] = {
                key: exponent([r["rows"] for r in ok], [r[key] for r in ok], last)
                for key in ("wall_s", "maxrss_mb", "peak_tree_rss_mb")}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report)
    print(json.dumps(report["exponents"]), flush=True)
    return report


if __name__ == "__main__":
    main()
