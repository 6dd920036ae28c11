"""Lazy import of optional heavy dependencies with an error naming the extra."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from privot.errors import MissingExtraError

__all__ = ["figure_possible", "require"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"matplotlib.pyplot"``.
    extra : str
        The privot extra that installs it, e.g. ``"plot"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # only a missing module, never a broad except
        raise MissingExtraError(
            f"{module!r} is needed here but is not installed; "
            f"install it with: pip install 'privot[{extra}]'"
        ) from exc


def figure_possible(name: str, notes: list[str]) -> bool:
    """Whether a release can draw its figure ``name``: True when matplotlib (the ``plot``
    extra) is installed; otherwise appends to ``notes`` that ``name`` was skipped and how
    to get it, and returns False. A release without the extra still writes every other
    file (the wheel installs without extras)."""
    if importlib.util.find_spec("matplotlib") is not None:
        return True
    notes.append(f"{name} skipped: matplotlib is not installed (pip install "
                 "'privot[plot]')")
    return False
