"""Benchmark of the engines' data-touching steps: DuckDB (default), Spark, and the retired
pandas-chunk local engine.

Data: 10^6 synthetic users with exactly 10^7 check-ins (``--checkins`` for 10^8), made
by resampling users of the real Gowalla NYC check-ins: each synthetic user (new id)
copies a real user drawn with replacement and keeps a random non-empty subset of that
user's check-ins, drawn so that the total is exact (beyond the real users' 138,957
check-ins the subsets are drawn with replacement: a user's check-in may repeat). Rows
are shuffled (no user locality) and written under /tmp (never in the repo) as Parquet
and as gzip CSV, with the Gowalla columns (user_id, time, latitude, longitude,
location_id).

Steps, each run in its own subprocess, one at a time:

* heatmap: ``aggregate_user_cells`` over the NYC bounds at Delta = 256 and 1024, from
  Parquet and from gzip CSV;
* coreset: ``coreset_leaf_counts`` of the 10^7 (longitude, latitude) points in the
  public NYC box at depth 22 (``MAX_DEPTH``), four groups (``user_id % 4``), Parquet;
  DuckDB runs the pure-SQL box step (the default for box bounds), ``duckdb-rowfn`` the
  numpy row function that ball bounds use, on the same box.

Engines: ``duckdb`` (privot.engines.duckdb), ``spark`` (local[*], session start-up
timed apart), ``local-old``: the pandas-chunk engine retired in issue 9, loaded from the
git history (commit :data:`LEGACY_COMMIT`) into a temporary package. Reported: wall
time of the step, peak resident memory of the whole process tree (sampled from /proc
every 0.05 s; the JVM included for Spark) and the worker's own ``ru_maxrss``, and
whether every engine's result is bit-identical to DuckDB's.

Writes ``benchmarks/results/engines.json`` and ``benchmarks/results/engines.png``.
Run: ``python benchmarks/bench_engines.py`` (``--checkins 100000000`` for 10^8,
``--skip-spark``, ``--skip-old``, ``--only heatmap|coreset``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("/tmp/privot_bench")
BOUNDS = (-74.26, -73.70, 40.48, 40.92)  # public NYC box (covers the Gowalla extract)
DEPTH = 22
#: The last commit with the pandas-chunk local engine (privot/engines/local.py).
LEGACY_COMMIT = "7f833a32e2048b6c9010d960398d3f11b9f84048"
LEGACY_FILES = ("base", "local", "heatmap", "coreset")
SPARK_CONF = {
    "spark.master": "local[*]",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "16",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


# -- data --------------------------------------------------------------------------------


def make_data(stem: Path, users: int, checkins: int, seed: int = 0) -> dict:
    """Resample Gowalla NYC users into ``users`` users with exactly ``checkins`` rows."""
    import duckdb
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
    # each new user keeps 1 + Binomial-like extra rows drawn from its real user's rows
    extra = rng.multinomial(checkins - users, n / n.sum())
    count = 1 + extra
    group = np.repeat(np.arange(users), count)
    pick = rng.integers(0, np.repeat(n, count))  # a row of the copied user
    rows = np.repeat(starts[src], count) + pick
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
    del rows, group, pick
    stem.parent.mkdir(parents=True, exist_ok=True)
    parquet = stem.with_suffix(".parquet")
    pq.write_table(table, parquet, row_group_size=1_000_000)
    del table
    csv = stem.with_suffix(".csv.gz")
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * FROM read_parquet('{parquet}')) TO '{csv}' "
                    "(HEADER, DELIMITER ',', COMPRESSION gzip)")
    return {"users": users, "checkins": checkins, "real_users": int(sizes.size),
            "real_checkins": int(len(real)), "seed": seed,
            "parquet_mb": round(parquet.stat().st_size / 2**20, 1),
            "csv_gz_mb": round(csv.stat().st_size / 2**20, 1)}


# -- the retired engine, from the git history ----------------------------------------------


def legacy_engines() -> object:
    """The pandas-chunk engine of :data:`LEGACY_COMMIT` as a temporary package."""
    import importlib

    root = Path(tempfile.mkdtemp(prefix="privot_legacy_"))
    pkg = root / "privot_legacy_engines"
    pkg.mkdir()
    repo = Path(__file__).resolve().parent.parent
    for name in LEGACY_FILES:
        text = subprocess.run(
            ["git", "-C", str(repo), "show", f"{LEGACY_COMMIT}:src/privot/engines/{name}.py"],
            capture_output=True, text=True, check=True).stdout
        (pkg / f"{name}.py").write_text(text.replace("privot.engines", "privot_legacy_engines"))
    (pkg / "__init__.py").write_text(
        "from privot_legacy_engines.local import LocalBackend\n\n"
        "def get_backend(engine='local', *, chunk_size=1_000_000, spark=None):\n"
        "    return LocalBackend(chunk_size=chunk_size)\n")
    sys.path.insert(0, str(root))
    return importlib.import_module("privot_legacy_engines")


# -- workers (run in a subprocess) -------------------------------------------------------


def _grid(resolution: int):
    from privot.grid import Grid

    return Grid(bounds=BOUNDS, resolution=resolution)


def _box():
    from privot.barycenters.geometry import PublicBounds

    return PublicBounds.box([BOUNDS[0], BOUNDS[2]], [BOUNDS[1], BOUNDS[3]])


def _spark_session() -> tuple[object, float]:
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
    return spark, time.perf_counter() - t0


def worker_heatmap(engine: str, path: str, resolution: int, out: str) -> dict:
    extra: dict = {}
    grid = _grid(resolution)
    if engine == "local-old":
        legacy = legacy_engines()
        from privot_legacy_engines.heatmap import aggregate_user_cells as old

        def run():
            return old(path, grid=grid, engine=legacy.get_backend(), chunk_size=1_000_000)
    else:
        from privot.heatmaps.engine_step import aggregate_user_cells

        spark = None
        if engine == "spark":
            spark, extra["startup_s"] = _spark_session()

        def run():
            return aggregate_user_cells(path, grid=grid, engine=engine, spark=spark)
    t0 = time.perf_counter()
    cs = run()
    wall = time.perf_counter() - t0
    np.save(out, cs.sums)
    return {"wall_s": wall, "n_users": cs.n_users, "n_points": cs.n_points,
            "n_outside": cs.n_outside, "n_users_empty": cs.n_users_empty,
            "cells_occupied": int(np.count_nonzero(cs.sums)), **extra}


def worker_gunzip(path: str) -> dict:
    """The floor of any gzip CSV reader: inflating the one gzip stream (Python's zlib,
    16 MiB reads, nothing parsed). A single gzip stream cannot be inflated in parallel."""
    import gzip

    t0 = time.perf_counter()
    size = 0
    with gzip.open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            size += len(block)
    return {"wall_s": time.perf_counter() - t0, "inflated_mb": round(size / 2**20, 1)}


def worker_coreset(engine: str, path: str, out: str) -> dict:
    extra: dict = {}
    bounds = _box()
    if engine == "local-old":
        legacy = legacy_engines()
        from privot_legacy_engines.coreset import coreset_leaf_counts as old

        def run():
            return old(path, bounds=bounds, depth=DEPTH, backend=legacy.get_backend(),
                       coordinate_columns=["longitude", "latitude"],
                       group_column="g")
    else:
        from privot.barycenters.engine_step import coreset_leaf_counts

        spark = None
        if engine == "spark":
            spark, extra["startup_s"] = _spark_session()
        # "duckdb-rowfn": the numpy row function (what ball bounds use) on the box
        step = "row_function" if engine.endswith("-rowfn") else "auto"
        backend = engine.removesuffix("-rowfn")

        def run():
            return coreset_leaf_counts(path, bounds=bounds, depth=DEPTH,
                                       coordinate_columns=["longitude", "latitude"],
                                       group_column="g", engine=backend, spark=spark,
                                       leaf_step=step)
    t0 = time.perf_counter()
    res = run()
    wall = time.perf_counter() - t0
    counts = {int(g): v for g, v in res.counts.items()}
    np.savez(out, **{f"ids_{g}": v[0] for g, v in counts.items()},
             **{f"cnt_{g}": v[1] for g, v in counts.items()})
    return {"wall_s": wall, "groups": len(counts),
            "leaves": int(sum(len(v[0]) for v in counts.values())), **extra}


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


def run_worker(args: list[str], timeout: float) -> dict:
    load_before = os.getloadavg()[0]  # other work on the machine skews the timings
    cmd = [sys.executable, __file__, "--worker", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def poll():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s"}
    thread.join()
    if proc.returncode:
        return {"error": stderr.strip().splitlines()[-1][:300] if stderr.strip() else
                f"exit {proc.returncode}"}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_tree_rss_mb"] = round(peak[0] / 2**20, 1)
    result["load_avg_1min_before"] = load_before
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}


def _same_heatmap(a: Path, b: Path) -> bool:
    return bool(np.array_equal(np.load(a), np.load(b)))


def _same_coreset(a: Path, b: Path) -> bool:
    x, y = np.load(a), np.load(b)
    return sorted(x.files) == sorted(y.files) and all(
        np.array_equal(x[f], y[f]) for f in x.files)


def plot(report: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"duckdb": "tab:blue", "duckdb-rowfn": "tab:cyan", "local-old": "tab:grey",
              "spark": "tab:orange"}
    cases = [(k, v) for k, v in report["runs"].items()]
    fig, axes = plt.subplots(1, 2, figsize=(16, 5.5))
    labels = [k for k, _ in cases]
    for ax, key, unit, title in (
            (axes[0], "wall_s", 1.0, "wall time of the step (s)"),
            (axes[1], "peak_tree_rss_mb", 1024.0, "peak resident memory, process tree (GiB)")):
        vals = [v.get(key, np.nan) / unit for _, v in cases]
        cols = [colors.get(k.split(" | ")[0], "k") for k, _ in cases]
        ax.barh(range(len(cases)), vals, color=cols)
        ax.set_yticks(range(len(cases)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(title)
        for i, v in enumerate(vals):
            if np.isfinite(v):
                ax.text(v, i, f" {v:.1f}", va="center", fontsize=8)
    axes[0].axvline(5, ls="--", c="grey", lw=1)
    axes[1].axvline(1, ls="--", c="grey", lw=1)
    d = report["data"]
    fig.suptitle(f"privot engines: {d['checkins']:,} check-ins of {d['users']:,} users "
                 f"(resampled Gowalla NYC), {report['cpu_count']} cores; dashed: the "
                 "10^7 targets (5 s, 1 GiB)")
    fig.tight_layout()
    fig.savefig(RESULTS / "engines.png", dpi=110)



def _run_and_compare(report: dict, name: str, argv: list[str], timeout: float, out: Path,
                     ref: Path | None, same) -> Path | None:
    """Run one worker, record it, and compare its output with the first engine's;
    returns the reference output (this one if it is the first to succeed)."""
    res = run_worker(argv, timeout)
    report["runs"][name] = res
    print(name, res, flush=True)
    if "error" in res:
        return ref
    if ref is None:
        return out
    report["bit_identical"][name] = same(ref, out)
    return ref

def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--checkins", type=int, default=10_000_000)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-old", action="store_true")
    parser.add_argument("--only", choices=["heatmap", "coreset"])
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--worker", nargs="+")
    args = parser.parse_args(argv)
    if args.worker:
        step, engine, path, *rest = args.worker
        if step == "heatmap":
            result = worker_heatmap(engine, path, int(rest[0]), rest[1])
        elif step == "gunzip":
            result = worker_gunzip(path)
        else:
            result = worker_coreset(engine, path, rest[0])
        result["ru_maxrss_mb"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(result))
        return result

    stem = DATA / f"gowalla_resampled_{args.users}u_{args.checkins}c"
    meta_path = stem.with_suffix(".json")
    if not meta_path.exists():
        t0 = time.perf_counter()
        meta = make_data(stem, args.users, args.checkins)
        meta["generate_s"] = round(time.perf_counter() - t0, 1)
        meta_path.write_text(json.dumps(meta))
    data = json.loads(meta_path.read_text())
    engines = ["duckdb"] + ([] if args.skip_old else ["local-old"]) + (
        [] if args.skip_spark else ["spark"])
    suffix = "" if args.checkins == 10_000_000 else f"_{args.checkins:.0e}".replace("+", "")
    out_json = RESULTS / f"engines{suffix}.json"
    report = {"cpu_count": os.cpu_count(), "data": data, "bounds": BOUNDS,
              "legacy_commit": LEGACY_COMMIT, "runs": {}, "bit_identical": {}}
    if out_json.exists():  # keep the runs of the other step
        old = json.loads(out_json.read_text())
        if (old.get("legacy_commit") == LEGACY_COMMIT
                and old.get("data", {}).get("checkins") == args.checkins):
            report["runs"] = old.get("runs", {})
            report["bit_identical"] = old.get("bit_identical", {})
    if args.only != "coreset":
        gz = stem.with_suffix(".csv.gz")
        report["runs"]["gunzip only (floor) | csv.gz"] = run_worker(
            ["gunzip", "-", str(gz)], args.timeout)
        for resolution in (256, 1024):
            for fmt in ("parquet", "csv.gz"):
                path = stem.with_suffix("." + fmt)
                ref = None
                for engine in engines:
                    name = f"{engine} | heatmap D={resolution} {fmt}"
                    out = DATA / f"heatmap_{engine}_{resolution}_{fmt}.npy"
                    ref = _run_and_compare(report, name, ["heatmap", engine, str(path),
                                                          str(resolution), str(out)],
                                           args.timeout, out, ref, _same_heatmap)
    if args.only != "heatmap":
        path = DATA / f"points_{args.checkins}.parquet"
        if not path.exists():
            import duckdb

            with duckdb.connect() as con:
                con.execute(
                    "COPY (SELECT user_id % 4 AS g, longitude, latitude FROM read_parquet("
                    f"'{stem.with_suffix('.parquet')}')) TO '{path}' (FORMAT parquet)")
        ref = None
        for engine in ["duckdb", "duckdb-rowfn", *engines[1:]]:
            name = f"{engine} | coreset depth {DEPTH} parquet"
            out = DATA / f"coreset_{engine}.npz"
            ref = _run_and_compare(report, name, ["coreset", engine, str(path), str(out)],
                                   args.timeout, out, ref, _same_coreset)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(report, indent=2) + "\n")
    if not suffix:
        plot(report)
    return report


if __name__ == "__main__":
    main()
