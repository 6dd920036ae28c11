"""Brute-force checks of the subspace method's sensitivity bounds (replace-one, B_0(R)).

:mod:`privot.barycenters.subspace` calibrates its noise to three closed-form bounds,
for points in the ball of radius R = 1/2:

====================  ==========================  ==========================
statistic             L2                          L1
====================  ==========================  ==========================
second moment         sqrt(2) R^2                 (d0 + 1) R^2
moments               sqrt(4 R^2 + 2 R^4)         2 R sqrt(d') + 2 R^2
Lloyd round           2 R                         2 R + 2 R sqrt(d')
====================  ==========================  ==========================

Each test draws many datasets and neighbours (one row replaced by another point of the
ball) from random and adversarial families (uniform in the ball, on the sphere,
antipodal, orthogonal, on coordinate axes, on diagonals; for the Lloyd round random
released centres, the replaced point staying in its cell or moving to another one) and
asserts ``||f(D) - f(D')|| <= bound + 1e-12`` through the module's own statistic
functions. Tightness is asserted only where it holds:

* exactly attained: second moment L2 (d0 >= 2: ``R e1 -> R e2``), Lloyd L2 (a sphere
  point moving to the antipodal point in another cell), Lloyd L1 (the diagonal point
  ``-R/sqrt(d') (1, ..., 1)`` moving to its antipode in another cell);
* not attained, but safe (over-estimates; the noise is larger than needed):

  - moments L2: the two terms cannot be maximal together (``|z - z'| = 2R`` forces
    ``z' = -z``, whose squares agree); the supremum is ``2R = 1`` (antipodes; numerical
    search with restarts finds nothing larger), 0.943 of the bound;
  - moments L1: the supremum is above the antipodal diagonal pair's ``2R sqrt(d')``
    (numerical search: 1.665, 1.943, 2.202 for d' = 2, 3, 4, i.e. 0.87-0.88 of the
    bound; 2R = 1 = 2/3 of it for d' = 1);
  - second moment L1: per point the statistic has L1 norm ``(|y|_1^2 + |y|_2^2)/2 <=
    (d0 + 1) R^2 / 2``, but the diagonal entries ``y_i^2 >= 0`` cannot change sign, so
    the two points' norms never add up: numerical suprema 0.25, 0.559 (sqrt 5 R^2),
    0.718, 0.901 for d0 = 1..4, i.e. 0.5-0.75 of the bound.

The test asserts these explicit lower ends (what a pair reaches) so a future tightening
of a bound below what is attainable fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privot.barycenters.subspace import (
    RADIUS,
    check_basis,
    dct_basis,
    lloyd_sensitivity,
    lloyd_statistic,
    moment_sensitivity,
    moment_statistic,
    nearest_cells,
    second_moment_sensitivity,
    second_moment_statistic,
)
from privot.errors import InvalidParameterError

R = RADIUS
TOL = 1e-12
DIMS = (1, 2, 3, 5)
N_ROWS = 6  # rows per dataset; the replaced one is row 0
NORMS = {"l2": lambda v: float(np.linalg.norm(v)), "l1": lambda v: float(np.abs(v).sum())}


# ------------------------------------------------------------------------------------
# point families in the ball B_0(R)
# ------------------------------------------------------------------------------------


def _sphere(rng, n, d):
    x = rng.normal(size=(n, d))
    return R * x / np.linalg.norm(x, axis=1, keepdims=True)


def _ball(rng, n, d):
    return _sphere(rng, n, d) * rng.uniform(size=(n, 1)) ** (1.0 / d)


def _axis(rng, n, d):
    out = np.zeros((n, d))
    out[np.arange(n), rng.integers(0, d, n)] = R * rng.choice([-1.0, 1.0], n)
    return out


def _diagonal(rng, n, d):
    return R / math.sqrt(d) * rng.choice([-1.0, 1.0], size=(n, d))


def _orthogonal(rng, n, d):
    """Pairs (x, x') on the sphere with x . x' = 0 (d >= 2); x' = -x for d = 1."""
    x = _sphere(rng, n, d)
    if d == 1:
        return x, -x
    y = rng.normal(size=(n, d))
    y -= (np.sum(y * x, axis=1) / (R * R))[:, None] * x
    return x, R * y / np.linalg.norm(y, axis=1, keepdims=True)


def _replacement_pairs(rng, d, n_each=100):
    """(x, x') pairs: the replaced row and its replacement, from every family."""
    pairs = [(_ball(rng, n_each, d), _ball(rng, n_each, d)),
             (_sphere(rng, n_each, d), _sphere(rng, n_each, d))]
    s = _sphere(rng, n_each, d)
    pairs.append((s, -s))  # antipodal
    pairs.append(_orthogonal(rng, n_each, d))
    pairs.append((_axis(rng, n_each, d), _axis(rng, n_each, d)))
    pairs.append((_diagonal(rng, n_each, d), _diagonal(rng, n_each, d)))
    g = _diagonal(rng, n_each, d)
    pairs.append((g, -g))
    pairs.append((_sphere(rng, n_each, d), np.zeros((n_each, d))))  # to the centre
    x = np.concatenate([p[0] for p in pairs])
    xp = np.concatenate([p[1] for p in pairs])
    assert np.all(np.linalg.norm(x, axis=1) <= R + 1e-15)
    assert np.all(np.linalg.norm(xp, axis=1) <= R + 1e-15)
    return x, xp


def _datasets(rng, x, d):
    """One dataset per replaced row: row 0 is x[i], the other rows from mixed families."""
    rest = np.concatenate([_ball(rng, len(x) * (N_ROWS - 1) // 2, d),
                           _sphere(rng, len(x) * (N_ROWS - 1)
                                   - len(x) * (N_ROWS - 1) // 2, d)])
    rest = rng.permutation(rest).reshape(len(x), N_ROWS - 1, d)
    return np.concatenate([x[:, None, :], rest], axis=1)


def _max_change(stat, x, xp, data, norm):
    worst = 0.0
    for i in range(len(x)):
        d0, d1 = data[i], data[i].copy()
        d1[0] = xp[i]
        worst = max(worst, NORMS[norm](stat(d0) - stat(d1)))
    return worst


# ------------------------------------------------------------------------------------
# the bounds hold
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", DIMS)
def test_second_moment_bound_holds(d, norm):
    rng = np.random.default_rng(100 + d)
    x, xp = _replacement_pairs(rng, d)
    worst = _max_change(second_moment_statistic, x, xp, _datasets(rng, x, d), norm)
    assert second_moment_statistic(np.zeros((1, d))).shape == (d * (d + 1) // 2,)
    assert worst <= second_moment_sensitivity(d, norm) + TOL, (worst, d, norm)
    assert worst > 0.4 * second_moment_sensitivity(d, norm)  # the search is not vacuous


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", DIMS)
def test_moment_bound_holds(d, norm):
    rng = np.random.default_rng(200 + d)
    x, xp = _replacement_pairs(rng, d)
    worst = _max_change(moment_statistic, x, xp, _datasets(rng, x, d), norm)
    assert worst <= moment_sensitivity(d, norm) + TOL, (worst, d, norm)
    assert worst > 0.6 * moment_sensitivity(d, norm)


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", DIMS)
def test_moment_bound_with_the_whole_second_moment_holds(d, norm):
    """``covariance``: the sum and the upper triangle of the second moment, alone and
    with the sum in a larger basis (random orthonormal V)."""
    rng = np.random.default_rng(230 + d)
    x, xp = _replacement_pairs(rng, d)
    data = _datasets(rng, x, d)
    stat = lambda y: moment_statistic(y, covariance=True)  # noqa: E731
    assert stat(data[0]).shape == (d + d * (d + 1) // 2,)
    worst = _max_change(stat, x, xp, data, norm)
    bound = moment_sensitivity(d, norm, covariance=True)
    assert worst <= bound + TOL, (worst, d, norm)
    assert worst > 0.5 * bound
    d0 = d + 2
    x0, xp0 = _replacement_pairs(rng, d0, n_each=40)
    v = np.linalg.qr(rng.normal(size=(d0, d)))[0]
    worst = _max_change(lambda y: moment_statistic(y, v, covariance=True), x0, xp0,
                        _datasets(rng, x0, d0), norm)
    assert worst <= moment_sensitivity(d, norm, mean_dim=d0, covariance=True) + TOL


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d0", [d for d in DIMS if d >= 2])
def test_moment_bound_with_the_sum_in_the_whole_basis(d0, norm):
    """``complement_mean``: the sum in all d0 coordinates, the squares in a released
    subspace V (random orthonormal columns, d' < d0, and the axes themselves)."""
    rng = np.random.default_rng(250 + d0)
    x, xp = _replacement_pairs(rng, d0)
    data = _datasets(rng, x, d0)
    for dim in range(1, d0):
        for v in (np.linalg.qr(rng.normal(size=(d0, dim)))[0], np.eye(d0)[:, :dim]):
            worst = _max_change(lambda y, v=v: moment_statistic(y, v), x, xp, data, norm)
            bound = moment_sensitivity(dim, norm, mean_dim=d0)
            assert moment_statistic(data[0], v).shape == (d0 + dim,)
            assert worst <= bound + TOL, (worst, bound, d0, dim, norm)
            assert worst > 0.5 * bound


@pytest.mark.parametrize("norm", ["l2", "l1"])
@pytest.mark.parametrize("d", DIMS)
def test_lloyd_bound_holds_with_random_centres(d, norm):
    """Random released centres (1 to 4, inside and outside the ball, duplicates
    included), the replaced point staying in its cell or moving to another."""
    rng = np.random.default_rng(300 + d)
    x, xp = _replacement_pairs(rng, d)
    data = _datasets(rng, x, d)
    worst, moved, stayed = 0.0, 0, 0
    for i in range(len(x)):
        q = int(rng.integers(1, 5))
        centres = rng.uniform(-0.8, 0.8, size=(q, d))
        if q > 1 and i % 7 == 0:
            centres[1] = centres[0]  # tie: the lowest index wins, in both datasets
        if i % 3 == 0:  # centres placed so that x and x' lie in different cells
            centres = np.concatenate([0.1 * x[i][None], 0.1 * xp[i][None], centres])
        d1 = data[i].copy()
        d1[0] = xp[i]
        a, b = nearest_cells(np.stack([x[i], xp[i]]), centres)
        moved += int(a != b)
        stayed += int(a == b)
        change = lloyd_statistic(data[i], centres) - lloyd_statistic(d1, centres)
        assert change.shape == (len(centres) * (d + 1),)
        worst = max(worst, NORMS[norm](change))
    assert moved > 80 and stayed > 80  # both cases are exercised
    assert worst <= lloyd_sensitivity(d, norm) + TOL, (worst, d, norm)
    assert worst > 0.9 * lloyd_sensitivity(d, norm)


def test_bounds_scale_with_the_radius():
    """The functions' radius argument: the bounds hold in B_0(1) too (spot check)."""
    rng = np.random.default_rng(7)
    for d in (2, 4):
        x = rng.normal(size=(400, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        xp = -x[::-1]
        centres = rng.uniform(-1, 1, size=(3, d))
        for norm in ("l1", "l2"):
            w2 = max(NORMS[norm](second_moment_statistic(a[None])
                                 - second_moment_statistic(b[None]))
                     for a, b in zip(x, xp, strict=True))
            wm = max(NORMS[norm](moment_statistic(a[None]) - moment_statistic(b[None]))
                     for a, b in zip(x, xp, strict=True))
            wl = max(NORMS[norm](lloyd_statistic(a[None], centres, radius=1.0)
                                 - lloyd_statistic(b[None], centres, radius=1.0))
                     for a, b in zip(x, xp, strict=True))
            assert w2 <= second_moment_sensitivity(d, norm, radius=1.0) + TOL
            assert wm <= moment_sensitivity(d, norm, radius=1.0) + TOL
            assert wl <= lloyd_sensitivity(d, norm, radius=1.0) + TOL


def test_vectorised_worst_case_search():
    """A large vectorised search (independent closed forms of the per-row change,
    cross-checked against the module on the worst pair found) finds nothing above the
    bounds; the moments' L2 supremum is 2R (antipodes), below the stated bound."""
    rng = np.random.default_rng(11)
    n = 200_000
    for d in (2, 3, 4):
        x, xp = _sphere(rng, n, d), _sphere(rng, n, d)
        xp[: n // 4] = -x[: n // 4] + 1e-3 * rng.normal(size=(n // 4, d))  # near antipodes
        xp *= np.minimum(1.0, R / np.linalg.norm(xp, axis=1))[:, None]
        iu = np.triu_indices(d)
        outer = (x[:, :, None] * x[:, None, :] - xp[:, :, None] * xp[:, None, :])[:, iu[0],
                                                                                 iu[1]]
        mom = np.concatenate([x - xp, x * x - xp * xp], axis=1)
        for norm, f in (("l2", lambda v: np.linalg.norm(v, axis=1)),
                        ("l1", lambda v: np.abs(v).sum(axis=1))):
            for vals, stat, bound in ((f(outer), second_moment_statistic,
                                       second_moment_sensitivity(d, norm)),
                                      (f(mom), moment_statistic, moment_sensitivity(d, norm))):
                i = int(np.argmax(vals))
                module = NORMS[norm](stat(x[i][None]) - stat(xp[i][None]))
                assert module == pytest.approx(vals[i], abs=1e-14)
                assert vals[i] <= bound + TOL
        assert np.max(np.linalg.norm(mom, axis=1)) <= 2 * R + 1e-12  # sup is 2R, not 1.06


# ------------------------------------------------------------------------------------
# tightness: explicit pairs
# ------------------------------------------------------------------------------------


def _change(stat, a, b, norm, **kw):
    base = np.array([[0.1, -0.2, 0.05, 0.0, 0.3][: len(a)]])  # another row, unchanged
    return NORMS[norm](stat(np.concatenate([a[None], base]), **kw)
                       - stat(np.concatenate([b[None], base]), **kw))


@pytest.mark.parametrize("d", DIMS)
def test_second_moment_tightness(d):
    e = np.eye(d)
    if d >= 2:  # L2 attained exactly: R e1 -> R e2 changes two diagonal entries by R^2
        got = _change(second_moment_statistic, R * e[0], R * e[1], "l2")
        assert got == pytest.approx(second_moment_sensitivity(d, "l2"), rel=1e-14)
    else:  # d0 = 1: |y^2 - y'^2| <= R^2, 1/sqrt 2 of the bound
        got = _change(second_moment_statistic, R * e[0], np.zeros(1), "l2")
        assert got == pytest.approx(R**2) and got <= second_moment_sensitivity(1, "l2")
    # L1: not attained (see the module docstring above); R e1 -> R e2 gives 2R^2 (d0 >= 2)
    got1 = _change(second_moment_statistic, R * e[0], R * e[-1] if d > 1 else 0 * e[0],
                   "l1")
    bound1 = second_moment_sensitivity(d, "l1")
    assert got1 <= bound1 + TOL
    assert got1 >= (2 * R**2 if d > 1 else R**2) - 1e-15
    if d == 2:  # sqrt(5) R^2, the numerical supremum (3/4 of the bound 3 R^2)
        t = 0.5 * math.atan2(1.0, 2.0)  # maximises 2|cos 2t| + sin 2t
        a = R * np.array([math.cos(t), math.sin(t)])
        b = R * np.array([math.sin(t), -math.cos(t)])
        got = _change(second_moment_statistic, a, b, "l1")
        assert got == pytest.approx(math.sqrt(5) * R**2, rel=1e-12)
        assert got >= 0.74 * bound1


@pytest.mark.parametrize("d", DIMS)
def test_moment_tightness(d):
    g = R / math.sqrt(d) * np.ones(d)
    # L2: antipodes give 2R = 1, 0.943 of sqrt(4R^2 + 2R^4) (the supremum; not tight)
    got = _change(moment_statistic, g, -g, "l2")
    assert got == pytest.approx(2 * R, rel=1e-14)
    assert got >= 0.94 * moment_sensitivity(d, "l2")
    # L1: antipodal diagonals give 2R sqrt(d') (the first term of the bound)
    got1 = _change(moment_statistic, g, -g, "l1")
    assert got1 == pytest.approx(2 * R * math.sqrt(d), rel=1e-14)
    assert got1 >= math.sqrt(d) / (math.sqrt(d) + R) * moment_sensitivity(d, "l1") - 1e-12
    if d == 2:  # (-a, -b) -> (b, a) with a^2 + b^2 = R^2: 2(a + b)(1 + a - b), >= 0.87
        t = np.linspace(0, math.pi / 4, 20001)
        a, b = R * np.cos(t), R * np.sin(t)
        j = int(np.argmax(2 * (a + b) * (1 + a - b)))
        got = _change(moment_statistic, -np.array([a[j], b[j]]), np.array([b[j], a[j]]),
                      "l1")
        assert got == pytest.approx(1.6650953, abs=1e-6)
        assert got >= 0.869 * moment_sensitivity(2, "l1")


@pytest.mark.parametrize("d", DIMS)
def test_lloyd_tightness(d):
    g = R / math.sqrt(d) * np.ones(d)
    centres = np.stack([-0.1 * np.ones(d), 0.1 * np.ones(d), np.full(d, 3.0)])
    assert list(nearest_cells(np.stack([-g, g]), centres)) == [0, 1]  # different cells
    for norm in ("l2", "l1"):  # both attained exactly by -g (cell 0) -> g (cell 1)
        got = _change(lloyd_statistic, -g, g, norm, centres=centres)
        assert got == pytest.approx(lloyd_sensitivity(d, norm), rel=1e-14)
    # staying in the cell: |z' - z| <= 2R, the L2 bound again (antipodes, one centre)
    one = np.zeros((1, d))
    got = _change(lloyd_statistic, -g, g, "l2", centres=one)
    assert got == pytest.approx(2 * R, rel=1e-14)


# ------------------------------------------------------------------------------------
# public bases
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, dim", [((4, 5), None), ((8, 8), 10), ((3, 7), 21),
                                        ((1, 6), 3), ((16, 16), None)])
def test_dct_basis_is_orthonormal_with_constant_first_column(shape, dim):
    b = dct_basis(shape, dim)
    d = shape[0] * shape[1]
    d0 = min(d, 100) if dim is None else dim
    assert b.shape == (d, d0)
    np.testing.assert_allclose(b.T @ b, np.eye(d0), atol=1e-12)
    np.testing.assert_allclose(b[:, 0], 1.0 / math.sqrt(d), rtol=1e-12)  # DC
    if d0 == d:  # square: an orthogonal matrix
        np.testing.assert_allclose(b @ b.T, np.eye(d), atol=1e-12)
    assert check_basis(b, d) is not None  # accepted as a public basis


def test_dct_basis_orders_by_frequency():
    """Column 1 is the lowest horizontal or vertical frequency: constant along one axis."""
    b = dct_basis((6, 6), 3)
    img1, img2 = b[:, 1].reshape(6, 6), b[:, 2].reshape(6, 6)
    assert np.allclose(img1, img1[:1, :]) or np.allclose(img1, img1[:, :1])
    assert np.allclose(img2, img2[:1, :]) or np.allclose(img2, img2[:, :1])
    assert not np.allclose(img1, img2)


def test_check_basis_refuses_non_orthonormal():
    rng = np.random.default_rng(5)
    q = np.linalg.qr(rng.normal(size=(6, 3)))[0]
    np.testing.assert_array_equal(check_basis(q, 6), q)
    for bad in (2.0 * q,                        # orthogonal, not normal
                q + 1e-3 * rng.normal(size=q.shape),  # nearly orthonormal
                rng.normal(size=(6, 3)),        # random
                np.ones((6, 2)) / math.sqrt(6),  # parallel columns
                np.where(np.eye(6, 3) > 0, np.nan, q),  # non-finite
                q[:5],                          # wrong number of rows
                np.zeros((6, 0)),               # no column
                np.eye(6, 7),                   # d0 > d
                q[:, 0],                        # 1-D
                "identity"):
        with pytest.raises(InvalidParameterError) as err:
            check_basis(bad, 6)
        assert err.value.name == "basis"
