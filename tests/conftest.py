"""Fixtures shared across test folders."""

from __future__ import annotations

import pytest


@pytest.fixture
def capped_emd(monkeypatch):
    """POT's network simplex stopped after 2 iterations, whatever budget it is given: the
    plan is then not optimal (and, from POT, not even a coupling), so the totality of a
    release path can be tested without data large enough to hit the real budget."""
    ot = pytest.importorskip("ot")
    real = ot.emd

    def capped(a, b, M, numItermax=100000, log=False, **kwargs):  # noqa: N803 (POT's names)
        return real(a, b, M, numItermax=2, log=log, **kwargs)

    monkeypatch.setattr(ot, "emd", capped)


@pytest.fixture
def nan_sinkhorn(monkeypatch):
    """The batched Sinkhorn of the free-support barycenter returns NaN potentials: the
    solver must raise (``on_failure="raise"``) or fall back, never return NaN atoms."""
    import numpy as np

    import privot.ot._barycenter as bary_mod

    real = bary_mod.solve_entropic

    def broken(*args, **kwargs):
        out = real(*args, **kwargs)
        out.bv = np.full_like(out.bv, np.nan)
        return out

    monkeypatch.setattr(bary_mod, "solve_entropic", broken)
