"""Differentially private Wasserstein barycenters (papers 000 and 001).

* :func:`private_barycenter` -> :class:`BarycenterResult`, its public choices
  :class:`BarycenterParams` with one option object per method (:class:`CoresetOptions`,
  :class:`PerturbationOptions`, :class:`SubspaceOptions`): the private-coreset method
  (paper 000 Alg. 2, epsilon-DP) and output perturbation (Alg. 1 / paper 001 Thm 5 and
  Prop. 6, (epsilon, delta)-DP), with JL projection and amplification by subsampling;
* :class:`PublicBounds`: the public geometry (paper 000 Assumption 1);
* :func:`private_coreset` -> :class:`PrivateCoreset`: the Private Measure Mechanism of
  He, Vershynin and Zhu, any dimension;
* regions for the coreset's data-independent filter: :class:`PolygonRegion`,
  :class:`PredicateRegion`, :func:`continental_us`;
* output perturbation pieces: :func:`output_perturbation`, :func:`recommended_splits`,
  :func:`paper_sigma`;
* the error a release will have, from its public parameters (issue 28):
  :func:`barycenter_error` (``result.error``; ``docs/errors/barycenters.md``);
* evaluation and figures: :func:`evaluate_barycenter`, :func:`barycenter_w2`,
  :func:`plot_barycenters`.

Privacy analysis: ``docs/privacy/barycenters.md``.
"""

from privot.barycenters.api import METHODS, default_projection_dim, private_barycenter
from privot.barycenters.coresets import PrivateCoreset, private_coreset
from privot.barycenters.engine_step import CoresetLeafCounts, coreset_leaf_counts
from privot.barycenters.error import barycenter_error
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.params import (
    BarycenterParams,
    CoresetOptions,
    PerturbationOptions,
    SubspaceOptions,
)
from privot.barycenters.perturbation import (
    PerturbationRelease,
    output_perturbation,
    paper_sigma,
    recommended_splits,
)
from privot.barycenters.plot import plot_barycenters
from privot.barycenters.regions import PolygonRegion, PredicateRegion, Region, continental_us
from privot.barycenters.result import BarycenterResult
from privot.evaluation.barycenters import barycenter_w2, evaluate_barycenter

__all__ = [
    "METHODS",
    "BarycenterParams",
    "BarycenterResult",
    "CoresetLeafCounts",
    "CoresetOptions",
    "PerturbationOptions",
    "PerturbationRelease",
    "PolygonRegion",
    "PredicateRegion",
    "PrivateCoreset",
    "PublicBounds",
    "Region",
    "SubspaceOptions",
    "barycenter_error",
    "barycenter_w2",
    "continental_us",
    "coreset_leaf_counts",
    "default_projection_dim",
    "evaluate_barycenter",
    "output_perturbation",
    "paper_sigma",
    "plot_barycenters",
    "private_barycenter",
    "private_coreset",
    "recommended_splits",
]
