"""Batched, stabilised Sinkhorn for the free-support barycenter (private).

The k entropic problems :math:`\\mu_i \\to \\nu` are solved together on padded
``(k, n, m)`` arrays (``n = max_i n_i``; padding rows have weight 0 and carry no mass).
The plan of group :math:`i` is

.. math::

    P_{i, lj} = \\tilde a_{il}\\, K_{i, lj}\\, \\tilde b_{ij}, \\qquad
    K_{i, lj} = \\exp\\big((f_{il} + g_{ij} - C_{i, lj})/\\varepsilon\\big),

with absorbed potentials :math:`(f, g)` and scalings :math:`(\\tilde a, \\tilde b)` close
to the weights :math:`(a, b)` (Schmitzer 2019, "Stabilized sparse scaling algorithms for
entropy regularized transport problems"). The scaling updates
:math:`\\tilde a = a / (K \\tilde b)`, :math:`\\tilde b = b / (K^T \\tilde a)` are two
batched matrix-vector products; when a scaling leaves :math:`[e^{-L}, e^{L}]` times its
weight it is absorbed into the potentials and :math:`K` is rebuilt. Each solve starts by
re-anchoring the potentials with hard c-transforms (rows, then columns), so every row
and every column of :math:`K` has a largest entry of exactly 1 (none underflows or
overflows, whatever the support did since the last solve). If a scaling still becomes
zero or non-finite (an atom far from every point of a group), the solve is redone with
log-domain iterations; if those fail too, :class:`~privot.errors.ConvergenceError`.

Privacy
-------
Non-private numerics: ``epsilon``/``reg`` here is the entropic regularisation, not a
privacy budget. The private barycenters run this solver on private coresets only, as
post-processing (``privot.barycenters.api``, paper 000 Alg. 2); no unit, relation or
sensitivity is stated here because nothing is released here.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from privot.errors import ConvergenceError

__all__ = ["Padded", "pad_groups", "batched_cost", "solve_entropic", "Scalings"]

#: Absorb a scaling into its potential when it leaves [exp(-L), exp(L)] times its weight.
_ABSORB_LOG = 50.0
#: How often (in iterations) the scalings are checked for absorption.
_CHECK_EVERY = 10
#: Smallest normal float64: kernel entries below it are flushed to zero (see _kernel).
_TINY = np.finfo(np.float64).tiny


class Padded:
    """k point clouds padded to ``(k, n, d)`` with weights ``(k, n)`` (0 on padding)."""

    def __init__(self, clouds: list[np.ndarray], weights: list[np.ndarray]) -> None:
        k = len(clouds)
        n = max(x.shape[0] for x in clouds)
        d = clouds[0].shape[1]
        self.x = np.zeros((k, n, d))
        self.a = np.zeros((k, n))
        self.mask = np.zeros((k, n), dtype=bool)
        for i, (x, w) in enumerate(zip(clouds, weights, strict=False)):
            self.x[i, : x.shape[0]] = x
            self.a[i, : x.shape[0]] = w
            self.mask[i, : x.shape[0]] = True
        with np.errstate(divide="ignore"):
            self.log_a = np.log(self.a)
        self.sq = np.sum(self.x**2, axis=2)  # (k, n)


def pad_groups(clouds: list[np.ndarray], weights: list[np.ndarray]) -> Padded:
    """Pad unequal groups with zero-weight rows."""
    return Padded(clouds, weights)


def batched_cost(pad: Padded, y: np.ndarray, p: float) -> np.ndarray:
    """:math:`C_{i, lj} = \\|x_{il} - y_j\\|^p`, shape ``(k, n, m)``."""
    sq = pad.sq[:, :, None] + np.sum(y**2, axis=1)[None, None, :] - 2.0 * (pad.x @ y.T)
    np.maximum(sq, 0.0, out=sq)
    if p == 2:
        return sq
    dist = np.sqrt(sq, out=sq)
    return dist if p == 1 else dist**p


class Scalings:
    """A solved entropic problem: potentials, scalings and kernel of the plan."""

    def __init__(self, f: np.ndarray, g: np.ndarray, au: np.ndarray, bv: np.ndarray,
                 kernel: np.ndarray, n_iter: int, error: float, log_domain: bool) -> None:
        self.f, self.g, self.au, self.bv, self.kernel = f, g, au, bv, kernel
        self.n_iter, self.error, self.log_domain = n_iter, error, log_domain

    def plans(self) -> np.ndarray:
        """The plans ``(k, n, m)``."""
        return self.au[:, :, None] * self.kernel * self.bv[:, None, :]

    def barycentric(self, x: np.ndarray) -> np.ndarray:
        """:math:`P_i^T X_i` for every group, ``(k, m, d)``, without forming the plans."""
        kt_ax = np.matmul(np.swapaxes(self.kernel, 1, 2), self.au[:, :, None] * x)
        return self.bv[:, :, None] * kt_ax

    def column_sums(self) -> np.ndarray:
        """:math:`P_i^T 1`, ``(k, m)``."""
        return self.bv * np.matmul(self.au[:, None, :], self.kernel)[:, 0, :]


def _kernel(f: np.ndarray, g: np.ndarray, cost: np.ndarray, eps: float) -> np.ndarray:
    z = f[:, :, None] + g[:, None, :] - cost
    z /= eps
    with np.errstate(under="ignore"):
        np.exp(z, out=z)
    # Flush subnormal entries (exp(z) for z in about [-745, -708]; ~1.6% of the kernel
    # at reg=1e-3 on [0,1]^2) to zero: on CPUs without a fast subnormal path a mat-vec
    # with them took 18 ms instead of 0.34 ms (issue 27). The results do not change: a
    # term below ulp/2 of a row or column sum is absorbed exactly, and every row and
    # column holds normal entries (the anchored kernel has a 1 in each); tests check
    # the barycenter bit for bit against the unflushed kernel.
    np.putmask(z, z < _TINY, 0.0)
    return z


def _anchor(g: np.ndarray, cost: np.ndarray, valid: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Hard c-transforms :math:`f_l = \\min_j (C_{lj} - g_j)`, then
    :math:`g_j \\leftarrow \\min_l (C_{lj} - f_l)` over the real rows.

    Afterwards :math:`f_l + g_j - C_{lj} \\le 0` everywhere with equality somewhere in
    every row and every column (the second step can only raise ``g``, so the row maxima
    stay at 0): no row or column of the kernel underflows. ``g`` is unchanged for the
    columns that are a row minimiser, which is most of them near the fixed point.
    """
    z = cost - g[:, None, :]
    f = np.min(z, axis=2)  # (k, n)
    z = cost - f[:, :, None]
    z[~valid] = np.inf
    return f, np.min(z, axis=1)


