"""Reproduction of paper 004's experiments (Sec. 7, App. B, App. C) with ``privot.learning``.

DP-SGD with clipped (sliced) Wasserstein gradients (``make_private``) on the biased data
of App. B (``privot.datasets.biased_fairness_data``: n = 30,000 training rows, p = 0.7,
d_core = d_sp = 8, sigma^2_core = 1/5, sigma^2_sp = 2/5; an independent test set of
10,000 rows from the same draw, split off with ``.split``), delta = 0.1/n, batch sizes
n'_j = round(n_j / 5) (``batch_fraction=0.2``), SGD, the paper's hyperparameters:

* **B.1 classification** (Figs. 5-8): ``Linear(16, 1) + Sigmoid``, BCE, T = 500, C = 5,
  M = L = 1, lr 0.05; statistical parity (Eq. 18, ``penalty="sp"``) and equality of odds
  (Eq. 21, ``penalty="eo"``); alpha in {0, 0.25, 0.5, 0.75} x eps in {inf, 1}, plus eps
  in {0.5, 3} for alpha in {0, 0.75}. Per cell: noise multiplier, training objective on
  the whole training set at the final parameters (and its CL / W parts), test accuracy,
  DI (eq. 17), EO_0 / EO_1 (eqs. 19-20), histograms of g(x) per group (training set).
* **B.2 regression** (Figs. 9-10): ``Linear(16, 64) + ReLU + Linear(64, 2) + Sigmoid``
  minus 1/2 (the hidden activation is not stated in the paper: ReLU here), target
  Y^C - 1/2, MSE (squared norm), SP with sliced W2 (50 projections), T = 1000, C = 10,
  M = 1/sqrt(2), L = sqrt(2), lr 0.05; alpha in {0, 0.75} x eps in {inf, 1}. OD_0 / OD_1
  (fraction of g(x) above the anti-diagonal per group), scatter plots.
* **B.3 representation learning** (Figs. 11-12): encoder 16 -> 62 -> 2, decoder
  2 -> 62 -> 16 (ReLU), the model returns ``[latent, reconstruction]``; loss = squared
  reconstruction error (a callable on the output slice), SP on the latent
  (``score_fn``), 50 projections, T = 500, C = 10, M = 2, L = sqrt(2), lr 0.01; alpha in
  {0, 0.75} x eps in {inf, 1}. RL, RL_c (core part), and a logistic regression on the
  latent codes of 60% of the test set, evaluated on the other 40% (accuracy, DI).
* **App. C data generation** (Fig. 13): Z = 100,000 points uniform on the circle of
  radius 3/4 (private reference), X = 100,000 standard Gaussian points through an MLP
  2 -> 128 -> 64 -> 64 -> 2; ``matching_groups(x, z, private=True,
  reference_private=True)``, alpha = 1, no loss, batch 10,000 per side, lr 0.0075, 50
  projections, M = 1, L = 2 sqrt(2). The paper does not state T (500 here, ``gen["T"]``)
  nor the threshold of its re-clipping of the noisy gradient (post-processing): that
  step is available (``gen["post_clip"]``, an SGD that clips before stepping) and off by
  default. Snapshots with the epsilon spent so far w.r.t. X and w.r.t. Z (Z is not passed
  through the model: its per-group sensitivity is 3x smaller, so its epsilon is smaller).
* **Jacobian clipping** (the issue's "measure what the exact one buys"): B.2 (alpha =
  0.75, eps = 1, 3 seeds) and App. C (eps = 1, 2 seeds) with the exact spectral clipping
  (privot's default) and the paper's per-coordinate clipping (Remark A.2), paired (the
  same batches and noise draws for both);
  plus, at the final parameters, how often each clipping binds and how much of the
  Jacobian's spectral norm it keeps (``jacobian_diagnostics``).

**eps = inf** (the paper's non-private rows) runs the *same code path with the noise
left out*: ``trainer.private_gradient()`` (the same secure-sampler batches, activation
projection, Jacobian and per-example loss clipping, one weighted backward pass), then
``optimizer.step()``. For B.1 SP / EO alpha in {0, 0.75} a *plain autograd* run (no
clipping, no noise, the same batches, the objective written with
``privot.learning.w2_squared_1d``) checks that the clipping changes nothing there.

Seeds: B.1 eps in {inf, 1} cells run 3 seeds (batches and noise; the initialisation is
fixed), figures show seed 0, the summary gives means and sds.

Privacy accounting per cell: the noise multiplier privot's fixed-size PLD accountant
needs for (eps, delta) over T steps (a tight upper bound; computed once per (eps, delta,
T, q) with ``calibrate_noise_multiplier``, the call ``make_private(target_epsilon=...)``
makes, and passed as ``noise_multiplier``; one timing cell checks that
``make_private(target_epsilon=1)`` gives the same sigma), the epsilon it achieves, the
paper's GDP-CLT figure at that sigma (an approximation, Sec. 5.3), dp-accounting's RDP
bound, and the sigma the GDP-CLT calibration (the paper's, via Opacus) would have used.

Timings: each experiment's private step against a plain autograd SGD step of the same
objective on the same batch sizes (unclipped, no noise), alternating in one process
(median of pairs): the price of the per-example machinery.

All randomness (data, initialisation, batches, noise) is seeded (numpy Generators,
``secure=False``): reproducible, **not a publishable run**.

Writes ``benchmarks/results/learning_paper.json`` (every number, a ``summary`` checking
the paper's qualitative claims) and ``learning_paper_sp.png`` (Fig. 5),
``learning_paper_eo.png`` (Fig. 7), ``learning_paper_losses.png`` (Figs. 6, 8, 10, 12),
``learning_paper_regression.png`` (Fig. 9), ``learning_paper_representation.png``
(Fig. 11), ``learning_paper_generation.png`` (Fig. 13).
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_learning_paper.py`` (``--jobs 2``
worker processes by default; about 13 min on 2 free cores, 26 min measured on shared
ones; ``--quick`` for a smoke run writing ``*_quick.*`` in under a minute; ``--replot``
redoes the figures and the summary from the JSON).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing as mp  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import git_state  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_604
SQRT2 = math.sqrt(2.0)
N_SCATTER = 1200  # points per panel kept in the JSON for the scatter plots

FULL = {
    "n_train": 30_000, "n_test": 10_000, "p": 0.7, "batch_fraction": 0.2,
    "cls": {"T": 500, "C": 5.0, "M": 1.0, "L": 1.0, "lr": 0.05},
    "reg": {"T": 1000, "C": 10.0, "M": 1 / SQRT2, "L": SQRT2, "lr": 0.05, "K": 50,
            "hidden": 64},
    "rep": {"T": 500, "C": 10.0, "M": 2.0, "L": SQRT2, "lr": 0.01, "K": 50, "hidden": 62},
    "gen": {"n": 100_000, "batch": 10_000, "T": 500, "lr": 0.0075, "K": 50, "M": 1.0,
            "L": 2 * SQRT2, "eps": 1.0, "post_clip": None, "snapshots": (0, 50, 150, 500),
            "n_eval": 5_000},
    "cls_alphas": (0.0, 0.25, 0.5, 0.75),
    "cls_eps": (None, 1.0),
    "cls_eps_extra": (0.5, 3.0),  # for alpha in {0, 0.75}
    "reg_alphas": (0.0, 0.75),
    "rep_alphas": (0.0, 0.75),
    "eps_main": (None, 1.0),
    # seeds per cell (batches + noise; the initialisation is fixed): B.1 eps in {inf, 1},
    # and the spectral / per-coordinate comparison (paired: the same seeds for both)
    "replicates": {"cls": 3, "clip_reg": 3, "clip_gen": 2},
    "timing_pairs": 8,
}

QUICK = {
    "n_train": 3_000, "n_test": 1_000, "p": 0.7, "batch_fraction": 0.2,
    "cls": {"T": 40, "C": 5.0, "M": 1.0, "L": 1.0, "lr": 0.05},
    "reg": {"T": 30, "C": 10.0, "M": 1 / SQRT2, "L": SQRT2, "lr": 0.05, "K": 50,
            "hidden": 64},
    "rep": {"T": 15, "C": 10.0, "M": 2.0, "L": SQRT2, "lr": 0.01, "K": 50, "hidden": 62},
    "gen": {"n": 5_000, "batch": 1_000, "T": 20, "lr": 0.0075, "K": 50, "M": 1.0,
            "L": 2 * SQRT2, "eps": 1.0, "post_clip": None, "snapshots": (0, 10, 20),
            "n_eval": 1_000},
    "cls_alphas": (0.0, 0.75),
    "cls_eps": (None, 1.0),
    "cls_eps_extra": (),
    "reg_alphas": (0.75,),
    "rep_alphas": (0.75,),
    "eps_main": (None, 1.0),
    "replicates": {"cls": 1, "clip_reg": 1, "clip_gen": 1},
    "timing_pairs": 2,
}

# Rough seconds per step on one core (for scheduling the longest jobs first only).
_COST = {"cls": 0.02, "reg": 0.12, "rep": 0.45, "gen": 0.3, "timing": 0.0}


# ---------------------------------------------------------------------------
# worker side
# ---------------------------------------------------------------------------

_DATA: dict = {}


def _torch():
    import torch

    torch.set_num_threads(1)
    return torch


def _data(cfg: dict):
    """Train / test split of the App. B data (cached per process)."""
    key = (cfg["n_train"], cfg["n_test"], cfg["p"])
    if key not in _DATA:
        from privot.datasets import biased_fairness_data

        n = cfg["n_train"] + cfg["n_test"]
        data = biased_fairness_data(n, p=cfg["p"], rng=np.random.default_rng(SEED))
        train, test = data.split(cfg["n_test"] / n, rng=np.random.default_rng(SEED + 1))
        assert len(train) == cfg["n_train"], len(train)
        _DATA[key] = (train, test)
    return _DATA[key]


def _models():
    torch = _torch()
    nn = torch.nn

    class Regressor(nn.Module):
        """Two layers, sigmoid output minus 1/2 (App. B.2)."""

        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 2),
                                     nn.Sigmoid())

        def forward(self, x):
            return self.net(x) - 0.5

    class AutoEncoder(nn.Module):
        """Encoder 16 -> h -> 2, decoder 2 -> h -> 16; returns [latent, reconstruction]."""

        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 2))
            self.dec = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 16))

        def forward(self, x):
            z = self.enc(x)
            return torch.cat([z, self.dec(z)], dim=1)

    return Regressor, AutoEncoder


def reconstruction_loss(out, target):
    """Per-example squared reconstruction error ``||psi(phi(x)) - x||^2`` (Eq. 23)."""
    return ((out[:, 2:] - target) ** 2).sum(1)


def latent_scores(out):
    """The penalised scores of B.3: the 2-D latent code."""
    return out[:, :2]


class PostClipSGD:
    """Factory for an SGD that clips the (already noisy) gradient norm before stepping."""

    @staticmethod
    def make(params, lr: float, max_norm: float | None):
        torch = _torch()

        class _PostClipSGD(torch.optim.SGD):
            def step(self, closure=None):  # post-processing of the released gradient
                if max_norm:
                    ps = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
                    torch.nn.utils.clip_grad_norm_(ps, max_norm)
                return super().step(closure)

        return _PostClipSGD(params, lr=lr)


def _build(job: dict, cfg: dict):
    """Model, optimizer, groups and make_private kwargs of one job."""
    torch = _torch()
    from privot.learning import fairness_groups, matching_groups

    kind = job["kind"]
    torch.manual_seed(SEED + {"cls": 1, "reg": 2, "rep": 3, "gen": 4}[kind])  # same init
    if kind == "gen":
        g = cfg["gen"]
        rng = np.random.default_rng(SEED + 40)
        x = rng.standard_normal((g["n"], 2)).astype(np.float32)
        ang = rng.uniform(0.0, 2 * np.pi, g["n"])
        z = (0.75 * np.stack([np.cos(ang), np.sin(ang)], 1)).astype(np.float32)
        nn = torch.nn
        model = nn.Sequential(nn.Linear(2, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
        groups = matching_groups(x, z, private=True, reference_private=True)
        opt = PostClipSGD.make(model.parameters(), g["lr"], g["post_clip"])
        kw = dict(penalty="match", alpha=1.0, loss=None, steps=g["T"],
                  batch_sizes=[g["batch"], g["batch"]], M=g["M"], L=g["L"],
                  n_projections=g["K"], target_delta=0.1 / g["n"])
        return model, opt, groups, kw
    train, _ = _data(cfg)
    xtr = np.array(train.x)
    Regressor, AutoEncoder = _models()
    if kind == "cls":
        h = cfg["cls"]
        model = torch.nn.Sequential(torch.nn.Linear(16, 1), torch.nn.Sigmoid())
        groups = fairness_groups(xtr, np.array(train.y), np.array(train.sensitive),
                                 criterion=job["crit"])
        kw = dict(penalty=job["crit"], loss="bce", clip=h["C"], M=h["M"], L=h["L"])
    elif kind == "reg":
        h = cfg["reg"]
        model = Regressor(h["hidden"])
        y = (np.array(train.y_continuous) - 0.5).astype(np.float32)
        groups = fairness_groups(xtr, y, np.array(train.sensitive), criterion="sp")
        kw = dict(penalty="sp", loss="mse", clip=h["C"], M=h["M"], L=h["L"],
                  n_projections=h["K"])
    elif kind == "rep":
        h = cfg["rep"]
        model = AutoEncoder(h["hidden"])
        groups = fairness_groups(xtr, None, np.array(train.sensitive), criterion="sp")
        kw = dict(penalty="sp", loss=reconstruction_loss, score_fn=latent_scores,
                  clip=h["C"], M=h["M"], L=h["L"], n_projections=h["K"])
    else:
        raise ValueError(kind)
    opt = torch.optim.SGD(model.parameters(), lr=h["lr"])
    kw.update(alpha=job["alpha"], steps=h["T"], batch_fraction=cfg["batch_fraction"],
              target_delta=0.1 / cfg["n_train"])
    return model, opt, groups, kw


def _plain_objective(model, groups, indices, *, alpha, loss_fn, score_fn, dirs_for):
    """The unclipped objective on a batch (plain autograd; the eps = inf check)."""
    torch = _torch()
    from privot.learning import sliced_w2_squared

    outs, _ys = {}, []
    for j, (g, idx) in enumerate(zip(groups.groups, indices, strict=True)):
        if g.through_model:
            o = model(g.x[torch.as_tensor(idx)])
            outs[j] = o[:, None] if o.ndim == 1 else o
    total = 0.0
    if alpha < 1 and loss_fn is not None:
        erm = [j for j in outs if groups.groups[j].y is not None]
        o = torch.cat([outs[j] for j in erm])
        y = torch.cat([groups.groups[j].y[torch.as_tensor(indices[j])] for j in erm])
        total = (1 - alpha) * loss_fn(o, y).mean()
    if alpha > 0:
        for pair in groups.pairs:
            sides = []
            for j in (pair.a, pair.b):
                g = groups.groups[j]
                if g.through_model:
                    s = outs[j] if score_fn is None else score_fn(outs[j])
                else:
                    s = g.x[torch.as_tensor(indices[j])]
                sides.append(s.reshape(len(s), -1))
            total = total + alpha * pair.weight * sliced_w2_squared(
                sides[0], sides[1], directions=dirs_for(sides[0].shape[1]))
    return total


def _direction_source(K: int):
    torch = _torch()
    from privot.learning import random_directions

    gen = torch.Generator(device="cpu")
    gen.manual_seed(0)
    return lambda d: random_directions(d, K, generator=gen)


def calibrate(key: tuple) -> dict:
    """sigma for (eps, delta, T, q) by privot's fixed-size PLD accountant (make_private's
    own calibration), and the sigma the paper's GDP-CLT calibration would give."""
    from privot.privacy.accounting import calibrate_noise_multiplier

    eps, delta, steps, q = key
    t = time.perf_counter()
    pld = calibrate_noise_multiplier(eps, delta, steps=steps, sampling_rate=q,
                                     accountant="pld", sampling="fixed-size")
    paper = calibrate_noise_multiplier(eps, delta, steps=steps, sampling_rate=q,
                                       accountant="gdp-clt", sampling="fixed-size")
    return {"key": list(key), "sigma_pld": pld.noise_multiplier, "epsilon_pld": pld.epsilon,
            "sigma_gdp_clt": paper.noise_multiplier, "seconds": time.perf_counter() - t}


