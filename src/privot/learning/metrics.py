"""Old home of the learning metrics: they live in :mod:`privot.evaluation.learning`.

Re-exported here so that existing imports keep working; new code imports from
:mod:`privot.evaluation.learning` (the evaluation namespace of every capability).

Privacy
-------
**None of these metrics is differentially private** (curator files only); see
:mod:`privot.evaluation.learning`.
"""

from __future__ import annotations

from privot.evaluation.learning import (
    BootstrapEstimate,
    FairnessReport,
    accuracy,
    bootstrap_interval,
    demographic_parity_difference,
    demographic_parity_ratio,
    disparate_impact,
    equality_of_odds_indexes,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_report,
    ks_distance,
    mean_squared_error,
    selection_rates,
    wasserstein_between_groups,
)

__all__ = [
    "accuracy",
    "mean_squared_error",
    "selection_rates",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "disparate_impact",
    "equality_of_odds_indexes",
    "ks_distance",
    "wasserstein_between_groups",
    "bootstrap_interval",
    "BootstrapEstimate",
    "FairnessReport",
    "fairness_report",
]
