"""Baseline LDP sampling mechanisms (KPM, KPM per genre, exponential, k-RR): formulas,
base measures, exact and empirical privacy audits, the k-RR estimator, bad inputs.

(Named ``test_ldp_baselines.py``: ``tests/heatmaps/test_baselines.py`` exists and the
test folders are not packages, so two files of one name would collide.)

Statistical assertions use fixed seeds and state their false-alarm rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.audit import audit
from privot.privacy.types import Neighbouring
from privot.sampling.baselines import (
    exponential_expected_cost,
    exponential_mean_cost,
    exponential_sample,
    kpm,
    kpm_base_measure,
    kpm_genre,
    krr,
    krr_estimate,
    krr_probabilities,
)
from privot.sampling.device import (
    DEFAULT_BITS,
    max_likelihood_ratio,
    private_sample,
    ratio_at_most_exp,
    snap_to_polytope,
)

CONFIDENCE = 0.999  # false-alarm rate of each `violated` assertion: <= 1e-3
RUNS = 200_000

K = 5
LINE = np.arange(K, dtype=float)[:, None]  # five public points on a line
COST = np.abs(LINE - LINE.T)  # d(x_i, v_j), p = 1
IN_GROUPS = np.array([0, 0, 1, 2, 2])  # genres of the 5 inputs
OUT_GROUPS = np.array([0, 0, 1, 2, 2, 2])  # genres of 6 outputs (support mismatch)


def _baselines(eps: float):
    """name -> (mu -> BaselineOutput) at privacy ``eps``."""
    return {
        "kpm": lambda mu: kpm(mu, epsilon=eps),
        "kpm-genre": lambda mu: kpm_genre(mu, input_groups=IN_GROUPS,
                                          output_groups=OUT_GROUPS, epsilon=eps),
        "exp-expected": lambda mu: exponential_expected_cost(mu, COST, epsilon=eps),
        "exp-mean": lambda mu: exponential_mean_cost(mu, LINE, LINE, epsilon=eps, p=2.0),
        "krr": lambda mu: krr(mu, epsilon=eps),
    }


NAMES = list(_baselines(1.0))


# ---------------------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------------------


def _kl_projection_bruteforce(mu: np.ndarray, eps: float) -> np.ndarray:
    """argmin_{nu in Q_{m,eps}} KL(mu || nu) with scipy (SLSQP), m the KPM base measure."""
    k = mu.size
    c = 1.0 / (math.exp(eps) + k - 1)
    bounds = [(c, math.exp(eps) * c)] * k

    def kl(nu):
        sup = mu > 0
        return float(np.sum(mu[sup] * np.log(mu[sup] / nu[sup])))

    res = optimize.minimize(kl, np.full(k, 1.0 / k), method="SLSQP", bounds=bounds,
                            constraints=[{"type": "eq", "fun": lambda nu: nu.sum() - 1.0}],
                            options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    return res.x


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_kpm_is_the_kl_projection(eps):
    rng = np.random.default_rng(7)
    for k in (3, 4, 6):
        for _ in range(4):
            mu = rng.dirichlet(np.full(k, 0.5))
            mu[rng.integers(k)] = 0.0  # a zero entry: KL(mu||nu) still finite
            mu /= mu.sum()
            got = kpm(mu, epsilon=eps).nu
            want = _kl_projection_bruteforce(mu, eps)
            np.testing.assert_allclose(got, want, atol=2e-6)


def test_kpm_closed_forms_and_batch():
    eps, k = 1.2, 7
    c = 1 / (math.exp(eps) + k - 1)
    out = kpm(np.eye(k), epsilon=eps)
    np.testing.assert_allclose(np.diag(out.nu), math.exp(eps) * c, rtol=1e-14)
    np.testing.assert_allclose(out.nu[~np.eye(k, dtype=bool)], c, rtol=1e-14)
    np.testing.assert_allclose(out.base_measure, math.exp(eps / 2) * c, rtol=1e-14)
    uni = kpm(np.full(k, 1 / k), epsilon=eps)
    np.testing.assert_allclose(uni.nu, 1 / k, rtol=1e-14)
    assert uni.nu.shape == (k,)
    # the batch equals the rows one at a time; huge epsilon -> mu itself
    mus = np.random.default_rng(0).dirichlet(np.ones(k), size=9)
    batch = kpm(mus, epsilon=eps).nu
    for i in range(9):
        np.testing.assert_allclose(batch[i], kpm(mus[i], epsilon=eps).nu, rtol=1e-13)
    np.testing.assert_allclose(kpm(mus, epsilon=800.0).nu, mus, atol=1e-15)


def test_kpm_genre_formula():
    eps = 1.0
    mu = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    out = kpm_genre(mu, input_groups=IN_GROUPS, output_groups=OUT_GROUPS, epsilon=eps)
    nu_g = kpm(np.array([0.4, 0.2, 0.4]), epsilon=eps).nu
    want = np.array([nu_g[0] / 2, nu_g[0] / 2, nu_g[1], nu_g[2] / 3, nu_g[2] / 3, nu_g[2] / 3])
    np.testing.assert_allclose(out.nu, want, rtol=1e-13)
    m_g = kpm_base_measure(3, epsilon=eps)[0]
    np.testing.assert_allclose(out.base_measure, m_g / np.array([2, 2, 1, 3, 3, 3]),
                               rtol=1e-14)
    # a membership matrix: input 2 split over groups 1 and 2; output 5 in groups 1 and 2
    a_in = np.eye(3)[IN_GROUPS]
    a_in[2] = [0.0, 0.5, 0.5]
    a_out = np.eye(3)[OUT_GROUPS].astype(int)
    a_out[5] = [0, 1, 1]
    multi = kpm_genre(mu, input_groups=a_in, output_groups=a_out, epsilon=eps)
    nu_g = kpm(np.array([0.4, 0.1, 0.5]), epsilon=eps).nu
    want = np.array([nu_g[0] / 2, nu_g[0] / 2, nu_g[1] / 2, nu_g[2] / 3, nu_g[2] / 3,
                     nu_g[1] / 2 + nu_g[2] / 3])
    np.testing.assert_allclose(multi.nu, want, rtol=1e-13)
    assert multi.nu.sum() == pytest.approx(1.0)


def test_exponential_formulas():
    eps = 0.8
    rng = np.random.default_rng(2)
    mu = rng.dirichlet(np.ones(K), size=3)
    out = exponential_expected_cost(mu, COST, epsilon=eps)
    delta = 4.0  # every column of |i - j| on 0..4 ranges over at most [0, 4]
    assert out.params["sensitivity"] == delta
    u = -(mu @ COST)
    want = np.exp(eps * u / (2 * delta))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out.nu, want, rtol=1e-13)

    mean_out = exponential_mean_cost(mu, LINE, LINE, epsilon=eps, p=2.0)
    assert mean_out.params["sensitivity"] == 16.0  # max C with C = |x - v|^2
    mean = mu @ LINE
    u = -((mean - LINE.T) ** 2)
    want = np.exp(eps * u / 32.0)
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(mean_out.nu, want, rtol=1e-13)
    # constant columns: the output does not depend on mu -> uniform
    flat = exponential_expected_cost(mu, np.ones((K, 3)), epsilon=eps)
    np.testing.assert_allclose(flat.nu, 1 / 3)


def test_krr_formula():
    eps, k = 1.3, 6
    p, q = krr_probabilities(k, epsilon=eps)
    assert p == pytest.approx(math.exp(eps) / (math.exp(eps) + k - 1))
    assert q == pytest.approx(1 / (math.exp(eps) + k - 1))
    mu = np.random.default_rng(1).dirichlet(np.ones(k))
    out = krr(mu, epsilon=eps)
    np.testing.assert_allclose(out.nu, (math.exp(eps) * mu + 1 - mu) / (math.exp(eps) + k - 1),
                               rtol=1e-13)
    np.testing.assert_allclose(out.base_measure, kpm_base_measure(k, epsilon=eps))


# ---------------------------------------------------------------------------------------
# Base measures: every output in the polytope (floats, relative 1e-12)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_outputs_lie_in_their_polytope(name, eps):
    rng = np.random.default_rng(8)
    mus = np.vstack([np.eye(K), rng.dirichlet(np.full(K, 0.3), size=50)])
    out = _baselines(eps)[name](mus)
    m = out.base_measure
    assert np.all(out.nu >= math.exp(-eps / 2) * m * (1 - 1e-12))
    assert np.all(out.nu <= math.exp(eps / 2) * m * (1 + 1e-12))
    np.testing.assert_allclose(out.nu.sum(axis=1), 1.0, rtol=1e-14)


# ---------------------------------------------------------------------------------------
# Exact audit: Dirac inputs through the device
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_exact_audit_dirac_channel(name, eps):
    """The Dirac inputs (the extreme points of the input simplex, where each polytope
    mechanism's ratio is largest) give a channel whose exact worst likelihood ratio is
    <= e^eps (certified), and the mechanism's own nu needed no clipping (it was already
    private, the device only removed float rounding). The same mechanism run at a larger
    epsilon while eps is claimed is caught: its ratio is certified > e^eps."""
    dirac = np.eye(K)
    out = _baselines(eps)[name](dirac)
    w = snap_to_polytope(out.nu, base_measure=out.base_measure, epsilon=eps)
    assert np.abs(w / 2.0**DEFAULT_BITS - out.nu).sum(axis=1).max() < 1e-12
    assert ratio_at_most_exp(max_likelihood_ratio(w, DEFAULT_BITS), eps)
    # broken: eps doubled (x4 for the exponential mechanism, whose Dirac pairs use only
    # half of its budget: their ratio is e^{eps/2})
    factor = 4.0 if name.startswith("exp") else 2.0
    bad = _baselines(factor * eps)[name](dirac)
    wb = snap_to_polytope(bad.nu, base_measure=bad.base_measure, epsilon=factor * eps)
    assert not ratio_at_most_exp(max_likelihood_ratio(wb, DEFAULT_BITS), eps)


# ---------------------------------------------------------------------------------------
# Empirical audit: sampled outputs on two far Dirac inputs
# ---------------------------------------------------------------------------------------


def _sampler(name: str, eps: float, factor: float = 1.0):
    """Vectorised: n users with the same input, one device draw each. ``factor`` > 1
    runs the mechanism (and its polytope) at ``factor * eps``: a broken claim of eps."""
    mech = _baselines(factor * eps)[name]

    def sampler(data, n, rng):
        mu = np.zeros((n, K))
        mu[:, data] = 1.0
        out = mech(mu)
        return private_sample(out.nu, base_measure=out.base_measure, epsilon=factor * eps,
                              rng=rng).indices.astype(float)
    return sampler


@pytest.mark.parametrize("name,power", [("kpm", 0.8), ("kpm-genre", 0.8), ("krr", 0.8),
                                        ("exp-expected", 0.3), ("exp-mean", 0.3)])
def test_empirical_audit(name, power):
    """Two Dirac inputs at the far ends of the line, 200k runs each, confidence 0.999:
    a correct mechanism is flagged with probability <= 1e-3; the lower bound shows the
    audit has power; the broken mechanism is flagged."""
    eps = 1.0
    res = audit(_sampler(name, eps), 0, K - 1, epsilon=eps, n_runs=RUNS,
                confidence=CONFIDENCE, rng=np.random.default_rng(31))
    assert not res.violated, res.summary()
    assert res.epsilon_lower > power, res.summary()
    factor = 4.0 if name.startswith("exp") else 2.0
    broken = audit(_sampler(name, eps, factor), 0, K - 1, epsilon=eps, n_runs=RUNS,
                   confidence=CONFIDENCE, rng=np.random.default_rng(32))
    assert broken.violated, broken.summary()


def test_exponential_sample_reuses_the_core_mechanism():
    """One user at a time through privacy.mechanisms.exponential_mechanism: relation
    local, and the draws follow exponential_expected_cost's nu (chi-square, 3000 draws,
    false-alarm rate 1e-3; the core mechanism's rate differs by its 2^-k grid margin)."""
    eps = 2.0
    mu = np.array([0.6, 0.4, 0.0, 0.0, 0.0])
    rng = np.random.default_rng(9)
    rel = exponential_sample(mu, COST, epsilon=eps, rng=rng)
    assert rel.relation is Neighbouring.LOCAL and rel.secure is False
    n = 3000
    idx = np.array([exponential_sample(mu, COST, epsilon=eps, rng=rng).value
                    for _ in range(n)])
    nu = exponential_expected_cost(mu, COST, epsilon=eps).nu
    assert stats.chisquare(np.bincount(idx, minlength=K), n * nu).pvalue > 1e-3