def _calibration(trainer, eps, job) -> dict:
    """The public guarantee of a run (and the sigma the paper's GDP-CLT would pick)."""
    rep = trainer.privacy_report()
    out = {k: rep[k] for k in ("noise_multiplier", "noise_std", "sensitivity",
                               "sensitivity_per_group", "sampling_rate", "delta",
                               "batch_sizes", "group_sizes", "jacobian_clipping")}
    if eps is None:
        return {**out, "noise_multiplier": 0.0, "noise_std": 0.0, "epsilon": math.inf,
                "note": "eps = inf: the same code path without the noise"}
    assert abs(rep["sampling_rate"] - job["calib_key"][3]) < 1e-12, (rep, job)
    out.update(epsilon_target=eps, epsilon_pld=rep["epsilon"],
               epsilon_paper_gdp_clt=rep["epsilon_paper_gdp_clt"],
               epsilon_rdp=rep["epsilon_rdp"],
               sigma_paper_gdp_clt_calibration=job["sigma_gdp_clt"],
               sigma_ratio_pld_over_gdp_clt=rep["noise_multiplier"] / job["sigma_gdp_clt"])
    return out


def _train(trainer, model, opt, eps, on_step=None) -> list:
    """T steps: private (trainer.step) or eps = inf (the same gradient, no noise)."""
    from privot.learning.per_example import trainable_parameters

    curve = []
    for t in range(trainer.steps):
        if eps is None:
            model.train()
            grads, st = trainer.private_gradient()
            for p, g in zip(trainable_parameters(model), grads, strict=True):
                p.grad = g
            opt.step()
            opt.zero_grad(set_to_none=True)
            curve.append((st["loss"], st["erm"], st["penalty"]))
        else:
            rec = trainer.step()
            curve.append((rec.loss, rec.erm, rec.penalty))
        if on_step is not None:
            on_step(t + 1)
    return curve


