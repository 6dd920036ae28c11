"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
from scipy import stats

__all__ = ["checkin_users", "git_state", "mlp", "t_interval"]


def t_interval(values: list[float]) -> dict:
    """Mean and 95% Student-t interval of the finite ``values`` (None and NaN skipped)."""
    arr = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    n = int(arr.size)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    mean = float(arr.mean())
    if n == 1:
        return {"mean": mean, "ci_low": None, "ci_high": None, "n": 1}
    half = float(stats.t.ppf(0.975, n - 1) * arr.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n}


def git_state() -> str:
    """HEAD commit of the repository (and '+dirty' when src/ differs from it)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def mlp(widths, seed: int):  # noqa: ANN001, ANN201
    """A seeded torch MLP: Linear + ReLU layers of ``widths``, a sigmoid output of 1
    (torch imported here, lazily)."""
    import torch

    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    layers += [torch.nn.Linear(widths[-1], 1), torch.nn.Sigmoid()]
    return torch.nn.Sequential(*layers)


def checkin_users(n: int, side: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, side^2)`` histograms: 1-3 homes, 5-50 check-ins (sd 0.08), nearest cell."""
    homes = rng.integers(1, 4, size=n)
    counts = rng.integers(5, 51, size=n)
    owner = np.repeat(np.arange(n), counts)
    centers = rng.random((n, 3, 2))
    which = rng.integers(0, homes[owner])
    pts = np.clip(centers[owner, which] + 0.08 * rng.standard_normal((owner.size, 2)), 0, 1)
    cell = np.rint(pts * (side - 1)).astype(np.int64)
    flat = cell[:, 0] * side + cell[:, 1]  # the grid's row-major order (indexing="ij")
    hist = np.zeros((n, side * side))
    np.add.at(hist, (owner, flat), 1.0)
    return hist / hist.sum(axis=1, keepdims=True)
