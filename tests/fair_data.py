"""A small two-group classification table for learning tests (on pytest's path)."""

from __future__ import annotations

import numpy as np


def two_group_table(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, a)``: 2 features, a binary label ``y`` and a binary sensitive ``a``."""
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 2, n)
    y = (gen.random(n) < 0.5).astype(int)
    x = np.c_[y + gen.normal(0, 1, n), a + gen.normal(0, 0.5, n)].astype(np.float32)
    return x, y, a


def logistic_model():
    """A seeded ``Linear(2, 1) + Sigmoid`` (torch imported here, lazily)."""
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Sigmoid())