def _curve_json(curve: list) -> dict:
    arr = np.asarray(curve, dtype=float)
    r = lambda v: [float(f"{x:.5g}") for x in v]  # noqa: E731
    return {"loss": r(arr[:, 0]), "final_mean_last_10_loss_erm_penalty": r(arr[-10:].mean(0))}


def jacobian_diagnostics(model, x, L: float, score_dims: int | None = None) -> dict:
    """How often each Jacobian clipping binds at ``model``'s parameters, and what it keeps.

    ``kept`` is the spectral norm of the clipped Jacobian over the unclipped one (1 =
    untouched), averaged over examples: exact spectral clipping keeps ``min(1, L/s)``;
    the per-coordinate rule of Remark A.2 clips each row to ``L/sqrt(d)``.
    """
    torch = _torch()
    from privot.learning.per_example import forward_with_grams

    _, grams, _ = forward_with_grams(model, x)
    g = grams.to(torch.float64)
    if score_dims is not None:
        g = g[:, :score_dims, :score_dims]
    d = g.shape[-1]
    smax = torch.sqrt(torch.linalg.eigvalsh(g)[:, -1].clamp_min(0))
    rows = torch.sqrt(torch.diagonal(g, dim1=1, dim2=2).clamp_min(0))
    f = torch.clamp((L / math.sqrt(d)) / rows.clamp_min(1e-300), max=1.0)
    gpc = f[:, :, None] * g * f[:, None, :]
    s_pc = torch.sqrt(torch.linalg.eigvalsh(gpc)[:, -1].clamp_min(0))
    s_sp = torch.clamp(smax, max=L)
    den = smax.clamp_min(1e-300)
    return {"L": L, "d": d, "n": int(len(smax)),
            "spectral_norm_median": float(smax.median()),
            "spectral_norm_p90": float(torch.quantile(smax, 0.9)),
            "frac_binding_spectral": float((smax > L).double().mean()),
            "frac_binding_per_coordinate": float((rows > L / math.sqrt(d)).any(1)
                                                 .double().mean()),
            "kept_spectral": float((s_sp / den).mean()),
            "kept_per_coordinate": float((s_pc / den).mean())}


def _predict(model, x, batch: int = 20_000):
    torch = _torch()
    with torch.no_grad():
        xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
        return np.concatenate([model(xt[i:i + batch]).numpy() for i in
                               range(0, len(xt), batch)])


def _eval_cls(model, job, cfg) -> dict:
    from privot.learning.metrics import (
        accuracy,
        disparate_impact,
        equality_of_odds_indexes,
        ks_distance,
        wasserstein_between_groups,
    )
    from privot.ot import w2_squared_1d

    train, test = _data(cfg)
    s_tr = _predict(model, train.x)[:, 0].astype(np.float64)
    s_te = _predict(model, test.x)[:, 0].astype(np.float64)
    a_tr, y_tr = np.asarray(train.sensitive), np.asarray(train.y)
    a_te, y_te = np.asarray(test.sensitive), np.asarray(test.y)
    pc = np.clip(s_tr, 1e-7, 1 - 1e-7)
    cl = float(-np.mean(y_tr * np.log(pc) + (1 - y_tr) * np.log(1 - pc)))
    if job["crit"] == "sp":
        w = w2_squared_1d(s_tr[a_tr == 0], s_tr[a_tr == 1])
    else:
        w = 0.5 * sum(w2_squared_1d(s_tr[(a_tr == 0) & (y_tr == k)],
                                    s_tr[(a_tr == 1) & (y_tr == k)]) for k in (0, 1))
    g_te = (s_te > 0.5).astype(int)
    eo0, eo1 = equality_of_odds_indexes(y_te, g_te, a_te)
    bins = np.linspace(0, 1, 41)
    hist = {}
    for a in (0, 1):
        hist[f"A={a}"] = np.histogram(s_tr[a_tr == a], bins)[0].tolist()
        for k in (0, 1):
            hist[f"A={a},Y={k}"] = np.histogram(s_tr[(a_tr == a) & (y_tr == k)], bins)[0].tolist()
    alpha = job["alpha"]
    return {"train_objective": (1 - alpha) * cl + alpha * w, "train_CL": cl, "train_W": w,
            "test_accuracy": accuracy(y_te, g_te), "test_DI": disparate_impact(g_te, a_te),
            "test_EO0": eo0, "test_EO1": eo1,
            "test_W2_scores_between_groups": wasserstein_between_groups(s_te, a_te),
            "test_KS_scores_between_groups": ks_distance(s_te, a_te),
            "hist_bins": bins.tolist(), "hist_train": hist}


def _eval_reg(model, job, cfg) -> dict:
    from privot.learning.metrics import accuracy
    from privot.ot import sliced_w2_squared

    train, test = _data(cfg)
    out = {}
    for name, part in (("train", train), ("test", test)):
        o = _predict(model, part.x).astype(np.float64)
        a = np.asarray(part.sensitive)
        yc = np.asarray(part.y_continuous) - 0.5
        above = o[:, 1] > -o[:, 0]
        out[f"{name}_RL"] = float(np.mean(np.sum((o - yc) ** 2, 1)))
        out[f"{name}_SW"] = sliced_w2_squared(o[a == 0], o[a == 1], n_projections=200, rng=0)
        out[f"{name}_OD0"] = float(above[a == 0].mean())
        out[f"{name}_OD1"] = float(above[a == 1].mean())
        if name == "test":
            out["test_accuracy"] = accuracy(np.asarray(part.y), above.astype(int))
        else:
            out["train_objective"] = ((1 - job["alpha"]) * out["train_RL"]
                                      + job["alpha"] * out["train_SW"])
            truth = yc[:, 1] > -yc[:, 0]
            out["train_OD0_truth"] = float(truth[a == 0].mean())
            out["train_OD1_truth"] = float(truth[a == 1].mean())
            sel = np.random.default_rng(SEED + 7).permutation(len(o))[:N_SCATTER]
            out["scatter"] = {"g": np.round(o[sel], 3).tolist(), "a": a[sel].tolist()}
    x_diag = np.asarray(test.x[:2000], dtype=np.float32)
    out["jacobian_diagnostics"] = jacobian_diagnostics(model, _torch().as_tensor(x_diag),
                                                       cfg["reg"]["L"])
    return out


