r"""Power-diagram weights that split a weighted point cloud into prescribed masses.

The (semi-)discrete optimal transport from a weighted cloud :math:`\sum_i w_i\delta_{x_i}`
to atoms :math:`a_1..a_m` with masses :math:`b` (squared Euclidean cost) has duals
:math:`\psi` whose power cells :math:`\{x : j = \arg\min_l |x - a_l|^2 - \psi_l\}` carry
the masses :math:`b_j`. For a finite cloud these duals are not unique: an exact LP
solver (POT's network simplex) returns a vertex of the optimal set, and where the cloud
is sparse the boundaries it puts can lie anywhere in a gap. It is also slow when the
atoms are far from the cloud (20,000 x 48 points: 6-20 s).

:func:`power_diagram_weights` instead maximises the entropic semi-dual (Cuturi and
Peyré 2018; Genevay et al. 2016)

.. math::

    G_\varepsilon(\psi) = \sum_i w_i\,\Big(-\varepsilon\log\sum_j
        e^{(\psi_j - C_{ij})/\varepsilon}\Big) + \sum_j b_j\psi_j,
    \qquad C_{ij} = |x_i - a_j|^2,

(smooth and concave; gradient :math:`b - \pi^\top w`, Hessian
:math:`-\varepsilon^{-1}\sum_i w_i(\mathrm{diag}\,\pi_i - \pi_i\pi_i^\top)` with
:math:`\pi_{ij}` the soft assignment) by damped Newton steps (Kitagawa, Mérigot and
Thibert 2019 do the same for the unregularised semi-discrete problem), with
:math:`\varepsilon` decreased geometrically and each stage warm-started from the last.
Its maximiser is unique up to a constant and tends, as :math:`\varepsilon \to 0`, to one
particular (central) optimal dual. The stages stop as soon as the *hard* power cells
carry the masses within ``tolerance``, when a stage's Newton steps no longer converge
(the regularisation has become finer than the cloud resolves), or after ``max_stages``:
the work is bounded by public sizes. The answer is the converged stage whose hard cells
come closest to the targets.

Privacy
-------
None here: this module takes no privacy parameter and adds no noise (``privot.ot``
knows nothing about privacy). In privot its only caller is the noisy Lloyd step
(:mod:`privot.barycenters.lloyd_perturbation`), which passes released values only (a
public subsample of a private coreset's points, reweighted by released noisy counts)
and the released atoms: post-processing, so it spends nothing. What a release path
needs from it is totality, and it has it: the work is bounded by the sizes (at most
``max_stages`` x :data:`NEWTON_STEPS` x :data:`LINE_SEARCH_STEPS` evaluations of
:math:`P \times m` arrays), and it never raises on numerics (the Voronoi weights
instead, whatever numpy's error settings).
"""

from __future__ import annotations

import numpy as np

from privot._threads import blas_limit
from privot._validation import check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot._exact import squared_euclidean

__all__ = ["power_diagram_weights"]

#: Geometric factor between successive entropic regularisations.
EPS_FACTOR = 10.0 ** -0.5
#: At most this many Newton steps per regularisation.
NEWTON_STEPS = 10
#: Halvings of a Newton step before the stage gives up (and the next, sharper, starts).
LINE_SEARCH_STEPS = 12
#: A regularisation's Newton steps stop when every soft mass is this close to its
#: target, relative (the hard cells are checked against the looser ``tolerance``).
NEWTON_TOLERANCE = 1e-3


def _soft(psi: np.ndarray, cost: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float
          ) -> tuple[float, np.ndarray]:
    """The semi-dual's value and the soft assignment (P, m) at ``psi``."""
    # the same operations in the same order as (psi - cost) / eps, exp(z - top), e / s,
    # in one (P, m) buffer: the same bits, without four (P, m) temporaries per call
    e = np.subtract(psi[None, :], cost)
    e /= eps
    top = e.max(axis=1, keepdims=True)
    e -= top
    np.exp(e, out=e)
    s = e.sum(axis=1, keepdims=True)
    value = -eps * (np.log(s[:, 0]) + top[:, 0])
    e /= s
    return float(w @ value + b @ psi), e


