"""Ground costs ``C_ij = d(x_i, v_j)^p`` between public input and output points (paper 003).

The Wasserstein Projection Mechanism (Def. 3.1) and its solvers take the cost matrix
:math:`C \\in \\mathbb{R}_+^{k \\times k_v}`, :math:`C_{ij} = d(x_i, v_j)^p` (Sec. 4),
between the ``k`` public input points and the ``k_v`` public output points.

Privacy
-------
Public-geometry computation: the points and the metric are public parameters of the
mechanism, never derived from a user's data. No release happens here.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from privot._validation import check_points
from privot.errors import InvalidDataError, InvalidParameterError
from privot.sampling._checks import check_order

__all__ = ["COST_METRICS", "cost_matrix"]

#: Ground metrics of :func:`cost_matrix`.
COST_METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine", "geodesic")


def cost_matrix(input_points: object, output_points: object, *, metric: str = "euclidean",
                p: float = 1.0) -> np.ndarray:
    """Cost matrix :math:`C_{ij} = d(x_i, v_j)^p` of the WPM (Sec. 4).

    Parameters
    ----------
    input_points : (k, d) array_like
        The public input points :math:`x_i` (a 1-D array is read as ``(k, 1)``).
    output_points : (k_v, d) array_like
        The public output points :math:`v_j`, same dimension ``d``.
    metric : str, default "euclidean"
        Ground distance :math:`d`:

        * ``"euclidean"``: :math:`\\|x - v\\|_2`;
        * ``"sqeuclidean"``: :math:`\\|x - v\\|_2^2` (not a metric; with ``p = 1`` it
          gives the :math:`W_2^2` cost directly);
        * ``"cityblock"``: :math:`\\|x - v\\|_1`; ``"chebyshev"``: :math:`\\|x - v\\|_\\infty`;
        * ``"cosine"``: :math:`1 - \\cos(x, v)`, clipped at 0 (the paper's MovieLens
          embeddings, Sec. 5.2; a dissimilarity, not a metric);
        * ``"geodesic"``: the angle between the directions of ``x`` and ``v`` in
          :math:`[0, \\pi]`, i.e. the great-circle distance on the unit sphere
          (App. H), computed as :math:`2 \\operatorname{atan2}(\\|a - b\\|, \\|a + b\\|)`
          for the unit vectors ``a, b`` (accurate for small and near-antipodal angles).

        ``"cosine"`` and ``"geodesic"`` need non-zero points.
    p : float, default 1
        Order :math:`p \\ge 1` of the Wasserstein distance.

    Returns
    -------
    (k, k_v) array
        Non-negative, finite.

    Raises
    ------
    InvalidDataError
        Non-finite, empty or mis-shaped points, different dimensions, or a zero point
        with ``"cosine"``/``"geodesic"``.
    InvalidParameterError
        Unknown ``metric`` or ``p < 1``.
    """
    x = check_points(input_points, "input_points")
    v = check_points(output_points, "output_points")
    if x.shape[1] != v.shape[1]:
        raise InvalidDataError(
            f"input_points have dimension {x.shape[1]} but output_points have dimension "
            f"{v.shape[1]}; both must live in the same space")
    if not isinstance(metric, str) or metric not in COST_METRICS:
        raise InvalidParameterError("metric", metric, f"one of {COST_METRICS}")
    pp = check_order(p)
    dist = _distance(x, v, metric)
    if pp == 1.0:
        return dist
    if pp == 2.0 and metric == "euclidean":
        return cdist(x, v, metric="sqeuclidean")
    return dist**pp


def _distance(x: np.ndarray, v: np.ndarray, metric: str) -> np.ndarray:
    if metric in ("cosine", "geodesic"):
        xu = _unit(x, "input_points", metric)
        vu = _unit(v, "output_points", metric)
        if metric == "cosine":
            return np.maximum(1.0 - np.clip(xu @ vu.T, -1.0, 1.0), 0.0)
        return 2.0 * np.arctan2(cdist(xu, vu), cdist(xu, -vu))
    return cdist(x, v, metric=metric)


def _unit(points: np.ndarray, name: str, metric: str) -> np.ndarray:
    norms = np.linalg.norm(points, axis=1)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise InvalidDataError(
            f"{name}[{int(zero[0])}] is the zero vector; metric={metric!r} needs non-zero "
            "points (a direction)")
    return points / norms[:, None]
