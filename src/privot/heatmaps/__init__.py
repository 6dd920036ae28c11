"""Private heatmaps (paper 002): user-level epsilon-DP heatmaps with EMD-optimal error.

Modules: :mod:`~privot.heatmaps.grid` (public bounds to a Delta x Delta grid),
:mod:`~privot.heatmaps.pyramid` (the pyramidal transform as block sums).
"""

from privot.heatmaps.grid import ASPECTS, CellAssignment, Grid
from privot.heatmaps.pyramid import block_sums, children_flat, leaf_block, pyramid

__all__ = ["ASPECTS", "CellAssignment", "Grid", "block_sums", "children_flat", "leaf_block",
           "pyramid"]