def _hard_masses(psi: np.ndarray, cost: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.bincount(np.argmin(cost - psi[None, :], axis=1), weights=w,
                       minlength=cost.shape[1])


def power_diagram_weights(points: np.ndarray, weights: np.ndarray, atoms: np.ndarray,
                          masses: np.ndarray | None = None, *, tolerance: float = 0.02,
                          max_stages: int = 20) -> np.ndarray:
    r"""Weights :math:`\psi` (m,) whose power cells split ``points`` into ``masses``.

    Parameters
    ----------
    points : (P, d) array
    weights : (P,) array
        Non-negative, not all zero (normalised here).
    atoms : (m, d) array
    masses : (m,) array, optional
        Positive target masses (normalised here); default uniform.
    tolerance : float
        Stop when every hard cell's mass is within ``tolerance`` of its target, relative
        (coincident atoms, which no power diagram separates, count as one atom of their
        summed target).
    max_stages : int
        At most this many regularisations, from the cloud's mean cost spread down by
        :data:`EPS_FACTOR` each.

    Returns
    -------
    (m,) array
        :math:`\psi` with mean zero: of the stages whose Newton steps converged, the one
        whose hard cells come closest to the targets (zeros, the Voronoi diagram, if
        none did or the cloud is empty).
    """
    x = np.asarray(points, dtype=np.float64)
    a = np.asarray(atoms, dtype=np.float64)
    m = len(a)
    if x.ndim != 2 or a.ndim != 2 or (len(x) and x.shape[1] != a.shape[1]):
        raise InvalidDataError(f"points and atoms must be (P, d) and (m, d) arrays, got "
                               f"{x.shape} and {a.shape}")
    if masses is not None and not (np.shape(masses) == (m,) and np.all(np.asarray(masses) > 0)):
        raise InvalidParameterError("masses", masses, f"{m} positive numbers")
    if not (isinstance(tolerance, (int, float)) and tolerance > 0):
        raise InvalidParameterError("tolerance", tolerance, "a number > 0")
    check_int(max_stages, "max_stages", minimum=1)
    # exponentials underflow by design and a caller may have made numpy raise on that;
    # the answer must not depend on the caller's error settings (release paths are total)
    try:
        # one BLAS thread: the Hessian's (m, P) x (P, m) product is small in its output and
        # long in its reduction; with two OpenBLAS threads its last bits differed from
        # one thread's (the weights depended on the core count), and on a busy 2-core
        # machine the threads waited on each other (issue 27, m = 48, P = 10,000: 7-37 ms
        # a product with two threads, 2.3 ms with one)
        with np.errstate(all="ignore"), blas_limit(1):
            return _weights(x, weights, a, masses, tolerance, max_stages)
    except (FloatingPointError, np.linalg.LinAlgError):
        return np.zeros(m)


def _weights(x: np.ndarray, weights: np.ndarray, a: np.ndarray,
             masses: np.ndarray | None, tolerance: float, max_stages: int) -> np.ndarray:
    m = len(a)
    w = np.asarray(weights, dtype=np.float64)
    if len(x) == 0 or m == 0 or not w.sum() > 0:
        return np.zeros(m)
    w = w / w.sum()
    b = np.full(m, 1.0 / m) if masses is None else np.asarray(masses, np.float64)
    b = b / b.sum()
    cost = squared_euclidean(x, a)  # (P, m)
    eps = float(w @ (cost.max(axis=1) - cost.min(axis=1)))
    if not eps > 0:  # every point equidistant from every atom: any psi is as good
        return np.zeros(m)
    # coincident atoms (to 1e-9 of their scale: a solver's output repeats an atom up to
    # rounding) have the same cells whatever psi (ties go to the lowest index): their
    # masses are checked together
    scale = float(np.abs(a).max()) + 1e-300
    _, same = np.unique(np.round(a / scale, 9), axis=0, return_inverse=True)
    same = same.ravel()
    b_same = np.bincount(same, weights=b)
    psi = np.zeros(m)
    best, best_dev = np.zeros(m), np.inf
    for _ in range(max_stages):
        psi, converged = _newton(psi, cost, w, b, eps)
        if not (converged and np.all(np.isfinite(psi))):
            # too sharp to solve well (what is left lies inside clumps of near-coincident
            # points, which no power diagram splits at this scale): keep the best stage
            break
        hard = np.bincount(same, weights=_hard_masses(psi, cost, w), minlength=len(b_same))
        dev = float(np.abs(hard / b_same - 1.0).max())
        if dev < best_dev:
            best, best_dev = psi.copy(), dev
        if best_dev <= tolerance:
            break
        eps *= EPS_FACTOR
    return best - best.mean()


def _newton(psi: np.ndarray, cost: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float
            ) -> tuple[np.ndarray, bool]:
    """Damped Newton ascent of the semi-dual at one ``eps``; (psi, whether it converged)."""
    m = len(b)
    ones = np.ones((m, m))
    f, pi = _soft(psi, cost, w, b, eps)
    for _ in range(NEWTON_STEPS):
        mass = w @ pi
        grad = b - mass
        if np.abs(grad / b).max() < NEWTON_TOLERANCE:
            return psi, True
        hess = (np.diag(mass) - (pi * w[:, None]).T @ pi) / eps  # -Hessian, PSD
        scale = np.trace(hess) / m + 1e-300
        # the constant direction is the kernel: the ones term fixes it, the ridge keeps
        # atoms with no soft mass solvable
        try:
            step = np.linalg.solve(hess + scale * (1e-9 * np.eye(m) + ones), grad)
        except np.linalg.LinAlgError:
            return psi, False
        t = 1.0
        for _ in range(LINE_SEARCH_STEPS):  # Armijo backtracking (concave semi-dual)
            f_new, pi_new = _soft(psi + t * step, cost, w, b, eps)
            # with slack for rounding in f at small eps
            if f_new >= f + 1e-4 * t * (grad @ step) - 1e-12 * abs(f):
                break
            t *= 0.5
        else:
            return psi, False
        psi, f, pi = psi + t * step, f_new, pi_new
    mass = w @ pi
    return psi, bool(np.abs((b - mass) / b).max() < NEWTON_TOLERANCE)
