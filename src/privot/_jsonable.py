"""The one JSON writer of privot: results' files, the CLI's output and the demo report.

Every JSON file privot writes goes through :func:`write_json` (``indent=2``, numpy
scalars and arrays turned into Python values, one trailing newline), so the same
release gives the same bytes whichever capability or command wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["json_ready", "jsonable", "to_json", "write_json"]


def jsonable(obj: Any) -> Any:
    """``json.dumps(default=...)`` hook: numpy scalars to Python numbers, arrays to lists.

    numpy is imported here, not at the top: the CLI's parsers import this module (through
    ``privot._result``) and stay light."""
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def to_json(payload: Any) -> str:
    """``payload`` as indented JSON text (numpy values converted by :func:`jsonable`)."""
    return json.dumps(payload, indent=2, default=jsonable)


def write_json(path: str | Path, payload: Any) -> None:
    """Write :func:`to_json` of ``payload`` and a newline to ``path``."""
    Path(path).write_text(to_json(payload) + "\n")


def json_ready(payload: Any) -> Any:
    """``payload`` with numpy scalars and arrays turned into plain Python values."""
    return json.loads(json.dumps(payload, default=jsonable))
