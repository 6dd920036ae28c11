"""A trivial pair (the harness's own check; not an issue-27 comparison)."""

from __future__ import annotations

import numpy as np
from compare.case import Case


def cases(quick: bool) -> list[Case]:
    x = np.random.default_rng(0).random(200_000 if quick else 2_000_000)
    return [Case(name="selftest.sort", workload=f"sort {len(x):,} floats",
                 peer="numpy sorted copy", run_privot=lambda: np.sort(x),
                 run_peer=lambda: np.sort(x, kind="stable"), goal=None,
                 check=lambda a, b: {"same": bool(np.array_equal(a, b))})]
