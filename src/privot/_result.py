"""The one result protocol of the four capabilities, and who names their files.

:class:`HeatmapResult <privot.heatmaps.HeatmapResult>`,
:class:`BarycenterResult <privot.barycenters.BarycenterResult>`,
:class:`PopulationSample <privot.sampling.PopulationSample>` and
:class:`LearningResult <privot.learning.LearningResult>` all derive from
:class:`ReleaseResult`:

``release_dict()``
    The publishable part, JSON-ready: a function of the public parameters and the noise
    only (DESIGN.md, "Publishable output").
``curator_report()``
    Exact counts, timings, diagnostics of the raw data: **curator only, never publish**.
``to_dict(curator=False)``
    The publishable dictionary (what ``release_dict`` says, plus public summaries);
    ``curator=True`` adds one ``"curator_only"`` key holding :meth:`curator_report`.
``save(folder)``
    The files the capability's command writes; ``release.json`` and every curator file
    through :func:`write_release` and :func:`write_curator_report` (the one JSON writer,
    :func:`privot._jsonable.write_json`). Curator files are named by
    :func:`curator_name` (prefix :data:`CURATOR_PREFIX`), publishable ones never start
    with it (:func:`check_publishable_name`); the CLI's
    :class:`~privot.cli._output.OutputFolder` uses the same rule.
``plot(ax=None)``
    One ``matplotlib.figure.Figure`` of the public release.
``epsilon``, ``cost``, ``relation``
    The epsilon spent (a float), the :class:`~privot.privacy.types.PrivacyCost` and the
    :class:`~privot.privacy.types.Neighbouring` relation it holds for.

Privacy
-------
No release happens here: this module decides *where* a value is written and in which
dictionary, never what it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["CURATOR_NOTICE", "CURATOR_PREFIX", "CURATOR_REPORT", "RELEASE_FILE",
           "ReleaseResult", "check_publishable_name", "curator_name",
           "write_curator_report", "write_release"]

#: Every curator-only file's name starts with this.
CURATOR_PREFIX = "curator-"
#: The curator report every release writes.
CURATOR_REPORT = CURATOR_PREFIX + "report.json"
#: The publishable description of every release.
RELEASE_FILE = "release.json"
#: Said at the top of every curator JSON file.
CURATOR_NOTICE = ("exact statistics of the raw data: NOT differentially private, for the "
                  "data curator only; never publish this file")


def curator_name(name: str) -> str:
    """``name`` with the curator prefix (unchanged when it has it)."""
    return name if name.startswith(CURATOR_PREFIX) else CURATOR_PREFIX + name


def check_publishable_name(name: str) -> str:
    """``name``, refused (``ValueError``) when it carries the curator prefix."""
    if name.startswith(CURATOR_PREFIX):
        raise ValueError(f"{name!r} is a curator-only name, not a publishable file")
    return name


def write_release(folder: str | Path, body: Mapping[str, Any],
                  publishable: Iterable[str]) -> str:
    """Write ``release.json``: ``body`` and the sorted ``publishable_files`` (which
    should include ``release.json``). Returns the name written."""
    from privot._jsonable import write_json  # lazily: the CLI's parsers import this module

    files = sorted(check_publishable_name(n) for n in publishable)
    write_json(Path(folder) / RELEASE_FILE, {**body, "publishable_files": files})
    return RELEASE_FILE


def write_curator_report(folder: str | Path, body: Mapping[str, Any],
                         curator_files: Iterable[str] | None, *, name: str = CURATOR_REPORT,
                         notice: str = CURATOR_NOTICE) -> str:
    """Write a curator-only JSON file: the ``notice``, ``body`` and, unless ``None``, the
    sorted ``curator_files``. Returns the (prefixed) name written."""
    from privot._jsonable import write_json

    full = curator_name(name)
    payload: dict[str, Any] = {"warning": notice, **body}
    if curator_files is not None:
        payload["curator_files"] = sorted(curator_name(n) for n in curator_files)
    write_json(Path(folder) / full, payload)
    return full


class ReleaseResult:
    """The protocol every capability's result follows (a mixin of frozen dataclasses).

    A subclass defines :meth:`release_dict`, :meth:`curator_report`, :meth:`save`,
    :meth:`plot` and the ``epsilon``, ``cost`` and ``relation`` attributes; it may
    override :meth:`_public_dict` (the publishable body of :meth:`to_dict`, default
    :meth:`release_dict`).
    """

    __slots__ = ()

    def release_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """The publishable part, JSON-ready."""
        raise NotImplementedError

    def curator_report(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """Exact counts and timings of the raw data: **not private, never publish**."""
        raise NotImplementedError

    def _public_dict(self) -> dict[str, Any]:
        return self.release_dict()

    def to_dict(self, *, curator: bool = False) -> dict[str, Any]:
        """JSON-ready: the publishable part; with ``curator=True`` also
        ``"curator_only"``: :meth:`curator_report` (**exact counts and timings: never
        publish that part**)."""
        from privot._jsonable import json_ready

        body = dict(self._public_dict())
        if curator:
            body["curator_only"] = self.curator_report()
        return json_ready(body)

    def save(self, folder: str | Path) -> dict[str, list[str]]:  # pragma: no cover
        """Write the publishable files and, apart, the curator files into ``folder``."""
        raise NotImplementedError

    def plot(self, ax: Any = None) -> Any:  # pragma: no cover - abstract
        """One matplotlib Figure of the public release."""
        raise NotImplementedError
