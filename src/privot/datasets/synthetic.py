"""Synthetic data generators of the papers' experiments.

Every generator takes an explicit ``rng`` (a :class:`numpy.random.Generator` or an
integer seed); nothing uses global random state. Results are frozen dataclasses whose
arrays are read-only. These generators produce *data*, not privacy noise: they do not
use :mod:`privot.privacy.noise` and need no secure randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privot._validation import check_int, check_positive, check_probability
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = [
    "GaussianMixtureData",
    "RingDirichletData",
    "FairnessData",
    "GaussianToCircleData",
    "gaussian_mixture_r10",
    "ring_dirichlet",
    "fairness_biased_data",
    "gaussian_to_circle",
    "FairLearningData",
    "biased_fairness_data",
]


def _as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """A Generator from ``rng`` (returned as is) or from a non-negative int seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidParameterError(
        "rng", rng, "a numpy.random.Generator or a non-negative integer seed")


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


# --------------------------------------------------------------------------------------
# Paper 000 / 001: equal mixture of 4 Gaussians in R^10
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GaussianMixtureData:
    """k samples of the 4-Gaussian mixture of the barycenter paper (read-only arrays).

    Attributes
    ----------
    points : (k, n, dim) float64 array
        ``points[i]`` is the sample (the empirical distribution :math:`\\mu_i`) of
        group ``i``.
    components : (k, n) int64 array
        Index in ``0..3`` of the mixture component each point was drawn from.
    means : (4, dim) float64 array
        The component centres :math:`(\\pm 0.25, \\pm 0.25, 0, \\dots, 0)`.
    std : float
        Per-coordinate standard deviation of each component.
    radius : float or None
        Radius of the ball the points were projected into (``None``: no projection).
    n_projected : int
        How many points fell outside the ball and were projected onto its boundary.
    """

    points: np.ndarray
    components: np.ndarray
    means: np.ndarray
    std: float
    radius: float | None
    n_projected: int

    @property
    def groups(self) -> list[np.ndarray]:
        """The k groups as a list of ``(n, dim)`` arrays (views of ``points``)."""
        return list(self.points)


