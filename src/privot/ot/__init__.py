"""Optimal-transport numerics for privot (knows nothing about privacy).

One private module per solver family, re-exported here:

* exact W_p between weighted point clouds (POT's network simplex): :func:`wasserstein_distance`,
  :func:`optimal_plan`, :func:`ground_cost`; the total solver for release paths,
  :func:`budgeted_plan` -> :class:`BudgetedPlan` (always a coupling in Pi(a, b) after a
  public iteration budget :func:`plan_budget`), and :func:`round_to_polytope`; for callers
  that hold checked arrays, the unvalidated pieces :func:`budgeted_emd` (the budgeted
  solver on weights and a cost matrix) and :func:`squared_euclidean` (the cost matrix
  of ``ground_cost(x, y, p=2)``);
* entropic OT, log-domain Sinkhorn: :func:`sinkhorn` -> :class:`SinkhornResult`;
* closed-form 1-D W2 for unequal sizes and its gradients (paper 004, Props 3.1, 3.2):
  :func:`w2_squared_1d`, :func:`w2_squared_1d_with_grad`, :func:`quantile_coupling`
  -> :class:`Coupling1D`, :func:`rank_coupling`;
* sliced W2 by Monte-Carlo directions: :func:`sliced_w2_squared`,
  :func:`sliced_w2_squared_with_grad`, :func:`random_directions`;
* Gaussian Johnson-Lindenstrauss projections: :func:`jl_project`, :func:`gaussian_jl_matrix`,
  :func:`jl_target_dim`;
* free-support Wasserstein barycenters (paper 000, Algs. 3 and 4):
  :func:`free_support_barycenter` -> :class:`BarycenterFit`, :func:`barycenter_cost`,
  :func:`solution_weights`, :func:`support_points`;
* power-diagram weights splitting a weighted cloud into given masses (entropic
  semi-dual, Newton with decreasing regularisation): :func:`power_diagram_weights`.

The maths is in ``docs/ot.md``.
"""

from privot.ot._barycenter import BARYCENTER_METHODS, BarycenterFit, free_support_barycenter
from privot.ot._barycenter_steps import barycenter_cost, solution_weights, support_points
from privot.ot._exact import (
    METRICS,
    BudgetedPlan,
    budgeted_emd,
    budgeted_plan,
    ground_cost,
    optimal_plan,
    plan_budget,
    round_to_polytope,
    squared_euclidean,
    wasserstein_distance,
)
from privot.ot._one_d import (
    Coupling1D,
    quantile_coupling,
    rank_coupling,
    w2_squared_1d,
    w2_squared_1d_with_grad,
)
from privot.ot._projection import gaussian_jl_matrix, jl_project, jl_target_dim
from privot.ot._semi_discrete import power_diagram_weights
from privot.ot._sinkhorn import SinkhornResult, sinkhorn
from privot.ot._sliced import random_directions, sliced_w2_squared, sliced_w2_squared_with_grad

__all__ = [
    "METRICS",
    "ground_cost",
    "wasserstein_distance",
    "optimal_plan",
    "power_diagram_weights",
    "BudgetedPlan",
    "budgeted_plan",
    "budgeted_emd",
    "plan_budget",
    "round_to_polytope",
    "squared_euclidean",
    "SinkhornResult",
    "sinkhorn",
    "Coupling1D",
    "rank_coupling",
    "quantile_coupling",
    "w2_squared_1d",
    "w2_squared_1d_with_grad",
    "random_directions",
    "sliced_w2_squared",
    "sliced_w2_squared_with_grad",
    "gaussian_jl_matrix",
    "jl_project",
    "jl_target_dim",
    "BARYCENTER_METHODS",
    "BarycenterFit",
    "free_support_barycenter",
    "barycenter_cost",
    "solution_weights",
    "support_points",
]
