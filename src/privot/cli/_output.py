"""The output folder of a releasing command: publishable files and curator files, apart.

DESIGN.md, "Publishable output": two audiences read what privot produces and they never
share a file.

* **Publishable** files (``release.json`` and the command's release files) are written
  from the public parameters and the noisy release only.
* **Curator** files carry exact statistics of the raw data (row, user, clipped and
  dropped counts), wall-clock timings, warnings raised while touching the data and,
  on request, plots of the raw data. Their names start with :data:`CURATOR_PREFIX`
  (``curator-report.json``, ``curator-data.png``), so a ``cp`` or an upload rule can
  tell them apart by name alone.

:class:`OutputFolder` keeps that split in one place for every subcommand: it refuses
an existing non-empty folder unless ``--force`` (checked *before* anything is read or
charged), clears what an earlier run wrote, records by audience what the result's
``save`` wrote (:meth:`OutputFolder.record`, checking the names by the one naming rule
of :mod:`privot._result`: the results write every file, the CLI writes none), and
:func:`capture_data_warnings` routes every warning raised while the data is touched
to stderr and to the curator report, never to a publishable file.

Privacy
-------
No release happens here. This module decides *where* a value may be written, never
what it is; the guarantee of each release is stated by its mechanism.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from privot._folders import check_output_folder
from privot._result import (
    CURATOR_NOTICE,
    CURATOR_PREFIX,
    CURATOR_REPORT,
    check_publishable_name,
    curator_name,
)

__all__ = ["CURATOR_NOTICE", "CURATOR_PREFIX", "CURATOR_REPORT", "OutputFolder",
           "capture_data_warnings"]


class OutputFolder:
    """Where one command run writes, by audience.

    Parameters
    ----------
    path : str or Path
        The folder.
    command : str
        The subcommand (for messages).
    force : bool
        Allow a folder that exists and is not empty; the files this command writes
        (``publishable`` and the curator files) are replaced, nothing else is touched.
    publishable : sequence of str
        Names of the publishable files this command may write (for the ``--force``
        clean-up and the listing in the curator report).
    """

    def __init__(self, path: str | Path, *, command: str, force: bool,
                 publishable: Sequence[str]) -> None:
        self.path = Path(path)
        self.command = command
        self.force = bool(force)
        self.publishable_names = tuple(publishable)
        self.written_public: list[str] = []
        self.written_curator: list[str] = []

    def check(self) -> None:
        """Refuse an existing non-empty folder without ``--force`` (before any work)."""
        check_output_folder(self.path, force=self.force)

    def open(self) -> None:
        """Create the folder; with ``--force``, remove the files an earlier run wrote."""
        self.check()
        self.path.mkdir(parents=True, exist_ok=True)
        for name in self.publishable_names:
            with contextlib.suppress(FileNotFoundError):
                (self.path / name).unlink()
        for old in self.path.glob(CURATOR_PREFIX + "*"):
            if old.is_file():
                old.unlink()

    def record(self, written: Mapping[str, Sequence[str]]) -> None:
        """Record what a result's ``save`` wrote (``{"publishable": [...], "curator":
        [...]}``), refusing a publishable name with the curator prefix, a curator name
        without it, or a publishable file this command does not declare."""
        for name in written["publishable"]:
            if check_publishable_name(name) not in self.publishable_names:
                raise ValueError(f"{name!r} is not a publishable file of {self.command}")
            self.written_public.append(name)
        for name in written["curator"]:
            if curator_name(name) != name:
                raise ValueError(f"{name!r} lacks the curator prefix {CURATOR_PREFIX!r}")
            self.written_curator.append(name)

    def listing(self) -> str:
        """One line naming what was written, by audience."""
        pub = ", ".join(sorted(set(self.written_public)))
        cur = ", ".join(sorted(set(self.written_curator)))
        return (f"wrote {self.path}/: publishable: {pub}; curator-only (do not publish): "
                f"{cur}")


@contextlib.contextmanager
def capture_data_warnings(command: str) -> Iterator[list[str]]:
    """Collect every warning raised inside the block; print each on stderr as curator-only.

    A warning raised while the data is read, aggregated or released may depend on the
    exact data (``overflow encountered in multiply`` for one row at longitude 1e300, "most
    rows were clipped"), so none of them goes into a publishable file: the caller puts the
    returned list into the curator report.
    """
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield notes
        finally:
            seen: set[str] = set()
            for w in caught:
                text = f"{w.category.__name__}: {w.message}"
                if text in seen:
                    continue
                seen.add(text)
                notes.append(text)
                print(f"privot {command}: curator-only warning: {text}", file=sys.stderr)
