"""Speed of the private-coreset barycenter against POT's non-private Sinkhorn barycenter.

Problem (real data): k = 4 groups, the four US census regions (Northeast, Midwest,
South, West), n = 2,000 people each drawn with replacement by population from the
continental US places of GeoNames (``privot.datasets.load_us_places``), 2-D
(longitude, latitude), public bounds lon [-125, -66] x lat [24, 50] mapped into the ball
of radius 1/2, m = 48 atoms, 50 outer x 100 inner iterations. A timing benchmark: epsilon
is stated on these rows (no ``population_size``, no amplification claimed), so drawing
with replacement is harmless here.

Timed in the same process, alternating, median of ``PAIRS`` pairs:

* ours: ``private_barycenter(method="coreset", epsilon=1, reg=0.002)`` end to end (the
  unit map, four eps-DP coresets restricted to ``continental_us()``, the Sinkhorn
  barycenter, its default ``polish`` exact step and final exact cost), and the same with
  ``polish=0`` and at ``reg=0.001``;
* POT: ``ot.bregman.free_support_sinkhorn_barycenter`` at reg = 0.002 on the raw
  (unit-mapped) groups, 48 pooled points as initial support (seeded).
  ``private_barycenter`` has no ``init`` argument: it seeds its own (k-means++ on the
  coreset), so the initial supports differ.

Also: privot's non-private ``free_support_barycenter`` at reg = 0.001 (the same init as
POT) against POT's exact ``ot.lp.free_support_barycenter`` (time and exact cost), and
the stage breakdown of the private run (``diagnostics``: coreset vs barycenter).
Target: time ratio ours / POT at reg = 0.002 <= 1.2; non-private at reg = 0.001 under
5 s with exact cost within 1% of POT's exact LP.

Seeded (``SEED``), so not for publication. Writes
``benchmarks/results/barycenter_speed.json`` and ``.png``.
Run: ``python benchmarks/bench_barycenter_speed.py`` (about 2 minutes; ``--quick`` for a
smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import ot

from privot.barycenters import PublicBounds, continental_us, private_barycenter
from privot.datasets import US_CENSUS_REGIONS, load_us_places
from privot.ot import barycenter_cost, free_support_barycenter
from privot.ot._barycenter import DEFAULT_POLISH

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_302
K, N, M = 4, 2000, 48
N_OUTER, N_INNER = 50, 100
REGIONS = ("Northeast", "Midwest", "South", "West")
BOUNDS = PublicBounds.box([-125.0, 24.0], [-66.0, 50.0])


def make_groups(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    df = load_us_places(continental=True)
    xy = df[["longitude", "latitude"]].to_numpy(float)
    pop = df["population"].to_numpy(float)
    region = df["state"].map(US_CENSUS_REGIONS).to_numpy()
    groups = []
    for name in REGIONS:
        idx = np.flatnonzero(region == name)
        w = pop[idx]
        groups.append(xy[idx[rng.choice(idx.size, size=n, p=w / w.sum())]])
    return groups


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    outdir = args.out_dir / "quick" if args.quick else args.out_dir
    outdir.mkdir(parents=True, exist_ok=True)
    pairs = 2 if args.quick else 7
    n = 500 if args.quick else N
    rng = np.random.default_rng(SEED)
    groups = make_groups(n, rng)
    units = [BOUNDS.to_unit(g)[0] for g in groups]
    pooled = np.concatenate(units)
    init = pooled[np.random.default_rng(SEED + 1).choice(pooled.shape[0], M, replace=False)]
    weights = [ot.unif(n)] * K
    region = continental_us()

    def ours(reg, polish=None, seed=0):
        return private_barycenter(groups, bounds=BOUNDS, m=M, epsilon=1.0, method="coreset",
                                  region=region, reg=reg, n_outer=N_OUTER, n_inner=N_INNER,
                                  polish=polish, rng=seed)

    def pot(reg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ot.bregman.free_support_sinkhorn_barycenter(
                units, weights, init.copy(), reg, numItermax=N_OUTER, numInnerItermax=N_INNER)

    ours(2e-3), pot(2e-3)  # warm-up (imports, caches)
    keys = ("ours_reg0.002", "pot_reg0.002", "ours_reg0.002_polish0", "ours_reg0.001",
            "ours_reg0.001_polish0")
    times: dict[str, list[float]] = {k: [] for k in keys}
    stages: dict[str, list[dict]] = {k: [] for k in keys if k.startswith("ours")}
    pot_support = None
    for i in range(pairs):
        for key in keys:
            if key.startswith("pot"):
                pot_support, t = _timed(lambda: pot(2e-3))
            else:
                reg = 2e-3 if "0.002" in key else 1e-3
                polish = 0 if key.endswith("polish0") else None
                res, t = _timed(lambda reg=reg, polish=polish, i=i: ours(reg, polish, seed=i))
                stages[key].append({"seconds_coreset": res.diagnostics["seconds_coreset"],
                                    "seconds_barycenter": res.diagnostics["seconds_barycenter"],
                                    "coreset_sizes": res.diagnostics["coreset_sizes"],
                                    "cost_unit_on_raw": float(barycenter_cost(
                                        units, BOUNDS.to_unit(res.support)[0]))})
            times[key].append(t)
    med = {k: float(np.median(v)) for k, v in times.items()}

    # non-private: ours at reg = 0.001 vs POT's exact LP (same init)
    np_fits, np_times = [], []
    for _ in range(3):
        fit, t = _timed(lambda: free_support_barycenter(units, init=init, reg=1e-3,
                                                        n_outer=N_OUTER, n_inner=N_INNER))
        np_fits.append(fit)
        np_times.append(t)
    lp_support, t_lp = _timed(lambda: ot.lp.free_support_barycenter(
        units, weights, init.copy(), numItermax=N_OUTER))
    lp_cost = float(barycenter_cost(units, np.asarray(lp_support)))
    pot_cost = float(barycenter_cost(units, np.asarray(pot_support)))
    ours_np_cost = np_fits[0].cost

    def stage_median(key, field):
        return float(np.median([s[field] for s in stages[key]]))

    res = {
        "problem": {"k": K, "n": n, "m": M, "d": 2, "n_outer": N_OUTER, "n_inner": N_INNER,
                    "data": "US census regions: people drawn with replacement by population "
                            "from GeoNames continental US places (real data, not blobs)",
                    "epsilon": 1.0, "region": "continental_us()",
                    "init": "POT and privot's non-private solver: 48 pooled points (seed "
                            "SEED+1); private_barycenter seeds its own k-means++ init on the "
                            "coreset (it has no init argument)"},
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "pot": ot.__version__, "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                    "note": "2 cores shared with other jobs during the run: ratios (same "
                            "process, alternating) are more reliable than absolute seconds"},
        "quick": bool(args.quick), "pairs": pairs, "default_polish": DEFAULT_POLISH,
        "seconds_all": times, "seconds_median": med,
        "stage_breakdown_median": {k: {"seconds_coreset": stage_median(k, "seconds_coreset"),
                                       "seconds_barycenter": stage_median(k,
                                                                          "seconds_barycenter")}
                                   for k in stages},
        "private_costs_unit_on_raw": {k: [s["cost_unit_on_raw"] for s in v]
                                      for k, v in stages.items()},
        "pot_sinkhorn_reg0.002_cost_unit": pot_cost,
        "nonprivate": {"ours_reg0.001_seconds_best": min(np_times),
                       "ours_reg0.001_seconds_all": np_times,
                       "ours_reg0.001_cost": ours_np_cost, "pot_exact_lp_seconds": t_lp,
                       "pot_exact_lp_cost": lp_cost},
        "targets": {
            "time_ratio_ours_over_pot_reg0.002": med["ours_reg0.002"] / med["pot_reg0.002"],
            "time_ratio_ours_polish0_over_pot_reg0.002": (med["ours_reg0.002_polish0"]
                                                          / med["pot_reg0.002"]),
            "time_ratio_ours_reg0.001_over_pot_reg0.002": (med["ours_reg0.001"]
                                                           / med["pot_reg0.002"]),
            "ratio_target": 1.2,
            "meets_ratio_target": med["ours_reg0.002"] / med["pot_reg0.002"] <= 1.2,
            "meets_ratio_target_polish0": (med["ours_reg0.002_polish0"] / med["pot_reg0.002"]
                                           <= 1.2),
            "nonprivate_reg0.001_under_5s": min(np_times) < 5.0,
            "nonprivate_reg0.001_cost_rel_gap_to_pot_lp": ours_np_cost / lp_cost - 1,
            "nonprivate_reg0.001_cost_within_1pct": ours_np_cost <= 1.01 * lp_cost,
        },
    }
    (outdir / "barycenter_speed.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res["targets"], indent=2))
    print(json.dumps(res["stage_breakdown_median"], indent=2))
    _plot(res, outdir)
    return res


def _plot(res, outdir) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    med = res["seconds_median"]
    st = res["stage_breakdown_median"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    names = ["ours reg=0.002", "ours reg=0.002\npolish=0", "ours reg=0.001",
             "ours reg=0.001\npolish=0", "POT sinkhorn\nreg=0.002 (non-private)"]
    keys = ["ours_reg0.002", "ours_reg0.002_polish0", "ours_reg0.001", "ours_reg0.001_polish0",
            "pot_reg0.002"]
    core = [st[k]["seconds_coreset"] if k in st else 0.0 for k in keys]
    bary = [st[k]["seconds_barycenter"] if k in st else med[k] for k in keys]
    other = [max(med[k] - c - b, 0.0) for k, c, b in zip(keys, core, bary, strict=True)]
    x = np.arange(len(keys))
    axes[0].bar(x, core, color="C1", label="private coresets")
    axes[0].bar(x, bary, bottom=core, color="C0", label="barycenter solver (or POT)")
    axes[0].bar(x, other, bottom=np.add(core, bary), color="0.6", label="other")
    for i, k in enumerate(keys):
        axes[0].text(i, med[k], f"{med[k]:.2f}s\n{med[k] / med['pot_reg0.002']:.2f}x",
                     ha="center", va="bottom", fontsize=8)
    axes[0].set_ylim(0, 1.25 * max(med.values()))
    axes[0].set_xticks(x, names, fontsize=7)
    axes[0].set_ylabel(f"median wall time [s] ({res['pairs']} alternating runs)")
    axes[0].set_title(f"private coreset barycenter vs POT: k={K} census regions, "
                      f"n={res['problem']['n']}, m={M}", fontsize=9)
    axes[0].legend(fontsize=8)
    npv = res["nonprivate"]
    axes[1].bar([0, 1], [npv["ours_reg0.001_seconds_best"], npv["pot_exact_lp_seconds"]],
                color=["C0", "C1"])
    axes[1].set_xticks([0, 1], ["privot sinkhorn\nreg=0.001 (+polish)", "POT exact LP"])
    gap = 100 * res["targets"]["nonprivate_reg0.001_cost_rel_gap_to_pot_lp"]
    axes[1].set_title(f"non-private, same init: exact cost gap {gap:+.3f}% vs POT LP",
                      fontsize=9)
    axes[1].set_ylabel("wall time [s]")
    fig.tight_layout()
    fig.savefig(outdir / "barycenter_speed.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
