"""Reproduction of the synthetic barycenter experiment (paper 000 Sec. 6 Fig. 2; paper 001 Fig. 4).

Data (``privot.datasets.synthetic.gaussian_mixture_r10``): k groups, each an independent
sample of n points of the equal mixture of 4 Gaussians at (+-0.25, +-0.25, 0, ..., 0) in
R^10 (std 0.05 per coordinate, projected radially into the ball of radius 1/2, the
generator's documented defaults). **k = 2**: the papers do not state k for this
experiment; 2 is the generator's default (the smallest k for which a barycenter is not
trivial). Public bounds: ``PublicBounds.ball(0, 0.5)``.

Mechanism: ``privot.barycenters.private_barycenter(method="coreset")`` (paper 000 Alg. 2:
one eps-DP private coreset per group, subsampled to n points as in the paper, placement
"scaled" (App. F.2), then a free-support Sinkhorn barycenter, m = 8, reg = 0.04,
50 outer x 100 inner iterations, privot's default ``polish`` exact step), with a Gaussian
JL map to d' (``projection_dim=d'``) and without (``projection_dim=None``). Reference: the
non-private ``privot.ot.free_support_barycenter`` on the raw groups with the same solver
settings. Defaults n = 1000, eps = 1, d' = 5; sweeps n in {50, ..., 1600}, eps in
{2^-4, ..., 2^3}, d' in {1, ..., 9} (without JL nothing depends on d': its d' panel is the
default setting's value). Extra (not in the papers): the same at ``polish=0`` (plain
Sinkhorn fixed point, closer to POT's solver that the papers used) at eps in {2^-4, 1}.

Metric: cost(nu) = (1/k) sum_i W_2^2(mu_i, nu), exact (``evaluate_barycenter``), on the
raw groups, in unit coordinates (the data already live in the ball). Also recorded per
run: wall time, solver convergence, failures (privot's solver raises ``ConvergenceError``
on a collapsed support instead of returning it), the mean norm of the atoms and how many
of the 4 mixture centres have an atom within 0.125 (half their spacing) -- the paper's
failure mode without JL is "all points centered at the origin".

Same data for every method within a run (common random numbers): run r, size n draws
its groups from ``SeedSequence([SEED, r, n])``; every release has its own seeded
generator, so the results are reproducible and **not fit for publication**
(``secure=False``). 95% intervals: Student t over the runs.

Writes ``benchmarks/results/barycenter_synthetic.json`` and ``.png``.
Run: ``python benchmarks/bench_barycenter_synthetic.py`` (about 4 minutes on 2 cores;
``--quick`` for a smoke run, written to ``barycenter_synthetic_quick.*``; ``--runs R`` to
change the 30 runs per setting).
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
from privot.datasets.synthetic import gaussian_mixture_r10
from privot.errors import ConvergenceError
from privot.ot import free_support_barycenter
from privot.ot._barycenter import DEFAULT_POLISH

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_601
K, M, REG, N_OUTER, N_INNER, DIM = 2, 8, 0.04, 50, 100, 10
DEFAULTS = {"n": 1000, "eps": 1.0, "dprime": 5}
FULL = {"runs": 30, "n": [50, 100, 200, 400, 800, 1600],
        "eps": [2.0 ** e for e in range(-4, 4)], "dprime": list(range(1, 10)),
        "polish0_eps": [2.0 ** -4, 1.0]}
QUICK = {"runs": 2, "n": [50, 200], "eps": [2.0 ** -4, 1.0], "dprime": [1, 5],
         "polish0_eps": [1.0]}
MEANS = np.zeros((4, DIM))
MEANS[:, :2] = [[0.25, 0.25], [0.25, -0.25], [-0.25, 0.25], [-0.25, -0.25]]
METHOD_CODES = {"nonprivate": 0, "jl": 1, "nojl": 2, "origin": 3}


# -- library work-around ---------------------------------------------------------------




# -- helpers ---------------------------------------------------------------------------







def atom_stats(support: np.ndarray) -> dict:
    dist = np.linalg.norm(support[:, None, :] - MEANS[None], axis=2)  # (m, 4)
    return {"mean_atom_norm": float(np.linalg.norm(support, axis=1).mean()),
            "centres_covered": int(np.sum(dist.min(axis=0) < 0.125))}


def groups_for(run: int, n: int) -> list[np.ndarray]:
    data = gaussian_mixture_r10(n, k=K, rng=np.random.default_rng([SEED, run, n]))
    return list(data.points)


def release(groups: list[np.ndarray], bounds: PublicBounds, *, method: str, eps: float,
            dprime: int | None, seed: list[int], polish: int | None) -> dict:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    rec: dict = {"failure": None}
    try:
        if method == "origin":  # data-independent baseline: every atom at the origin
            support, converged = np.zeros((M, DIM)), True
        elif method == "nonprivate":
            fit = free_support_barycenter(groups, m=M, reg=REG, n_outer=N_OUTER,
                                          n_inner=N_INNER, polish=polish, rng=rng)
            support, converged = fit.support, bool(fit.converged)
        else:
            res = private_barycenter(groups, bounds=bounds, m=M, epsilon=eps,
                                     method="coreset", reg=REG, n_outer=N_OUTER,
                                     n_inner=N_INNER, polish=polish,
                                     projection_dim=dprime if method == "jl" else None,
                                     rng=rng)
            assert not res.secure  # seeded: reproducible, not for publication
            support, converged = res.support, bool(res.diagnostics["solver_converged"])
    except ConvergenceError as exc:
        rec.update(failure=f"ConvergenceError: {str(exc)[:160]}",
                   seconds=time.perf_counter() - t0, cost=None, converged=False)
        return rec
    rec["seconds"] = time.perf_counter() - t0
    rec["converged"] = converged
    rec["cost"] = evaluate_barycenter(groups, support)["cost"]
    rec.update(atom_stats(support))
    return rec


def aggregate(records: list[dict]) -> list[dict]:
    keys = sorted({(r["sweep"], r["method"], r["n"], r["eps"], r["dprime"], r["polish"])
                   for r in records}, key=str)
    rows = []
    for sweep, method, n, eps, dprime, polish in keys:
        rs = [r for r in records if (r["sweep"], r["method"], r["n"], r["eps"], r["dprime"],
                                     r["polish"]) == (sweep, method, n, eps, dprime, polish)]
        rows.append({"sweep": sweep, "method": method, "n": n, "eps": eps, "dprime": dprime,
                     "polish": polish, "runs": len(rs),
                     "failures": sum(r["failure"] is not None for r in rs),
                     "not_converged": sum(not r["converged"] for r in rs),
                     "cost": t_interval([r["cost"] for r in rs]),
                     "seconds": t_interval([r["seconds"] for r in rs]),
                     "mean_atom_norm": t_interval([r.get("mean_atom_norm") for r in rs]),
                     "centres_covered": t_interval([r.get("centres_covered") for r in rs]),
                     "all_four_centres_covered": sum(r.get("centres_covered") == 4 for r in rs)})
    return rows


# -- experiment ------------------------------------------------------------------------


def coreset_diagnostic(groups: list[np.ndarray], bounds: PublicBounds) -> dict:
    """Where the private coreset puts its points (run 0, n = 1000, eps = 1): mean |x_c|
    over the 2 informative and the 8 noise coordinates, and the mean norm, for the raw
    data and the coreset (evaluation only; reads the data)."""
    from privot.barycenters.coresets import private_coreset

    core = [private_coreset(g, bounds=bounds, epsilon=DEFAULTS["eps"], placement="scaled",
                            rng=np.random.default_rng([SEED, 99, i])).points
            for i, g in enumerate(groups)]

    def desc(xs: list[np.ndarray]) -> dict:
        x = np.concatenate(xs)
        return {"mean_abs_coord_informative_0_1": float(np.abs(x[:, :2]).mean()),
                "mean_abs_coord_noise_2_9": float(np.abs(x[:, 2:]).mean()),
                "mean_norm": float(np.linalg.norm(x, axis=1).mean())}

    from privot.barycenters.coresets import default_depth
    return {"depth": default_depth(DEFAULTS["eps"], DEFAULTS["n"]), "raw": desc(groups),
            "coreset": desc(core),
            "note": "depth 10 in d = 10 halves each coordinate once (at 0); points go in "
                    "(shrunk) cells centred at +-0.25 in every coordinate and, for ball "
                    "bounds, are projected radially onto the ball (norm 0.5): the 8 noise "
                    "coordinates (data ~0) get |x_c| ~ 0.16 and the informative ones "
                    "(data ~0.25) shrink to ~0.16"}



def run_all(cfg: dict, out: dict, path: Path) -> None:
    bounds = PublicBounds.ball(np.zeros(DIM), 0.5)
    records: list[dict] = out["runs"]
    n0, e0, d0 = DEFAULTS["n"], DEFAULTS["eps"], DEFAULTS["dprime"]
    # (sweep, method, n, eps, d', polish)
    settings = []
    for n in cfg["n"]:
        settings += [("n", m, n, e0, d0 if m == "jl" else None, None)
                     for m in ("jl", "nojl")]
        settings.append(("n", "nonprivate", n, None, None, None))
        settings.append(("n", "origin", n, None, None, None))
    for eps in cfg["eps"]:
        settings += [("eps", m, n0, eps, d0 if m == "jl" else None, None) for m in ("jl", "nojl")]
    settings.append(("eps", "nonprivate", n0, None, None, None))
    settings.append(("eps", "origin", n0, None, None, None))
    settings += [("dprime", "jl", n0, e0, d, None) for d in cfg["dprime"]]
    settings += [("dprime", m, n0, e0 if m == "nojl" else None, None, None)
                 for m in ("nojl", "nonprivate", "origin")]
    for eps in cfg["polish0_eps"]:
        settings += [("polish0", m, n0, eps, d0 if m == "jl" else None, 0)
                     for m in ("jl", "nojl")]
    settings.append(("polish0", "nonprivate", n0, None, None, 0))
    out["settings"]["n_releases"] = len(settings) * cfg["runs"]
    out["coreset_diagnostic"] = coreset_diagnostic(groups_for(0, n0), bounds)
    cache: dict = {}  # identical (method, n, eps, d', polish, run) releases are computed once
    t_start = time.perf_counter()
    for run in range(cfg["runs"]):
        data = {n: groups_for(run, n) for n in sorted({s[2] for s in settings})}
        for sweep, method, n, eps, dprime, polish in settings:
            key = (method, n, eps, dprime, polish, run)
            if key not in cache:
                seed = [SEED, run, n, METHOD_CODES[method], int(round((eps or 0) * 64)),
                        dprime or 0, 1 if polish is None else 2 + polish]
                cache[key] = release(data[n], bounds, method=method, eps=eps or 0.0,
                                     dprime=dprime, seed=seed, polish=polish)
            records.append(dict(cache[key], sweep=sweep, method=method, n=n, eps=eps,
                                dprime=dprime, polish=polish, run=run))
        out["aggregates"] = aggregate(records)
        out["runtime_seconds"] = time.perf_counter() - t_start
        out["runs_completed"] = run + 1
        path.write_text(json.dumps(out, indent=1))
        print(f"run {run + 1}/{cfg['runs']} done, {time.perf_counter() - t_start:.0f} s",
              flush=True)


# -- summary ---------------------------------------------------------------------------


def _row(out: dict, sweep: str, method: str, **match) -> dict:
    rows = [r for r in out["aggregates"] if r["sweep"] == sweep and r["method"] == method
            and all(r[k] == v for k, v in match.items())]
    return rows[0]


def _disjoint(a: dict, b: dict) -> str:
    """'lower' / 'higher' when a's 95% interval lies below / above b's, else 'overlap'."""
    if a["ci_high"] is None or b["ci_low"] is None:
        return "n/a"
    if a["ci_high"] < b["ci_low"]:
        return "lower"
    if a["ci_low"] > b["ci_high"]:
        return "higher"
    return "overlap"


def summary(out: dict, cfg: dict) -> dict:
    comp = []
    for sweep, var, values in (("n", "n", cfg["n"]), ("eps", "eps", cfg["eps"])):
        for v in values:
            jl, nojl = _row(out, sweep, "jl", **{var: v}), _row(out, sweep, "nojl", **{var: v})
            np_row = (_row(out, sweep, "nonprivate", n=v) if sweep == "n"
                      else _row(out, sweep, "nonprivate"))
            origin = (_row(out, sweep, "origin", n=v) if sweep == "n"
                      else _row(out, sweep, "origin"))
            comp.append({"sweep": sweep, var: v, "cost_jl": jl["cost"]["mean"],
                         "cost_nojl": nojl["cost"]["mean"],
                         "cost_nonprivate": np_row["cost"]["mean"],
                         "cost_all_atoms_at_origin": origin["cost"]["mean"],
                         "jl_vs_nojl_95ci": _disjoint(jl["cost"], nojl["cost"]),
                         "failures_jl": jl["failures"], "failures_nojl": nojl["failures"],
                         "all4_covered_jl": jl["all_four_centres_covered"],
                         "all4_covered_nojl": nojl["all_four_centres_covered"],
                         "runs": jl["runs"]})
    small = [c for c in comp if (c["sweep"] == "n" and c["n"] <= 200)
             or (c["sweep"] == "eps" and c["eps"] <= 0.25)]
    better = [c for c in small if c["jl_vs_nojl_95ci"] == "lower"]
    worse = [c for c in small if c["jl_vs_nojl_95ci"] == "higher"]
    failures = {m: sum(r["failures"] for r in out["aggregates"] if r["method"] == m)
                for m in METHOD_CODES}
    d_rows = [_row(out, "dprime", "jl", dprime=d) for d in cfg["dprime"]]
    nojl_def = _row(out, "dprime", "nojl")
    np_def = _row(out, "dprime", "nonprivate")
    claim = ("with JL the private barycenter has better utility for small n or eps; "
             "without JL the solver tends to get stuck in local minima, e.g. all points "
             "centred at the origin (paper 000 Sec. 6, paper 001 Sec. 5)")
    label = lambda c: f"{c['sweep']}={c.get('n', c.get('eps'))}"  # noqa: E731
    verdict = ("holds" if small and len(better) == len(small) else
               "does not hold" if not better else
               f"partly: JL significantly better in {len(better)} of {len(small)} "
               "small-n / small-eps settings")
    return {
        "claim_jl_helps_small_n_eps": {
            "claim": claim,
            "settings_checked": "n <= 200 (eps = 1) and eps <= 1/4 (n = 1000), d' = 5",
            "jl_significantly_better_at": [label(c) for c in better],
            "jl_significantly_worse_at": [label(c) for c in worse],
            "jl_mean_lower_at": [label(c) for c in small if c["cost_jl"] < c["cost_nojl"]],
            "jl_minus_nojl_mean_cost": {label(c): c["cost_jl"] - c["cost_nojl"]
                                        for c in comp},
            "verdict": verdict,
        },
        "stuck_at_origin": {
            "claim": "without JL, atoms collapse towards the origin",
            "failures_raised_by_solver": failures,
            "note": "privot's solver raises ConvergenceError on a fully collapsed support "
                    "(counted as failures above); partial collapse shows as a smaller "
                    "mean atom norm (true centres have norm 0.354) and fewer of the 4 "
                    "mixture centres covered by an atom within 0.125",
            "mean_atom_norm_default": {
                "jl": _row(out, "dprime", "jl", dprime=DEFAULTS["dprime"])
                ["mean_atom_norm"]["mean"] if DEFAULTS["dprime"] in cfg["dprime"] else None,
                "nojl": nojl_def["mean_atom_norm"]["mean"],
                "nonprivate": np_def["mean_atom_norm"]["mean"]},
        },
        "private_vs_trivial_baseline": {
            "note": "cost of the private outputs against the data-independent baseline "
                    "(all 8 atoms at the origin) and the non-private barycenter",
            "default_setting": {"jl": _row(out, "eps", "jl", eps=DEFAULTS["eps"])["cost"]
                                ["mean"] if DEFAULTS["eps"] in cfg["eps"] else None,
                                "nojl": nojl_def["cost"]["mean"],
                                "origin": _row(out, "dprime", "origin")["cost"]["mean"],
                                "nonprivate": np_def["cost"]["mean"]},
            "coreset_diagnostic": out.get("coreset_diagnostic"),
        },
        "per_setting": comp,
        "dprime_sweep": {f"d'={d}": r["cost"]["mean"] for d, r in zip(cfg["dprime"], d_rows,
                                                                       strict=True)}
        | {"no JL": nojl_def["cost"]["mean"], "non-private": np_def["cost"]["mean"]},
        "paper_numbers": "The papers give Fig. 2 / Fig. 4 as plots only (no numbers in the "
                         "text); only the qualitative claim above can be compared.",
    }


# -- figure ----------------------------------------------------------------------------


def plot(out: dict, cfg: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"jl": ("tab:red", "private, JL d'"), "nojl": ("tab:blue", "private, no JL"),
              "nonprivate": ("k", "non-private"),
              "origin": ("grey", "all atoms at the origin (no data)")}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    for ax, sweep, var, values in ((axes[0], "n", "n", cfg["n"]),
                                   (axes[1], "eps", "eps", cfg["eps"]),
                                   (axes[2], "dprime", "dprime", cfg["dprime"])):
        for method, (colour, label) in styles.items():
            if (sweep == "dprime" and method != "jl"
                    or sweep == "eps" and method in ("nonprivate", "origin")):
                row = _row(out, sweep, method)
                c = row["cost"]
                ax.axhline(c["mean"], color=colour, ls="--", label=label)
                if c["ci_low"] is not None:
                    ax.axhspan(c["ci_low"], c["ci_high"], color=colour, alpha=0.12)
                continue
            rows = [_row(out, sweep, method, **{var: v}) for v in values]
            mean = np.array([r["cost"]["mean"] if r["cost"]["mean"] is not None else np.nan
                             for r in rows])
            lo = np.array([r["cost"]["ci_low"] if r["cost"]["ci_low"] is not None else np.nan
                           for r in rows])
            hi = np.array([r["cost"]["ci_high"] if r["cost"]["ci_high"] is not None else np.nan
                           for r in rows])
            ax.plot(values, mean, "o-", color=colour, label=label)
            ax.fill_between(values, lo, hi, color=colour, alpha=0.2)
        ax.set_ylabel("cost = (1/k) sum W2^2(mu_i, nu)")
        ax.grid(alpha=0.3)
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("n (points per group); eps = 1, d' = 5")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xlabel("epsilon; n = 1000, d' = 5")
    axes[2].set_xlabel("d' (JL dimension); n = 1000, eps = 1")
    axes[0].legend(fontsize=8)
    runs = out.get("runs_completed")
    fig.suptitle(f"Private coreset barycenter, 4-Gaussian mixture in R^10 (k = {K}, m = {M}, "
                 f"reg = {REG}); mean and 95% CI over {runs} seeded runs (paper 000 Fig. 2)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
    stem = "barycenter_synthetic" + ("_quick" if args.quick else "")
    path = RESULTS / f"{stem}.json"
    out = {
        "description": "paper 000 Fig. 2 / paper 001 Fig. 4 with privot (seeded, not for "
                       "publication)",
        "settings": {
            "k": K, "k_note": "not stated by the papers; gaussian_mixture_r10's default",
            "m": M, "reg": REG, "n_outer": N_OUTER, "n_inner": N_INNER, "dim": DIM,
            "std": 0.05, "bounds": "PublicBounds.ball(0, 0.5)", "method": "coreset",
            "placement": "scaled", "coreset_size": "n (default: the group size)",
            "polish": f"privot default ({DEFAULT_POLISH} exact step) unless the "
                      "'polish0' sweep", "defaults": DEFAULTS, "sweeps": cfg,
            "runs_per_setting": cfg["runs"], "quick": args.quick, "seed": SEED,
            "cost_units": "unit coordinates (data in the ball of radius 1/2)",
        },
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "machine": platform.machine(), "privot_git": git_state()},
        "runs": [],
    }
    run_all(cfg, out, path)
    out["summary"] = summary(out, cfg)
    path.write_text(json.dumps(out, indent=1))
    plot(out, cfg, RESULTS / f"{stem}.png")
    print(json.dumps(out["summary"], indent=1)[:4000])


if __name__ == "__main__":
    main()
