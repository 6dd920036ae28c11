"""Gaussian Johnson-Lindenstrauss projections.

A matrix :math:`G \\in \\mathbb{R}^{d' \\times d}` with i.i.d. :math:`N(0, 1/d')`
entries preserves every squared pairwise distance of ``n`` points within a factor
:math:`1 \\pm \\varepsilon` with high probability once :math:`d' = O(\\log n /
\\varepsilon^2)` (Dasgupta and Gupta, "An elementary proof of a theorem of Johnson
and Lindenstrauss", 2003). Used by the private-coreset barycenter (paper 000/001, Alg. 2).

Privacy
-------
No release and no privacy parameter (``epsilon`` here is the JL distortion). The matrix
is drawn from public randomness, independently of any data, so projecting private
outputs is post-processing and projecting a private coreset keeps its guarantee
(paper 000, Alg. 2 line 1).
"""

from __future__ import annotations

import math

import numpy as np

from privot._validation import _as_float, check_int, check_points, check_probability
from privot.errors import InvalidParameterError
from privot.ot._common import as_generator

__all__ = ["jl_target_dim", "gaussian_jl_matrix", "jl_project"]


def jl_target_dim(n: int, *, distortion: float, failure_probability: float | None = None) -> int:
    """Target dimension of a Gaussian JL projection for ``n`` points.

    With :math:`c(\\varepsilon) = \\varepsilon^2/2 - \\varepsilon^3/3`, one pair's
    squared distance leaves :math:`[(1-\\varepsilon), (1+\\varepsilon)]` times its
    value with probability at most :math:`2\\exp(-d' c(\\varepsilon)/2)`
    (Dasgupta-Gupta, Lemma 2.2). Hence:

    * default (Dasgupta-Gupta, Thm 2.1):
      :math:`d' = \\lceil 4 \\ln n / c(\\varepsilon) \\rceil`, each pair fails with
      probability at most :math:`2/n^2`;
    * with ``failure_probability`` :math:`\\beta`, a union bound over the
      :math:`n(n-1)/2` pairs gives all pairs within the factor with probability
      :math:`\\ge 1 - \\beta` when
      :math:`d' = \\lceil 2 \\ln(n(n-1)/\\beta) / c(\\varepsilon) \\rceil`.

    Parameters
    ----------
    n : int
        Number of points, ``>= 1``.
    distortion : float
        :math:`\\varepsilon \\in (0, 1)`, the allowed relative distortion of squared
        distances.
    failure_probability : float, optional
        :math:`\\beta \\in (0, 1)`; see above.

    Returns
    -------
    int
        :math:`d' \\ge 1`. It does not depend on the ambient dimension ``d``
        (capping it at ``d`` is the caller's choice).
    """
    nn = check_int(n, "n", minimum=1)
    allowed = "a number in (0, 1)"
    eps = _as_float("distortion", distortion, allowed)
    if not (0 < eps < 1):
        raise InvalidParameterError("distortion", distortion, allowed)
    c = eps**2 / 2 - eps**3 / 3
    if failure_probability is None:
        k = 4.0 * math.log(nn) / c
    else:
        beta = check_probability(failure_probability, "failure_probability",
                                 open_left=True, open_right=True)
        pairs = nn * (nn - 1)
        k = 2.0 * math.log(pairs / beta) / c if pairs > 0 else 0.0
    return max(1, math.ceil(k))


def gaussian_jl_matrix(d: int, *, dim: int, rng: np.random.Generator | int) -> np.ndarray:
    """A Gaussian JL matrix :math:`G \\in \\mathbb{R}^{d' \\times d}`, :math:`G_{kl}
    \\sim N(0, 1/d')` i.i.d.

    Parameters
    ----------
    d : int
        Ambient dimension, ``>= 1``.
    dim : int
        Target dimension :math:`d' \\ge 1` (see :func:`jl_target_dim`).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed); global state is never used.

    Returns
    -------
    (dim, d) array
        :math:`E\\|G v\\|^2 = \\|v\\|^2` for every :math:`v`.
    """
    dd = check_int(d, "d", minimum=1)
    k = check_int(dim, "dim", minimum=1)
    gen = as_generator(rng)
    return gen.standard_normal((k, dd)) / math.sqrt(k)


def jl_project(points: np.ndarray, *, dim: int, rng: np.random.Generator | int) -> np.ndarray:
    """Project points with a fresh Gaussian JL matrix: :math:`x_i \\mapsto G x_i`.

    Parameters
    ----------
    points : (n, d) array
        Points to project.
    dim : int
        Target dimension :math:`d'`.
    rng : numpy.random.Generator or int
        Randomness for :math:`G` (an int is a seed). To project other points with the
        same matrix, build it once with :func:`gaussian_jl_matrix`.

    Returns
    -------
    (n, dim) array
        :math:`X G^T`.
    """
    x = check_points(points, "points")
    g = gaussian_jl_matrix(x.shape[1], dim=dim, rng=rng)
    return x @ g.T
