"""Output folders: refuse a used one unless forced, and never delete what was there.

Every command that writes a folder (the releasing commands through
:class:`privot.cli._output.OutputFolder`, and ``privot demo``) refuses an existing
non-empty folder unless it is forced (:func:`check_output_folder`). Where a forced run
needs the folder clean, what an earlier run left is moved aside, never deleted
(:func:`archive_earlier_run`): a budget ledger in particular is the only record of what a
data set has spent. Standard library only, so the CLI can check before any heavy import.

Privacy
-------
No release and no noise here. What it protects is the budget's record: a ledger (the
only account of the epsilon a data set has spent) is never deleted or overwritten, so a
rerun can never make spent budget look unspent. The refusal of a used folder depends on
the folder only, never on the data, and comes before anything is read or charged.
"""

from __future__ import annotations

import time
from pathlib import Path

from privot.errors import InvalidParameterError

__all__ = ["EARLIER_RUNS", "archive_earlier_run", "check_output_folder"]

#: Subfolder of a forced output folder that keeps the earlier runs' files.
EARLIER_RUNS = "earlier-runs"


def check_output_folder(path: str | Path, *, force: bool, name: str = "--output",
                        forced: str = "rerun with --force to replace the files privot "
                                      "writes there") -> Path:
    """Refuse ``path`` when it is a file, or an existing non-empty folder and not
    ``force``; nothing is created or changed. Returns it as a :class:`~pathlib.Path`.

    ``forced`` says, in the refusal, what ``--force`` would do with the files there.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InvalidParameterError(
            name, str(folder), "a folder path (a file of that name exists)",
            message=f"{name} {str(folder)!r} is a file, not a folder; nothing was written. "
                    "Give a folder path (it is created if needed).")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise InvalidParameterError(
            name, str(folder), f"a new or empty folder ({forced})",
            message=f"the output folder {str(folder)!r} already holds files (an earlier "
                    f"run?); nothing was written. Choose a new folder, or {forced}.")
    return folder


def archive_earlier_run(path: str | Path) -> Path | None:
    """Move everything in ``path`` (but earlier archives) into
    ``path/earlier-runs/<UTC time>/``; returns that folder, or None when there was
    nothing to move. Moves within one folder are renames: nothing is copied or deleted.
    """
    folder = Path(path)
    entries = [p for p in folder.iterdir() if p.name != EARLIER_RUNS] if folder.is_dir() else []
    if not entries:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = folder / EARLIER_RUNS / stamp
    n = 1
    while target.exists():  # two runs in one second
        n += 1
        target = folder / EARLIER_RUNS / f"{stamp}-{n}"
    target.mkdir(parents=True)
    for entry in entries:
        entry.rename(target / entry.name)
    return target
