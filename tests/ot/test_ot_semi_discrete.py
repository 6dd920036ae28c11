"""Power-diagram weights by the entropic semi-dual (privot.ot.power_diagram_weights).

* The hard power cells carry the target masses within the tolerance: uniform and
  clustered clouds, non-uniform target masses, weighted points, and atoms far from the
  cloud (thin cells, the case where POT's network simplex takes 6-20 s).
* The optimum is the central one: on a cloud symmetric under a reflection that swaps
  two atoms, the weights are equal (an LP vertex need not be).
* It agrees with the exact LP where the exact duals are unique (a 1-D cloud, two atoms).
* Degenerate inputs answer with the Voronoi weights (zeros).
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.ot import power_diagram_weights


def _masses(x, w, atoms, psi):
    cost = ((x[:, None, :] - atoms[None, :, :]) ** 2).sum(axis=2) - psi[None, :]
    return np.bincount(np.argmin(cost, axis=1), weights=w, minlength=len(atoms)) / w.sum()


def _clustered(rng, n):
    centres = rng.uniform(-0.4, 0.4, (5, 2))
    return centres[rng.integers(0, 5, n)] + rng.normal(scale=0.02, size=(n, 2))


@pytest.mark.parametrize("case", ["uniform", "clustered", "far", "targets", "weighted"])
def test_hard_cells_carry_the_target_masses(case):
    rng = np.random.default_rng(["uniform", "clustered", "far", "targets",
                                 "weighted"].index(case))
    n, m = 4000, 12
    x = (rng.uniform(-0.3, 0.3, (n, 2)) if case in ("uniform", "targets", "weighted")
         else _clustered(rng, n) if case == "clustered"
         else rng.uniform(-0.05, 0.05, (n, 2)) + [0.4, 0.0])
    atoms = rng.uniform(-0.4, 0.4, (m, 2)) if case != "far" else rng.uniform(-0.4, 0, (m, 2))
    w = rng.uniform(0.5, 2.0, n) if case == "weighted" else np.ones(n)
    b = rng.uniform(0.5, 1.5, m) if case == "targets" else np.ones(m)
    b = b / b.sum()
    voronoi = _masses(x, w, atoms, np.zeros(m))
    psi = power_diagram_weights(x, w, atoms, b if case == "targets" else None)
    got = _masses(x, w, atoms, psi)
    assert psi.shape == (m,) and abs(psi.mean()) < 1e-12
    assert np.abs(got / b - 1).max() <= 0.02
    assert np.abs(voronoi / b - 1).max() > 0.2  # the Voronoi cells were far off


def test_the_symmetric_optimum_is_chosen():
    # the cloud is two clusters symmetric under x -> -x, the atoms swap under it; with a
    # gap between the clusters every psi_0 - psi_1 in an interval is LP-optimal
    rng = np.random.default_rng(3)
    half = rng.normal(scale=0.01, size=(500, 2)) + [0.2, 0.0]
    x = np.concatenate([half, -half])
    atoms = np.array([[0.05, 0.0], [-0.05, 0.0]])
    psi = power_diagram_weights(x, np.ones(len(x)), atoms)
    assert np.abs(psi).max() < 1e-6
    # the LP accepts a wide range: the cell boundary x_0 = (psi_1 - psi_0) / 0.2 may be
    # anywhere in the gap between the clusters (|x_0| > 0.15 for every point here), so
    # every psi_0 - psi_1 in [-0.02, 0.02] balances the cells and is LP-optimal; a vertex
    # (what a network simplex returns, e.g. POT's) need not be the central one
    assert np.abs(x[:, 0]).min() > 0.15
    for diff in np.linspace(-0.02, 0.02, 9):
        assert np.allclose(_masses(x, np.ones(len(x)), atoms, np.array([diff, 0.0])),
                           [0.5, 0.5])


def test_it_matches_the_exact_lp_where_its_duals_are_unique():
    rng = np.random.default_rng(4)
    x = np.c_[np.sort(rng.uniform(-0.4, 0.4, 3001)), np.zeros(3001)]
    atoms = np.array([[-0.3, 0.0], [0.1, 0.0]])
    psi = power_diagram_weights(x, np.ones(len(x)), atoms, tolerance=1e-3)
    # the boundary of the balanced cells is the median of the cloud
    boundary = ((atoms[1, 0] ** 2 - atoms[0, 0] ** 2) - (psi[1] - psi[0])) / (
        2 * (atoms[1, 0] - atoms[0, 0]))
    assert abs(boundary - np.median(x[:, 0])) < 2e-3


@pytest.mark.parametrize("args", [
    (np.empty((0, 2)), np.empty(0), np.zeros((3, 2))),
    (np.ones((5, 2)), np.zeros(5), np.zeros((3, 2))),
    (np.zeros((5, 2)), np.ones(5), np.zeros((3, 2))),  # every atom equidistant
])
def test_degenerate_inputs_give_the_voronoi_weights(args):
    assert np.array_equal(power_diagram_weights(*args), np.zeros(3))


def test_fewer_points_than_atoms_still_answers():
    x = np.array([[0.1, 0.0], [-0.1, 0.0]])
    atoms = np.random.default_rng(5).uniform(-0.3, 0.3, (6, 2))
    psi = power_diagram_weights(x, np.ones(2), atoms)
    assert psi.shape == (6,) and np.all(np.isfinite(psi))


@pytest.mark.parametrize("kw, name", [
    ({"masses": np.array([1.0, 0.0, 1.0])}, "masses"),
    ({"masses": np.ones(2)}, "masses"),
    ({"tolerance": 0.0}, "tolerance"),
    ({"max_stages": 0}, "max_stages"),
])
def test_bad_parameters_name_themselves(kw, name):
    from privot.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError) as err:
        power_diagram_weights(np.zeros((4, 2)), np.ones(4), np.eye(3, 2), **kw)
    assert err.value.name == name


def test_mismatched_dimensions_are_refused():
    from privot.errors import InvalidDataError

    with pytest.raises(InvalidDataError):
        power_diagram_weights(np.zeros((4, 3)), np.ones(4), np.eye(3, 2))
