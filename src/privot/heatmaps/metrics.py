"""Heatmap quality metrics: moved to :mod:`privot.evaluation.heatmaps` (re-exported here).

The metrics read the exact heatmap, so they are evaluation (curator-only), not part of a
release: they live in the one evaluation namespace, :mod:`privot.evaluation`. This
module keeps the old import path ``privot.heatmaps.metrics`` working.

Privacy
-------
No release and no mechanism here: every metric compares a release with the exact data
and returns an exact statistic of both (unit, relation and sensitivity do not apply).
Its values are **curator-only** and must not be published
(:mod:`privot.evaluation.heatmaps`).
"""

from __future__ import annotations

from privot.evaluation.heatmaps import (
    EARTH_MEAN_RADIUS_M,
    GRID_EMD_METHODS,
    KL_EPS,
    HeatmapMetrics,
    grid_emd,
    grid_emd_metres,
    heatmap_metrics,
    kl_divergence,
    latlon_cell_metres,
    pearson,
    similarity,
)

__all__ = [
    "KL_EPS",
    "EARTH_MEAN_RADIUS_M",
    "GRID_EMD_METHODS",
    "HeatmapMetrics",
    "similarity",
    "pearson",
    "kl_divergence",
    "grid_emd",
    "grid_emd_metres",
    "latlon_cell_metres",
    "heatmap_metrics",
]