# ---------------------------------------------------------------------------------------
# k-RR estimator
# ---------------------------------------------------------------------------------------


def test_krr_estimate_is_unbiased():
    eps, k = 1.0, 6
    rng = np.random.default_rng(13)
    users = rng.dirichlet(np.full(k, 0.5), size=400_000)
    avg = users.mean(axis=0)
    out = krr(users, epsilon=eps)
    # exact: the expected counts give back the average mu
    np.testing.assert_allclose(krr_estimate(out.nu.sum(axis=0), epsilon=eps), avg,
                               atol=1e-12)
    # sampled: each coordinate within 5 standard deviations (false alarm <= 6 * 6e-7)
    idx = private_sample(out.nu, base_measure=out.base_measure, epsilon=eps,
                         rng=rng).indices
    counts = np.bincount(idx, minlength=k)
    est = krr_estimate(counts, epsilon=eps, k=k)
    p, q = krr_probabilities(k, epsilon=eps)
    nu_bar = out.nu.mean(axis=0)
    sd = np.sqrt(nu_bar * (1 - nu_bar) / users.shape[0]) / (p - q)
    assert np.all(np.abs(est - avg) < 5 * sd)
    proj = krr_estimate(counts, epsilon=eps, project=True)
    assert np.all(proj >= 0) and proj.sum() == pytest.approx(1.0)


