"""Private barycenters at real sizes: the solver on weighted atoms against one atom per person.

The user's workloads (issue "Barycenters on real sizes are slow and silent"), on public
stand-in data privot loads without the internet: the continental US places of GeoNames
(``privot.datasets.load_us_places(continental=True)``); each group is a uniform sample
without replacement of the inhabitants of one census region's places
(``privot.datasets.sample_people``), 2-D (longitude, latitude), public bounds
lon [-125, -66] x lat [24, 50], eps = 1 on the rows (no ``population_size``):

* **A**: 327,000 rows in 3 groups (Midwest, South, West, 109,000 each), m = 32,
  ``method="coreset"``;
* **B**: 60,000 rows in 2 groups (Northeast, Midwest, 30,000 each), m = 16,
  ``method="coreset"`` and ``method="perturbation"`` (delta = 1e-6, the default k'
  and anchor fraction).

Each release runs twice in the same process: **before** (``max_atoms=None``: one solver
atom per coreset point, coresets subsampled to ``DEFAULT_MAX_CORESET``, the previous
behaviour) and **after** (the default ``max_atoms``: each coreset merged by the cells
of its public partition into at most ``max_atoms`` weighted atoms). Both see **the same
release**: the noisy level counts of the "before" run are recorded and replayed to the
"after" run (``coresets.noisy_level_counts`` patched; the real sampler still runs so
that the seeded generator advances identically), and the Gaussian noise of output
perturbation is drawn from one fixed seed in both. Stages from ``diagnostics``:
coreset (noisy counts, consistency, placement), atoms (the cell merge), solver
(Sinkhorn + polish + exact cost), and for perturbation the noisy steps (the rest).

Cost: the exact :math:`\\frac1k\\sum_i W_2^2(\\mu_i, \\nu)` of the released support
against the true groups (deduplicated with multiplicities, squared degrees), as in
``bench_barycenter_us.py``; the ratio after / before on the same release. Also a sweep
of ``max_atoms`` on workload A's release (time and cost) that chose the default, and
the default with one polishing step instead of ``DEFAULT_ATOMS_POLISH``.

Seeded (``SEED``), so not for publication. Writes
``benchmarks/results/barycenter_scale.json`` and ``.png``.
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_barycenter_scale.py`` (about
25 minutes on 2 shared cores, nearly all of it the "before" runs; ``--quick`` for a smoke run
into ``results/quick/``; ``--skip-before`` for the new path only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from privot.barycenters import PublicBounds, method_perturbation, private_barycenter
from privot.barycenters import coresets as cs
from privot.barycenters.api import DEFAULT_MAX_ATOMS, DEFAULT_MAX_CORESET
from privot.datasets import US_CENSUS_REGIONS, load_us_places, sample_people
from privot.ot import barycenter_cost

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_124
BOUNDS = PublicBounds.box([-125.0, 24.0], [-66.0, 50.0])
EPS = 1.0
DELTA = 1e-6
WORKLOADS = {
    "A": {"regions": ("Midwest", "South", "West"), "n": 109_000, "m": 32,
          "methods": ("coreset",)},
    "B": {"regions": ("Northeast", "Midwest"), "n": 30_000, "m": 16,
          "methods": ("coreset", "perturbation")},
}
QUICK_N = {"A": 12_000, "B": 6_000}
#: ``max_atoms`` sweep on workload A's release (with the default polish for atoms), and
#: the default ``max_atoms`` with a single polishing step (the solver's old default).
SWEEP = {"256": {"max_atoms": 256}, "1024": {"max_atoms": 1024},
         "4096": {"max_atoms": 4096}, "16384": {"max_atoms": 16384},
         "default_polish1": {"polish": 1}}


class Replay:
    """Records the noisy level counts of one release and replays them to the next."""

    def __init__(self) -> None:
        self.real = cs.noisy_level_counts
        self.store: list = []
        self.i = 0
        self.record = True

    def __call__(self, leaf_ids, counts, **kw):
        out = self.real(leaf_ids, counts, **kw)  # advances the generator as before
        if self.record:
            self.store.append(out)
            return out
        got = self.store[self.i]
        self.i += 1
        return got

    def replay(self) -> None:
        self.record, self.i = False, 0


_REAL_OUTPUT_PERTURBATION = method_perturbation.output_perturbation


def fixed_noise_perturbation(*args, **kw):
    """``output_perturbation`` with its Gaussian noise drawn from one fixed seed."""
    kw["rng"] = np.random.default_rng(SEED + 1)
    return _REAL_OUTPUT_PERTURBATION(*args, **kw)


def make_groups(places, regions, n, rng):
    xy, pop, region = places
    out = []
    for name in regions:
        idx = np.flatnonzero(region == name)
        out.append(xy[idx[sample_people(pop[idx], n, rng=rng)]])
    return out


def true_cost(dd, support) -> float:
    return float(barycenter_cost([u for u, _ in dd], support,
                                 measure_weights=[w for _, w in dd]))


def stages(res, wall: float) -> dict:
    dg = res.diagnostics
    core = float(dg.get("seconds_coreset", 0.0))
    atoms = float(dg.get("seconds_atoms", 0.0))
    solver = float(dg.get("seconds_barycenter", 0.0))
    return {"coreset": core, "atoms": atoms, "solver": solver,
            "other": max(wall - core - atoms - solver, 0.0), "end_to_end": wall,
            "solver_atoms": dg.get("solver_atoms", dg.get("coreset_sizes")),
            "coreset_points": dg.get("coreset_sizes"), "atom_levels": dg.get("atom_levels"),
            "coreset_depths": dg.get("coreset_depths"),
            "solver_outer_iterations": dg.get("solver_outer_iterations"),
            "solver_fallback": dg.get("solver_fallback")}


def release(groups, m, method, rng_seed, **kw):
    extra = {"delta": DELTA} if method == "perturbation" else {}
    t = time.perf_counter()
    res = private_barycenter(groups, bounds=BOUNDS, m=m, epsilon=EPS, method=method,
                             rng=rng_seed, progress=False, **extra, **kw)
    return res, time.perf_counter() - t


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-before", action="store_true")
    args = parser.parse_args(argv)
    outdir = RESULTS / "quick" if args.quick else RESULTS
    outdir.mkdir(parents=True, exist_ok=True)
    df = load_us_places(continental=True)
    places = (df[["longitude", "latitude"]].to_numpy(float),
              df["population"].to_numpy(np.int64),
              df["state"].map(US_CENSUS_REGIONS).to_numpy())
    rng = np.random.default_rng(SEED)
    out: dict = {"meta": {"seed": SEED, "epsilon": EPS, "delta_perturbation": DELTA,
                          "bounds": "lon [-125, -66] x lat [24, 50]",
                          "data": "GeoNames continental US places; rows a uniform sample "
                                  "without replacement of each region's inhabitants",
                          "default_max_atoms": DEFAULT_MAX_ATOMS,
                          "before_coreset_cap": DEFAULT_MAX_CORESET,
                          "quick": args.quick, "python": platform.python_version(),
                          "cpus": os.cpu_count(),
                          "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                          "cost": "exact (1/k) sum_i W2^2(mu_i, nu) against the true "
                                  "groups, squared degrees"},
                       "runs": {}}

    def save() -> None:
        (outdir / "barycenter_scale.json").write_text(json.dumps(out, indent=2))

    for name, wl in WORKLOADS.items():
        n = QUICK_N[name] if args.quick else wl["n"]
        groups = make_groups(places, wl["regions"], n, rng)
        dd = []
        for g in groups:
            u, c = np.unique(g, axis=0, return_counts=True)
            dd.append((u, c / c.sum()))
        for method in wl["methods"]:
            key = f"{name}_{method}"
            seed = int(rng.integers(2**31))
            replay = Replay()
            cs.noisy_level_counts = replay
            method_perturbation.output_perturbation = fixed_noise_perturbation
            row: dict = {"rows": n * len(groups), "groups": len(groups), "n": n,
                         "regions": list(wl["regions"]), "m": wl["m"], "method": method}
            try:
                if not args.skip_before:
                    res, wall = release(groups, wl["m"], method, seed, max_atoms=None)
                    row["before"] = {**stages(res, wall),
                                     "cost": true_cost(dd, res.support)}
                    print(f"{key} before: {wall:.1f} s, cost {row['before']['cost']:.3f}",
                          flush=True)
                    replay.replay()
                res, wall = release(groups, wl["m"], method, seed)
                if args.skip_before:
                    replay.replay()
                row["after"] = {**stages(res, wall), "cost": true_cost(dd, res.support)}
                print(f"{key} after: {wall:.1f} s, cost {row['after']['cost']:.3f}",
                      flush=True)
                if "before" in row:
                    row["speedup_end_to_end"] = row["before"]["end_to_end"] / wall
                    row["cost_ratio_after_over_before"] = (row["after"]["cost"]
                                                           / row["before"]["cost"])
                if name == "A" and method == "coreset":
                    sweep = {}
                    for cap, kw in SWEEP.items():
                        replay.replay()
                        r, w = release(groups, wl["m"], method, seed, **kw)
                        sweep[str(cap)] = {"end_to_end": w,
                                           "solver": r.diagnostics["seconds_barycenter"],
                                           "solver_atoms": r.diagnostics["solver_atoms"],
                                           "atom_levels": r.diagnostics["atom_levels"],
                                           "cost": true_cost(dd, r.support)}
                        print(f"  {cap}: {w:.1f} s, cost "
                              f"{sweep[str(cap)]['cost']:.3f}", flush=True)
                    row["max_atoms_sweep"] = sweep
            finally:
                cs.noisy_level_counts = replay.real
                method_perturbation.output_perturbation = _REAL_OUTPUT_PERTURBATION
            out["runs"][key] = row
            save()
    target = out["runs"].get("A_coreset", {}).get("after", {}).get("end_to_end")
    out["summary"] = {
        "target": "327,000 rows in 3 groups, m = 32, under 30 s end to end, cost no "
                  "worse than before on the same release",
        "A_end_to_end_after_s": target,
        "met_time": None if target is None or args.quick else bool(target < 30.0),
        "cost_ratios": {k: v.get("cost_ratio_after_over_before")
                        for k, v in out["runs"].items()}}
    save()
    plot(out, outdir)
    return out


def plot(out: dict, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(k, v) for k, v in out["runs"].items() if "after" in v]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 4.2), squeeze=False)
    colours = {"coreset": "#4c72b0", "atoms": "#8172b2", "solver": "#dd8452",
               "other": "#55a868"}
    for ax, (key, row) in zip(axes[0], runs, strict=True):
        labels = [w for w in ("before", "after") if w in row]
        bottom = np.zeros(len(labels))
        for stage, colour in colours.items():
            vals = np.array([row[w][stage] for w in labels])
            ax.bar(labels, vals, bottom=bottom, color=colour,
                   label={"other": "noisy steps / rest"}.get(stage, stage))
            bottom += vals
        for i, w in enumerate(labels):
            ax.text(i, bottom[i], f"{row[w]['end_to_end']:.1f} s\ncost {row[w]['cost']:.1f}",
                    ha="center", va="bottom", fontsize=8)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title(f"{key}: {row['rows']:,} rows, k = {row['groups']}, m = {row['m']}",
                     fontsize=9)
        ax.set_ylabel("seconds (symlog)")
        ax.set_ylim(0, max(bottom.max() * 3, 2))
    axes[0][0].legend(fontsize=8, loc="upper right")
    fig.suptitle("private barycenter stages: one atom per person (before) vs weighted "
                 "atoms (after), same release", fontsize=10)
    fig.tight_layout()
    fig.savefig(outdir / "barycenter_scale.png", dpi=120)


if __name__ == "__main__":
    main()