def _eval_rep(model, job, cfg) -> dict:
    from sklearn.linear_model import LogisticRegression

    from privot.learning.metrics import accuracy, disparate_impact
    from privot.ot import sliced_w2_squared

    train, test = _data(cfg)
    out = {}
    for name, part in (("train", train), ("test", test)):
        x = np.asarray(part.x, dtype=np.float64)
        o = _predict(model, part.x).astype(np.float64)
        z, rec = o[:, :2], o[:, 2:]
        a = np.asarray(part.sensitive)
        err = (rec - x) ** 2
        out[f"{name}_RL"] = float(err.sum(1).mean())
        out[f"{name}_RL_core"] = float(err[:, :8].sum(1).mean())
        out[f"{name}_SW_latent"] = sliced_w2_squared(z[a == 0], z[a == 1], n_projections=200,
                                                     rng=0)
        if name == "train":
            out["train_objective"] = ((1 - job["alpha"]) * out["train_RL"]
                                      + job["alpha"] * out["train_SW_latent"])
            sel = np.random.default_rng(SEED + 7).permutation(len(z))[:N_SCATTER]
            out["scatter"] = {"z": np.round(z[sel], 3).tolist(), "a": a[sel].tolist()}
        else:
            perm = np.random.default_rng(SEED + 8).permutation(len(z))
            cut = int(0.6 * len(z))
            fit, ev = perm[:cut], perm[cut:]
            y = np.asarray(part.y)
            clf = LogisticRegression().fit(z[fit], y[fit])
            pred = clf.predict(z[ev])
            out["test_logreg_accuracy"] = accuracy(y[ev], pred)
            out["test_logreg_DI"] = disparate_impact(pred, a[ev])
            raw = LogisticRegression().fit(x[fit], y[fit]).predict(x[ev])  # reference
            out["test_logreg_raw_x_accuracy"] = accuracy(y[ev], raw)
            out["test_logreg_raw_x_DI"] = disparate_impact(raw, a[ev])
    x_diag = np.asarray(test.x[:2000], dtype=np.float32)
    out["jacobian_diagnostics"] = jacobian_diagnostics(model, _torch().as_tensor(x_diag),
                                                       cfg["rep"]["L"], score_dims=2)
    return out


def _gen_eval_sets(cfg):
    g = cfg["gen"]
    rng = np.random.default_rng(SEED + 41)  # fresh points, never trained on
    x = rng.standard_normal((g["n_eval"], 2)).astype(np.float32)
    ang = rng.uniform(0.0, 2 * np.pi, g["n_eval"])
    z = 0.75 * np.stack([np.cos(ang), np.sin(ang)], 1)
    return x, z


def _run_gen(job, cfg, model, opt, trainer) -> dict:
    from privot.ot import sliced_w2_squared
    from privot.privacy.accounting import pld_epsilon

    g = cfg["gen"]
    x_ev, z_ev = _gen_eval_sets(cfg)
    snaps = []
    rep = trainer.privacy_report()
    per = rep["sensitivity_per_group"]

    def snap(t):
        if t not in g["snapshots"]:
            return
        o = _predict(model, x_ev).astype(np.float64)
        r = np.linalg.norm(o, axis=1)
        s = {"step": t, "SW2sq_to_reference": sliced_w2_squared(o, z_ev, n_projections=200,
                                                                 rng=0),
             "radius_mean": float(r.mean()), "radius_sd": float(r.std()),
             "points": np.round(o[:N_SCATTER], 3).tolist()}
        if job["eps"] is not None and t > 0:
            kw = dict(sampling_rate=rep["sampling_rate"], steps=t, delta=rep["delta"],
                      sampling="fixed-size")
            sigma = rep["noise_multiplier"]
            s["epsilon_X"] = pld_epsilon(noise_multiplier=sigma * rep["sensitivity"]
                                         / per["x"], **kw)
            s["epsilon_Z"] = pld_epsilon(noise_multiplier=sigma * rep["sensitivity"]
                                         / per["reference"], **kw)
        snaps.append(s)

    snap(0)
    curve = _train(trainer, model, opt, job["eps"], on_step=snap)
    return {"snapshots": snaps, "curve": _curve_json(curve),
            "reference_points": np.round(z_ev[:N_SCATTER], 3).tolist(),
            "jacobian_diagnostics": jacobian_diagnostics(
                model, _torch().as_tensor(x_ev[:2000]), g["L"])}


def _timing(job, cfg) -> dict:
    """Private step vs plain autograd step of the same objective, alternating."""
    torch = _torch()
    import copy

    from privot.learning import make_private
    from privot.learning.sampler import fixed_size_indices

    model, opt, groups, kw = _build(job, cfg)
    plain_model = copy.deepcopy(model)
    plain_opt = torch.optim.SGD(plain_model.parameters(), lr=opt.param_groups[0]["lr"])
    t_cal = time.perf_counter()
    # cls: make_private's own calibration (checked against the driver's sigma)
    budget = (dict(target_epsilon=job["eps"]) if job["kind"] == "cls"
              else dict(noise_multiplier=job["sigma"]))
    trainer = make_private(model, opt, groups, **budget, jacobian_clipping="spectral",
                           rng=np.random.default_rng(SEED + 99), **kw)
    t_cal = time.perf_counter() - t_cal
    rng = np.random.default_rng(SEED + 98)
    dirs = _direction_source(kw.get("n_projections", 50))
    loss_fn = trainer.loss_fn

    def plain_step():
        idx = [fixed_size_indices(g.size, b, rng=rng)
               for g, b in zip(groups.groups, trainer.batch_sizes, strict=True)]
        obj = _plain_objective(plain_model, groups, idx, alpha=kw["alpha"], loss_fn=loss_fn,
                               score_fn=kw.get("score_fn"), dirs_for=dirs)
        plain_opt.zero_grad(set_to_none=True)
        obj.backward()
        plain_opt.step()

    trainer.step()
    plain_step()  # warm-up
    priv, plain = [], []
    for _ in range(cfg["timing_pairs"]):
        t = time.perf_counter()
        trainer.step()
        priv.append(time.perf_counter() - t)
        t = time.perf_counter()
        plain_step()
        plain.append(time.perf_counter() - t)
    pm, qm = statistics.median(priv), statistics.median(plain)
    return {"private_step_ms": 1e3 * pm, "plain_autograd_step_ms": 1e3 * qm,
            "ratio": pm / qm, "pairs": cfg["timing_pairs"], "alpha": kw["alpha"],
            "per_example_method": trainer.method,
            "make_private_seconds_with_calibration": t_cal,
            "make_private_sigma": trainer.noise_multiplier,
            "driver_sigma": job["sigma"],
            "sigma_matches_driver_calibration": math.isclose(trainer.noise_multiplier,
                                                             job["sigma"], rel_tol=1e-9)}


def _job_seed(job: dict) -> int:
    """Batch / noise seed of a cell: plain-autograd and per-coordinate cells share their
    twin's (paired comparisons); replicates differ."""
    import zlib

    key = _label({**job, "plain": False, "clipping": "spectral"}) + f" #{job['replicate']}"
    return SEED + 1000 + zlib.crc32(key.encode()) % 100_000


def run_job(job: dict, cfg: dict) -> dict:
    """One cell (runs in a worker process)."""
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    _torch()
    from privot.learning import make_private

    t0 = time.perf_counter()
    if job["kind"] == "timing":
        res = _timing({**job, "kind": job["exp"]}, cfg)
        return {"job": job, "result": res, "seconds": time.perf_counter() - t0}
    model, opt, groups, kw = _build(job, cfg)
    eps = job["eps"]
    rng = np.random.default_rng(_job_seed(job))
    # sigma: calibrate_noise_multiplier (PLD, fixed-size) -- the call make_private makes
    # for target_epsilon -- done once per (eps, q, T, delta) in the driver and passed in.
    budget = dict(noise_multiplier=job["sigma"] if eps is not None else 100.0)
    if job.get("plain"):
        res = _plain_run(job, cfg, model, opt, groups, kw, rng)
        return {"job": job, "result": res, "seconds": time.perf_counter() - t0}
    trainer = make_private(model, opt, groups, jacobian_clipping=job["clipping"], rng=rng,
                           **budget, **kw)
    cal = _calibration(trainer, eps, job)
    t_train = time.perf_counter()
    if job["kind"] == "gen":
        res = _run_gen(job, cfg, model, opt, trainer)
    else:
        curve = _train(trainer, model, opt, eps)
        train_s = time.perf_counter() - t_train
        res = {"curve": _curve_json(curve), "train_seconds": train_s,
               "ms_per_step": 1e3 * train_s / trainer.steps}
        res.update({"cls": _eval_cls, "reg": _eval_reg, "rep": _eval_rep}[job["kind"]](
            model, job, cfg))
    res.setdefault("train_seconds", time.perf_counter() - t_train)
    res["privacy"] = cal
    return {"job": job, "result": res, "seconds": time.perf_counter() - t0}


