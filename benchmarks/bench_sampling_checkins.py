"""Reproduction of paper 003 App. M.1 (Fig. 3-4): one private check-in per Gowalla user.

Each user's check-ins are a private distribution over the cells of a public 20 x 20 grid;
every user releases one eps-LDP sample and the server estimates the population
distribution (the mean of the users' distributions) from the 500 reports.

Setup (paper: Gowalla **Austin**, users with >= 10 check-ins, 500 users, 20 x 20 grid,
Euclidean ground distance, W_1, the best uniform base measure for WPM, entropic WPM with
lambda = 0.01 and 40 iterations, 5 runs; here):

* **Data** -- ``gowalla_nyc`` (New York), public bounds lon -74.26..-73.70, lat
  40.48..40.92. Users with >= 10 check-ins inside the box; **a seeded random sample of
  500** of them (the paper's filter, and its "500 users"; it does not say how they were
  picked). The same 500 users in every run.
* **Grid** -- ``privot.grid.Grid`` needs a power-of-two resolution, so the engine step
  (``privot.sampling.user_cell_counts`` on DuckDB) runs on a 32 x 32 grid
  (``aspect="stretch"``) whose bounds extend the box by 12 cells of the 20 x 20 grid on
  the right and at the top: its lower-left 20 x 20 block *is* the 20 x 20 grid of the box
  (cells 0.028 deg x 0.022 deg, about 2.36 km x 2.45 km). Entries outside the block are
  dropped (a rule reading the row only; none occur: the data set is cut to the box), and
  block cells are renumbered ``row * 20 + col``.
* **Ground cost** -- Euclidean distance in **km** between cell centres (equirectangular
  projection at latitude 40.70 deg, R = 6371.0088 km), p = 1; k = k_v = 400.
* **Mechanisms** (``privot.sampling.make_mechanism`` / ``WassersteinProjection``) at eps
  in {0.5, 1, 2, 4, 8}: exact WPM with the optimal base measure (Thm 3.4), the best
  uniform one (the paper's choice) and the uniform ``1/k`` one; entropic WPM (best uniform
  base measure, lambda = 0.01 max C = 0.01 x 45.7 km, 200 fixed iterations: privot's
  defaults; the paper's lambda units are not stated); KPM; the exponential mechanism
  (utility minus the expected cost); k-RR of one check-in (nu = q + (p - q) mu).

Measured
--------
* **Per-user utility** (the brief's Fig. 3 analogue per user): W_1(mu_u, nu_u), mean and
  standard error over the 500 users, for the direct variant (nu_u = M[mu_u]) and the
  linear one (nu_u = sum_i mu_u(i) M[delta_i]).
* **Population estimate from one report per user** (the paper's Fig. 3: W_1 between
  the true distribution of check-ins and the one estimated from the released
  locations), ``SEEDS`` runs (fresh reports each): the direct variant's histogram
  (``estimate_direct``, what the paper plots), the linear variant inverted by IBU
  (``estimate_linear``, default 1000 iterations / tol 1e-9; a sweep over the iteration
  count is recorded), the k-RR unbiased estimate projected on the simplex
  (``krr_estimate``), and the **central-DP** heatmap of paper 002
  (``privot.heatmaps.private_heatmap``, pyramid, same users and points, same eps,
  user-level add/remove DP: a different, stronger-trust model) on the 32 x 32 engine
  grid; its 20 x 20 block, renormalised, is the estimate (post-processing with the
  public box).

The direct reports are drawn by ``private_sample`` from ``nu`` computed once per
mechanism and eps (deterministic), which is what ``sample_population(variant="direct")``
does; at each eps the first run of three mechanisms also goes through
``sample_population`` and is checked identical. The linear reports go through
``sample_population(variant="linear")`` with the cached channel.

All randomness is seeded (``SEED``): reproducible and **not fit for publication**
(``secure=False``). Writes ``benchmarks/results/sampling_checkins.json`` and
``sampling_checkins.png``. Run: ``python benchmarks/bench_sampling_checkins.py``
(about 5 minutes on 2 cores; ``--quick`` for a smoke run into ``results/quick/``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS contention on small machines

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import ot  # noqa: E402

from _common import git_state  # noqa: E402
from privot.datasets import GOWALLA_NYC_COLUMNS, data_file, load_gowalla_nyc  # noqa: E402
from privot.grid import Grid  # noqa: E402
from privot.heatmaps import private_heatmap  # noqa: E402
from privot.sampling import (  # noqa: E402
    WassersteinProjection,
    cost_matrix,
    make_mechanism,
    private_sample,
    user_cell_counts,
)
from privot.sampling.baselines import krr_estimate  # noqa: E402
from privot.sampling.population import (  # noqa: E402
    estimate_direct,
    estimate_linear,
    sample_population,
)

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_703
BOX = (-74.26, -73.70, 40.48, 40.92)  # lon_min, lon_max, lat_min, lat_max
SIDE, ENGINE_RES = 20, 32
LAT0, EARTH_KM = 40.70, 6371.0088
MIN_CHECKINS = 10
MAP_EPS = 4.0
IBU_SWEEP = (10, 100, 1000, 10000)

FULL = {"n_users": 500, "eps": [0.5, 1.0, 2.0, 4.0, 8.0], "seeds": 5}
QUICK = {"n_users": 100, "eps": [1.0, 4.0], "seeds": 2}

#: label -> (make_mechanism name, keyword arguments)
MECHANISMS = {
    "WPM (optimal m)": ("wpm", {"base_measure": "optimal"}),
    "WPM (best uniform m)": ("wpm", {"base_measure": "best-uniform"}),
    "WPM (uniform m)": ("wpm", {"base_measure": "uniform"}),
    "WPM entropic": ("wpm-entropic", {"base_measure": "best-uniform"}),
    "KPM": ("kpm", {}),
    "exponential": ("exp", {}),
    "k-RR": ("krr", {}),
}
CHECKED = ("WPM (optimal m)", "KPM", "k-RR")  # first run also through sample_population
COLOURS = {"WPM (optimal m)": "tab:red", "WPM (best uniform m)": "tab:orange",
           "WPM (uniform m)": "tab:brown", "WPM entropic": "tab:pink", "KPM": "tab:blue",
           "exponential": "tab:green", "k-RR": "tab:purple", "heatmap (central DP)": "black"}


@dataclass(frozen=True)
class BlockCounts:
    """The users' counts on the 20 x 20 block (the fields ``sample_population`` reads)."""

    user_ids: np.ndarray
    indptr: np.ndarray
    cells: np.ndarray
    counts: np.ndarray
    n_points: int
    n_outside: int
    n_users_empty: int

    def sizes(self) -> np.ndarray:
        return np.add.reduceat(self.counts, self.indptr[:-1])


