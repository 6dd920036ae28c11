"""Cost of a private Wasserstein-fairness step (privot.learning) against plain training,
against Opacus, and its memory at P = 10^6 parameters.

(a) **Private SP step vs the non-private step** (same process, alternating, median of
    ``REPS`` pairs after warm-up). Data: Adult (``load_adult_fairness``, 86 features),
    groups A = 0 / A = 1, ``batch_sizes`` 3000 + 3000; model: MLP 86 -> 64 -> 64 -> 1
    (ReLU, sigmoid output); ``alpha = 0.5``, ``clip = 1``, ``M = L = 1``. Private:
    ``PrivateWassersteinTrainer.step()`` (secure batch sampler, per-example Grams,
    clipping, one weighted backward pass, secure Gaussian noise, ``optimizer.step()``)
    for ``method`` in {ghost, functional} x ``jacobian_clipping`` in {spectral,
    per-coordinate}. Baseline: the same batch size drawn with ``torch.randperm`` (not
    secure), forward, ``(1 - alpha) BCE + alpha sliced_w2_squared`` (exact W2 in 1-D),
    ``backward()``, ``optimizer.step()``. Target ratio <= 3. A breakdown of the private
    step (sampler, Grams + forward, clipping and penalty weights, weighted backward,
    noise, optimiser) from the trainer's own pieces.

(b) **ERM only (alpha = 0) vs Opacus 1.6** at the same noise multiplier and batch size
    (6000 = the two groups' 3000; Opacus samples Poisson with that expected size, its
    ``DataLoader`` batch fetch timed apart): ``grad_sample_mode="hooks"`` and
    ``"ghost"`` (ghost clipping: ``make_private(..., criterion=BCELoss())`` returns a
    wrapped criterion whose ``backward`` does the two passes). Epsilons: privot's
    ``epsilon_for(..., sampling="poisson", accountant="rdp")`` against Opacus's
    ``RDPAccountant`` for the same (sigma, q, T, delta) -- same RDP orders -- asserted
    close; privot's fixed-size (replace-one) PLD epsilon, which is what the trainer
    reports, beside them, and Opacus's PRV accountant beside privot's Poisson PLD. Note:
    at the same sigma the noise is not the same: the replace-one sensitivity of the mean
    clipped gradient is ``2C/B`` (privot), add/remove ``C/B`` (Opacus).

(c) **Peak memory of one step at P = 1,002,801** (MLP 100 -> 1000 -> 900 -> 1, synthetic
    inputs, ``batch_sizes`` 3000 + 3000), each configuration in a fresh subprocess
    started before the parent imports torch: ``ru_maxrss`` after setup and after the
    first (cold) step, their difference; then the resident-set high-water mark is reset
    (``/proc/self/clear_refs``) and read after a second (warm) step (``VmHWM`` minus the
    RSS before it). Ghost vs functional (chunks of
    per-example Jacobians of at most ``FUNCTIONAL_CHUNK_BYTES``), and the non-private
    step.

One torch thread (``--threads``): on this 2-core machine, shared with other jobs,
torch's two-thread OpenMP regions were up to ~100x slower on small tensors when the
cores were busy; ratios are same-process, same-thread-count.

Writes ``benchmarks/results/learning_speed.json`` and ``learning_speed.png``
(``--quick``: ``learning_speed_quick.*``; ``--replot`` redraws the PNG from the JSON).
Run: ``python benchmarks/bench_learning_speed.py`` (about 2 min on 2 cores).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import git_state, mlp  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_601
ALPHA, CLIP, M_BOUND, L_BOUND = 0.5, 1.0, 1.0, 1.0
GROUP_BATCH = 3000
HIDDEN = (64, 64)
MEM_WIDTHS = (100, 1000, 900)
TARGET_RATIO = 3.0
ACCOUNTING = {"target_epsilon": 1.0, "steps": 300}

warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
warnings.filterwarnings("ignore", message="Optimal order is the")
warnings.filterwarnings("ignore", category=UserWarning, module="opacus")
warnings.filterwarnings("ignore", message="Full backward hook is firing")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def adult():
    from privot.datasets import load_adult_fairness

    d = load_adult_fairness(split="train")
    return d.x, d.y, d.sensitive


def make_trainer(model, x, y, s, *, alpha, method, jacobian_clipping, steps, sigma,
                 batch=GROUP_BATCH, lr=0.05):
    import torch

    from privot.learning import make_private

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    return make_private(model, opt, (x, y, s), penalty="sp", alpha=alpha,
                        noise_multiplier=sigma, target_delta=1.0 / len(y) ** 2,
                        steps=steps, batch_sizes=[batch, batch], clip=CLIP, M=M_BOUND,
                        L=L_BOUND, method=method, jacobian_clipping=jacobian_clipping,
                        rng=np.random.default_rng(SEED))


class NonPrivateStep:
    """forward, (1 - alpha) BCE + alpha SW2^2 between the groups, backward, SGD step."""

    def __init__(self, model, x, y, s, *, alpha, batch=GROUP_BATCH, lr=0.05):
        import torch

        self.torch = torch
        self.model, self.alpha, self.batch = model, alpha, batch
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)
        xt, yt = torch.as_tensor(x), torch.as_tensor(y).to(torch.get_default_dtype())
        self.groups = [(xt[torch.as_tensor(s == v)], yt[torch.as_tensor(s == v)])
                       for v in (0, 1)]
        self.gen = torch.Generator().manual_seed(SEED)

    def __call__(self):
        from privot.learning import sliced_w2_squared

        torch = self.torch
        xs, ys = [], []
        for gx, gy in self.groups:
            idx = torch.randperm(gx.shape[0], generator=self.gen)[:self.batch]
            xs.append(gx[idx])
            ys.append(gy[idx])
        x, y = torch.cat(xs), torch.cat(ys)
        self.opt.zero_grad(set_to_none=True)
        out = self.model(x)
        loss = (1 - self.alpha) * torch.nn.functional.binary_cross_entropy(out[:, 0], y)
        if self.alpha > 0:
            b = self.batch
            loss = loss + self.alpha * sliced_w2_squared(out[:b], out[b:])
        loss.backward()
        self.opt.step()


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def alternate(fns: dict, reps: int, warmup: int = 2) -> dict:
    """Median seconds of each callable, run in turn ``reps`` times after ``warmup``."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            times[k].append(_timed(f))
    return {k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v),
                "n": len(v)} for k, v in times.items()}


