"""Sliced W2 by Monte-Carlo directions, on top of the 1-D closed form (paper 004, Remark 4.2).

.. math::

    SW_2^2(\\mu, \\nu) = \\int_{S^{d-1}} W_2^2(\\theta_\\# \\mu, \\theta_\\# \\nu)\\,
    d\\sigma(\\theta) \\approx \\frac1L \\sum_{l=1}^L
    W_2^2(\\theta_{l\\#} \\mu, \\theta_{l\\#} \\nu),

with :math:`\\theta_l` i.i.d. uniform on the sphere (normalised Gaussians) drawn
from an explicit generator, or given by the caller.
"""

from __future__ import annotations

import numpy as np

from privot._validation import check_finite_array, check_int
from privot.errors import InvalidDataError, InvalidParameterError
from privot.ot._common import as_generator, check_cloud_pair, check_mass_pair
from privot.ot._one_d import _coupling, rank_coupling

__all__ = ["random_directions", "sliced_w2_squared", "sliced_w2_squared_with_grad"]


def random_directions(d: int, *, n_projections: int,
                      rng: np.random.Generator | int) -> np.ndarray:
    """``n_projections`` directions i.i.d. uniform on the unit sphere of :math:`\\mathbb{R}^d`.

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    n_projections : int
        Number of directions ``L >= 1``.
    rng : numpy.random.Generator or int
        Source of randomness (an int is a seed). Global state is never used.

    Returns
    -------
    (L, d) array
        Rows of unit Euclidean norm: :math:`\\theta = Z / \\|Z\\|`, :math:`Z \\sim N(0, I_d)`.
    """
    dd = check_int(d, "d", minimum=1)
    L = check_int(n_projections, "n_projections", minimum=1)
    gen = as_generator(rng)
    z = gen.standard_normal((L, dd))
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    # a zero Gaussian vector has probability 0; redraw would change the stream, so guard only
    norms[norms == 0] = 1.0
    return z / norms


def _directions(d: int, n_projections: int, rng, directions) -> np.ndarray:
    if directions is not None:
        theta = check_finite_array(directions, "directions", ndim=2)
        if theta.shape[1] != d:
            raise InvalidDataError(
                f"directions must have shape (L, {d}) to match the points, got {theta.shape}"
            )
        norms = np.linalg.norm(theta, axis=1)
        if np.any(norms == 0):
            raise InvalidDataError(
                f"directions has a zero row (row {int(np.flatnonzero(norms == 0)[0])}); "
                "each direction must be non-zero (rows are normalised to unit length)"
            )
        return theta / norms[:, None]
    if rng is None:
        raise InvalidParameterError(
            "rng", rng, "a numpy.random.Generator or an int seed (or pass explicit directions)"
        )
    return random_directions(d, n_projections=n_projections, rng=rng)


def _sliced(x, y, a, b, n_projections, rng, directions, want_grad):
    xa, ya = check_cloud_pair(x, y)
    n, m = xa.shape[0], ya.shape[0]
    theta = _directions(xa.shape[1], n_projections, rng, directions)
    L = theta.shape[0]
    px = xa @ theta.T  # (n, L)
    py = ya @ theta.T  # (m, L)
    if a is None and b is None:
        # uniform weights: the rank coupling (paper 004's R) is the same for all directions
        order_x = np.argsort(px, axis=0, kind="stable")
        order_y = np.argsort(py, axis=0, kind="stable")
        rank_i, rank_j, mass_int = rank_coupling(np.arange(1, n + 1, dtype=np.int64) * m,
                                                 np.arange(1, m + 1, dtype=np.int64) * n)
        mass = mass_int / float(n * m)
        sx = np.take_along_axis(px, order_x, axis=0)
        sy = np.take_along_axis(py, order_y, axis=0)
        diff = sx[rank_i] - sy[rank_j]  # (K, L)
        values = mass @ (diff * diff)  # (L,)
        value = float(values.mean())
        if not want_grad:
            return value, None, None
        w = (2.0 / L) * mass[:, None] * diff  # (K, L)
        # rank_i / rank_j are non-decreasing and hit every rank: segment sums
        gx_sorted = np.add.reduceat(w, np.flatnonzero(np.diff(rank_i, prepend=-1)), axis=0)
        gy_sorted = -np.add.reduceat(w, np.flatnonzero(np.diff(rank_j, prepend=-1)), axis=0)
        gx_proj = np.empty_like(px)
        gy_proj = np.empty_like(py)
        np.put_along_axis(gx_proj, order_x, gx_sorted, axis=0)
        np.put_along_axis(gy_proj, order_y, gy_sorted, axis=0)
    else:
        aa, bb = check_mass_pair(a, b, n, m)
        values = np.empty(L)
        gx_proj = np.zeros_like(px)
        gy_proj = np.zeros_like(py)
        for l_ in range(L):
            cp = _coupling(px[:, l_], py[:, l_], aa, bb)
            diff = px[cp.i, l_] - py[cp.j, l_]
            values[l_] = np.dot(cp.mass, diff * diff)
            if want_grad:
                w = (2.0 / L) * cp.mass * diff
                gx_proj[:, l_] = np.bincount(cp.i, weights=w, minlength=n)
                gy_proj[:, l_] = -np.bincount(cp.j, weights=w, minlength=m)
        value = float(values.mean())
        if not want_grad:
            return value, None, None
    # chain rule through the projections x_i -> <theta_l, x_i>
    return value, gx_proj @ theta, gy_proj @ theta


