"""The one place :mod:`privot.learning` imports torch (an optional extra)."""

from __future__ import annotations

from privot._optional import require

torch = require("torch", "torch")
func = require("torch.func", "torch")

__all__ = ["func", "torch"]