def breakdown(trainer, reps: int) -> dict:
    """Median seconds of the private step's pieces (the trainer's own functions)."""
    import torch

    from privot.learning.per_example import forward_with_grams, weighted_gradient

    params = [p for p in trainer.model.parameters() if p.requires_grad]
    parts = {k: [] for k in ("sample", "private_gradient", "grams_forward",
                             "weighted_backward", "noise", "optimizer")}
    for _ in range(reps):
        t = time.perf_counter()
        idx = trainer._batch()
        parts["sample"].append(time.perf_counter() - t)
        t = time.perf_counter()
        grads, _ = trainer.private_gradient(idx)
        parts["private_gradient"].append(time.perf_counter() - t)
        x = torch.cat([g.x[torch.as_tensor(i)] for g, i in zip(trainer.groups.groups, idx,
                                                               strict=True)])
        t = time.perf_counter()
        out, _, _ = forward_with_grams(trainer.model, x, method=trainer.method)
        parts["grams_forward"].append(time.perf_counter() - t)
        w = torch.randn_like(out.detach())
        t = time.perf_counter()
        weighted_gradient(out, w, params)
        parts["weighted_backward"].append(time.perf_counter() - t)
        t = time.perf_counter()
        noisy = trainer._add_noise(grads)
        parts["noise"].append(time.perf_counter() - t)
        for p, g in zip(params, noisy, strict=True):
            p.grad = g
        t = time.perf_counter()
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
        parts["optimizer"].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in parts.items()}
    med["clipping_and_penalty_weights"] = max(0.0, med["private_gradient"]
                                              - med["grams_forward"]
                                              - med["weighted_backward"])
    return med


