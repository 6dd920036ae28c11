"""One head-to-head comparison of ``bench_compare.py``: privot against what a user would
run instead, in the same process.

Each topic module in this folder (``benchmarks/compare/<topic>.py``) defines
``cases(quick: bool) -> list[Case]``; ``bench_compare.py`` finds the modules, runs every
case with the two contenders alternated (after one untimed warm-up each), and reports
the median of each and their ratio ``privot / peer`` (below 1: privot is faster).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Case:
    """A timed pair.

    Attributes
    ----------
    name : str
        Short unique id, ``"<topic>.<what>"`` (e.g. ``"ot.w2_1d"``).
    workload : str
        What runs, with its sizes (one line, shown in the table).
    peer : str
        What privot is compared against (library and call, or "its own stages").
    run_privot, run_peer : callable
        No arguments; each call does the whole timed work once and returns its result
        (passed to ``check``).
    goal : float, optional
        The issue's target for the ratio ``privot / peer`` (met when the median ratio is
        at most it). None: reported, no target.
    setup : callable, optional
        Untimed, once before the runs (data generation, files).
    check : callable, optional
        ``check(privot_result, peer_result) -> dict`` of agreement figures (recorded, e.g.
        the relative difference of two values); raise AssertionError when they disagree.
    repeats : int
        Timed runs of each contender (alternated), at least 3.
    note : str
        Anything a reader of the table needs (threads, which path, why a goal is moot).
    """

    name: str
    workload: str
    peer: str
    run_privot: Callable[[], Any]
    run_peer: Callable[[], Any]
    goal: float | None = None
    setup: Callable[[], None] | None = None
    check: Callable[[Any, Any], dict] | None = None
    repeats: int = 3
    note: str = ""
    extra: dict = field(default_factory=dict)


def keep_rate_check(cells: np.ndarray, keep: float) -> Callable[[Any, Any], dict]:
    """A k-RR agreement check: both outputs keep the true cell at the rate ``keep``
    (within 6 binomial standard errors; false alarm below 1e-8 per contender)."""
    n = len(cells)

    def check(a: Any, b: Any) -> dict:
        rates = {"keep_privot": float(np.mean(np.asarray(a) == cells)),
                 "keep_peer": float(np.mean(np.asarray(b) == cells))}
        sd = math.sqrt(keep * (1 - keep) / n)
        for who, rate in rates.items():
            if abs(rate - keep) > 6 * sd:
                raise AssertionError(f"{who} keeps {rate:.4f}, k-RR keeps {keep:.4f}")
        return {**rates, "keep_exact": keep}

    return check