def _plain_run(job, cfg, model, opt, groups, kw, rng) -> dict:
    """eps = inf with plain autograd: no clipping, no noise; the same batches as the
    noiseless run of the same cell (same seed, the batch sampler is the only draw)."""
    from privot.learning.private import _LOSS_FNS
    from privot.learning.sampler import fixed_size_indices
    from privot.learning.sensitivity import objective_sensitivity  # noqa: F401

    sizes = [max(1, int(round(cfg["batch_fraction"] * g.size))) for g in groups.groups]
    loss_fn = _LOSS_FNS[kw["loss"]] if isinstance(kw["loss"], str) else kw["loss"]
    dirs = _direction_source(kw.get("n_projections", 50))
    curve = []
    t0 = time.perf_counter()
    for _ in range(kw["steps"]):
        idx = [fixed_size_indices(g.size, b, rng=rng) for g, b in zip(groups.groups, sizes,
                                                                       strict=True)]
        obj = _plain_objective(model, groups, idx, alpha=kw["alpha"], loss_fn=loss_fn,
                               score_fn=kw.get("score_fn"), dirs_for=dirs)
        opt.zero_grad(set_to_none=True)
        obj.backward()
        opt.step()
        curve.append((float(obj.detach()), math.nan, math.nan))
    res = {"curve": _curve_json(curve), "train_seconds": time.perf_counter() - t0}
    res.update(_eval_cls(model, job, cfg))
    res["privacy"] = {"note": "plain autograd, no clipping, no noise", "epsilon": math.inf}
    return res


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------


def make_jobs(cfg: dict) -> list[dict]:
    jobs = []

    def add(**j):
        j.setdefault("clipping", "spectral")
        j.setdefault("replicate", 0)
        j["index"] = len(jobs)
        jobs.append(j)

    nrep = cfg["replicates"]
    for crit in ("sp", "eo"):
        for alpha in cfg["cls_alphas"]:
            for eps in cfg["cls_eps"]:
                for rep in range(nrep["cls"]):
                    add(kind="cls", crit=crit, alpha=alpha, eps=eps, replicate=rep)
        for alpha in (0.0, 0.75):
            for eps in cfg["cls_eps_extra"]:
                add(kind="cls", crit=crit, alpha=alpha, eps=eps)
            add(kind="cls", crit=crit, alpha=alpha, eps=None, plain=True)
    for alpha in cfg["reg_alphas"]:
        for eps in cfg["eps_main"]:
            if alpha == 0.75 and eps is not None:
                continue
            add(kind="reg", alpha=alpha, eps=eps)
    for clipping in ("spectral", "per-coordinate"):  # paired: same seeds for both
        for rep in range(nrep["clip_reg"]):
            add(kind="reg", alpha=0.75, eps=1.0, clipping=clipping, replicate=rep)
    for alpha in cfg["rep_alphas"]:
        for eps in cfg["eps_main"]:
            add(kind="rep", alpha=alpha, eps=eps)
    g = cfg["gen"]
    add(kind="gen", alpha=1.0, eps=None)
    for clipping in ("spectral", "per-coordinate"):
        for rep in range(nrep["clip_gen"]):
            add(kind="gen", alpha=1.0, eps=g["eps"], clipping=clipping, replicate=rep)
    for exp, alpha, crit in (("cls", 0.75, "sp"), ("reg", 0.75, None), ("rep", 0.75, None),
                             ("gen", 1.0, None)):
        add(kind="timing", exp=exp, alpha=alpha, crit=crit, eps=1.0)
    return jobs


def _calib_key(job: dict, cfg: dict) -> tuple:
    """(eps, delta, T, q) of a private cell, q = max_j n'_j / n_j as make_private sets it."""
    kind = job["exp"] if job["kind"] == "timing" else job["kind"]
    if kind == "gen":
        g = cfg["gen"]
        return (job["eps"], 0.1 / g["n"], g["T"], g["batch"] / g["n"])
    train, _ = _data(cfg)
    a, y = np.asarray(train.sensitive), np.asarray(train.y)
    if kind == "cls" and job["crit"] == "eo":
        sizes = [int(((a == v) & (y == k)).sum()) for k in (0, 1) for v in (0, 1)]
    else:
        sizes = [int((a == v).sum()) for v in (0, 1)]
    q = max(max(1, int(round(cfg["batch_fraction"] * n))) / n for n in sizes)
    return (job["eps"], 0.1 / cfg["n_train"], cfg[kind]["T"], q)


def _cost(job: dict, cfg: dict) -> float:
    if job["kind"] == "timing":
        return 1.0
    steps = cfg[job["kind"]]["T"]
    return _COST[job["kind"]] * steps * (0.3 if job.get("plain") else 1.0)


def _eps_name(eps) -> str:
    return "inf" if eps is None else f"{eps:g}"


def _label(job: dict) -> str:
    if job["kind"] == "timing":
        return f"timing {job['exp']}"
    eps = "inf" if job["eps"] is None else f"{job['eps']:g}"
    crit = f" {job['crit']}" if job.get("crit") else ""
    extra = " plain" if job.get("plain") else ""
    extra += " per-coord" if job["clipping"] == "per-coordinate" else ""
    extra += f" #{job['replicate']}" if job.get("replicate") else ""
    return f"{job['kind']}{crit} alpha={job['alpha']:g} eps={eps}{extra}"


