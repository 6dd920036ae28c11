"""Reproduction of paper 003's synthetic experiment on a ring (Sec. 5.1, Fig. 1).

Setup (Sec. 5.1): ``k = 30`` points ``0..k-1`` on a ring, ``d(i, j) = min(|i - j|,
k - |i - j|)``, ``C = d^p`` with ``p = 2``, ``eps = 5``, the input ``mu`` one draw of a
Dirichlet(0.1) (seeded); inputs = outputs (``k_v = k``).

Panels of ``sampling_ring.png``:

* **Fig. 1 left** -- ``mu`` and its private versions: the WPM (exact LP, network
  simplex) with the uniform base measure ``m = 1/k`` (our reading of the paper's
  figure), the WPM with the minimax base measure ``m*`` (Thm 3.4-3.5, cutting plane,
  certified gap) and KPM (KL projection, Park et al. 2024). ``W_2(nu, mu)`` of each is in
  the JSON.
* **Fig. 1 right** -- convergence of Algorithm 1 (``wpm_entropic``, uniform ``m``):
  ``W_2(mu, q^(t))`` (exact OT between ``mu`` and the ``t``-th iterate's output,
  ``ot.emd2``) for ``t = 1..T`` and several ``lambda``, with the exact LP's
  ``W_2(mu, nu*)`` as a line and Prop. 4.1's bound ``W_2(nu*) + (lambda log N)^{1/2}``
  listed in the JSON.
* **Worst case over eps** (not a panel of the paper; its Thm 3.4-3.5 and Prop. B.2):
  ``sup_mu W_2(M[mu], mu)`` for eps in ``EPS_GRID``:

  - WPM with ``m*`` and with the uniform ``m``: exact, ``f(m)^{1/p}`` of Thm 3.5 (a
    projection mechanism's worst input is a Dirac, Prop. B.2);
  - k-RR: ``nu = a U + (1 - a) mu`` with ``a = k q``, so ``W_p^p(nu, mu) <= a
    W_p^p(U, mu)`` (mixture coupling) and ``mu -> W_p^p(U, mu)`` is convex, maximal at a
    Dirac where the inequality is an equality: **the max over Dirac inputs is the exact
    sup**;
  - KPM: not a Wasserstein projection, so Prop. B.2 does not apply. We compute the max
    over Dirac inputs (where KPM's output equals k-RR's: floor ``q`` everywhere, ``p`` at
    the point) and, as a check that no other input does worse, the max over all two-point
    inputs ``w delta_i + (1 - w) delta_j`` (``w`` on a grid) and ``N_RANDOM`` Dirichlet
    draws: reported as a lower bound on KPM's sup (exact if the Dirac is the worst);
  - the certified lower bound of ``optimal_base_measure(...).lower_bound``: **no**
    eps-LDP mechanism on these points has a smaller worst-case ``W_2`` (Thm 3.4).

Writes ``benchmarks/results/sampling_ring.json`` and ``sampling_ring.png``.
Run: ``python benchmarks/bench_sampling_ring.py`` (about 30 s; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
import ot

from privot.sampling.base_measure import WorstCaseCost, optimal_base_measure
from privot.sampling.baselines import kpm, krr
from privot.sampling.polytope import in_polytope
from privot.sampling.wpm_entropic import wpm_entropic
from privot.sampling.wpm_exact import wpm_exact

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_501
K, EPS, P, ALPHA = 30, 5.0, 2.0, 0.1
EPS_SPREAD = 1.0  # a second eps where the polytope is narrow (see the docstring)
LAMBDAS = (0.1, 0.03, 0.01, 0.003)  # times max C
N_ITER = 150
EPS_GRID = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
N_RANDOM = 2000
TWO_POINT_WEIGHTS = np.linspace(0.05, 0.95, 19)
GAP_TOL = 1e-6  # the optimal base measure to a certified relative gap of 1e-6


def ring_cost(k: int, p: float) -> np.ndarray:
    i = np.arange(k)
    d = np.abs(i[:, None] - i[None, :])
    return np.minimum(d, k - d).astype(float) ** p


def w_p(mu: np.ndarray, nu: np.ndarray, cost: np.ndarray, p: float) -> float:
    """Exact ``W_p(mu, nu)`` (network simplex on the ring's cost ``d^p``)."""
    return max(float(ot.emd2(mu, nu, cost)), 0.0) ** (1.0 / p)


def fig1_left(mu: np.ndarray, cost: np.ndarray, eps: float) -> dict:
    uniform = np.full(K, 1.0 / K)
    opt = optimal_base_measure(cost, eps, tol=GAP_TOL)
    m_star = opt.base_measure
    wpm_u = wpm_exact(mu, cost, uniform, eps)
    wpm_s = wpm_exact(mu, cost, m_star, eps)
    kpm_out = kpm(mu, epsilon=eps)
    out = {"epsilon": eps, "mu": mu.tolist(), "m_star": m_star.tolist(),
           "m_star_gap": opt.gap}
    for name, nu, m in (("wpm_uniform", wpm_u.nu, uniform), ("wpm_optimal", wpm_s.nu, m_star),
                        ("kpm", kpm_out.nu, kpm_out.base_measure)):
        out[name] = {"nu": nu.tolist(), "w2": w_p(mu, nu, cost, P),
                     "in_polytope": bool(in_polytope(nu, m, eps, atol=1e-9)),
                     "max": float(nu.max()), "min": float(nu.min())}
    # mass within distance 2 of the input's three largest atoms: geometry kept or not
    top = np.argsort(-mu)[:3]
    near = np.zeros(K, dtype=bool)
    for i in top:
        near |= np.sqrt(cost[i]) <= 2
    out["near_top3"] = {"points": np.flatnonzero(near).tolist(),
                        "mu": float(mu[near].sum()),
                        **{name: float(np.asarray(out[name]["nu"])[near].sum())
                           for name in ("wpm_uniform", "wpm_optimal", "kpm")}}
    out["lp_gap"] = {"wpm_uniform": float(wpm_u.gap), "wpm_optimal": float(wpm_s.gap)}
    return out


def fig1_right(mu: np.ndarray, cost: np.ndarray, eps: float, n_iter: int) -> dict:
    uniform = np.full(K, 1.0 / K)
    exact = wpm_exact(mu, cost, uniform, eps)
    exact_w = exact.cost ** (1.0 / P)
    n_support = int(np.count_nonzero(mu > 0)) * K
    out = {"epsilon": eps, "exact_w2": exact_w, "exact_w2_check": w_p(mu, exact.nu, cost, P),
           "iterations": list(range(1, n_iter + 1)), "curves": []}
    for rel in LAMBDAS:
        lam = rel * float(cost.max())
        t0 = time.perf_counter()
        curve, methods = [], set()
        for t in range(1, n_iter + 1):
            res = wpm_entropic(mu, cost, uniform, eps, lam=lam, p=P, max_iter=t, tol=0.0)
            curve.append(w_p(mu, res.nu, cost, P))
            methods.add(res.method)
        conv = wpm_entropic(mu, cost, uniform, eps, lam=lam, p=P, max_iter=100_000,
                            tol=1e-12, on_nonconvergence="ignore")
        limit = w_p(mu, conv.nu, cost, P)
        # first iteration within 1% (of the limit's excess over the LP, or of W_2) of it
        close = next((t for t, w in enumerate(curve, 1)
                      if abs(w - limit) <= 0.01 * max(limit - exact_w, 0.01 * limit)), None)
        out["curves"].append({
            "lambda_over_max_c": rel, "lambda": lam, "w2": curve, "methods": sorted(methods),
            "limit_w2": limit, "limit_n_iter": int(conv.n_iter),
            "limit_converged": bool(conv.converged),
            "excess_over_exact": limit - exact_w,
            "prop_4_1_bound": (lam * math.log(n_support)) ** (1.0 / P),
            "iterations_to_within_1pct_of_limit": close,
            "seconds": time.perf_counter() - t0})
    return out


def _dirac_worst(nu_of_dirac: np.ndarray, cost: np.ndarray) -> float:
    """max_i W_p(M[delta_i], delta_i): the transport from a Dirac is forced."""
    return float(np.max(np.sum(nu_of_dirac * cost, axis=1))) ** (1.0 / P)


def worst_case(cost: np.ndarray, eps_grid, n_random: int, rng: np.random.Generator) -> dict:
    rows = []
    eye = np.eye(K)
    pairs = [(i, j) for i in range(K) for j in range(i + 1, K)]
    two = np.array([w * eye[i] + (1 - w) * eye[j] for i, j in pairs for w in TWO_POINT_WEIGHTS])
    rand = rng.dirichlet(np.full(K, ALPHA), size=n_random)
    for eps in eps_grid:
        t0 = time.perf_counter()
        opt = optimal_base_measure(cost, eps, tol=GAP_TOL)
        wc = WorstCaseCost(cost, eps)
        uniform = np.full(K, 1.0 / K)
        kpm_dirac = _dirac_worst(kpm(eye, epsilon=eps).nu, cost)
        krr_dirac = _dirac_worst(krr(eye, epsilon=eps).nu, cost)
        others = np.vstack([two, rand])
        kpm_nu = kpm(others, epsilon=eps).nu
        kpm_other = max(w_p(a, b, cost, P) for a, b in zip(others, kpm_nu, strict=True))
        rows.append({
            "epsilon": eps,
            "wpm_optimal": opt.worst_case_distance(P),
            "wpm_optimal_gap": opt.gap,
            "wpm_uniform": float(wc.value(uniform)) ** (1.0 / P),
            "kpm_dirac": kpm_dirac,
            "kpm_other_inputs_max": kpm_other,
            "kpm_sup_lower_bound": max(kpm_dirac, kpm_other),
            "krr": krr_dirac,
            "ldp_lower_bound": opt.distance_lower_bound(P),
            "m_star_support": int(np.count_nonzero(opt.base_measure > 1e-12)),
            "m_star_total": float(opt.base_measure.sum()),
            "seconds": time.perf_counter() - t0})
    return {"rows": rows, "n_two_point_inputs": int(two.shape[0]),
            "n_random_inputs": int(n_random)}


def summary(lefts: list[dict], rights: list[dict], worst: dict) -> dict:
    rows = worst["rows"]
    at_eps = next(r for r in rows if r["epsilon"] == EPS)
    out = {}
    for left, right in zip(lefts, rights, strict=True):
        curves = right["curves"]
        excess = [c["excess_over_exact"] for c in curves]
        out[f"eps_{left['epsilon']:g}"] = {
            "w2": {name: left[name]["w2"] for name in ("wpm_uniform", "wpm_optimal", "kpm")},
            "wpm_closer_than_kpm_in_w2": left["wpm_uniform"]["w2"] < left["kpm"]["w2"],
            "mass_near_the_input_peaks": left["near_top3"],
            "kpm_max_over_min": left["kpm"]["max"] / left["kpm"]["min"],
            "wpm_uniform_max_over_min": left["wpm_uniform"]["max"] / left["wpm_uniform"]["min"],
            "entropic_excess_over_lp_w2": {str(c["lambda_over_max_c"]): c["excess_over_exact"]
                                           for c in curves},
            "entropic_excess_decreases_with_lambda": bool(np.all(np.diff(excess) <= 1e-12)),
            "entropic_excess_within_prop_4_1":
                all(c["excess_over_exact"] <= c["prop_4_1_bound"] + 1e-9 for c in curves),
            "iterations_to_within_1pct_of_limit": {
                str(c["lambda_over_max_c"]): c["iterations_to_within_1pct_of_limit"]
                for c in curves}}
    out["worst_case_at_eps_5"] = {key: at_eps[key] for key in (
        "wpm_optimal", "wpm_uniform", "kpm_sup_lower_bound", "krr", "ldp_lower_bound")}
    out["wpm_optimal_meets_the_lower_bound"] = all(
        r["wpm_optimal"] <= r["ldp_lower_bound"] * (1 + 1e-5) + 1e-12 for r in rows)
    out["wpm_optimal_le_every_other"] = all(
        r["wpm_optimal"] <= min(r["wpm_uniform"], r["kpm_sup_lower_bound"], r["krr"]) + 1e-9
        for r in rows)
    # m = 1/k has total mass 1; m* (and k-RR's base measure) shrink the total as eps grows
    out["eps_where_wpm_uniform_is_worse_than_krr"] = [
        r["epsilon"] for r in rows if r["wpm_uniform"] > r["krr"] + 1e-9]
    out["eps_where_krr_attains_the_lower_bound"] = [
        r["epsilon"] for r in rows if r["krr"] <= r["ldp_lower_bound"] * (1 + 1e-6)]
    out["kpm_dirac_is_its_worst_found"] = all(
        r["kpm_other_inputs_max"] <= r["kpm_dirac"] + 1e-9 for r in rows)
    return out


def plot(res: dict, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(17, 8.6))
    x = np.arange(K)
    width = 0.27
    for col, left in enumerate(res["fig1_left"]):
        ax = axes[0, col]
        ax.bar(x - width, left["mu"], width, label="input mu (Dirichlet 0.1)", color="0.5")
        ax.bar(x, left["wpm_uniform"]["nu"], width, label="WPM (m = 1/k)", color="C0")
        ax.bar(x + width, left["kpm"]["nu"], width, label="KPM", color="C3")
        ax.step(x, left["wpm_optimal"]["nu"], where="mid", color="C2", lw=1, label="WPM (m*)")
        ax.set_xlabel("point on the ring")
        ax.set_ylabel("probability")
        ax.set_title(f"Fig. 1 left: k = {K}, p = {P:g}, eps = {left['epsilon']:g}")
        ax.legend(fontsize=8)
    for col, right in enumerate(res["fig1_right"]):
        ax = axes[1, col]
        its = right["iterations"]
        for i, c in enumerate(right["curves"]):
            ax.plot(its, c["w2"], color=f"C{i}",
                    label=f"lambda = {c['lambda_over_max_c']:g} max C")
        ax.axhline(right["exact_w2"], color="k", ls="--", label="exact LP")
        ax.set_xscale("log")
        ax.set_xlabel("iteration t of Algorithm 1")
        ax.set_ylabel("W_2(mu, q^(t))")
        ax.set_title(f"Fig. 1 right: Algorithm 1, eps = {right['epsilon']:g}, m = 1/k")
        ax.legend(fontsize=8)
    ax = axes[0, 2]
    rows = res["worst_case"]["rows"]
    eps = [r["epsilon"] for r in rows]
    for key, label, style in (("kpm_sup_lower_bound", "KPM (max over Diracs = worst found)",
                               "C1-s"),
                              ("krr", "k-RR (exact sup; = KPM's Dirac value)", "C3:o"),
                              ("wpm_uniform", "WPM, m = 1/k (exact)", "C0-^"),
                              ("wpm_optimal", "WPM, m* (exact)", "C2-D"),
                              ("ldp_lower_bound", "lower bound, any eps-LDP", "k--")):
        ax.plot(eps, [r[key] for r in rows], style, label=label, ms=4)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("worst-case W_2(M[mu], mu)")
    ax.set_title("worst case over inputs (Thm 3.4-3.5)")
    ax.legend(fontsize=8)
    ax = axes[1, 2]
    for i, right in enumerate(res["fig1_right"]):
        lam = [c["lambda_over_max_c"] for c in right["curves"]]
        ax.loglog(lam, [max(c["excess_over_exact"], 1e-16) for c in right["curves"]],
                  f"C{i}-o", label=f"W_2(nu^lam) - W_2(nu*), eps = {right['epsilon']:g}")
    right = res["fig1_right"][0]  # the bound depends on lambda and N only
    ax.loglog([c["lambda_over_max_c"] for c in right["curves"]],
              [c["prop_4_1_bound"] for c in right["curves"]], "k:",
              label="Prop. 4.1 bound (lambda log N)^(1/2)")
    ax.set_xlabel("lambda / max C")
    ax.set_ylabel("excess W_2 over the exact LP")
    ax.set_title("entropic error vs lambda (converged)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "sampling_ring.png", dpi=110)
    plt.close(fig)


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    outdir = args.out_dir / "quick" if args.quick else args.out_dir
    outdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rng = np.random.default_rng(SEED)
    cost = ring_cost(K, P)
    mu = rng.dirichlet(np.full(K, ALPHA))
    mu /= mu.sum()
    lefts = [fig1_left(mu, cost, eps) for eps in (EPS, EPS_SPREAD)]
    rights = [fig1_right(mu, cost, eps, 20 if args.quick else N_ITER)
              for eps in (EPS, EPS_SPREAD)]
    worst = worst_case(cost, (1.0, EPS) if args.quick else EPS_GRID,
                       100 if args.quick else N_RANDOM, np.random.default_rng(SEED + 1))
    res = {
        "what": "paper 003, Sec. 5.1 / Fig. 1: ring of k points, Dirichlet input",
        "params": {"k": K, "epsilon": EPS, "epsilon_second": EPS_SPREAD, "p": P,
                   "dirichlet_alpha": ALPHA, "seed": SEED, "lambdas_over_max_c": LAMBDAS,
                   "max_cost": float(cost.max()), "eps_grid": list(EPS_GRID),
                   "two_point_weights": TWO_POINT_WEIGHTS.tolist(),
                   "m_star_gap_tol": GAP_TOL, "quick": args.quick},
        "fig1_left": lefts,
        "fig1_right": rights,
        "worst_case": worst,
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "cpus": os.cpu_count(),
                    "loadavg": os.getloadavg()},
        "seconds": None,
    }
    res["summary"] = summary(lefts, rights, worst)
    res["seconds"] = time.perf_counter() - start
    (outdir / "sampling_ring.json").write_text(json.dumps(res, indent=1) + "\n")
    plot(res, outdir)
    print(json.dumps(res["summary"], indent=2))
    print(f"{res['seconds']:.1f} s -> {outdir}")
    return res


if __name__ == "__main__":
    main()
