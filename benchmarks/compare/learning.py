"""DP-SGD (issue 27): one step of privot's ERM-only private trainer (alpha = 0) against
Opacus at the same noise multiplier, batch size and model.

As ``benchmarks/bench_learning_speed.py`` section (b): Adult (``load_adult_fairness``,
86 features), MLP 86 -> 64 -> 64 -> 1 (ReLU, sigmoid output), clip 1. privot:
``make_private(..., penalty="sp", alpha=0, batch_sizes=[3000, 3000],
method="ghost")``, ``trainer.step()`` with ``rng=None`` (its secure batch sampler and
secure Gaussian noise are timed). Opacus: ``PrivacyEngine.make_private`` with Poisson
sampling of expected batch 6000 and BCE loss; its batches are fetched from its
``DataLoader`` beforehand (not timed), the step is ``zero_grad``, forward, loss,
``backward``, ``optimizer.step()``.

* ``learning.dpsgd_opacus_ghost``: Opacus's ghost clipping (``grad_sample_mode="ghost"``,
  the wrapped criterion does the two backward passes).
* ``learning.dpsgd_opacus_hooks``: Opacus's default per-sample gradients (hooks).

The same sigma (1, a fixed value: the step's cost does not depend on it) is not the
same noise: privot's replace-one sensitivity of the mean clipped gradient is ``2C/B``,
Opacus's add/remove one ``C/B``. Opacus runs with ``secure_mode=False`` (its default:
torch's generator, not secure). torch at one thread (set in the setup: on this 2-core
shared machine two-thread OpenMP regions were erratic, see bench_learning_speed.py).
Opacus is optional (the ``dev`` extra): without it, or without the Adult data, the cases
are left out.
"""

from __future__ import annotations

import warnings

import numpy as np

from _common import mlp
from compare.case import Case

GROUP_BATCH, HIDDEN, CLIP, SIGMA, LR = 3000, (64, 64), 1.0, 1.0, 0.05


def _privot_step(x, y, s, steps: int):  # noqa: ANN001
    import torch

    from privot.learning import make_private

    model = mlp((x.shape[1], *HIDDEN), 0)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    trainer = make_private(model, opt, (x, y, s), penalty="sp", alpha=0.0,
                           noise_multiplier=SIGMA, target_delta=1.0 / len(y) ** 2,
                           steps=steps, batch_sizes=[GROUP_BATCH, GROUP_BATCH], clip=CLIP,
                           M=1.0, L=1.0, method="ghost", jacobian_clipping="spectral")
    return trainer.step, model


def _opacus_step(x, y, mode: str, n_batches: int):  # noqa: ANN001
    """Opacus's step on pre-fetched Poisson batches (as bench_learning_speed section b)."""
    import torch
    from opacus import PrivacyEngine

    model = mlp((x.shape[1], *HIDDEN), 0)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    ds = torch.utils.data.TensorDataset(torch.as_tensor(x),
                                        torch.as_tensor(y).to(torch.get_default_dtype()))
    dl = torch.utils.data.DataLoader(ds, batch_size=2 * GROUP_BATCH)
    kw = dict(module=model, optimizer=opt, data_loader=dl, noise_multiplier=SIGMA,
              max_grad_norm=CLIP, poisson_sampling=True, grad_sample_mode=mode)
    engine = PrivacyEngine(accountant="rdp")
    if mode == "ghost":
        gm, dopt, crit, dl2 = engine.make_private(criterion=torch.nn.BCELoss(), **kw)
    else:
        (gm, dopt, dl2), crit = engine.make_private(**kw), torch.nn.BCELoss()
    batches, it = [], iter(dl2)
    while len(batches) < n_batches:
        try:
            batches.append(next(it))
        except StopIteration:
            it = iter(dl2)
    cursor = [0]

    def step():
        xb, yb = batches[cursor[0] % len(batches)]
        cursor[0] += 1
        dopt.zero_grad(set_to_none=True)
        loss = crit(gm(xb)[:, 0], yb)
        loss.backward()
        dopt.step()

    return step, model


def _check(privot_model, opacus_model):  # noqa: ANN001
    def check(_a, _b) -> dict:
        out = {}
        for who, model in (("privot", privot_model), ("opacus", opacus_model)):
            flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
            if not np.all(np.isfinite(flat)):
                raise AssertionError(f"{who}'s parameters are not finite after a step")
            out[f"params_{who}"] = int(flat.size)
        return out

    return check


def _setup() -> None:
    import torch

    torch.set_num_threads(1)
    # Opacus's backward hooks warn at each new call site (no input requires a gradient)
    warnings.filterwarnings("ignore", message="Full backward hook is firing")


def cases(quick: bool) -> list[Case]:
    try:
        import opacus
        import torch  # noqa: F401
    except ImportError:
        print("compare.learning: torch or opacus is not installed (the torch and dev "
              "extras): its cases are left out", flush=True)
        return []
    from privot.datasets import load_adult_fairness
    from privot.errors import DataNotFoundError, MissingExtraError

    try:
        d = load_adult_fairness(split="train")
    except (DataNotFoundError, MissingExtraError) as err:
        print(f"compare.learning: no Adult data ({err}): its cases are left out", flush=True)
        return []
    repeats = {"ghost": 5 if quick else 15, "hooks": 3 if quick else 7}
    out = []
    for mode, reps in repeats.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Opacus's secure-RNG and hook notices
            run_privot, privot_model = _privot_step(d.x, d.y, d.sensitive, reps + 10)
            run_peer, opacus_model = _opacus_step(d.x, d.y, mode, reps + 2)
        out.append(Case(
            name=f"learning.dpsgd_opacus_{mode}",
            workload=f"one DP-SGD step, Adult MLP 86-64-64-1, batch {2 * GROUP_BATCH}, "
                     f"clip {CLIP:g}, sigma {SIGMA:g}, alpha = 0 (ERM)",
            peer=f"Opacus {opacus.__version__} {mode} (Poisson batches pre-fetched)",
            run_privot=run_privot, run_peer=run_peer,
            setup=_setup,
            check=_check(privot_model, opacus_model), repeats=reps,
            note="privot: ghost Grams, secure batch sampler and noise (rng=None), fixed-size "
                 "batches, noise std 2C sigma/B; Opacus: not secure, Poisson batches, "
                 "std C sigma/B; one torch thread"))
    return out
