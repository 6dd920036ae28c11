"""Tests of the shuffle-model simulation (paper 002, App. F; BBGN20): ``heatmaps/shuffle.py``.

Statistical tests use fixed seeds and state their false-alarm rate: every chi-square
test rejects at p < 1e-3 (each one alone would fail a correct implementation with
probability <= 1e-3), and the audit uses confidence 0.999.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privot.errors import BudgetExceededError, InvalidDataError, InvalidParameterError
from privot.heatmaps import Grid, pyramid, user_distributions_sum
from privot.heatmaps.shuffle import (
    MAX_SIMULATED_ENTRIES,
    SIMULATION_NOTE,
    _secure_permutation,
    analyser_sum,
    centred,
    shuffle_heatmap,
    shuffle_parameters,
    shuffle_sum,
    split_shares,
    user_scaled_pyramids,
)
from privot.privacy import noise
from privot.privacy.audit import audit
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.types import Neighbouring

ALPHA = 1e-3  # false-alarm rate of each chi-square test

# a tiny protocol: 2 x 2 grid, w = 1 -> levels 0 and 1 measured, m = 1 + 4 = 5
TINY_GRID = Grid((0.0, 2.0, 0.0, 2.0), 2)
N_TINY = 20


def _tiny_data(seed=0):
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(N_TINY), 3)  # 3 points each: values in thirds
    return users, rng.uniform(0, 2, users.size), rng.uniform(0, 2, users.size)


def _dlap_cdf(x, b):
    """CDF of the discrete Laplace P[X = x] = (1-p)/(1+p) p^|x|, p = e^{-1/b}."""
    p = math.exp(-1.0 / b)
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= 0, 1.0 - p ** (np.floor(x) + 1) / (1 + p),
                    p ** (-np.floor(x)) / (1 + p))


def _chi2_dlap(samples, b, n_bins=20):
    """Chi-square p-value of integer samples against the discrete Laplace of scale b,
    with bins at the integer quantiles k/n_bins of the reference distribution."""
    lo = -int(60 * b) - 10
    grid = np.arange(lo, -lo + 1)
    cdf = _dlap_cdf(grid, b)
    edges = np.unique(grid[np.searchsorted(cdf, np.arange(1, n_bins) / n_bins)])
    # bins: (-inf, e0], (e0, e1], ..., (e_last, inf)
    probs = np.diff(np.concatenate([[0.0], _dlap_cdf(edges, b), [1.0]]))
    counts = np.bincount(np.searchsorted(edges, samples, side="left"),
                         minlength=edges.size + 1)
    return stats.chisquare(counts, probs * len(samples)).pvalue


# -- public parameters and communication -------------------------------------------------


def test_parameters_and_communication_match_the_formulas():
    p = shuffle_parameters(n_users_public=50, B=256, epsilon=5.0, delta=1e-5, levels=6)
    # m: levels q0 = floor(log2 sqrt 20) = 2 .. 6
    assert p.start_level == 2 and p.m == 16 + 64 + 256 + 1024 + 4096
    assert math.fsum(p.level_epsilons) == pytest.approx(5.0)
    assert p.noise_scales == pytest.approx(tuple(256 / e for e in p.level_epsilons))
    # modulus: q = 2 (B n + T + 1), T = ceil(max b_i ln(2 m / beta))
    t = math.ceil(max(p.noise_scales) * math.log(2 * p.m / p.wrap_probability))
    assert p.tail_bound == t and p.modulus == 2 * (256 * 50 + t + 1)
    # r (App. F, footnote 11) and the bits, recomputed independently
    r = math.ceil((2 * math.log(math.exp(5.0) + 1) + 2 * math.log(p.m / 1e-5)
                   + math.log(p.modulus)) / math.log(50) + 1)
    assert p.n_messages == r
    assert p.bits_per_message == math.ceil(math.log2(p.m * p.modulus))
    assert p.bits_per_user == r * p.m * math.ceil(math.log2(p.m * p.modulus))
    assert p.messages_per_user == r * p.m


def test_simulated_message_count_is_n_r_m():
    users, x, y = _tiny_data()
    p = shuffle_parameters(n_users_public=N_TINY, B=4, epsilon=1.0, delta=1e-6, levels=1, w=1)
    z = user_scaled_pyramids(users, x, y, grid=TINY_GRID, B=4, start_level=0,
                             n_users_public=N_TINY)
    run = shuffle_sum(z, params=p, rng=np.random.default_rng(0))
    assert run.n_messages_total == N_TINY * p.n_messages * p.m


# -- encoding --------------------------------------------------------------------------


def test_user_scaled_pyramids_are_exact_floors():
    rng = np.random.default_rng(1)
    grid = Grid((0.0, 1.0, 0.0, 1.0), 8)
    users = rng.integers(0, 7, 60)
    x, y = rng.uniform(-0.1, 1.1, 60), rng.uniform(-0.1, 1.1, 60)
    b, q0, n_pub = 7, 1, 9
    z = user_scaled_pyramids(users, x, y, grid=grid, B=b, start_level=q0, n_users_public=n_pub)
    assert z.shape == (n_pub, 4 + 16 + 64)
    cells = grid.assign(x, y)
    ids = np.unique(users)
    for row, u in enumerate(ids):
        mine = cells.cells[users[cells.kept] == u]
        offset = 0
        for i in range(q0, 4):
            sh, side = 3 - i, 1 << i
            for c in range(side * side):
                cnt = int(np.sum(((mine // 8) >> sh) * side + ((mine % 8) >> sh) == c))
                expected = math.floor(Fraction(b * cnt, max(len(mine), 1)))
                assert z[row, offset + c] == expected
            offset += side * side
    assert not z[len(ids):].any()  # participants without data send zeros (plus noise)


# -- (a) the summed noise is the discrete Laplace of scale B / eps_i ---------------------

_RUNS = {}


def _runs(b, n_runs=1000):
    """``n_runs`` protocol runs on the tiny data (cached): (params, exact y, z sums,
    z' samples of shape (n_runs, m))."""
    if b not in _RUNS:
        users, x, y = _tiny_data()
        p = shuffle_parameters(n_users_public=N_TINY, B=b, epsilon=1.0, delta=1e-6, levels=1,
                               w=1)
        z = user_scaled_pyramids(users, x, y, grid=TINY_GRID, B=b, start_level=0,
                                 n_users_public=N_TINY)
        s = user_distributions_sum(users, x, y, TINY_GRID).sums
        y_true = np.concatenate([lv.ravel() for lv in pyramid(s)])
        gen = np.random.default_rng(100 + b)
        out = np.array([shuffle_sum(z, params=p, rng=gen).z_prime for _ in range(n_runs)])
        _RUNS[b] = (p, y_true, z.sum(axis=0), out)
    return _RUNS[b]


@pytest.mark.parametrize("b", [8, 1024])
def test_summed_noise_is_discrete_laplace_with_scale_b_over_eps(b):
    """B (y' - floor-rounded truth) = z' - sum_j z^j must be DLap(B / eps_i) exactly, for
    every B. Level 0: 1,000 samples; level 1: 4,000 (4 coordinates per run). Four tests
    in all at p < 1e-3 each."""
    p, _, z_sum, zp = _runs(b)
    noise_draws = zp - z_sum
    assert _chi2_dlap(noise_draws[:, 0], p.noise_scales[0]) > ALPHA
    assert _chi2_dlap(noise_draws[:, 1:].ravel(), p.noise_scales[1]) > ALPHA


def test_the_garbled_polya_parameter_is_rejected_by_the_same_test():
    """Power check: with the extracted text's Polya(1/n, e^{-eps_i}) (scale 1/eps_i instead
    of B/eps_i) the summed noise is far too small and the chi-square test rejects."""
    p, _, _, _ = _runs(8)
    gen = np.random.default_rng(5)
    wrong = noise.polya_laplace_shares(N_TINY, 1.0 / p.level_epsilons[1], size=4000,
                                       rng=gen).sum(axis=0)
    assert _chi2_dlap(wrong, p.noise_scales[1]) < 1e-12


def test_error_shrinks_to_the_central_mechanism_as_b_grows():
    """Mean |y' - y| on the level-1 coordinates (4,000 samples per B) against the central
    Laplace mechanism's E|Lap(1/eps_1)| = 1/eps_1 = 2.414. Measured: B = 1: 5.12,
    B = 8: 2.46, B = 64: 2.35, B = 1024: 2.43. The rounding bias is deterministic and
    shrinks monotonically (B multiplied each time), bounded by n / B."""
    central = None
    maes, biases = {}, {}
    for b in (1, 8, 64, 1024):
        p, y_true, z_sum, zp = _runs(b)
        central = 1.0 / p.level_epsilons[1]
        maes[b] = float(np.abs(zp[:, 1:] / b - y_true[1:]).mean())
        biases[b] = float(np.abs(z_sum / b - y_true).max())
        assert biases[b] <= N_TINY / b
    assert biases[1] >= biases[8] >= biases[64] >= biases[1024]
    assert biases[1024] < 0.02
    assert maes[1] > central + 1.0  # B = 1 loses most fractional mass to the floor
    # standard error of each mean ~ central / sqrt(4000) = 0.038: 0.1 * central is 6 se
    for b in (64, 1024):
        assert abs(maes[b] - central) < 0.1 * central


# -- (b) modular sum with centred representatives ---------------------------------------


@pytest.mark.parametrize("q", [7, 10, 2**40 + 6])
def test_centred_representatives(q):
    half = q // 2
    t = np.array([-((q - 1) // 2), -1, 0, 1, half], dtype=np.int64)  # ends of (-q/2, q/2]
    np.testing.assert_array_equal(centred(t % q, q), t)
    np.testing.assert_array_equal(centred(t + 3 * q, q), t)
    assert np.all(centred(np.arange(q if q < 100 else 100), q) > -q / 2)


def test_analyser_recovers_negative_totals_exactly():
    rng = np.random.default_rng(3)
    q, n, r, m = 1000, 6, 4, 9
    totals = rng.integers(-q // 2 + 1, q // 2 + 1, m)
    totals[:3] = [-499, -1, 500]
    # n users' integers (negative ones too) summing to the totals
    vals = rng.integers(-300, 300, (n, m))
    vals[-1] = totals - vals[:-1].sum(axis=0)
    shares = split_shares(vals, r=r, q=q, rng=rng)  # (n, r, m)
    labels = np.broadcast_to(np.arange(m), shares.shape).ravel()
    perm = rng.permutation(labels.size)
    np.testing.assert_array_equal(
        analyser_sum(labels[perm], shares.ravel()[perm], m=m, q=q), totals)


def test_protocol_decodes_negative_noise_only_totals():
    """Participants without data: every total is noise only, negative about half of the
    time; the centred decoding returns them exactly (no wrap)."""
    p = shuffle_parameters(n_users_public=5, B=16, epsilon=1.0, delta=1e-6, levels=2, w=1)
    z = np.zeros((5, p.m), dtype=np.int64)
    run = shuffle_sum(z, params=p, rng=np.random.default_rng(8))
    assert np.any(run.exact_total < 0)
    np.testing.assert_array_equal(run.z_prime, run.exact_total)
    assert run.wrapped.size == 0


def test_the_papers_modulus_q_equals_bn_loses_the_root_total():
    """Derivation check: with q = B n every participant's root coordinate is B, the total
    B n is 0 mod q, and no representative choice recovers it; our modulus does."""
    n, b = 6, 4
    root = np.full((n, 1), b)
    for q, expected in ((b * n, 0), (shuffle_parameters(
            n_users_public=n, B=b, epsilon=1.0, delta=1e-6, levels=0, w=1).modulus, b * n)):
        sh = split_shares(root, r=3, q=q, rng=np.random.default_rng(0))
        assert analyser_sum(np.zeros(sh.size, dtype=int), sh.ravel(), m=1, q=q)[0] == expected


# -- (d) split shares are uniform, whatever the input ----------------------------------


@pytest.mark.parametrize("value", [0, 5])
def test_each_share_and_any_r_minus_1_shares_are_uniform(value):
    """q = 7, r = 3, 7,000 splits of the same value: each share alone is uniform on Z_7
    and the pairs (w1, w2), (w1, w3) are uniform on Z_7^2 (any r - 1 shares are
    independent of the input). Five chi-square tests per value at p < 1e-3 each."""
    q, r, n = 7, 3, 7000
    sh = split_shares(np.full((n, 1), value), r=r, q=q, rng=np.random.default_rng(value))
    sh = sh[:, :, 0]
    assert np.all(sh.sum(axis=1) % q == value % q)
    for b in range(r):
        assert stats.chisquare(np.bincount(sh[:, b], minlength=q)).pvalue > ALPHA
    for a, b in ((0, 1), (0, 2)):
        pairs = np.bincount(sh[:, a] * q + sh[:, b], minlength=q * q)
        assert stats.chisquare(pairs).pvalue > ALPHA


def test_shuffler_permutation_is_uniform():
    gen = np.random.default_rng(4)
    counts = {}
    for _ in range(6000):
        key = tuple(_secure_permutation(3, gen).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    assert stats.chisquare(list(counts.values())).pvalue > ALPHA


# -- privacy audit of the analyser's output ---------------------------------------------

CONFIDENCE = 0.999  # false-alarm rate of the `violated` assertion: <= 1e-3


def test_audit_of_the_summed_release_zero_out_neighbours():
    """Neighbours with the participants fixed (n = 4): in D1 participant 3 holds 3 points,
    in D0 none. Statistic: the log-likelihood ratio of the decoded sums under the central
    discrete Laplace, T = sum_a (|z'_a - A_a| - |z'_a - B_a|) / b_a. The sums are the
    release the (eps, delta) claim reduces to (BBGN20), and they are pure eps-DP, so the
    audit uses delta = 0. 2,000 runs per input (about 4 s); measured lower bound 0.35
    (empirical 0.65) for the claimed 1."""
    b_scale, n = 4, 4
    users0, x0, y0 = np.array([0, 1, 1, 2]), np.array([0.5, 1.5, 0.2, 1.2]), \
        np.array([0.5, 0.5, 1.5, 1.7])
    users1 = np.append(users0, [3, 3, 3])
    x1, y1 = np.append(x0, [0.1, 0.3, 1.9]), np.append(y0, [0.1, 0.2, 1.9])
    p = shuffle_parameters(n_users_public=n, B=b_scale, epsilon=1.0, delta=1e-6, levels=1,
                           w=1)
    z0 = user_scaled_pyramids(users0, x0, y0, grid=TINY_GRID, B=b_scale, start_level=0,
                              n_users_public=n)
    z1 = user_scaled_pyramids(users1, x1, y1, grid=TINY_GRID, B=b_scale, start_level=0,
                              n_users_public=n)
    a_tot, b_tot = z0.sum(axis=0), z1.sum(axis=0)
    assert np.abs(b_tot - a_tot)[:1].sum() <= b_scale  # level 0: L1 change <= B
    assert np.abs(b_tot - a_tot)[1:].sum() <= b_scale  # level 1
    scales = np.array([p.noise_scales[0]] + [p.noise_scales[1]] * 4)

    def sampler(z, k, rng):
        out = np.empty(k)
        for i in range(k):
            zp = shuffle_sum(z, params=p, rng=rng).z_prime
            out[i] = float(np.sum((np.abs(zp - a_tot) - np.abs(zp - b_tot)) / scales))
        return out

    res = audit(sampler, z0, z1, epsilon=1.0, n_runs=2000, confidence=CONFIDENCE, rng=21)
    assert not res.violated, res.summary()


# -- the heatmap ---------------------------------------------------------------------------


def test_shuffle_heatmap_end_to_end_and_accounting():
    rng = np.random.default_rng(6)
    n = 100
    users = np.repeat(np.arange(n - 10), 4)  # 10 participants hold no data
    x = np.clip(0.25 + 0.05 * rng.standard_normal(users.size), 0, 0.99)
    y = np.clip(0.7 + 0.05 * rng.standard_normal(users.size), 0, 0.99)
    grid = Grid((0.0, 1.0, 0.0, 1.0), 16)
    acct = PrivacyAccountant(6.0, 1e-4)
    res = shuffle_heatmap(users, x, y, grid=grid, epsilon=5.0, delta=1e-5, B=64,
                          n_users_public=n, accountant=acct, rng=np.random.default_rng(7))
    assert res.distribution.shape == (16, 16)
    assert res.distribution.sum() == pytest.approx(1.0)
    # the cluster's quadrant (x < 0.5, y >= 0.5: rows 8.., cols ..8) holds the mass
    assert res.distribution[8:, :8].sum() > 0.9
    # decoded sums estimate P_i s; the root estimates the 90 users with data
    s = user_distributions_sum(users, x, y, grid).sums
    exact = pyramid(s, start_level=res.parameters.start_level)
    for dec, scaled, ex, i in zip(res.decoded, res.measurements, exact,
                                  range(res.parameters.start_level, 5), strict=True):
        np.testing.assert_allclose(scaled, np.ldexp(dec, -i))
        assert np.abs(dec - ex).max() < 40 / res.parameters.level_epsilons[i - 2]
    cur = res.curator_only
    assert (cur.n_users, cur.n_participants_without_data, cur.wrapped_coordinates) == (90, 10, 0)
    assert not res.secure and res.simulated == SIMULATION_NOTE
    assert res.bits_per_user == res.parameters.bits_per_user
    (entry,) = acct.ledger
    assert entry.cost.epsilon == pytest.approx(5.0) and entry.cost.delta == 1e-5
    assert entry.relation is Neighbouring.ADD_REMOVE and entry.mechanism == "shuffle-bbgn20"
    with pytest.raises(BudgetExceededError):
        shuffle_heatmap(users, x, y, grid=grid, epsilon=5.0, delta=1e-5, B=64,
                        n_users_public=n, accountant=acct, rng=np.random.default_rng(7))
    assert len(acct.ledger) == 1


def test_shuffle_heatmap_refusals():
    users, x, y = _tiny_data()
    kw = dict(grid=TINY_GRID, epsilon=1.0, delta=1e-6, B=4, w=1)
    with pytest.raises(InvalidDataError, match="n_users_public"):
        shuffle_heatmap(users, x, y, n_users_public=N_TINY - 1, **kw)
    with pytest.raises(InvalidParameterError, match="max_users_simulated"):
        shuffle_heatmap(users, x, y, n_users_public=50, max_users_simulated=40, **kw)
    big = Grid((0.0, 1.0, 0.0, 1.0), 128)  # m = 21,840 coordinates from level 2
    with pytest.raises(InvalidParameterError, match=str(MAX_SIMULATED_ENTRIES)):
        shuffle_heatmap(users, x, y, grid=big, epsilon=1.0, delta=1e-6, B=4,
                        n_users_public=1000)
    with pytest.raises(InvalidParameterError, match="delta"):
        shuffle_heatmap(users, x, y, n_users_public=N_TINY, **{**kw, "delta": 0.0})
    with pytest.raises(InvalidParameterError, match="n_users_public"):
        shuffle_parameters(n_users_public=1, B=4, epsilon=1.0, delta=1e-6, levels=1)
    with pytest.raises(InvalidParameterError, match="B"):
        shuffle_parameters(n_users_public=4, B=0, epsilon=1.0, delta=1e-6, levels=1)
