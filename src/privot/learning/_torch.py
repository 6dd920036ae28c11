"""Old spelling of :mod:`privot.learning.torch_backend` (kept for existing imports)."""

from __future__ import annotations

from privot.learning.torch_backend import func, torch

__all__ = ["func", "torch"]