def sliced_w2_squared(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                      b: np.ndarray | None = None, n_projections: int = 50,
                      rng: np.random.Generator | int | None = None,
                      directions: np.ndarray | None = None) -> float:
    """Monte-Carlo sliced squared 2-Wasserstein distance.

    .. math::

        \\widehat{SW}_2^2 = \\frac1L \\sum_{l=1}^L
        W_2^2\\Big(\\sum_i a_i \\delta_{\\langle \\theta_l, x_i\\rangle},
        \\sum_j b_j \\delta_{\\langle \\theta_l, y_j\\rangle}\\Big),

    each 1-D term by the closed form of :func:`w2_squared_1d` (no ``n x m`` matrix).
    POT's ``ot.sliced_wasserstein_distance(x, y, n_projections=L, p=2)`` returns the
    square root of the same estimator (with its own directions).

    Parameters
    ----------
    x : (n, d) array
        First point cloud.
    y : (m, d) array
        Second point cloud; ``m`` may differ from ``n``.
    a, b : (n,) and (m,) arrays, optional
        Weights (uniform by default), same total mass. Uniform weights use one
        rank coupling shared by all directions (fastest).
    n_projections : int, default 50
        Number ``L`` of random directions (ignored when ``directions`` is given).
    rng : numpy.random.Generator or int, optional
        Randomness for the directions; required unless ``directions`` is given.
    directions : (L, d) array, optional
        Explicit directions (rows normalised to unit length).

    Returns
    -------
    float
        :math:`\\widehat{SW}_2^2 \\ge 0`.
    """
    L = check_int(n_projections, "n_projections", minimum=1)
    return _sliced(x, y, a, b, L, rng, directions, want_grad=False)[0]


def sliced_w2_squared_with_grad(x: np.ndarray, y: np.ndarray, *, a: np.ndarray | None = None,
                                b: np.ndarray | None = None, n_projections: int = 50,
                                rng: np.random.Generator | int | None = None,
                                directions: np.ndarray | None = None
                                ) -> tuple[float, np.ndarray, np.ndarray]:
    """Monte-Carlo sliced :math:`W_2^2` and its gradients with respect to both clouds.

    By the chain rule through :math:`x_i \\mapsto \\langle\\theta_l, x_i\\rangle` and
    paper 004, Prop. 3.2:

    .. math::

        \\nabla_{x_i} \\widehat{SW}_2^2 = \\frac1L \\sum_{l=1}^L \\Big(2 \\sum_j
        R^{(l)}_{\\sigma_l(i), \\tau_l(j)} (\\langle\\theta_l, x_i\\rangle
        - \\langle\\theta_l, y_j\\rangle)\\Big)\\,\\theta_l .

    Parameters are those of :func:`sliced_w2_squared`.

    Returns
    -------
    value : float
        :math:`\\widehat{SW}_2^2`.
    grad_x : (n, d) array
        Gradient with respect to ``x`` (subgradient at ties of the projections).
    grad_y : (m, d) array
        Gradient with respect to ``y``.
    """
    L = check_int(n_projections, "n_projections", minimum=1)
    return _sliced(x, y, a, b, L, rng, directions, want_grad=True)
