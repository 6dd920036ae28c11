"""The private-sampling error statement on real data (issue 28): Gowalla NYC check-ins.

``privot.sampling.error`` states, from public parameters only, (1) a certified
worst-case bound on the per-user :math:`W_1(\\mu_u, \\rho_u)` between a user's
distribution and the law of its released sample (confidence 1) and (2) in
``details["population"]`` a bound on :math:`W_1(\\bar\\mu, \\hat p)` between the
population and the server's estimate from ``n`` reports, at ``population_confidence``
(0.999) -- for the direct variant's report histogram; k-RR's debiased estimate is listed
under ``not_covered`` (``docs/errors/sampling.md``). This script checks both on real users
and measures, as the curator, what the statement leaves to the data.

Setup (the conventions of ``bench_sampling_checkins.py``, whose loaders it imports): the
public NYC box lon -74.26..-73.70, lat 40.48..40.92, a 20 x 20 grid of it (cells about
2.36 km x 2.45 km), Euclidean ground distance in **km** between cell centres
(equirectangular at 40.70 deg), the same seeded sample of 500 of the users with >= 10
check-ins in the box (the engine step ``user_cell_counts`` on DuckDB). The raw check-ins
of those users come from ``privot.datasets.load_gowalla_nyc`` and are assigned to cells by
the same grid rule (checked equal to the engine's counts). The counts carry a public grid
in km (``Grid((0, 20 kx, 0, 20 ky), 20, dyadic=False)``, centres equal to the km cell
centres), so ``sample_population`` records the statement ``population_error`` gives, in
km, for both mechanisms. Mechanisms: exact WPM with its default base measure
(``make_mechanism("wpm")``: best uniform) and k-RR, direct variant, eps in
{0.5, 1, 2, 4, 8}.

Measured
--------
1. **Per user** (every chosen user): the exact :math:`W_1` (POT's network simplex)
   between :math:`\\mu_u` and the law the device draws from (the snapped
   :math:`M[\\mu_u]`, ``snap_to_polytope`` at b = 61), against the statement's ``bound``:
   the number of users above it (must be 0), bound / median and bound / max, and the
   largest Dirac ``dirac_w1`` (the bound is attained there).
2. **Population estimate**, ``releases`` seeded releases of one report per user: the
   observed :math:`W_1(\\bar\\mu, \\text{estimate})` (WPM: the report histogram; k-RR:
   ``PopulationSample.estimate()``, the debiased estimate projected on the simplex).
   WPM: exceedances of ``details["population"]["bound"]`` / releases, with the one-sided
   binomial test against 1 - 0.999, and bound / median observed. k-RR (not covered): the
   observed error and the release's own data-dependent bootstrap radius
   (``estimate_intervals().w1_radius``, nominal 0.9, what ``estimate_uncertainty.json``
   publishes), its exceedances tested against 0.1. Release 0 of WPM goes through
   ``sample_population`` (its recorded statement and reports checked equal to the
   computed ones); the others draw the same reports with ``private_sample`` from
   :math:`M[\\mu_u]` computed once (what ``sample_population`` does, without recomputing
   the LP 500 times per release); every k-RR release goes through ``sample_population``.
3. **The data-dependent parts, measured by the curator**:
   * WPM: the estimator's bias :math:`W_1(\\bar\\mu, \\bar\\rho)` (the histogram
     estimates the average release law :math:`\\bar\\rho`, not :math:`\\bar\\mu`), the
     statement's term for it being the worst case ``B``; the sampling part
     :math:`W_1(\\bar\\rho, \\hat p)` against its term; and the curator's data-dependent
     bound :math:`W_1(\\bar\\mu, \\bar\\rho) + \\tfrac D2 \\min(2, \\sum_j
     \\sqrt{\\bar\\rho_j / n} + \\sqrt{2 \\ln(1/\\delta)/n})` (the same argument, the data's
     :math:`\\bar\\rho` in place of the worst case), with its coverage;
   * k-RR: the projected estimate's bias :math:`W_1(\\bar\\mu, \\text{mean estimate})`
     (mean over the releases: Monte-Carlo noise included);
   * both: the **within-cell discretisation** that no cell-level statement covers,
     :math:`W_1` between the raw check-in points and their cell centres, per user and
     for the population (each user weight 1/n, each check-in 1/n_u). It is exactly the
     mean distance from a check-in to its own cell centre (the nearest centre, so that
     coupling is optimal; checked), and by the triangle inequality the error against the
     raw check-ins is at most it plus the cell-level error.

All randomness is seeded (``SEED``): reproducible and **not fit for publication**.
Writes ``benchmarks/results/error_sampling.json`` and ``error_sampling.png``. Run:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_error_sampling.py`` (200 releases per
setting; 453 s on 2 shared cores at a load average of about 4, most of it the k-RR
releases' bootstrap radii; ``--quick``: 100 users, eps {1, 4}, 20 releases, into
``results/quick/``, about 30 s; ``--replot`` redraws the PNG from the JSON).
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
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import ot  # noqa: E402
from scipy import stats  # noqa: E402

import bench_sampling_checkins as checkins  # noqa: E402
from _common import git_state  # noqa: E402
from privot.datasets import load_gowalla_nyc  # noqa: E402
from privot.grid import Grid  # noqa: E402
from privot.sampling import (  # noqa: E402
    SampleParams,
    cost_matrix,
    dirac_w1,
    make_mechanism,
    private_sample,
)
from privot.sampling.device import DEFAULT_BITS, grid_polytope, snap_to_polytope  # noqa: E402
from privot.sampling.error import population_error  # noqa: E402
from privot.sampling.estimators import estimate_direct  # noqa: E402
from privot.sampling.population import sample_population  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEED = checkins.SEED  # the same 500 users as bench_sampling_checkins.py
SIDE = checkins.SIDE
FULL = {"n_users": 500, "eps": [0.5, 1.0, 2.0, 4.0, 8.0], "releases": 200}
QUICK = {"n_users": 100, "eps": [1.0, 4.0], "releases": 20}
#: label -> make_mechanism name (default options: WPM's default base measure)
MECHANISMS = {"WPM": "wpm", "k-RR": "krr"}
COLOURS = {"WPM": "tab:red", "k-RR": "tab:purple"}
#: Nominal level of the release's bootstrap W1 radius (``estimate_intervals`` default).
RADIUS_LEVEL = 0.9


@dataclass(frozen=True)
class GridCounts:
    """The users' block counts with a public grid in km (what ``sample_population``
    reads; the grid makes it record the statement in km for every mechanism)."""

    user_ids: np.ndarray
    indptr: np.ndarray
    cells: np.ndarray
    counts: np.ndarray
    n_points: int
    n_outside: int
    n_users_empty: int
    grid: Grid


def km_grid(points: np.ndarray) -> Grid:
    """The 20 x 20 grid in km whose cell centres are ``points`` (checked)."""
    kx, ky = points[1, 0] - points[0, 0], points[SIDE, 1] - points[0, 1]
    grid = Grid((0.0, SIDE * kx, 0.0, SIDE * ky), SIDE, dyadic=False, aspect="stretch")
    if not np.allclose(grid.cell_centre_points(), points, rtol=0, atol=1e-9):
        raise RuntimeError("the km grid's cell centres differ from the km points")
    return grid


def w1(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    """Exact W_1 (POT's network simplex) on the support of ``a``."""
    s = a > 0
    return float(ot.emd2(a[s] / a[s].sum(), b / b.sum(), cost[s], numItermax=10_000_000))


def raw_checkins(counts: Any, points: np.ndarray) -> dict[str, np.ndarray]:
    """The chosen users' raw check-ins (``load_gowalla_nyc``), in km, with their cell.

    Assigned by the engine grid's rule (``Grid.assign``) and checked to reproduce the
    engine step's per-user counts exactly.
    """
    x0, x1, y0, y1 = checkins.BOX
    df = load_gowalla_nyc()
    ids = [str(u) for u in counts.user_ids.tolist()]
    df = df[df["user_id"].astype(str).isin(set(ids))]
    df = df[(df["longitude"] >= x0) & (df["longitude"] < x1) & (df["latitude"] >= y0)
            & (df["latitude"] < y1)]
    lon, lat = df["longitude"].to_numpy(), df["latitude"].to_numpy()
    got = checkins.engine_grid().assign(lon, lat)
    if not got.kept.all():
        raise RuntimeError("a check-in inside the box fell outside the engine grid")
    row, col = got.cells // checkins.ENGINE_RES, got.cells % checkins.ENGINE_RES
    if np.any(row >= SIDE) or np.any(col >= SIDE):
        raise RuntimeError("a check-in inside the box fell outside the 20 x 20 block")
    cell = row * SIDE + col
    index = {u: i for i, u in enumerate(ids)}
    owner = np.array([index[u] for u in df["user_id"].astype(str)], dtype=np.int64)
    n = len(ids)
    mine = np.zeros((n, SIDE * SIDE), dtype=np.int64)
    np.add.at(mine, (owner, cell), 1)
    engine = np.zeros_like(mine)
    rows = np.repeat(np.arange(n), np.diff(counts.indptr))
    engine[rows, counts.cells] = counts.counts
    if not np.array_equal(mine, engine):
        raise RuntimeError("the raw check-ins do not reproduce the engine's counts")
    km_deg = checkins.EARTH_KM * math.pi / 180.0
    xy = np.c_[(lon - x0) * km_deg * math.cos(math.radians(checkins.LAT0)),
               (lat - y0) * km_deg]
    return {"xy": xy, "cell": cell, "owner": owner}


def discretisation(raw: dict[str, np.ndarray], points: np.ndarray, n: int) -> dict:
    """W_1 between the raw check-ins and their cell centres, per user and population.

    Each check-in's own cell centre is its nearest centre (checked), so moving every
    check-in to it is an optimal coupling: the W_1 is the mean distance.
    """
    xy, cell, owner = raw["xy"], raw["cell"], raw["owner"]
    dist = np.linalg.norm(xy - points[cell], axis=1)
    nearest = np.empty(xy.shape[0])
    for start in range(0, xy.shape[0], 4096):
        block = xy[start:start + 4096]
        nearest[start:start + 4096] = cost_matrix(block, points).min(axis=1)
    if np.any(dist > nearest + 1e-9):
        raise RuntimeError("a check-in is nearer another cell centre than its own")
    sizes = np.bincount(owner, minlength=n)
    per_user = np.bincount(owner, weights=dist, minlength=n) / sizes
    return {"per_user_median_km": float(np.median(per_user)),
            "per_user_mean_km": float(per_user.mean()),
            "per_user_max_km": float(per_user.max()),
            "per_user_min_km": float(per_user.min()),
            "population_km": float(per_user.mean()),
            "check_ins": int(xy.shape[0]),
            "cell_half_diagonal_km": float(0.5 * math.hypot(points[1, 0] - points[0, 0],
                                                            points[SIDE, 1] - points[0, 1])),
            "per_user_km": per_user.tolist()}


def binom_p(exceed: int, n: int, rate: float) -> float:
    """One-sided binomial p-value: P(X >= exceed) for X ~ Bin(n, rate)."""
    return float(stats.binomtest(exceed, n, rate, alternative="greater").pvalue)


def per_user(mech: Any, mu: np.ndarray, statement: Any, cost: np.ndarray,
             points: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray]:
    """Exact W_1(mu_u, snapped M[mu_u]) for every user: ``(record, M[mu], rho_bar)``,
    ``rho_bar`` the average snapped law (what the report histogram estimates)."""
    t0 = time.perf_counter()
    nu = mech.privatize(mu)
    seconds = time.perf_counter() - t0
    poly = grid_polytope(mech.base_measure, epsilon=float(mech.epsilon), bits=DEFAULT_BITS)
    law = snap_to_polytope(nu, polytope=poly).astype(np.float64) * 2.0 ** -DEFAULT_BITS
    per = np.array([w1(mu[u], law[u], cost) for u in range(mu.shape[0])])
    dirac = dirac_w1(mech, points=points)
    bound = float(statement.bound)
    rec = {"bound_km": bound, "path": statement.details["path"],
           "attained": bool(statement.details["attained"]),
           "worst_input": int(statement.details["worst_input"]),
           "max_dirac_w1_km": float(dirac.max()),
           "median_km": float(np.median(per)), "mean_km": float(per.mean()),
           "max_km": float(per.max()), "n_users": int(per.size),
           "n_above_bound": int(np.sum(per > bound)),
           "bound_over_median": bound / float(np.median(per)),
           "bound_over_max": bound / float(per.max()),
           "privatize_seconds": seconds, "per_user_km": per.tolist()}
    return rec, nu, law.mean(axis=0)


def releases_wpm(mech: Any, nu: np.ndarray, counts: GridCounts, pop: np.ndarray,
                 rho_bar: np.ndarray, statement: Any, cost: np.ndarray, key: list[int],
                 n_rel: int) -> dict:
    """Seeded releases of the direct WPM; the histogram against the stated bound."""
    n = nu.shape[0]
    popd = statement.details["population"]
    bound, conf = float(popd["bound"]), float(popd["confidence"])
    diam = float(cost.max())
    l1 = float(np.sqrt(rho_bar / n).sum()) + math.sqrt(2 * math.log(1 / (1 - conf)) / n)
    bias = w1(pop, rho_bar, cost)
    curator = bias + 0.5 * diam * min(2.0, l1)
    observed, sampling = [], []
    checks: dict[str, bool] = {}
    for r in range(n_rel):
        rng_key = key + [r]
        got = private_sample(nu, base_measure=mech.base_measure, epsilon=float(mech.epsilon),
                             rng=np.random.default_rng(rng_key))
        if r == 0:  # the same release through the library's path, with its statement
            s = sample_population(counts, mech, variant="direct",
                                  rng=np.random.default_rng(rng_key))
            checks["reports_identical_via_sample_population"] = bool(
                np.array_equal(s.indices, got.indices))
            checks["recorded_statement_equal"] = bool(s.error == statement)
            checks["estimate_equal"] = bool(np.allclose(
                s.estimate(), estimate_direct(np.bincount(got.indices, minlength=mech.k_v))))
        est = estimate_direct(np.bincount(got.indices, minlength=mech.k_v))
        observed.append(w1(pop, est, cost))
        sampling.append(w1(rho_bar, est, cost))
    obs = np.array(observed)
    exceed = int(np.sum(obs > bound))
    exceed_c = int(np.sum(obs > curator))
    return {"stated_bound_km": bound, "confidence": conf,
            "terms_km": popd["terms"],
            "observed_median_km": float(np.median(obs)), "observed_max_km": float(obs.max()),
            "observed_mean_km": float(obs.mean()),
            "exceedances": exceed, "releases": n_rel,
            "binomial_p": binom_p(exceed, n_rel, 1 - conf),
            "bound_over_median": bound / float(np.median(obs)),
            "bound_over_max": bound / float(obs.max()),
            "curator": {"bias_w1_pop_rho_bar_km": bias,
                        "bias_over_term_B": bias / float(popd["terms"]["mechanism"]),
                        "sampling_observed_median_km": float(np.median(sampling)),
                        "sampling_observed_max_km": float(np.max(sampling)),
                        "sampling_term_km": float(popd["terms"]["sampling"]),
                        "data_dependent_bound_km": curator,
                        "data_dependent_exceedances": exceed_c,
                        "data_dependent_binomial_p": binom_p(exceed_c, n_rel, 1 - conf),
                        "data_dependent_bound_over_median": curator / float(np.median(obs))},
            "checks": checks, "observed_km": observed}


def releases_krr(mech: Any, counts: GridCounts, pop: np.ndarray, cost: np.ndarray,
                 key: list[int], n_rel: int) -> dict:
    """Seeded k-RR releases: the debiased estimate's error and the bootstrap radius."""
    observed, radii, ests = [], [], []
    not_covered = ""
    for r in range(n_rel):
        s = sample_population(counts, mech, variant="direct",
                              rng=np.random.default_rng(key + [r]))
        if r == 0:
            not_covered = s.error.not_covered
            recorded_none = s.error.details["population"]["bound"] is None
        est = s.estimate()
        ests.append(est)
        observed.append(w1(pop, est, cost))
        radii.append(float(s.estimate_intervals().w1_radius))
    obs, rad = np.array(observed), np.array(radii)
    exceed = int(np.sum(obs > rad))
    return {"stated_bound_km": None, "recorded_population_bound_is_none": recorded_none,
            "not_covered": not_covered,
            "observed_median_km": float(np.median(obs)), "observed_max_km": float(obs.max()),
            "observed_mean_km": float(obs.mean()), "releases": n_rel,
            "curator": {"bias_w1_pop_mean_estimate_km": w1(pop, np.mean(ests, axis=0), cost),
                        "bootstrap_radius_level": RADIUS_LEVEL,
                        "bootstrap_radius_median_km": float(np.median(rad)),
                        "bootstrap_exceedances": exceed,
                        "bootstrap_binomial_p": binom_p(exceed, n_rel, 1 - RADIUS_LEVEL),
                        "bootstrap_radius_over_median_observed":
                            float(np.median(rad)) / float(np.median(obs))},
            "observed_km": observed, "bootstrap_radius_km": radii}


def plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = out["results"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    ax = axes[0, 0]
    for lab in MECHANISMS:
        rs = [r for r in res if r["mechanism"] == lab]
        eps = [r["epsilon"] for r in rs]
        c = COLOURS[lab]
        ax.plot(eps, [r["per_user"]["bound_km"] for r in rs], color=c, lw=2,
                label=f"{lab}: stated bound")
        ax.plot(eps, [r["per_user"]["max_km"] for r in rs], color=c, ls="--", marker="^",
                label=f"{lab}: max over users")
        ax.plot(eps, [r["per_user"]["median_km"] for r in rs], color=c, ls=":", marker="o",
                label=f"{lab}: median over users")
    ax.set_title("per user: W1(mu_u, law of its report), exact", fontsize=10)
    ax = axes[0, 1]
    rs = [r for r in res if r["mechanism"] == "WPM"]
    eps = [r["epsilon"] for r in rs]
    pops = [r["population"] for r in rs]
    ax.plot(eps, [p["stated_bound_km"] for p in pops], color="tab:red", lw=2,
            label="WPM: stated bound (0.999)")
    ax.plot(eps, [p["curator"]["data_dependent_bound_km"] for p in pops], color="tab:red",
            ls="-.", label="WPM: curator's data-dependent bound")
    ax.plot(eps, [p["observed_max_km"] for p in pops], color="tab:red", ls="--", marker="^",
            label="WPM: max observed")
    ax.plot(eps, [p["observed_median_km"] for p in pops], color="tab:red", ls=":",
            marker="o", label="WPM: median observed")
    rk = [r for r in res if r["mechanism"] == "k-RR"]
    ek = [r["epsilon"] for r in rk]
    ax.plot(ek, [r["population"]["curator"]["bootstrap_radius_median_km"] for r in rk],
            color="tab:purple", lw=2, label="k-RR: bootstrap radius (0.9), median")
    ax.plot(ek, [r["population"]["observed_max_km"] for r in rk], color="tab:purple",
            ls="--", marker="^", label="k-RR: max observed (not covered)")
    ax.plot(ek, [r["population"]["observed_median_km"] for r in rk], color="tab:purple",
            ls=":", marker="o", label="k-RR: median observed")
    ax.set_title(f"population: W1(true, estimate), {out['settings']['releases']} releases",
                 fontsize=10)
    ax = axes[1, 0]
    x = np.arange(len(rs))
    wid = 0.2
    cur = [p["curator"] for p in pops]
    ax.bar(x - 1.5 * wid, [p["terms_km"]["mechanism"] for p in pops], wid,
           color="tab:red", alpha=0.4, label="term B (worst-case user)")
    ax.bar(x - 0.5 * wid, [c["bias_w1_pop_rho_bar_km"] for c in cur], wid, color="tab:red",
           label="measured bias W1(mu_bar, rho_bar)")
    ax.bar(x + 0.5 * wid, [p["terms_km"]["sampling"] for p in pops], wid, color="tab:blue",
           alpha=0.4, label="sampling term (0.999)")
    ax.bar(x + 1.5 * wid, [c["sampling_observed_max_km"] for c in cur], wid,
           color="tab:blue", label="max observed W1(rho_bar, p_hat)")
    ax.set_xticks(x, [f"eps={e:g}" for e in eps])
    ax.set_ylabel("km")
    ax.set_title("WPM population bound: its terms vs what this population gives",
                 fontsize=10)
    ax.set_ylim(0, 1.4 * max(p["terms_km"]["sampling"] for p in pops))
    ax.legend(fontsize=7, ncol=2, loc="upper center")
    ax = axes[1, 1]
    disc = out["discretisation"]
    ax.hist(disc["per_user_km"], bins=40, color="tab:gray")
    ax.axvline(disc["population_km"], color="black", ls="--",
               label=f"population: {disc['population_km']:.2f} km")
    ax.axvline(disc["cell_half_diagonal_km"], color="tab:orange", ls=":",
               label=f"cell half-diagonal: {disc['cell_half_diagonal_km']:.2f} km")
    ax.set_xlabel("W1(raw check-ins, cell centres), km")
    ax.set_ylabel("users")
    ax.set_title("within-cell discretisation (not covered by the statement)", fontsize=10)
    ax.legend(fontsize=8)
    for a in (axes[0, 0], axes[0, 1]):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("epsilon")
        a.set_ylabel("W1 (km)")
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle(f"Sampling error statement on Gowalla NYC: {out['data']['n_users']} users, "
                 f"{SIDE} x {SIDE} grid, km (seeded, not for publication)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (under a minute)")
    parser.add_argument("--replot", action="store_true",
                        help="redraw the PNG from the JSON, nothing run")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    folder = RESULTS / "quick" if args.quick else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    if args.replot:
        plot(json.loads((folder / "error_sampling.json").read_text()),
             folder / "error_sampling.png")
        return
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    block, mu, info = checkins.load_users(cfg["n_users"], np.random.default_rng([SEED, 0]))
    points = checkins.cell_points_km()
    cost = cost_matrix(points, points)
    grid = km_grid(points)
    counts = GridCounts(user_ids=block.user_ids, indptr=block.indptr, cells=block.cells,
                        counts=block.counts, n_points=block.n_points,
                        n_outside=block.n_outside, n_users_empty=block.n_users_empty,
                        grid=grid)
    pop = mu.mean(axis=0)
    n = mu.shape[0]
    raw = raw_checkins(block, points)
    disc = discretisation(raw, points, n)
    print(f"discretisation: population {disc['population_km']:.3f} km, per user median "
          f"{disc['per_user_median_km']:.3f} max {disc['per_user_max_km']:.3f} km", flush=True)
    out: dict = {
        "description": "issue 28: the private-sampling error statement on Gowalla NYC "
                       "(seeded, not for publication)",
        "settings": {"box": checkins.BOX, "grid": f"{SIDE} x {SIDE}",
                     "cost": "Euclidean km between cell centres (equirectangular at "
                             f"{checkins.LAT0} deg), p = 1",
                     "max_cost_km": float(cost.max()),
                     "users": f"seeded random sample of {n} users with >= "
                              f"{checkins.MIN_CHECKINS} check-ins in the box (the users of "
                              "bench_sampling_checkins.py)",
                     "mechanisms": MECHANISMS, "variant": "direct",
                     "eps": cfg["eps"], "releases": cfg["releases"], "seed": SEED,
                     "bits": DEFAULT_BITS, "quick": args.quick},
        "data": info,
        "discretisation": disc,
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "pot": ot.__version__, "machine": platform.machine(),
                        "cpus": os.cpu_count(), "privot_git": git_state()},
        "results": [],
    }
    for ie, eps in enumerate(cfg["eps"]):
        for im, (lab, name) in enumerate(MECHANISMS.items()):
            mech = make_mechanism(name, points=points, epsilon=eps)
            t0 = time.perf_counter()
            statement = population_error(SampleParams(mechanism=mech), grid, n)
            stmt_seconds = time.perf_counter() - t0
            rec: dict = {"mechanism": lab, "epsilon": eps, "statement": statement.to_dict(),
                         "statement_seconds": stmt_seconds}
            rec["per_user"], nu, rho_bar = per_user(mech, mu, statement, cost, points)
            key = [SEED, 1, ie, im]
            t0 = time.perf_counter()
            if name == "wpm":
                rec["population"] = releases_wpm(mech, nu, counts, pop, rho_bar, statement,
                                                 cost, key, cfg["releases"])
            else:
                rec["population"] = releases_krr(mech, counts, pop, cost, key,
                                                 cfg["releases"])
            rec["population"]["seconds"] = time.perf_counter() - t0
            out["results"].append(rec)
            pu, po = rec["per_user"], rec["population"]
            line = (f"eps={eps:g} {lab:5s} per-user bound {pu['bound_km']:.2f} km, max "
                    f"{pu['max_km']:.2f} median {pu['median_km']:.2f} (above: "
                    f"{pu['n_above_bound']}) | population observed median "
                    f"{po['observed_median_km']:.2f} max {po['observed_max_km']:.2f}")
            if name == "wpm":
                line += (f", bound {po['stated_bound_km']:.2f} exceed {po['exceedances']}/"
                         f"{po['releases']} p={po['binomial_p']:.3g}, bias "
                         f"{po['curator']['bias_w1_pop_rho_bar_km']:.2f}")
            else:
                c = po["curator"]
                line += (f", bootstrap radius {c['bootstrap_radius_median_km']:.2f} exceed "
                         f"{c['bootstrap_exceedances']}/{po['releases']}, bias "
                         f"{c['bias_w1_pop_mean_estimate_km']:.2f}")
            print(line + f" ({po['seconds']:.0f} s)", flush=True)
    wpm = [r for r in out["results"] if r["mechanism"] == "WPM"]
    out["summary"] = {
        "per_user_all_within_bound": all(r["per_user"]["n_above_bound"] == 0
                                         for r in out["results"]),
        "per_user_bound_over_median": {f"{r['mechanism']} eps={r['epsilon']:g}":
                                       r["per_user"]["bound_over_median"]
                                       for r in out["results"]},
        "per_user_bound_over_max": {f"{r['mechanism']} eps={r['epsilon']:g}":
                                    r["per_user"]["bound_over_max"] for r in out["results"]},
        "wpm_population_exceedances": {f"eps={r['epsilon']:g}": [
            r["population"]["exceedances"], r["population"]["releases"],
            r["population"]["binomial_p"]] for r in wpm},
        "wpm_population_bound_over_median": {f"eps={r['epsilon']:g}":
                                             r["population"]["bound_over_median"]
                                             for r in wpm},
        "wpm_checks_pass": all(all(r["population"]["checks"].values()) for r in wpm),
        "discretisation_population_km": disc["population_km"],
    }
    out["total_seconds"] = time.perf_counter() - t_start
    out["load_average"] = {"start": list(load_start), "end": list(os.getloadavg())}
    path = folder / "error_sampling.json"
    path.write_text(json.dumps(out, indent=1))
    plot(out, folder / "error_sampling.png")
    print(json.dumps(out["summary"], indent=1))
    print(f"total {out['total_seconds']:.0f} s; wrote {path}")


if __name__ == "__main__":
    main()
