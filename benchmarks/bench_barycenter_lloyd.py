"""Output perturbation by noisy Lloyd steps (issue 15) against the anchored step.

US places (``load_us_places(continental=True)``; people a uniform sample without
replacement of the inhabitants, ``sample_people``), public bounds lon [-125, -66] x lat
[24, 50], m = 48, eps = 1 **on the sample** (no amplification: the stricter reading of
the issue's setting), delta = 1/n:

* ``k1``: one group of n = 200,000 people;
* ``k4``: the four census regions, 50,000 people each.

Methods (10 seeded releases each, 3 for the sweep; common data per run): the non-private barycenter
(deduplicated places with multiplicities, reg 0.001), the private coreset (pure eps),
``method="perturbation"`` with ``step="lloyd"`` (the new default: half of eps on the
coreset anchor, two balancing rounds, one noisy Lloyd step on power cells) and
``step="anchored"`` (the former default: a quarter on the anchor, k'* parts), in the
evaluation the paper's procedure (``paper``: the non-private barycenter of the k k' =
1000 k parts plus the paper's noise; not a private mechanism, a comparison), and a
sweep of the Lloyd step's knobs (anchor fraction, balancing rounds, steps) at k = 1,
n = 50,000 (smaller: a tuning set, not the evaluation size). Cost: exact
``(1/k) sum W2^2`` on the deduplicated sample (squared degrees); ratio to non-private.

``clusters-n40000-m16``, the second tuning set: 12 Gaussian clusters of unequal mass and
spread plus 5% uniform background in the same bounds (``clusters``), n = 40,000, m = 16,
3 releases. The proxy-size rows (``lloyd_proxy*``: placed coreset points per group in
the power-weight OT solves; the default is ``DEFAULT_PROXY_SIZE``) run on both tuning
sets.

Every method of a run gets the same seed (common random numbers): the Lloyd variants
share their anchor, so their differences are paired. Seeded (``secure=False``). Writes
``benchmarks/results/barycenter_lloyd.json`` and ``barycenter_lloyd.png`` (each
release's ratio, per case and method).
Run: ``python benchmarks/bench_barycenter_lloyd.py`` (about 10 minutes on 2 cores;
``--quick``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import bench_barycenter_us
from _common import git_state, t_interval
from bench_barycenter_us import REG, M, Places, cost_of, dedup, nonprivate, paper_procedure
from privot.barycenters import PublicBounds, private_barycenter

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_126
BOUNDS = PublicBounds.box([-125.0, 24.0], [-66.0, 50.0])
METHODS = {"coreset": {"method": "coreset"},
           "lloyd": {"method": "perturbation", "step": "lloyd"},
           "anchored": {"method": "perturbation", "step": "anchored"}}
#: The evaluation adds the paper's procedure (paper 001 Prop. 6 as written, k' = 1000 parts,
#: ``bench_barycenter_us.paper_procedure``): a comparison only, its sensitivity argument
#: does not hold (docs/privacy/barycenters.md).
EVALUATION = {**METHODS, "paper": {"method": "paper"}}
SWEEP = {"lloyd_noshrink": {"shrinkage": False},
         "lloyd_proxy5000": {"proxy_size": 5_000},
         "lloyd_proxy20000": {"proxy_size": 20_000},
         "lloyd_proxy40000": {"proxy_size": 40_000},
         "lloyd_anchor0.25": {"anchor_fraction": 0.25},
         "lloyd_anchor0.75": {"anchor_fraction": 0.75},
         "lloyd_balance0": {"balancing_rounds": 0},
         "lloyd_balance4": {"balancing_rounds": 4},
         "lloyd_steps2": {"iterations": 2}}


def release(groups, name, kw, seed, n, m=M):
    kw = dict(kw)
    method = kw.pop("method", "perturbation")
    if method == "paper":  # for comparison only: not a proven mechanism
        bench_barycenter_us._PARTS_FIT.clear()  # its cache is keyed by id(): fresh data
        t = time.perf_counter()
        # eps on the sample, as for the other methods: population = sample (no amplification)
        support, _ = paper_procedure(groups, BOUNDS, 1.0, [len(g) for g in groups],
                                     np.random.default_rng(seed))
        return support, time.perf_counter() - t
    if method == "perturbation":
        kw.setdefault("step", "lloyd")
        kw["delta"] = 1.0 / n
    t = time.perf_counter()
    res = private_barycenter(groups, bounds=BOUNDS, m=m, epsilon=1.0, method=method,
                             reg=REG, rng=np.random.default_rng(seed), **kw)
    return res.support, time.perf_counter() - t


def clusters(n, rng):
    """The synthetic tuning set: 12 Gaussian clusters of unequal mass and spread in the
    bounds, plus 5% uniform background (caller units, degrees)."""
    lo, hi = np.array([-125.0, 24.0]), np.array([-66.0, 50.0])
    centres = lo + 0.1 * (hi - lo) + 0.8 * (hi - lo) * rng.random((12, 2))
    mass = rng.dirichlet(np.full(12, 1.0))
    n_bg = n // 20
    which = rng.choice(12, size=n - n_bg, p=mass)
    spread = rng.uniform(0.3, 2.0, 12)[which, None]
    pts = centres[which] + spread * rng.normal(size=(n - n_bg, 2))
    pts = np.vstack([pts, lo + (hi - lo) * rng.random((n_bg, 2))])
    return np.clip(pts, lo, hi)


def case(places, label, runs, n, regions, methods, rows, m=M):
    for run in range(runs):
        rng = np.random.default_rng([SEED, run, n, len(regions or [0])])
        if regions == "clusters":
            groups = [clusters(n, rng)]
        else:
            groups = ([places.sample(n, rng)[0]] if regions is None
                      else [places.sample(n, rng, region=r)[0] for r in regions])
        dd = [dedup(g) for g in groups]
        ref, secs = nonprivate(groups, BOUNDS, np.random.default_rng([SEED, run]), m=m)
        base = cost_of(dd, ref)
        rows.append({"case": label, "method": "nonprivate", "run": run, "cost": base,
                     "ratio": 1.0, "seconds": secs})
        for name, kw in methods.items():
            sup, secs = release(groups, name, kw, [SEED, run, n], n, m=m)
            cost = cost_of(dd, sup)
            rows.append({"case": label, "method": name, "run": run, "cost": cost,
                         "ratio": cost / base, "seconds": secs})
            print(label, run, name, round(cost / base, 4), f"{secs:.1f}s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("tuning", "evaluation"), default=None,
                    help="run only the tuning sets or only the evaluation cases")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the PNG from the JSON of the same options, run nothing")
    args = ap.parse_args()
    stem = ("barycenter_lloyd" + ("_quick" if args.quick else "")
            + (f"_{args.only}" if args.only else ""))
    if args.replot:
        plot(json.loads((RESULTS / (stem + ".json")).read_text())["runs"],
             RESULTS / (stem + ".png"))
        return
    runs, sweep_runs = (1, 1) if args.quick else (10, 3)
    places = Places()
    rows: list = []
    t0 = time.perf_counter()
    if args.only != "evaluation":
        case(places, "sweep-k1-n50000", sweep_runs, 50_000, None,
             {"lloyd": METHODS["lloyd"], **SWEEP}, rows)
        case(places, "clusters-n40000-m16", sweep_runs, 40_000, "clusters",
             {**METHODS, **{k: v for k, v in SWEEP.items()
                            if "proxy" in k or "shrink" in k}}, rows, m=16)
    if args.only != "tuning":
        case(places, "k1-n200000", runs, 200_000, None, EVALUATION, rows)
        case(places, "k4-n50000", runs, 50_000, ("Northeast", "Midwest", "South", "West"),
             EVALUATION, rows)
    agg = []
    for key in sorted({(r["case"], r["method"]) for r in rows}):
        sel = [r for r in rows if (r["case"], r["method"]) == key]
        agg.append({"case": key[0], "method": key[1],
                    "ratio": t_interval([r["ratio"] for r in sel]),
                    "cost": t_interval([r["cost"] for r in sel]),
                    "seconds": t_interval([r["seconds"] for r in sel])})
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / (stem + ".json")
    out.write_text(json.dumps({"git": git_state(), "m": M, "epsilon": 1.0,
                               "delta": "1/n", "seconds": time.perf_counter() - t0,
                               "aggregates": agg, "runs": rows}, indent=1))
    plot(rows, RESULTS / (stem + ".png"))
    for a in agg:
        print(a["case"], a["method"], f"ratio {a['ratio']['mean']:.4f}")


def plot(rows, path) -> None:
    """Each release's ratio to non-private, per case and method (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 4.2), squeeze=False)
    for ax, label in zip(axes[0], cases, strict=True):
        methods = list(dict.fromkeys(r["method"] for r in rows
                                     if r["case"] == label and r["method"] != "nonprivate"))
        for j, name in enumerate(methods):
            ratios = [r["ratio"] for r in rows if (r["case"], r["method"]) == (label, name)]
            jitter = np.linspace(-0.15, 0.15, len(ratios)) if len(ratios) > 1 else [0.0]
            ax.scatter(j + np.asarray(jitter), ratios, s=14,
                       color="C3" if name == "lloyd" else "C0")
            ax.plot([j - 0.25, j + 0.25], [np.mean(ratios)] * 2, color="k", lw=1)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhline(1.05, color="grey", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.2f"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%.2f"))
        ax.set_xticks(range(len(methods)), methods, rotation=60, ha="right", fontsize=7)
        ax.set_title(label, fontsize=9)
    axes[0][0].set_ylabel("cost / non-private cost (bar: mean)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