def engine_grid() -> Grid:
    """32 x 32 grid whose lower-left 20 x 20 block is the 20 x 20 grid of ``BOX``."""
    x0, x1, y0, y1 = BOX
    w, h = (x1 - x0) / SIDE, (y1 - y0) / SIDE
    return Grid(bounds=(x0, x0 + ENGINE_RES * w, y0, y0 + ENGINE_RES * h),
                resolution=ENGINE_RES, aspect="stretch")


def cell_points_km() -> np.ndarray:
    """``(400, 2)`` cell centres in km (equirectangular at ``LAT0``), flat ``row*20+col``."""
    x0, x1, y0, y1 = BOX
    km_deg = EARTH_KM * math.pi / 180.0
    kx = (x1 - x0) / SIDE * km_deg * math.cos(math.radians(LAT0))
    ky = (y1 - y0) / SIDE * km_deg
    xs, ys = np.meshgrid((np.arange(SIDE) + 0.5) * kx, (np.arange(SIDE) + 0.5) * ky)
    return np.c_[xs.ravel(), ys.ravel()]


def load_users(n_users: int, rng: np.random.Generator) -> tuple[BlockCounts, np.ndarray, dict]:
    """The engine step, the block restriction and the seeded choice of users."""
    t0 = time.perf_counter()
    full = user_cell_counts(str(data_file("gowalla_nyc/checkins.tsv")), grid=engine_grid(),
                            engine="duckdb", sep="\t", names=list(GOWALLA_NYC_COLUMNS))
    seconds = time.perf_counter() - t0
    row, col = full.cells // ENGINE_RES, full.cells % ENGINE_RES
    inside = (row < SIDE) & (col < SIDE)
    owner = np.repeat(np.arange(full.n_users), np.diff(full.indptr))
    sizes = np.bincount(owner[inside], weights=full.counts[inside],
                        minlength=full.n_users).astype(np.int64)
    eligible = np.flatnonzero(sizes >= MIN_CHECKINS)
    chosen = np.sort(rng.choice(eligible, size=n_users, replace=False))
    keep = inside & np.isin(owner, chosen)
    new_owner = np.searchsorted(chosen, owner[keep])
    indptr = np.searchsorted(new_owner, np.arange(n_users + 1)).astype(np.int64)
    counts = BlockCounts(user_ids=full.user_ids[chosen], indptr=indptr,
                         cells=(row * SIDE + col)[keep].astype(np.int64),
                         counts=full.counts[keep], n_points=full.n_points,
                         n_outside=full.n_points - int(full.counts[inside].sum()),
                         n_users_empty=full.n_users_empty)
    mu = np.zeros((n_users, SIDE * SIDE))
    user_sizes = counts.sizes()
    rows = np.repeat(np.arange(n_users), np.diff(indptr))
    mu[rows, counts.cells] = counts.counts / user_sizes[rows]
    info = {"users_in_box": int(full.n_users), "check_ins": int(full.n_points),
            "users_with_min_checkins": int(eligible.size), "min_checkins": MIN_CHECKINS,
            "dropped_outside_block": counts.n_outside,
            "n_users": n_users, "chosen_checkins_mean": float(user_sizes.mean()),
            "chosen_checkins_median": float(np.median(user_sizes)),
            "chosen_cells_per_user_median": float(np.median(np.diff(indptr))),
            "engine_seconds": seconds}
    return counts, mu, info


