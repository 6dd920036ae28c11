"""What :func:`~privot.barycenters.private_barycenter` returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot.barycenters.evaluation import evaluate_barycenter
from privot.barycenters.geometry import PublicBounds
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["PUBLIC_INPUTS", "BarycenterResult"]

#: What the replace-one guarantee takes as public, said in every release.
PUBLIC_INPUTS = ("the group labels, the number of groups and each group's size (rows, "
                 "unusable ones included) are published exactly: replace-one neighbouring "
                 "keeps them fixed, so the guarantee covers the rows' coordinates only")


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
        **Curator-only.** Usable rows clipped into the bounds, per group (exact).
    params : dict
        Every setting and calibration value (m, p, depth, d', k', sigma, reg, ...);
        public parameters only (group sizes are public by the neighbouring relation).
    diagnostics : dict
        **Curator-only.** Timings and solver details (``seconds_*`` grow with the data).
    n_unusable : tuple of int
        **Curator-only.** Rows with a missing or non-numeric coordinate, per group:
        left out of the mechanism, kept in the public group sizes.

    Notes
    -----
    :meth:`release_dict` is the publishable part (a function of the public parameters
    and the noisy release only); :meth:`curator_report` holds the exact counts and
    timings, which must not be published (DESIGN.md, "Publishable output").
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
    n_unusable: tuple[int, ...] = ()

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

    def release_dict(self) -> dict[str, Any]:
        """The publishable part, JSON-ready: support, weights, guarantee, parameters.

        A function of the public parameters and the noisy release only. It states what
        the guarantee takes as public: the group labels and sizes are published exactly.
        """
        return {
            "method": self.method,
            "support": self.support.tolist(),
            "weights": self.weights.tolist(),
            "privacy": {"epsilon": self.cost.epsilon, "delta": self.cost.delta,
                        "sample_epsilon": self.sample_cost.epsilon,
                        "sample_delta": self.sample_cost.delta,
                        "unit": "one row (one person in one group)",
                        "relation": self.relation.value, "secure": self.secure,
                        "public_by_assumption": PUBLIC_INPUTS},
            "bounds": {"kind": self.bounds.kind, "lower": self.bounds.lower.tolist(),
                       "upper": self.bounds.upper.tolist()},
            "params": self.params,
        }

    def curator_report(self) -> dict[str, Any]:
        """Exact counts and timings of the raw data: **not private, never publish**."""
        return {"rows_clipped_per_group": list(self.n_clipped),
                "rows_unusable_per_group": list(self.n_unusable),
                "diagnostics": self.diagnostics}

    def to_dict(self) -> dict[str, Any]:
        """``{"release": release_dict(), "curator_only": curator_report()}``: the two
        audiences apart, for a caller who stores both (publish only ``release``)."""
        return {"release": self.release_dict(), "curator_only": self.curator_report()}
