r"""Algorithm 1 of paper 002: noisy measurements of the pyramidal transform.

.. code-block:: text

    Algorithm 1 (paper 002, Sec. 3.2, with the Sec. 4 implementation details)
    1: Input: user distributions p_1, ..., p_n over G_Delta
    2: Parameters: epsilon, w, gamma;  q = floor(log2 sqrt(w)),  eps_i (Thm 3.1 proof)
    3: s <- sum_u p_u                                   (aggregate.user_distributions_sum)
    4: for i = q, ..., ell do                           (Sec. 4: levels i < q not measured)
    5:     nu_i <- Lap(1/eps_i)^{C_{2^i}}               (one laplace_mechanism call)
    6:     y'_i <- 2^-i (P_i s + nu_i)
    7: end for
    8: return RECONSTRUCT(y', w)                        (reconstruct.py)

Budgets (proof of Thm 3.1 with the Sec. 4 parameters):
:math:`\varepsilon_i = \gamma^{|i-q|}\varepsilon/Z` for :math:`i = q,\dots,\ell`, with
:math:`Z = \sum_{i=q}^{\ell}\gamma^{|i-q|}` summing over the *measured* levels only, so
that :math:`\sum_i\varepsilon_i = \varepsilon`. Defaults :math:`w = 20` and
:math:`\gamma = 1/\sqrt 2` are the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privot._validation import check_epsilon, check_int, check_positive
from privot.errors import InvalidParameterError
from privot.heatmaps.aggregate import CellSums
from privot.heatmaps.pyramid import pyramid
from privot.privacy.budget import TaggedSpender, check_spender, ensure_affordable
from privot.privacy.mechanisms import laplace_mechanism
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, Release, Spender

__all__ = ["DEFAULT_GAMMA", "DEFAULT_W", "Measurements", "level_budgets", "measure",
           "start_level"]

#: The paper's decay rate (Sec. 4): minimises the second error term of Thm 3.1.
DEFAULT_GAMMA = 1.0 / math.sqrt(2.0)
#: The paper's number of cells kept per level (Sec. 4).
DEFAULT_W = 20


def start_level(w: int, levels: int) -> int:
    r""":math:`q = \lfloor\log_2\sqrt w\rfloor`, clamped to ``levels`` (:math:`\ell`).

    Computed exactly on integers: :math:`\lfloor\tfrac12\log_2 w\rfloor =
    \lfloor\lfloor\log_2 w\rfloor / 2\rfloor`.

    Parameters
    ----------
    w : int
        >= 1, cells kept per level by RECONSTRUCT.
    levels : int
        :math:`\ell = \log_2\Delta` >= 0.
    """
    w = check_int(w, "w", minimum=1)
    ell = check_int(levels, "levels", minimum=0)
    return min((w.bit_length() - 1) // 2, ell)


def level_budgets(epsilon: float, *, levels: int, q: int,
                  gamma: float = DEFAULT_GAMMA) -> np.ndarray:
    r"""Per-level budgets :math:`\varepsilon_i = \gamma^{|i-q|}\varepsilon/Z`, i = q..ell.

    Parameters
    ----------
    epsilon : float
        Total budget, > 0.
    levels : int
        :math:`\ell` >= 0.
    q : int
        First measured level, ``0 <= q <= levels``.
    gamma : float
        Decay rate > 0 (the paper's analysis needs :math:`\gamma > 1/2`; privacy holds
        for any value).

    Returns
    -------
    (levels - q + 1,) float array
        ``out[j]`` is :math:`\varepsilon_{q+j}`. Their exact (``math.fsum``) sum is at
        most ``epsilon`` and equal to it up to a few ulps: the floats are nudged down
        until the sum does not exceed ``epsilon``.
    """
    eps = check_epsilon(epsilon)
    ell = check_int(levels, "levels", minimum=0)
    q = check_int(q, "q", minimum=0, maximum=ell)
    g = check_positive(gamma, "gamma")
    raw = np.array([g ** (i - q) for i in range(q, ell + 1)], dtype=np.float64)
    if not np.all(np.isfinite(raw)) or np.any(raw <= 0):
        raise InvalidParameterError("gamma", gamma, f"a value with finite, positive "
                                    f"gamma**k for k <= {ell - q}")
    out = raw / math.fsum(raw.tolist()) * eps  # Z sums over the measured levels only
    while math.fsum(out.tolist()) > eps:  # float rounding may overshoot by an ulp or two
        out = np.nextafter(out, 0.0)
    return out








def _as_sums(sums: np.ndarray | CellSums) -> np.ndarray:
    """The validated ``(Delta, Delta)`` array (CellSums does the checking)."""
    if isinstance(sums, CellSums):
        return sums.sums
    arr = np.asarray(sums, dtype=np.float64)
    return CellSums(arr, n_users=0, n_points=0, n_outside=0, n_users_empty=0).sums


@dataclass(frozen=True, repr=False)
class Measurements:
    r"""The noisy pyramid released by Algorithm 1.

    Attributes
    ----------
    values : tuple of arrays
        ``values[j]`` is :math:`\mathbf{y}'_i = 2^{-i}(\mathbf{P}_i\mathbf{s} + \nu_i)`
        for level ``i = start_level + j``, shape ``(2^i, 2^i)``.
    start_level : int
        :math:`q`, the first measured level.
    levels : int
        :math:`\ell = \log_2\Delta`.
    w : int
        Cells kept per level (RECONSTRUCT's parameter; it also fixed ``q``).
    gamma : float
        Decay rate of the budgets.
    epsilons : tuple of float
        :math:`\varepsilon_i` per measured level (same order as ``values``).
    epsilon : float
        Total spent, :math:`\sum_i\varepsilon_i` (``math.fsum``).
    releases : tuple of Release
        One Laplace release per level (the *unscaled* noisy block sums
        :math:`\mathbf{P}_i\mathbf{s}+\nu_i`, with their calibration).
    secure : bool
        False when a seeded generator was used: reproducible, **not fit for publication**.
    """

    values: tuple[np.ndarray, ...]
    start_level: int
    levels: int
    w: int
    gamma: float
    epsilons: tuple[float, ...]
    epsilon: float
    releases: tuple[Release, ...]
    secure: bool

    def level(self, i: int) -> np.ndarray:
        r""":math:`\mathbf{y}'_i`, ``(2^i, 2^i)``, for a measured level ``i``."""
        i = check_int(i, "i", minimum=self.start_level, maximum=self.levels)
        return self.values[i - self.start_level]

    @property
    def level_epsilons(self) -> dict[int, float]:
        """``{level: epsilon_i}`` for the measured levels."""
        return {self.start_level + j: e for j, e in enumerate(self.epsilons)}

    def __repr__(self) -> str:
        return (f"Measurements(epsilon={self.epsilon:g}, levels {self.start_level}.."
                f"{self.levels}, w={self.w}, gamma={self.gamma:.4g}"
                + ("" if self.secure else ", SEEDED") + ")")


def measure(sums: np.ndarray | CellSums, *, epsilon: float, w: int = DEFAULT_W,
            gamma: float = DEFAULT_GAMMA, accountant: Spender | None = None,
            rng: np.random.Generator | int | None = None) -> Measurements:
    r"""Algorithm 1: Laplace-noised block sums of every level ``q..ell`` of ``sums``.

    Parameters
    ----------
    sums : (Delta, Delta) array or CellSums
        :math:`\mathbf{s} = \sum_u \mathbf{p}_u` with every user's :math:`\mathbf{p}_u`
        of L1 norm at most 1 (as built by
        :func:`~privot.heatmaps.aggregate.user_distributions_sum`). ``Delta`` a power of
        two. The per-user bound is what the sensitivity relies on and cannot be read
        off an aggregate: a :class:`~privot.heatmaps.aggregate.CellSums` from
        :func:`~privot.heatmaps.aggregate.user_distributions_sum` or an engine enforces
        it by construction (each user's points weigh :math:`1/n_u`); a raw array is the
        caller's statement that it holds (only its shape, finiteness and sign are
        checked).
    epsilon : float
        Total budget > 0, split over the levels by :func:`level_budgets`.
    w : int, default 20
        >= 1; sets the first level :math:`q = \lfloor\log_2\sqrt w\rfloor`.
    gamma : float, default 1/sqrt(2)
        Decay rate > 0 of the per-level budgets.
    accountant : PrivacyAccountant, optional
        Charged once per measured level (mechanism ``"laplace"``, params tagged with
        ``level`` and ``query``); the whole release is checked to fit first, so a
        refusal happens before any noise is drawn.
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): OS CSPRNG. A seeded generator makes the release reproducible
        and marks it ``secure=False``.

    Returns
    -------
    Measurements

    Privacy
    -------
    Unit: one user (all of their points). Relation: add/remove one user
    (``Neighbouring.ADD_REMOVE``). Adding or removing user :math:`u` changes
    :math:`\mathbf{s}` by :math:`\pm\mathbf{p}_u`, a non-negative vector of L1 norm at
    most 1; block sums preserve the L1 norm of a non-negative vector, so every level's
    :math:`\mathbf{P}_i\mathbf{s}` has L1 sensitivity 1. Each level is one
    :func:`~privot.privacy.mechanisms.laplace_mechanism` call with sensitivity 1 and
    :math:`\varepsilon_i` (pure :math:`\varepsilon_i`-DP, float-attack safe); the scaling
    by :math:`2^{-i}` is post-processing. Basic composition over the levels gives pure
    :math:`\sum_i\varepsilon_i \le \varepsilon`-DP (Thm 3.1, privacy analysis).
    Derivation: ``docs/privacy/heatmaps.md``.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    eps = check_epsilon(epsilon)
    w = check_int(w, "w", minimum=1)
    gamma = check_positive(gamma, "gamma")
    check_spender(accountant)
    s = _as_sums(sums)
    ell = s.shape[0].bit_length() - 1
    q = start_level(w, ell)
    budgets = level_budgets(eps, levels=ell, q=q, gamma=gamma)
    total = math.fsum(budgets.tolist())
    ensure_affordable(accountant, total, "the heatmap measurement (Algorithm 1)")

    exact = pyramid(s, start_level=q)  # P_i s for i = q..ell (line 3 and the transform)
    values, releases = [], []
    for j, (block, eps_i) in enumerate(zip(exact, budgets.tolist(), strict=True)):
        i = q + j
        spender = (None if accountant is None else
                   TaggedSpender(accountant, {"release": "heatmap-pyramid", "level": i,
                                              "query": f"P_{i} s (block sums, level {i})"}))
        # line 5: nu_i ~ Lap(1/eps_i) per cell; L1 sensitivity of P_i s is 1
        rel = laplace_mechanism(block, sensitivity=1.0, epsilon=eps_i, accountant=spender,
                                rng=rng, relation=Neighbouring.ADD_REMOVE)
        releases.append(rel)
        values.append(np.ldexp(rel.value, -i))  # line 6: y'_i = 2^-i (P_i s + nu_i)
    return Measurements(values=tuple(values), start_level=q, levels=ell, w=w, gamma=gamma,
                        epsilons=tuple(budgets.tolist()), epsilon=total,
                        releases=tuple(releases),
                        secure=all(r.secure for r in releases))