def _finite(x):
    """JSON: inf/nan as strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, np.generic):
        return _finite(x.item())
    return x


def _cells(results: list, **match) -> list:
    """Cells whose job matches; replicate 0 unless ``replicate`` is given (None: all)."""
    match.setdefault("replicate", 0)
    if match["replicate"] is None:
        del match["replicate"]
    out = []
    for r in results:
        j = r["job"]
        if all(j.get(k, 0 if k == "replicate" else None) == v for k, v in match.items()):
            out.append(r)
    return out


def _one(results, **match):
    c = _cells(results, **match)
    return c[0]["result"] if c else None


def _dist1(x: float) -> float:
    """How far a ratio index is from parity (1), symmetric: |log x|."""
    return abs(math.log(x)) if x and math.isfinite(x) and x > 0 else math.inf


def _mean_sd(values: list) -> dict:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return {"mean": None, "sd": None, "n": 0, "values": []}
    return {"mean": statistics.fmean(v), "sd": statistics.stdev(v) if len(v) > 1 else None,
            "n": len(v), "values": v}


def _paired(results: list, kind: str, metrics: dict) -> dict:
    """Spectral vs per-coordinate over the replicates (same seeds: paired)."""
    by = {}
    for r in _cells(results, kind=kind, replicate=None):
        j = r["job"]
        if j["eps"] is None or (kind == "reg" and j["alpha"] != 0.75):
            continue
        by.setdefault(j["replicate"], {})[j["clipping"]] = r["result"]
    reps = sorted(k for k, v in by.items() if len(v) == 2)
    if not reps:
        return {}
    out = {"replicates": len(reps)}
    for name, f in metrics.items():
        a = [f(by[k]["spectral"]) for k in reps]
        b = [f(by[k]["per-coordinate"]) for k in reps]
        out[name] = {"spectral": _mean_sd(a), "per-coordinate": _mean_sd(b),
                     "spectral_minus_per_coordinate": _mean_sd([x - y for x, y in
                                                                zip(a, b, strict=True)])}
    return out


def summary(results: list, cfg: dict) -> dict:
    s: dict = {}
    # --- B.1
    for crit in ("sp", "eo"):
        rows = {}
        for eps in tuple(cfg["cls_eps"]) + tuple(cfg["cls_eps_extra"]):
            row = {}
            for alpha in cfg["cls_alphas"]:
                r = _one(results, kind="cls", crit=crit, alpha=alpha, eps=eps,
                         clipping="spectral", plain=None)
                if r is None:
                    continue
                row[f"{alpha:g}"] = {
                    "sigma": r["privacy"]["noise_multiplier"],
                    "objective": r["train_objective"], "CL": r["train_CL"], "W": r["train_W"],
                    "acc": r["test_accuracy"], "DI": r["test_DI"], "EO0": r["test_EO0"],
                    "EO1": r["test_EO1"], "W2_test": r["test_W2_scores_between_groups"]}
            rows["inf" if eps is None else f"{eps:g}"] = row
        s[f"classification_{crit}"] = rows
        checks = {}
        for eps_key, row in rows.items():
            alphas = sorted(row, key=float)
            if len(alphas) < 2:
                continue
            if crit == "sp":
                gap = [_dist1(row[a]["DI"]) for a in alphas]
            else:
                gap = [max(_dist1(row[a]["EO0"]), _dist1(row[a]["EO1"])) for a in alphas]
            acc = [row[a]["acc"] for a in alphas]
            w2 = [row[a]["W2_test"] for a in alphas]
            checks[eps_key] = {
                "alphas": alphas, "parity_gap_|log index|": gap,
                "gap_decreases_with_alpha": bool(all(b <= a + 1e-9 for a, b in
                                                     zip(gap, gap[1:], strict=False))),
                "gap_at_max_alpha_below_alpha_0": bool(gap[-1] < gap[0]),
                "W2_between_groups_decreases": bool(all(b <= a + 1e-9 for a, b in
                                                        zip(w2, w2[1:], strict=False))),
                "accuracy_decreases_with_alpha": bool(acc[-1] < acc[0])}
        s[f"classification_{crit}_checks"] = checks
        diffs = {}
        if "inf" in rows and "1" in rows:
            for a in rows["1"]:
                if a in rows["inf"]:
                    p, q = rows["1"][a], rows["inf"][a]
                    diffs[a] = {k: p[k] - q[k] for k in ("acc", "DI", "EO0", "EO1", "objective")
                                if math.isfinite(p[k]) and math.isfinite(q[k])}
        s[f"classification_{crit}_eps1_minus_inf"] = diffs
        plain = {}
        for alpha in (0.0, 0.75):
            p = _one(results, kind="cls", crit=crit, alpha=alpha, eps=None, plain=True)
            q = _one(results, kind="cls", crit=crit, alpha=alpha, eps=None,
                     clipping="spectral", plain=None)
            if p and q:
                plain[f"{alpha:g}"] = {k: p[k] - q[k] for k in
                                       ("test_accuracy", "test_DI", "test_EO0", "test_EO1",
                                        "train_objective")}
        s[f"classification_{crit}_plain_minus_clipped_noiseless"] = plain
    # --- B.2
    reg = {}
    for r in _cells(results, kind="reg"):
        j = r["job"]
        key = (f"alpha={j['alpha']:g} eps={_eps_name(j['eps'])}"
               + (" per-coordinate" if j["clipping"] == "per-coordinate" else ""))
        q = r["result"]
        reg[key] = {"sigma": q["privacy"]["noise_multiplier"], "objective": q["train_objective"],
                    "RL": q["train_RL"], "SW": q["train_SW"], "OD0": q["train_OD0"],
                    "OD1": q["train_OD1"], "OD_gap": abs(q["train_OD0"] - q["train_OD1"]),
                    "test_acc": q["test_accuracy"], "test_RL": q["test_RL"],
                    "test_SW": q["test_SW"],
                    "jacobian_frac_binding_spectral":
                        q["jacobian_diagnostics"]["frac_binding_spectral"],
                    "jacobian_frac_binding_per_coordinate":
                        q["jacobian_diagnostics"]["frac_binding_per_coordinate"]}
    s["regression"] = reg
    # --- B.3
    rep = {}
    for r in _cells(results, kind="rep"):
        j = r["job"]
        key = f"alpha={j['alpha']:g} eps={_eps_name(j['eps'])}"
        q = r["result"]
        rep[key] = {"sigma": q["privacy"]["noise_multiplier"], "objective": q["train_objective"],
                    "RL": q["train_RL"], "SW_latent": q["train_SW_latent"],
                    "test_RL": q["test_RL"], "test_RL_core": q["test_RL_core"],
                    "test_SW_latent": q["test_SW_latent"],
                    "logreg_acc": q["test_logreg_accuracy"], "logreg_DI": q["test_logreg_DI"],
                    "logreg_raw_x_acc": q["test_logreg_raw_x_accuracy"],
                    "logreg_raw_x_DI": q["test_logreg_raw_x_DI"]}
    s["representation"] = rep
    # --- App. C
    gen = {}
    for r in _cells(results, kind="gen"):
        j = r["job"]
        key = ("eps=inf" if j["eps"] is None else f"eps={j['eps']:g}") + f" {j['clipping']}"
        q = r["result"]
        gen[key] = {"snapshots": [{k: v for k, v in sn.items() if k != "points"}
                                  for sn in q["snapshots"]],
                    "sigma": q["privacy"]["noise_multiplier"],
                    "jacobian": q["jacobian_diagnostics"]}
    s["generation"] = gen
    s["timing"] = {r["job"]["exp"]: r["result"] for r in _cells(results, kind="timing")}
    ms: dict = {}
    for r in results:
        if "ms_per_step" in r["result"]:
            ms.setdefault(r["job"]["kind"], []).append(r["result"]["ms_per_step"])
    s["ms_per_training_step_median"] = {k: statistics.median(v) for k, v in ms.items()}
    priv: dict = {}
    for r in results:
        p = r["result"].get("privacy", {})
        if "epsilon_pld" not in p:
            continue
        j = r["job"]
        key = f"{j['kind']}{' ' + j['crit'] if j.get('crit') else ''} eps={_eps_name(j['eps'])}"
        e = priv.setdefault(key, {
            "steps": cfg[j["kind"]]["T"], "sampling_rate": p["sampling_rate"],
            "delta": p["delta"], "sigma_pld": p["noise_multiplier"],
            "epsilon_pld": p["epsilon_pld"], "epsilon_gdp_clt_at_sigma_pld":
                p["epsilon_paper_gdp_clt"], "epsilon_rdp_at_sigma_pld": p["epsilon_rdp"],
            "sigma_gdp_clt_calibration (the paper's)": p["sigma_paper_gdp_clt_calibration"],
            "sensitivity_by_alpha": {}})
        e["sensitivity_by_alpha"][f"{j['alpha']:g}"] = p["sensitivity"]
    s["privacy"] = priv
    jc = {}
    pairs_reg = _paired(results, "reg", {
        "objective": lambda q: q["train_objective"], "RL": lambda q: q["train_RL"],
        "SW": lambda q: q["train_SW"],
        "OD_gap": lambda q: abs(q["train_OD0"] - q["train_OD1"]),
        "test_acc": lambda q: q["test_accuracy"],
        "jacobian_frac_binding_spectral":
            lambda q: q["jacobian_diagnostics"]["frac_binding_spectral"],
        "jacobian_frac_binding_per_coordinate":
            lambda q: q["jacobian_diagnostics"]["frac_binding_per_coordinate"]})
    if pairs_reg:
        jc["B.2 alpha=0.75 eps=1"] = pairs_reg
    pairs_gen = _paired(results, "gen", {
        "final_SW2sq_to_circle": lambda q: q["snapshots"][-1]["SW2sq_to_reference"],
        "final_radius_mean (target 0.75)": lambda q: q["snapshots"][-1]["radius_mean"],
        "jacobian_kept_spectral_norm_fraction": lambda q: (
            q["jacobian_diagnostics"]["kept_spectral"]
            if q["privacy"]["jacobian_clipping"] == "spectral"
            else q["jacobian_diagnostics"]["kept_per_coordinate"])})
    if pairs_gen:
        jc[f"C eps={cfg['gen']['eps']:g}"] = pairs_gen
    rep_stats = {}
    for crit in ("sp", "eo"):
        for alpha in cfg["cls_alphas"]:
            per_eps = {}
            for eps in cfg["cls_eps"]:
                cells = [r["result"] for r in _cells(results, kind="cls", crit=crit,
                                                     alpha=alpha, eps=eps, plain=None,
                                                     replicate=None)]
                per_eps[_eps_name(eps)] = {
                    k: _mean_sd([q[f"test_{k}"] for q in cells])
                    for k in ("accuracy", "DI", "EO0", "EO1")}
            if "inf" in per_eps and "1" in per_eps:
                per_eps["eps1_minus_inf_mean"] = {
                    k: per_eps["1"][k]["mean"] - per_eps["inf"][k]["mean"]
                    for k in ("accuracy", "DI", "EO0", "EO1")}
            rep_stats[f"{crit} alpha={alpha:g}"] = per_eps
    s["classification_replicates"] = rep_stats
    s["jacobian_clipping_comparison"] = jc
    s["claims"] = _claims(s, cfg)
    return s


def _claims(s: dict, cfg: dict) -> dict:
    c = {}
    for crit in ("sp", "eo"):
        ch = s.get(f"classification_{crit}_checks", {})
        c[f"B.1 {crit}: penalty reduces the parity gap (alpha max vs 0), every eps"] = \
            all(v["gap_at_max_alpha_below_alpha_0"] for v in ch.values()) if ch else None
        c[f"B.1 {crit}: gap monotone in alpha, every eps"] = \
            all(v["gap_decreases_with_alpha"] for v in ch.values()) if ch else None
        c[f"B.1 {crit}: accuracy lower at alpha max, every eps"] = \
            all(v["accuracy_decreases_with_alpha"] for v in ch.values()) if ch else None
        d = s.get(f"classification_{crit}_eps1_minus_inf", {})
        if d:
            c[f"B.1 {crit}: eps=1 vs inf, max |delta acc|"] = max(abs(v["acc"]) for v in
                                                                  d.values())
            key = "DI" if crit == "sp" else "EO1"
            c[f"B.1 {crit}: eps=1 vs inf, max |delta {key}|"] = max(
                abs(v.get(key, 0.0)) for v in d.values())
    for key, v in s.get("classification_replicates", {}).items():
        d = v.get("eps1_minus_inf_mean")
        if d:
            c[f"B.1 {key}: eps=1 minus inf, mean over seeds (acc, DI, EO0, EO1)"] = [
                round(d[k], 4) for k in ("accuracy", "DI", "EO0", "EO1")]
    for name, v in s.get("jacobian_clipping_comparison", {}).items():
        key = "objective" if "objective" in v else "final_SW2sq_to_circle"
        diffs = v[key]["spectral_minus_per_coordinate"]["values"]
        c[f"{name}: spectral {key} lower than per-coordinate in how many seeds"] = \
            f"{sum(d < 0 for d in diffs)}/{len(diffs)}"
    reg = s.get("regression", {})
    if "alpha=0 eps=inf" in reg and "alpha=0.75 eps=inf" in reg:
        c["B.2: OD gap smaller at alpha=0.75 than 0 (eps=inf)"] = \
            reg["alpha=0.75 eps=inf"]["OD_gap"] < reg["alpha=0 eps=inf"]["OD_gap"]
    if "alpha=0 eps=1" in reg and "alpha=0.75 eps=1" in reg:
        c["B.2: OD gap smaller at alpha=0.75 than 0 (eps=1)"] = \
            reg["alpha=0.75 eps=1"]["OD_gap"] < reg["alpha=0 eps=1"]["OD_gap"]
    rep = s.get("representation", {})
    for e in ("inf", "1"):
        a0, a1 = rep.get(f"alpha=0 eps={e}"), rep.get(f"alpha=0.75 eps={e}")
        if a0 and a1:
            c[f"B.3: latent SW smaller at alpha=0.75 (eps={e})"] = \
                a1["test_SW_latent"] < a0["test_SW_latent"]
            c[f"B.3: logreg DI closer to 1 at alpha=0.75 (eps={e})"] = \
                _dist1(a1["logreg_DI"]) < _dist1(a0["logreg_DI"])
            c[f"B.3: RL grows more than RL_core (eps={e})"] = \
                (a1["test_RL"] - a0["test_RL"]) > (a1["test_RL_core"] - a0["test_RL_core"])
    gen = s.get("generation", {})
    for k, v in gen.items():
        sn = v["snapshots"]
        if len(sn) >= 2:
            c[f"C: SW2^2 to the circle falls ({k})"] = sn[-1]["SW2sq_to_reference"] < \
                sn[0]["SW2sq_to_reference"]
    return c


# ---------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------


def _fmt(x, nd=3):
    if isinstance(x, str):
        return x
    return "nan" if x is None or not math.isfinite(x) else f"{x:.{nd}g}"


def plot(results: list, cfg: dict, outdir: Path, suffix: str) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    eps_rows = cfg["cls_eps"]
    alphas = cfg["cls_alphas"]

    def eps_name(e):
        return "inf" if e is None else f"{e:g}"

    # Figs. 5 and 7
    for crit, groups in (("sp", ("A=0", "A=1")),
                         ("eo", ("A=0,Y=0", "A=1,Y=0", "A=0,Y=1", "A=1,Y=1"))):
        fig, axes = plt.subplots(len(eps_rows), len(alphas),
                                 figsize=(3.6 * len(alphas), 3.0 * len(eps_rows)),
                                 squeeze=False)
        for i, eps in enumerate(eps_rows):
            for k, alpha in enumerate(alphas):
                ax = axes[i, k]
                r = _one(results, kind="cls", crit=crit, alpha=alpha, eps=eps,
                         clipping="spectral", plain=None)
                if r is None:
                    ax.axis("off")
                    continue
                bins = np.asarray(r["hist_bins"])
                centres = 0.5 * (bins[1:] + bins[:-1])
                colours = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
                for gname, col in zip(groups, colours, strict=False):
                    h = np.asarray(r["hist_train"][gname], dtype=float)
                    ax.step(centres, h / max(h.sum(), 1), where="mid", color=col, label=gname)
                sig = r["privacy"]["noise_multiplier"]
                fair = (f"DI={_fmt(r['test_DI'])}" if crit == "sp" else
                        f"EO0={_fmt(r['test_EO0'])} EO1={_fmt(r['test_EO1'])}")
                ax.set_title(f"eps={eps_name(eps)} alpha={alpha:g} sigma={_fmt(sig)}\n"
                             f"L={_fmt(r['train_objective'])} CL={_fmt(r['train_CL'])} "
                             f"W={_fmt(r['train_W'])}\nACC={_fmt(r['test_accuracy'])} {fair}",
                             fontsize=7)
                ax.set_xlim(0, 1)
                ax.tick_params(labelsize=7)
                if i == 0 and k == 0:
                    ax.legend(fontsize=6)
        fig.suptitle(f"B.1 classification, {crit.upper()} penalty: g(x) per group (train)",
                     fontsize=9)
        fig.tight_layout()
        path = outdir / f"learning_paper_{crit}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path.name)

    # Loss curves (Figs. 6, 8, 10, 12)
    panels = [("cls", "sp", a) for a in alphas] + [("cls", "eo", a) for a in alphas] + \
        [("reg", None, a) for a in cfg["reg_alphas"]] + [("rep", None, a)
                                                           for a in cfg["rep_alphas"]]
    ncol = 4
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 2.8 * nrow), squeeze=False)
    for ax, (kind, crit, alpha) in zip(axes.flat, panels, strict=False):
        for r in _cells(results, kind=kind, alpha=alpha):
            j = r["job"]
            if crit and j.get("crit") != crit:
                continue
            if j.get("plain") or j["clipping"] != "spectral":
                continue
            loss = np.asarray(r["result"]["curve"]["loss"])
            ax.plot(np.arange(1, len(loss) + 1), loss, lw=0.7,
                    label=f"eps={eps_name(j['eps'])}")
        name = {"cls": f"B.1 {crit}", "reg": "B.2 regression", "rep": "B.3 autoencoder"}[kind]
        ax.set_title(f"{name}, alpha={alpha:g}", fontsize=8)
        ax.set_xlabel("step", fontsize=7)
        ax.set_ylabel("batch objective", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    path = outdir / f"learning_paper_losses{suffix}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path.name)

    # Fig. 9 and Fig. 11
    for kind, key, fname, title in (
            ("reg", "g", "regression", "B.2: g(x) per group (train)"),
            ("rep", "z", "representation", "B.3: latent code per group (train)")):
        cells = [r for r in _cells(results, kind=kind)]
        rows = [(e, "spectral") for e in cfg["eps_main"]]
        if any(r["job"]["clipping"] == "per-coordinate" for r in cells):
            rows.append((1.0, "per-coordinate"))
        cols = cfg[f"{kind}_alphas"]
        fig, axes = plt.subplots(len(rows), len(cols), figsize=(3.6 * len(cols),
                                                                3.4 * len(rows)),
                                 squeeze=False)
        for i, (eps, clip) in enumerate(rows):
            for k, alpha in enumerate(cols):
                ax = axes[i, k]
                c = [r for r in cells if r["job"]["eps"] == eps and r["job"]["alpha"] == alpha
                     and r["job"]["clipping"] == clip]
                if not c:
                    ax.axis("off")
                    continue
                q = c[0]["result"]
                pts = np.asarray(q["scatter"][key])
                a = np.asarray(q["scatter"]["a"])
                for v, col in ((0, "tab:blue"), (1, "tab:orange")):
                    ax.scatter(pts[a == v, 0], pts[a == v, 1], s=1, alpha=0.4, color=col,
                               label=f"A={v}")
                sig = q["privacy"]["noise_multiplier"]
                if kind == "reg":
                    ax.plot([-0.5, 0.5], [0.5, -0.5], color="k", lw=0.6)
                    txt = (f"RL={_fmt(q['train_RL'])} SW={_fmt(q['train_SW'])}\n"
                           f"ACC={_fmt(q['test_accuracy'])} OD0={_fmt(q['train_OD0'])} "
                           f"OD1={_fmt(q['train_OD1'])}")
                else:
                    txt = (f"RL={_fmt(q['train_RL'])} SW={_fmt(q['train_SW_latent'])}\n"
                           f"RLc={_fmt(q['test_RL_core'])} ACC={_fmt(q['test_logreg_accuracy'])}"
                           f" DI={_fmt(q['test_logreg_DI'])}")
                clip_txt = " per-coord" if clip == "per-coordinate" else ""
                ax.set_title(f"eps={eps_name(eps)}{clip_txt} alpha={alpha:g} "
                             f"sigma={_fmt(sig)}\nL={_fmt(q['train_objective'])} {txt}",
                             fontsize=7)
                ax.tick_params(labelsize=7)
                if i == 0 and k == 0:
                    ax.legend(fontsize=6, markerscale=5)
        fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        path = outdir / f"learning_paper_{fname}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path.name)

    # Fig. 13
    gens = _cells(results, kind="gen")
    if gens:
        ns = max(len(r["result"]["snapshots"]) for r in gens)
        fig, axes = plt.subplots(len(gens), ns, figsize=(3.0 * ns, 3.1 * len(gens)),
                                 squeeze=False)
        for i, r in enumerate(gens):
            q, j = r["result"], r["job"]
            z = np.asarray(q["reference_points"])
            for k, sn in enumerate(q["snapshots"]):
                ax = axes[i, k]
                p = np.asarray(sn["points"])
                ax.scatter(p[:, 0], p[:, 1], s=1, alpha=0.4, color="tab:blue")
                ax.scatter(z[:, 0], z[:, 1], s=1, alpha=0.2, color="tab:orange")
                ax.set_xlim(-2, 2)
                ax.set_ylim(-2, 2)
                ax.set_aspect("equal")
                e = (f"eps_X={_fmt(sn.get('epsilon_X', 0.0))} eps_Z="
                     f"{_fmt(sn.get('epsilon_Z', 0.0))}" if j["eps"] is not None else
                     "non-private")
                ax.set_title(f"{j['clipping']} step {sn['step']}\nSW2^2="
                             f"{_fmt(sn['SW2sq_to_reference'])} {e}", fontsize=7)
                ax.tick_params(labelsize=6)
            for k in range(len(q["snapshots"]), ns):
                axes[i, k].axis("off")
        fig.suptitle("App. C: g(X) (blue) matched to the private circle Z (orange)",
                     fontsize=9)
        fig.tight_layout()
        path = outdir / f"learning_paper_generation{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path.name)
    return written


def _slim(cell: dict) -> dict:
    """Replicates keep their numbers, not the arrays behind the figures (replicate 0)."""
    if not cell["job"].get("replicate"):
        return cell
    res = dict(cell["result"])
    for k in ("hist_train", "hist_bins", "scatter", "reference_points"):
        res.pop(k, None)
    if "curve" in res:
        res["curve"] = {k: v for k, v in res["curve"].items() if k != "loss"}
    if "snapshots" in res:
        res["snapshots"] = [{k: v for k, v in sn.items() if k != "points"}
                            for sn in res["snapshots"]]
    return {**cell, "result": res}


def write_json(res: dict, path: Path) -> None:
    """Indented JSON, one line per cell (the cells hold the long arrays)."""
    res = _finite({**res, "cells": [_slim(c) for c in res["cells"]]})
    head = json.dumps({**res, "cells": "@CELLS@"}, indent=1, allow_nan=False)
    cells = ",\n".join("  " + json.dumps(c, allow_nan=False, separators=(",", ":"))
                        for c in res["cells"])
    path.write_text(head.replace('"@CELLS@"', "[\n" + cells + "\n ]") + "\n")


def replot(cfg: dict, outdir: Path, suffix: str) -> list:
    """Figures (and the summary) again from the JSON of the last run."""
    path = outdir / f"learning_paper{suffix}.json"
    res = json.loads(path.read_text())
    results = [{"job": {**c["job"], "eps": c["job"]["eps"]}, "result": c["result"],
                "seconds": c["seconds"]} for c in res["cells"]]
    res["summary"] = summary(results, cfg)
    write_json(res, path)
    return plot(results, cfg, outdir, suffix)


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run (*_quick.*)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--replot", action="store_true",
                        help="redo the figures and the summary from the last JSON")
    args = parser.parse_args()
    cfg = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    outdir = args.out_dir
    outdir.mkdir(parents=True, exist_ok=True)
    if args.replot:
        print(replot(cfg, outdir, suffix))
        return {}
    start = time.perf_counter()
    load0 = os.getloadavg()
    jobs = sorted(make_jobs(cfg), key=lambda j: -_cost(j, cfg))
    results = []
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        keys = sorted({_calib_key(j, cfg) for j in jobs if j["eps"] is not None})
        calibrations = list(pool.map(calibrate, keys))
        by_key = {tuple(c["key"]): c for c in calibrations}
        for j in jobs:
            if j["eps"] is not None:
                c = by_key[_calib_key(j, cfg)]
                j.update(calib_key=list(c["key"]), sigma=c["sigma_pld"],
                         sigma_gdp_clt=c["sigma_gdp_clt"])
        print(f"[{time.perf_counter() - start:6.0f} s] {len(keys)} calibrations", flush=True)
        futs = {pool.submit(run_job, j, cfg): j for j in jobs}
        for fut in as_completed(futs):
            r = fut.result()
            results.append(r)
            print(f"[{time.perf_counter() - start:6.0f} s] {_label(r['job'])}: "
                  f"{r['seconds']:.1f} s", flush=True)
    results.sort(key=lambda r: r["job"]["index"])
    seconds_by_part: dict = {}
    for r in results:
        k = r["job"]["kind"]
        seconds_by_part[k] = seconds_by_part.get(k, 0.0) + r["seconds"]
    res = {
        "what": "paper 004 (Rodriguez-Vitores, Lalanne, Loubes), Sec. 7 / App. B / App. C "
                "with privot.learning.make_private; seeded, not a publishable run",
        "params": {k: (v if not isinstance(v, tuple) else list(v)) for k, v in cfg.items()},
        "seed": SEED, "quick": args.quick, "jobs": args.jobs,
        "eps_inf": "the same code path (trainer.private_gradient: same batches, clipping) "
                   "without the noise; 'plain' cells: unclipped autograd, same batches",
        "calibrations": calibrations,
        "cells": [{"label": _label(r["job"]), **r} for r in results],
        "seconds_total": None,
        "cpu_seconds_by_part": seconds_by_part,
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "cpus": os.cpu_count(),
                    "loadavg_start": load0, "loadavg_end": os.getloadavg()},
        "git": git_state(),
    }
    import torch

    res["machine"]["torch"] = torch.__version__
    res["summary"] = summary(results, cfg)
    res["seconds_total"] = time.perf_counter() - start
    write_json(res, outdir / f"learning_paper{suffix}.json")
    written = plot(results, cfg, outdir, suffix)
    print(json.dumps(_finite(res["summary"]["claims"]), indent=1))
    print(f"{res['seconds_total']:.1f} s -> {outdir} ({', '.join(written)})")
    return res


if __name__ == "__main__":
    main()
