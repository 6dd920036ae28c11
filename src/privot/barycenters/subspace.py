r"""Private barycenters in high dimension: the subspace method.

The private coreset (paper 000 Alg. 2) carries almost no signal once ``d`` grows: at
depth about :math:`\log_2(\varepsilon n)` its partition halves each of ``d``
coordinates at most once. The subspace method spends the budget on a few
low-dimensional summaries instead. In unit coordinates (the data in the ball
:math:`B_0(R)`, :math:`R = 1/2`, :class:`~privot.barycenters.PublicBounds`):

.. code-block:: text

    x in B_0(R) ⊂ R^d
      --(public basis B, (d, d0), orthonormal columns: identity, DCT, or the caller's)-->
    y = B^T x in B_0(R) ⊂ R^d0
      --(1. DP second moment of the pooled groups, when d0 > d': Σ y y^T + noise,
          top-d' eigenvectors V)--> z = V^T y in B_0(R) ⊂ R^d'
      --(2. per group, one moment round: Σ z and Σ z∘z + noise)--> Gaussian N(m_i, diag v_i)
      --(3. per group, T Lloyd rounds: cells of the current released centres,
          (R · counts, sums) per cell + noise)--> q weighted atoms per group
      --(4. free-support barycenter of the k summaries, post-processing)--> m atoms in R^d'
      --(5. lift: x = B V z)--> support in R^d

Steps 1-3 are the only ones that read the data. Each releases one statistic with noise
calibrated to its sensitivity under replace-one in the public ball (derived in
``docs/privacy/barycenters.md``, section "The subspace method", and checked by brute
force in ``tests/barycenters/test_subspace_sensitivity.py``):

====================  ==============================  ==============================
statistic             L2 sensitivity (Gaussian)        L1 sensitivity (Laplace)
====================  ==============================  ==============================
second moment (1.)    :math:`\sqrt2 R^2`               :math:`(d_0+1) R^2`
moments (2.)          :math:`\sqrt{4R^2 + 2R^4}`       :math:`2R\sqrt{d'} + 2R^2`
Lloyd round (3.)      :math:`2R`                       :math:`2R + 2R\sqrt{d'}`
====================  ==============================  ==============================

Every later step (eigenvectors, initial centres, cells, centres, the barycenter, the
lift) is a function of earlier releases, public parameters and public randomness:
post-processing, so the cells of a Lloyd round are public given the earlier rounds. The
groups are disjoint (one person, one point, one group), so steps 2-3 run on all groups
in parallel; step 1 reads each person once. The number of rounds, cells and dimensions
is fixed before the data is read, so the work done after the charge is data-independent
and the release always answers (empty or negative noisy counts fall back by public
rules).

Composition. Gaussian variant, :math:`(\varepsilon, \delta)`: the steps are
:math:`\mu_j`-GDP with :math:`\mu_j = \Delta'_j/\sigma_j`; they compose adaptively to
:math:`\mu = (\sum_j \mu_j^2)^{1/2}` (Dong, Roth and Su 2022, Cor. 3.3), calibrated so
that :math:`\mu` meets :math:`(\varepsilon, \delta)` exactly (:func:`gdp_mu_for`).
Laplace variant, pure :math:`\varepsilon`: basic composition of the steps' epsilons.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import fft as sfft

from privot._validation import check_int
from privot.barycenters._repr import short_repr
from privot.errors import InvalidParameterError
from privot.privacy import accounting
from privot.privacy.events import ComposedEvent, GaussianEvent, PrivacyEvent, PureEvent
from privot.privacy.mechanisms import add_gaussian_noise, gaussian_grid, laplace_mechanism
from privot.privacy.noise import check_rng, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = [
    "DEFAULT_BASIS_DIM",
    "DEFAULT_PROJECTION_SHARE",
    "SubspacePlan",
    "SubspaceRelease",
    "check_basis",
    "check_noise_drawable",
    "dct_basis",
    "entry_deviation",
    "gaussian_noise",
    "into_ball",
    "gaussian_step",
    "count_deviation",
    "default_cells",
    "default_subspace_dim",
    "small_gaussian_default",
    "lloyd_sensitivity",
    "lloyd_statistic",
    "moment_sensitivity",
    "moment_statistic",
    "nearest_cells",
    "noise_floor",
    "plan_subspace",
    "second_moment_sensitivity",
    "second_moment_statistic",
    "subspace_release",
]

#: Radius of the unit ball the public bounds map the data into.
RADIUS = 0.5
#: Share of the budget (of mu^2 for the Gaussian variant, of epsilon for Laplace) spent on
#: the DP second moment when one is needed (d0 > d'), by mechanism. Tuning runs
#: (benchmarks/README.md, "Barycenters in high dimension"): with Gaussian noise 0.35 beat
#: 0.2 and 0.1 in 9 of 10 settings and 0.5 was no better; with Laplace noise (whose
#: second moment has the larger L1 sensitivity) 0.5 beat 0.35 in 9 of 12 settings.
DEFAULT_PROJECTION_SHARE = {"gaussian": 0.35, "laplace": 0.5}
#: Default size of a DCT basis (the lowest frequencies): the second moment's noise grows
#: with d0, the image's energy sits in the low frequencies.
DEFAULT_BASIS_DIM = 100
#: Public sample that stands for a group's DP Gaussian summary (per atom of the output).
GAUSSIAN_SAMPLE_PER_ATOM = 64
#: Initial centres: plain k-means (post-processing) on this many public draws per centre
#: from the group's released Gaussian.
INIT_DRAWS_PER_CENTRE = 50
#: A cell whose noisy count is below this many count-noise deviations keeps its centre
#: (public rule on released values).
MIN_COUNT_DEVIATIONS = 2.0
#: Floor of the released per-coordinate variance, in squared unit coordinates.
VARIANCE_FLOOR = 1e-8
MECHANISMS = ("gaussian", "laplace")
#: Whether the moment round releases the sum in the whole basis by default (by
#: mechanism). Tuning runs (12 settings each): with Laplace noise it lowered the cost in
#: 8, by 4% in geometric mean (most on images, whose mean lies far from the public
#: centre, and its noisy second moment misses it); with Gaussian noise it raised it in 6
#: and lowered it in none (1.8% in geometric mean): the extra d0 noisy coordinates cost
#: more than the mean they recover.
DEFAULT_COMPLEMENT_MEAN = {"gaussian": False, "laplace": True}


# ------------------------------------------------------------------------------------
# Public bases
# ------------------------------------------------------------------------------------


def dct_basis(image_shape: tuple[int, int] | list[int], dim: int | None = None
              ) -> np.ndarray:
    r"""The orthonormal 2-D DCT-II basis of ``h x w`` images, lowest frequencies first.

    Column ``j`` is the image (flattened row-major, as ``x.reshape(h, w)``) of the
    frequency pair :math:`(u_j, v_j)`, ordered by :math:`u + v`, then :math:`u`, so the
    first ``dim`` columns span the smoothest images. A public, data-independent basis.

    Parameters
    ----------
    image_shape : (h, w)
        Image height and width; ``d = h * w``.
    dim : int, optional
        Number of columns ``d0`` (default ``min(d, DEFAULT_BASIS_DIM)``).

    Returns
    -------
    (d, d0) array
        Orthonormal columns: :math:`B^T B = I`.
    """
    if not (isinstance(image_shape, (tuple, list)) and len(image_shape) == 2):
        raise InvalidParameterError("image_shape", image_shape, "a pair (height, width)")
    h = check_int(image_shape[0], "image_shape", minimum=1)
    w = check_int(image_shape[1], "image_shape", minimum=1)
    d = h * w
    d0 = min(d, DEFAULT_BASIS_DIM) if dim is None else check_int(dim, "basis_dim",
                                                                  minimum=1, maximum=d)
    u, v = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    order = np.lexsort((u.ravel(), (u + v).ravel()))[:d0]
    coeff = np.zeros((d0, h, w))
    coeff[np.arange(d0), u.ravel()[order], v.ravel()[order]] = 1.0
    images = sfft.idctn(coeff, axes=(1, 2), norm="ortho")  # orthonormal inverse DCT-II
    return np.ascontiguousarray(images.reshape(d0, d).T)


def check_basis(basis: object, d: int) -> np.ndarray:
    """A caller's basis: a finite ``(d, d0)`` array with orthonormal columns, ``d0 <= d``.

    Orthonormality (to 1e-6) is what keeps the projected points in the ball of radius
    ``R``: the sensitivities assume it, so it is checked, not trusted.
    """
    b = np.asarray(basis, dtype=np.float64) if not isinstance(basis, str) else None
    if b is None or b.ndim != 2 or b.shape[0] != d or not 1 <= b.shape[1] <= d:
        shape = getattr(basis, "shape", basis)
        raise InvalidParameterError("basis", shape, f"'dct', None or a (d={d}, d0) array "
                                    "with 1 <= d0 <= d orthonormal columns")
    if not np.all(np.isfinite(b)):
        raise InvalidParameterError("basis", "non-finite entries", "finite numbers")
    err = float(np.max(np.abs(b.T @ b - np.eye(b.shape[1]))))
    if err > 1e-6:
        raise InvalidParameterError("basis", f"columns with max |B^T B - I| = {err:.3g}",
                                    "orthonormal columns (e.g. numpy.linalg.qr(B)[0])")
    return b


# ------------------------------------------------------------------------------------
# The released statistics and their sensitivities
# ------------------------------------------------------------------------------------


def second_moment_statistic(y: np.ndarray) -> np.ndarray:
    r"""Upper triangle (diagonal included, row-major) of :math:`\sum_l y_l y_l^T`.

    ``y`` (n, d0) -> (d0 (d0 + 1) / 2,)."""
    s = y.T @ y
    return s[np.triu_indices(y.shape[1])]


def second_moment_sensitivity(d0: int, norm: str, radius: float = RADIUS) -> float:
    r"""Replace-one sensitivity of :func:`second_moment_statistic` in :math:`B_0(R)`.

    L2: :math:`\|yy^T - y'y'^T\|_F^2 = |y|^4 + |y'|^4 - 2(y\cdot y')^2 \le 2R^4` and the
    upper triangle has at most the Frobenius norm: :math:`\sqrt2 R^2`. L1:
    :math:`\sum_{i\le j}|y_i y_j| = (|y|_1^2 + |y|_2^2)/2 \le (d_0+1)R^2/2` per point.
    """
    return math.sqrt(2.0) * radius**2 if norm == "l2" else (d0 + 1) * radius**2


def moment_statistic(y: np.ndarray, v: np.ndarray | None = None, *,
                     covariance: bool = False) -> np.ndarray:
    r"""The moment round: :math:`(\sum_l y_l, \sum_l z_l \circ z_l)`, :math:`z = V^\top y`.

    ``y`` (n, d0), ``v`` (d0, d') with orthonormal columns -> (d0 + d',): the sum in the
    whole basis (its mean gives the atoms' component outside the subspace) and the
    per-coordinate second moments in the subspace. ``v`` None: :math:`V = I`,
    ``y`` (n, d') -> (2 d',). ``covariance``: the whole second moment
    :math:`\sum_l z_l z_l^\top` instead of its diagonal, as its upper triangle
    (:func:`second_moment_statistic`): -> (d0 + d'(d'+1)/2,).
    """
    z = y if v is None else into_ball(y @ v)  # |z| <= R exactly, not up to rounding
    second = second_moment_statistic(z) if covariance else (z * z).sum(axis=0)
    return np.concatenate([y.sum(axis=0), second])


def moment_sensitivity(dim: int, norm: str, radius: float = RADIUS,
                       mean_dim: int | None = None, covariance: bool = False) -> float:
    r"""Replace-one sensitivity of :func:`moment_statistic` in :math:`B_0(R)`.

    L2: :math:`|y-y'|^2 + \sum_j (z_j^2 - z_j'^2)^2 \le 4R^2 + |z|^4 + |z'|^4 \le
    4R^2 + 2R^4` (whatever the dimension of the sum, since :math:`|z| \le |y| \le R`);
    with ``covariance`` the same bound, since the upper triangle of
    :math:`zz^\top - z'z'^\top` has at most its Frobenius norm, whose square is
    :math:`|z|^4 + |z'|^4 - 2(z\cdot z')^2 \le 2R^4`.
    L1: :math:`|y-y'|_1 + \sum_j|z_j^2 - z_j'^2| \le 2R\sqrt{d_m} + 2R^2`, ``d_m`` =
    ``mean_dim`` (the dimension of the sum; default ``dim`` = d'); with ``covariance``
    the second term is :math:`\sum_{i\le j}|z_iz_j - z'_iz'_j| \le (d'+1)R^2`
    (:func:`second_moment_sensitivity`, per point :math:`(d'+1)R^2/2`).
    """
    if norm == "l2":
        return math.sqrt(4 * radius**2 + 2 * radius**4)
    second = (dim + 1) * radius**2 if covariance else 2 * radius**2
    return 2 * radius * math.sqrt(dim if mean_dim is None else mean_dim) + second


def nearest_cells(z: np.ndarray, centres: np.ndarray,
                  power: np.ndarray | None = None) -> np.ndarray:
    r"""Each point's cell: :math:`\arg\min_j |z - c_j|^2 - \psi_j` (ties to the lowest
    index), ``power`` :math:`\psi` (q,) the power-diagram weights (None: 0, the Voronoi
    cells of the centres). ``z`` (n, d), ``centres`` (q, d) -> (n,) ints. Processed in
    blocks of rows (memory ``O(block q)``)."""
    if len(z) == 0:
        return np.zeros(0, dtype=np.intp)
    out = np.empty(len(z), dtype=np.intp)
    sq = (centres**2).sum(axis=1) - (0.0 if power is None else power)
    block = max(1, 2_000_000 // max(len(centres), 1))
    for start in range(0, len(z), block):
        part = z[start:start + block]
        # |z - c|^2 - psi = |z|^2 - 2 z.c + |c|^2 - psi; |z|^2 is the same for every c
        out[start:start + block] = np.argmin(sq[None, :] - 2.0 * part @ centres.T, axis=1)
    return out


def lloyd_statistic(z: np.ndarray, centres: np.ndarray, radius: float = RADIUS,
                    power: np.ndarray | None = None) -> np.ndarray:
    r"""One Lloyd round's statistic: :math:`(R\,c_1, \dots, R\,c_q, s_1, \dots, s_q)`.

    :math:`c_j` is the number and :math:`s_j \in R^{d'}` the sum of the points in cell
    ``j`` (:func:`nearest_cells` of ``centres`` and the power weights ``power``).
    ``z`` (n, d'), ``centres`` (q, d') -> (q + q d',). The cells are a function of the
    (released) centres and weights only; the sensitivity holds for any partition fixed
    by them.
    """
    q, dim = centres.shape
    cell = nearest_cells(z, centres, power)
    counts = np.bincount(cell, minlength=q).astype(np.float64)
    sums = np.zeros((q, dim))
    np.add.at(sums, cell, z)
    return np.concatenate([radius * counts, sums.ravel()])


def lloyd_sensitivity(dim: int, norm: str, radius: float = RADIUS) -> float:
    r"""Replace-one sensitivity of :func:`lloyd_statistic` in :math:`B_0(R)`.

    Replacing :math:`z` (cell a) by :math:`z'` (cell b) changes :math:`R c_a, R c_b` by
    :math:`\mp R` and :math:`s_a, s_b` by :math:`-z, +z'` (a = b: only
    :math:`s_a`, by :math:`z'-z`). L2: :math:`\sqrt{2R^2 + |z|^2 + |z'|^2} \le 2R`
    (a = b: :math:`|z'-z| \le 2R`). L1: :math:`2R + |z|_1 + |z'|_1 \le 2R + 2R\sqrt{d'}`.
    """
    return 2 * radius if norm == "l2" else 2 * radius + 2 * radius * math.sqrt(dim)


# ------------------------------------------------------------------------------------
# The plan: every public choice, fixed before the data is read
# ------------------------------------------------------------------------------------


#: Default cells: each should hold, on average, at least this many standard deviations
#: of its released count (chosen on the tuning sets: 6 was within 3% of the best number
#: of cells in 22 of 24 settings; benchmarks/README.md).
CELL_COUNT_DEVIATIONS = 6.0
#: With Laplace noise and ``eps n`` below this, the default releases each group's DP
#: mean only (``subspace_dim = 0``; measured on the tuning sets), when ``d0`` is above
#: :data:`MODERATE_MAX_DIM`.
MEAN_ONLY_BELOW = 800.0
#: Moderate dimension (issue 26): with Laplace noise, ``d0`` at most this and ``eps n``
#: below :data:`MEAN_ONLY_BELOW`, the default is a :data:`MODERATE_SUBSPACE_DIM`-
#: dimensional subspace, not the mean alone (which released m copies of one point: 3.2x
#: the non-private cost on a table of 8 columns scaled to [0, 1]). Chosen on two public
#: tables (diamonds, d = 7; NYC weather, d = 8) and checked on two others
#: (docs/barycenters_defaults.md, benchmarks/bench_barycenter_moderate.py). The old
#: rule's tuning sets (d0 = 16, 20, 64) keep the mean alone there.
MODERATE_MAX_DIM = 8
#: ``d'`` of the pure default in moderate dimension below ``eps n = MEAN_ONLY_BELOW``
#: (at most ``d0``; the lower clip of the rule above it).
MODERATE_SUBSPACE_DIM = 3
#: Small dimension (issue 26, part 3): with Laplace noise, ``d0`` at most this and
#: ``eps n`` below :data:`SMALL_GAUSSIAN_BELOW`, the default plan has one cell: each
#: group's DP mean and second moments along the ``d'`` axes (the default ``d'``), the
#: budget left by the projection all on them, and the atoms drawn from that DP Gaussian
#: (no Lloyd round). Chosen on five public tuning tables of 3-4 columns (cps1988, slid,
#: penguins, diamonds4, weather4; docs/barycenters_defaults.md), checked on ``wage``.
SMALL_MAX_DIM = 4
#: Upper end (in ``eps n``) of the small-dimension rule: between the largest ``eps n``
#: where one cell won on the tuning tables (8,000) and the smallest where the Lloyd cells
#: won (16,000); above it the cells of :func:`default_cells` stay.
SMALL_GAUSSIAN_BELOW = 10000.0


def default_subspace_dim(n: int, *, d0: int, epsilon: float, delta: float,
                         mean_only: bool = True) -> int:
    r"""Default ``d'`` from public quantities: it grows with :math:`s = \varepsilon n`.

    Gaussian noise (``delta > 0``): ``min(d0, clip(round(log2(s) - 4), 3, 6))``; Laplace
    noise: ``min(d0, clip(round(log2(s) - 3), 3, 8))``, and 0 (each group's DP mean
    only, the whole budget on it) for ``s < MEAN_ONLY_BELOW``. Larger subspaces won as
    ``s`` grew on every tuning set (``benchmarks/bench_barycenter_subspace_tuning.py``),
    more so with the noisier pure second moment; with Laplace noise the mean alone won
    in all 8 tuning settings with ``s <= 696`` and lost in 5 of 7 above 800.
    ``mean_only=False`` (the caller asked for Lloyd cells or rounds) skips that case.
    Moderate dimension (``d0 <= MODERATE_MAX_DIM``), Laplace noise, ``s <
    MEAN_ONLY_BELOW``: ``min(d0, MODERATE_SUBSPACE_DIM)`` instead of the mean alone
    (issue 26: on two public tables of 7 and 8 columns scaled to [0, 1], 4 tuning
    settings with ``s`` in 300..750, 3 seeds, d' = 3 was 5.2x the non-private cost in
    geometric mean, d' = 2 with a quarter of epsilon on the second moment 6.1x, every
    atom at the exact pooled mean 6.5x; docs/barycenters_defaults.md).
    """
    s = epsilon * n
    log_s = math.log2(max(s, 1.0))
    if delta > 0:
        return int(min(d0, min(6, max(3, round(log_s - 4)))))
    if mean_only and s < MEAN_ONLY_BELOW:
        return int(min(d0, MODERATE_SUBSPACE_DIM)) if d0 <= MODERATE_MAX_DIM else 0
    return int(min(d0, min(8, max(3, round(log_s - 3)))))


def small_gaussian_default(n: int, *, d0: int, epsilon: float, delta: float) -> bool:
    """Whether the default plan has one cell: each group's DP Gaussian (public).

    Laplace noise (``delta == 0``), ``d0 <= SMALL_MAX_DIM`` and ``eps n <
    SMALL_GAUSSIAN_BELOW``: one cell (no Lloyd round) at the default ``d'``. On the tuning
    tables of 3-4 columns it beat the Lloyd plan in every setting but one, e.g. 1.52x
    against 2.28x (weather4, 4 x 300, eps 1) and 2.75x against 4.93x (cps1988, 4 x 1,500,
    eps 1); docs/barycenters_defaults.md.
    """
    return delta <= 0 and d0 <= SMALL_MAX_DIM and epsilon * n < SMALL_GAUSSIAN_BELOW


def count_deviation(*, mechanism: str, dim: int, round_budget: float) -> float:
    """Standard deviation of one released cell count of a Lloyd round (public).

    ``round_budget``: the round's GDP ``mu`` (Gaussian) or epsilon (Laplace). The count
    is released scaled by ``R`` (:func:`lloyd_statistic`), so its noise is the
    statistic's divided by ``R``.
    """
    if mechanism == "gaussian":
        return lloyd_sensitivity(dim, "l2") / round_budget / RADIUS
    return math.sqrt(2.0) * lloyd_sensitivity(dim, "l1") / round_budget / RADIUS


def default_cells(n: int, *, m: int, deviation: float) -> int:
    """Default Lloyd cells: ``clip(floor(n / (6 deviation)), 1, m)`` (public).

    ``deviation``: :func:`count_deviation` of the plan's Lloyd round; ``n`` the smallest
    group. One cell means no Lloyd round: the group is its DP Gaussian.
    """
    return int(min(m, max(1, math.floor(n / (CELL_COUNT_DEVIATIONS * deviation)))))


#: Lower end (in ``eps n``) of the full-covariance rule (:func:`default_covariance`).
COVARIANCE_FROM = 1500.0


def default_covariance(n: int, *, cells: int, dim: int, epsilon: float, delta: float
                       ) -> bool:
    r"""Whether the moment round releases each group's whole second moment by default.

    True for one cell (the group is its DP Gaussian), ``d' >= 2``, Laplace noise
    (``delta == 0``) and ``eps n >= COVARIANCE_FROM`` (``n`` the smallest group): the
    :math:`d'(d'+1)/2` entries cost more noise per entry (L1 sensitivity
    :math:`2R\sqrt{d_m} + (d'+1)R^2` against :math:`2R\sqrt{d_m} + 2R^2`) and pay once
    the columns' correlation is larger than it. On the five small-d tuning tables
    (cps1988, slid, penguins, weather4, diamonds4; 3 seeds, m = 48) it lowered the cost
    in 6 of the 8 one-cell settings with ``eps n >= 1500`` (e.g. 4.38x -> 3.24x on
    diamonds4, 4 x 750, eps 4; at worst 1.17x -> 1.25x) and raised it in 9 of the 10
    below (docs/barycenters_defaults.md). Not measured with Gaussian noise or with Lloyd
    cells (where the Gaussian only places the initial centres): diagonal there.
    """
    return cells == 1 and dim >= 2 and delta <= 0 and epsilon * n >= COVARIANCE_FROM


@dataclass(frozen=True)
class SubspacePlan:
    """The subspace method's public parameters and noise, fixed before any data is read.

    Attributes
    ----------
    mechanism : {"gaussian", "laplace"}
    basis_dim, subspace_dim : int
        ``d0`` (columns of the public basis) and ``d'``.
    cells, rounds : int
        Lloyd centres per group ``q`` and Lloyd rounds ``T`` (after the moment round).
    pca : bool
        Whether a DP second moment is released (``d0 > d'``).
    complement_mean : bool
        Whether the moment round releases each group's sum in the whole basis (so that
        the atoms' component outside the subspace is the groups' DP mean) rather than
        in the subspace only (that component is then the public centre).
    covariance : bool
        Whether the moment round releases each group's whole second moment in the
        subspace (its DP Gaussian has a full covariance) rather than its diagonal.
    noise : dict
        Per statistic (``"second_moment"``, ``"moments"``, ``"lloyd"``): its
        sensitivity, noise scale (Gaussian sigma or Laplace scale, as a dict of the
        mechanism's parameters) and its share of the budget (``mu`` or ``epsilon``).
    mu : float or None
        Gaussian variant: the composed GDP parameter of the whole release.
    event : PrivacyEvent
        What the release runs, for the accountant and ledger.
    """

    mechanism: str
    basis_dim: int
    subspace_dim: int
    cells: int
    rounds: int
    pca: bool
    complement_mean: bool
    covariance: bool
    projection_share: float
    noise: dict[str, dict[str, float]]
    mu: float | None
    event: PrivacyEvent = field(repr=False)

    def __repr__(self) -> str:
        return short_repr(self, ("mechanism", "basis_dim", "subspace_dim", "cells", "rounds",
                                 "mu"))

    def to_dict(self) -> dict[str, Any]:
        """Public parameters, JSON-ready."""
        return {"mechanism": self.mechanism, "basis_dim": self.basis_dim,
                "subspace_dim": self.subspace_dim, "cells": self.cells,
                "rounds": self.rounds, "pca": self.pca,
                "complement_mean": self.complement_mean,
                "covariance": self.covariance,
                "projection_share": self.projection_share,
                "noise": {k: dict(v) for k, v in self.noise.items()}, "mu": self.mu}


#: The largest d0 whose second moment is released (memory: d0^2 floats twice).
MAX_SECOND_MOMENT_DIM = 4096


def check_noise_drawable(mechanism: str, step: dict[str, float], size: int) -> None:
    """Draw the step's noise once on zeros with a public generator: a sampler limit
    (a budget so small that the noise overflows the grid) raises here, before the
    charge, instead of after it. Data-independent."""
    try:
        if mechanism == "gaussian":
            # a trial draw on a public, fixed generator: nothing is released and nothing
            # is charged; only the sampler's limits are exercised (its grid and sigma)
            add_gaussian_noise(np.zeros(1), sigma=step["sigma"], rng=np.random.default_rng(0),
                               grid_exponent=int(step["grid_exponent"]))
        else:
            laplace_mechanism(np.zeros(size), sensitivity=step["sensitivity"],
                              epsilon=step["epsilon"], rng=np.random.default_rng(0))
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            "epsilon", step.get("epsilon", step.get("mu")),
            f"a budget whose noise the secure sampler can draw ({exc})") from exc


def _round_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def gaussian_step(sensitivity: float, size: int, mu: float) -> dict[str, float]:
    """Sigma of one Gaussian step at GDP ``mu``, on the secure sampler's grid.

    The grid :math:`2^{-k}` (as in :func:`~privot.privacy.mechanisms.gaussian_mechanism`)
    rounds each of the ``size`` values by at most :math:`2^{-k-1}`, so the rounded
    statistic has sensitivity :math:`\\Delta' = \\Delta + \\sqrt{size}\\,2^{-k}`;
    :math:`\\sigma = \\Delta'/\\mu`, rounded up.
    """
    k, effective = gaussian_grid(sensitivity, size)
    sigma = _round_up(effective / mu)
    return {"sensitivity": sensitivity, "effective_sensitivity": effective,
            "grid_exponent": k, "sigma": sigma, "mu": _round_up(effective / sigma)}


def _calibrate(budget: PrivacyCost, sensitivities: dict[str, float],
               sizes: dict[str, int], *, share: float, rounds: int
               ) -> tuple[dict[str, dict[str, float]], float | None, PrivacyEvent, str]:
    """Each used statistic's noise: ``share`` of the budget on the second moment, the rest
    split evenly over the moment round and the ``rounds`` Lloyd rounds.

    ``delta > 0``: Gaussian steps (L2 ``sensitivities``) whose GDP parameters compose to
    the one meeting ``(epsilon, delta)``; else Laplace steps (L1), epsilons summed.
    Returns the noise plan, the composed ``mu`` (None for Laplace), the event and the
    mechanism's name.
    """
    steps = 1 + rounds  # moment round + Lloyd rounds (each group in parallel)
    noise_plan: dict[str, dict[str, float]] = {}
    if budget.delta > 0:
        mu_total = accounting.gdp_mu_for(budget.epsilon, budget.delta)
        mu_rest = mu_total * math.sqrt(1.0 - share)
        for name, sens in sensitivities.items():
            mu_step = (mu_total * math.sqrt(share) if name == "second_moment"
                       else mu_rest / math.sqrt(steps))
            noise_plan[name] = gaussian_step(sens, sizes[name], mu_step)
        times = {"second_moment": 1, "moments": 1, "lloyd": rounds}
        mu = math.sqrt(sum(times[k] * v["mu"] ** 2 for k, v in noise_plan.items()))
        # mu <= mu_total up to the steps' upward rounding (a few ulps); the event states
        # the larger. gdp_mu_for rounds mu_total down by far more than those ulps (about
        # 1e-13 relative), so the stated mu still meets (epsilon, delta).
        mu = _round_up(mu)
        event: PrivacyEvent = GaussianEvent(1.0 / max(mu, mu_total), budget.epsilon,
                                            budget.delta)
        return noise_plan, mu, event, "gaussian"
    # each share a hair below its exact value, so that the floating-point sum of the
    # steps never exceeds epsilon (basic composition is checked by the ledger)
    eps_total = budget.epsilon * (1.0 - 1e-12)
    eps_rest = eps_total * (1.0 - share)
    parts: list[PrivacyEvent] = []
    for name, sens in sensitivities.items():
        eps_step = eps_total * share if name == "second_moment" else eps_rest / steps
        noise_plan[name] = {"sensitivity": sens, "epsilon": eps_step}
        parts += [PureEvent(eps_step, f"laplace-subspace-{name}")] * (
            rounds if name == "lloyd" else 1)
    event = ComposedEvent(tuple(parts)) if len(parts) > 1 else parts[0]
    return noise_plan, None, event, "laplace"


def plan_subspace(*, sizes: list[int], m: int, d0: int, budget: PrivacyCost,
                  subspace_dim: int | None = None, cells: int | None = None,
                  rounds: int | None = None,
                  projection_share: float | None = None,
                  complement_mean: bool | None = None,
                  covariance: bool | None = None) -> SubspacePlan:
    """Validate and calibrate the subspace method (public quantities only).

    ``budget`` with ``delta > 0``: Gaussian noise, the steps' GDP parameters composed to
    the one that meets ``(epsilon, delta)``; ``delta == 0``: Laplace noise, epsilons
    summed. Defaults (public quantities only): ``projection_share``
    :data:`DEFAULT_PROJECTION_SHARE` of the mechanism, ``subspace_dim``
    :func:`default_subspace_dim` and ``cells`` :func:`default_cells` of the smallest
    group, ``rounds`` 1 (0 with one cell); one cell where
    :func:`small_gaussian_default` holds (neither cells nor rounds given).
    """
    gaussian = budget.delta > 0
    if projection_share is None:
        projection_share = DEFAULT_PROJECTION_SHARE["gaussian" if gaussian else "laplace"]
    if not (isinstance(projection_share, (int, float)) and not isinstance(
            projection_share, bool) and 0 < projection_share < 1):
        raise InvalidParameterError("projection_share", projection_share,
                                    "a number in (0, 1)")
    n = min(sizes)
    # the mean-only default (d' = 0) only when the caller asked for no cells or rounds
    dim = (default_subspace_dim(n, d0=d0, epsilon=budget.epsilon, delta=budget.delta,
                                mean_only=cells in (None, 1) and rounds in (None, 0))
           if subspace_dim is None
           else check_int(subspace_dim, "subspace_dim", minimum=0, maximum=d0))
    t = None if rounds is None else check_int(rounds, "rounds", minimum=0, maximum=100)
    if dim == 0:  # the mean only: one cell, no round, the sum in the whole basis
        if cells not in (None, 1) or rounds not in (None, 0):
            raise InvalidParameterError("subspace_dim", 0, ">= 1 with Lloyd cells or rounds "
                                        "(0 releases each group's mean only)")
        cells, t, complement_mean = 1, 0, True
    if cells is None and rounds is None and small_gaussian_default(
            n, d0=d0, epsilon=budget.epsilon, delta=budget.delta):
        cells = 1  # small dimension: each group's DP Gaussian (no Lloyd round)
    if cells is None:
        # the round budget the cells would get with t Lloyd rounds (1 by default)
        rest = 1.0 - (float(projection_share) if d0 > dim else 0.0)
        steps = 1 + (1 if t is None else max(t, 1))
        budget_round = (accounting.gdp_mu_for(budget.epsilon, budget.delta)
                        * math.sqrt(rest / steps) if gaussian
                        else budget.epsilon * rest / steps)
        q = default_cells(n, m=m, deviation=count_deviation(
            mechanism="gaussian" if gaussian else "laplace", dim=dim,
            round_budget=budget_round))
    else:
        q = check_int(cells, "cells", minimum=1)
    if t is None:
        t = 0 if q == 1 else 1  # one Lloyd round (tuning: more rounds cost more noise)
    if q == 1:
        t = 0  # one cell: a Lloyd round would repeat the moment round's mean
    elif t == 0:
        raise InvalidParameterError("rounds", rounds, f">= 1 when cells = {q} > 1 (the "
                                    "cells are found by Lloyd rounds)")
    pca = d0 > dim > 0
    if complement_mean is None:
        complement_mean = DEFAULT_COMPLEMENT_MEAN["gaussian" if gaussian else "laplace"]
    elif not isinstance(complement_mean, bool):
        raise InvalidParameterError("complement_mean", complement_mean, "True, False or None")
    # the mean in the whole basis (else in the subspace)
    full = (pca and complement_mean) or dim == 0
    if covariance is None:
        covariance = default_covariance(n, cells=q, dim=dim, epsilon=budget.epsilon,
                                        delta=budget.delta)
    elif not isinstance(covariance, bool):
        raise InvalidParameterError("covariance", covariance, "True, False or None")
    covariance = covariance and dim > 1  # one axis: the diagonal is the whole moment
    share = float(projection_share) if pca else 0.0
    steps = 1 + t  # moment round + Lloyd rounds (each group in parallel)
    sizes_of = {"second_moment": d0 * (d0 + 1) // 2,
                "moments": (d0 if full else dim) + (
                    dim * (dim + 1) // 2 if covariance else dim),
                "lloyd": q + q * dim}
    sens_of = {"second_moment": second_moment_sensitivity,
               "moments": lambda dm, norm: moment_sensitivity(
                   dm, norm, mean_dim=d0 if full else dm, covariance=covariance),
               "lloyd": lloyd_sensitivity}
    dims_of = {"second_moment": d0, "moments": dim, "lloyd": dim}
    used = (["second_moment"] if pca else []) + ["moments"] + (["lloyd"] if t else [])
    # each statistic's sensitivity (in the norm of the plan's noise) and its entries
    sens = {name: sens_of[name](dims_of[name], "l2" if budget.delta > 0 else "l1")
            for name in used}
    noise_plan, mu, event, mech = _calibrate(budget, sens, {n: sizes_of[n] for n in used},
                                             share=share, rounds=t)
    if pca and d0 > MAX_SECOND_MOMENT_DIM:
        raise InvalidParameterError(
            "basis", f"d0 = {d0}", f"at most {MAX_SECOND_MOMENT_DIM} columns when a DP second "
            "moment is released (its d0 (d0 + 1) / 2 entries): pass a smaller public "
            "basis (basis='dct' with basis_dim, or an array)")
    for name in used:  # the secure samplers' limits, on public shapes, before the charge
        check_noise_drawable(mech, noise_plan[name], sizes_of[name])
    return SubspacePlan(mechanism=mech, basis_dim=d0, subspace_dim=dim, cells=q, rounds=t,
                        pca=pca, complement_mean=full, covariance=covariance,
                        projection_share=share,
                        noise=noise_plan, mu=mu, event=event)


# ------------------------------------------------------------------------------------
# The release
# ------------------------------------------------------------------------------------


@dataclass
class SubspaceRelease:
    """What :func:`subspace_release` returns (all of it publishable but ``seconds``).

    Attributes
    ----------
    projection : (d, d') array
        :math:`BV`: the lift from the subspace to unit coordinates (orthonormal columns).
    atoms, weights : list of (q_i, d') arrays and (q_i,) arrays
        Each group's private summary in the subspace (its Lloyd centres and their noisy
        cell masses, or public draws from its DP Gaussian).
    means : (k, d') array
        The moment round's released mean of each group.
    covariances : (k, d', d') array
        Each group's released covariance (diagonal unless the plan's ``covariance``),
        positive semi-definite.
    flat : (d',) bool array
        Subspace directions whose released eigenvalue is below :func:`noise_floor`:
        the summaries have no spread there (every atom at its group's mean).
    complements : (k, d) array
        Each group's released mean outside the subspace (unit coordinates; zeros
        without ``complement_mean``): the atoms' component there is their weighted mean.
    secure : bool
        True when every noise draw came from the OS CSPRNG.
    seconds : float
        Wall time (curator-only).
    """

    projection: np.ndarray
    atoms: list[np.ndarray]
    weights: list[np.ndarray]
    means: np.ndarray
    covariances: np.ndarray
    complements: np.ndarray
    flat: np.ndarray
    secure: bool
    seconds: float = 0.0

    def __repr__(self) -> str:
        return short_repr(self, ("projection", "atoms", "secure"))


class _Noise:
    """The plan's noise on one statistic: secure samplers, grid rounding included."""

    def __init__(self, plan: SubspacePlan, rng: np.random.Generator | None) -> None:
        self.plan = plan
        self.rng = rng
        self.secure = resolve_rng(rng)[1]

    def __call__(self, name: str, values: np.ndarray) -> np.ndarray:
        step = self.plan.noise[name]
        if self.plan.mechanism == "gaussian":
            return gaussian_noise(values, step, self.rng)
        rel = laplace_mechanism(values, sensitivity=step["sensitivity"],
                                epsilon=step["epsilon"], rng=self.rng,
                                relation=Neighbouring.REPLACE_ONE_IN_GROUP)
        return np.asarray(rel.value, dtype=np.float64)

    def count_deviation(self) -> float:
        """Standard deviation of a released count (the Lloyd statistic's R c_j / R)."""
        return entry_deviation(self.plan.mechanism, self.plan.noise["lloyd"]) / RADIUS


def gaussian_noise(values: np.ndarray, step: dict[str, float],
                   rng: np.random.Generator | None) -> np.ndarray:
    """``values`` plus the secure Gaussian of a :func:`gaussian_step` (its grid)."""
    # calibrated by plan_subspace / plan_lloyd and charged by the caller's accountant
    # (the steps compose as GDP): the noise layer's composed-release entry point
    return np.asarray(add_gaussian_noise(values, sigma=step["sigma"], rng=rng,
                                         grid_exponent=int(step["grid_exponent"])),
                      dtype=np.float64)


def entry_deviation(mechanism: str, step: dict[str, float]) -> float:
    """Standard deviation of one released entry of a planned statistic (public):
    the Gaussian sigma, or sqrt(2) times the Laplace scale ``sensitivity / epsilon``."""
    if mechanism == "gaussian":
        return step["sigma"]
    return math.sqrt(2.0) * step["sensitivity"] / step["epsilon"]


def into_ball(points: np.ndarray, radius: float = RADIUS) -> np.ndarray:
    """Radial projection onto the closed ball (post-processing; public rule)."""
    norm = np.linalg.norm(points, axis=-1, keepdims=True)
    scale = np.where(norm > radius, radius / np.maximum(norm, 1e-300), 1.0)
    return points * scale


def _subspace_of(released_upper: np.ndarray, d0: int, dim: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Top-``dim`` eigenvectors (d0, dim) and eigenvalues (dim,) of the symmetrised
    released second moment."""
    s = np.zeros((d0, d0))
    s[np.triu_indices(d0)] = released_upper
    s = s + s.T - np.diag(np.diag(s))
    vals, vecs = np.linalg.eigh(s)
    top = np.argsort(vals)[::-1][:dim]
    return np.ascontiguousarray(vecs[:, top]), vals[top]


def noise_floor(plan: SubspacePlan) -> float:
    r"""The released second moment's noise level in eigenvalue: :math:`2\sigma\sqrt{d_0}`.

    :math:`\sigma` is the standard deviation of one released entry (Gaussian sigma, or
    :math:`\sqrt2` times the Laplace scale); a symmetric noise matrix with such entries
    has spectral norm about :math:`2\sigma\sqrt{d_0}` (the semicircle's edge), so a
    released eigenvalue below it cannot be told from noise. Public.
    """
    return 2.0 * entry_deviation(plan.mechanism, plan.noise["second_moment"]) * math.sqrt(
        plan.basis_dim)


def released_covariance(second: np.ndarray, mean: np.ndarray, flat: np.ndarray, *,
                        full: bool) -> np.ndarray:
    r"""A group's covariance from its released mean second moment (post-processing).

    ``second``: the released :math:`\frac1n\sum z z^\top`, as its upper triangle
    (``full``) or its diagonal; ``mean`` (d',). Returns :math:`S - \bar z\bar z^\top`
    made positive semi-definite (eigenvalues floored at :data:`VARIANCE_FLOOR`), with no
    spread along the ``flat`` directions (their rows and columns 0).
    """
    dim = len(mean)
    if full:
        s = np.zeros((dim, dim))
        s[np.triu_indices(dim)] = second
        s = s + s.T - np.diag(np.diag(s)) - np.outer(mean, mean)
        vals, vecs = np.linalg.eigh(s)
        cov = (vecs * np.maximum(vals, VARIANCE_FLOOR)) @ vecs.T
    else:
        cov = np.diag(np.maximum(second - mean**2, VARIANCE_FLOOR))
    cov[flat, :] = 0.0
    cov[:, flat] = 0.0
    return cov


def gaussian_draws(public: np.random.Generator, mean: np.ndarray, cov: np.ndarray,
                   size: int) -> np.ndarray:
    """``size`` public draws (size, d') from N(mean, cov), ``cov`` PSD (post-processing)."""
    diagonal = np.diag(np.diagonal(cov))
    if np.array_equal(cov, diagonal):  # independent coordinates
        return public.normal(mean, np.sqrt(np.diagonal(cov)), size=(size, len(mean)))
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.maximum(vals, 0.0))
    return mean + public.standard_normal((size, len(mean))) @ root.T


def _kmeans(points: np.ndarray, q: int, rng: np.random.Generator, iters: int = 25
            ) -> np.ndarray:
    """Plain k-means (k-means++ seeding) on public points: (q, d')."""
    n = len(points)
    centres = [points[rng.integers(n)]]
    d2 = ((points - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, q):
        total = d2.sum()
        idx = rng.integers(n) if total <= 0 else rng.choice(n, p=d2 / total)
        centres.append(points[idx])
        d2 = np.minimum(d2, ((points - points[idx]) ** 2).sum(axis=1))
    c = np.array(centres)
    for _ in range(iters):
        cell = nearest_cells(points, c)
        counts = np.bincount(cell, minlength=q)
        sums = np.zeros_like(c)
        np.add.at(sums, cell, points)
        keep = counts > 0
        c[keep] = sums[keep] / counts[keep, None]
    return c


def subspace_release(units: list[np.ndarray], *, plan: SubspacePlan, basis: np.ndarray | None,
                     sizes: list[int], m: int, rng: np.random.Generator | None = None
                     ) -> SubspaceRelease:
    r"""Steps 1-3 of the subspace method: the private per-group summaries.

    Parameters
    ----------
    units : list of (n_i, d) arrays
        The usable points of each group in unit coordinates (inside :math:`B_0(R)`).
    plan : SubspacePlan
        From :func:`plan_subspace` (already charged by the caller).
    basis : (d, d0) array or None
        Public orthonormal basis (None: the identity).
    sizes : list of int
        Public group sizes ``n_i`` (unusable rows included): the means divide by them.
    m : int
        Output atoms (the size of the public sample standing for a DP Gaussian).
    rng : Generator, optional
        Seeded noise and public randomness (not secure); default OS CSPRNG noise and an
        OS-seeded generator for the public randomness.

    Returns
    -------
    SubspaceRelease

    Privacy
    -------
    Unit: one point of one group; relation: replace one point; group sizes, the basis and
    the plan are public. Each statistic gets the noise of its plan entry, whose
    sensitivity is the bound of this module's ``*_sensitivity`` functions for points in
    :math:`B_0(R)` (``units`` must be inside it: :meth:`PublicBounds.to_unit` ensures
    it; the basis has orthonormal columns, so projections stay inside it). Everything
    else is post-processing. The work after the charge is fixed by the plan.
    """
    t_start = time.perf_counter()
    rng = check_rng(rng, bits=False)
    public = rng if rng is not None else np.random.default_rng()
    add_noise = _Noise(plan, rng)
    d = units[0].shape[1]
    b = np.eye(d) if basis is None else basis
    ys = [u @ b for u in units]
    ys = [into_ball(y) for y in ys]  # exact no-op up to rounding; keeps the bound sharp
    # 1. the subspace: DP second moment of the pooled groups (or the whole basis).
    # Directions whose released eigenvalue is below the noise floor carry no signal we
    # can tell apart: the summaries keep the group mean there (post-processing).
    if plan.pca:
        pooled = np.concatenate(ys, axis=0)
        released = add_noise("second_moment", second_moment_statistic(pooled))
        v, eigenvalues = _subspace_of(released, plan.basis_dim, plan.subspace_dim)
        flat = eigenvalues <= noise_floor(plan)
        flat[0] = False  # the top direction is always kept
    else:  # the whole basis (d' = d0), or no subspace at all (d' = 0: the mean only)
        v = np.eye(plan.basis_dim)[:, :plan.subspace_dim]
        flat = np.zeros(plan.subspace_dim, dtype=bool)
    zs = [into_ball(y @ v) for y in ys]
    dim = v.shape[1]
    # 2. per group: DP mean (in the whole basis with complement_mean) and per-coordinate
    # variance in the subspace (n_i public)
    means = np.zeros((len(zs), dim))
    covariances = np.zeros((len(zs), dim, dim))
    complements = np.zeros((len(zs), d))
    for i, (y, z) in enumerate(zip(ys, zs, strict=True)):
        if plan.complement_mean:
            mom = add_noise("moments", moment_statistic(y, v, covariance=plan.covariance))
            mean_y = into_ball(mom[:plan.basis_dim] / sizes[i])
            mean = mean_y @ v
            complements[i] = (mean_y - v @ mean) @ b.T  # outside the subspace, in R^d
            second = mom[plan.basis_dim:]
        else:
            mom = add_noise("moments", moment_statistic(z, covariance=plan.covariance))
            mean = into_ball(mom[:dim] / sizes[i])
            second = mom[dim:]
        means[i] = mean
        covariances[i] = released_covariance(second / sizes[i], mean, flat,
                                             full=plan.covariance)
    atoms: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for i, z in enumerate(zs):
        draws = into_ball(gaussian_draws(public, means[i], covariances[i], size=max(
            GAUSSIAN_SAMPLE_PER_ATOM * m, INIT_DRAWS_PER_CENTRE * plan.cells)))
        if plan.rounds == 0:
            # the group is its DP Gaussian, as a public sample (post-processing)
            atoms.append(draws)
            weights.append(np.full(len(draws), 1.0 / len(draws)))
            continue
        # 3. Lloyd rounds; initial centres quantise the released Gaussian (public)
        centres = _kmeans(draws, plan.cells, public)
        mass = np.zeros(plan.cells)
        floor = MIN_COUNT_DEVIATIONS * add_noise.count_deviation()
        for _ in range(plan.rounds):
            stat = add_noise("lloyd", lloyd_statistic(z, centres))
            counts = stat[:plan.cells] / RADIUS
            sums = stat[plan.cells:].reshape(plan.cells, dim)
            ok = counts > floor
            new = centres.copy()
            new[ok] = into_ball(sums[ok] / counts[ok, None])
            new[:, flat] = means[i, flat]  # no spread where the subspace is noise
            centres, mass = new, np.maximum(counts, 0.0)
        if mass.sum() <= 0:  # every cell's noisy count <= 0: the Gaussian stands in
            atoms.append(draws)
            weights.append(np.full(len(draws), 1.0 / len(draws)))
        else:  # cells with no mass drop out of the summary (post-processing)
            keep = mass > 0
            atoms.append(centres[keep])
            weights.append(mass[keep] / mass[keep].sum())
    return SubspaceRelease(projection=b @ v, atoms=atoms, weights=weights, means=means,
                           covariances=covariances, complements=complements,
                           flat=flat,
                           secure=add_noise.secure,
                           seconds=time.perf_counter() - t_start)
