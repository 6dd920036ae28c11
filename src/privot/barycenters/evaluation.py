"""Barycenter evaluation: moved to :mod:`privot.evaluation.barycenters` (re-exported here).

The cost of a support on the groups and the W2 between supports read the sensitive
groups, so they are evaluation (curator-only), not part of a release; the old import
path keeps working.
"""

from privot.evaluation.barycenters import barycenter_w2, evaluate_barycenter

__all__ = ["barycenter_w2", "evaluate_barycenter"]
