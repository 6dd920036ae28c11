"""The learning capability's stated error on real data (issue 28): UCI Adult, sex.

What is checked: the :class:`~privot.error_bounds.ErrorStatement` that
``privot.learning.make_private`` attaches as ``trainer.error`` (stated from the public
parameters before anything is spent; ``src/privot/learning/error.py``, derivation
``docs/errors/learning.md``) against what the curator observes while training:

* **the noise-norm bound** (``bound`` at ``confidence`` 0.99): the L2 norm of the
  discrete Gaussian vector ``N`` privot adds to every step's clipped batch gradient,
  observed at every training step (``N`` = the noisy gradient minus the clipped gradient
  rounded to the release grid ``2^-k Z``), and on 10,000 further seeded draws of the same
  noise path (``trainer.noisy`` on a zero gradient). Exceedances / draws with a one-sided
  binomial test of ``H0: P(||N|| > bound) <= 1 - confidence`` (p-value ``P(Bin(n, 0.01)
  >= exceedances)``), and bound / median observed norm (informativeness);
* **the data-dependent part**, measured by the curator: the norm of the clipped batch
  gradient ``g`` at each step against the public signal bound ``G``
  (``details.signal_bound``), hence the observed noise-to-signal ratio
  ``sqrt(P) s / ||g||`` (and the realised ``||N|| / ||g||``) against the stated lower
  bound ``sqrt(P) s / G`` (``details.noise_to_signal_at_least``); and the clipping's
  activity: the fraction of per-example ERM gradients clipped to ``C`` (the trainer's
  ``StepRecord.clipped_fraction``), of per-example score Jacobians clipped to ``L``
  and of scores projected onto the ball of radius ``M`` (read by wrapping the trainer's
  module-level ``jacobian_clip_matrices`` / ``project_to_ball`` in this process: they
  return the same values, only record).

How it is observed: the trainer's ``noisy`` is wrapped on the instance (it receives the
flat clipped gradient and returns it with the noise added; the wrapper records both and
returns the same array), so the run, its random stream and its release are unchanged.

Setup: ``privot.datasets.load_adult_fairness`` train split (32,561 rows, 86 features in
[0, 1] from k = 11 columns; sex only as the sensitive attribute: 10,771 / 21,790), SP
penalty, alpha = 0.5, epsilon in {1, 3}, delta = 1/n^2, ``privot learn``'s defaults
(``default_hyperparameters(11)``: C = sqrt(12)/4, M = 1/4 on the centred score,
L = sqrt(12)/8, SGD momentum 0.9, lr 2 decaying linearly, 300 steps, batch fraction 0.2);
models: logistic regression (P = 87, 10 seeded runs per epsilon) and the MLP 86-64-64-1
(P = 9,793, 5 seeded runs per epsilon: 1,500 observed steps; fewer for time); 300 steps
each (seeded numpy generator for batches and noise: **not secure, not for publication**).
The test split gives each run's error and demographic-parity difference (context only).

Writes ``benchmarks/results/error_learning.json`` and ``error_learning.png`` (per step,
seed 0: noise norm with the bound, signal norm with ``G``, the ratio with its stated lower
bound); ``--quick`` (one seed, epsilon 1, 100 steps, 1,000 extra draws) writes
``results/quick/error_learning.*``. Run:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_error_learning.py`` (about 3 min on 2
shared cores under a load of 4, one torch thread; ``--quick`` about 15 s).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from _common import git_state, mlp  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
N_COLUMNS = 11  # Adult's feature columns before one-hot: 5 numeric + 6 categorical
ALPHA = 0.5
SEEDS = {"logistic": 10, "mlp": 5}  # the MLP's step is ~5x slower
EXTRA_DRAWS = 10_000
FULL = {"eps": [1.0, 3.0], "seeds": SEEDS, "steps": None, "extra_draws": EXTRA_DRAWS}
QUICK = {"eps": [1.0], "seeds": {"logistic": 1, "mlp": 1}, "steps": 100,
         "extra_draws": 1_000}
MODELS = {"logistic": [86], "mlp": [86, 64, 64]}


def _build(kind: str, seed: int):
    import torch

    if kind == "logistic":
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(86, 1), torch.nn.Sigmoid())
    return mlp(MODELS[kind], seed)


class _Probe:
    """Records what the trainer computes, returning every value unchanged."""

    def __init__(self) -> None:
        self.jac_clipped: list[float] = []
        self.projected: list[float] = []

    def install(self):
        import torch

        import privot.learning.private as pv

        orig_jac, orig_ball = pv.jacobian_clip_matrices, pv.project_to_ball
        probe = self

        def jac(grams, bound, *, mode="spectral"):
            g = grams.to(torch.float64)
            if mode == "spectral":
                top = torch.linalg.eigvalsh(0.5 * (g + g.transpose(1, 2)))[:, -1]
                hit = torch.sqrt(top.clamp_min(0.0)) > bound
            else:
                row = torch.sqrt(torch.diagonal(g, dim1=1, dim2=2).clamp_min(0.0))
                hit = (row > bound / math.sqrt(g.shape[-1])).any(1)
            probe.jac_clipped.append(float(hit.double().mean()))
            return orig_jac(grams, bound, mode=mode)

        def ball(pts, radius):
            probe.projected.append(float((pts.reshape(len(pts), -1).norm(dim=1)
                                          > radius).double().mean()))
            return orig_ball(pts, radius)

        pv.jacobian_clip_matrices, pv.project_to_ball = jac, ball
        return lambda: (setattr(pv, "jacobian_clip_matrices", orig_jac),
                        setattr(pv, "project_to_ball", orig_ball))


def _one_run(data: dict, kind: str, eps: float, seed: int, steps: int | None) -> dict:
    """One seeded private run; every step's noise and clipped gradient observed."""
    import torch

    from privot.learning import make_private
    from privot.learning.defaults import default_hyperparameters
    from privot.learning.metrics import demographic_parity_difference

    x, y, s = data["train"]
    n = len(y)
    sizes = [int(np.sum(s == v)) for v in (0, 1)]
    d = default_hyperparameters(N_COLUMNS, group_sizes=sizes, epsilon=eps, delta=1.0 / n**2)
    options = d.options()
    if steps is not None:
        options["steps"] = steps
    model = _build(kind, seed)
    opt, sched = d.optimizer_for(model)
    probe = _Probe()
    t0 = time.perf_counter()
    trainer = make_private(model, opt, (x, y, s), penalty="sp", alpha=ALPHA,
                           target_epsilon=eps, target_delta=1.0 / n**2,
                           rng=np.random.default_rng(1000 + seed), **options)
    st = trainer.error
    k = trainer.grid_exponent
    noise_norms, grad_norms, rounding = [], [], []
    orig_noisy = trainer.noisy

    def noisy(values, *, rng=None):
        out = orig_noisy(values, rng=rng)
        v = np.asarray(values, dtype=np.float64)
        on_grid = np.ldexp(np.rint(np.ldexp(v, k)), -k)
        noise_norms.append(float(np.linalg.norm(np.asarray(out) - on_grid)))
        grad_norms.append(float(np.linalg.norm(v)))
        rounding.append(float(np.linalg.norm(on_grid - v)))
        return out

    trainer.noisy = noisy  # instance attribute: _add_noise calls self.noisy
    restore = probe.install()
    try:
        t1 = time.perf_counter()
        records = trainer.train(progress=False, callback=lambda rec: sched.step())
        t2 = time.perf_counter()
    finally:
        restore()
        del trainer.noisy
    xt, yt, st_ = data["test"]
    with torch.no_grad():
        p = model(torch.as_tensor(xt)).reshape(-1).numpy()
    yp = (p > 0.5).astype(np.int64)
    det = st.details
    P = det["n_parameters"]
    rms = det["rms_noise_norm"]
    g = np.asarray(grad_norms)
    return {
        "model": kind, "eps": eps, "seed": seed, "steps": trainer.steps,
        "epsilon_run": trainer.epsilon, "delta": trainer.delta, "n_parameters": P,
        "batch_sizes": list(trainer.batch_sizes), "hyperparameters": d.as_config(),
        "statement": st.to_dict(),
        "noise_norms": noise_norms, "grad_norms": grad_norms,
        "rounding_norm_max": float(np.max(rounding)),
        "ratio_rms": (rms / g).tolist(),
        "ratio_realised": (np.asarray(noise_norms) / g).tolist(),
        "erm_clipped_fraction": [r.clipped_fraction for r in records],
        "jacobian_clipped_fraction": probe.jac_clipped,
        "score_projected_fraction": probe.projected,
        "penalty": [r.penalty for r in records], "erm": [r.erm for r in records],
        "test_error": float(np.mean(yp != yt)),
        "test_dp_difference": float(demographic_parity_difference(
            yt, yp, sensitive_features=st_)),
        "seconds_make_private": t1 - t0, "seconds_train": t2 - t1,
        "_trainer": trainer,
    }