def w1(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    """Exact W_1 (POT's network simplex) on the support of ``a``."""
    s = a > 0
    return float(ot.emd2(a[s] / a[s].sum(), b / b.sum(), cost[s], numItermax=10_000_000))


def mean_se(values: list[float] | np.ndarray) -> dict:
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()),
            "se": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None,
            "sd": float(v.std(ddof=1)) if v.size > 1 else None, "n": int(v.size)}


def ibu_sweep(hist: np.ndarray, channel: np.ndarray, pop: np.ndarray,
              cost: np.ndarray) -> dict[str, float]:
    """W_1 of IBU after each iteration count of ``IBU_SWEEP`` (warm-started, tol 0)."""
    out, est, done = {}, None, 0
    for steps in IBU_SWEEP:
        est = estimate_linear(hist, channel, n_iter=steps - done, tol=0.0,
                              init=None if est is None else np.maximum(est, 1e-300))
        done = steps
        out[str(steps)] = w1(pop, est, cost)
    return out


def heatmap_estimate(df, grid: Grid, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Central-DP heatmap on the 32 x 32 engine grid, restricted to the 20 x 20 block."""
    res = private_heatmap(df, grid=grid, epsilon=eps, user="user_id", x="longitude",
                          y="latitude", rng=rng)
    block = np.asarray(res.distribution)[:SIDE, :SIDE].ravel()
    total = block.sum()
    return block / total if total > 0 else np.full(block.size, 1.0 / block.size)


def run_eps(eps: float, ie: int, counts: BlockCounts, mu: np.ndarray, pop: np.ndarray,
            cost: np.ndarray, points: np.ndarray, df, cfg: dict, maps: dict) -> dict:
    out: dict = {"epsilon": eps, "mechanisms": {}}
    n = mu.shape[0]
    for label, (name, kwargs) in MECHANISMS.items():
        rec: dict = {}
        t0 = time.perf_counter()
        mech = make_mechanism(name, points=points, epsilon=eps, **kwargs)
        rec["build_seconds"] = time.perf_counter() - t0
        if isinstance(mech, WassersteinProjection):
            rd = mech.release_dict()
            rec["worst_case_w1_km"] = rd["worst_case_w_p"]
            if "ldp_lower_bound_w_p" in rd:
                rec["ldp_lower_bound_w1_km"] = rd["ldp_lower_bound_w_p"]
            if "prop_4_1_bound_w_p" in rd:
                rec["prop_4_1_bound_km"] = rd["prop_4_1_bound_w_p"]
        rec["base_measure_support"] = int(np.count_nonzero(mech.base_measure))
        t0 = time.perf_counter()
        nu = mech.privatize(mu)
        rec["privatize_seconds_per_user"] = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        channel = mech.channel()
        rec["channel_seconds"] = time.perf_counter() - t0
        lin = mu @ channel
        rec["per_user_direct"] = mean_se([w1(mu[u], nu[u], cost) for u in range(n)])
        rec["per_user_linear"] = mean_se([w1(mu[u], lin[u], cost) for u in range(n)])
        # the population: what the direct variant's histogram converges to
        rec["mean_nu_direct_w1"] = w1(pop, nu.mean(axis=0), cost)
        direct, linear, sweeps, krr_w1 = [], [], [], []
        for s in range(cfg["seeds"]):
            key = [SEED, ie, s, list(MECHANISMS).index(label)]
            got = private_sample(nu, base_measure=mech.base_measure, epsilon=eps,
                                 rng=np.random.default_rng(key + [0]))
            if s == 0 and label in CHECKED:
                via = sample_population(counts, mech, variant="direct",
                                        rng=np.random.default_rng(key + [0]))
                rec["direct_identical_via_sample_population"] = bool(
                    np.array_equal(via.indices, got.indices))
            hist = np.bincount(got.indices, minlength=mech.k_v)
            est_d = estimate_direct(hist)
            direct.append(w1(pop, est_d, cost))
            rep = sample_population(counts, mech, variant="linear", channel=channel,
                                    rng=np.random.default_rng(key + [1]))
            lhist = rep.counts_per_output()
            est_l = estimate_linear(lhist, channel)
            linear.append(w1(pop, est_l, cost))
            sweeps.append(ibu_sweep(lhist, channel, pop, cost))
            if name == "krr":
                krr_w1.append(w1(pop, krr_estimate(hist, epsilon=eps, project=True), cost))
                est_k = krr_estimate(hist, epsilon=eps, project=True)
            if s == 0 and eps == MAP_EPS:
                maps[f"{label}: direct histogram"] = est_d
                maps[f"{label}: linear + IBU"] = est_l
                if name == "krr":
                    maps["k-RR estimate"] = est_k
        rec["population_direct_histogram"] = dict(mean_se(direct), runs=direct)
        rec["population_linear_ibu"] = dict(mean_se(linear), runs=linear)
        rec["population_linear_ibu_sweep"] = {
            k: mean_se([sw[k] for sw in sweeps]) for k in sweeps[0]}
        if krr_w1:
            rec["population_krr_estimate"] = dict(mean_se(krr_w1), runs=krr_w1)
        out["mechanisms"][label] = rec
        print(f"  eps={eps:g} {label:22s} per-user direct "
              f"{rec['per_user_direct']['mean']:.3f} linear {rec['per_user_linear']['mean']:.3f}"
              f" | population hist {rec['population_direct_histogram']['mean']:.3f} "
              f"IBU {rec['population_linear_ibu']['mean']:.3f} km", flush=True)
    grid = engine_grid()
    hm, secs = [], []
    for s in range(cfg["seeds"]):
        t0 = time.perf_counter()
        est = heatmap_estimate(df, grid, eps, np.random.default_rng([SEED, ie, s, 99]))
        secs.append(time.perf_counter() - t0)
        hm.append(w1(pop, est, cost))
        if s == 0 and eps == MAP_EPS:
            maps["heatmap (central DP)"] = est
    out["heatmap_central_dp"] = dict(mean_se(hm), runs=hm, seconds_mean=float(np.mean(secs)))
    print(f"  eps={eps:g} heatmap (central DP) population {np.mean(hm):.3f} km", flush=True)
    return out


def summary(out: dict) -> dict:
    per_eps = out["results"]
    s: dict = {}
    w = "WPM (best uniform m)"

    def pu(r, lab, key="per_user_direct"):
        return r["mechanisms"][lab][key]["mean"]

    def pop(r, lab, key="population_direct_histogram"):
        return r["mechanisms"][lab][key]["mean"]

    s["paper_fig3_wpm_histogram_beats_kpm_at_every_eps"] = all(
        pop(r, w) < pop(r, "KPM") for r in per_eps)
    s["per_user_wpm_optimal_beats_kpm_at_every_eps"] = all(
        pu(r, "WPM (optimal m)") < pu(r, "KPM") for r in per_eps)
    s["per_user_best_mechanism"] = {
        str(r["epsilon"]): min(r["mechanisms"], key=lambda lab, r=r: pu(r, lab))
        for r in per_eps}
    s["per_user_linear_minus_direct_wpm_optimal_km"] = {
        str(r["epsilon"]): pu(r, "WPM (optimal m)", "per_user_linear")
        - pu(r, "WPM (optimal m)") for r in per_eps}
    best = {}
    for r in per_eps:
        cands = {f"{lab} / histogram": pop(r, lab) for lab in r["mechanisms"]}
        cands.update({f"{lab} / linear IBU": pop(r, lab, "population_linear_ibu")
                      for lab in r["mechanisms"]})
        cands["k-RR / unbiased estimate"] = pop(r, "k-RR", "population_krr_estimate")
        cands["heatmap (central DP)"] = r["heatmap_central_dp"]["mean"]
        best[str(r["epsilon"])] = sorted(cands.items(), key=lambda kv: kv[1])[:4]
    s["population_best_four"] = best
    s["direct_checks_identical"] = all(
        rec.get("direct_identical_via_sample_population", True)
        for r in per_eps for rec in r["mechanisms"].values())
    return s


def plot(out: dict, maps: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_eps = out["results"]
    eps = [r["epsilon"] for r in per_eps]
    fig = plt.figure(figsize=(17, 10))
    gs = fig.add_gridspec(2, 6, height_ratios=[1.25, 1])
    ax1 = fig.add_subplot(gs[0, :3])
    ax2 = fig.add_subplot(gs[0, 3:])
    for lab in MECHANISMS:
        c = COLOURS[lab]
        d = [r["mechanisms"][lab]["per_user_direct"] for r in per_eps]
        ax1.errorbar(eps, [x["mean"] for x in d], yerr=[x["se"] or 0 for x in d], color=c,
                     marker="o", label=f"{lab} (direct)")
        if lab.startswith("WPM (") or lab == "KPM":
            li = [r["mechanisms"][lab]["per_user_linear"]["mean"] for r in per_eps]
            ax1.plot(eps, li, color=c, ls="--", marker="x", label=f"{lab} (linear)")
        p = [r["mechanisms"][lab]["population_direct_histogram"] for r in per_eps]
        ax2.errorbar(eps, [x["mean"] for x in p], yerr=[x["sd"] or 0 for x in p], color=c,
                     marker="o", label=f"{lab}: histogram")
        if lab in ("WPM (best uniform m)", "WPM (uniform m)", "WPM (optimal m)", "KPM"):
            q = [r["mechanisms"][lab]["population_linear_ibu"] for r in per_eps]
            ax2.errorbar(eps, [x["mean"] for x in q], yerr=[x["sd"] or 0 for x in q],
                         color=c, ls="--", marker="x", label=f"{lab}: linear + IBU")
    k = [r["mechanisms"]["k-RR"]["population_krr_estimate"] for r in per_eps]
    ax2.errorbar(eps, [x["mean"] for x in k], yerr=[x["sd"] or 0 for x in k],
                 color=COLOURS["k-RR"], ls=":", marker="s", label="k-RR: unbiased estimate")
    h = [r["heatmap_central_dp"] for r in per_eps]
    ax2.errorbar(eps, [x["mean"] for x in h], yerr=[x["sd"] or 0 for x in h], color="black",
                 ls="-.", marker="D", label="heatmap, central DP (paper 002)")
    for ax, title in ((ax1, "per user: W1(mu_u, nu_u), mean +- s.e. over users"),
                      (ax2, "population from one report per user: W1(true, estimate), "
                            "mean +- sd over runs")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("W1 (km)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    ax2.legend(fontsize=6, ncol=2)
    panels = [("true population", out["population"]),
              ("WPM best-uniform m: histogram", maps.get("WPM (best uniform m): direct histogram")),
              ("KPM: histogram", maps.get("KPM: direct histogram")),
              ("WPM best-uniform m: linear + IBU",
               maps.get("WPM (best uniform m): linear + IBU")),
              ("k-RR: unbiased estimate", maps.get("k-RR estimate")),
              ("heatmap (central DP)", maps.get("heatmap (central DP)"))]
    for j, (title, arr) in enumerate(panels):
        ax = fig.add_subplot(gs[1, j])
        if arr is not None:  # each panel its own colour scale, as in the paper's Fig. 4
            ax.imshow(np.asarray(arr).reshape(SIDE, SIDE), origin="lower", cmap="magma",
                      vmin=0)
        ax.set_title(f"{title}\n(eps = {MAP_EPS:g}, run 0)" if j else title, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"Paper 003 App. M.1 on Gowalla NYC: {out['data']['n_users']} users, "
                 f"{SIDE} x {SIDE} grid, W1 in km (seeded, not for publication)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (about a minute)")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    folder = RESULTS / "quick" if args.quick else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    counts, mu, info = load_users(cfg["n_users"], np.random.default_rng([SEED, 0]))
    pop = mu.mean(axis=0)
    points = cell_points_km()
    cost = cost_matrix(points, points)
    df = load_gowalla_nyc()
    # the engine reads the header-less TSV's ids as text
    df = df[df["user_id"].astype(str).isin({str(u) for u in counts.user_ids.tolist()})]
    x0, x1, y0, y1 = BOX
    df = df[(df["longitude"] >= x0) & (df["longitude"] < x1) & (df["latitude"] >= y0)
            & (df["latitude"] < y1)]
    out: dict = {
        "description": "paper 003 App. M.1 (Fig. 3-4) on Gowalla NYC with privot (seeded, "
                       "not for publication)",
        "settings": {"box": BOX, "grid": f"{SIDE} x {SIDE}",
                     "engine_grid": {"bounds": list(engine_grid().bounds),
                                     "resolution": ENGINE_RES, "aspect": "stretch"},
                     "cost": "Euclidean km between cell centres, p = 1",
                     "max_cost_km": float(cost.max()),
                     "users": f"seeded random sample of {cfg['n_users']} users with >= "
                              f"{MIN_CHECKINS} check-ins in the box",
                     "mechanisms": {k: [v[0], v[1]] for k, v in MECHANISMS.items()},
                     "entropic": "lambda = 0.01 max C, 200 fixed iterations (privot defaults)",
                     "ibu": "estimate_linear defaults: n_iter 1000, tol 1e-9, uniform start",
                     "heatmap": "private_heatmap pyramid (w = 20, gamma = 1/sqrt 2) on the "
                                "32 x 32 engine grid, 20 x 20 block renormalised",
                     "eps": cfg["eps"], "seeds": cfg["seeds"], "seed": SEED,
                     "quick": args.quick},
        "data": info,
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "pot": ot.__version__, "machine": platform.machine(),
                        "privot_git": git_state()},
        "results": [],
    }
    maps: dict = {}
    for ie, eps in enumerate(cfg["eps"]):
        out["results"].append(run_eps(eps, ie, counts, mu, pop, cost, points, df, cfg, maps))
    out["summary"] = summary(out)
    out["total_seconds"] = time.perf_counter() - t_start
    out["population"] = pop.tolist()
    out["maps_eps_" + f"{MAP_EPS:g}"] = {k: np.asarray(v).tolist() for k, v in maps.items()}
    path = folder / "sampling_checkins.json"
    path.write_text(json.dumps(out, indent=1))
    plot(out, maps, folder / "sampling_checkins.png")
    print(json.dumps(out["summary"], indent=1))
    print(f"total {out['total_seconds']:.0f} s; wrote {path}")


if __name__ == "__main__":
    main()
