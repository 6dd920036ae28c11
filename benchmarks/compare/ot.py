"""OT solvers head to head (issue 27): free-support barycenter and exact 1-D W2^2.

* ``ot.barycenter_2d``: ``privot.ot.free_support_barycenter`` at its defaults (stabilised
  Sinkhorn, reg 1e-3, 50 x 100 iterations, one exact polishing step, exact final cost)
  against POT's exact LP barycenter ``ot.lp.free_support_barycenter`` (same data, same
  init, ``numItermax=50`` like privot's ``n_outer``, POT's default ``stopThr``). Both
  supports are scored with the same exact cost (network simplex); privot's must be within
  0.5% of the LP's.
* ``ot.w2_1d``: ``privot.ot.w2_squared_1d`` (value path: sorted values, no argsort) against
  ``ot.wasserstein_1d(p=2)``, uniform weights, unequal sizes.
* ``ot.private_coreset_barycenter``: the comparison of ``bench_barycenter_speed.py``:
  ``private_barycenter(method="coreset", epsilon=1, reg=0.002)`` end to end on the US census
  regions against POT's non-private ``ot.bregman.free_support_sinkhorn_barycenter`` at the
  same reg (different inits: the private one seeds its own). Goal from that benchmark.
"""

from __future__ import annotations

import warnings

import numpy as np
import ot

from compare.case import Case
from privot.ot import barycenter_cost, free_support_barycenter, quantile_coupling, w2_squared_1d


def _barycenter_2d(quick: bool) -> Case:
    # the same problem in --quick (about 15 s): on smaller ones POT's network simplex is
    # cheap while privot's Sinkhorn budget (50 x 100 iterations) is not, so the goal
    # is only meaningful at this size
    k, n, m = 4, 2000, 48
    rng = np.random.default_rng(0)
    groups = [rng.random((n, 2)) for _ in range(k)]
    pooled = np.concatenate(groups)
    init = pooled[np.random.default_rng(1).choice(pooled.shape[0], m, replace=False)]
    weights = [np.full(n, 1.0 / n)] * k

    def peer():
        return np.asarray(ot.lp.free_support_barycenter(
            groups, weights, init.copy(), b=np.full(m, 1.0 / m), numItermax=50))

    def check(fit, lp_support):
        ours = barycenter_cost(groups, fit.support)
        lp = barycenter_cost(groups, lp_support)
        rel = ours / lp - 1.0
        assert ours == fit.cost, (ours, fit.cost)
        assert rel <= 5e-3, f"privot's exact cost {ours!r} is {rel:.2%} above the LP's {lp!r}"
        return {"exact_cost_privot": ours, "exact_cost_pot_lp": lp, "rel_diff": rel}

    return Case(name="ot.barycenter_2d",
                workload=f"free-support W2 barycenter, k={k} x {n:,} uniform points in "
                         f"[0,1]^2, m={m}",
                peer="POT ot.lp.free_support_barycenter",
                run_privot=lambda: free_support_barycenter(groups, init=init),
                run_peer=peer, goal=0.6, check=check, repeats=3,
                note="privot at its defaults (reg 1e-3, Sinkhorn + 1 exact polish + exact "
                     "cost) vs POT's exact LP, same init, numItermax=50; exact costs agree "
                     "within 0.5% (asserted)")


def _w2_1d(quick: bool) -> Case:
    n, m = (200_000, 140_000) if quick else (1_000_000, 700_000)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    y = 1.3 * rng.standard_normal(m) + 0.2

    def check(ours, pot):
        cp = quantile_coupling(x, y)
        coupling_value = float(np.dot(cp.mass, (x[cp.i] - y[cp.j]) ** 2))
        rel = abs(ours - float(pot)) / float(pot)
        assert ours == coupling_value, (ours, coupling_value)
        assert rel <= 1e-8, f"W2^2 {ours!r} vs POT {float(pot)!r}: rel diff {rel:.2e}"
        return {"w2sq_privot": ours, "w2sq_pot": float(pot), "rel_diff": rel,
                "equal_to_coupling_path": True}

    return Case(name="ot.w2_1d",
                workload=f"exact 1-D W2^2, {n:,} vs {m:,} points, uniform weights",
                peer="POT ot.wasserstein_1d(p=2)",
                run_privot=lambda: w2_squared_1d(x, y),
                run_peer=lambda: ot.wasserstein_1d(x, y, p=2), goal=0.7, check=check,
                repeats=5,
                note="value path (np.sort + integer quantile grid); bit-identical to the "
                     "coupling path (asserted); POT's float quantiles differ by ~1e-10")


def _private_coreset(quick: bool) -> Case:
    from bench_barycenter_speed import BOUNDS, N_INNER, N_OUTER, SEED, K, M, N, make_groups
    from privot.barycenters import continental_us, private_barycenter

    n = 500 if quick else N
    state: dict = {}

    def setup():
        groups = make_groups(n, np.random.default_rng(SEED))
        units = [BOUNDS.to_unit(g)[0] for g in groups]
        pooled = np.concatenate(units)
        state.update(groups=groups, units=units, region=continental_us(),
                     init=pooled[np.random.default_rng(SEED + 1).choice(pooled.shape[0], M,
                                                                         replace=False)])

    def ours():
        return private_barycenter(state["groups"], bounds=BOUNDS, m=M, epsilon=1.0,
                                  method="coreset", region=state["region"], reg=2e-3,
                                  n_outer=N_OUTER, n_inner=N_INNER, rng=0)

    def peer():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ot.bregman.free_support_sinkhorn_barycenter(
                state["units"], [ot.unif(n)] * K, state["init"].copy(), 2e-3,
                numItermax=N_OUTER, numInnerItermax=N_INNER)

    def check(res, pot_support):
        units = state["units"]
        return {"exact_cost_private_unit": float(barycenter_cost(
                    units, BOUNDS.to_unit(res.support)[0])),
                "exact_cost_pot_sinkhorn_unit": float(barycenter_cost(
                    units, np.asarray(pot_support)))}

    return Case(name="ot.private_coreset_barycenter",
                workload=f"private coreset barycenter, US census regions k={K} x {n:,}, "
                         f"m={M}, eps=1, reg=0.002",
                peer="POT ot.bregman.free_support_sinkhorn_barycenter (non-private)",
                run_privot=ours, run_peer=peer, goal=1.2, setup=setup, check=check,
                repeats=3,
                note="bench_barycenter_speed.py's comparison; inits differ (the private "
                     "release seeds its own); costs recorded, not asserted")


def cases(quick: bool) -> list[Case]:
    return [_barycenter_2d(quick), _w2_1d(quick), _private_coreset(quick)]
