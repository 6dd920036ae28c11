"""The main job: run each implemented capability on real data and write a report.

Each capability contributes one section module with a ``run(ctx) -> Section``
function, listed in :data:`SECTIONS`. ``privot demo`` (and ``make demo``) call
:func:`run_demo`. The sections charge their releases to one budget ledger per data set
(:mod:`privot.demo.budget`); the report ends with what each ledger spent and has left.
"""

from __future__ import annotations

import importlib
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privot import __version__
from privot._folders import archive_earlier_run, check_output_folder
from privot.demo._report import DemoContext, Section, write_report
from privot.demo.budget import section as budget_section

__all__ = ["SECTIONS", "DemoResult", "run_demo"]

#: Section modules in report order; a capability appends its own.
SECTIONS: tuple[str, ...] = (
    "privot.demo.privacy_core",
    "privot.demo.ot_core",
    "privot.demo.heatmaps",
    "privot.demo.barycenters",
    "privot.demo.sampling",
    "privot.demo.learning",
)


@dataclass(frozen=True)
class DemoResult:
    """Where the report went and what it holds."""

    output: Path
    report: Path
    sections: tuple[Section, ...]
    seconds: float
    budget: Section | None = None
    ledgers: tuple[Path, ...] = ()
    #: Where an earlier run's files were moved (``force=True`` on a used folder).
    earlier_run: Path | None = None


def run_demo(output: str | Path = "privot-demo", *, rng: np.random.Generator | None = None,
             quick: bool = False, sections: Sequence[str] | None = None,
             progress: bool = False, force: bool = False) -> DemoResult:
    """Run the demo sections and write ``report.md``, ``results.json``, PNGs and one
    budget ledger ``budget-<key>.sqlite`` per data set released from.

    Parameters
    ----------
    output : path
        Folder to write into (created if needed).
    rng : numpy Generator, optional
        Seeded randomness for a reproducible (not publishable) run; None for secure noise.
    quick : bool
        Smaller audits and grids (used by the test suite).
    sections : sequence of str, optional
        Module names to run instead of :data:`SECTIONS`.
    progress : bool, default False
        One line on stderr as each section starts and ends (``privot demo`` turns it on:
        plain lines, so they show when the output is redirected to a file too).
    force : bool, default False
        Run in a used folder: what an earlier run left there, its budget ledgers
        included, is first moved into ``output/earlier-runs/<UTC time>/``
        (:func:`privot._folders.archive_earlier_run`; nothing is deleted). Without it a
        non-empty folder is refused before anything runs.

    Raises
    ------
    InvalidParameterError
        ``output`` is a file, or a non-empty folder and not ``force``.
    """
    out = check_output_folder(output, force=force, name="output",
                              forced="pass force=True to run there: the earlier run's "
                                     "files are moved into earlier-runs/<time>/ first")
    # the demo's budgets are per run and a ledger is never re-initialised, nor deleted:
    # an earlier run's files (ledgers included) are kept, moved aside
    earlier = archive_earlier_run(out) if force else None
    out.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(output=out, rng=rng, quick=quick)
    start = time.perf_counter()
    done = []
    names = list(sections if sections is not None else SECTIONS)
    for i, name in enumerate(names, 1):
        t0 = time.perf_counter()
        if progress:
            print(f"privot demo: [{i}/{len(names)}] {name.rsplit('.', 1)[-1]} ...",
                  file=sys.stderr, flush=True)
        done.append(importlib.import_module(name).run(ctx))
        if progress:
            print(f"privot demo: [{i}/{len(names)}] {done[-1].title}: "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    header = {"privot": __version__, "python": platform.python_version(),
              "noise": "seeded generator (not for publication)" if ctx.seeded
              else "OS CSPRNG (secure)",
              "mode": "quick" if quick else "full", "seconds": round(seconds, 2)}
    budget = budget_section(ctx)
    report = write_report(out, [*done, budget], seeded=ctx.seeded, header=header)
    return DemoResult(output=out, report=report, sections=tuple(done), seconds=seconds,
                      budget=budget, ledgers=tuple(ld.path for ld in ctx.ledgers.values()),
                      earlier_run=earlier)
