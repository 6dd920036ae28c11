r"""Algorithm 1 in the shuffle model (paper 002, App. F; Balle, Bell, Gascon, Nissim 2020).

A **simulation**, in one process, of the protocol of App. F: every user encodes their
pyramid, adds their share of the noise, splits the result into additive shares over
:math:`\mathbb Z_q` and sends them as ``(coordinate, share)`` messages; a shuffler
permutes all messages; the analyser sums the shares of each coordinate modulo
:math:`q`. The analyser's sums :math:`\mathbf y'` then go through the unchanged
RECONSTRUCT (Algorithm 2). The output of the simulation is distributed exactly as the
real protocol's analyser output; the **privacy claim is for the real protocol** (users
running the randomiser on their own devices, a trusted shuffler), not for this process,
which sees everything.

.. code-block:: text

    App. F (paper 002), as implemented; levels i = q0..ell (Sec. 4: start at q0)
    public: n (participants), B, eps_i (level_budgets), delta
    q  <- 2 (B n + T + 1)      (NOT the paper's q = B n, see below; T a noise tail bound)
    m  <- m_q0 + ... + m_ell,  m_i = 4^i
    r  <- ceil((2 ln(e^eps + 1) + 2 ln(m / delta) + ln q) / ln n + 1)   (footnote 11)
    user j:  y^j  <- [P_i p_j]_{i=q0..ell}                     (unscaled block sums)
             z^j  <- floor(B y^j)                               (exact integer floor)
             z'^j <- z^j + Polya(1/n, e^{-eps_i/B}) - Polya(1/n, e^{-eps_i/B})  per coord
             w^1..w^{r-1} uniform in Z_q^m,  w^r <- z'^j - w^1 - ... - w^{r-1}  (mod q)
             send (a, w^b_a) for a in [m], b in [r]
    shuffler: a uniformly random permutation of all n r m messages
    analyser: z'_a <- sum of the shares labelled a (mod q), read in (-q/2, q/2];
              y'_i <- z'_i / B;  RECONSTRUCT([2^-i y'_i]_i)

**The Polya parameter.** Removing user :math:`j`'s data changes the level-:math:`i` sum
:math:`\sum_j z^j_i` by :math:`z^j_i = \lfloor B\,\mathbf P_i\mathbf p_j\rfloor`, whose L1
norm is at most :math:`B\|\mathbf P_i\mathbf p_j\|_1 \le B`. The central mechanism this
protocol simulates therefore needs a discrete Laplace of scale :math:`b_i = B/\varepsilon_i`,
:math:`P[N=x]\propto e^{-|x|\varepsilon_i/B}`. A sum of :math:`n` independent
:math:`\mathrm{Polya}(1/n, p)` is :math:`\mathrm{NB}(1, p)`, the geometric of ratio
:math:`p`, and a difference of two independent such geometrics is the discrete Laplace
:math:`P[N=x]\propto p^{|x|}`. Hence :math:`p = e^{-\varepsilon_i/B}`; the extracted text's
:math:`e^{-\varepsilon_i}` is the case :math:`B = 1` (with it, the noise on
:math:`\mathbf y' = \mathbf z'/B` would be :math:`B` times too small and the guarantee
:math:`B\varepsilon_i` per level). :func:`~privot.privacy.noise.polya_laplace_shares`
with ``scale = B / eps_i`` draws exactly this.

**The modulus.** The paper sets :math:`q = Bn`. That does not suffice: (i) the level-0
coordinate's exact sum is :math:`B` times the number of users with data, i.e. exactly
:math:`Bn \equiv 0 \pmod{Bn}` when every participant has data; (ii) the noisy total
:math:`Z_a + N_a` of an empty cell is negative half of the time, and a full cell's can
exceed :math:`Bn`. Any representative window of length :math:`q` must contain
:math:`[-T, Bn + T]` where :math:`T` bounds :math:`|N_a|`. With centred representatives
:math:`(-q/2, q/2]` this needs :math:`q > 2T` and :math:`q/2 \ge Bn + T`; we take
:math:`q = 2(Bn + T + 1)` with :math:`T = \lceil b_{\max}\ln(2m/\beta)\rceil`,
:math:`b_{\max} = \max_i B/\varepsilon_i`, so that by a union bound over the :math:`m`
coordinates all of them decode exactly except with probability :math:`< \beta`
(``wrap_probability``, default :math:`2^{-40}`). A wrap is an accuracy failure, not a
privacy one: decoding is post-processing of the sums modulo :math:`q`, and :math:`q`
depends only on public parameters. ``docs/privacy/heatmaps_extensions.md`` has the
derivations.

**Communication** per user: :math:`rm` messages of :math:`\lceil\log_2(mq)\rceil` bits
(a label in :math:`[m]` and a share in :math:`\mathbb Z_q`), i.e.
:math:`rm\lceil\log_2(mq)\rceil` bits (App. F, "Communication").

**Simulation limits.** The per-user matrix :math:`\mathbf z'` is held densely
(``n_users_public x m`` integers) and refused above :data:`MAX_SIMULATED_ENTRIES`
entries or :data:`DEFAULT_MAX_USERS_SIMULATED` participants (adjustable); messages are
generated, shuffled and summed in blocks of coordinates of about
:data:`CHUNK_MESSAGES` messages, so their memory stays bounded. Shuffling block by block
is exact in distribution: the analyser's view is the multiset of ``(a, share)`` messages,
the shares of different coordinates are independent given :math:`\mathbf z'`, and a
uniformly random permutation of all messages shows the same multiset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from privot._usable import usable_user_points
from privot._validation import check_delta, check_epsilon, check_int, check_positive
from privot.errors import InvalidDataError, InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.measure import DEFAULT_GAMMA, DEFAULT_W, level_budgets, start_level
from privot.heatmaps.reconstruct import LP_FORMS, Reconstruction, reconstruct
from privot.privacy.mechanisms import polya_laplace_shares, secret_uniform_integers
from privot.privacy.noise import check_rng, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender, check_spender

__all__ = ["CHUNK_MESSAGES", "DEFAULT_MAX_USERS_SIMULATED", "DEFAULT_WRAP_PROBABILITY",
           "MAX_SIMULATED_ENTRIES", "SIMULATION_NOTE", "ShuffleCuratorDiagnostics",
           "ShuffleParameters", "ShuffleResult", "ShuffleSum", "analyser_sum", "centred",
           "shuffle_heatmap", "shuffle_parameters", "shuffle_sum", "split_shares",
           "user_scaled_pyramids"]

#: Default :math:`\beta`: probability bound that some coordinate's noisy total leaves the
#: decoding window (union bound over the coordinates).
DEFAULT_WRAP_PROBABILITY = 2.0 ** -40
#: Default refusal threshold on ``n_users_public`` for the simulation.
DEFAULT_MAX_USERS_SIMULATED = 1000
#: Largest ``n_users_public * m`` (dense per-user integer matrix, 8 bytes each) simulated.
MAX_SIMULATED_ENTRIES = 1 << 24
#: Messages generated, shuffled and summed per block of coordinates.
CHUNK_MESSAGES = 1 << 22
_EXACT_FLOAT = 1 << 53

SIMULATION_NOTE = (
    "simulated in one process: the users' encoding, Polya noise and split-and-mix, the "
    "shuffler and the analyser all run here; the output is distributed as the real "
    "protocol's, and the (epsilon, delta) claim (BBGN20 Cor. 6 / Lemma 5.2, as stated in "
    "paper 002 App. F) is for the real protocol with local randomness and a trusted "
    "shuffler, not for this process")


# ---------------------------------------------------------------------------------------
# Public parameters
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class ShuffleParameters:
    r"""Every public parameter of the protocol (all data-independent).

    Attributes
    ----------
    n_users_public : int
        :math:`n`, the number of participants (>= 2).
    B : int
        Scaling :math:`B \ge 1`.
    epsilon, delta : float
        The target guarantee (:math:`\varepsilon` is also the one in the formula for r).
    start_level, levels : int
        Measured levels :math:`q_0..\ell`.
    level_epsilons : tuple of float
        :math:`\varepsilon_i` per measured level (:func:`~privot.heatmaps.measure.level_budgets`).
    level_sizes : tuple of int
        :math:`m_i = 4^i`.
    m : int
        :math:`\sum_i m_i`, coordinates per user.
    noise_scales : tuple of float
        :math:`b_i = B/\varepsilon_i`, the discrete Laplace scale of the summed noise.
    tail_bound : int
        :math:`T`.
    wrap_probability : float
        :math:`\beta`.
    modulus : int
        :math:`q = 2(Bn + T + 1)`.
    n_messages : int
        :math:`r`.
    bits_per_message : int
        :math:`\lceil\log_2(mq)\rceil`.
    """

    n_users_public: int
    B: int
    epsilon: float
    delta: float
    start_level: int
    levels: int
    level_epsilons: tuple[float, ...]
    level_sizes: tuple[int, ...]
    m: int
    noise_scales: tuple[float, ...]
    tail_bound: int
    wrap_probability: float
    modulus: int
    n_messages: int
    bits_per_message: int

    @property
    def messages_per_user(self) -> int:
        """:math:`rm`."""
        return self.n_messages * self.m

    @property
    def bits_per_user(self) -> int:
        r""":math:`rm\lceil\log_2(mq)\rceil` (App. F, "Communication")."""
        return self.n_messages * self.m * self.bits_per_message

    @property
    def level_offsets(self) -> tuple[int, ...]:
        """Offset of each measured level in the ``m`` coordinates (then ``m``)."""
        return tuple(int(v) for v in np.cumsum((0,) + self.level_sizes))

    def __repr__(self) -> str:
        return (f"ShuffleParameters(n_users_public={self.n_users_public}, B={self.B}, "
                f"epsilon={self.epsilon:g}, delta={self.delta:g}, levels "
                f"{self.start_level}..{self.levels}, m={self.m}, modulus={self.modulus}, "
                f"n_messages={self.n_messages})")


def _n_messages(epsilon: float, delta: float, m: int, q: int, n: int) -> int:
    """r of App. F (footnote 11): ceil((2 ln(e^eps + 1) + 2 ln(m/delta) + ln q)/ln n + 1)."""
    ln_e1 = epsilon + math.log1p(math.exp(-epsilon))  # ln(e^eps + 1) without overflow
    num = 2.0 * ln_e1 + 2.0 * (math.log(m) - math.log(delta)) + math.log(q)
    return math.ceil(num / math.log(n) + 1.0)


def shuffle_parameters(*, n_users_public: int, B: int, epsilon: float, delta: float,
                       levels: int, w: int = DEFAULT_W, gamma: float = DEFAULT_GAMMA,
                       wrap_probability: float = DEFAULT_WRAP_PROBABILITY
                       ) -> ShuffleParameters:
    r"""The protocol's public parameters :math:`(q, m, r, \varepsilon_i, \dots)`.

    Parameters
    ----------
    n_users_public : int
        Participants :math:`n \ge 2` (``ln n`` divides in the formula for r).
    B : int
        Scaling >= 1.
    epsilon : float
        Total > 0, split over the levels as in Algorithm 1.
    delta : float
        In (0, 1).
    levels : int
        :math:`\ell = \log_2\Delta` >= 0.
    w : int, default 20
        Sets the first level :math:`q_0 = \lfloor\log_2\sqrt w\rfloor` (Sec. 4).
    gamma : float, default 1/sqrt(2)
        Decay of the level budgets.
    wrap_probability : float
        :math:`\beta` in (0, 1): bound on the probability that a coordinate wraps.

    Returns
    -------
    ShuffleParameters
    """
    n = check_int(n_users_public, "n_users_public", minimum=2)
    b = check_int(B, "B", minimum=1)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    ell = check_int(levels, "levels", minimum=0)
    w = check_int(w, "w", minimum=1)
    beta = check_delta(wrap_probability, "wrap_probability", allow_zero=False)
    q0 = start_level(w, ell)
    eps_i = level_budgets(eps, levels=ell, q=q0, gamma=check_positive(gamma, "gamma"))
    sizes = tuple(1 << (2 * i) for i in range(q0, ell + 1))
    m = int(sum(sizes))
    scales = tuple(b / e for e in eps_i.tolist())
    tail = math.ceil(max(scales) * math.log(2.0 * m / beta))
    q = 2 * (b * n + tail + 1)
    if q > 1 << 62:
        raise InvalidParameterError("B", B, f"a smaller value: the modulus {q} exceeds 2**62")
    r = _n_messages(eps, dlt, m, q, n)
    return ShuffleParameters(n_users_public=n, B=b, epsilon=eps, delta=dlt, start_level=q0,
                             levels=ell, level_epsilons=tuple(eps_i.tolist()),
                             level_sizes=sizes, m=m, noise_scales=scales, tail_bound=tail,
                             wrap_probability=beta, modulus=q, n_messages=r,
                             bits_per_message=(m * q - 1).bit_length())


# ---------------------------------------------------------------------------------------
# Protocol pieces
# ---------------------------------------------------------------------------------------


def centred(values: np.ndarray, q: int) -> np.ndarray:
    r"""Representatives of ``values mod q`` in :math:`(-q/2, q/2]` (int64).

    ``v mod q`` lies in :math:`[0, q)`; values above :math:`\lfloor q/2\rfloor` are
    shifted by :math:`-q`. An integer total :math:`t` with :math:`-q/2 < t \le q/2` is
    recovered exactly from :math:`t \bmod q`.
    """
    q = check_int(q, "q", minimum=1)
    v = np.mod(np.asarray(values, dtype=np.int64), q)
    return np.where(v > q // 2, v - q, v)


def split_shares(values: np.ndarray, *, r: int, q: int,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Split & mix (App. F): ``r`` additive shares over :math:`\mathbb Z_q`.

    :math:`w^1..w^{r-1}` are independent and uniform on :math:`\mathbb Z_q^m`
    (:func:`~privot.privacy.mechanisms.secret_uniform_integers`) and
    :math:`w^r = v - w^1 - \dots - w^{r-1} \bmod q`; any :math:`r - 1` of the shares are
    independent uniform, whatever :math:`v`.

    Parameters
    ----------
    values : (..., m) int array
        One row per user (any integers; reduced mod ``q``).
    r : int
        >= 1 shares.
    q : int
        Modulus in ``[1, 2**62]``.
    rng : numpy.random.Generator, optional

    Returns
    -------
    (..., r, m) int64 array
        Shares in ``[0, q)``; their sum over axis ``-2`` is ``values mod q``.
    """
    r = check_int(r, "r", minimum=1)
    q = check_int(q, "q", minimum=1, maximum=1 << 62)
    v = np.mod(np.asarray(values, dtype=np.int64), q)
    lead, m = v.shape[:-1], v.shape[-1]
    first = np.asarray(secret_uniform_integers(q, size=(*lead, r - 1, m), rng=rng),
                       dtype=np.int64).reshape(*lead, r - 1, m)
    # sum of the first r-1 shares mod q without overflow: reduce after each addition
    acc = np.zeros_like(v)
    for b in range(r - 1):
        acc = np.mod(acc + first[..., b, :], q)
    last = np.mod(v - acc, q)
    return np.concatenate([first, last[..., None, :]], axis=-2)


