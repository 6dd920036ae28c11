"""Private heatmaps (paper 002): user-level epsilon-DP heatmaps with EMD-optimal error.

Modules: :mod:`~privot.grid` (public bounds to a Delta x Delta grid),
:mod:`~privot.heatmaps.pyramid` (the pyramidal transform as block sums),
:mod:`~privot.heatmaps.aggregate` (per-user distributions summed per cell),
:mod:`~privot.heatmaps.measure` (Algorithm 1: noisy pyramid levels),
:mod:`~privot.heatmaps.reconstruct` (Algorithm 2: RECONSTRUCT, compact LP),
:mod:`~privot.heatmaps.baselines` (Laplace per cell, and its thresholding variant),
:mod:`~privot.heatmaps.render` (Gaussian-filtered heatmap, Sec. 2.3),
:mod:`~privot.heatmaps.params` (:class:`HeatmapParams`, the release's public choices),
:mod:`~privot.heatmaps.points` (the input: a table's columns, default ``user_id``,
``longitude``, ``latitude``, or arrays, to cell sums),
:mod:`~privot.heatmaps.api` (:func:`private_heatmap`),
:mod:`~privot.heatmaps.result` (:class:`HeatmapResult` and its parts),
:mod:`~privot.heatmaps.memory` (the memory a resolution needs, checked first),
:mod:`~privot.heatmaps.outputs` (the files of ``privot heatmap``: long table, GeoJSON,
GeoTIFF), :mod:`~privot.heatmaps.plot` (the picture, colour scales). The evaluation
metrics (similarity, Pearson, KL, exact grid EMD) are :mod:`privot.evaluation.heatmaps`,
re-exported here and by :mod:`~privot.heatmaps.metrics`. Extensions:
:mod:`~privot.heatmaps.dense` (dense EMD aggregation, App. D),
:mod:`~privot.heatmaps.kmedian` (DP planar k-median coreset and centres, App. A),
:mod:`~privot.heatmaps.shuffle` (the shuffle-model protocol of App. F, simulated).
Privacy derivations: ``docs/privacy/heatmaps.md`` and
``docs/privacy/heatmaps_extensions.md``.
"""

from privot.evaluation.heatmaps import (
    HeatmapMetrics,
    grid_emd,
    grid_emd_metres,
    heatmap_metrics,
    kl_divergence,
    latlon_cell_metres,
    pearson,
    similarity,
)
from privot.grid import ASPECTS, CellAssignment, Grid
from privot.heatmaps.aggregate import CellSums, user_distributions_sum
from privot.heatmaps.api import private_heatmap
from privot.heatmaps.baselines import (
    BaselineResult,
    laplace_baseline,
    threshold_baseline,
    threshold_count,
)
from privot.heatmaps.dense import (
    DenseHeatmapResult,
    dense_heatmap,
    dense_release,
    emd_norm,
    emd_projection,
)
from privot.heatmaps.engine_step import aggregate_user_cells
from privot.heatmaps.error import heatmap_error
from privot.heatmaps.kmedian import (
    KMedianResult,
    kmedian_cost,
    private_kmedian,
    weighted_kmedian,
)
from privot.heatmaps.measure import (
    DEFAULT_GAMMA,
    DEFAULT_W,
    Measurements,
    level_budgets,
    measure,
    start_level,
)
from privot.heatmaps.memory import check_memory, memory_estimate
from privot.heatmaps.outputs import save_heatmap
from privot.heatmaps.params import DEFAULT_SIGMA, METHODS, HeatmapParams
from privot.heatmaps.plot import plot_heatmap
from privot.heatmaps.points import DEFAULT_USER_COLUMN, DEFAULT_X_COLUMN, DEFAULT_Y_COLUMN
from privot.heatmaps.pyramid import block_sums, children_flat, leaf_block, pyramid
from privot.heatmaps.reconstruct import LP_FORMS, Reconstruction, reconstruct
from privot.heatmaps.render import gaussian_heatmap
from privot.heatmaps.result import (
    CuratorDiagnostics,
    HeatmapDiagnostics,
    HeatmapRelease,
    HeatmapResult,
)
from privot.heatmaps.shuffle import (
    ShuffleParameters,
    ShuffleResult,
    shuffle_heatmap,
    shuffle_parameters,
)

__all__ = ["ASPECTS", "CellAssignment", "Grid", "block_sums", "children_flat", "leaf_block",
           "pyramid",
           "CellSums", "aggregate_user_cells", "heatmap_error", "user_distributions_sum",
           "DEFAULT_GAMMA", "DEFAULT_W", "Measurements", "level_budgets", "measure",
           "start_level",
           "LP_FORMS", "Reconstruction", "reconstruct",
           "BaselineResult", "laplace_baseline", "threshold_baseline", "threshold_count",
           "gaussian_heatmap",
           "DEFAULT_SIGMA", "METHODS", "CuratorDiagnostics", "HeatmapDiagnostics",
           "HeatmapParams", "HeatmapRelease", "HeatmapResult", "private_heatmap",
           "DEFAULT_USER_COLUMN", "DEFAULT_X_COLUMN", "DEFAULT_Y_COLUMN",
           "check_memory", "memory_estimate", "plot_heatmap", "save_heatmap",
           "DenseHeatmapResult", "dense_heatmap", "dense_release", "emd_norm",
           "emd_projection",
           "KMedianResult", "kmedian_cost", "private_kmedian", "weighted_kmedian",
           "ShuffleParameters", "ShuffleResult", "shuffle_heatmap", "shuffle_parameters",
           "HeatmapMetrics", "grid_emd", "grid_emd_metres", "heatmap_metrics", "kl_divergence",
           "latlon_cell_metres", "pearson", "similarity"]
