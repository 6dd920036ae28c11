"""Where the real data lives: resolution of the shared data folder.

Real data is used *by path*: it is never copied into the project or shipped in the
package. A loader takes ``data_dir`` and resolves it with :func:`resolve_data_dir`:

1. ``data_dir`` given explicitly: used as is (it must be an existing folder);
2. else the environment variable ``PRIVOT_DATA_DIR`` (it must be an existing folder);
3. else the first ``shared/data`` folder found beside the current working directory
   or one of its ancestors (``<ancestor>/shared/data``);
4. else the same search upwards from this package's source location (so an editable
   checkout with ``shared/`` next to the project root works from any directory).

If nothing is found, :class:`DataNotFoundError` says where it looked and how to set
``PRIVOT_DATA_DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path

from privot.errors import DataNotFoundError

__all__ = ["DATA_DIR_ENV", "DataNotFoundError", "resolve_data_dir", "data_file"]

#: Name of the environment variable that points at the shared data folder.
DATA_DIR_ENV = "PRIVOT_DATA_DIR"


def _ancestors(start: Path) -> list[Path]:
    start = start.resolve()
    return [start, *start.parents]


def _candidates() -> list[Path]:
    """``<ancestor>/shared/data`` for the cwd's ancestors, then the package's."""
    seen: list[Path] = []
    for start in (Path.cwd(), Path(__file__).parent):
        for anc in _ancestors(start):
            cand = anc / "shared" / "data"
            if cand not in seen:
                seen.append(cand)
    return seen


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the folder holding the shared real data.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Explicit folder. When ``None``: the environment variable ``PRIVOT_DATA_DIR``,
        then the first ``shared/data`` folder found walking up from the current
        working directory, then walking up from the package's source location.

    Returns
    -------
    pathlib.Path
        The resolved, existing folder.

    Raises
    ------
    DataNotFoundError
        If the explicit folder or the one named by ``PRIVOT_DATA_DIR`` does not exist
        (no silent fall-back), or if no ``shared/data`` folder is found; the message
        lists where it looked.
    """
    hint = (f"pass data_dir=... or set the environment variable {DATA_DIR_ENV} "
            "to the folder that holds the shared data (e.g. export "
            f"{DATA_DIR_ENV}=/path/to/shared/data)")
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise DataNotFoundError(
                f"data_dir={str(data_dir)!r} is not an existing folder; {hint}")
        return path.resolve()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise DataNotFoundError(
                f"{DATA_DIR_ENV}={env!r} is not an existing folder; {hint}")
        return path.resolve()
    candidates = _candidates()
    for cand in candidates:
        if cand.is_dir():
            return cand
    shown = ", ".join(str(c) for c in candidates[:6])
    more = f" and {len(candidates) - 6} more" if len(candidates) > 6 else ""
    raise DataNotFoundError(
        f"no shared data folder found: data_dir is None, {DATA_DIR_ENV} is not set, and "
        f"no 'shared/data' folder exists at {shown}{more}; {hint}")


def data_file(relative: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of ``relative`` (e.g. ``"adult/adult.data"``) inside the resolved data folder.

    Raises
    ------
    DataNotFoundError
        If the folder cannot be resolved or the file does not exist in it.
    """
    root = resolve_data_dir(data_dir)
    path = root / relative
    if not path.is_file():
        raise DataNotFoundError(
            f"{relative!r} not found in the data folder {str(root)!r} (looked for "
            f"{str(path)!r}); point data_dir or {DATA_DIR_ENV} at the folder that "
            f"holds {relative.split('/')[0]!r}")
    return path
