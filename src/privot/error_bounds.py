"""Error statements: what a release's error will be, from its public parameters only.

Every capability states the error of a planned release before the budget is charged
(issue 28): a bound on the metric that matters for it (EMD for a heatmap, excess W2^2
cost for a barycenter, per-user W1 for a sample, the noise-to-signal ratio of a DP-SGD
step), at a stated confidence, computed from the public parameters only -- so it is
publishable, and the same for any two inputs with the same public parameters. What the
bound cannot cover (a data-dependent part the public cannot know, e.g. the mass outside
the best w-sparse approximation of a heatmap) is named in ``not_covered``, never hidden.

One shape for the four capabilities: :class:`ErrorStatement`, written into
``release.json`` under ``"error"`` (:meth:`ErrorStatement.to_dict`) and held by each
result object as ``result.error``. The derivations live in ``docs/errors/``. (Not
:mod:`privot.errors`, which holds the exceptions.)

Privacy
-------
No release happens here: an :class:`ErrorStatement` is a function of public parameters
(never of the data), so it is publishable before and after the release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privot.errors import InvalidParameterError

__all__ = ["ErrorStatement"]


@dataclass(frozen=True)
class ErrorStatement:
    """The error a release will have, stated from its public parameters.

    Attributes
    ----------
    metric : str
        What is bounded, in words a reader can check (e.g. ``"EMD(release, true
        distribution) - 2 * (mass outside the best w-sparse approximation)"``).
    bound : float
        The bound, in ``units``; ``inf`` where no finite bound holds.
    confidence : float
        Probability (over the noise) with which the bound holds, in (0, 1]; 1 for a
        worst-case bound.
    units : str
        The bound's units (``"cells"``, ``"km"``, ``"squared unit coordinates"``, ...).
    covers : str
        What the bound accounts for (the noise of this mechanism, with these parameters).
    not_covered : str
        The part of the error the public cannot know (data-dependent), stated rather than
        hidden; empty when the bound covers everything.
    derivation : str
        Where it is derived (a file under ``docs/errors/``).
    details : dict
        Further public figures (the bound in other units, its terms), JSON-ready.
    """

    metric: str
    bound: float
    confidence: float
    units: str
    covers: str
    not_covered: str = ""
    derivation: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.bound, (int, float)) and not math.isnan(self.bound)
                and self.bound >= 0):
            raise InvalidParameterError("bound", self.bound, "a number >= 0 (inf allowed)")
        if not (isinstance(self.confidence, (int, float)) and 0 < self.confidence <= 1):
            raise InvalidParameterError("confidence", self.confidence, "a number in (0, 1]")

    def to_dict(self) -> dict[str, Any]:
        """The ``"error"`` entry of ``release.json`` (JSON-ready; ``inf`` as None)."""
        return {"metric": self.metric,
                "bound": None if math.isinf(self.bound) else float(self.bound),
                "confidence": float(self.confidence), "units": self.units,
                "covers": self.covers, "not_covered": self.not_covered,
                "derivation": self.derivation, "details": dict(self.details)}

    def __str__(self) -> str:
        at = "" if self.confidence == 1 else f" with probability {self.confidence:g}"
        return f"{self.metric} <= {self.bound:.4g} {self.units}{at}"