def _binomial(exceed: int, draws: int, rate: float) -> dict:
    """One-sided test of H0: P(norm > bound) <= rate; p = P(Bin(draws, rate) >= exceed)."""
    return {"exceedances": int(exceed), "draws": int(draws), "rate_stated": rate,
            "rate_observed": exceed / draws,
            "p_value": float(stats.binom.sf(exceed - 1, draws, rate)),
            "expected_under_stated_rate": draws * rate}


def _q(a) -> dict:
    a = np.asarray(a, dtype=float)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()),
            "q05": float(np.quantile(a, 0.05)), "q95": float(np.quantile(a, 0.95)),
            "mean": float(a.mean())}


def summarise(runs: list[dict], extra_draws: int) -> dict:
    """Per (model, eps): coverage over all steps of all seeds and over the extra draws;
    the signal and the ratios against their public bounds."""
    out = {}
    for key in sorted({(r["model"], r["eps"]) for r in runs}):
        rs = [r for r in runs if (r["model"], r["eps"]) == key]
        st = rs[0]["statement"]
        assert all(r["statement"] == st for r in rs)  # public: the same for every seed
        det = st["details"]
        bound, conf = st["bound"], st["confidence"]
        steps_noise = np.concatenate([r["noise_norms"] for r in rs])
        # further seeded draws of the same noise path, on a zero gradient
        trainer = rs[0]["_trainer"]
        rng = np.random.default_rng(2028)
        extra = np.concatenate([  # chunks of 500 draws (memory: P = 9,793 for the MLP)
            np.linalg.norm(trainer.noisy(np.zeros((min(500, extra_draws - i),
                                                    det["n_parameters"])), rng=rng), axis=1)
            for i in range(0, extra_draws, 500)])
        g = np.concatenate([r["grad_norms"] for r in rs])
        G = det["signal_bound"]
        jac = np.concatenate([r["jacobian_clipped_fraction"] for r in rs])
        out[f"{key[0]} eps={key[1]:g}"] = {
            "model": key[0], "eps": key[1], "seeds": len(rs), "steps_per_run": rs[0]["steps"],
            "n_parameters": det["n_parameters"], "noise_std": det["noise_std"],
            "noise_multiplier": det["noise_multiplier"],
            "noise_norm_bound": bound, "confidence": conf,
            "rms_noise_norm_stated": det["rms_noise_norm"],
            "coverage_training_steps": _binomial(int(np.sum(steps_noise > bound)),
                                                 steps_noise.size, 1 - conf),
            "coverage_extra_draws": _binomial(int(np.sum(extra > bound)), extra.size,
                                              1 - conf),
            "noise_norm_training_steps": _q(steps_noise),
            "noise_norm_extra_draws": _q(extra),
            "rms_noise_norm_observed": float(np.sqrt(np.mean(steps_noise ** 2))),
            "bound_over_median_noise_norm": bound / float(np.median(steps_noise)),
            "bound_over_median_noise_norm_extra": bound / float(np.median(extra)),
            "signal_bound_G": G, "signal_bound_loss": det["signal_bound_loss"],
            "signal_bound_penalty": det["signal_bound_penalty"],
            "grad_norm": _q(g), "grad_norm_over_G": _q(g / G),
            "grad_norm_exceeds_G": int(np.sum(g > G * (1 + 1e-9))),
            "noise_to_signal_stated_lower_bound": det["noise_to_signal_at_least"],
            "noise_to_signal_rms_observed": _q(det["rms_noise_norm"] / g),
            "noise_to_signal_realised": _q(steps_noise / g),
            "noise_to_signal_below_stated": int(np.sum(
                det["rms_noise_norm"] / g < det["noise_to_signal_at_least"] * (1 - 1e-9))),
            "erm_clipped_fraction": _q(np.concatenate(
                [r["erm_clipped_fraction"] for r in rs])),
            "jacobian_clipped_fraction": _q(jac),
            "score_projected_fraction": _q(np.concatenate(
                [r["score_projected_fraction"] for r in rs])),
            "rounding_norm_max": max(r["rounding_norm_max"] for r in rs),
            "rounding_error_bound": det["rounding_error_bound"],
            "test_error": _q([r["test_error"] for r in rs]),
            "test_dp_difference": _q([r["test_dp_difference"] for r in rs]),
            "epsilon_run": rs[0]["epsilon_run"], "delta": rs[0]["delta"],
            "batch_sizes": rs[0]["batch_sizes"],
        }
    return out