def analyser_sum(labels: np.ndarray, shares: np.ndarray, *, m: int, q: int) -> np.ndarray:
    r"""The analyser: per label, the sum of the shares mod ``q``, as centred representatives.

    Parameters
    ----------
    labels : (N,) int array
        Coordinate ``a`` of each message, in ``[0, m)``.
    shares : (N,) int array
        Each message's share, in ``[0, q)``.
    m, q : int

    Returns
    -------
    (m,) int64 array
        :func:`centred` sums in :math:`(-q/2, q/2]`.
    """
    m = check_int(m, "m", minimum=1)
    q = check_int(q, "q", minimum=1)
    lab = np.asarray(labels, dtype=np.int64).ravel()
    sh = np.asarray(shares, dtype=np.int64).ravel()
    if lab.shape != sh.shape:
        raise InvalidDataError(f"labels has {lab.size} values but shares has {sh.size}")
    if lab.size and (lab.min() < 0 or lab.max() >= m):
        raise InvalidDataError(f"labels must lie in [0, {m})")
    if sh.size and (sh.min() < 0 or sh.max() >= q):
        raise InvalidDataError(f"shares must lie in [0, {q})")
    if sh.size * q < _EXACT_FLOAT:
        # every partial sum is an integer below 2**53: float accumulation is exact
        tot = np.rint(np.bincount(lab, weights=sh.astype(np.float64), minlength=m))
        sums = np.mod(tot.astype(np.int64), q)
    else:
        sums = np.zeros(m, dtype=np.int64)
        np.add.at(sums, lab, sh)  # shares < q <= 2**62 and reduced below: no overflow
        sums = np.mod(sums, q)
    return centred(sums, q)


