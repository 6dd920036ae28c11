"""The one place :mod:`privot.learning` imports torch (the ``torch`` extra).

Callers outside the package (the ``privot learn`` command, the demo) reach torch through
:func:`require_torch`, which names the extra to install when it is missing
(:func:`privot._optional.require`).
"""

from __future__ import annotations

from types import ModuleType

from privot._optional import require

torch = require("torch", "torch")
func = require("torch.func", "torch")

__all__ = ["func", "require_torch", "torch"]


def require_torch() -> ModuleType:
    """The ``torch`` module privot's learning runs on (the ``torch`` extra)."""
    return torch
