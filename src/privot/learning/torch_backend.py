"""The one place :mod:`privot.learning` imports torch (the ``torch`` extra).

Callers outside the package (the ``privot learn`` command, the demo) reach torch through
:func:`require_torch`, which names the extra to install when it is missing
(:func:`privot._optional.require`).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from privot._optional import require

if TYPE_CHECKING:  # the type checker sees the real modules (public API annotations)
    import torch
    from torch import func
else:
    torch = require("torch", "torch")
    func = require("torch.func", "torch")

__all__ = ["func", "require_torch", "torch"]


def require_torch() -> ModuleType:
    """The ``torch`` module privot's learning runs on (the ``torch`` extra)."""
    return torch
