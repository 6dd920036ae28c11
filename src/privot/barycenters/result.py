"""What :func:`~privot.barycenters.private_barycenter` returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot.barycenters.evaluation import evaluate_barycenter
from privot.barycenters.geometry import PublicBounds
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["BarycenterResult"]


@dataclass(frozen=True, eq=False)
class BarycenterResult:
    """A private barycenter and everything needed to judge it.

    Attributes
    ----------
    support : (m, d) array
        The private support points, in the caller's coordinates.
    weights : (m,) array
        Uniform, ``1/m`` (paper 000 Assumption 2).
    method : str
        ``"coreset"`` (paper 000 Alg. 2) or ``"perturbation"`` (Alg. 1 / paper 001
        Thm 5, Prop. 6, with privot's anchored step).
    cost : PrivacyCost
        The guarantee for the data the caller describes: on the population when
        ``population_size`` was given (amplified by subsampling), else on the groups.
    sample_cost : PrivacyCost
        What the mechanism spent on the groups themselves.
    relation : Neighbouring
        ``REPLACE_ONE``: one point of one group replaced (paper 000 Def. 4).
    secure : bool
        False when a seeded generator was used (reproducible, not for publication).
    bounds : PublicBounds
        The public geometry the data were mapped with.
    n_clipped : tuple of int
        Points clipped to the bounds, per group.
    params : dict
        Every setting and calibration value (m, p, depth, d', k', sigma, reg, ...).
    diagnostics : dict
        Sizes and timings (non-private only where stated, e.g. none by default).
    """

    support: np.ndarray
    weights: np.ndarray
    method: str
    cost: PrivacyCost
    sample_cost: PrivacyCost
    relation: Neighbouring
    secure: bool
    bounds: PublicBounds
    n_clipped: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def m(self) -> int:
        """Number of support points."""
        return int(self.support.shape[0])

    def evaluate(self, groups: Sequence[np.ndarray], *,
                 references: dict[str, np.ndarray] | None = None,
                 max_points: int | None = None,
                 rng: np.random.Generator | int | None = None) -> dict[str, float]:
        """Exact cost on ``groups`` and W2 to ``references``; see
        :func:`~privot.barycenters.evaluation.evaluate_barycenter`. Reads the raw
        groups: an evaluation, not a release."""
        return evaluate_barycenter(groups, self.support, p=self.params.get("p", 2),
                                   group_weights=self.params.get("group_weights"),
                                   references=references, max_points=max_points, rng=rng)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (support as nested lists); the exact clipped counts go
        under ``curator_only``, apart from what may be published."""
        return {
            "method": self.method,
            "support": self.support.tolist(),
            "weights": self.weights.tolist(),
            "privacy": {"epsilon": self.cost.epsilon, "delta": self.cost.delta,
                        "sample_epsilon": self.sample_cost.epsilon,
                        "sample_delta": self.sample_cost.delta,
                        "relation": self.relation.value, "secure": self.secure},
            "params": self.params,
            "diagnostics": self.diagnostics,
            "curator_only": {"warning": "exact counts of the raw data: NOT private, do not "
                                        "publish",
                             "n_clipped": list(self.n_clipped)},
        }
