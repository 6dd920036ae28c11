"""Code a user of privot's public API writes, type-checked by mypy against the package's
annotations (``py.typed``): tests/packaging/test_public_types.py runs mypy on this file
and runs it (it is not a test module; seeded generators). A wrong annotation in the
public API (a result typed as the wrong class, a parameter's type that rejects what the
docs show) makes mypy fail here."""

from __future__ import annotations

import numpy as np

import privot
from privot.barycenters import (
                                      BarycenterParams,
                                      BarycenterResult,
                                      barycenter_error,
                                      private_barycenter,
)
from privot.bounds import PublicBounds
from privot.error_bounds import ErrorStatement
from privot.grid import Grid
from privot.heatmaps import HeatmapParams, HeatmapResult, heatmap_error, private_heatmap
from privot.learning import LearningParams, fairness_groups, learning_error
from privot.planning import PlannedEpsilon, epsilon_for_error, error_curve
from privot.sampling import PopulationSample, SampleParams, make_mechanism, sample_population
from privot.sampling.engine_step import UserCellCounts, user_cell_counts_in_memory

version: str = privot.__version__
rng = np.random.default_rng(0)

# heatmaps: a statement first, then the release
grid = Grid((0.0, 1.0, 0.0, 1.0), 16)
heat_params = HeatmapParams(grid=grid, epsilon=1.0)
heat_statement: ErrorStatement = heatmap_error(heat_params, n_users=100)
heat_bound: float = heat_statement.bound
points = rng.uniform(size=(500, 2))
users = rng.integers(0, 50, 500)
heat: HeatmapResult = private_heatmap(None, heat_params, user=users, x=points[:, 0],
                                      y=points[:, 1], rng=1)
plan: PlannedEpsilon = epsilon_for_error(
    lambda e: heatmap_error(HeatmapParams(grid=grid, epsilon=e)), 3000.0)
planned_epsilon: float = plan.epsilon
curve: list[tuple[float, float]] = error_curve(
    lambda e: heatmap_error(HeatmapParams(grid=grid, epsilon=e)), [0.5, 1.0, 2.0])

# barycenters
groups = [rng.uniform(-0.5, 0.5, size=(300, 2)) for _ in range(3)]
bary_params = BarycenterParams(epsilon=1.0, m=8, bounds=PublicBounds.box([-1, -1], [1, 1]))
bary_statement: ErrorStatement = barycenter_error(bary_params, [300, 300, 300], 2)
bary: BarycenterResult = private_barycenter(groups, bary_params, rng=2)
support: np.ndarray = bary.support

# sampling
mechanism = make_mechanism("krr", points=grid.cell_centre_points(), epsilon=1.0)
counts: UserCellCounts = user_cell_counts_in_memory(users, points[:, 0], points[:, 1],
                                                    grid)
sample: PopulationSample = sample_population(counts, SampleParams(mechanism=mechanism),
                                             rng=3)

# learning: the statement from public sizes only
learn_statement: ErrorStatement = learning_error(
    LearningParams(target_epsilon=1.0, target_delta=1e-6), [400, 600], 13)
noise_to_signal: object = learn_statement.details["noise_to_signal_at_least"]
learning_groups = fairness_groups(rng.normal(size=(100, 3)), rng.integers(0, 2, 100),
                                  rng.integers(0, 2, 100))
