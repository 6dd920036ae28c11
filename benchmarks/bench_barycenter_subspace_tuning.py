"""Choosing the subspace method's defaults on data that is NOT the evaluation data.

The evaluation data of issue 14 (``bench_barycenter_subspace.py``) is the R^10 mixture of
paper 000 (``gaussian_mixture_r10``) and the 5,000 MNIST digits. The defaults of
``privot.barycenters.subspace`` (``default_subspace_dim``, ``default_cells``, the
rounds, ``DEFAULT_PROJECTION_SHARE``) are chosen here on three other sets:

* **digits**: scikit-learn's 1,797 8x8 digits (``privot.datasets.load_digits``, d = 64,
  public box [0, 16]^64): k = 10 classes (about 180 each, m = 10) and all as one group
  (m = 20), eps in {1, 4}, delta = 1e-6 and pure;
* **clusters16** (``--only clusters16``, run separately): 5 well-separated spherical
  clusters in R^16 (centres on the sphere of radius 0.3, std 0.03), k = 2, n in {500,
  1000, 3000}, m = 10, eps = 1: clustered data, where one Gaussian per group is a poor
  summary;
* **blobs20**: a seeded mixture of 6 anisotropic Gaussians in R^20 at random centres
  (radius 0.3 ball, per-coordinate std 0.02-0.08, projected into the ball of radius 1/2;
  not the evaluation mixture's geometry), k = 3 groups, n in {300, 1000, 3000}, m = 12,
  eps = 1 (and 0.5, 4 at n = 1000).

For every setting a grid of (d', cells, rounds) at the default share and a grid of shares
at the default shape; 3 seeded releases each; metric: private cost / non-private cost
(``evaluate_barycenter``, exact W2^2 on the raw groups; the non-private barycenter by
``free_support_barycenter`` with the same solver settings).

``--only defaults`` runs the chosen defaults against their neighbours (share 0.2 / 0.5,
d' = 8, two rounds) on every set, 3 seeds.

The grid's rows marked ``"default": true`` in ``barycenter_subspace_tuning.json`` are
the rule of the first implementation (d' = 4; one cell below eps n = 2000, else
min(m, eps n / 250) cells and 2 rounds; share 0.2), the prototype's choices, run when
the grid was made.

Writes ``benchmarks/results/barycenter_subspace_tuning.json`` (``_clusters16``,
``_defaults``).
Run: ``python benchmarks/bench_barycenter_subspace_tuning.py`` (about 10 minutes on 2
cores; ``--quick``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from _common import git_state
from privot.barycenters import PublicBounds, evaluate_barycenter, private_barycenter
from privot.datasets.packaged import load_digits
from privot.ot import free_support_barycenter

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_124
REG = 0.01


def blobs20(n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    geo = np.random.default_rng(SEED)  # the mixture's geometry: fixed
    centres = geo.normal(size=(6, 20))
    centres *= 0.3 / np.linalg.norm(centres, axis=1, keepdims=True) * geo.uniform(0.3, 1, (6, 1))
    scales = geo.uniform(0.02, 0.08, size=(6, 20))
    weights = geo.dirichlet(np.full(6, 2.0))
    out = []
    for _ in range(k):
        comp = rng.choice(6, size=n, p=weights)
        x = centres[comp] + rng.normal(size=(n, 20)) * scales[comp]
        norm = np.linalg.norm(x, axis=1, keepdims=True)
        out.append(x * np.minimum(1, 0.5 / norm))
    return out


def clusters16(n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    geo = np.random.default_rng([SEED, 16])  # the clusters' geometry: fixed
    centres = geo.normal(size=(5, 16))
    centres *= 0.3 / np.linalg.norm(centres, axis=1, keepdims=True)
    out = []
    for _ in range(k):
        x = centres[rng.integers(0, 5, n)] + 0.03 * rng.normal(size=(n, 16))
        out.append(x * np.minimum(1, 0.5 / np.linalg.norm(x, axis=1, keepdims=True)))
    return out


def settings(quick: bool, only: str | None = None):
    if only == "defaults":  # every tuning set, for the check of the chosen rule
        for name, groups, bounds, m, epss in settings(quick):
            yield name, groups, bounds, m, epss
        yield from settings(quick, "clusters16")
        return
    if only == "clusters16":
        ball = PublicBounds.ball(np.zeros(16), 0.5)
        for n, epss in ((500, (1.0,)), (1000, (1.0,)), (3000, (1.0,))):
            yield (f"clusters16-n{n}", clusters16(n, 2, np.random.default_rng([SEED, 16, n])),
                   ball, 10, epss)
        return
    x, y = load_digits()
    dig_bounds = PublicBounds.box(np.zeros(64), np.full(64, 16.0))
    classes = [x[y == c] for c in range(10)]
    yield "digits-k10", classes, dig_bounds, 10, (1.0, 4.0)
    yield "digits-all", [x], dig_bounds, 20, (1.0, 4.0)
    ball = PublicBounds.ball(np.zeros(20), 0.5)
    for n, epss in (((300, (1.0,)), (1000, (1.0,))) if quick else
                    ((300, (1.0,)), (1000, (0.5, 1.0, 4.0)), (3000, (1.0,)))):
        yield f"blobs20-n{n}", blobs20(n, 3, np.random.default_rng([SEED, n])), ball, 12, epss


def run(groups, bounds, m, eps, delta, seeds, **kw) -> list[float]:
    out = []
    for s in seeds:
        res = private_barycenter(groups, bounds=bounds, m=m, epsilon=eps, delta=delta,
                                 method="subspace", reg=REG, rng=s, **kw)
        out.append(evaluate_barycenter([bounds.to_unit(g)[0] for g in groups],
                                       bounds.to_unit(res.support)[0])["cost"])
    return out


def check_defaults(rows, name, groups, bounds, m, eps, delta, seeds, base, n) -> None:
    """The chosen rule against its neighbours: share 0.2 / 0.5, d' 8, rounds 2, the
    complement mean on and off."""
    variants = {"default": {}, "share0.2": {"projection_share": 0.2},
                "share0.5": {"projection_share": 0.5}, "dim8": {"subspace_dim": 8},
                "rounds2": {"rounds": 2}, "mean_only": {"subspace_dim": 0},
                "complement_on": {"complement_mean": True},
                "complement_off": {"complement_mean": False}}
    for label, kw in variants.items():
        c = run(groups, bounds, m, eps, delta, seeds, **kw)
        rows.append({"set": name, "n": n, "m": m, "eps": eps, "delta": delta,
                     "variant": label, "ratio": float(np.mean(c) / base), "base": base})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("clusters16", "defaults"), default=None,
                    help="clusters16: one more tuning set alone; defaults: the chosen "
                         "rule against its neighbours on every tuning set (each written "
                         "to its own file)")
    args = ap.parse_args()
    seeds = [0, 1] if args.quick else [0, 1, 2]
    rows = []
    t0 = time.time()
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("barycenter_subspace_tuning" + ("_quick" if args.quick else "")
                     + (f"_{args.only}" if args.only else "") + ".json")
    for name, groups, bounds, m, epss in settings(args.quick, args.only):
        units = [bounds.to_unit(g)[0] for g in groups]
        ref = free_support_barycenter(units, m=m, reg=REG, rng=0)
        base = evaluate_barycenter(units, ref.support)["cost"]
        n = min(len(g) for g in groups)
        for eps, delta in itertools.product(epss, (1e-6, None)):
            if args.only == "defaults":
                check_defaults(rows, name, groups, bounds, m, eps, delta, seeds, base, n)
                print(name, eps, delta, f"{time.time() - t0:.0f}s", flush=True)
                out.write_text(json.dumps({"git": git_state(), "seeds": seeds,
                                           "rows": rows}, indent=1))
                continue
            shapes = [(dp, q, t) for dp in (2, 3, 4, 6) for q in (1, m // 2, m, 2 * m)
                      for t in ((0,) if q == 1 else (1, 2, 3))]
            if args.quick:
                shapes = shapes[::3]
            for dp, q, t in shapes:
                c = run(groups, bounds, m, eps, delta, seeds, subspace_dim=dp, cells=q,
                        rounds=t)
                rows.append({"set": name, "n": n, "m": m, "eps": eps, "delta": delta,
                             "subspace_dim": dp, "cells": q, "rounds": t, "share": 0.2,
                             "ratio": float(np.mean(c) / base), "base": base})
            for share in (0.1, 0.35):
                c = run(groups, bounds, m, eps, delta, seeds, projection_share=share)
                rows.append({"set": name, "n": n, "m": m, "eps": eps, "delta": delta,
                             "subspace_dim": None, "cells": None, "rounds": None,
                             "share": share, "ratio": float(np.mean(c) / base), "base": base})
            c = run(groups, bounds, m, eps, delta, seeds)
            rows.append({"set": name, "n": n, "m": m, "eps": eps, "delta": delta,
                         "subspace_dim": None, "cells": None, "rounds": None,
                         "share": 0.2, "default": True,
                         "ratio": float(np.mean(c) / base), "base": base})
            print(name, eps, delta, f"{time.time() - t0:.0f}s", flush=True)
            out.write_text(json.dumps({"git": git_state(), "seeds": seeds, "rows": rows},
                                      indent=1))  # after every setting: partial runs count
    print("wrote", out)


if __name__ == "__main__":
    main()
