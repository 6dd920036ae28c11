"""Speed and agreement of the exact grid EMD (paper 002, Sec. 2.1 / Sec. 4 "EMD").

:func:`privot.evaluation.heatmaps.grid_emd` solves the L1-ground-cost EMD as a min-cost flow
on the 4-neighbour grid graph (about 4 Delta^2 arcs). This benchmark times it at
Delta = 32, 64, 128, 256 with both solvers it offers (POT's sparse network simplex, the
default, and SciPy's HiGHS dual simplex), next to POT's dense ``ot.emd2`` on the full
Delta^2 x Delta^2 cityblock cost matrix for Delta <= 64 (the baseline a user would write;
at Delta = 128 the matrix alone is 2 GiB), and records how far apart the values are and
the certified primal/dual gap.

Two input families, each a true heatmap of a few hundred points (clusters plus a uniform
background) on the unit square against an estimate:

* ``points-vs-smoothed``: the estimate is the same histogram Gaussian-smoothed with a
  width of 1/64 of the side (sparse against dense-ish; the realistic evaluation case);
* ``points-vs-laplace``: the estimate is the histogram plus Laplace(1) noise in every
  cell, clipped at zero (the paper's Laplace baseline at epsilon = 1): noise everywhere,
  the solver's hardest case. The noise here is synthetic benchmark input from numpy, not
  a privacy release.

Writes ``benchmarks/results/grid_emd.json`` and ``benchmarks/results/grid_emd.png``.
Run: ``python benchmarks/bench_grid_emd.py``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import ot
import scipy
from scipy.ndimage import gaussian_filter
from scipy.spatial.distance import cdist

from privot.evaluation.heatmaps import _grid_emd_bounds, grid_emd

RESULTS = Path(__file__).resolve().parent / "results"
DELTAS = (32, 64, 128, 256)
POT_DENSE_MAX_DELTA = 64
HIGHS_MAX_DELTA = {"points-vs-smoothed": 256, "points-vs-laplace": 128}
N_POINTS = 300
SEED = 20240611


def _points(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points in [0, 1)^2: six Gaussian clusters and a 20% uniform background."""
    centres = rng.uniform(0.15, 0.85, size=(6, 2))
    n_bg = n // 5
    clustered = centres[rng.integers(0, 6, n - n_bg)] + rng.normal(0, 0.04, (n - n_bg, 2))
    pts = np.vstack([clustered, rng.uniform(0, 1, (n_bg, 2))])
    return np.clip(pts, 0.0, np.nextafter(1.0, 0.0))


def _inputs(family: str, delta: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pts = _points(rng, N_POINTS)
    true = np.zeros((delta, delta))
    np.add.at(true, ((pts[:, 1] * delta).astype(int), (pts[:, 0] * delta).astype(int)), 1.0)
    if family == "points-vs-smoothed":
        estimate = gaussian_filter(true, sigma=delta / 64)
    else:
        estimate = np.maximum(true + rng.laplace(0.0, 1.0, size=true.shape), 0.0)
    return true, estimate


def _pot_dense(true: np.ndarray, estimate: np.ndarray) -> float:
    d = true.shape[0]
    xs, ys = np.meshgrid(np.arange(d) / d, np.arange(d) / d)
    centres = np.column_stack([xs.ravel(), ys.ravel()])
    cost = cdist(centres, centres, metric="cityblock")
    return float(ot.emd2(true.ravel() / true.sum(), estimate.ravel() / estimate.sum(), cost,
                         numItermax=10**9))


def _time(fn, repeats: int) -> tuple[float, list[float]]:
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, times


def _repeats(delta: int, family: str) -> int:
    if delta <= 64:
        return 5
    return 3 if (delta == 128 or family == "points-vs-smoothed") else 1


def main() -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for family in ("points-vs-smoothed", "points-vs-laplace"):
        for delta in DELTAS:
            true, estimate = _inputs(family, delta, SEED + delta)
            reps = _repeats(delta, family)
            value, times = _time(lambda t=true, e=estimate: grid_emd(t, e), reps)
            tn, en = true / true.sum(), estimate / estimate.sum()
            lower, upper = _grid_emd_bounds(  # noqa: SLF001 - benchmark-only diagnostics
                tn, en, 1 / delta, 1 / delta, "network-simplex", 10**9)
            row = {"family": family, "delta": delta, "nonzero_true": int(np.count_nonzero(true)),
                   "nonzero_estimate": int(np.count_nonzero(estimate)),
                   "emd": value, "certified_gap_rel": (upper - lower) / upper,
                   "network_simplex_seconds": float(np.median(times)),
                   "network_simplex_all_seconds": times}
            if delta <= HIGHS_MAX_DELTA[family]:
                v, t = _time(lambda t=true, e=estimate: grid_emd(t, e, method="highs"),
                             1 if delta >= 128 else 3)
                row |= {"highs_seconds": float(np.median(t)),
                        "highs_rel_diff": abs(v - value) / value}
            if delta <= POT_DENSE_MAX_DELTA:
                v, t = _time(lambda t=true, e=estimate: _pot_dense(t, e), 1 if delta == 64 else 3)
                row |= {"pot_dense_seconds": float(np.median(t)),
                        "pot_dense_rel_diff": abs(v - value) / value}
            rows.append(row)
            extra = "".join(f"  {k}={row[k]:.3g}" for k in (
                "highs_seconds", "highs_rel_diff", "pot_dense_seconds", "pot_dense_rel_diff")
                if k in row)
            print(f"{family:19s} Delta={delta:3d} emd={value:.6f} "
                  f"network-simplex={row['network_simplex_seconds']:.3f}s "
                  f"gap={row['certified_gap_rel']:.1e}{extra}", flush=True)

    out = {"setting": {"deltas": list(DELTAS), "n_points": N_POINTS, "seed": SEED,
                       "smoothing_sigma_cells": "delta / 64", "laplace_scale": 1.0,
                       "cell": "1/delta (unit square)"},
           "environment": {"python": platform.python_version(), "numpy": np.__version__,
                           "scipy": scipy.__version__, "pot": ot.__version__,
                           "machine": platform.machine(), "cpus": os.cpu_count()},
           "results": rows}
    (RESULTS / "grid_emd.json").write_text(json.dumps(out, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    styles = {"points-vs-smoothed": "-", "points-vs-laplace": "--"}
    for family, ls in styles.items():
        sel = [r for r in rows if r["family"] == family]
        for key, label, colour in [("network_simplex_seconds", "grid_emd (network simplex)", "C0"),
                                   ("highs_seconds", "grid_emd (HiGHS)", "C1"),
                                   ("pot_dense_seconds", "POT ot.emd2, dense cost", "C3")]:
            pts = [(r["delta"], r[key]) for r in sel if key in r]
            if pts:
                x, y = zip(*pts, strict=True)
                ax.plot(x, y, ls, color=colour, marker="o", ms=4, label=f"{label}, {family}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(DELTAS, [str(d) for d in DELTAS])
    ax.set_xlabel("grid side Delta (Delta^2 cells)")
    ax.set_ylabel("seconds")
    ax.set_title("Exact L1 EMD between heatmaps")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "grid_emd.png", dpi=120)
    return out


if __name__ == "__main__":
    main()