def _secure_permutation(n: int, rng: np.random.Generator | None) -> np.ndarray:
    """A uniformly random permutation of ``range(n)``: sort by independent uniform 62-bit
    keys from :func:`~privot.privacy.mechanisms.secret_uniform_integers`, redrawing all
    keys on a tie (so that the order is exactly uniform)."""
    while True:
        keys = np.asarray(secret_uniform_integers(1 << 62, size=n, rng=rng), dtype=np.int64)
        perm = np.argsort(keys, kind="stable")  # ties are redrawn below
        srt = keys[perm]
        if n < 2 or not np.any(srt[1:] == srt[:-1]):
            return perm


@dataclass(frozen=True, repr=False)
class ShuffleSum:
    r"""The analyser's output of one protocol run.

    Attributes
    ----------
    z_prime : (m,) int64 array
        :math:`\mathbf z'`, the centred sums mod :math:`q`.
    n_messages_total : int
        Messages through the shuffler, :math:`n r m`.
    exact_total : (m,) int64 array
        **Simulation-only** (nobody holds it in the real protocol): the integer total
        :math:`\sum_j z'^j` before reduction mod :math:`q`.
    """

    z_prime: np.ndarray
    n_messages_total: int
    exact_total: np.ndarray = field(repr=False)

    @property
    def wrapped(self) -> np.ndarray:
        """Coordinates whose total left the decoding window (simulation-only)."""
        return np.flatnonzero(self.z_prime != self.exact_total)

    def __repr__(self) -> str:
        return (f"ShuffleSum(m={self.z_prime.size}, n_messages_total="
                f"{self.n_messages_total}, wrapped={self.wrapped.size})")


