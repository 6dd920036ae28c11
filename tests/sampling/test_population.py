"""Population sampling: one eps-LDP report per user (direct and linear) and the server's
estimators (IBU, histogram).

Statistical tests use fixed seeds; each states its false-alarm rate (the probability
that a correct implementation fails it for a random seed). Exactness of the linear
variant's law is checked by enumerating every value of the uniform draws.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privot.errors import BudgetExceededError, InvalidParameterError
from privot.grid import Grid
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.noise import BitSource
from privot.privacy.types import Neighbouring
from privot.sampling.baselines import krr_estimate
from privot.sampling.device import (
    grid_polytope,
    max_likelihood_ratio,
    ratio_at_most_exp,
    snap_to_polytope,
)
from privot.sampling.engine_step import UserCellCounts, user_cell_counts_in_memory
from privot.sampling.mechanism import RandomizedResponse, WassersteinProjection
from privot.sampling.population import (
    PopulationSample,
    estimate_direct,
    estimate_linear,
    linear_law,
    sample_population,
)

#: False-alarm rate of each chi-square test below (p-value threshold).
ALPHA = 1e-3


def grid_points(resolution: int) -> tuple[Grid, np.ndarray]:
    grid = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=resolution)
    xs, ys = grid.cell_centres()
    return grid, np.c_[xs.ravel(), ys.ravel()]


def make_counts(user_cells: list[dict[int, int]], grid: Grid) -> UserCellCounts:
    """A UserCellCounts from ``[{cell: count}, ...]``, one dict per user."""
    indptr, cells, counts = [0], [], []
    for user in user_cells:
        for c in sorted(user):
            cells.append(c)
            counts.append(user[c])
        indptr.append(len(cells))
    return UserCellCounts(user_ids=np.arange(len(user_cells)) + 100,
                          indptr=np.array(indptr, dtype=np.int64),
                          cells=np.array(cells, dtype=np.int64),
                          counts=np.array(counts, dtype=np.int64), grid=grid,
                          n_points=int(sum(counts)), n_outside=0, n_users_empty=0)


def random_users(n: int, k: int, rng: np.random.Generator) -> list[dict[int, int]]:
    """Users on 1-4 cells each, concentrated on the low cells (a skewed population)."""
    out = []
    for _ in range(n):
        size = int(rng.integers(1, 5))
        cells = rng.choice(k, size=size, replace=False, p=np.linspace(2, 1, k) / np.linspace(
            2, 1, k).sum())
        out.append({int(c): int(rng.integers(1, 6)) for c in cells})
    return out


def dense(counts: UserCellCounts, k: int) -> np.ndarray:
    mu = np.zeros((counts.n_users, k))
    sizes = counts.sizes()
    for u in range(counts.n_users):
        a, b = counts.indptr[u], counts.indptr[u + 1]
        mu[u, counts.cells[a:b]] = counts.counts[a:b] / sizes[u]
    return mu


@pytest.fixture(scope="module")
def setup():
    grid, pts = grid_points(4)  # k = k_v = 16
    mech = WassersteinProjection.from_points(pts, epsilon=1.0)  # exact, optimal base measure
    return grid, pts, mech, mech.channel()


def chi2_matches(observed: np.ndarray, expected: np.ndarray) -> float:
    """p-value of a chi-square goodness-of-fit test; outputs of probability 0 must be
    empty."""
    zero = expected <= 1e-12
    assert observed[zero].sum() == 0
    e = expected[~zero]
    return float(stats.chisquare(observed[~zero], e * observed.sum() / e.sum()).pvalue)


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["direct", "linear"])
def test_sample_matches_expected_mixture(setup, variant):
    """Direct: counts ~ sum_u M[mu_u]; linear: counts ~ sum_u mu_u W. False alarm 0.1%."""
    grid, _, mech, channel = setup
    rng = np.random.default_rng(11)
    counts = make_counts(random_users(2000, 16, rng), grid)
    mu = dense(counts, 16)
    got = sample_population(counts, mech, variant=variant, rng=np.random.default_rng(12),
                            batch_size=700, channel=channel if variant == "linear" else None)
    expected = (mech.privatize(mu) if variant == "direct" else linear_law(mu, channel)).sum(0)
    assert chi2_matches(got.counts_per_output(), expected) > ALPHA
    assert got.indices.shape == (2000,) and got.variant == variant
    assert not got.secure  # seeded
    np.testing.assert_array_equal(got.user_ids, counts.user_ids)


def test_direct_equals_private_sample_of_privatize(setup):
    """The direct variant is the mechanism's own device step, users in order."""
    grid, _, mech, _ = setup
    counts = make_counts(random_users(40, 16, np.random.default_rng(3)), grid)
    a = sample_population(counts, mech, rng=np.random.default_rng(5))
    b = mech.sample(dense(counts, 16), rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.indices, b.indices)