def test_krr_estimate_projection_and_validation():
    est = krr_estimate(np.array([10, 5, 3, 0]), epsilon=1.0)
    assert est.sum() == pytest.approx(1.0) and est.min() < 0
    proj = krr_estimate(np.array([10, 5, 3, 0]), epsilon=1.0, project=True)
    assert proj.min() == 0.0 and proj.sum() == pytest.approx(1.0)
    with pytest.raises(InvalidDataError, match="counts"):
        krr_estimate(np.zeros(4), epsilon=1.0)
    with pytest.raises(InvalidDataError, match="counts"):
        krr_estimate(np.array([3, -1, 2]), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="k"):
        krr_estimate(np.array([3, 1, 2]), epsilon=1.0, k=4)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        krr_estimate(np.array([3, 1, 2]), epsilon=0.0)


# ---------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon(name, eps):
    with pytest.raises(InvalidParameterError, match="epsilon"):
        _baselines(eps)[name](np.full(K, 1 / K))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mu", [np.array([0.5, 0.5, 0.5, 0.0, 0.0]),
                                np.array([1.2, -0.2, 0.0, 0.0, 0.0]),
                                np.array([np.nan, 1.0, 0.0, 0.0, 0.0]),
                                np.ones((2, 3, 5)) / 5])
def test_mu_not_a_distribution(name, mu):
    with pytest.raises(InvalidDataError, match="mu"):
        _baselines(1.0)[name](mu)


