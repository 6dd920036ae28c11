"""Barycenter evaluation: moved to :mod:`privot.evaluation.barycenters` (re-exported here).

The cost of a support on the groups and the W2 between supports read the sensitive
groups, so they are evaluation (curator-only), not part of a release; the old import
path keeps working.

Privacy
-------
No release and no mechanism here: the cost and W2 read the exact groups and are exact
statistics of them (unit, relation and sensitivity do not apply): **curator-only**,
never published (:mod:`privot.evaluation.barycenters`).
"""

from privot.evaluation.barycenters import barycenter_w2, evaluate_barycenter

__all__ = ["barycenter_w2", "evaluate_barycenter"]