@pytest.mark.parametrize("variant", ["direct", "linear"])
def test_indices_aligned_with_user_ids(variant):
    """At a huge epsilon k-RR reports the user's own cell (prob. 1 - 15 e^-40): each
    index belongs to its user, and the linear variant draws one of the user's cells."""
    grid, _ = grid_points(4)
    mech = RandomizedResponse(16, epsilon=40.0)
    order = np.random.default_rng(0).permutation(16)
    counts = make_counts([{int(c): 3} for c in order], grid)
    got = sample_population(counts, mech, variant=variant, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(got.indices, order)


def test_linear_own_cell_draw_is_exact_by_enumeration():
    """Every (u1, u2) of the two uniform draws, enumerated: output j occurs exactly
    sum_i k_i w_ij times out of n_u 2^b (w the snapped channel), i.e. the per-user law is
    sum_i mu_i W_i exactly."""
    grid, pts = grid_points(2)  # k = 4
    mech = WassersteinProjection.from_points(pts, epsilon=1.0, base_measure="uniform")
    bits = 6
    counts = make_counts([{0: 1, 3: 2}], grid)  # mu = (1/3, 0, 0, 2/3), n_u = 3

    class Scripted(BitSource):
        def __init__(self, values):
            self.values = list(values)

        def uniform_below(self, high, n=None):
            v = self.values.pop(0)
            assert v < int(np.max(high))
            return np.array([v], dtype=np.int64)

    seen = np.zeros(4, dtype=np.int64)
    for u1 in range(3):
        for u2 in range(1 << bits):
            got = sample_population(counts, mech, variant="linear", rng=Scripted([u1, u2]),
                                    bits=bits)
            seen[got.indices[0]] += 1
    poly = grid_polytope(mech.base_measure, epsilon=1.0, bits=bits)
    w = snap_to_polytope(mech.channel(), polytope=poly)
    np.testing.assert_array_equal(seen, 1 * w[0] + 2 * w[3])


def test_linear_law_in_polytope_on_the_integers(setup):
    """The exact per-user law of the linear variant is (sum_i k_i w_ij) / (n_u 2^b), and
    n_u L_j <= sum_i k_i w_ij <= n_u U_j on the integers: in the certified polytope, so
    the ratio of any two users' laws is <= U_j / L_j <= e^eps (checked exactly)."""
    grid, _, mech, channel = setup
    poly = grid_polytope(mech.base_measure, epsilon=mech.epsilon)
    w = snap_to_polytope(channel, polytope=poly)
    counts = make_counts(random_users(60, 16, np.random.default_rng(4)) + [{5: 1}, {0: 7}],
                         grid)
    laws = []
    for u in range(counts.n_users):
        a, b = counts.indptr[u], counts.indptr[u + 1]
        n_u = int(counts.counts[a:b].sum())
        num = [sum(int(c) * int(w[i, j]) for i, c in zip(counts.cells[a:b], counts.counts[a:b],
                                                           strict=True)) for j in range(16)]
        assert sum(num) == n_u << poly.bits
        for j in range(16):
            assert n_u * int(poly.lower[j]) <= num[j] <= n_u * int(poly.upper[j])
        laws.append([Fraction(x, n_u << poly.bits) for x in num])
    worst = max(max(col) / min(col) for col in zip(*laws, strict=True) if max(col) > 0)
    assert ratio_at_most_exp(worst, mech.epsilon)
    assert ratio_at_most_exp(max_likelihood_ratio(w, poly.bits), mech.epsilon)
    mu = dense(counts, 16)
    np.testing.assert_allclose(linear_law(mu, channel),
                               [[float(x) for x in row] for row in laws], atol=1e-12)


def test_engine_counts_and_budget_charged_once(setup):
    """Counts from the engine step's in-memory twin; epsilon charged once (relation
    local) whatever the number of users; a refused budget draws nothing."""
    grid, _, mech, channel = setup
    rng = np.random.default_rng(8)
    users = np.repeat(np.arange(50), 4)
    x, y = rng.random(200), rng.random(200)
    counts = user_cell_counts_in_memory(users, x, y, grid)
    for variant in ("direct", "linear"):
        acc = PrivacyAccountant(1.5)
        got = sample_population(counts, mech, variant=variant, accountant=acc,
                                rng=np.random.default_rng(1))
        assert isinstance(got, PopulationSample) and got.n_reports == 50
        assert len(acc.ledger) == 1 and acc.spent.epsilon == pytest.approx(1.0)
        assert acc.ledger[0].relation is Neighbouring.LOCAL
        gen = np.random.default_rng(2)
        state = gen.bit_generator.state
        with pytest.raises(BudgetExceededError):
            sample_population(counts, mech, variant=variant, accountant=acc, rng=gen,
                              channel=channel if variant == "linear" else None)
        assert gen.bit_generator.state == state  # nothing drawn
        assert len(acc.ledger) == 1


def test_release_and_curator_split(setup):
    grid, _, mech, _ = setup
    counts = make_counts(random_users(30, 16, np.random.default_rng(9)), grid)
    got = sample_population(counts, mech, variant="linear", rng=np.random.default_rng(0))
    rel = got.release_dict()
    json.dumps(rel)
    assert rel["n_reports"] == 30 and rel["relation"] == "local" and rel["epsilon"] == 1.0
    assert not any(key in rel for key in ("n_points", "user_ids", "seconds", "max_shift"))
    assert rel["mechanism"]["mechanism"] == "wpm"
    cur = got.curator_report()
    assert cur["n_points"] == int(counts.counts.sum()) and "seconds" in cur
    np.testing.assert_array_equal(got.released(), np.sort(got.indices))
    assert got.counts_per_output().sum() == 30


# ---------------------------------------------------------------------------------------
# Who reports: every user of the (public) user list, once (issue 23, item 3)
# ---------------------------------------------------------------------------------------


def _twenty_users(grid: Grid, *, moved_outside: bool):
    """The same 20 users (ids 0..19, three points each inside the bounds) except user 7,
    whose only point is inside, or moved outside the bounds."""
    rng = np.random.default_rng(30)
    users = np.append(np.repeat(np.delete(np.arange(20), 7), 3), 7)
    x, y = rng.uniform(0.05, 0.95, users.size), rng.uniform(0.05, 0.95, users.size)
    if moved_outside:
        x[-1] = 5.0  # user 7's only point
    return user_cell_counts_in_memory(users, x, y, grid)


@pytest.mark.parametrize("variant", ["direct", "linear"])
@pytest.mark.parametrize("name", ["wpm", "wpm-entropic", "krr"])
def test_a_user_without_a_point_inside_still_reports(variant, name):
    """Two neighbouring tables of the same users, one user's only point moved outside the
    bounds: the same number of reports and the same publishable description. Before the
    fix the user was dropped: 20 against 19 reports, deterministically (an infinite
    epsilon under replace-one)."""
    from privot.sampling import make_mechanism

    grid, pts = grid_points(4)
    mech = make_mechanism(name, points=pts, epsilon=1.0)
    inside = _twenty_users(grid, moved_outside=False)
    outside = _twenty_users(grid, moved_outside=True)
    assert inside.n_users == 20 and outside.n_users == 19  # the curator's view differs
    got = [sample_population(c, mech, variant=variant, rng=np.random.default_rng(4))
           for c in (inside, outside)]
    assert got[0].n_reports == got[1].n_reports == 20
    assert got[0].release_dict() == got[1].release_dict()
    assert got[0].counts_per_output().sum() == got[1].counts_per_output().sum() == 20
    assert outside.empty_user_ids.tolist() == [7]
    np.testing.assert_array_equal(got[0].user_ids, got[1].user_ids)  # the public list
    assert got[1].curator_report()["n_users_default_input"] == 1
    assert got[0].curator_report()["n_users_default_input"] == 0


@pytest.mark.parametrize("variant", ["direct", "linear"])
def test_the_default_user_reports_as_a_user_spread_over_the_grid(setup, variant):
    """A listed user without a distribution reports through the same mechanism and
    epsilon as a user with one point in every cell (the public default, uniform over
    the k inputs): with the same seed, the very same indices."""
    grid, _, mech, channel = setup
    users = random_users(12, 16, np.random.default_rng(31))
    listed = make_counts(users, grid)  # ids 100..111
    empty_ids = np.array([103, 107])
    keep = [i for i in range(12) if 100 + i not in empty_ids]
    sparse = make_counts([users[i] for i in keep], grid)
    sparse = UserCellCounts(user_ids=listed.user_ids[keep], indptr=sparse.indptr,
                            cells=sparse.cells, counts=sparse.counts, grid=grid,
                            n_points=0, n_outside=0, n_users_empty=2,
                            empty_user_ids=empty_ids)
    spread = [users[i] if i in keep else {c: 1 for c in range(16)} for i in range(12)]
    full = make_counts(spread, grid)
    kw = {"variant": variant, "channel": channel if variant == "linear" else None,
          "batch_size": 5}
    a = sample_population(sparse, mech, rng=np.random.default_rng(6), **kw)
    b = sample_population(full, mech, rng=np.random.default_rng(6), **kw)
    np.testing.assert_array_equal(a.user_ids, np.arange(100, 112))
    np.testing.assert_array_equal(a.indices, b.indices)


def test_the_default_input_law_is_within_e_eps_of_every_input(setup):
    """Exact check: the snapped law of the default user (direct: M[1/k]) and the snapped
    Dirac channel (the worst case) have likelihood ratios <= e^eps."""
    _, _, mech, channel = setup
    poly = grid_polytope(mech.base_measure, epsilon=mech.epsilon)
    default = mech.privatize(np.full(16, 1 / 16))
    w = snap_to_polytope(np.vstack([channel, default]), polytope=poly)
    assert ratio_at_most_exp(max_likelihood_ratio(w, poly.bits), mech.epsilon)


def test_engine_step_lists_the_users_without_a_point_inside():
    grid, _ = grid_points(4)
    users = np.array(["b", "a", "c", "c", "d", None])
    x = np.array([0.5, 7.0, np.nan, 0.2, -1.0, 0.3])
    y = np.array([0.5, 0.5, 0.5, 0.2, 0.5, 0.3])
    counts = user_cell_counts_in_memory(users, x, y, grid)
    assert counts.user_ids.tolist() == ["b", "c"]
    assert counts.empty_user_ids.tolist() == ["a", "d"] and counts.n_users_empty == 2
    mech = RandomizedResponse(16, epsilon=1.0)
    got = sample_population(counts, mech, rng=np.random.default_rng(0))
    assert got.user_ids.tolist() == ["a", "b", "c", "d"] and got.n_reports == 4


# ---------------------------------------------------------------------------------------
# Server side
# ---------------------------------------------------------------------------------------


def test_ibu_recovers_population_and_error_shrinks():
    """k-RR channel (identifiable): IBU's L1 error shrinks with the number of reports and
    is ~0 on the exact expected counts; every estimate is a distribution."""
    k, eps = 16, 1.0
    channel = RandomizedResponse(k, epsilon=eps).channel()
    theta = np.random.default_rng(0).dirichlet(np.full(k, 0.7))
    law = theta @ channel
    rng = np.random.default_rng(1)
    errors = []
    for n in (10**3, 10**4, 10**5, 10**6):
        est = estimate_linear(rng.multinomial(n, law), channel, n_iter=5000, tol=1e-12)
        assert est.shape == (k,) and np.all(est >= 0)
        assert est.sum() == pytest.approx(1.0, abs=1e-12)
        errors.append(float(np.abs(est - theta).sum()))
    assert errors[-1] < 0.25 * errors[0] and errors[-1] < 0.06
    exact = estimate_linear(law * 1e6, channel, n_iter=20000, tol=0.0)
    np.testing.assert_allclose(exact, theta, atol=2e-3)
    # the unbiased k-RR estimate agrees on the exact counts
    np.testing.assert_allclose(krr_estimate(law * 1e6, epsilon=eps), theta, atol=1e-12)


def test_ibu_on_wpm_channel_fits_the_output_law(setup):
    """WPM's channel need not be injective: IBU's predicted output law converges to the
    observed one."""
    _, _, _, channel = setup
    theta = np.random.default_rng(2).dirichlet(np.ones(16))
    law = theta @ channel
    est = estimate_linear(law, channel, n_iter=20000, tol=1e-14)
    np.testing.assert_allclose(est @ channel, law, atol=1e-4)


def test_estimate_direct_is_the_histogram():
    np.testing.assert_allclose(estimate_direct([1, 0, 3]), [0.25, 0.0, 0.75])


# ---------------------------------------------------------------------------------------
# Bad inputs name the parameter
# ---------------------------------------------------------------------------------------


def test_bad_inputs(setup):
    grid, _, mech, channel = setup
    counts = make_counts([{1: 2}, {3: 1}], grid)
    with pytest.raises(InvalidParameterError, match="variant"):
        sample_population(counts, mech, variant="both")
    with pytest.raises(InvalidParameterError, match="mechanism"):
        sample_population(counts, "wpm")
    with pytest.raises(InvalidParameterError, match="batch_size"):
        sample_population(counts, mech, batch_size=0)
    with pytest.raises(InvalidParameterError, match="bits"):
        sample_population(counts, mech, bits=64)
    with pytest.raises(InvalidParameterError, match="channel"):
        sample_population(counts, mech, variant="linear", channel=channel[:3])
    with pytest.raises(InvalidParameterError, match="channel"):
        sample_population(counts, mech, variant="direct", channel=channel)
    with pytest.raises(InvalidParameterError, match="counts"):
        sample_population(object(), mech)
    big_grid, _ = grid_points(8)
    with pytest.raises(InvalidParameterError, match="counts"):
        sample_population(make_counts([{1: 2}], big_grid), mech)  # 64 cells, k = 16
    bad = make_counts([{1: 2}], grid)
    bad = UserCellCounts(user_ids=bad.user_ids, indptr=bad.indptr, cells=np.array([16]),
                         counts=bad.counts, grid=None, n_points=2, n_outside=0,
                         n_users_empty=0)
    with pytest.raises(InvalidParameterError, match="counts.cells"):
        sample_population(bad, mech)
    with pytest.raises(InvalidParameterError, match="sample_counts"):
        estimate_linear([-1] + [1] * 15, channel)
    with pytest.raises(InvalidParameterError, match="sample_counts"):
        estimate_direct([0, 0])
    with pytest.raises(InvalidParameterError, match="channel"):
        estimate_linear(np.ones(15), channel)
    with pytest.raises(InvalidParameterError, match="n_iter"):
        estimate_linear(np.ones(16), channel, n_iter=0)
    with pytest.raises(InvalidParameterError, match="tol"):
        estimate_linear(np.ones(16), channel, tol=-1.0)
    with pytest.raises(InvalidParameterError, match="init"):
        estimate_linear(np.ones(16), channel, init=np.zeros(16))