def test_bad_shapes_and_groups():
    mu = np.full(K, 1 / K)
    with pytest.raises(InvalidDataError, match="cost"):
        exponential_expected_cost(mu, COST[:4], epsilon=1.0)  # k mismatch
    with pytest.raises(InvalidDataError, match="cost"):
        exponential_expected_cost(mu, np.zeros((K, 0)), epsilon=1.0)  # k_v = 0
    with pytest.raises(InvalidDataError, match="cost"):
        exponential_expected_cost(mu, np.ones(K), epsilon=1.0)  # not 2-D
    with pytest.raises(InvalidDataError, match="cost"):
        exponential_expected_cost(mu, -COST, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="output_points"):
        exponential_mean_cost(mu, LINE, np.zeros((0, 1)), epsilon=1.0)  # k_v = 0
    with pytest.raises(InvalidDataError, match="dimension"):
        exponential_mean_cost(mu, LINE, np.zeros((3, 2)), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="p"):
        exponential_mean_cost(mu, LINE, LINE, epsilon=1.0, p=0.5)
    with pytest.raises(InvalidParameterError, match="output_groups"):
        kpm_genre(mu, input_groups=IN_GROUPS, output_groups=np.array([0, 0, 2]),
                  epsilon=1.0)  # group 1 has no output
    with pytest.raises(InvalidDataError, match="output_groups"):
        kpm_genre(mu, input_groups=IN_GROUPS, output_groups=np.array([], dtype=int),
                  epsilon=1.0)  # k_v = 0
    with pytest.raises(InvalidDataError, match="input_groups"):
        kpm_genre(mu, input_groups=IN_GROUPS[:4], output_groups=OUT_GROUPS, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="input_groups"):
        kpm_genre(mu, input_groups=np.full((K, 3), 0.5), output_groups=OUT_GROUPS,
                  epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="k"):
        kpm_base_measure(0, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="k"):
        krr(np.array([1.0]), epsilon=1.0)
    with pytest.raises(InvalidDataError, match="mu"):
        exponential_sample(np.full((2, K), 1 / K), COST, epsilon=1.0)
