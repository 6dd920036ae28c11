"""Time, peak memory and bytes written of a heatmap release + its files, before/after.

``before``: the files ``privot heatmap`` wrote until now (``distribution.npy``,
dense ``distribution.csv``, ``heatmap.npy``, a full-resolution ``heatmap.png``,
``release.json``), re-implemented here as the CLI had them. ``after``:
:meth:`privot.heatmaps.HeatmapResult.save`, what the CLI writes now (compressed ``.npz``
and no dense CSV from Delta = 2048, the block long table, GeoJSON, GeoTIFF, a PNG drawn
from at most 1024 x 1024 cells).

Each (mode, Delta) runs twice, each time in a fresh process: once timed (and its
``ru_maxrss``, which includes about 0.45 GiB of imported libraries), once under
``tracemalloc`` for the traced peak (numpy's buffers are traced; matplotlib's C++ render
buffers are not). The
input: 20,000 users with one point each, a hub of 60% and five of 8%
(the issue's map), the pyramid release at epsilon = 1, seeded. Also records what the
memory check answers for Delta = 16384 on this machine.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_heatmap_outputs.py`` (about 8
minutes on 2 cores); writes ``benchmarks/results/heatmap_outputs.json`` and ``.png``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESOLUTIONS = (256, 1024, 4096)
MODES = ("before", "after")
N_USERS = 20_000


def _points():
    import numpy as np

    rng = np.random.default_rng(0)
    hubs = [(0.5, 0.5, 0.60), (0.15, 0.2, 0.08), (0.85, 0.2, 0.08), (0.15, 0.8, 0.08),
            (0.85, 0.8, 0.08), (0.5, 0.9, 0.08)]
    which = rng.choice(len(hubs), size=N_USERS, p=[w for *_, w in hubs])
    x = np.array([hubs[i][0] for i in which]) + rng.normal(0, 0.03, N_USERS)
    y = np.array([hubs[i][1] for i in which]) + rng.normal(0, 0.03, N_USERS)
    return np.arange(N_USERS), 10 + 2 * np.clip(x, 0, 0.999), 40 + 2 * np.clip(y, 0, 0.999)


def _save_before(result, folder: Path) -> None:
    """The CLI's writer before this change (privot/cli/heatmap.py, _write_png)."""
    import numpy as np
    from matplotlib.figure import Figure

    np.save(folder / "distribution.npy", result.distribution)
    np.savetxt(folder / "distribution.csv", result.distribution, delimiter=",", fmt="%.9g")
    np.save(folder / "heatmap.npy", result.heatmap)
    grid = result.grid
    fig = Figure(figsize=(6, 5.4), layout="constrained")
    ax = fig.subplots()
    x0, x1, y0, y1 = grid.bounds
    extent = (x0, x0 + grid.cell_width * grid.resolution,
              y0, y0 + grid.cell_height * grid.resolution)
    im = ax.imshow(result.heatmap, origin="lower", extent=extent, cmap="inferno",
                   interpolation="nearest")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    fig.colorbar(im, ax=ax, shrink=0.8, label="heat")
    fig.savefig(folder / "heatmap.png", dpi=120, bbox_inches="tight")
    (folder / "release.json").write_text(json.dumps(result.release_dict(), indent=2))