def shuffle_sum(z: np.ndarray, *, params: ShuffleParameters,
                rng: np.random.Generator | int | None = None) -> ShuffleSum:
    r"""One run of the protocol on the users' scaled integer vectors ``z`` (App. F).

    Adds each user's Polya noise shares, splits, shuffles all messages and lets the
    analyser sum them. No accounting here: :func:`shuffle_heatmap` charges the release.

    Parameters
    ----------
    z : (n_users_public, m) int array
        :math:`\mathbf z^j = \lfloor B\mathbf y^j\rfloor`, one row per participant (rows
        of participants without data are zero); see :func:`user_scaled_pyramids`.
    params : ShuffleParameters
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS entropy (Polya: CSPRNG-seeded, see :func:`~privot.privacy.noise.polya`).

    Returns
    -------
    ShuffleSum
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    if not isinstance(params, ShuffleParameters):
        raise InvalidParameterError("params", params, "a ShuffleParameters")
    zz = np.asarray(z)
    n, m, q, r = params.n_users_public, params.m, params.modulus, params.n_messages
    if zz.shape != (n, m) or not np.issubdtype(zz.dtype, np.integer):
        raise InvalidDataError(f"z must be an integer array of shape ({n}, {m}), got "
                               f"{zz.dtype} {zz.shape}")
    if n * m > MAX_SIMULATED_ENTRIES:
        raise InvalidParameterError("n_users_public", n, f"n_users_public * m <= "
                                    f"{MAX_SIMULATED_ENTRIES} (m = {m}) for the simulation")
    zp = zz.astype(np.int64, copy=True)
    off = params.level_offsets
    for j, (size, scale) in enumerate(zip(params.level_sizes, params.noise_scales,
                                          strict=True)):
        # each user's share: Polya(1/n, e^{-eps_i/B}) - Polya(1/n, e^{-eps_i/B}); the sum
        # over the n users is the discrete Laplace of scale B/eps_i
        zp[:, off[j]:off[j + 1]] += polya_laplace_shares(n, scale, size=size, rng=rng)
    exact = zp.sum(axis=0)
    out = np.empty(m, dtype=np.int64)
    step = max(1, CHUNK_MESSAGES // (n * r))
    n_total = 0
    for a0 in range(0, m, step):
        a1 = min(m, a0 + step)
        width = a1 - a0
        shares = split_shares(zp[:, a0:a1], r=r, q=q, rng=rng)  # (n, r, width)
        labels = np.broadcast_to(np.arange(width, dtype=np.int64), shares.shape).ravel()
        values = shares.ravel()
        perm = _secure_permutation(values.size, rng)  # the shuffler
        out[a0:a1] = analyser_sum(labels[perm], values[perm], m=width, q=q)
        n_total += values.size
    return ShuffleSum(z_prime=out, n_messages_total=n_total, exact_total=exact)


@dataclass(frozen=True)
class _Encoded:
    z: np.ndarray
    n_users: int
    n_points: int
    n_outside: int
    n_users_empty: int


def _encode(user_ids: object, x: object, y: object, grid: Grid, B: int, q0: int,
            n_public: int) -> _Encoded:
    # the one rule for unusable rows (privot._usable), as on every heatmap path
    pts = usable_user_points(user_ids, x, y)
    codes, n_ids = pts.codes, pts.n_ids
    if n_ids > n_public:
        raise InvalidDataError(
            f"the data has {n_ids} distinct users but the protocol was set up for "
            f"n_users_public={n_public} participants; pass the public number of "
            "participants (at least the number of users taking part)")
    cell = grid.assign(pts.x, pts.y)
    kc = codes[cell.kept]
    per_user = np.bincount(kc, minlength=n_public).astype(np.int64)  # n_u (points inside)
    ell = grid.levels
    d = grid.resolution
    row, col = np.divmod(cell.cells, d)
    sizes = [1 << (2 * i) for i in range(q0, ell + 1)]
    offsets = np.cumsum([0] + sizes)
    z = np.zeros((n_public, int(offsets[-1])), dtype=np.int64)
    for j, i in enumerate(range(q0, ell + 1)):
        sh = ell - i
        blk = (row >> sh) * (1 << i) + (col >> sh)
        key = kc * sizes[j] + blk
        uniq, counts = np.unique(key, return_counts=True)
        u, b = np.divmod(uniq, sizes[j])
        # exact floor(B * count / n_u) on integers (no floating-point rounding)
        z[u, offsets[j] + b] = (B * counts) // per_user[u]
    n_users = int(np.count_nonzero(per_user))
    return _Encoded(z=z, n_users=n_users, n_points=pts.n_rows,
                    n_outside=pts.n_rows - int(cell.kept.sum()),
                    n_users_empty=n_ids - n_users)


def user_scaled_pyramids(user_ids: np.ndarray, x: np.ndarray, y: np.ndarray, *, grid: Grid,
                         B: int, start_level: int, n_users_public: int) -> np.ndarray:
    r"""Every participant's :math:`\mathbf z^j = \lfloor B[\mathbf P_i\mathbf p_j]_{i}\rfloor`.

    User :math:`j` with :math:`n_j` points inside the bounds has
    :math:`\mathbf P_i\mathbf p_j(c) = (\text{points of } j \text{ in } c)/n_j`; the floor of
    :math:`B` times it is computed exactly on integers. Rows follow the sorted distinct
    ids; rows past the number of distinct users (participants without data) are zero.

    Parameters
    ----------
    user_ids, x, y : (N,) arrays
        One row per point.
    grid : Grid
    B : int
        >= 1.
    start_level : int
        First level :math:`q_0`.
    n_users_public : int
        Participants (rows); at least the number of distinct ids.

    Returns
    -------
    (n_users_public, m) int64 array
        Coordinates ordered level by level, each level flat ``row * 2^i + col``.
    """
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    b = check_int(B, "B", minimum=1)
    q0 = check_int(start_level, "start_level", minimum=0, maximum=grid.levels)
    n = check_int(n_users_public, "n_users_public", minimum=1)
    return _encode(user_ids, x, y, grid, b, q0, n).z


# ---------------------------------------------------------------------------------------
# The heatmap
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShuffleCuratorDiagnostics:
    """Exact counts and simulation-only facts. **Not differentially private; the real
    protocol's analyser never sees them.**

    Attributes
    ----------
    n_users : int
        Participants with at least one point inside the bounds.
    n_points, n_outside : int
        Points read / dropped outside the bounds.
    n_users_empty : int
        Participants in the data with no point inside the bounds.
    n_participants_without_data : int
        ``n_users_public`` minus the distinct users in the data (they send noise only).
    wrapped_coordinates : int
        Coordinates whose noisy total left the decoding window (probability < beta).
    """

    n_users: int
    n_points: int
    n_outside: int
    n_users_empty: int
    n_participants_without_data: int
    wrapped_coordinates: int


@dataclass(frozen=True, repr=False)
class ShuffleResult:
    r"""A heatmap released through the simulated shuffle-model protocol.

    Attributes
    ----------
    distribution : (Delta, Delta) float array
        :math:`\hat{\mathbf a}` (RECONSTRUCT), sums to 1.
    estimate : (Delta, Delta) float array
        :math:`\hat{\mathbf s}`.
    decoded : tuple of arrays
        :math:`\mathbf y'_i = \mathbf z'_i/B` per measured level, ``(2^i, 2^i)``
        (unscaled: estimates of :math:`\mathbf P_i\mathbf s`).
    measurements : tuple of arrays
        :math:`2^{-i}\mathbf y'_i`, the input of RECONSTRUCT (Algorithm 1's scaling).
    reconstruction : Reconstruction
    parameters : ShuffleParameters
        :math:`q, m, r`, budgets, scales.
    epsilon, delta : float
        The shuffle-DP guarantee claimed for the real protocol.
    secure : bool
        False when a seeded generator was used (not fit for publication). Even when
        True, the users' Polya shares come from :func:`privot.privacy.noise.polya`, a
        CSPRNG-seeded *floating-point* sampler, not an exact integer one (the uniform
        shares and the shuffle are exact).
    simulated : str
        What this process simulated (:data:`SIMULATION_NOTE`).
    curator_only : ShuffleCuratorDiagnostics
    """

    distribution: np.ndarray
    estimate: np.ndarray
    decoded: tuple[np.ndarray, ...]
    measurements: tuple[np.ndarray, ...]
    reconstruction: Reconstruction
    parameters: ShuffleParameters
    epsilon: float
    delta: float
    secure: bool
    simulated: str
    curator_only: ShuffleCuratorDiagnostics

    @property
    def bits_per_user(self) -> int:
        r""":math:`rm\lceil\log_2(mq)\rceil`."""
        return self.parameters.bits_per_user

    def __repr__(self) -> str:
        d = self.distribution.shape[0]
        return (f"ShuffleResult(epsilon={self.epsilon:g}, delta={self.delta:g}, {d}x{d}, "
                f"n_users_public={self.parameters.n_users_public}, "
                f"mass={float(self.distribution.sum()):.4g}, simulated"
                + ("" if self.secure else ", SEEDED") + ")")


def shuffle_heatmap(user_ids: np.ndarray, x: np.ndarray, y: np.ndarray, *, grid: Grid,
                    epsilon: float, delta: float, B: int, n_users_public: int,
                    w: int = DEFAULT_W, gamma: float = DEFAULT_GAMMA, lp: str = "compact",
                    accountant: Spender | None = None, rng: np.random.Generator | int | None = None,
                    max_users_simulated: int = DEFAULT_MAX_USERS_SIMULATED,
                    wrap_probability: float = DEFAULT_WRAP_PROBABILITY) -> ShuffleResult:
    r"""Algorithms 1 + 2 with the measurements computed by the shuffle protocol of App. F.

    Parameters
    ----------
    user_ids, x, y : (N,) arrays
        One row per point (``x`` = longitude for geographic data). Points outside the
        grid's bounds are dropped (grid rule).
    grid : Grid
        Public grid.
    epsilon : float
        > 0, split over the levels as in Algorithm 1.
    delta : float
        In (0, 1), the shuffle protocol's delta (sets r).
    B : int
        Scaling >= 1: larger B, less rounding error, more communication.
    n_users_public : int
        Participants :math:`n \ge 2`, public. Distinct ids in the data must not exceed
        it; the remaining participants hold no data and send noise only.
    w, gamma, lp
        As for :func:`~privot.heatmaps.api.private_heatmap`.
    accountant : PrivacyAccountant, optional
        Charged ``PrivacyCost(sum eps_i, delta)`` once, before any noise.
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None: OS entropy. A seeded generator marks the result ``secure=False``.
    max_users_simulated : int
        Refuse ``n_users_public`` above this (default 1000); the dense per-user matrix is
        also refused above :data:`MAX_SIMULATED_ENTRIES` entries.
    wrap_probability : float
        :math:`\beta` for the modulus (see the module docstring).

    Returns
    -------
    ShuffleResult

    Raises
    ------
    InvalidParameterError
        A parameter out of range, or a simulation too large.
    InvalidDataError
        More distinct users than ``n_users_public``, bad coordinates.
    BudgetExceededError
        The accountant cannot afford ``(epsilon, delta)``: nothing charged, no noise.

    Privacy
    -------
    Unit: one user (all of their points). Relation: add/remove one user's data with the
    participants fixed at ``n_users_public`` (a removed user's data is replaced by the
    empty distribution, so they still send their noise share: "zero-out"), recorded as
    ``Neighbouring.ADD_REMOVE``. Per level the L1 sensitivity of
    :math:`\sum_j\mathbf z^j_i` is :math:`B`; the summed noise is exactly the discrete
    Laplace of scale :math:`B/\varepsilon_i`, so the sum is :math:`\varepsilon_i`-DP and
    all levels :math:`\sum_i\varepsilon_i \le \varepsilon`. With :math:`r` messages as in
    App. F (footnote 11: BBGN20 Cor. 6 and Lemma 5.2), the shuffled messages are
    :math:`(\varepsilon, \delta)`-DP ("shuffle DP"), as the paper states; the delta
    (from the split-and-mix reduction) is taken from BBGN20, not re-derived here.
    Decoding and RECONSTRUCT are post-processing. What is simulated:
    :data:`SIMULATION_NOTE`. ``docs/privacy/heatmaps_extensions.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    if lp not in LP_FORMS:
        raise InvalidParameterError("lp", lp, f"one of {LP_FORMS}")
    cap = check_int(max_users_simulated, "max_users_simulated", minimum=2)
    params = shuffle_parameters(n_users_public=n_users_public, B=B, epsilon=epsilon,
                                delta=delta, levels=grid.levels, w=w, gamma=gamma,
                                wrap_probability=wrap_probability)
    n = params.n_users_public
    if n > cap:
        raise InvalidParameterError("n_users_public", n_users_public,
                                    f"at most max_users_simulated={cap} for the simulation")
    if n * params.m > MAX_SIMULATED_ENTRIES:
        raise InvalidParameterError(
            "n_users_public", n_users_public,
            f"n_users_public * m <= {MAX_SIMULATED_ENTRIES} (m = {params.m} coordinates for "
            f"resolution {grid.resolution}); use a coarser grid or fewer participants")
    check_spender(accountant)
    enc = _encode(user_ids, x, y, grid, params.B, params.start_level, n)
    eps_total = math.fsum(params.level_epsilons)
    if accountant is not None:  # refused before any noise is drawn
        accountant.spend(
            PrivacyCost(eps_total, params.delta), mechanism="shuffle-bbgn20",
            relation=Neighbouring.ADD_REMOVE,
            params={"release": "heatmap-shuffle", "B": params.B, "modulus": params.modulus,
                    "n_messages": params.n_messages, "m": params.m,
                    "n_users_public": n, "level_epsilons": list(params.level_epsilons),
                    "start_level": params.start_level, "simulated": True,
                    "relation_note": "zero-out: participants fixed at n_users_public"})
    secure = resolve_rng(rng)[1]
    run = shuffle_sum(enc.z, params=params, rng=rng)
    off = params.level_offsets
    decoded, scaled = [], []
    for j, i in enumerate(range(params.start_level, params.levels + 1)):
        side = 1 << i
        yi = (run.z_prime[off[j]:off[j + 1]] / params.B).reshape(side, side)  # y' = z'/B
        decoded.append(yi)
        scaled.append(np.ldexp(yi, -i))  # Algorithm 1, line 6 scaling 2^-i
    rec = reconstruct(scaled, w=w, lp=lp, covered=grid.covered_mask())
    curator = ShuffleCuratorDiagnostics(
        n_users=enc.n_users, n_points=enc.n_points, n_outside=enc.n_outside,
        n_users_empty=enc.n_users_empty,
        n_participants_without_data=n - enc.n_users - enc.n_users_empty,
        wrapped_coordinates=int(run.wrapped.size))
    return ShuffleResult(distribution=rec.distribution, estimate=rec.estimate,
                         decoded=tuple(decoded), measurements=tuple(scaled),
                         reconstruction=rec, parameters=params, epsilon=eps_total,
                         delta=params.delta, secure=secure, simulated=SIMULATION_NOTE,
                         curator_only=curator)
