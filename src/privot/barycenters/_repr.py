"""One-line reprs for the barycenter package's objects that hold arrays.

A dataclass's generated ``repr`` prints every array in full (a coreset's points, a
polygon's vertices); these print arrays by their shape and long values by their type.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["brief", "short_repr"]


def brief(value: object) -> str:
    """One short token for a value: an array by its shape, a list of arrays by its
    length, anything whose repr is longer than 60 characters by its type."""
    if isinstance(value, np.ndarray):
        return f"<array {value.shape}>"
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray):
        return f"<{len(value)} arrays>"
    text = repr(value)
    return text if len(text) <= 60 else f"<{type(value).__name__}>"


def short_repr(obj: object, names: Sequence[str]) -> str:
    """``Name(a=..., b=...)`` of the attributes ``names``, each :func:`brief`."""
    parts = ", ".join(f"{name}={brief(getattr(obj, name))}" for name in names)
    return f"{type(obj).__name__}({parts})"