def solve_entropic(pad: Padded, b: np.ndarray, cost: np.ndarray, g: np.ndarray, eps: float,
                   max_iter: int, tol: float, f: np.ndarray | None = None) -> Scalings:
    """Entropic plans of the k problems, warm-started from column potentials ``g``.

    Stabilised scaling iterations; on numerical failure the same solve is redone in the
    log domain. With row potentials ``f`` (a warm start from the previous solve), the
    kernel is first built from ``(f, g)`` as they are, and re-anchored only if that fails.
    Stops when the largest L1 row-marginal error over the groups is at most
    ``tol`` (columns are exact after every iteration) or after ``max_iter`` iterations.
    """
    out = None
    if f is not None:
        out = _solve_scaling(pad, b, cost, g, eps, max_iter, tol, f)
    if out is None:
        out = _solve_scaling(pad, b, cost, g, eps, max_iter, tol)
    if out is None:
        out = _solve_log(pad, b, cost, g, eps, max_iter, tol)
    return out


def _solve_scaling(pad: Padded, b: np.ndarray, cost: np.ndarray, g0: np.ndarray, eps: float,
                   max_iter: int, tol: float, f0: np.ndarray | None = None
                   ) -> Scalings | None:
    a, valid = pad.a, pad.mask
    if f0 is None:
        f, g = _anchor(g0, cost, valid)
    else:
        f, g = f0.copy(), g0.copy()
    with np.errstate(over="ignore"):
        kernel = _kernel(f, g, cost, eps)
    k, _, m = cost.shape
    bv = np.broadcast_to(b, (k, m)).copy()
    kbv = np.matmul(kernel, bv[:, :, None])[:, :, 0]
    if not np.all(np.isfinite(kbv)) or np.any(kbv[valid] <= 0):
        return None
    au = np.zeros_like(a)
    err = np.inf
    n_iter = 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for n_iter in range(1, max_iter + 1):  # noqa: B007 (used after the loop)
            np.divide(a, kbv, out=au, where=valid)
            ktau = np.matmul(au[:, None, :], kernel)[:, 0, :]
            bv = b / ktau
            kbv = np.matmul(kernel, bv[:, :, None])[:, :, 0]
            err = float(np.max(np.sum(np.abs(au * kbv - a), axis=1)))
            if not np.isfinite(err) or not np.all(np.isfinite(bv)):
                return None
            if err <= tol:
                break
            if n_iter % _CHECK_EVERY == 0:
                la = np.log(np.where(valid, au / np.where(valid, a, 1.0), 1.0))
                lb = np.log(bv / b)
                if (np.max(np.abs(la)) > _ABSORB_LOG or np.max(np.abs(lb)) > _ABSORB_LOG
                        or np.any(kbv[valid] <= 0)):
                    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
                        return None
                    f = f + eps * la
                    g = g + eps * lb
                    kernel = _kernel(f, g, cost, eps)
                    bv = np.broadcast_to(b, (k, m)).copy()
                    kbv = np.matmul(kernel, bv[:, :, None])[:, :, 0]
                    if np.any(kbv[valid] <= 0) or not np.all(np.isfinite(kbv)):
                        return None
        la = np.log(np.where(valid, au / np.where(valid, a, 1.0), 1.0))
        lb = np.log(bv / b)
    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        return None
    return Scalings(f + eps * la, g + eps * lb, au, bv, kernel, n_iter, err, False)


