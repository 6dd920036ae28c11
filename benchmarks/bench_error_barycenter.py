"""The private barycenter's stated error on real data (issue 28, "every release states
its error"): coverage and informativeness of ``privot.barycenters.barycenter_error``,
with the data-dependent part the statement leaves out measured by the curator.

Data: ISLR ``Wage`` (``privot.datasets.tables.load_table("wage")``, d = 4, 3,000 rows in
4 groups by education: 1,239 / 650 / 685 / 426), every column scaled to [0, 1] by its
public bounds (as ``bench_barycenter_moderate.py``), bounds the box [0, 1]^4, m = 48,
beta = 1/4. No row lies outside the bounds and none is unusable, so the rows "as the
mechanism sees them" are the rows. All figures are in these [0, 1] coordinates (the
statement's caller units; squared).

Two plans of the subspace method, eps in {1, 4}, pure (Laplace) and Gaussian
(delta = 1e-6), 200 seeded releases per case (seeds 0..199, ``secure=False``):

* **mean-only plan** (``subspace_dim=0``): ``private_barycenter(...)`` itself (about
  10 ms). The statement's metric is the excess cost ``C(release) - C(nu*)``,
  ``C(nu) = sum_i beta_i W2^2(group i, nu)``, ``nu*`` the best 48-atom barycenter. Every
  atom is at one point ``c``, so ``excess = |c - mbar|^2 + [C(delta_mbar) - C(nu*)]``
  (docs/errors/barycenters.md section 1). The bound covers the first term (the noise);
  the bracket is data-dependent (``not_covered``). Measured per release: the noise term
  ``|c - mbar|^2`` (checked equal to ``C(release) - C(delta_mbar)``, exact network
  simplex), and the excess ``C(release) - C_np``, ``C_np`` the non-private free-support
  barycenter's exact cost (Sinkhorn then 10 exact polishing steps, best of 2 starts:
  an upper bound on ``C(nu*)``, so the measured bracket ``C(delta_mbar) - C_np`` is a
  lower bound on the true one).
* **one-cell plan** (``subspace_dim=4, cells=1``: no DP projection, no Lloyd round;
  full covariance at eps = 4 with Laplace noise, the default plan there; diagonal
  otherwise). The statement's metric is the summary W2^2,
  ``sum_i beta_i W2^2(N(m_i, S_i), N(mhat_i, Shat_i))``, computed exactly (Bures
  formula) as ``tests/barycenters/test_barycenter_error_statement.py`` does: the
  released Gaussians from ``subspace_release`` on the plan ``plan_subspace`` gives for
  the same public parameters, seed by seed (about 3 ms; a whole release with its
  free-support solver takes about 3 s). On the first seeds of each case (5; 1 with
  ``--quick``) the release is also run through ``private_barycenter`` with its
  ``subspace_release`` wrapped: its summaries are checked bit-equal to the direct ones,
  and its excess cost over ``C_np`` (what the statement does not cover) is recorded.

Coverage: exceedances of the stated bound over the releases, at the release's
confidence (0.95) and at 0.99 (``barycenter_error(..., confidence=0.99)``), with the
one-sided binomial p-value ``P(Bin(N, 1 - confidence) >= exceedances)`` and the largest
count a test at false-alarm rate 1e-3 passes (the tests' rule). Informativeness:
bound / median observed.

The data-dependent part (curator, never released):

* mean-only: the bracket ``C(delta_mbar) - C_np`` (the excess of the non-private "every
  atom at the exact weighted mean" over the non-private barycenter);
* one-cell: the non-Gaussianity ``sum_i beta_i W2^2(group i, N(m_i, S_i))`` (and with
  ``diag S_i``, the Gaussian a diagonal plan targets), estimated by exact OT
  (``ot.emd2``) between the group's rows and 4,000 draws of the Gaussian (1,000 with
  ``--quick``), mean over 2 draw seeds; next to it the same estimate for an i.i.d.
  sample of ``n_i`` rows of that Gaussian against the same draws (what a group that *is*
  a Gaussian sample of its size scores: the floor of the estimator and of the
  discreteness); and the excess cost of the noise-free one-cell barycenter (the plan's
  post-processing on the exact Gaussians: 3,072 public draws per group, the release's
  solver, 2 seeds) over ``C_np``.

Writes ``benchmarks/results/error_barycenter.json`` and ``error_barycenter.png``.
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_error_barycenter.py`` (about
4 minutes on 2 shared cores at load 5, 1 of them the non-Gaussianity's OT; ``--quick``:
20 releases per case, smaller OT estimates, about 1 minute, written to
``error_barycenter_quick.*``; ``--replot``: the PNG from the JSON).
Seeded, not for publication.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import ot
from scipy import stats

from _common import git_state
from privot.barycenters import (
    BarycenterParams,
    PublicBounds,
    SubspaceOptions,
    barycenter_error,
    evaluate_barycenter,
    method_subspace,
    private_barycenter,
)
from privot.barycenters.release import sample_budget
from privot.barycenters.subspace import (
    GAUSSIAN_SAMPLE_PER_ATOM,
    gaussian_draws,
    into_ball,
    plan_subspace,
    subspace_release,
)
from privot.datasets.tables import load_table
from privot.ot import free_support_barycenter

OUT = Path(__file__).resolve().parent / "results"
TABLE = "wage"
M = 48
EPSILONS = (1.0, 4.0)
DELTA = 1e-6
CONFIDENCES = (0.95, 0.99)
FALSE_ALARM = 1e-3


class Data:
    """The table in [0, 1] coordinates, its unit-coordinate rows and exact moments."""

    def __init__(self) -> None:
        table = load_table(TABLE, rng=0)
        low, high = table.bounds.lower, table.bounds.upper
        clipped = [table.bounds.clip(g) for g in table.groups]
        self.moved = [int(np.count_nonzero(moved)) for _, moved in clipped]
        self.groups = [(g - low) / (high - low) for g, _ in clipped]
        self.sizes = [len(g) for g in self.groups]
        self.d = self.groups[0].shape[1]
        self.k = len(self.groups)
        self.beta = np.full(self.k, 1.0 / self.k)
        self.bounds = PublicBounds.box(np.zeros(self.d), np.ones(self.d))
        self.scale = float(self.bounds.scale)  # unit = (x - centre) * scale
        self.units = [into_ball(self.bounds.unit_and_moved(g)[0]) for g in self.groups]
        # exact moments of the rows as the mechanism sees them (sums over public n_i)
        self.means = [u.sum(axis=0) / n for u, n in zip(self.units, self.sizes, strict=True)]
        self.covs = [u.T @ u / n - np.outer(mu, mu)
                     for u, n, mu in zip(self.units, self.sizes, self.means, strict=True)]
        # the weighted mean in [0, 1] coordinates
        self.mbar = self.beta @ np.array([g.sum(axis=0) / n
                                          for g, n in zip(self.groups, self.sizes,
                                                          strict=True)])


def cost(data: Data, support: np.ndarray) -> float:
    """Exact ``sum_i beta_i W2^2(group i, uniform support)`` ([0, 1] coordinates)."""
    return evaluate_barycenter(data.groups, support, group_weights=data.beta)["cost"]


def nonprivate_cost(data: Data) -> tuple[float, np.ndarray]:
    """The non-private barycenter's exact cost, best of 2 starts (Sinkhorn then 10 exact
    polishing steps, as ``bench_barycenter_moderate.py``), and its support."""
    best = (math.inf, None)
    for seed in (0, 1):
        fit = free_support_barycenter(data.groups, m=M, group_weights=data.beta, rng=seed,
                                      polish=10)
        c = cost(data, fit.support)
        if c < best[0]:
            best = (c, fit.support)
    return best


def coverage(observed: np.ndarray, bound: float, confidence: float) -> dict:
    """Exceedances, the one-sided binomial p-value and the tests' allowed count."""
    n = len(observed)
    alpha = 1.0 - confidence
    exceed = int((observed > bound).sum())
    allowed = int(stats.binom.isf(FALSE_ALARM, n, alpha))
    while stats.binom.sf(allowed, n, alpha) > FALSE_ALARM:
        allowed += 1
    return {"confidence": confidence, "bound": bound, "exceedances": exceed, "releases": n,
            "rate": exceed / n, "p_value": float(stats.binom.sf(exceed - 1, n, alpha)),
            "allowed_at_1e-3": allowed, "covers": exceed <= allowed,
            "bound_over_median": bound / float(np.median(observed)),
            "bound_over_quantile": bound / float(np.quantile(observed, confidence))}


