"""Progress bars for long calls: ``tqdm.auto`` on stderr, or nothing.

One place for the rule every ``progress=`` switch follows: None shows bars only when
stderr is a terminal (so logs and redirected output stay clean), True/False force them.
tqdm is imported on use, keeping ``import privot`` light.
"""

from __future__ import annotations

import sys
from typing import Any

from privot.errors import InvalidParameterError

__all__ = ["progress_bar", "show_progress"]


def show_progress(progress: bool | None) -> bool:
    """``progress`` resolved: None shows bars only when stderr is a terminal."""
    if progress is None:
        stream = sys.stderr
        return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())
    if not isinstance(progress, bool):
        raise InvalidParameterError("progress", progress, "None, True or False")
    return progress


class _Silent:
    """What a disabled bar does: nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def set_description_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(show: bool, **kw: Any) -> Any:
    """A ``tqdm.auto`` bar on stderr (cleared when done), or a silent stand-in."""
    if not show:
        return _Silent()
    from tqdm.auto import tqdm

    return tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, **kw)