def _solve_log(pad: Padded, b: np.ndarray, cost: np.ndarray, g0: np.ndarray, eps: float,
               max_iter: int, tol: float) -> Scalings:
    """Log-domain fallback: exact soft c-transforms (``scipy.special.logsumexp``)."""
    a, log_a, valid = pad.a, pad.log_a, pad.mask
    log_b = np.log(b)
    c_eps = cost / eps
    f, g = _anchor(g0, cost, valid)
    err = np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (used after the loop)
        g = -eps * logsumexp(log_a[:, :, None] + f[:, :, None] / eps - c_eps, axis=1)
        f_new = -eps * logsumexp(log_b[None, None, :] + g[:, None, :] / eps - c_eps, axis=2)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(f_new[valid]))):
            raise ConvergenceError(
                f"free-support Sinkhorn barycenter: log-domain potentials became non-finite "
                f"(reg={eps!r}); the scaling iterations had failed before. Check that the "
                "points are of order one (costs are absolute) or increase reg")
        with np.errstate(over="ignore"):
            err = float(np.max(np.sum(np.where(valid, a * np.abs(np.expm1(
                np.where(valid, (f - f_new) / eps, 0.0))), 0.0), axis=1)))
        f = f_new if n_iter < max_iter and err > tol else f
        if err <= tol:
            break
    kernel = _kernel(f, g, cost, eps)
    k, _, m = cost.shape
    return Scalings(f, g, a.copy(), np.broadcast_to(b, (k, m)).copy(), kernel, n_iter, err,
                    True)
