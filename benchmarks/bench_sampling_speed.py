"""Speed of the WPM solvers (paper 003) at k = k_v = 400, each against a baseline run in
the same process.

Setup: the 20 x 20 grid of the unit square as input and output points (k = k_v = 400),
eps = 2, the best uniform base measure (the paper's Gowalla setting, App. M), and
synthetic check-in users (seeded): each user has 1-3 home points uniform in the square
and 5-50 check-ins around them (Gaussian, sd 0.08, clipped to the square), binned to the
nearest grid point; ``mu`` is the user's histogram (sparse, like the paper's Gowalla
users).

(1) **Entropic WPM** (Algorithm 1, ``wpm_entropic``), the paper's lambda = 0.01 max C and
    40 fixed iterations (``tol = 0``: the release path's data-independent count):

    * ``sqeuclidean`` (``C = |x - v|^2``, W_2 with p = 2): the cost is a sum over the two
      coordinates, so the kernel is ``K_x (x) K_y`` (separable, detected from ``C``);
      **100,000 users at once** with 1 and 2 worker threads (``n_jobs``), and with 2
      threads and ``N_ITER_SHORT`` = 20 iterations (the error sweep shows 20 is as
      accurate as 40 for this cost);
    * ``euclidean``, p = 1 (the paper's Gowalla metric): not separable, dense kernel
      products; ``N_DENSE`` users;
    * baseline: the log-domain solver (``method="banded"``, the previous default path),
      on ``N_BASELINE`` users of the same set; the ratio is of the times per user;
    * error against the exact LP (network simplex) on ``N_ERROR`` users:
      ``W_p(nu_lambda, mu) - W_p(nu*, mu)`` with both distances exact (``ot.emd2``),
      absolute and relative, next to Prop. 4.1's bound, for 10-200 iterations; and the
      largest difference between the scaling-domain and log-domain outputs.

(2) **Exact WPM**: seconds per user of the network simplex (``wpm_exact``) against HiGHS on
    the LP of Sec. 4 (``solver="highs"``), the same users: check-in users (the LP keeps
    the rows of supp(mu)) and Dirichlet(0.1) users (full support: the dense formulation,
    k k_v + k_v = 160,400 variables).

(3) **The optimal base measure m*** to a certified gap of 1% (``optimal_base_measure``):
    the default cutting plane against the paper's mirror descent (App. G, T = 2000 steps,
    the default budget), for both costs and eps in {1, 2, 5}: wall time and the certified
    gap reached.

Machine load (``os.getloadavg``) is recorded before every timed section: other jobs share
the 2 cores, so times are pessimistic when the load is above 1. BLAS is pinned to one
thread (``OPENBLAS_NUM_THREADS=1`` etc., set before numpy is imported); parallelism is
``n_jobs`` threads.

Writes ``benchmarks/results/sampling_speed.json`` and ``sampling_speed.png``.
Run: ``python benchmarks/bench_sampling_speed.py`` (about 4 min on 2 cores;
``--quick`` for a smoke run).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import ot  # noqa: E402

from _common import checkin_users  # noqa: E402
from privot.sampling.base_measure import (  # noqa: E402
    best_uniform_base_measure,
    optimal_base_measure,
)
from privot.sampling.cost import cost_matrix  # noqa: E402
from privot.sampling.polytope import in_polytope  # noqa: E402
from privot.sampling.wpm_entropic import wpm_entropic  # noqa: E402
from privot.sampling.wpm_exact import wpm_exact  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_502
SIDE, EPS, LAM_REL, N_ITER = 20, 2.0, 0.01, 40
N_ITER_SHORT = 20  # enough for the squared Euclidean cost (see the error sweep)
N_USERS, N_DENSE, N_BASELINE, N_ERROR = 100_000, 10_000, 2_000, 300
ITER_SWEEP = (10, 20, 40, 80, 200)
N_EXACT_SPARSE, N_EXACT_DENSE, N_HIGHS_SPARSE, N_HIGHS_DENSE = 100, 20, 20, 5
MSTAR_EPS = (1.0, 2.0, 5.0)
TARGETS = {"entropic_100k_seconds": 30.0, "mstar_seconds": 10.0, "mstar_gap": 0.01}
COSTS = {"sqeuclidean": ("sqeuclidean", 1.0, 2.0), "euclidean": ("euclidean", 1.0, 1.0)}


def grid(side: int) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"), -1)
    return g.reshape(-1, 2) / (side - 1)


def _plain(obj):
    """numpy scalars to Python ones for the JSON."""
    return obj.item() if hasattr(obj, "item") else str(obj)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def w_p(mu: np.ndarray, nu: np.ndarray, cost: np.ndarray, p: float) -> float:
    return max(float(ot.emd2(mu, nu, cost)), 0.0) ** (1.0 / p)


# ----------------------------------------------------------------------------- (1)

def entropic_section(users: np.ndarray, pts: np.ndarray, quick: bool) -> dict:
    out: dict = {"lambda_over_max_c": LAM_REL, "n_iter": N_ITER, "epsilon": EPS, "costs": {}}
    for name, (metric, cp, p) in COSTS.items():
        cost = cost_matrix(pts, pts, metric=metric, p=cp)
        m = best_uniform_base_measure(cost, EPS)
        lam = LAM_REL * float(cost.max())
        kw = {"lam": lam, "p": p, "max_iter": N_ITER, "tol": 0.0}
        sec: dict = {"metric": metric, "p": p, "lambda": lam,
                     "base_measure_total": float(m.sum())}
        n_main = users.shape[0] if name == "sqeuclidean" else min(N_DENSE, users.shape[0])
        runs = []
        plans = ((1, N_ITER), (2, N_ITER)) + (((2, N_ITER_SHORT),) if name == "sqeuclidean"
                                               else ())
        for jobs, n_iter in plans:
            before = load()
            res, dt = timed(wpm_entropic, users[:n_main], cost, m, EPS, n_jobs=jobs,
                            **{**kw, "max_iter": n_iter})
            runs.append({"n_jobs": jobs, "n_iter": n_iter, "n_users": n_main, "seconds": dt,
                         "ms_per_user": 1e3 * dt / n_main, "method": res.method,
                         "loadavg_before": before, "loadavg_after": load(),
                         "all_in_polytope": bool(np.all(in_polytope(res.nu, m, EPS,
                                                                    atol=1e-12)))})
            if jobs == 1 and n_iter == N_ITER:
                fast = res
        sec["runs"] = runs
        best = min(r["ms_per_user"] for r in runs if r["n_iter"] == N_ITER)
        sec["seconds_for_100k_users_best"] = best * 1e-3 * 100_000
        n_base = min(N_BASELINE, n_main)
        before = load()
        base, dt = timed(wpm_entropic, users[:n_base], cost, m, EPS, method="banded", **kw)
        sec["baseline_log_domain"] = {"n_users": n_base, "seconds": dt,
                                      "ms_per_user": 1e3 * dt / n_base, "method": base.method,
                                      "loadavg_before": before}
        sec["speedup_vs_log_domain_1_thread"] = (sec["baseline_log_domain"]["ms_per_user"]
                                                 / runs[0]["ms_per_user"])
        sec["speedup_vs_log_domain_best"] = sec["baseline_log_domain"]["ms_per_user"] / best
        sec["max_abs_diff_vs_log_domain"] = float(np.max(np.abs(base.nu - fast.nu[:n_base])))
        sec["error"] = error_vs_exact(users[:N_ERROR if not quick else 40], cost, m, lam, p)
        out["costs"][name] = sec
    return out


def error_vs_exact(mu: np.ndarray, cost: np.ndarray, m: np.ndarray, lam: float,
                   p: float) -> dict:
    exact, dt = timed(wpm_exact, mu, cost, m, EPS)
    w_star = exact.cost ** (1.0 / p)
    bound = None
    sweep = []
    for n_iter in ITER_SWEEP:
        res = wpm_entropic(mu, cost, m, EPS, lam=lam, p=p, max_iter=n_iter, tol=0.0)
        w = np.array([w_p(a, b, cost, p) for a, b in zip(mu, res.nu, strict=True)])
        excess = w - w_star
        rel = excess / np.maximum(w_star, 1e-300)
        bound = res.error_bound
        sweep.append({"n_iter": n_iter, "excess_w_mean": float(excess.mean()),
                      "excess_w_max": float(excess.max()),
                      "excess_w_min": float(excess.min()),
                      "relative_excess_mean": float(rel.mean()),
                      "relative_excess_median": float(np.median(rel)),
                      "relative_excess_max": float(rel.max()),
                      "marginal_error_mean": float(np.mean(res.marginal_error))})
    return {"n_users": int(mu.shape[0]), "exact_seconds": dt,
            "exact_w_mean": float(w_star.mean()), "prop_4_1_bound_mean": float(np.mean(bound)),
            "exact_gap_max": float(np.max(np.abs(exact.gap))), "by_n_iter": sweep}


# ----------------------------------------------------------------------------- (2)

def exact_section(users: np.ndarray, pts: np.ndarray, rng: np.random.Generator,
                  quick: bool) -> dict:
    cost = cost_matrix(pts, pts, metric="sqeuclidean")
    m = best_uniform_base_measure(cost, EPS)
    dense_users = rng.dirichlet(np.full(cost.shape[0], 0.1), size=N_EXACT_DENSE)
    dense_users = np.maximum(dense_users, 1e-300)  # full support: the dense formulation
    dense_users /= dense_users.sum(axis=1, keepdims=True)
    out = {"cost": "sqeuclidean", "epsilon": EPS, "inputs": {}}
    for label, mu, n_ns, n_hi in (
            ("checkins", users, N_EXACT_SPARSE, N_HIGHS_SPARSE),
            ("dirichlet_full_support", dense_users, N_EXACT_DENSE, N_HIGHS_DENSE)):
        if quick:
            n_ns, n_hi = min(n_ns, 5), min(n_hi, 2)
        before = load()
        ns, t_ns = timed(wpm_exact, mu[:n_ns], cost, m, EPS)
        hi, t_hi = timed(wpm_exact, mu[:n_hi], cost, m, EPS, solver="highs")
        support = np.count_nonzero(mu[:n_ns] > 0, axis=1)
        out["inputs"][label] = {
            "support_mean": float(support.mean()),
            "network_simplex": {"n_users": n_ns, "seconds": t_ns,
                                "seconds_per_user": t_ns / n_ns,
                                "gap_max": float(np.max(np.abs(ns.gap)))},
            "highs": {"n_users": n_hi, "seconds": t_hi, "seconds_per_user": t_hi / n_hi,
                      "gap_max": float(np.max(np.abs(hi.gap)))},
            "speedup_network_simplex_vs_highs": (t_hi / n_hi) / (t_ns / n_ns),
            "max_cost_diff": float(np.max(np.abs(ns.cost[:n_hi] - hi.cost))),
            "loadavg_before": before}
    return out


# ----------------------------------------------------------------------------- (3)

def mstar_section(pts: np.ndarray, quick: bool) -> dict:
    rows = []
    for name, (metric, cp, p) in COSTS.items():
        cost = cost_matrix(pts, pts, metric=metric, p=cp)
        for eps in (MSTAR_EPS[:1] if quick else MSTAR_EPS):
            row = {"cost": name, "p": p, "epsilon": eps, "loadavg_before": load()}
            for method in ("cutting_plane", "mirror_descent"):
                kw = {"max_iter": 200} if quick and method == "mirror_descent" else {}
                res, dt = timed(optimal_base_measure, cost, eps, method=method,
                                tol=TARGETS["mstar_gap"], **kw)
                row[method] = {"seconds": dt, "gap": res.gap, "n_iter": res.n_iter,
                               "converged": bool(res.converged),
                               "worst_case_w": res.worst_case_distance(p),
                               "lower_bound_w": res.distance_lower_bound(p),
                               "support": int(np.count_nonzero(res.base_measure > 1e-12))}
            row["cutting_plane_meets_target"] = (
                row["cutting_plane"]["seconds"] < TARGETS["mstar_seconds"]
                and row["cutting_plane"]["gap"] <= TARGETS["mstar_gap"])
            row["mirror_descent_meets_target"] = (
                row["mirror_descent"]["seconds"] < TARGETS["mstar_seconds"]
                and row["mirror_descent"]["gap"] <= TARGETS["mstar_gap"])
            rows.append(row)
    return {"rows": rows, "tol": TARGETS["mstar_gap"]}


# ----------------------------------------------------------------------------- output

def plot(res: dict, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    ax = axes[0, 0]
    labels, values, colors = [], [], []
    short = {"sqeuclidean": "|x-v|^2", "euclidean": "|x-v|", "scaling-separable": "separable",
             "scaling": "dense"}
    for name, sec in res["entropic"]["costs"].items():
        labels.append(f"{short[name]}\nlog domain\n1 thr., {N_ITER} it.")
        values.append(sec["baseline_log_domain"]["ms_per_user"])
        colors.append("0.6")
        for run in sec["runs"]:
            labels.append(f"{short[name]}\n{short.get(run['method'], run['method'])}\n"
                          f"{run['n_jobs']} thr., {run['n_iter']} it.")
            values.append(run["ms_per_user"])
            colors.append("C1" if run["n_iter"] != N_ITER else
                          "C0" if run["n_jobs"] == 1 else "C2")
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("ms per user")
    ax.axhline(1e3 * TARGETS["entropic_100k_seconds"] / 100_000, color="r", ls="--",
               label="target: 100,000 users in 30 s")
    ax.set_title("entropic WPM, k = k_v = 400 (20 x 20 grid)")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    for i, (name, sec) in enumerate(res["entropic"]["costs"].items()):
        sweep = sec["error"]["by_n_iter"]
        its = [s["n_iter"] for s in sweep]
        ax.plot(its, [s["excess_w_mean"] for s in sweep], f"C{i}-o",
                label=f"{name}: mean W_p(nu_lam) - W_p(nu*)")
        ax.plot(its, [s["excess_w_max"] for s in sweep], f"C{i}:", label=f"{name}: max")
        ax.axhline(sec["error"]["exact_w_mean"], color=f"C{i}", ls="--", lw=0.8,
                   label=f"{name}: mean W_p(nu*) (exact)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations of Algorithm 1")
    ax.set_ylabel("excess W_p over the exact LP")
    ax.set_title(f"error vs exact LP ({res['entropic']['costs']['sqeuclidean']['error']['n_users']}"
                 " users), lambda = 0.01 max C")
    ax.legend(fontsize=7)
    ax = axes[1, 0]
    names, ns_t, hi_t = [], [], []
    for label, row in res["exact"]["inputs"].items():
        names.append(f"{label}\n(|supp mu| ~ {row['support_mean']:.0f})")
        ns_t.append(row["network_simplex"]["seconds_per_user"])
        hi_t.append(row["highs"]["seconds_per_user"])
    x = np.arange(len(names))
    ax.bar(x - 0.2, ns_t, 0.4, label="network simplex (wpm_exact)")
    ax.bar(x + 0.2, hi_t, 0.4, label="HiGHS LP")
    ax.set_xticks(x, names, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds per user")
    ax.set_title("exact WPM, k = k_v = 400")
    ax.legend(fontsize=8)
    ax = axes[1, 1]
    rows = res["mstar"]["rows"]
    labels = [f"{r['cost']}\neps={r['epsilon']:g}" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["cutting_plane"]["seconds"] for r in rows], 0.4,
           label="cutting plane (default)")
    ax.bar(x + 0.2, [r["mirror_descent"]["seconds"] for r in rows], 0.4,
           label="mirror descent (App. G, T = 2000)")
    for i, r in enumerate(rows):
        for dx, key in ((-0.2, "cutting_plane"), (0.2, "mirror_descent")):
            ax.text(i + dx, r[key]["seconds"], f"{100 * r[key]['gap']:.2g}%", ha="center",
                    va="bottom", fontsize=7)
    ax.axhline(TARGETS["mstar_seconds"], color="r", ls="--", label="10 s")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (label: certified gap reached)")
    ax.set_title("optimal base measure m*, k = 400, target gap 1%")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "sampling_speed.png", dpi=110)
    plt.close(fig)


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--replot", action="store_true",
                        help="only redraw the PNG from the existing JSON")
    args = parser.parse_args()
    outdir = args.out_dir / "quick" if args.quick else args.out_dir
    outdir.mkdir(parents=True, exist_ok=True)
    if args.replot:
        res = json.loads((outdir / "sampling_speed.json").read_text())
        plot(res, outdir)
        return res
    start = time.perf_counter()
    rng = np.random.default_rng(SEED)
    pts = grid(SIDE)
    users = checkin_users(4_000 if args.quick else N_USERS, SIDE, rng)
    res: dict = {
        "what": "paper 003 solvers at k = k_v = 400: entropic (Alg. 1), exact (LP), m*",
        "params": {"grid": f"{SIDE} x {SIDE}", "k": SIDE * SIDE, "epsilon": EPS,
                   "lambda_over_max_c": LAM_REL, "n_iter": N_ITER,
                   "n_users": int(users.shape[0]), "seed": SEED, "quick": args.quick,
                   "users": "synthetic check-ins: 1-3 homes, 5-50 points, sd 0.08",
                   "support_mean": float(np.count_nonzero(users > 0, axis=1).mean()),
                   "base_measure": "best uniform (App. M)"},
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "cpus": os.cpu_count(),
                    "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                    "loadavg_start": load()},
    }
    res["entropic"] = entropic_section(users, pts, args.quick)
    res["exact"] = exact_section(users, pts, rng, args.quick)
    res["mstar"] = mstar_section(pts, args.quick)
    sq = res["entropic"]["costs"]["sqeuclidean"]
    full = [r for r in sq["runs"] if r["n_users"] == N_USERS]
    res["targets"] = {
        "entropic_100k_under_30s_at_40_iterations": (
            min(r["seconds"] for r in full if r["n_iter"] == N_ITER)
            < TARGETS["entropic_100k_seconds"]) if full else None,
        "entropic_100k_seconds": {f"{r['n_jobs']} threads, {r['n_iter']} iterations":
                                  r["seconds"] for r in full},
        "exact_faster_than_highs": all(row["speedup_network_simplex_vs_highs"] > 1
                                       for row in res["exact"]["inputs"].values()),
        "mstar_cutting_plane_under_10s_to_1pct": all(
            r["cutting_plane_meets_target"] for r in res["mstar"]["rows"]),
        "mstar_mirror_descent_under_10s_to_1pct": [
            (r["cost"], r["epsilon"], r["mirror_descent_meets_target"])
            for r in res["mstar"]["rows"]],
    }
    res["machine"]["loadavg_end"] = load()
    res["seconds"] = time.perf_counter() - start
    (outdir / "sampling_speed.json").write_text(json.dumps(res, indent=1, default=_plain) + "\n")
    plot(res, outdir)
    print(json.dumps(res["targets"], indent=2, default=_plain))
    print(f"{res['seconds']:.0f} s -> {outdir}")
    return res


if __name__ == "__main__":
    main()
