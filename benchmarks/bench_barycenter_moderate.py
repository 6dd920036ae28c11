"""Private barycenters in moderate dimension (issue 26, part 3): the defaults and ``auto``.

Public tables of 4 to 8 numeric columns in 4 groups (``privot.datasets.tables``), public
bounds per column (the variables' documented domains, fixed in that module), m = 48,
eps in {1, 4}, seeded releases (``secure=False``):

* **tuning tables** (the rules were chosen on these): ``diamonds`` (d = 7, groups by
  cut) and ``weather`` (NYC 2013, d = 8, groups by season), 750 and 2,000 rows per group
  (uniform samples);
* **small-d tuning tables** (``--part small``; the one-cell rule of ``d0 <= 4`` was chosen
  on these): ``cps1988`` (AER, d = 3, by region; 400, 1,500 and 4,000 rows per group),
  ``slid`` (carData, d = 3, by language, whole), ``penguins`` (d = 4, by species, whole),
  ``weather4`` and ``diamonds4`` (4-column subsets of the tuning tables; 300, 750 and
  2,000 / 300 and 750 rows per group);
* **evaluation tables** (never used to choose): ``computers`` (Ecdat, d = 7, 6,259
  rows: 612 / 2,823 / 1,956 / 868) and ``wage`` (ISLR, d = 4, 3,000 rows: 1,239 / 650 /
  685 / 426), whole tables.

Methods: ``coreset`` (paper 000 Alg. 2, pure eps); ``subspace`` (the default plan:
pure eps, Laplace noise); ``subspace-diag`` (the default plan with each group's
diagonal second moments, the plan before the full-covariance rule of
``default_covariance``); ``subspace-old`` (the plan before issue 26: d' = 0, the DP
mean alone, below eps n = 800, else d' = clip(round(log2(eps n) - 3), 3, 8), and half of
epsilon on the second moment); ``subspace-gauss`` (delta = 1e-6, Gaussian noise, its
default plan); ``subspace-lloyd`` (the default ``d'`` with
the Lloyd cells of ``default_cells``, the plan before the small-d one-cell rule of
part 3: ``rounds=1`` given); ``auto`` (``method="auto"`` without delta, the issue's call:
what it runs);
``perturbation`` (Lloyd step, delta = 1e-6; with ``--perturbation`` only: slow);
``pooled-mean`` (every atom at the pooled exact mean: a non-private reference of a
degenerate release). Cost: exact ``(1/k) sum_i W2^2(mu_i, nu)``
(``evaluate_barycenter``) with every column scaled to [0, 1] by its public bounds (rows
outside clipped), as in the issue; ratio: to the non-private free-support barycenter of
the same groups (same solver, Sinkhorn then 10 exact polishing steps, the better of 2
starts). Mean and 95% Student-t
interval over the seeds; wall time of each release.

Writes ``benchmarks/results/barycenter_moderate.json`` and ``barycenter_moderate.png``.
Run: ``python benchmarks/bench_barycenter_moderate.py`` (about 10 minutes on 2 loaded
cores; ``--seeds``, ``--part tuning|small|evaluation``, ``--perturbation``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from _common import git_state, t_interval
from privot.barycenters import PublicBounds, evaluate_barycenter, private_barycenter
from privot.barycenters.subspace import default_subspace_dim
from privot.datasets.tables import load_table
from privot.ot import free_support_barycenter

OUT = Path(__file__).resolve().parent / "results"
M = 48
EPSILONS = (1.0, 4.0)
DELTA = 1e-6
TUNING = (("diamonds", 750), ("weather", 750), ("diamonds", 2000), ("weather", 2000))
#: tuning tables of 3-4 columns (issue 26, part 3: the small-d one-cell rule)
SMALL_TUNING = (("cps1988", 400), ("cps1988", 1500), ("cps1988", 4000), ("slid", None),
                ("penguins", None), ("weather4", 300), ("weather4", 750),
                ("weather4", 2000), ("diamonds4", 300), ("diamonds4", 750))
EVALUATION = (("computers", None), ("wage", None))
METHODS = ("coreset", "subspace", "subspace-diag", "subspace-old", "subspace-lloyd",
           "subspace-gauss", "auto")


def old_plan(n: int, d: int, eps: float) -> dict:
    """The pure default before issue 26 (``default_subspace_dim`` then)."""
    s = eps * n
    dim = 0 if s < 800 else int(min(d, min(8, max(3, round(math.log2(s) - 3)))))
    # rounds given: the Lloyd cells of that time (not the small-d one-cell rule)
    return ({"subspace_dim": dim, "projection_share": 0.5, "rounds": 1} if dim
            else {"subspace_dim": 0})


def nonprivate_cost(groups: list[np.ndarray], bounds) -> float:  # noqa: ANN001
    """The non-private barycenter's exact cost: the solver the releases use (Sinkhorn
    then exact polishing steps), the better of 2 starts."""
    costs = []
    for seed in (0, 1):
        fit = free_support_barycenter(groups, m=M, rng=seed, polish=10)
        costs.append(evaluate_barycenter(groups, fit.support)["cost"])
    return min(costs)


def options(method: str, n: int, d: int, eps: float) -> dict:
    if method == "coreset":
        return {"method": "coreset"}
    if method == "subspace":
        return {"method": "subspace"}
    if method == "subspace-diag":  # the default plan with diagonal second moments
        return {"method": "subspace", "covariance": False}
    if method == "subspace-old":
        return {"method": "subspace", **old_plan(n, d, eps)}
    if method == "subspace-lloyd":  # the default d' with the Lloyd cells (rounds given)
        return {"method": "subspace", "rounds": 1,
                "subspace_dim": default_subspace_dim(n, d0=d, epsilon=eps, delta=0.0)}
    if method == "subspace-gauss":
        return {"method": "subspace", "delta": DELTA}
    if method == "auto":
        return {"method": "auto"}
    return {"method": "perturbation", "delta": DELTA}


def setting(name: str, per_group: int | None, seeds: int, methods: tuple[str, ...],
            part: str) -> list[dict]:
    table = load_table(name, per_group=per_group, rng=0)
    # each column scaled to [0, 1] by its public bounds (as in the issue): the cost is
    # measured in the coordinates the releases work in
    low, high = table.bounds.lower, table.bounds.upper
    groups = [(table.bounds.clip(g)[0] - low) / (high - low) for g in table.groups]
    bounds = PublicBounds.box(np.zeros(table.d), np.ones(table.d))
    n, d = min(table.sizes), table.d
    t0 = time.perf_counter()
    base = nonprivate_cost(groups, bounds)
    print(f"{name} sizes={table.sizes} d={d} non-private cost {base:.4g} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    pooled = np.concatenate(groups).mean(axis=0)
    mean_ratio = evaluate_barycenter(groups, np.repeat(pooled[None], M, 0))["cost"] / base
    rows = []
    for eps in EPSILONS:
        rows.append({"part": part, "table": name, "n": n, "d": d, "sizes": table.sizes,
                     "epsilon": eps, "method": "pooled-mean", "seed": 0,
                     "ratio": mean_ratio, "seconds": 0.0, "distinct_atoms": 1,
                     "ran": "reference"})
        for method in methods:
            for seed in range(seeds):
                t1 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = private_barycenter(groups, bounds=bounds, m=M, epsilon=eps,
                                             rng=seed, progress=False,
                                             **options(method, n, d, eps))
                secs = time.perf_counter() - t1
                ratio = evaluate_barycenter(groups, res.support)["cost"] / base
                plan = res.params.get("subspace") or {}
                rows.append({"part": part, "table": name, "n": n, "d": d,
                             "sizes": table.sizes, "epsilon": eps, "method": method,
                             "seed": seed, "ratio": ratio, "seconds": secs,
                             "distinct_atoms": res.distinct_atoms, "ran": res.method,
                             "delta_spent": res.delta,
                             "plan": {k: plan.get(k) for k in ("mechanism", "subspace_dim",
                                                               "cells", "rounds",
                                                               "projection_share",
                                                               "covariance")}})
            sel = [r for r in rows if r["method"] == method and r["epsilon"] == eps]
            agg = t_interval([r["ratio"] for r in sel])
            low, high = agg["ci_low"] or float("nan"), agg["ci_high"] or float("nan")
            print(f"  eps={eps:g} {method:15s} ratio {agg['mean']:.3f} [{low:.3f}, "
                  f"{high:.3f}] {np.mean([r['seconds'] for r in sel]):.1f} s", flush=True)
    return rows


def aggregate(rows: list[dict]) -> list[dict]:
    keys = sorted({(r["part"], r["table"], r["n"], r["epsilon"], r["method"]) for r in rows},
                  key=lambda k: (k[0] != "tuning", k[1], k[2], k[3], k[4]))
    out = []
    for part, table, n, eps, method in keys:
        sel = [r for r in rows if (r["part"], r["table"], r["n"], r["epsilon"],
                                   r["method"]) == (part, table, n, eps, method)]
        out.append({"part": part, "table": table, "n": n, "d": sel[0]["d"],
                    "epsilon": eps, "method": method, "ran": sel[0]["ran"],
                    "ratio": t_interval([r["ratio"] for r in sel]),
                    "seconds": float(np.mean([r["seconds"] for r in sel])),
                    "distinct_atoms": float(np.mean([r["distinct_atoms"] for r in sel])),
                    "plan": sel[0].get("plan")})
    return out


def plot(agg: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = sorted({(a["part"], a["table"], a["n"], a["epsilon"]) for a in agg},
                      key=lambda k: (k[0] != "tuning", k[1], k[2], k[3]))
    methods = [m for m in ("pooled-mean", *METHODS, "perturbation")
               if any(a["method"] == m for a in agg)]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(settings)), 4.5))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        vals = []
        for s in settings:
            hit = [a for a in agg if (a["part"], a["table"], a["n"], a["epsilon"]) == s
                   and a["method"] == method]
            vals.append(hit[0]["ratio"]["mean"] if hit else np.nan)
        ax.bar(np.arange(len(settings)) + j * width, np.minimum(vals, 6.0), width,
               label=method)
    ax.axhline(2.5, color="k", lw=0.8, ls="--")
    ax.axhline(1.5, color="k", lw=0.8, ls=":")
    ax.set_xticks(np.arange(len(settings)) + 0.4)
    ax.set_xticklabels([f"{t}\nn={n} eps={e:g}\n({p})" for p, t, n, e in settings],
                       fontsize=7)
    ax.set_ylabel("cost / non-private cost (bars cut at 6)")
    ax.set_ylim(1, 6)
    ax.legend(fontsize=7, ncol=4)
    ax.set_title("Private barycenters in moderate dimension, m = 48 (targets: 2.5x at "
                 "eps 1, 1.5x at eps 4)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--part", choices=("all", "tuning", "small", "evaluation"),
                    default="all")
    ap.add_argument("--perturbation", action="store_true",
                    help="also output perturbation (Lloyd step; slow)")
    ap.add_argument("--stem", default=None,
                    help="output file stem (default barycenter_moderate[_PART])")
    args = ap.parse_args()
    methods = METHODS + (("perturbation",) if args.perturbation else ())
    start = time.perf_counter()
    rows: list[dict] = []
    parts = (("tuning", TUNING), ("small", SMALL_TUNING), ("evaluation", EVALUATION))
    for part, tables in parts:
        if args.part in ("all", part):
            for name, per in tables:
                rows += setting(name, per, args.seeds, methods, part)
    agg = aggregate(rows)
    OUT.mkdir(exist_ok=True)
    stem = args.stem or ("barycenter_moderate"
                         + ("" if args.part == "all" else f"_{args.part}"))
    meta = {"git": git_state(), "python": platform.python_version(),
            "machine": platform.machine(), "seeds": args.seeds, "m": M,
            "seconds": time.perf_counter() - start}
    (OUT / f"{stem}.json").write_text(json.dumps({"meta": meta, "summary": agg,
                                                  "runs": rows}, indent=1))
    plot(agg, OUT / f"{stem}.png")
    print(f"wrote {OUT / stem}.json/.png in {meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
