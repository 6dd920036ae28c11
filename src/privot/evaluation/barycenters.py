r"""Exact diagnostics of a barycenter: its cost and its W2 distance to another support.

The barycenters' part of :mod:`privot.evaluation` (``privot.barycenters.evaluation``
re-exports it).

.. math:: \mathrm{cost}(\nu) = \sum_{i=1}^k \beta_i\, W_p^p(\mu_i, \nu)

computed with exact optimal transport (POT's network simplex), in the caller's units
(squared degrees for longitude/latitude data and p = 2, as in paper 000 Fig. 3).
These read the sensitive groups: they are for evaluation (curator-only), not for release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from privot.ot import barycenter_cost, wasserstein_distance

__all__ = ["barycenter_w2", "evaluate_barycenter"]


def barycenter_w2(support_a: np.ndarray, support_b: np.ndarray, *,
                  weights_a: np.ndarray | None = None,
                  weights_b: np.ndarray | None = None) -> float:
    """Exact :math:`W_2` between two barycenter supports (uniform weights by default)."""
    return float(wasserstein_distance(support_a, support_b, a=weights_a, b=weights_b, p=2))


def evaluate_barycenter(groups: Sequence[np.ndarray], support: np.ndarray, *,
                        p: float = 2, group_weights: np.ndarray | None = None,
                        references: Mapping[str, np.ndarray] | None = None,
                        max_points: int | None = None,
                        rng: np.random.Generator | int | None = None) -> dict[str, float]:
    r"""``cost`` of ``support`` on ``groups`` and its :math:`W_2` to each reference support.

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays
        Caller coordinates.
    support : (m, d) array
        Uniform weights.
    p : float
        Order of the cost.
    group_weights : (k,) array, optional
        :math:`\beta`, default uniform.
    references : mapping of name to (m', d) array, optional
        Adds ``"w2_to_<name>"`` for each.
    max_points : int, optional
        Evaluate on a uniform subsample of at most this many points per group (exact OT
        on ``n x m`` costs grows with ``n``; stated by the caller when used).
    rng : Generator or int, optional
        For the subsample.

    Returns
    -------
    dict
        ``{"cost": ..., "w2_to_<name>": ...}``.
    """
    gs = list(groups)
    if max_points is not None:
        gen = np.random.default_rng(rng)
        gs = [g if len(g) <= max_points else g[gen.choice(len(g), max_points, replace=False)]
              for g in gs]
    out = {"cost": float(barycenter_cost(gs, support, group_weights=group_weights, p=p))}
    for name, ref in (references or {}).items():
        out[f"w2_to_{name}"] = barycenter_w2(support, ref)
    return out
