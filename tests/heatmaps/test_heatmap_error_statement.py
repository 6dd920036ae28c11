"""The heatmap error statement (issue 28): stated from public parameters, it holds.

Synthetic data where the data-dependent part vanishes: every user sits in one of at
most ``w`` cells (the w-sparse approximation is exact) with many users per cell (the
top-w selection keeps every occupied cell). Over 120 seeded releases per setting the
observed ``n x EMD`` (privot's exact grid EMD, in cells) exceeds the stated bound at most
at the stated rate: a one-sided binomial test at false-alarm rate :data:`FALSE_ALARM`.
Informativeness: the bound is compared with the median observed error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from privot.errors import InvalidParameterError
from privot.heatmaps import (
    Grid,
    HeatmapParams,
    grid_emd,
    heatmap_error,
    measure,
    private_heatmap,
    reconstruct,
)
from privot.heatmaps.pyramid import block_sums

FALSE_ALARM = 1e-3
N_RELEASES = 120
N_USERS = 1000
#: The ratio bound / median observed n x EMD this (worst-case) bound reaches; measured
#: 21-25 on these settings (docs/errors/heatmaps.md, "How tight"; the earlier 2 R_q Delta N
#: bound was 30-46).
MAX_RATIO = 27.0


def _allowed_exceedances(n: int, confidence: float) -> int:
    """Largest count of bound violations the one-sided binomial test accepts:
    P(Bin(n, 1 - confidence) > c) <= FALSE_ALARM."""
    c = int(stats.binom.isf(FALSE_ALARM, n, 1.0 - confidence))
    while stats.binom.sf(c, n, 1.0 - confidence) > FALSE_ALARM:
        c += 1
    return c


def _sparse_points(rng: np.random.Generator, delta: int, k: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """N_USERS users, one point each, in ``k`` random cells (cell centres); returns
    the columns and the true cell counts ``s`` (Delta, Delta)."""
    cells = rng.choice(delta * delta, size=k, replace=False)
    which = cells[rng.integers(0, k, size=N_USERS)]
    r, c = np.divmod(which, delta)
    s = np.bincount(which, minlength=delta * delta).reshape(delta, delta).astype(float)
    return np.arange(N_USERS), (c + 0.5) / delta, (r + 0.5) / delta, s


def _observed(params: HeatmapParams, k: int, seed: int) -> tuple[np.ndarray, list]:
    rng = np.random.default_rng(seed)
    delta = params.grid.resolution
    out, errors = [], []
    for i in range(N_RELEASES):
        user, x, y, s = _sparse_points(rng, delta, k)
        res = private_heatmap(None, params, user=user, x=x, y=y, rng=seed * 1000 + i)
        errors.append(res.error)
        out.append(N_USERS * grid_emd(res.distribution, s, cell=(1.0, 1.0)))
    return np.asarray(out), errors


SETTINGS = [  # (Delta, epsilon, w, occupied cells k)
    (16, 1.0, 20, 3),
    (16, 0.5, 4, 4),
    (8, 2.0, 4, 2),
]


@pytest.fixture(scope="module", params=SETTINGS, ids=lambda s: f"D{s[0]}-eps{s[1]}-w{s[2]}")
def observed(request):
    delta, eps, w, k = request.param
    params = HeatmapParams(grid=Grid((0.0, 1.0, 0.0, 1.0), delta), epsilon=eps, w=w)
    emd, errors = _observed(params, k, seed=delta + w)
    return params, emd, errors


def test_statement_is_public_and_wired(observed):
    params, _, errors = observed
    stated = heatmap_error(params)
    # the same statement for every input with these public parameters
    assert all(e == stated for e in errors)
    assert stated.units == "cells x users" and 0 < stated.bound < np.inf
    assert stated.not_covered and stated.derivation == "docs/errors/heatmaps.md"
    json.dumps(stated.to_dict())


def test_bound_holds_at_stated_rate(observed):
    params, emd, _ = observed
    stated = heatmap_error(params)
    exceed = int(np.sum(emd > stated.bound))
    assert exceed <= _allowed_exceedances(len(emd), stated.confidence), (exceed, stated)
    # with n given the bound is on the EMD itself, in cells
    per = heatmap_error(params, n_users=N_USERS)
    assert per.units == "cells"
    assert per.bound == pytest.approx(min(stated.bound / N_USERS,
                                          2 * (params.grid.resolution - 1)))


def test_bound_is_within_its_measured_factor(observed):
    params, emd, _ = observed
    ratio = heatmap_error(params).bound / float(np.median(emd))
    assert 1.0 < ratio <= MAX_RATIO, ratio


@pytest.mark.xfail(strict=True, reason="issue 28 asks for 4x; the proven worst-case bound "
                   "is 21-25x the median (docs/errors/heatmaps.md, 'How tight')")
def test_bound_within_four_times_median(observed):
    params, emd, _ = observed
    assert heatmap_error(params).bound <= 4.0 * float(np.median(emd))


def test_bound_shrinks_with_epsilon_and_falls_with_n():
    grid = Grid((0.0, 1.0, 0.0, 1.0), 32)
    b1 = heatmap_error(HeatmapParams(grid=grid, epsilon=1.0)).bound
    b2 = heatmap_error(HeatmapParams(grid=grid, epsilon=2.0)).bound
    assert b2 == pytest.approx(b1 / 2, rel=1e-3)
    p = HeatmapParams(grid=grid, epsilon=1.0)
    assert heatmap_error(p, n_users=10**6).bound < heatmap_error(p, n_users=10**4).bound
    assert heatmap_error(p, confidence=0.999).bound > b1


def test_release_json_carries_the_statement():
    grid = Grid((0.0, 1.0, 0.0, 1.0), 8)
    params = HeatmapParams(grid=grid, epsilon=1.0, w=4)
    rng = np.random.default_rng(1)
    res = private_heatmap(None, params, user=np.arange(50), x=rng.random(50),
                          y=rng.random(50), rng=3)
    assert res.release_dict()["error"] == heatmap_error(params).to_dict()
    laplace = heatmap_error(HeatmapParams(grid=grid, epsilon=1.0, method="laplace"))
    assert 0 < laplace.bound < np.inf and not laplace.not_covered
    thr = heatmap_error(HeatmapParams(grid=grid, epsilon=1.0, method="threshold"))
    assert thr.bound == np.inf and thr.to_dict()["bound"] is None


def test_bad_arguments_are_refused():
    params = HeatmapParams(grid=Grid((0.0, 1.0, 0.0, 1.0), 8), epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        heatmap_error(params, confidence=1.0)
    with pytest.raises(InvalidParameterError):
        heatmap_error(params, n_users=0)
    with pytest.raises(InvalidParameterError):
        heatmap_error({"epsilon": 1.0})


def test_lp_fits_the_start_level_exactly():
    # step 4' of the derivation: at any LP optimum every level-q cell's mass is
    # max(y_q, 0) (unscaled), whatever the finer levels say
    rng = np.random.default_rng(7)
    for i, (delta, w) in enumerate([(16, 20), (16, 4), (8, 4), (32, 20)] * 3):
        s = np.zeros((delta, delta))
        s.ravel()[rng.choice(delta * delta, 3, replace=False)] = rng.integers(0, 50, 3)
        m = measure(s, epsilon=0.5, w=w, rng=i)
        rec = reconstruct(m)
        y_q = np.ldexp(m.values[0], m.start_level)
        assert not rec.lp_fallback
        np.testing.assert_allclose(block_sums(rec.estimate, m.start_level),
                                   np.maximum(y_q, 0.0), atol=1e-6)
