"""Sampling hot spots (issue 27): the entropic WPM's solve against the dense matrix
products its iterations need, and k-RR's sample against a vectorised numpy k-RR."""

from __future__ import annotations

import math

import numpy as np

from _common import checkin_users
from compare.case import Case, keep_rate_check

SIDE = 20  # a 20 x 20 grid: k = k_v = 400 cells
EPS_WPM, LAM_REL, N_ITER = 2.0, 0.01, 40  # the release path's defaults (n_iter = 40)
EPS_KRR = 1.0


def _grid(side: int) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"), -1)
    return g.reshape(-1, 2) / (side - 1)


def _wpm_case(quick: bool) -> Case:
    from privot.sampling.base_measure import best_uniform_base_measure
    from privot.sampling.cost import cost_matrix
    from privot.sampling.wpm_entropic import SCALING_CHUNK, wpm_entropic

    n = 1000 if quick else 5000
    users = checkin_users(n, SIDE, np.random.default_rng(0))
    cost = cost_matrix(_grid(SIDE), _grid(SIDE), metric="euclidean", p=1.0)
    m = best_uniform_base_measure(cost, EPS_WPM)
    lam = LAM_REL * float(cost.max())
    kernel = np.exp(-(cost - cost.min()) / lam)  # the solver's linear-scale kernel
    kernel_t = np.ascontiguousarray(kernel.T)

    def run_privot():
        return wpm_entropic(users, cost, m, EPS_WPM, lam=lam, max_iter=N_ITER, tol=0.0,
                            on_nonconvergence="ignore", on_failure="flag")

    def run_peer():
        # per chunk of users: (N_ITER + 1) products K v, N_ITER products K^T u and one
        # (K o C) v for the cost, as the solver's loop; no projection, no divisions
        out = None
        for start in range(0, n, SCALING_CHUNK):
            v = users[start:start + SCALING_CHUNK] + 1.0
            a, b = np.empty_like(v), np.empty_like(v)
            for _ in range(N_ITER + 1):
                np.matmul(v, kernel_t, out=a)
                np.matmul(a, kernel, out=b)
            out = b
        return out

    def check(res, _peer) -> dict:
        nu = np.asarray(res.nu)
        return {"users": int(nu.shape[0]), "method": res.method,
                "max_row_sum_error": float(np.max(np.abs(nu.sum(axis=1) - 1.0))),
                "failed": int(np.count_nonzero(res.failed))}

    return Case(name="sampling.wpm_entropic",
                workload=f"entropic WPM, {n:,} check-in users, 20 x 20 grid, Euclidean p=1, "
                         f"lam=0.01 max C, {N_ITER} iterations (tol=0, the release path)",
                peer="numpy: the same 2 x 41 dense (256, 400) @ (400, 400) products per chunk",
                run_privot=run_privot, run_peer=run_peer, goal=1.5, check=check,
                repeats=3,
                note="both at the default BLAS threading (privot limits its own products' "
                     "BLAS threads by wpm_entropic.blas_threads: one here)")


def _krr_case(quick: bool) -> Case:
    from privot.sampling import make_mechanism

    n, k = (20_000 if quick else 100_000), SIDE * SIDE
    cells = np.random.default_rng(1).integers(0, k, n)
    mech = make_mechanism("krr", points=_grid(SIDE), epsilon=EPS_KRR)
    keep = math.exp(EPS_KRR) / (math.exp(EPS_KRR) + k - 1)
    gen = np.random.default_rng(2)

    def run_privot():
        return mech.sample_cells(cells).indices  # rng=None: the OS CSPRNG (publishable)

    def run_peer():
        kept = gen.random(n) < keep
        other = gen.integers(0, k - 1, n)
        other += other >= cells  # a uniform other cell
        return np.where(kept, cells, other)

    check = keep_rate_check(cells, keep)

    return Case(name="sampling.krr_sample",
                workload=f"k-RR, {n:,} users given by their cell, k = {k}, eps = {EPS_KRR:g}",
                peer="numpy k-RR (default_rng: keep w.p. p, else a uniform other cell)",
                run_privot=run_privot, run_peer=run_peer, goal=2.0, check=check, repeats=9,
                note="privot: RandomizedResponse.sample_cells, secure OS entropy, certified "
                     "snapped channel (built once per mechanism, in the warm-up)")


def cases(quick: bool) -> list[Case]:
    return [_wpm_case(quick), _krr_case(quick)]
