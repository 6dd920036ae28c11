"""The small-dimension default of the subspace plan (issue 26, part 3): with Laplace noise,
``d0 <= SMALL_MAX_DIM`` and ``eps n < SMALL_GAUSSIAN_BELOW``, one cell (each group's DP
Gaussian, no Lloyd round), a rule of public quantities only."""

from __future__ import annotations

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.barycenters.subspace import (
    SMALL_GAUSSIAN_BELOW,
    SMALL_MAX_DIM,
    default_subspace_dim,
    plan_subspace,
    small_gaussian_default,
)
from privot.privacy.types import PrivacyCost


def test_rule_is_a_function_of_public_quantities():
    assert SMALL_MAX_DIM == 4 and SMALL_GAUSSIAN_BELOW == 10000.0
    assert small_gaussian_default(426, d0=4, epsilon=1.0, delta=0.0)
    assert small_gaussian_default(2000, d0=3, epsilon=4.0, delta=0.0)  # eps n = 8,000
    assert not small_gaussian_default(4000, d0=3, epsilon=4.0, delta=0.0)  # 16,000
    assert not small_gaussian_default(426, d0=5, epsilon=1.0, delta=0.0)
    assert not small_gaussian_default(426, d0=4, epsilon=1.0, delta=1e-6)  # Gaussian


@pytest.mark.parametrize("n,eps,d0", [(426, 1.0, 4), (426, 4.0, 4), (400, 1.0, 3),
                                      (1500, 4.0, 3)])
def test_pure_small_d_default_is_one_cell_at_the_default_dim(n, eps, d0):
    plan = plan_subspace(sizes=[n, 2 * n], m=48, d0=d0, budget=PrivacyCost(eps))
    assert plan.cells == 1 and plan.rounds == 0 and "lloyd" not in plan.noise
    assert plan.subspace_dim == default_subspace_dim(n, d0=d0, epsilon=eps, delta=0.0)


def test_the_rule_leaves_other_plans_alone():
    large = plan_subspace(sizes=[4000], m=48, d0=3, budget=PrivacyCost(4.0))
    assert large.cells > 1 and large.rounds == 1  # eps n = 16,000: Lloyd cells
    moderate = plan_subspace(sizes=[750], m=48, d0=7, budget=PrivacyCost(4.0))
    assert moderate.cells > 1 and moderate.rounds == 1  # d0 = 7: unchanged
    gauss = plan_subspace(sizes=[1500], m=48, d0=3, budget=PrivacyCost(4.0, 1e-6))
    assert gauss.cells > 1  # Gaussian noise: unchanged
    asked = plan_subspace(sizes=[1500], m=48, d0=3, budget=PrivacyCost(4.0), rounds=1)
    assert asked.cells > 1 and asked.rounds == 1  # rounds given: the Lloyd cells
    cells = plan_subspace(sizes=[1500], m=48, d0=3, budget=PrivacyCost(4.0), cells=5)
    assert cells.cells == 5 and cells.rounds == 1


def test_release_with_the_small_d_default_spends_epsilon_on_the_moments_only():
    rng = np.random.default_rng(5)
    groups = [rng.uniform(0.1, 0.6, size=(500, 3)), rng.uniform(0.3, 0.9, size=(400, 3))]
    res = private_barycenter(groups, bounds=PublicBounds.box(np.zeros(3), np.ones(3)),
                             m=12, epsilon=1.0, method="subspace", rng=1, progress=False)
    plan = res.params["subspace"]
    assert plan["cells"] == 1 and plan["rounds"] == 0 and set(plan["noise"]) == {"moments"}
    assert res.epsilon == pytest.approx(1.0) and res.delta == 0.0
    assert res.support.shape == (12, 3)