def gaussian_mixture_r10(n: int = 1000, *, k: int = 2, std: float = 0.05, dim: int = 10,
                         radius: float | None = 0.5,
                         rng: np.random.Generator | int) -> GaussianMixtureData:
    r"""Groups of samples from the equal mixture of 4 Gaussians in :math:`\mathbb{R}^{10}`.

    The synthetic experiment of the barycenter paper (000, Sec. 6, Fig. 2; 001,
    Sec. 5, Fig. 4): "equally weighted mixtures of 4 Gaussians at
    :math:`(\pm 0.25, \pm 0.25, 0, \dots, 0) \in \mathbb{R}^{10}`", with ``n = 1000``
    points per distribution by default. Each of the ``k`` input distributions
    :math:`\mu_1, \dots, \mu_k` is an independent sample of ``n`` points of

    .. math::

        \mu = \frac14 \sum_{c \in \{\pm 0.25\}^2} \mathcal{N}\big((c, 0_{d-2}),
        \ \sigma^2 I_d\big).

    (The paper's remark that without JL "all points [end up] centered at the origin"
    as a *local minimum* shows that each input distribution is the whole mixture, not
    one component.) Points are then projected radially onto the ball
    :math:`B_0(\text{radius})` so Assumption 1 (support in :math:`B_0(1/2)`) holds:
    :math:`x \mapsto x \min(1, r / \|x\|_2)`, a data-independent rule.

    Parameters
    ----------
    n : int, default 1000
        Points per group (>= 1).
    k : int, default 2
        Number of groups (input distributions, >= 1). The paper does not state k for
        this experiment; 2 is the smallest for which a barycenter is not trivial.
    std : float, default 0.05
        Per-coordinate standard deviation :math:`\sigma` (> 0). The paper does not
        state it; 0.05 keeps about 99.2 % of the points inside :math:`B_0(1/2)`
        (:math:`\|x\|^2 \approx 0.125 + 10\sigma^2 = 0.15` against 0.25) while the
        four clusters stay well separated (centres 0.5 apart, 10 standard deviations).
    dim : int, default 10
        Ambient dimension (>= 2).
    radius : float or None, default 0.5
        Radius of the ball to project into; ``None`` keeps the raw Gaussian samples.
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    GaussianMixtureData
        ``points`` of shape ``(k, n, dim)``, ``components`` ``(k, n)``, ``means``
        ``(4, dim)``.

    Raises
    ------
    InvalidParameterError
        If a parameter is out of range.
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=1)
    dim = check_int(dim, "dim", minimum=2)
    std = check_positive(std, "std")
    if radius is not None:
        radius = check_positive(radius, "radius")
    gen = _as_generator(rng)
    means = np.zeros((4, dim))
    means[:, :2] = [[0.25, 0.25], [0.25, -0.25], [-0.25, 0.25], [-0.25, -0.25]]
    components = gen.integers(0, 4, size=(k, n))  # equal weights 1/4
    points = means[components] + std * gen.standard_normal((k, n, dim))
    n_projected = 0
    if radius is not None:
        norms = np.linalg.norm(points, axis=-1, keepdims=True)
        outside = norms > radius
        n_projected = int(outside.sum())
        points = np.where(outside, points * (radius / np.maximum(norms, radius)), points)
    return GaussianMixtureData(points=_frozen(points), components=_frozen(components),
                               means=_frozen(means), std=std, radius=radius,
                               n_projected=n_projected)


# --------------------------------------------------------------------------------------
# Paper 003: Dirichlet distributions on a ring
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RingDirichletData:
    """Distributions on the k points of a ring (read-only arrays).

    Attributes
    ----------
    support : (k,) int64 array
        The points :math:`0, \\dots, k-1`.
    distance : (k, k) float64 array
        Ring distance :math:`d(i, j) = \\min(|i-j|, k-|i-j|)`.
    coordinates : (k, 2) float64 array
        The points placed on the unit circle at angles :math:`2\\pi i / k`, for plots
        (their Euclidean distances are *not* ``distance``).
    distributions : (n_users, k) float64 array
        One probability vector per user (rows sum to 1).
    concentration : float
        The symmetric Dirichlet parameter used.
    """

    support: np.ndarray
    distance: np.ndarray
    coordinates: np.ndarray
    distributions: np.ndarray
    concentration: float

    def cost_matrix(self, p: float = 2.0) -> np.ndarray:
        """The ground cost :math:`d(i, j)^p` of :math:`W_p` (the paper uses p = 2)."""
        p = check_positive(p, "p")
        return self.distance ** p


def ring_dirichlet(n_users: int = 1, *, k: int = 30, concentration: float = 0.1,
                   rng: np.random.Generator | int) -> RingDirichletData:
    r"""Users' distributions drawn from a symmetric Dirichlet over the points of a ring.

    The synthetic experiment of the WPM paper (003, Sec. 5.1, Fig. 1):
    :math:`\mathcal{X} = \mathcal{Y} = \{0, \dots, k-1\}` on a ring with cost
    :math:`d(i, j) = \min\{|i-j|, k-|i-j|\}`, ``k = 30`` (with
    :math:`\varepsilon = 5`, ``p = 2`` for the mechanism), and each input distribution
    :math:`\mu \sim \mathrm{Dirichlet}(0.1, \dots, 0.1)`, normalised to sum to 1.

    .. math::

        \mu_u \overset{\text{iid}}{\sim} \mathrm{Dir}(\alpha 1_k), \qquad
        u = 1, \dots, n_{\text{users}}.

    With :math:`\alpha = 0.1` most of each distribution's mass sits on a few points
    (:math:`\mathbb{E}\,\mu_{u,i} = 1/k`, :math:`\mathbb{E}\,\sum_i \mu_{u,i}^2 =
    (\alpha + 1)/(k\alpha + 1) = 0.275`).

    Parameters
    ----------
    n_users : int, default 1
        Number of distributions (>= 1); the paper shows one.
    k : int, default 30
        Number of points on the ring (>= 2).
    concentration : float, default 0.1
        Symmetric Dirichlet parameter :math:`\alpha` (> 0).
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    RingDirichletData

    Raises
    ------
    InvalidParameterError
        If a parameter is out of range.
    """
    n_users = check_int(n_users, "n_users", minimum=1)
    k = check_int(k, "k", minimum=2)
    concentration = check_positive(concentration, "concentration")
    gen = _as_generator(rng)
    support = np.arange(k, dtype=np.int64)
    diff = np.abs(support[:, None] - support[None, :])
    distance = np.minimum(diff, k - diff).astype(np.float64)
    angle = 2.0 * np.pi * support / k
    coordinates = np.column_stack([np.cos(angle), np.sin(angle)])
    dist = gen.dirichlet(np.full(k, concentration), size=n_users)
    dist = dist / dist.sum(axis=1, keepdims=True)  # "normalizing the sample to sum to 1"
    return RingDirichletData(support=_frozen(support), distance=_frozen(distance),
                             coordinates=_frozen(coordinates),
                             distributions=_frozen(dist), concentration=concentration)


# --------------------------------------------------------------------------------------
# Paper 004, App. B: biased data for fair classification / regression
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FairnessData:
    """Biased data with a sensitive attribute (paper 004, App. B; read-only arrays).

    Attributes
    ----------
    x : (n, d_core + d_spurious) float64 array
        Features :math:`X = [X_{core}, X_{sp}]`.
    a : (n,) int64 array
        Sensitive attribute :math:`A \\in \\{0, 1\\}`.
    y : (n,) int64 array
        Label :math:`Y = I(Y^C_2 > 1 - Y^C_1) \\in \\{0, 1\\}`.
    y_continuous : (n, 2) float64 array
        Continuous response :math:`Y^C` in :math:`[0, 1]^2` (or
        :math:`[-1/2, 1/2]^2` when generated with ``centre_response=True``).
    d_core : int
        Number of core features (first columns of ``x``).
    d_spurious : int
        Number of spurious features (last columns of ``x``).
    """

    x: np.ndarray
    a: np.ndarray
    y: np.ndarray
    y_continuous: np.ndarray
    d_core: int
    d_spurious: int

    @property
    def x_core(self) -> np.ndarray:
        """``(n, d_core)`` core features, a noisy copy of :math:`Y^C`."""
        return self.x[:, :self.d_core]

    @property
    def x_spurious(self) -> np.ndarray:
        """``(n, d_spurious)`` spurious features, a noisy copy of :math:`A`."""
        return self.x[:, self.d_core:]


def fairness_biased_data(n: int = 30000, *, p: float = 0.7, d_core: int = 8,
                         d_spurious: int = 8, var_core: float = 1 / 5,
                         var_spurious: float = 2 / 5, centre_response: bool = False,
                         rng: np.random.Generator | int) -> FairnessData:
    r"""Simulated biased data for fair and private learning (paper 004, App. B).

    The generating model of Rodriguez-Vitores, Lalanne and Loubes, App. B:

    1. :math:`Y^C \sim U([0, 1]^2)`;
    2. :math:`Y = I(Y^C_2 > 1 - Y^C_1)`;
    3. :math:`A = BY + (1 - B)(1 - Y)`, with :math:`B \sim \mathrm{Bernoulli}(p)`
       independent of :math:`Y`;
    4. :math:`X_{core} = [Y^C, \dots, Y^C] + \mathcal{N}(0, \sigma^2_{core}
       I_{d_{core}})` (:math:`Y^C` repeated :math:`d_{core}/2` times, i.e. columns
       :math:`Y^C_1, Y^C_2, Y^C_1, Y^C_2, \dots`) and :math:`X_{sp} = [A, \dots, A] +
       \mathcal{N}(0, \sigma^2_{sp} I_{d_{sp}})`;
    5. :math:`X = [X_{core}, X_{sp}]`.

    So :math:`P(A = Y) = p`, :math:`\mathbb{E}\, n_j = n/2`,
    :math:`\mathbb{E}\, n_{j,j} = pn/2` and :math:`\mathbb{E}\, n_{j,1-j} = (1-p)n/2`
    (:math:`n_{j,k}` = number of rows with :math:`A = j, Y = k`). The paper uses the
    defaults: ``n = 30000``, ``p = 0.7``, ``d_core = d_sp = 8``,
    :math:`\sigma^2_{core} = 1/5`, :math:`\sigma^2_{sp} = 2/5`. For the regression
    experiment (App. B.2) the response is centred to :math:`[-1/2, 1/2]^2`
    (``centre_response=True``); the features are not changed by it.

    Parameters
    ----------
    n : int, default 30000
        Number of rows (>= 1).
    p : float, default 0.7
        :math:`P(A = Y)`, in ``[0, 1]``.
    d_core : int, default 8
        Number of core features; even and >= 2.
    d_spurious : int, default 8
        Number of spurious features (>= 0).
    var_core, var_spurious : float, default 1/5 and 2/5
        Noise *variances* :math:`\sigma^2_{core}`, :math:`\sigma^2_{sp}` (> 0).
    centre_response : bool, default False
        Subtract 1/2 from ``y_continuous`` (App. B.2).
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    FairnessData

    Raises
    ------
    InvalidParameterError
        If a parameter is out of range (e.g. an odd ``d_core``).
    """
    n = check_int(n, "n", minimum=1)
    p = check_probability(p, "p")
    d_core = check_int(d_core, "d_core", minimum=2)
    if d_core % 2:
        raise InvalidParameterError("d_core", d_core,
                                    "an even integer >= 2 (Y^C is 2-D, repeated d_core/2 times)")
    d_spurious = check_int(d_spurious, "d_spurious", minimum=0)
    var_core = check_positive(var_core, "var_core")
    var_spurious = check_positive(var_spurious, "var_spurious")
    gen = _as_generator(rng)
    y_c = gen.random((n, 2))                                   # step 1
    y = (y_c[:, 1] > 1.0 - y_c[:, 0]).astype(np.int64)        # step 2
    b = (gen.random(n) < p).astype(np.int64)                   # B ~ Bernoulli(p)
    a = b * y + (1 - b) * (1 - y)                              # step 3
    x_core = np.tile(y_c, d_core // 2) + np.sqrt(var_core) * gen.standard_normal((n, d_core))
    x_sp = (np.repeat(a[:, None].astype(np.float64), d_spurious, axis=1)
            + np.sqrt(var_spurious) * gen.standard_normal((n, d_spurious)))  # step 4
    x = np.concatenate([x_core, x_sp], axis=1)                 # step 5
    if centre_response:
        y_c = y_c - 0.5
    return FairnessData(x=_frozen(x), a=_frozen(a), y=_frozen(y),
                        y_continuous=_frozen(y_c), d_core=d_core, d_spurious=d_spurious)


# --------------------------------------------------------------------------------------
# Paper 004, App. C: standard Gaussian -> uniform on a circle
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GaussianToCircleData:
    """Source and target samples of the data-generation experiment (read-only arrays).

    Attributes
    ----------
    source : (n, 2) float64 array
        :math:`X \\sim \\mathcal{N}(0, I_2)`, the input transformed by the network.
    target : (n, 2) float64 array
        :math:`Z` uniform on the circle of radius ``radius`` centred at the origin.
    radius : float
        Radius of the circle.
    """

    source: np.ndarray
    target: np.ndarray
    radius: float


def gaussian_to_circle(n: int = 100000, *, radius: float = 0.75,
                       rng: np.random.Generator | int) -> GaussianToCircleData:
    r"""Standard Gaussian source and uniform-on-a-circle target (paper 004, App. C).

    "n = 100000 samples of Z drawn from the uniform distribution on a circle with
    radius 3/4, and equal number of samples of X drawn from the standard Gaussian
    distribution in :math:`\mathbb{R}^2`":

    .. math::

        X_i \sim \mathcal{N}(0, I_2), \qquad
        Z_i = r(\cos\Theta_i, \sin\Theta_i),\ \Theta_i \sim U[0, 2\pi),
        \qquad i = 1, \dots, n.

    Parameters
    ----------
    n : int, default 100000
        Number of samples of each (>= 1).
    radius : float, default 0.75
        Circle radius :math:`r` (> 0).
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    GaussianToCircleData

    Raises
    ------
    InvalidParameterError
        If a parameter is out of range.
    """
    n = check_int(n, "n", minimum=1)
    radius = check_positive(radius, "radius")
    gen = _as_generator(rng)
    source = gen.standard_normal((n, 2))
    theta = gen.uniform(0.0, 2.0 * np.pi, size=n)
    target = radius * np.column_stack([np.cos(theta), np.sin(theta)])
    return GaussianToCircleData(source=_frozen(source), target=_frozen(target),
                                radius=radius)


# --------------------------------------------------------------------------------------
# Fair learning: one container for the synthetic and the real fairness data sets
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class FairLearningData:
    """Features, label and binary sensitive attribute for fair learning (read-only arrays).

    The common result of :func:`biased_fairness_data`,
    :func:`~privot.datasets.load_adult_fairness` and
    :func:`~privot.datasets.load_arrests`. ``len(data)`` is the number of rows ``n``.

    Attributes
    ----------
    x : (n, d) float32 array
        Features, encoded without looking at the data (public bounds and category lists).
    y : (n,) int64 array or (n, k) float64 array
        Label in ``{0, 1}`` (classification) or a ``k``-dimensional response
        (regression).
    sensitive : (n,) int64 array
        Sensitive attribute :math:`A \\in \\{0, 1\\}`; each loader documents which value
        is 1.
    feature_names : tuple of str
        One name per column of ``x``.
    name : str
        Name of the data set.
    y_continuous : (n, k) float64 array or None, default None
        A continuous response beside a discrete ``y`` (the synthetic data's
        :math:`Y^C`), else ``None``.

    Raises
    ------
    InvalidDataError
        On construction, if the shapes do not agree or ``sensitive`` is not 0/1.
    """

    x: np.ndarray
    y: np.ndarray
    sensitive: np.ndarray
    feature_names: tuple[str, ...]
    name: str
    y_continuous: np.ndarray | None = None

    def __post_init__(self) -> None:
        x = np.asarray(self.x, dtype=np.float32)
        y = np.asarray(self.y)
        if y.ndim == 1:
            if not np.array_equal(y, np.round(y)):
                raise InvalidDataError("a 1-D y must hold integer labels; pass a "
                                       "regression response as an (n, k) array")
            y = y.astype(np.int64)
        else:
            y = y.astype(np.float64)
        s = np.asarray(self.sensitive).astype(np.int64)
        names = tuple(str(f) for f in self.feature_names)
        if x.ndim != 2:
            raise InvalidDataError(f"x must be a 2-D (n, d) array, got shape {x.shape}")
        n = x.shape[0]
        if y.ndim not in (1, 2) or y.shape[0] != n:
            raise InvalidDataError(f"y must have shape ({n},) or ({n}, k), got {y.shape}")
        if s.shape != (n,):
            raise InvalidDataError(f"sensitive must have shape ({n},), got {s.shape}")
        if not np.isin(s, (0, 1)).all():
            raise InvalidDataError("sensitive must take the values 0 and 1 only")
        if len(names) != x.shape[1]:
            raise InvalidDataError(
                f"feature_names has {len(names)} names for {x.shape[1]} columns of x")
        yc = self.y_continuous
        if yc is not None:
            yc = np.asarray(yc, dtype=np.float64)
            if yc.ndim != 2 or yc.shape[0] != n:
                raise InvalidDataError(
                    f"y_continuous must have shape ({n}, k), got {yc.shape}")
            yc = _frozen(yc)
        object.__setattr__(self, "x", _frozen(x))
        object.__setattr__(self, "y", _frozen(y))
        object.__setattr__(self, "sensitive", _frozen(s))
        object.__setattr__(self, "feature_names", names)
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "y_continuous", yc)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def __repr__(self) -> str:
        task = "label" if self.y.ndim == 1 else f"response dim {self.y.shape[1]}"
        # n and d only: no statistic of the (possibly private) data goes into logs
        return f"FairLearningData(name={self.name!r}, n={len(self)}, d={self.x.shape[1]}, {task})"

    def _take(self, idx: np.ndarray) -> FairLearningData:
        yc = None if self.y_continuous is None else self.y_continuous[idx]
        return FairLearningData(x=self.x[idx], y=self.y[idx], sensitive=self.sensitive[idx],
                                feature_names=self.feature_names, name=self.name,
                                y_continuous=yc)

    def split(self, test_fraction: float, rng: np.random.Generator | int,
              ) -> tuple[FairLearningData, FairLearningData]:
        """Split the rows uniformly at random into a train and a test part.

        Parameters
        ----------
        test_fraction : float
            Fraction of rows in the test part, in ``(0, 1)``; the test part has
            ``round(test_fraction * n)`` rows, at least 1 and at most ``n - 1``.
        rng : numpy.random.Generator or int
            Source of randomness, or a seed for :func:`numpy.random.default_rng`.

        Returns
        -------
        train, test : FairLearningData
            Disjoint parts covering all rows, each in a random order; same
            ``feature_names`` and ``name``.

        Raises
        ------
        InvalidParameterError
            If ``test_fraction`` is not in ``(0, 1)``, ``n < 2`` or ``rng`` is invalid.

        Privacy
        -------
        Not a release. The split is a data sampler: its randomness is independent of the
        data and the part sizes depend on ``n`` only. A seeded ``rng`` gives reproducible
        experiments; each row lands in exactly one part, so the parts are disjoint
        data sets (parallel composition applies to mechanisms run on them).
        """
        test_fraction = check_probability(test_fraction, "test_fraction", open_left=True,
                                          open_right=True)
        n = len(self)
        if n < 2:
            raise InvalidParameterError("n", n, "at least 2 rows to split")
        gen = _as_generator(rng)
        n_test = min(max(int(round(test_fraction * n)), 1), n - 1)
        perm = gen.permutation(n)
        return self._take(perm[n_test:]), self._take(perm[:n_test])


def biased_fairness_data(n: int = 30000, *, p: float = 0.7, d_core: int = 8,
                         d_spurious: int = 8, var_core: float = 1 / 5,
                         var_spurious: float = 2 / 5,
                         rng: np.random.Generator | int) -> FairLearningData:
    r"""The biased data of paper 004, App. B, as :class:`FairLearningData`.

    The same model and, for the same ``rng``, exactly the same draws as
    :func:`fairness_biased_data` (which see for the five steps):
    :math:`Y^C \sim U([0,1]^2)`, :math:`Y = I(Y^C_2 > 1 - Y^C_1)`,
    :math:`A = BY + (1-B)(1-Y)` with :math:`B \sim \mathrm{Bernoulli}(p)` independent,
    :math:`X_{core} = [Y^C, \dots, Y^C] + \mathcal{N}(0, \sigma^2_{core} I_{d_{core}})`,
    :math:`X_{sp} = [A, \dots, A] + \mathcal{N}(0, \sigma^2_{sp} I_{d_{sp}})`,
    :math:`X = [X_{core}, X_{sp}]`. Hence :math:`\mathbb{E}\, n_j = n/2`,
    :math:`\mathbb{E}\, n_{j,j} = pn/2`, :math:`\mathbb{E}\, n_{j,1-j} = (1-p)n/2`.

    Parameters
    ----------
    n : int, default 30000
        Number of rows (>= 2, so that the data can be split).
    p : float, default 0.7
        :math:`P(A = Y)`, in ``[0, 1]``.
    d_core : int, default 8
        Number of core features; even and >= 2.
    d_spurious : int, default 8
        Number of spurious features :math:`d_{sp}` (>= 0).
    var_core, var_spurious : float, default 1/5 and 2/5
        Noise variances :math:`\sigma^2_{core}`, :math:`\sigma^2_{sp}` (> 0).
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    FairLearningData
        ``x`` ``(n, d_core + d_spurious)`` float32 (columns ``core_0..`` =
        :math:`Y^C_1, Y^C_2, Y^C_1, \dots` plus noise, then ``spurious_0..``),
        ``y`` = :math:`Y` (int64), ``sensitive`` = :math:`A`, ``y_continuous`` =
        :math:`Y^C` ``(n, 2)`` in :math:`[0, 1]^2` (subtract 1/2 for the centred
        response of App. B.2), ``name = "biased_fairness"``.

    Raises
    ------
    InvalidParameterError
        If a parameter is out of range (e.g. an odd ``d_core``).

    Privacy
    -------
    Synthetic data, not a release. The features are unbounded (Gaussian noise): a
    private learner must clip per-example gradients (DP-SGD) rather than rely on
    bounded features. The paper fixes :math:`\delta = 0.1/n` in all App. B runs.
    """
    n = check_int(n, "n", minimum=2)
    d = fairness_biased_data(n, p=p, d_core=d_core, d_spurious=d_spurious,
                             var_core=var_core, var_spurious=var_spurious, rng=rng)
    names = ([f"core_{i}" for i in range(d.d_core)]
             + [f"spurious_{i}" for i in range(d.d_spurious)])
    return FairLearningData(x=d.x, y=d.y, sensitive=d.a, feature_names=tuple(names),
                            name="biased_fairness", y_continuous=d.y_continuous)
