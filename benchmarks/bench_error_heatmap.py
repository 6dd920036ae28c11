"""The heatmap capability's stated error on real data (issue 28): Gowalla NYC check-ins.

What is checked: the :class:`~privot.error_bounds.ErrorStatement` of a pyramid heatmap,
``privot.heatmaps.heatmap_error(params, n_users=n, confidence=0.99)``
(``src/privot/heatmaps/error.py``, derivation ``docs/errors/heatmaps.md``): a bound on
``EMD(release, true distribution)`` in **cells** (L1 ground distance between cell
centres, ``privot.heatmaps.grid_emd(..., cell=(1, 1))``) that covers the noise only.
What it names as not covered, the data-dependent part, is measured here by the curator.

Setup: every Gowalla NYC check-in (``privot.datasets.load_gowalla_nyc``; 7,115 users)
on the public NYC box of ``bench_heatmap_paper.py`` (lon -74.26..-73.70, lat
40.48..40.92, ``aspect="stretch"``), aggregated once into the cell sums ``s`` (each user
weighs 1 in all), Delta = 128 (cells about 375 m; the exact EMD costs about 0.3 s per
pair here), ``method="pyramid"``, ``w = 20`` and ``gamma`` the defaults, epsilon in
{0.5, 1, 4}. ``n_users`` = the true user count (known to the curator here; a public lower
bound gives a larger, still valid bound). For every epsilon 200 seeded releases
(``rng`` a seeded numpy Generator per release: **not secure, not for publication**):

* **coverage**: releases whose observed EMD exceeds the stated bound, with a one-sided
  binomial test of ``H0: P(EMD > bound) <= 1 - confidence`` (p-value
  ``P(Bin(R, 0.01) >= exceedances)``);
* **informativeness**: bound / median observed EMD;
* **the data-dependent part** (curator-only), in the derivation's own terms. Steps 3'-4'
  of ``docs/errors/heatmaps.md`` give, for every release and any data,
  ``n EMD <= (2 Delta - 1) ||nu_q||_1 + 2 Delta sum_{j>q} 2^-j ||yhat_j - P_j s||_1``,
  and off the kept cells ``S_j`` (where ``yhat_j = 0``) the row is the true mass
  itself, so the right side is exactly ``R + D`` with the realised noise part
  ``R = (2 Delta - 1) ||nu_q||_1 + 2 Delta sum_{j>q} 2^-j ||nu_j|S_j||_1`` (at most
  ``2 Delta N``, the stated bound times ``n``, with probability >= 0.99) and the
  **dropped-mass term** ``D = 2 Delta sum_{j>q} 2^-j ||P_j s off S_j||_1`` -- "true mass
  that the noisy top-w selection drops", the one uncovered term the derivation has.
  Both are computed per release from the noise (``2^j y'_j - P_j s``) and RECONSTRUCT's
  kept cells; their sum is checked against RECONSTRUCT's own objective, and
  ``n EMD <= R + D`` (a theorem) and ``EMD <= bound + D / n`` (holds whenever the noise
  part is inside its bound) are checked in every release. The data-only part of ``D``
  (the best tree-sparse selection, "the mass of s outside its best w-sparse
  approximation") is bracketed: below by the mass outside the top-``w`` cells of each
  level (the tree constraint relaxed), above by the selection RECONSTRUCT makes on the
  exact, noiseless levels. Two further data-only figures: the EMD between ``a`` and
  RECONSTRUCT's output on the noiseless levels (the error with no noise at all), and
  the EMD from ``a`` to its best ``w``-sparse approximation (paper 002's
  ``min ||s - s'||_EMD`` over ``M_w``, i.e. planar ``w``-median cost / n, by
  ``privot.heatmaps.weighted_kmedian`` on the occupied cells: a feasible
  approximation, so an upper bound on the minimum). The observed EMD is decomposed
  against them: excess over the bound, and ``EMD - EMD(noiseless, a)`` against the
  bound.
* **contrast**: the same on a synthetic table where the data-dependent part vanishes
  (the same number of users, all in 3 random cells of a unit-square grid of the same
  Delta: every level has at most ``w`` occupied cells, each far above the noise).

Writes ``benchmarks/results/error_heatmap.json`` (every number with its parameters, the
per-release values, git state, load and wall time) and ``error_heatmap.png``
(the ECDF of the observed EMD per epsilon, log axis, with the bound and the
data-dependent terms marked); ``--quick`` (epsilon 1 and 4, 12 releases each) writes
``results/quick/error_heatmap.*``. Run:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_error_heatmap.py`` (3.5-7 min on 2
shared cores, about 3 min of CPU; ``--quick`` about 20 s).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from _common import git_state  # noqa: E402
from privot.datasets import load_gowalla_nyc  # noqa: E402
from privot.heatmaps import (  # noqa: E402
    CellSums,
    Grid,
    HeatmapParams,
    grid_emd,
    heatmap_error,
    private_heatmap,
    pyramid,
    reconstruct,
    start_level,
    user_distributions_sum,
    weighted_kmedian,
)
from privot.heatmaps.error import dropped_term  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_261_128
BOX = (-74.26, -73.70, 40.48, 40.92)  # bench_heatmap_paper.py's public NYC box
CONFIDENCE = 0.99
SYNTHETIC_CELLS = 3
FULL = {"delta": 128, "epsilons": [0.5, 1.0, 4.0], "releases": 200, "kmedian_init": 8}
QUICK = {"delta": 128, "epsilons": [1.0, 4.0], "releases": 12, "kmedian_init": 2}


def _q(a: np.ndarray) -> dict:
    """Median, extremes and 5/95% quantiles of ``a``."""
    a = np.asarray(a, dtype=float)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()),
            "q05": float(np.quantile(a, 0.05)), "q95": float(np.quantile(a, 0.95)),
            "mean": float(a.mean())}


def _binomial(exceed: int, draws: int, rate: float) -> dict:
    """One-sided test of H0: P(EMD > bound) <= rate; p = P(Bin(draws, rate) >= exceed)."""
    return {"exceedances": int(exceed), "releases": int(draws), "rate_stated": rate,
            "rate_observed": exceed / draws,
            "p_value": float(stats.binom.sf(exceed - 1, draws, rate)),
            "expected_under_stated_rate": draws * rate}


def data_only_terms(s: np.ndarray, w: int, n: float, seed: int, n_init: int) -> dict:
    """The data-dependent figures that do not depend on the noise (curator-only)."""
    delta = s.shape[0]
    ell = delta.bit_length() - 1
    q = start_level(w, ell)
    levels = pyramid(s, start_level=q)
    # relaxation: the top-w cells of every level, tree constraint dropped (a lower bound)
    top = [np.argsort(-lv.ravel(), kind="stable")[: min(w, lv.size)] if j > 0
           else np.arange(lv.size) for j, lv in enumerate(levels)]
    lower, drops_top = dropped_term(levels, top, q, delta)
    # RECONSTRUCT on the exact levels: a feasible tree-sparse selection (an upper bound)
    # and the error with no noise at all
    t0 = time.perf_counter()
    rec0 = reconstruct([np.ldexp(lv, -(q + j)) for j, lv in enumerate(levels)], w=w)
    upper, drops_greedy = dropped_term(levels, list(rec0.kept), q, delta)
    emd0 = grid_emd(rec0.distribution, s, cell=(1.0, 1.0))
    # best w-sparse approximation in EMD: planar w-median of the occupied cells (L1)
    r, c = np.nonzero(s)
    fit = weighted_kmedian(np.column_stack([c, r]).astype(float), s[r, c], k=w,
                           n_init=n_init, rng=seed)
    return {
        "start_level_q": q, "levels": ell, "w": w, "n_users": n,
        "occupied_cells_per_level": {str(q + j): int(np.count_nonzero(lv))
                                     for j, lv in enumerate(levels)},
        "mass_outside_top_w_per_level": {str(q + j): d / n for j, d in enumerate(drops_top)},
        "mass_dropped_by_noiseless_selection_per_level": {
            str(q + j): d / n for j, d in enumerate(drops_greedy)},
        "dropped_term_best_tree_sparse_cells": {"lower": lower / n, "upper": upper / n,
                                                "note": "D/n of the best tree-sparse "
                                                "selection lies in [lower, upper]"},
        "emd_noiseless_reconstruction_cells": emd0,
        "noiseless_lp_fallback": bool(rec0.lp_fallback),
        "emd_to_best_w_sparse_cells_at_most": fit.cost / n,
        "kmedian_n_init": n_init, "seconds": time.perf_counter() - t0,
    }


def one_release(cells: CellSums, params: HeatmapParams, seed: int, n: float) -> dict:
    """One seeded release: observed EMD and the realised terms of the derivation."""
    s = cells.sums
    delta = params.grid.resolution
    res = private_heatmap(cells, params, rng=np.random.default_rng(seed))
    rec = res.diagnostics.reconstruction
    q = rec.start_level
    levels = pyramid(s, start_level=q)
    # the noise itself (curator-only): nu_j = 2^j y'_j - P_j s, unscaled
    nu = [np.ldexp(v, q + j) - lv for j, (v, lv) in
          enumerate(zip(res.release.values, levels, strict=True))]
    n_q = float(np.abs(nu[0]).sum())
    kept_noise = [float(np.abs(x.ravel()[k]).sum()) for x, k in zip(nu, rec.kept, strict=True)]
    realised = (2 * delta - 1) * n_q + 2.0 * delta * math.fsum(
        math.ldexp(v, -(q + j)) for j, v in enumerate(kept_noise) if j > 0)
    dropped, _ = dropped_term(levels, list(rec.kept), q, delta)
    # the decomposition must add up to RECONSTRUCT's own objective F(s)
    f_s = math.ldexp(n_q, -q) + (realised - (2 * delta - 1) * n_q + dropped) / (2 * delta)
    f_lib = rec.objective_of(s)
    assert abs(f_s - f_lib) <= 1e-9 * max(1.0, f_lib), (f_s, f_lib)
    t0 = time.perf_counter()
    emd = grid_emd(res.distribution, s, cell=(1.0, 1.0))
    return {"seed": seed, "emd_cells": emd, "n_emd": n * emd, "realised_noise_part": realised,
            "dropped_term": dropped, "lp_fallback": bool(rec.lp_fallback),
            "fallback_uniform": bool(rec.fallback_uniform),
            "seconds_release": res.seconds["total"], "seconds_emd": time.perf_counter() - t0}


def evaluate(name: str, cells: CellSums, grid: Grid, cfg: dict, seed: int, *,
             geographic: bool) -> dict:
    """Every epsilon of ``cfg`` on one table: coverage, informativeness, decomposition."""
    n = float(cells.sums.sum())
    data = data_only_terms(cells.sums, HeatmapParams(grid=grid, epsilon=1.0).w, n, seed,
                           cfg["kmedian_init"])
    print(f"[{name}] n = {n:.0f}, data-only terms: "
          f"D/n in [{data['dropped_term_best_tree_sparse_cells']['lower']:.2f}, "
          f"{data['dropped_term_best_tree_sparse_cells']['upper']:.2f}], "
          f"noiseless EMD {data['emd_noiseless_reconstruction_cells']:.3f}, "
          f"w-median {data['emd_to_best_w_sparse_cells_at_most']:.3f} cells", flush=True)
    out = {"n_users": cells.n_users, "n_users_float": n, "data_only": data, "epsilons": {}}
    emd0 = data["emd_noiseless_reconstruction_cells"]
    for k, eps in enumerate(cfg["epsilons"]):
        params = HeatmapParams(grid=grid, epsilon=eps)
        stated = heatmap_error(params, n_users=cells.n_users, confidence=CONFIDENCE)
        bound = stated.bound
        t0 = time.perf_counter()
        runs = [one_release(cells, params, seed * 1000 + 100 * k + i, n)
                for i in range(cfg["releases"])]
        emd = np.array([r["emd_cells"] for r in runs])
        real = np.array([r["realised_noise_part"] for r in runs])
        drop = np.array([r["dropped_term"] for r in runs])
        noise_bound_n = stated.details["factor"] * stated.details["noise"]  # 2 Delta N
        excess = np.maximum(emd - bound, 0.0)
        tol = 1e-9 * np.maximum(1.0, n * emd)
        row = {
            "epsilon": eps, "releases": len(runs), "seconds": time.perf_counter() - t0,
            "statement": stated.to_dict(),
            "bound_cells": bound,
            "bound_km": stated.details.get("bound_km_if_lonlat") if geographic else None,
            "observed_emd_cells": _q(emd),
            "coverage": _binomial(int(np.sum(emd > bound)), len(runs), 1 - CONFIDENCE),
            "bound_over_median": bound / float(np.median(emd)),
            "realised_noise_part_over_n": _q(real / n),
            "realised_noise_part_exceeds_2DeltaN": int(np.sum(real > noise_bound_n)),
            "dropped_term_over_n": _q(drop / n),
            "checks": {
                "theorem_nEMD_le_R_plus_D_all": bool(np.all(n * emd <= real + drop + tol)),
                "emd_le_bound_plus_D_over_n": int(np.sum(emd <= bound + drop / n)),
                "emd_le_bound_plus_best_tree_sparse_lower": int(np.sum(
                    emd <= bound + data["dropped_term_best_tree_sparse_cells"]["lower"])),
                "emd_le_bound_plus_noiseless_emd": int(np.sum(emd <= bound + emd0)),
                "emd_le_bound_plus_w_median": int(np.sum(
                    emd <= bound + data["emd_to_best_w_sparse_cells_at_most"])),
                "emd_minus_noiseless_emd_gt_bound": int(np.sum(emd - emd0 > bound)),
                "lp_fallbacks": int(sum(r["lp_fallback"] for r in runs)),
                "uniform_fallbacks": int(sum(r["fallback_uniform"] for r in runs)),
            },
            "excess_over_bound_cells": _q(excess),
            "excess_share_of_median_emd": float(np.median(excess) / np.median(emd)),
            "noiseless_emd_share_of_median_emd": float(emd0 / np.median(emd)),
            "runs": runs,
        }
        out["epsilons"][str(eps)] = row
        c = row["coverage"]
        print(f"[{name}] eps {eps}: bound {bound:.3f} cells, median EMD "
              f"{row['observed_emd_cells']['median']:.3f}, max "
              f"{row['observed_emd_cells']['max']:.3f}, exceed {c['exceedances']}/"
              f"{c['releases']} (p {c['p_value']:.2g}), bound/median "
              f"{row['bound_over_median']:.2f}, D/n median "
              f"{row['dropped_term_over_n']['median']:.2f} ({row['seconds']:.0f} s)",
              flush=True)
    return out


def gowalla_cells(delta: int) -> tuple[CellSums, Grid]:
    """Every Gowalla NYC user on the public box (curator-only aggregate)."""
    df = load_gowalla_nyc()
    grid = Grid(BOX, delta, aspect="stretch")
    cells = user_distributions_sum(df["user_id"].to_numpy(), df["longitude"].to_numpy(),
                                   df["latitude"].to_numpy(), grid)
    return cells, grid


def synthetic_cells(delta: int, n_users: int, seed: int) -> tuple[CellSums, Grid]:
    """``n_users`` users, one point each, in ``SYNTHETIC_CELLS`` random cells."""
    rng = np.random.default_rng(seed)
    which = rng.choice(delta * delta, size=SYNTHETIC_CELLS, replace=False)
    s = np.bincount(which[rng.integers(0, SYNTHETIC_CELLS, size=n_users)],
                    minlength=delta * delta).reshape(delta, delta).astype(float)
    cells = CellSums(s, n_users=n_users, n_points=n_users, n_outside=0, n_users_empty=0)
    return cells, Grid((0.0, 1.0, 0.0, 1.0), delta)


def plot(out: dict, path: Path) -> None:
    """ECDF of the observed EMD per epsilon (log axis), the bound and the data terms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(out["tables"])
    eps = out["config"]["epsilons"]
    fig, axes = plt.subplots(len(names), len(eps), figsize=(4.6 * len(eps), 3.8 * len(names)),
                             squeeze=False, sharex=True)
    for r, name in enumerate(names):
        tab = out["tables"][name]
        data = tab["data_only"]
        for c, e in enumerate(eps):
            ax = axes[r][c]
            row = tab["epsilons"][str(e)]
            emd = np.sort([x["emd_cells"] for x in row["runs"]])
            bound = row["bound_cells"]
            drop = row["dropped_term_over_n"]["median"]
            emd0 = data["emd_noiseless_reconstruction_cells"]
            ax.step(emd, np.arange(1, emd.size + 1) / emd.size, where="post", lw=2,
                    color="tab:blue", label="observed EMD (ECDF)")
            ax.axvline(bound, color="tab:red", lw=2, label=f"stated bound {bound:.2f}")
            if drop > 0:
                ax.axvline(bound + drop, color="tab:purple", ls=":", lw=2,
                           label=f"bound + D/n (median) {bound + drop:.1f}")
            if emd0 > 0:
                ax.axvline(emd0, color="tab:green", ls="--",
                           label=f"noiseless reconstruction {emd0:.2f}")
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            left = emd0 > 0  # the real data's ECDF sits right of the middle
            ax.text(0.03 if left else 0.97, 0.97 if left else 0.72,
                    f"exceed {row['coverage']['exceedances']}/{row['releases']}\n"
                    f"bound/median {row['bound_over_median']:.2f}\n"
                    f"D/n median {drop:.2f} cells\n"
                    f"best tree-sparse D/n >= "
                    f"{data['dropped_term_best_tree_sparse_cells']['lower']:.2f}\n"
                    f"w-median EMD <= {data['emd_to_best_w_sparse_cells_at_most']:.2f}",
                    transform=ax.transAxes, ha="left" if left else "right", va="top",
                    fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
            ax.set_title(f"{name}, eps {e}", fontsize=10)
            ax.set_xlabel("EMD(release, true) [cells]")
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"heatmap_error (confidence {CONFIDENCE}) vs the observed EMD: Delta = "
                 f"{out['config']['delta']}, w = 20, {out['config']['releases']} seeded "
                 "releases per panel\nD = 2 Delta sum_j 2^-j (true mass the top-w selection "
                 "drops at level j): the data-dependent term the bound does not cover",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run into results/quick/")
    args = ap.parse_args()
    cfg = QUICK if args.quick else FULL
    folder = RESULTS / "quick" if args.quick else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = {"benchmark": "bench_error_heatmap.py", "issue": 28, "git": git_state(),
           "python": platform.python_version(), "machine": platform.machine(),
           "load_average_start": list(os.getloadavg()), "seed": SEED,
           "confidence": CONFIDENCE, "config": cfg, "box": BOX,
           "seeded": "seeded numpy generators: reproducible, not secure, not for publication",
           "tables": {}}
    real, grid = gowalla_cells(cfg["delta"])
    out["tables"]["Gowalla NYC"] = evaluate("Gowalla NYC", real, grid, cfg, SEED,
                                             geographic=True)
    syn, sgrid = synthetic_cells(cfg["delta"], real.n_users, SEED + 1)
    out["tables"][f"synthetic, {SYNTHETIC_CELLS} cells"] = evaluate(
        f"synthetic, {SYNTHETIC_CELLS} cells", syn, sgrid, cfg, SEED + 1, geographic=False)
    out["load_average_end"] = list(os.getloadavg())
    out["wall_seconds"] = time.perf_counter() - t0
    (folder / "error_heatmap.json").write_text(json.dumps(out, indent=1))
    plot(out, folder / "error_heatmap.png")
    print(f"wrote {folder / 'error_heatmap.json'} and .png in {out['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
