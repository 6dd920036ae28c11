"""Counterexamples to the paper's sensitivity claim for the *exact* barycenter.

Paper 000 (App. E, Thm E.1) and paper 001 (Thm 14) claim that replacing one point
moves the barycenter's atoms by at most ``1/k`` each, i.e. an L2 sensitivity of
``sqrt(m)/k``. ``docs/privacy/barycenters.md`` ("Output perturbation") explains why
privot does not rely on it; these tests check the two counterexamples quoted there,
both for the exact (global) barycenter, so no solver is to blame.

p = 2, m = 2, n = 4 points per group: a group's optimal coupling to two atoms of
mass 1/2 is a vertex of the transport polytope, i.e. a split of its 4 points into
two pairs, and for fixed splits the optimal atoms are means. The exact free-support
barycenter is therefore found by enumerating every split of every group.

p = 1, m = 1: the objective is piecewise linear in the single atom with breakpoints
at the data, so a grid containing the breakpoints finds the exact minimiser set.
"""

import itertools

import numpy as np
import ot
import pytest

S = 1 / (2 * np.sqrt(2))
# The three ways to split 4 points into two pairs.
PAIR_SPLITS = (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2)))
# Movements (best atom matching, Frobenius norm of the (2, 2) difference).
EXPECTED_MOVEMENT = {3: 0.6386, 4: 0.6525, 5: 0.6613}


def _group(c):
    """The four points (+-s, +-c s)."""
    return np.array([[S, c * S], [S, -c * S], [-S, c * S], [-S, -c * S]])


def _datasets(k):
    groups = [_group(0.9)] + [_group(0.98) for _ in range(k - 1)]
    neighbour = [g.copy() for g in groups]
    assert np.allclose(neighbour[0][0], [S, 0.9 * S])
    neighbour[0][0] = [-S, 0.9 * S]  # replace (s, 0.9 s) by (-s, 0.9 s) in group 1
    return groups, neighbour


def _exact_barycenter(groups):
    """All (cost, support) of the pair-split combinations, best first.

    The cost is (1/k) sum_groups W2^2(group, (delta_z1 + delta_z2)/2) at the optimal
    atoms of the combination. The first group's labelling is fixed (atom 0 gets the
    first pair), which removes the atom-swap symmetry; every other group takes both
    labellings.
    """
    k = len(groups)
    first = [(a, b) for a, b in PAIR_SPLITS]
    other = [lab for a, b in PAIR_SPLITS for lab in ((a, b), (b, a))]
    results = []
    for combo in itertools.product(first, *([other] * (k - 1))):
        z = np.array(
            [
                np.mean(
                    [g[list(c[j])].mean(axis=0) for g, c in zip(groups, combo, strict=True)], axis=0
                )
                for j in (0, 1)
            ]
        )
        cost = (
            sum(
                0.25 * sum(((g[list(c[j])] - z[j]) ** 2).sum() for j in (0, 1))
                for g, c in zip(groups, combo, strict=True)
            )
            / k
        )
        results.append((cost, z))
    results.sort(key=lambda t: t[0])
    return results


def _unique_optimum(groups):
    results = _exact_barycenter(groups)
    (best, z), (second, _) = results[0], results[1]
    assert second > best + 1e-3, "exact barycenter is not unique"
    return best, z


def _movement(z, z2):
    """L2 (Frobenius) movement of the atoms under the best of the 2 matchings."""
    return min(np.linalg.norm(z - z2), np.linalg.norm(z - z2[::-1]))


@pytest.mark.parametrize("k", [3, 4, 5])
def test_exact_w2_barycenter_moves_more_than_claimed_sensitivity(k):
    m = 2
    groups, neighbour = _datasets(k)
    for g in groups + neighbour:
        assert np.all(np.linalg.norm(g, axis=1) <= 0.5 + 1e-12)  # Assumption 1

    _, z = _unique_optimum(groups)
    _, z2 = _unique_optimum(neighbour)
    np.testing.assert_allclose(z, [[S, 0.0], [-S, 0.0]], atol=1e-12)

    moved = _movement(z, z2)
    # Closed form: the neighbour's atoms are (-s/k, c s) and (0, -c s) with
    # c = (0.9 + 0.98 (k - 1)) / k.
    c = (0.9 + 0.98 * (k - 1)) / k
    closed = S * np.sqrt((1 - 1 / k) ** 2 + 1 + 2 * c**2)
    assert moved == pytest.approx(closed, abs=1e-12)
    assert moved == pytest.approx(EXPECTED_MOVEMENT[k], abs=5e-5)
    assert moved > np.sqrt(m) / k + 0.1


def test_enumerated_optimum_agrees_with_pot_exact_solver():
    """Cross-check k = 3 with POT's exact network simplex."""
    k = 3
    a = np.full(4, 0.25)
    b = np.full(2, 0.5)
    for data in _datasets(k):
        best, z = _unique_optimum(data)
        # The enumerated cost equals the exact OT cost to the enumerated support.
        pot_cost = np.mean([ot.emd2(a, b, ot.dist(g, z)) for g in data])
        assert pot_cost == pytest.approx(best, abs=1e-12)
        # It is a fixed point of POT's exact free-support iteration.
        z_pot = ot.lp.free_support_barycenter(list(data), [a] * k, z.copy(), b=b, numItermax=10)
        np.testing.assert_allclose(z_pot, z, atol=1e-10)
        # And no random start of that iteration finds a lower cost.
        rng = np.random.default_rng(0)
        for _ in range(20):
            init = rng.uniform(-0.5, 0.5, size=(2, 2))
            zr = ot.lp.free_support_barycenter(list(data), [a] * k, init, b=b, numItermax=50)
            cost = np.mean([ot.emd2(a, b, ot.dist(g, zr)) for g in data])
            assert cost >= best - 1e-12


def _w1_objective(groups, xs):
    """sum over groups of W1(group, delta_x) = sum_g mean_i |x - y_i|."""
    return sum(np.abs(xs[:, None] - np.asarray(g)[None, :]).mean(axis=1) for g in groups)


def _minimisers(groups):
    xs = np.union1d(np.linspace(-0.5, 0.5, 1001), np.concatenate(groups))
    f = _w1_objective(groups, xs)
    return xs[f <= f.min() + 1e-12]


def test_exact_w1_barycenter_jumps_across_the_ball():
    k = 3
    groups = [[-0.5, -0.5, 0.5], [-0.5, -0.5, 0.5], [-0.5, 0.5, 0.5]]
    neighbour = [[0.5, -0.5, 0.5]] + groups[1:]  # one -1/2 of group 1 -> 1/2
    # The objective is piecewise linear with breakpoints at +-1/2 only, and the
    # minimiser of a sum of |x - y| lies in the data's hull, so the grid is exact.
    np.testing.assert_array_equal(_minimisers(groups), [-0.5])
    np.testing.assert_array_equal(_minimisers(neighbour), [0.5])
    moved = 1.0
    assert moved > 1 / k  # the claimed sqrt(m)/k with m = 1
