"""The demo's report: sections of Markdown, numbers and figures, written to a folder."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._jsonable import write_json
from privot.demo._ledgers import create_ledger

__all__ = ["NOISE_SE", "Section", "DemoContext", "compare_means", "comparison_phrase",
           "new_figure", "save_figure", "write_report"]

#: A difference of two means counts only beyond this many combined standard errors,
#: :math:`\sqrt{se_1^2 + se_2^2}` (:func:`compare_means`).
NOISE_SE = 2.0


@dataclass(frozen=True)
class Section:
    """One capability's part of the report.

    Attributes
    ----------
    key : str
        Short identifier, the section's key in ``results.json``.
    title : str
        Markdown heading.
    markdown : str
        The section's text (figures are linked by the writer).
    numbers : dict
        JSON-serialisable results.
    figures : tuple of str
        File names of PNGs written into the output folder.
    """

    key: str
    title: str
    markdown: str
    numbers: dict[str, Any] = field(default_factory=dict)
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoContext:
    """What every section receives: where to write, and the randomness to use.

    ``rng`` is None for a secure run (OS entropy); a seeded generator otherwise, in which
    case every release is marked not fit for publication. ``ledgers`` holds the budget
    ledger of each data set released from so far (:meth:`ledger`), in creation order.
    """

    output: Path
    rng: np.random.Generator | None
    quick: bool = False
    ledgers: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: The data sets read so far (:meth:`dataset`) and the seconds each read took.
    datasets: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    load_seconds: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def dataset(self, key: str, load: Callable[[], Any]) -> Any:
        """``load()``, read once per run and shared by the sections that use data set
        ``key`` (MNIST alone takes seconds to parse); its time in :attr:`load_seconds`.
        The sections only read what it returns."""
        if key not in self.datasets:
            start = time.perf_counter()
            self.datasets[key] = load()
            self.load_seconds[key] = time.perf_counter() - start
        return self.datasets[key]

    def ledger(self, key: str) -> Any:
        """The budget ledger of data set ``key`` (:data:`privot.demo.budget.LEDGERS`),
        created in the output folder on first use."""
        if key not in self.ledgers:
            self.ledgers[key] = create_ledger(self.output, key)
        return self.ledgers[key]

    @property
    def seeded(self) -> bool:
        return self.rng is not None

    def audit_rng(self, offset: int) -> np.random.Generator:
        """Randomness for audits (experiments, not releases): seeded from ``rng`` if any."""
        if self.rng is None:
            return np.random.default_rng()
        return np.random.default_rng(int(self.rng.integers(2**32)) + offset)


def new_figure(nrows: int = 1, ncols: int = 1, *,
               figsize: tuple[float, float] = (7.0, 4.5)) -> tuple[Any, np.ndarray]:
    """A matplotlib ``Figure`` and its ``(nrows, ncols)`` array of axes.

    Uses the object-oriented API (no ``pyplot``): no global figure state and no
    interactive backend, so the demo never changes the caller's matplotlib setup.
    matplotlib is imported lazily; a missing one raises
    :class:`~privot.errors.MissingExtraError` naming the ``plot`` extra.
    """
    from privot._optional import require

    mfigure = require("matplotlib.figure", "plot")
    fig = mfigure.Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def compare_means(a: float, se_a: float, b: float, se_b: float, *,
                  lower_is_better: bool = True) -> int:
    r"""Which of two means is better, counting only a difference beyond the noise.

    The report's rule for every comparison of two estimated means: ``a`` beats ``b`` only
    when they differ by more than :data:`NOISE_SE` combined standard errors,
    :math:`|a - b| > 2 \sqrt{se_a^2 + se_b^2}`; otherwise they are within noise of each
    other (about a 95% two-sided test of equal means for independent estimates).

    Parameters
    ----------
    a, b : float
        The two means.
    se_a, se_b : float
        Their standard errors (>= 0).
    lower_is_better : bool, default True
        Whether the smaller mean is the better one (an error) or the larger (a score).

    Returns
    -------
    int
        1: ``a`` beats ``b``; -1: ``b`` beats ``a``; 0: within noise of each other.
    """
    margin = NOISE_SE * float(np.hypot(se_a, se_b))
    diff = (b - a) if lower_is_better else (a - b)  # > 0: a is better
    if diff > margin:
        return 1
    if -diff > margin:
        return -1
    return 0


def comparison_phrase(name_a: str, a: float, se_a: float, name_b: str, b: float,
                      se_b: float, *, lower_is_better: bool = True,
                      digits: int = 2) -> str:
    """The report's words for :func:`compare_means`: ``"A beats B (a ± se vs b ± se)"``,
    ``"B beats A (b ± se vs a ± se)"`` or ``"A and B are within noise of each other
    (a ± se vs b ± se)"``."""
    def pair(x: float, se_x: float, y: float, se_y: float) -> str:
        return f"({x:.{digits}f} ± {se_x:.{digits}f} vs {y:.{digits}f} ± {se_y:.{digits}f})"

    verdict = compare_means(a, se_a, b, se_b, lower_is_better=lower_is_better)
    if verdict == 1:
        return f"{name_a} beats {name_b} {pair(a, se_a, b, se_b)}"
    if verdict == -1:
        return f"{name_b} beats {name_a} {pair(b, se_b, a, se_a)}"
    return f"{name_a} and {name_b} are within noise of each other {pair(a, se_a, b, se_b)}"


def save_figure(fig: Any, output: Path, name: str) -> str:
    """Write ``fig`` as PNG ``output / name`` (Agg renderer); returns ``name``."""
    fig.savefig(output / name, dpi=120, format="png")
    return name



def write_report(output: Path, sections: list[Section], *, seeded: bool,
                 header: dict[str, Any]) -> Path:
    """Write ``report.md`` and ``results.json`` into ``output``; returns the report path."""
    lines = ["# privot demo report", "",
             "> **An evaluation report, not a release.** It runs on public data and sets "
             "each private release beside non-private references, exact counts and "
             "timings, which a release of sensitive data must never carry. To publish, use "
             "the publishable files of `privot heatmap` / `privot barycenter` (README, "
             "\"Layout and guarantees\").", ""]
    if seeded:
        lines += ["> **Seeded run**: noise came from a seeded generator; the numbers are "
                  "reproducible and **not fit for publication**.", ""]
    for key, value in header.items():
        lines.append(f"- {key}: {value}")
    lines.append("")
    for s in sections:
        lines += [f"## {s.title}", "", s.markdown.strip(), ""]
        lines += [f"![{name}]({name})" for name in s.figures]
        lines.append("")
    report = output / "report.md"
    report.write_text("\n".join(lines))
    payload = {"header": header, "seeded": seeded,
               **{s.key: {"title": s.title, **s.numbers, "figures": list(s.figures)}
                  for s in sections}}
    write_json(output / "results.json", payload)
    return report