def spread(values: np.ndarray) -> dict:
    return {"median": float(np.median(values)), "q95": float(np.quantile(values, 0.95)),
            "q99": float(np.quantile(values, 0.99)), "min": float(values.min()),
            "max": float(values.max()), "mean": float(values.mean())}


def params_for(data: Data, plan: str, eps: float, delta: float | None) -> BarycenterParams:
    opts = (SubspaceOptions(subspace_dim=0) if plan == "mean-only"
            else SubspaceOptions(subspace_dim=data.d, cells=1))
    return BarycenterParams(m=M, epsilon=eps, delta=delta, bounds=data.bounds,
                            method="subspace", subspace=opts)


def release(data: Data, params: BarycenterParams, seed: int):  # noqa: ANN201
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "degenerate" (one distinct atom) and the like
        return private_barycenter(data.groups, params, rng=seed, progress=False)


def mean_only_case(data: Data, eps: float, delta: float | None, n_rel: int,
                   c_np: float, c_mean: float) -> dict:
    """``n_rel`` mean-only releases: noise term and excess against the bound."""
    params = params_for(data, "mean-only", eps, delta)
    stated = {c: barycenter_error(params, data.sizes, data.d, confidence=c)
              for c in CONFIDENCES}
    noise, excess, check = [], [], []
    for seed in range(n_rel):
        res = release(data, params, seed)
        assert res.error == stated[CONFIDENCES[0]]  # the release states what the API does
        support = np.asarray(res.support)
        assert np.ptp(support, axis=0).max() == 0.0  # every atom at one point
        term = float(((support[0] - data.mbar) ** 2).sum())
        c = cost(data, support)
        noise.append(term)
        excess.append(c - c_np)
        check.append(abs((c - c_mean) - term))
    noise_a, excess_a = np.array(noise), np.array(excess)
    first = stated[CONFIDENCES[0]]
    return {"plan": "mean-only", "epsilon": eps, "delta": delta,
            "mechanism": first.details["mechanism"], "metric": first.metric,
            "not_covered": first.not_covered, "units": first.units,
            "bound": {str(c): s.bound for c, s in stated.items()},
            "noise_term": spread(noise_a), "excess": spread(excess_a),
            "identity_max_error": float(max(check)),
            "coverage_noise_term": [coverage(noise_a, s.bound, c) for c, s in stated.items()],
            "coverage_excess": [coverage(excess_a, s.bound, c) for c, s in stated.items()],
            "observed_noise_term": noise_a.tolist(), "observed_excess": excess_a.tolist()}


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(s)
    return (vecs * np.sqrt(np.maximum(vals, 0.0))) @ vecs.T