def child(mode: str, resolution: int, trace: bool) -> dict:
    """One measurement (run in a fresh process): times without tracemalloc (it slows
    every Python allocation, matplotlib's and savetxt's most), or the traced peak."""
    import resource
    import time
    import tracemalloc

    import numpy as np

    from privot.heatmaps import Grid, private_heatmap

    user, x, y = _points()
    grid = Grid((10.0, 12.0, 40.0, 42.0), resolution)
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    result = private_heatmap(user=user, x=x, y=y, grid=grid, epsilon=1.0,
                             rng=np.random.default_rng(1))
    t1 = time.perf_counter()
    _, peak_release = tracemalloc.get_traced_memory()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        notes: list[str] = []
        if mode == "before":
            _save_before(result, folder)
        else:
            notes = result.save(folder)["notes"]
        t2 = time.perf_counter()
        _, peak = tracemalloc.get_traced_memory()
        if trace:
            tracemalloc.stop()
        files = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    dense = 8 * resolution**2
    if trace:
        return {"peak_traced_bytes_release": peak_release, "peak_traced_bytes": peak,
                "peak_traced_dense_copies": peak / dense}
    return {"mode": mode, "resolution": resolution, "release_s": t1 - t0,
            "save_s": t2 - t1, "total_s": t2 - t0, "max_rss_bytes": rss,
            "max_rss_dense_copies": rss / dense,
            "bytes_written": sum(files.values()), "files": files, "notes": notes,
            "n_cells_positive": int(np.count_nonzero(result.distribution))}


def main() -> None:
    if len(sys.argv) == 4:  # child
        print(json.dumps(child(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "trace")))
        return
    from privot.errors import InvalidParameterError
    from privot.heatmaps.outputs import MEMORY_COPIES, check_memory, memory_limit

    runs = []
    for resolution in RESOLUTIONS:
        for mode in MODES:
            run = {}
            for trace in ("time", "trace"):
                out = subprocess.run([sys.executable, __file__, mode, str(resolution), trace],
                                     check=True, capture_output=True, text=True,
                                     env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
                run.update(json.loads(out.stdout.strip().splitlines()[-1]))
            runs.append(run)
            print(f"{mode:6s} Delta={resolution:5d}: release {run['release_s']:.2f} s, save "
                  f"{run['save_s']:.2f} s, traced peak {run['peak_traced_bytes'] / 2**20:.0f} "
                  f"MiB ({run['peak_traced_dense_copies']:.1f} dense copies), max RSS "
                  f"{run['max_rss_bytes'] / 2**20:.0f} MiB, wrote "
                  f"{run['bytes_written'] / 2**20:.2f} MiB", flush=True)
    checks = {}
    for resolution in (4096, 8192, 16384):
        try:
            need = check_memory(resolution)
            checks[str(resolution)] = {"refused": False, "estimate_bytes": need}
        except InvalidParameterError as exc:
            checks[str(resolution)] = {"refused": True, "message": str(exc)}
    body = {"benchmark": "heatmap_outputs", "machine": platform.platform(),
            "cpus": os.cpu_count(), "n_users": N_USERS, "method": "pyramid",
            "epsilon": 1.0, "memory_copies_assumed": MEMORY_COPIES,
            "memory_limit_bytes": memory_limit(), "memory_check": checks, "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "heatmap_outputs.json").write_text(json.dumps(body, indent=2) + "\n")
    _figure(runs)
    print(json.dumps(checks, indent=2))


def _figure(runs: list[dict]) -> None:
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    axes = fig.subplots(1, 3)
    width = 0.38
    xs = np.arange(len(RESOLUTIONS))
    panels = (("bytes_written", "bytes written (MiB)", 2**20),
              ("peak_traced_bytes", "traced peak memory (MiB)", 2**20),
              ("total_s", "release + save (s)", 1.0))
    for ax, (key, label, unit) in zip(axes, panels, strict=True):
        for j, mode in enumerate(MODES):
            vals = [next(r[key] for r in runs if r["mode"] == mode and r["resolution"] == d)
                    / unit for d in RESOLUTIONS]
            ax.bar(xs + (j - 0.5) * width, vals, width, label=mode)
        ax.set_xticks(xs, [str(d) for d in RESOLUTIONS])
        ax.set_xlabel("Delta")
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.suptitle("privot heatmap: files before / after (pyramid, 20,000 users)", fontsize=10)
    fig.savefig(RESULTS / "heatmap_outputs.png", dpi=110)


if __name__ == "__main__":
    main()