# ----------------------------------------------------------------------------- (a)

def section_a(x, y, s, reps: int) -> dict:
    out = {"alpha": ALPHA, "batch_sizes": [GROUP_BATCH, GROUP_BATCH], "model":
           f"MLP {x.shape[1]} -> {HIDDEN[0]} -> {HIDDEN[1]} -> 1, ReLU, sigmoid",
           "clip": CLIP, "M": M_BOUND, "L": L_BOUND, "configs": []}
    n_params = None
    for method in ("ghost", "functional"):
        for jc in ("spectral", "per-coordinate"):
            model_p = mlp((x.shape[1], *HIDDEN), 0)
            model_b = mlp((x.shape[1], *HIDDEN), 0)
            n_params = sum(p.numel() for p in model_p.parameters())
            trainer = make_trainer(model_p, x, y, s, alpha=ALPHA, method=method,
                                   jacobian_clipping=jc, steps=10 * reps + 100, sigma=2.0)
            base = NonPrivateStep(model_b, x, y, s, alpha=ALPHA)
            before = _load()
            res = alternate({"private": trainer.step, "nonprivate": base}, reps)
            ratio = res["private"]["median_s"] / res["nonprivate"]["median_s"]
            row = {"method": method, "jacobian_clipping": jc, **res, "ratio": ratio,
                   "meets_target": ratio <= TARGET_RATIO, "loadavg_before": before,
                   "loadavg_after": _load(),
                   "breakdown_s": breakdown(trainer, max(3, reps // 2))}
            print(f"(a) {method:10s} {jc:14s} private {1e3 * res['private']['median_s']:.1f}"
                  f" ms, non-private {1e3 * res['nonprivate']['median_s']:.1f} ms, ratio "
                  f"{ratio:.2f}", flush=True)
            out["configs"].append(row)
    out["n_params"] = n_params
    return out


# ----------------------------------------------------------------------------- (b)

def section_b(x, y, s, reps: int) -> dict:
    import torch
    from opacus import PrivacyEngine

    n = len(y)
    batch = 2 * GROUP_BATCH
    # sigma of a privot run at the accounting target (fixed-size PLD, replace-one)
    from privot.privacy.accounting import calibrate_noise_multiplier

    q_privot = max(GROUP_BATCH / int((s == v).sum()) for v in (0, 1))
    delta = 1.0 / n ** 2
    cal = calibrate_noise_multiplier(ACCOUNTING["target_epsilon"], delta,
                                     steps=ACCOUNTING["steps"], sampling_rate=q_privot,
                                     accountant="pld", sampling="fixed-size")
    sigma = cal.noise_multiplier
    out: dict = {"batch_size": batch, "noise_multiplier": sigma, "clip": CLIP,
                 "note": "same sigma; privot's ERM sensitivity is 2C/B (replace-one), "
                         "Opacus's C/B (add/remove): privot's noise std is twice Opacus's"}

    # -- timings
    xt = torch.as_tensor(x)
    yt = torch.as_tensor(y).to(torch.get_default_dtype())
    ds = torch.utils.data.TensorDataset(xt, yt)
    runners, loaders = {}, {}

    trainer = make_trainer(mlp((x.shape[1], *HIDDEN), 0), x, y, s, alpha=0.0,
                           method="ghost", jacobian_clipping="spectral",
                           steps=10 * reps + 100, sigma=sigma)
    runners["privot ghost (alpha=0)"] = trainer.step
    trainer_f = make_trainer(mlp((x.shape[1], *HIDDEN), 0), x, y, s, alpha=0.0,
                             method="functional", jacobian_clipping="spectral",
                             steps=10 * reps + 100, sigma=sigma)
    runners["privot functional (alpha=0)"] = trainer_f.step
    base = NonPrivateStep(mlp((x.shape[1], *HIDDEN), 0), x, y, s, alpha=0.0)
    runners["non-private"] = base

    for mode in ("hooks", "ghost"):
        model = mlp((x.shape[1], *HIDDEN), 0)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        dl = torch.utils.data.DataLoader(ds, batch_size=batch)
        engine = PrivacyEngine(accountant="rdp")
        gen = torch.Generator().manual_seed(SEED)
        if mode == "hooks":
            gm, dopt, dl2 = engine.make_private(module=model, optimizer=opt, data_loader=dl,
                                                noise_multiplier=sigma, max_grad_norm=CLIP,
                                                poisson_sampling=True, noise_generator=gen,
                                                grad_sample_mode="hooks")
            crit = torch.nn.BCELoss()
        else:
            gm, dopt, crit, dl2 = engine.make_private(module=model, optimizer=opt,
                                                      data_loader=dl,
                                                      criterion=torch.nn.BCELoss(),
                                                      noise_multiplier=sigma,
                                                      max_grad_norm=CLIP,
                                                      poisson_sampling=True,
                                                      noise_generator=gen,
                                                      grad_sample_mode="ghost")
        state = {"it": iter(dl2)}

        def fetch(state=state, dl2=dl2):
            try:
                return next(state["it"])
            except StopIteration:
                state["it"] = iter(dl2)
                return next(state["it"])

        batches = [fetch() for _ in range(reps + 2)]
        cursor = {"i": 0}

        def step(gm=gm, dopt=dopt, crit=crit, batches=batches, cursor=cursor):
            xb, yb = batches[cursor["i"] % len(batches)]
            cursor["i"] += 1
            dopt.zero_grad(set_to_none=True)
            loss = crit(gm(xb)[:, 0], yb)
            loss.backward()
            dopt.step()

        runners[f"opacus {mode}"] = step
        loaders[f"opacus {mode}"] = fetch
        out[f"opacus_{mode}_sample_rate"] = 1.0 / len(dl2)
    before = _load()
    res = alternate(runners, reps)
    loader_t = {k: statistics.median(_timed(f) for _ in range(max(3, reps // 2)))
                for k, f in loaders.items()}
    out["timings"] = res
    out["opacus_dataloader_fetch_median_s"] = loader_t
    out["loadavg"] = [before, _load()]
    ref = res["non-private"]["median_s"]
    out["ratio_to_nonprivate"] = {k: v["median_s"] / ref for k, v in res.items()}
    for k, v in res.items():
        print(f"(b) {k:28s} {1e3 * v['median_s']:.1f} ms  ({v['median_s'] / ref:.2f}x)",
              flush=True)
    print("(b) opacus DataLoader fetch: " + ", ".join(f"{k} {1e3 * v:.1f} ms"
                                                     for k, v in loader_t.items()))

    # -- epsilons
    out["accounting"] = accounting(sigma, q_privot, ACCOUNTING["steps"], delta,
                                   q_opacus=out["opacus_hooks_sample_rate"])
    return out


def accounting(sigma: float, q: float, steps: int, delta: float, q_opacus: float) -> dict:
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
    from opacus.accountants import PRVAccountant, RDPAccountant

    from privot.privacy.accounting import epsilon_for

    def opacus_eps(cls, q_, **kw):
        acct = cls()
        acct.history = [(sigma, q_, steps)]
        return float(acct.get_epsilon(delta=delta, **kw))

    orders = [float(a) for a in DEFAULT_RDP_ORDERS]
    rows = {}
    for label, qq in (("q_privot", q), ("q_opacus_loader", q_opacus)):
        p_rdp = epsilon_for(noise_multiplier=sigma, sampling_rate=qq, steps=steps,
                            delta=delta, accountant="rdp", sampling="poisson")
        o_rdp_same = opacus_eps(RDPAccountant, qq, alphas=orders)
        o_rdp_default = opacus_eps(RDPAccountant, qq)
        p_pld_poisson = epsilon_for(noise_multiplier=sigma, sampling_rate=qq, steps=steps,
                                    delta=delta, accountant="pld", sampling="poisson")
        o_prv = opacus_eps(PRVAccountant, qq)
        p_fixed_pld = epsilon_for(noise_multiplier=sigma, sampling_rate=qq, steps=steps,
                                  delta=delta, accountant="pld", sampling="fixed-size")
        p_fixed_rdp = epsilon_for(noise_multiplier=sigma, sampling_rate=qq, steps=steps,
                                  delta=delta, accountant="rdp", sampling="fixed-size")
        close = abs(p_rdp - o_rdp_same) <= 1e-6 * max(1.0, p_rdp)
        assert close, (p_rdp, o_rdp_same)
        rows[label] = {
            "sampling_rate": qq,
            "privot_poisson_rdp": p_rdp, "opacus_rdp_same_orders": o_rdp_same,
            "opacus_rdp_default_alphas": o_rdp_default, "rdp_agree": close,
            "privot_poisson_pld": p_pld_poisson, "opacus_prv": o_prv,
            "privot_fixed_size_pld (trainer's)": p_fixed_pld,
            "privot_fixed_size_rdp": p_fixed_rdp}
        print(f"(b) eps at q={qq:.4f}: privot poisson RDP {p_rdp:.5f} = opacus RDP "
              f"{o_rdp_same:.5f} (default alphas {o_rdp_default:.5f}); poisson PLD "
              f"{p_pld_poisson:.4f}, opacus PRV {o_prv:.4f}; privot fixed-size PLD "
              f"{p_fixed_pld:.4f}, fixed-size RDP {p_fixed_rdp:.4f}", flush=True)
    return {"noise_multiplier": sigma, "steps": steps, "delta": delta, **rows}


# ----------------------------------------------------------------------------- (c)

def _status_kb(key: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def memory_child(kind: str, batch: int, threads: int) -> None:
    """Run in a subprocess: print one JSON line with the step's peak memory."""
    import torch

    torch.set_num_threads(threads)
    gen = np.random.default_rng(SEED)
    n = 4 * batch
    x = gen.random((n, MEM_WIDTHS[0]), dtype=np.float32)
    y = gen.integers(0, 2, n)
    s = np.repeat([0, 1], n // 2)
    model = mlp(MEM_WIDTHS, 0)
    n_params = sum(p.numel() for p in model.parameters())
    if kind == "nonprivate":
        step = NonPrivateStep(model, x, y, s, alpha=ALPHA, batch=batch)
    else:
        step = make_trainer(model, x, y, s, alpha=ALPHA, method=kind,
                            jacobian_clipping="spectral", steps=10, sigma=2.0,
                            batch=batch).step
    maxrss_setup = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_setup = _status_kb("VmRSS")
    t = time.perf_counter()
    step()  # cold step (allocator pools, lazy inits)
    cold = time.perf_counter() - t
    maxrss_cold = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_before = _status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # reset VmHWM to the current RSS
        fh.write("5")
    t = time.perf_counter()
    step()
    secs = time.perf_counter() - t
    hwm = _status_kb("VmHWM")
    print(json.dumps({"kind": kind, "n_params": n_params, "batch_sizes": [batch, batch],
                      "rss_setup_mib": rss_setup / 1024,
                      "ru_maxrss_setup_mib": maxrss_setup / 1024,
                      "ru_maxrss_after_cold_step_mib": maxrss_cold / 1024,
                      "cold_step_extra_mib": (maxrss_cold - maxrss_setup) / 1024,
                      "rss_before_mib": rss_before / 1024,
                      "step_peak_rss_mib": hwm / 1024,
                      "step_extra_mib": (hwm - rss_before) / 1024,
                      "seconds_step": secs, "seconds_cold_step": cold}))


def section_c(batch: int, threads: int) -> dict:
    from privot.learning.per_example import FUNCTIONAL_CHUNK_BYTES

    rows = []
    for kind in ("nonprivate", "ghost", "functional"):
        proc = subprocess.run([sys.executable, __file__, "--memory-child", kind,
                               "--mem-batch", str(batch), "--threads", str(threads)],
                              capture_output=True, text=True, check=True)
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"(c) {kind:10s} P={row['n_params']:,}  warm step extra "
              f"{row['step_extra_mib']:.0f} MiB (VmHWM {row['step_peak_rss_mib']:.0f} MiB), "
              f"cold step ru_maxrss delta {row['cold_step_extra_mib']:.0f} MiB (setup "
              f"{row['ru_maxrss_setup_mib']:.0f} MiB), {row['seconds_step']:.2f} s",
              flush=True)
    return {"model": "MLP " + " -> ".join(map(str, MEM_WIDTHS)) + " -> 1",
            "functional_chunk_bytes": FUNCTIONAL_CHUNK_BYTES, "configs": rows}


# ----------------------------------------------------------------------------- main

def plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    a = out["a"]["configs"]
    labels = [f"{c['method']}\n{c['jacobian_clipping']}" for c in a]
    axes[0].tick_params(axis="x", labelsize=7)
    keys = ["sample", "grams_forward", "clipping_and_penalty_weights", "weighted_backward",
            "noise", "optimizer"]
    bottom = np.zeros(len(a))
    for k in keys:
        vals = np.array([1e3 * c["breakdown_s"][k] for c in a])
        axes[0].bar(labels, vals, bottom=bottom, label=k)
        bottom += vals
    ref = np.median([1e3 * c["nonprivate"]["median_s"] for c in a])
    axes[0].axhline(ref, color="k", ls="--", lw=1, label="non-private step")
    axes[0].axhline(TARGET_RATIO * ref, color="r", ls=":", lw=1, label="3x non-private")
    axes[0].set_ylabel("ms per step (median)")
    axes[0].set_title(f"(a) private SP step, alpha={ALPHA}, 2 x {GROUP_BATCH} rows")
    axes[0].legend(fontsize=7)
    b = out["b"]["timings"]
    names = list(b)
    axes[1].barh(names, [1e3 * b[k]["median_s"] for k in names], color="tab:gray")
    axes[1].set_xlabel("ms per step (median)")
    axes[1].set_title("(b) ERM only (alpha = 0), batch 6000")
    c = out["c"]["configs"]
    axes[2].bar([r["kind"] for r in c], [r["step_extra_mib"] for r in c],
                color=["tab:gray", "tab:blue", "tab:orange"][:len(c)])
    axes[2].set_ylabel("MiB above the RSS before the step (peak)")
    axes[2].set_title(f"(c) one step, P = {c[0]['n_params']:,}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--replot", action="store_true", help="redraw the PNG from the JSON")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--mem-batch", type=int, default=None)
    args = parser.parse_args()
    mem_batch = args.mem_batch or (200 if args.quick else GROUP_BATCH)
    if args.memory_child:
        memory_child(args.memory_child, mem_batch, args.threads)
        return
    if args.replot:
        name = "learning_speed" + ("_quick" if args.quick else "")
        plot(json.loads((RESULTS / f"{name}.json").read_text()), RESULTS / f"{name}.png")
        return
    reps = 4 if args.quick else 15
    suffix = "_quick" if args.quick else ""
    t0 = time.perf_counter()
    # (c) first: the children's ru_maxrss starts from this (still small) process's
    # high-water mark, which Linux carries across fork + exec.
    parent_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mem = section_c(mem_batch, args.threads)
    mem["parent_ru_maxrss_mib_at_spawn"] = parent_maxrss
    import torch

    torch.set_num_threads(args.threads)
    x, y, s = adult()
    out = {"git": git_state(), "python": platform.python_version(),
           "torch": torch.__version__, "torch_threads": args.threads, "reps": reps,
           "quick": bool(args.quick), "loadavg_start": _load()}
    import opacus

    out["opacus"] = opacus.__version__
    out["a"] = section_a(x, y, s, reps)
    out["b"] = section_b(x, y, s, reps)
    out["c"] = mem
    out["seconds_total"] = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"learning_speed{suffix}.json").write_text(json.dumps(out, indent=1))
    plot(out, RESULTS / f"learning_speed{suffix}.png")
    print(f"total {out['seconds_total']:.0f} s")


if __name__ == "__main__":
    main()
