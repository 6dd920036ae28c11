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
``step="anchored"`` (the former default: a quarter on the anchor, k'* parts), and a
sweep of the Lloyd step's knobs (anchor fraction, balancing rounds, steps) at k = 1,
n = 50,000 (smaller: a tuning set, not the evaluation size). Cost: exact
``(1/k) sum W2^2`` on the deduplicated sample (squared degrees); ratio to non-private.

Seeded (``secure=False``). Writes ``benchmarks/results/barycenter_lloyd.json``.
Run: ``python benchmarks/bench_barycenter_lloyd.py`` (about 10 minutes on 2 cores;
``--quick``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from _common import git_state, t_interval
from bench_barycenter_us import REG, M, Places, cost_of, dedup, nonprivate
from privot.barycenters import PublicBounds, private_barycenter

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_126
BOUNDS = PublicBounds.box([-125.0, 24.0], [-66.0, 50.0])
METHODS = {"coreset": {"method": "coreset"},
           "lloyd": {"method": "perturbation", "step": "lloyd"},
           "anchored": {"method": "perturbation", "step": "anchored"}}
SWEEP = {"lloyd_anchor0.25": {"anchor_fraction": 0.25},
         "lloyd_anchor0.75": {"anchor_fraction": 0.75},
         "lloyd_balance0": {"balancing_rounds": 0},
         "lloyd_balance4": {"balancing_rounds": 4},
         "lloyd_steps2": {"iterations": 2}}


def release(groups, name, kw, seed, n):
    kw = dict(kw)
    method = kw.pop("method", "perturbation")
    if method == "perturbation":
        kw.setdefault("step", "lloyd")
        kw["delta"] = 1.0 / n
    t = time.perf_counter()
    res = private_barycenter(groups, bounds=BOUNDS, m=M, epsilon=1.0, method=method,
                             reg=REG, rng=np.random.default_rng(seed), **kw)
    return res.support, time.perf_counter() - t


def case(places, label, runs, n, regions, methods, rows):
    for run in range(runs):
        rng = np.random.default_rng([SEED, run, n, len(regions or [0])])
        groups = ([places.sample(n, rng)[0]] if regions is None
                  else [places.sample(n, rng, region=r)[0] for r in regions])
        dd = [dedup(g) for g in groups]
        ref, secs = nonprivate(groups, BOUNDS, np.random.default_rng([SEED, run]))
        base = cost_of(dd, ref)
        rows.append({"case": label, "method": "nonprivate", "run": run, "cost": base,
                     "ratio": 1.0, "seconds": secs})
        for j, (name, kw) in enumerate(methods.items()):
            sup, secs = release(groups, name, kw, [SEED, run, j, n], n)
            cost = cost_of(dd, sup)
            rows.append({"case": label, "method": name, "run": run, "cost": cost,
                         "ratio": cost / base, "seconds": secs})
            print(label, run, name, round(cost / base, 4), f"{secs:.1f}s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    runs, sweep_runs = (1, 1) if args.quick else (10, 3)
    places = Places()
    rows: list = []
    t0 = time.perf_counter()
    case(places, "sweep-k1-n50000", sweep_runs, 50_000, None,
         {"lloyd": METHODS["lloyd"], **SWEEP}, rows)
    case(places, "k1-n200000", runs, 200_000, None, METHODS, rows)
    case(places, "k4-n50000", runs, 50_000, ("Northeast", "Midwest", "South", "West"),
         METHODS, rows)
    agg = []
    for key in sorted({(r["case"], r["method"]) for r in rows}):
        sel = [r for r in rows if (r["case"], r["method"]) == key]
        agg.append({"case": key[0], "method": key[1],
                    "ratio": t_interval([r["ratio"] for r in sel]),
                    "cost": t_interval([r["cost"] for r in sel]),
                    "seconds": t_interval([r["seconds"] for r in sel])})
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("barycenter_lloyd" + ("_quick" if args.quick else "") + ".json")
    out.write_text(json.dumps({"git": git_state(), "m": M, "epsilon": 1.0,
                               "delta": "1/n", "seconds": time.perf_counter() - t0,
                               "aggregates": agg, "runs": rows}, indent=1))
    for a in agg:
        print(a["case"], a["method"], f"ratio {a['ratio']['mean']:.4f}")


if __name__ == "__main__":
    main()
