"""JSON conversion of numpy values, shared by the CLI and the demo report."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["jsonable"]


def jsonable(obj: Any) -> Any:
    """``json.dumps(default=...)`` hook: numpy scalars to Python numbers, arrays to lists."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")
