"""The learning capability on a GPU: the same seeded DP-SGD run on CPU and CUDA.

Runs ``make_private`` + ``train`` for a linear model (the ghost-Gram path) and a small
MLP (the ``torch.func`` path) on synthetic two-group data, once with the model on the
CPU and once on CUDA (when available), with the same seed: the noise and the batches
come from the same seeded generator, so the two runs differ only by floating-point
order on the device. Writes ``gpu_check_learning.json`` (to ``$OUT`` when set, else
``benchmarks/results/``): per model and device the wall time of the training, the final
loss, the largest parameter difference between CPU and CUDA, and whether every step was
finite. A check, not a speed claim: the runs are small.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from privot.learning import make_private


def data(n: int = 4000, d: int = 8, seed: int = 0):
    gen = np.random.default_rng(seed)
    a = (gen.random(n) < 0.3).astype(int)
    y = (gen.random(n) < 0.4 + 0.2 * a).astype(int)
    x = (gen.normal(0, 1, (n, d)) + 0.5 * y[:, None] + 0.3 * a[:, None]).astype(np.float32)
    return x, y, a


def model_for(kind: str, d: int) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "linear":
        return torch.nn.Sequential(torch.nn.Linear(d, 1), torch.nn.Sigmoid())
    return torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1), torch.nn.Sigmoid())


def run(kind: str, device: str, steps: int = 40) -> dict:
    x, y, a = data()
    model = model_for(kind, x.shape[1]).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    trainer = make_private(model, opt, (x, y, a), penalty="sp", alpha=0.5,
                           noise_multiplier=2.0, target_delta=1e-5, steps=steps, rng=7)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    history = trainer.train(progress=False)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    params = np.concatenate([p.detach().cpu().numpy().ravel() for p in model.parameters()])
    return {"seconds": seconds, "final_loss": float(history[-1].loss),
            "finite": bool(all(np.isfinite(h.loss) for h in history)),
            "epsilon": float(trainer.privacy_report()["epsilon"]), "params": params}


def main() -> None:
    out = Path(os.environ.get("OUT") or Path(__file__).with_name("results"))
    report = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
              "device_name": (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                              else None), "runs": {}}
    for kind in ("linear", "mlp"):
        cpu = run(kind, "cpu")
        entry = {"cpu": {k: v for k, v in cpu.items() if k != "params"}}
        if torch.cuda.is_available():
            gpu = run(kind, "cuda")
            entry["cuda"] = {k: v for k, v in gpu.items() if k != "params"}
            entry["max_param_difference"] = float(np.max(np.abs(cpu["params"]
                                                                 - gpu["params"])))
        report["runs"][kind] = entry
        print(kind, json.dumps(entry), flush=True)
    (out / "gpu_check_learning.json").write_text(json.dumps(report, indent=2) + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
