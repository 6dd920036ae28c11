"""Lazy import of optional heavy dependencies with an error naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from privot.errors import MissingExtraError

__all__ = ["require"]


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
