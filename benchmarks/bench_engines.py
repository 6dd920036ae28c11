"""Benchmark of the heatmap aggregation (per-user cell sums) on the local and Spark engines.

Data: 10^6 synthetic users with exactly 10^7 check-ins, made by resampling users of the
real Gowalla NYC check-ins: each synthetic user (new id) copies a real user drawn with
replacement and keeps a random non-empty subset of that user's check-ins, the subsets
drawn so that the total is exactly 10^7 (each keeps at least one, the other 9 * 10^6
are spread uniformly over the remaining check-ins of the drawn users). Rows are
shuffled (no user locality) and written to Parquet under /tmp (never in the repo),
with the Gowalla columns (user_id, time, latitude, longitude, location_id).

Each engine runs in its own subprocess: ``aggregate_user_cells`` at Delta = 1024 over
the NYC bounds. Reported: wall time of the aggregation (Spark: session start-up
separately, then a first and a second run), peak resident memory of the whole process
tree (sampled from /proc every 0.1 s; the JVM included for Spark) and the process's own
``ru_maxrss``, and whether the two engines' sums are bit-identical.

Writes ``benchmarks/results/engines.json`` and ``benchmarks/results/engines.png``.
Run: ``python benchmarks/bench_engines.py`` (``--users``/``--checkins`` to resize,
``--skip-spark`` without Spark).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("/tmp/privot_bench")
BOUNDS = (-74.26, -73.70, 40.48, 40.92)  # public NYC box (covers the Gowalla extract)
RESOLUTION = 1024
CHUNK_SIZE = 1_000_000
SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "3g",
    "spark.sql.shuffle.partitions": "16",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


# -- data --------------------------------------------------------------------------------


def make_data(path: Path, users: int, checkins: int, seed: int = 0) -> dict:
    """Resample Gowalla NYC users into ``users`` users with exactly ``checkins`` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from privot.datasets import load_gowalla_nyc

    rng = np.random.default_rng(seed)
    real = load_gowalla_nyc().sort_values(["user_id", "time"], kind="stable")
    real = real.reset_index(drop=True)
    _, starts, sizes = np.unique(real["user_id"].to_numpy(), return_index=True,
                                 return_counts=True)
    src = rng.integers(0, sizes.size, size=users)  # real user copied by each new user
    n = sizes[src]
    total = int(n.sum())
    if not users <= checkins <= total:
        raise ValueError(f"cannot make {checkins} check-ins from {users} resampled users "
                         f"holding {total}")
    group = np.repeat(np.arange(users), n)
    first = np.cumsum(n) - n
    within = np.arange(total) - np.repeat(first, n)
    rows = np.repeat(starts[src], n) + within  # row of the real data, per copied row
    # random order inside each user: position 0 is always kept, then a uniform subset
    order = np.lexsort((rng.random(total), group))
    rows = rows[order]
    extra = np.flatnonzero(within > 0)  # positions >= 1 (group order is unchanged)
    keep = within == 0
    keep[rng.choice(extra, size=checkins - users, replace=False)] = True
    rows, group = rows[keep], group[keep]
    shuffle = rng.permutation(checkins)
    rows, group = rows[shuffle], group[shuffle]
    new_ids = rng.permutation(users).astype(np.int64) + 10_000_000  # fresh ids
    table = pa.table({
        "user_id": new_ids[group],
        "time": pa.array(real["time"].to_numpy()[rows]),
        "latitude": real["latitude"].to_numpy()[rows],
        "longitude": real["longitude"].to_numpy()[rows],
        "location_id": real["location_id"].to_numpy()[rows],
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=1_000_000)
    return {"users": users, "checkins": checkins, "real_users": int(sizes.size),
            "real_checkins": int(len(real)), "seed": seed,
            "file_mb": round(path.stat().st_size / 2**20, 1)}


# -- workers (run in a subprocess) -------------------------------------------------------


def _grid():
    from privot.heatmaps.grid import Grid

    return Grid(bounds=BOUNDS, resolution=RESOLUTION)


def worker_local(path: str, out: str) -> dict:
    from privot.engines import aggregate_user_cells

    t0 = time.perf_counter()
    cs = aggregate_user_cells(path, grid=_grid(), engine="local", chunk_size=CHUNK_SIZE)
    wall = time.perf_counter() - t0
    np.save(out, cs.sums)
    return {"wall_s": wall, "n_users": cs.n_users, "n_points": cs.n_points,
            "n_outside": cs.n_outside, "n_users_empty": cs.n_users_empty,
            "cells_occupied": int(np.count_nonzero(cs.sums))}


def worker_spark(path: str, out: str) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter() - t0
    from privot.engines import aggregate_user_cells

    walls = []
    for _ in range(2):
        t0 = time.perf_counter()
        cs = aggregate_user_cells(path, grid=_grid(), engine="spark", spark=spark)
        walls.append(time.perf_counter() - t0)
    np.save(out, cs.sums)
    spark.stop()
    return {"startup_s": start, "wall_s": walls[0], "wall_second_run_s": walls[1],
            "n_users": cs.n_users, "n_points": cs.n_points, "n_outside": cs.n_outside,
            "n_users_empty": cs.n_users_empty,
            "cells_occupied": int(np.count_nonzero(cs.sums)),
            "pyspark": __import__("pyspark").__version__, "conf": SPARK_CONF}


# -- driver ------------------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ppid, pages = int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def run_worker(kind: str, path: Path) -> dict:
    out = DATA / f"sums_{kind}.npy"
    load_before = os.getloadavg()[0]  # other work on the machine skews the timings
    cmd = [sys.executable, __file__, "--worker", kind, "--path", str(path),
           "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def poll():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.1)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    stdout, stderr = proc.communicate()
    thread.join()
    if proc.returncode:
        raise RuntimeError(f"{kind} worker failed:\n{stderr[-4000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_tree_rss_mb"] = round(peak[0] / 2**20, 1)
    result["load_avg_1min_before"] = load_before
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}


def plot(report: dict, sums: np.ndarray) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = report["engines"]
    labels, walls, colors = ["local"], [runs["local"]["wall_s"]], ["tab:blue"]
    if "spark" in runs:
        labels += ["spark\n(1st run)", "spark\n(2nd run)"]
        walls += [runs["spark"]["wall_s"], runs["spark"]["wall_second_run_s"]]
        colors += ["tab:orange", "navajowhite"]
    engines = [e for e in ("local", "spark") if e in runs]
    mems = [runs[e]["peak_tree_rss_mb"] / 1024 for e in engines]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    axes[0].bar(labels, walls, color=colors)
    axes[0].axhline(60, ls="--", c="grey", lw=1)
    axes[0].set_ylabel("wall time of the aggregation (s)")
    axes[0].set_title("time (dashed: 60 s target for local)")
    axes[1].bar(engines, mems, color=colors[:len(engines)])
    axes[1].axhline(2, ls="--", c="grey", lw=1)
    axes[1].set_ylabel("peak resident memory, process tree (GiB)")
    axes[1].set_title("memory incl. the JVM (dashed: 2 GiB target for local)")
    for ax, vals in ((axes[0], walls), (axes[1], mems)):
        for i, v in enumerate(vals):
            ax.text(i, v, f"{v:.1f}", ha="center", va="bottom")
    shown = np.where(sums > 0, sums, np.nan)
    img = axes[2].imshow(np.log10(shown), origin="lower", cmap="viridis",
                         extent=(BOUNDS[0], BOUNDS[1], BOUNDS[2], BOUNDS[3]))
    axes[2].set_facecolor("black")
    axes[2].set_title(f"log10 cell sums, Delta={RESOLUTION} (exact, NOT private)")
    fig.colorbar(img, ax=axes[2], shrink=0.8)
    d = report["data"]
    same = report.get("bit_identical")
    fig.suptitle(f"privot engines: per-user cell sums of {d['checkins']:,} check-ins by "
                 f"{d['users']:,} users (resampled Gowalla NYC), {report['cpu_count']} cores"
                 + ("" if same is None else f"; local and Spark bit-identical: {same}"))
    fig.tight_layout()
    fig.savefig(RESULTS / "engines.png", dpi=110)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--checkins", type=int, default=10_000_000)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--worker", choices=["local", "spark"])
    parser.add_argument("--path")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.worker:
        fn = worker_local if args.worker == "local" else worker_spark
        result = fn(args.path, args.out)
        result["ru_maxrss_mb"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(result))
        return result

    path = DATA / f"gowalla_resampled_{args.users}u_{args.checkins}c.parquet"
    meta_path = path.with_suffix(".json")
    if not (path.exists() and meta_path.exists()):
        t0 = time.perf_counter()
        meta = make_data(path, args.users, args.checkins)
        meta["generate_s"] = round(time.perf_counter() - t0, 1)
        meta_path.write_text(json.dumps(meta))
    data = json.loads(meta_path.read_text())
    data["path"] = str(path)
    report = {"resolution": RESOLUTION, "bounds": BOUNDS, "chunk_size": CHUNK_SIZE,
              "cpu_count": os.cpu_count(), "data": data, "engines": {}}
    report["engines"]["local"] = run_worker("local", path)
    print("local:", report["engines"]["local"], flush=True)
    sums = np.load(DATA / "sums_local.npy")
    if not args.skip_spark:
        report["engines"]["spark"] = run_worker("spark", path)
        print("spark:", report["engines"]["spark"], flush=True)
        spark_sums = np.load(DATA / "sums_spark.npy")
        report["bit_identical"] = bool(np.array_equal(sums, spark_sums))
    report["targets"] = {"local_wall_s_below_60": report["engines"]["local"]["wall_s"] < 60,
                         "local_peak_below_2_gib":
                             report["engines"]["local"]["peak_tree_rss_mb"] < 2048}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engines.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, sums)
    return report


if __name__ == "__main__":
    main()