def gaussian_w2(m1: np.ndarray, s1: np.ndarray, m2: np.ndarray, s2: np.ndarray) -> float:
    """W2^2 between N(m1, s1) and N(m2, s2) (the Bures formula; as the tests)."""
    r = _psd_sqrt(s1)
    cross = _psd_sqrt(r @ s2 @ r)
    return float(((m1 - m2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(cross))


def one_cell_case(data: Data, eps: float, delta: float | None, n_rel: int, n_full: int,
                  c_np: float) -> dict:
    """``n_rel`` one-cell releases' summary W2^2 against the bound; ``n_full`` of them
    also as whole releases (summaries checked equal, excess cost recorded)."""
    params = params_for(data, "one-cell", eps, delta)
    stated = {c: barycenter_error(params, data.sizes, data.d, confidence=c)
              for c in CONFIDENCES}
    plan = plan_subspace(sizes=data.sizes, m=M, d0=data.d,
                         budget=sample_budget(eps, delta or 0.0, data.sizes, None),
                         subspace_dim=data.d, cells=1)
    assert plan.rounds == 0 and not plan.pca and plan.subspace_dim == data.d
    covs = (data.covs if plan.covariance
            else [np.diag(np.diag(c)) for c in data.covs])
    to_caller = 1.0 / data.scale**2

    def summary_w2(rel) -> float:  # noqa: ANN001
        return to_caller * sum(b * gaussian_w2(data.means[i], covs[i], rel.means[i],
                                               rel.covariances[i])
                               for i, b in enumerate(data.beta))

    observed = []
    for seed in range(n_rel):
        rel = subspace_release(data.units, plan=plan, basis=None, sizes=data.sizes, m=M,
                               rng=seed)
        observed.append(summary_w2(rel))
    # whole releases on the first seeds: the same summaries, and the excess cost
    full = []
    original = method_subspace.subspace_release
    captured: list = []

    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        out = original(*args, **kwargs)
        captured.append(out)
        return out

    for seed in range(n_full):
        captured.clear()
        method_subspace.subspace_release = wrapped
        try:
            t0 = time.perf_counter()
            res = release(data, params, seed)
            secs = time.perf_counter() - t0
        finally:
            method_subspace.subspace_release = original
        assert res.error == stated[CONFIDENCES[0]]
        assert res.params["subspace"] == plan.to_dict()
        direct = subspace_release(data.units, plan=plan, basis=None, sizes=data.sizes,
                                  m=M, rng=seed)
        same = (np.array_equal(captured[0].means, direct.means)
                and np.array_equal(captured[0].covariances, direct.covariances))
        full.append({"seed": seed, "summaries_equal": bool(same),
                     "summary_w2": summary_w2(captured[0]),
                     "excess": cost(data, np.asarray(res.support)) - c_np,
                     "seconds": secs})
    obs = np.array(observed)
    first = stated[CONFIDENCES[0]]
    return {"plan": "one-cell", "epsilon": eps, "delta": delta,
            "mechanism": plan.mechanism, "covariance": bool(plan.covariance),
            "metric": first.metric, "not_covered": first.not_covered, "units": first.units,
            "bound": {str(c): s.bound for c, s in stated.items()},
            "summary_w2": spread(obs),
            "coverage": [coverage(obs, s.bound, c) for c, s in stated.items()],
            "whole_releases": full, "observed_summary_w2": obs.tolist()}


def _emd(a: np.ndarray, b: np.ndarray) -> float:
    wa = np.full(len(a), 1.0 / len(a))
    wb = np.full(len(b), 1.0 / len(b))
    return float(ot.emd2(wa, wb, ot.dist(a, b), numItermax=10**7))


def non_gaussianity(data: Data, draws: int, reps: int = 2) -> dict:
    """Per group, W2^2(rows, N(m_i, S_i)) (full and diagonal S_i), estimated by exact OT
    against ``draws`` Gaussian draws, with the floor of an i.i.d. Gaussian sample of the
    group's size; [0, 1] coordinates."""
    out: dict = {"draws": draws, "repeats": reps, "groups": []}
    for i, g in enumerate(data.groups):
        mean = g.mean(axis=0)
        cov_full = np.cov(g.T, bias=True)
        row = {"size": len(g)}
        for name, cov in (("full", cov_full), ("diagonal", np.diag(np.diag(cov_full)))):
            est, floor = [], []
            for rep in range(reps):
                gen = np.random.default_rng(1000 * i + rep)
                x = gen.multivariate_normal(mean, cov, size=draws)
                est.append(_emd(g, x))
                floor.append(_emd(gen.multivariate_normal(mean, cov, size=len(g)), x))
            row[name] = {"w2sq": float(np.mean(est)), "gaussian_sample_floor":
                         float(np.mean(floor))}
        out["groups"].append(row)
    for name in ("full", "diagonal"):
        out[name] = {key: float(sum(b * r[name][key] for b, r in
                                    zip(data.beta, out["groups"], strict=True)))
                     for key in ("w2sq", "gaussian_sample_floor")}
    return out


def noise_free_one_cell(data: Data, c_np: float, seeds: int = 2) -> dict:
    """Excess cost of the one-cell plan's post-processing on the exact Gaussians (no
    noise): public draws, the release's free-support solver, the lift; over ``C_np``."""
    kw = BarycenterParams(m=M, epsilon=1.0, bounds=data.bounds)
    solver = {"method": kw.solver, "reg": kw.reg, "n_outer": kw.n_outer,
              "n_inner": kw.n_inner}
    if kw.polish is not None:
        solver["polish"] = kw.polish
    out = {}
    for name in ("full", "diagonal"):
        vals = []
        for seed in range(seeds):
            gen = np.random.default_rng(seed)
            pts = []
            for mu, cov in zip(data.means, data.covs, strict=True):
                c = cov if name == "full" else np.diag(np.diag(cov))
                pts.append(into_ball(gaussian_draws(gen, mu, c,
                                                    size=GAUSSIAN_SAMPLE_PER_ATOM * M)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = free_support_barycenter(pts, m=M, group_weights=data.beta, rng=gen,
                                              on_failure="fallback", **solver)
            support = data.bounds.from_unit(fit.support)
            vals.append(cost(data, support) - c_np)
        out[name] = {"excess": float(np.mean(vals)), "per_seed": vals}
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.8))
    data_part = result["data_dependent"]
    for ax, plan in zip(axes, ("mean-only", "one-cell"), strict=True):
        cases = [c for c in result["cases"] if c["plan"] == plan]
        key = "observed_noise_term" if plan == "mean-only" else "observed_summary_w2"
        labels = []
        for j, case in enumerate(cases):
            vals = np.asarray(case[key])
            jitter = j + 0.25 * (np.random.default_rng(j).random(len(vals)) - 0.5)
            ax.scatter(jitter, vals, s=4, alpha=0.4, color="C0",
                       label="observed (covered part)" if j == 0 else None)
            if plan == "mean-only":
                ax.scatter(jitter + 0.35, case["observed_excess"], s=4, alpha=0.4,
                           color="C3", label="observed excess (with the bracket)"
                           if j == 0 else None)
            for conf, style in zip(CONFIDENCES, ("-", "--"), strict=True):
                ax.hlines(case["bound"][str(conf)], j - 0.3, j + 0.5, color="k", ls=style,
                          lw=1.2, label=f"stated bound ({conf:g})" if j == 0 else None)
            labels.append(f"{case['mechanism']}\neps={case['epsilon']:g}"
                          + ("" if plan == "mean-only" else
                             f"\n{'full' if case['covariance'] else 'diag'}"))
        if plan == "mean-only":
            ax.axhline(data_part["mean_only_bracket"], color="C3", lw=1, ls=":",
                       label="bracket C(delta_mbar) - C_np (data)")
            ax.set_title("mean-only plan: |c - mbar|^2 (covered) and excess cost",
                         fontsize=9)
        else:
            ng = data_part["non_gaussianity"]
            ax.axhline(ng["full"]["w2sq"], color="C2", lw=1, ls=":",
                       label="non-Gaussianity W2^2(rows, N(m, S)) (data)")
            ax.axhline(ng["diagonal"]["w2sq"], color="C2", lw=1, ls="-.",
                       label="W2^2(rows, N(m, diag S)) (data)")
            ax.set_title("one-cell plan: summary W2^2 (the statement's metric)",
                         fontsize=9)
        ax.set_yscale("log")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("squared [0, 1] units")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    fig.suptitle(f"Stated vs observed error, ISLR Wage (d = 4, k = 4), "
                 f"{result['meta']['releases']} releases per case", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="20 releases per case, 1 whole one-cell release, 1,000 draws")
    ap.add_argument("--releases", type=int, default=None)
    ap.add_argument("--replot", action="store_true",
                    help="redraw the PNG from the JSON of the last run (no release)")
    args = ap.parse_args()
    stem = "error_barycenter" + ("_quick" if args.quick else "")
    if args.replot:
        plot(json.loads((OUT / f"{stem}.json").read_text()), OUT / f"{stem}.png")
        return
    n_rel = args.releases or (20 if args.quick else 200)
    n_full = 1 if args.quick else 5
    draws = 1000 if args.quick else 4000
    load_before = list(os.getloadavg())
    start = time.perf_counter()
    data = Data()
    c_np, _ = nonprivate_cost(data)
    c_mean = cost(data, np.repeat(data.mbar[None], M, axis=0))
    bracket = c_mean - c_np
    print(f"{TABLE}: sizes {data.sizes}, d = {data.d}, moved {data.moved}; C_np = "
          f"{c_np:.5g}, C(delta_mbar) = {c_mean:.5g}, bracket = {bracket:.5g}", flush=True)
    t0 = time.perf_counter()
    ng = non_gaussianity(data, draws)
    print(f"non-Gaussianity (full) {ng['full']['w2sq']:.4g} (Gaussian-sample floor "
          f"{ng['full']['gaussian_sample_floor']:.4g}); diagonal "
          f"{ng['diagonal']['w2sq']:.4g} ({time.perf_counter() - t0:.0f} s)", flush=True)
    free = noise_free_one_cell(data, c_np)
    print(f"noise-free one-cell excess: full {free['full']['excess']:.4g}, diagonal "
          f"{free['diagonal']['excess']:.4g}", flush=True)
    cases = []
    for delta in (None, DELTA):
        for eps in EPSILONS:
            t0 = time.perf_counter()
            case = mean_only_case(data, eps, delta, n_rel, c_np, c_mean)
            cov = case["coverage_noise_term"][0]
            print(f"mean-only {case['mechanism']:8s} eps={eps:g}: bound {cov['bound']:.4g}, "
                  f"median noise {case['noise_term']['median']:.4g}, exceed "
                  f"{cov['exceedances']}/{n_rel} (p={cov['p_value']:.3g}), ratio "
                  f"{cov['bound_over_median']:.2f}; median excess "
                  f"{case['excess']['median']:.4g} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
            cases.append(case)
    for delta in (None, DELTA):
        for eps in EPSILONS:
            t0 = time.perf_counter()
            case = one_cell_case(data, eps, delta, n_rel, n_full, c_np)
            cov = case["coverage"][0]
            print(f"one-cell {case['mechanism']:8s} eps={eps:g} "
                  f"{'full' if case['covariance'] else 'diag'}: bound {cov['bound']:.4g}, "
                  f"median {case['summary_w2']['median']:.4g}, exceed "
                  f"{cov['exceedances']}/{n_rel} (p={cov['p_value']:.3g}), ratio "
                  f"{cov['bound_over_median']:.1f}; whole-release excess "
                  f"{np.mean([r['excess'] for r in case['whole_releases']]):.4g} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            cases.append(case)
    meta = {"git": git_state(), "python": platform.python_version(),
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average_before": load_before, "load_average_after": list(os.getloadavg()),
            "seconds": time.perf_counter() - start, "quick": args.quick,
            "releases": n_rel, "whole_one_cell_releases": n_full, "m": M,
            "table": TABLE, "seeded": "seeds 0..releases-1, secure=False; not for publication"}
    result = {"meta": meta,
              "data": {"sizes": data.sizes, "d": data.d, "beta": data.beta.tolist(),
                       "rows_moved_into_bounds": data.moved,
                       "coordinates": "each column scaled to [0, 1] by its public bounds; "
                                      "bounds the box [0, 1]^d",
                       "unit_scale": data.scale},
              "data_dependent": {
                  "nonprivate_cost": c_np, "mean_point_cost": c_mean,
                  "mean_only_bracket": bracket,
                  "mean_only_bracket_note": "C(delta_mbar) - C_np; C_np >= C(nu*), so a "
                                            "lower bound on the statement's bracket",
                  "non_gaussianity": ng, "noise_free_one_cell": free},
              "cases": cases}
    OUT.mkdir(exist_ok=True)
    (OUT / f"{stem}.json").write_text(json.dumps(result, indent=1))
    plot(result, OUT / f"{stem}.png")
    print(f"wrote {OUT / stem}.json/.png in {meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