def plot(runs: list[dict], summary: dict, path: Path) -> None:
    """Per model (rows): noise norm with its bound, signal norm with G, the ratio with its
    stated lower bound, per step of seed 0, one colour per epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r["model"] for r in runs})
    fig, axes = plt.subplots(len(models), 3, figsize=(14, 3.6 * len(models)), squeeze=False)
    colours = {1.0: "tab:blue", 3.0: "tab:orange"}
    for i, kind in enumerate(models):
        for r in runs:
            if r["model"] != kind or r["seed"] != 0:
                continue
            c = colours.get(r["eps"], "tab:green")
            s = summary[f"{kind} eps={r['eps']:g}"]
            t = np.arange(1, len(r["noise_norms"]) + 1)
            lab = f"eps={r['eps']:g}"
            ax = axes[i, 0]
            ax.plot(t, r["noise_norms"], ".", ms=2, color=c, label=f"{lab}: ||N|| per step")
            ax.axhline(s["noise_norm_bound"], color=c, ls="--", lw=1,
                       label=f"{lab}: stated bound (0.99)")
            ax = axes[i, 1]
            ax.plot(t, r["grad_norms"], "-", lw=1, color=c, label=f"{lab}: ||g||")
            ax = axes[i, 2]
            ax.plot(t, r["ratio_rms"], "-", lw=1, color=c,
                    label=f"{lab}: sqrt(P)s/||g|| observed")
            ax.axhline(s["noise_to_signal_stated_lower_bound"], color=c, ls="--", lw=1,
                       label=f"{lab}: stated lower bound sqrt(P)s/G")
        G = next(v["signal_bound_G"] for v in summary.values() if v["model"] == kind)
        axes[i, 1].axhline(G, color="k", ls="--", lw=1, label="G (public signal bound)")
        P = next(v["n_parameters"] for v in summary.values() if v["model"] == kind)
        axes[i, 0].set_title(f"{kind} (P = {P}): noise norm per step")
        axes[i, 1].set_title(f"{kind}: clipped batch gradient norm (curator)")
        axes[i, 2].set_title(f"{kind}: noise-to-signal ratio")
        for j in range(3):
            axes[i, j].set_yscale("log")
            axes[i, j].set_xlabel("step")
            axes[i, j].legend(fontsize=7)
    fig.suptitle("UCI Adult (sex), SP alpha = 0.5, privot learn defaults, delta = 1/n^2, "
                 "seed 0 (seeded, not for publication)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, eps 1, 100 steps")
    args = ap.parse_args()
    cfg = QUICK if args.quick else FULL
    import torch

    from privot.datasets import load_adult_fairness

    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    warnings.filterwarnings("ignore", message="the fairness penalty's term")
    torch.set_num_threads(1)
    t_start = time.perf_counter()
    load_start = list(os.getloadavg())
    tr = load_adult_fairness(split="train")
    te = load_adult_fairness(split="test")
    data = {"train": (tr.x, tr.y, tr.sensitive), "test": (te.x, te.y, te.sensitive)}
    runs = []
    for kind in MODELS:
        for eps in cfg["eps"]:
            for seed in range(cfg["seeds"][kind]):
                r = _one_run(data, kind, eps, seed, cfg["steps"])
                runs.append(r)
                print(f"{kind} eps={eps:g} seed={seed}: {r['seconds_train']:.1f} s, "
                      f"max ||N|| {max(r['noise_norms']):.4g} (bound "
                      f"{r['statement']['bound']:.4g}), median ||g|| "
                      f"{np.median(r['grad_norms']):.4g} (G "
                      f"{r['statement']['details']['signal_bound']:.4g})", flush=True)
    summary = summarise(runs, cfg["extra_draws"])
    out_dir = RESULTS / ("quick" if args.quick else "")
    out_dir.mkdir(parents=True, exist_ok=True)
    keep = ("noise_norms", "grad_norms", "ratio_rms", "erm_clipped_fraction",
            "jacobian_clipped_fraction", "score_projected_fraction", "penalty")
    per_step = [{"model": r["model"], "eps": r["eps"], "seed": r["seed"],
                 **{k: r[k] for k in keep}} for r in runs if r["seed"] == 0]
    out = {
        "what": "learning error statement (issue 28) on UCI Adult: coverage of the stated "
                "noise-norm bound and the curator's measure of the data-dependent signal",
        "git": git_state(), "python": platform.python_version(),
        "torch": torch.__version__, "machine": platform.machine(), "torch_threads": 1,
        "quick": bool(args.quick), "config": cfg, "alpha": ALPHA, "penalty": "sp",
        "n_columns": N_COLUMNS, "n_train": len(tr.y), "n_test": len(te.y),
        "group_sizes": [int(np.sum(tr.sensitive == v)) for v in (0, 1)],
        "randomness": "seeded numpy generator for batches and noise: not secure, not for "
                      "publication",
        "observation": "trainer.noisy wrapped on the instance: N = noisy - round(g) on the "
                       "grid 2^-k Z; extra draws: trainer.noisy on zeros, seed 2028",
        "loadavg_start": [round(v, 2) for v in load_start],
        "summary": summary,
        "runs": [{k: v for k, v in r.items() if not k.startswith("_") and k not in keep
                  and k not in ("ratio_realised", "erm")} for r in runs],
        "per_step_seed0": per_step,
    }
    out["seconds_total"] = time.perf_counter() - t_start
    out["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    (out_dir / "error_learning.json").write_text(json.dumps(out, indent=1))
    plot(runs, summary, out_dir / "error_learning.png")
    for name, s in summary.items():
        c, e = s["coverage_training_steps"], s["coverage_extra_draws"]
        print(f"{name}: P={s['n_parameters']} s={s['noise_std']:.4g} bound "
              f"{s['noise_norm_bound']:.4g}; steps {c['exceedances']}/{c['draws']} above "
              f"(p={c['p_value']:.3g}), extra {e['exceedances']}/{e['draws']} "
              f"(p={e['p_value']:.3g}); bound/median {s['bound_over_median_noise_norm']:.3f}"
              f"; ||g|| median {s['grad_norm']['median']:.4g} [{s['grad_norm']['min']:.4g}, "
              f"{s['grad_norm']['max']:.4g}] vs G {s['signal_bound_G']:.4g}; ratio median "
              f"{s['noise_to_signal_rms_observed']['median']:.4g} vs stated >= "
              f"{s['noise_to_signal_stated_lower_bound']:.4g}; ERM clipped "
              f"{s['erm_clipped_fraction']['median']:.3f}, Jacobian clipped "
              f"{s['jacobian_clipped_fraction']['median']:.3f}, projected "
              f"{s['score_projected_fraction']['median']:.3f}; test error "
              f"{s['test_error']['median']:.4f}")
    print(f"total {out['seconds_total']:.0f} s")


if __name__ == "__main__":
    main()
