"""Validation shared by the sampling capability: one wording for every mechanism.

Each helper returns the validated value as a float array or raises
:class:`~privot.errors.InvalidParameterError` / :class:`~privot.errors.InvalidDataError`
naming the parameter, the value and what is allowed (no ``assert``).

Shapes used throughout :mod:`privot.sampling`:

* ``mu``: one distribution ``(k,)`` or a batch ``(n_users, k)`` over the ``k`` public
  input points;
* ``cost``: ``(k, k_v)``, ``cost[i, j] = d(x_i, v_j) ** p`` (public);
* ``base_measure``: ``(k_v,)``, non-negative, not necessarily a probability; the LDP
  polytope ``Q_{m, eps}`` is non-empty iff ``e^{-eps/2} sum(m) <= 1 <= e^{eps/2} sum(m)``
  (paper 003, Def. 2.2).

Privacy
-------
No release here. Unit: one user's whole distribution ``mu``; relation: local (any two
inputs of one user are neighbours, ``Neighbouring.LOCAL``). These checks only refuse
inputs; the guarantee (eps-LDP because every output lies in the polytope of a public
base measure, Prop. 3.2) belongs to :mod:`privot.sampling.mechanism`, derived in
``docs/privacy/sampling.md``. The cost, base measure and epsilon checked here are public
parameters; a refusal on ``mu`` happens before any sample is drawn or any budget is
charged.
"""

from __future__ import annotations

import math

import numpy as np

from privot._validation import check_epsilon, check_finite_array, check_positive
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = [
    "CHANNEL_ATOL",
    "MU_ATOL",
    "check_channel",
    "check_distributions",
    "check_cost",
    "check_base_measure",
    "check_order",
    "check_regularization",
    "check_epsilon",
]

#: Tolerance on ``|sum(mu) - 1|`` for an input distribution (per row).
MU_ATOL = 1e-9
#: Tolerance on the rows of a given channel (the release snaps them anyway).
CHANNEL_ATOL = 1e-6


def check_distributions(mu: object, name: str = "mu", *, k: int | None = None
                        ) -> tuple[np.ndarray, bool]:
    """Distributions over ``k`` points, as a ``(n, k)`` float array.

    Parameters
    ----------
    mu : array_like, shape (k,) or (n, k)
        Non-negative, finite, each row summing to 1 within :data:`MU_ATOL`.
    k : int, optional
        The expected number of input points (columns).

    Returns
    -------
    rows : ndarray, shape (n, k)
        The rows, renormalised to sum to exactly 1 in floating point.
    single : bool
        True when ``mu`` was one ``(k,)`` distribution (callers return ``(k_v,)`` then).
    """
    arr = check_finite_array(mu, name)
    single = arr.ndim == 1
    rows = arr[None, :] if single else arr
    if rows.ndim != 2:
        raise InvalidDataError(f"{name} must have shape (k,) or (n, k), got shape {arr.shape}")
    if k is not None and rows.shape[1] != k:
        raise InvalidDataError(
            f"{name} has {rows.shape[1]} entries per distribution but there are {k} input "
            "points (rows of the cost matrix)")
    if np.any(rows < 0):
        i = tuple(int(v) for v in np.argwhere(rows < 0)[0])
        raise InvalidDataError(
            f"{name} must be non-negative (a probability distribution); entry {i} is "
            f"{rows[i]!r}")
    totals = rows.sum(axis=1)
    bad = np.flatnonzero(np.abs(totals - 1.0) > MU_ATOL)
    if bad.size:
        raise InvalidDataError(
            f"{name} must sum to 1 (within {MU_ATOL:g}); row {int(bad[0])} sums to "
            f"{totals[bad[0]]!r}")
    return rows / totals[:, None], single


def check_cost(cost: object, name: str = "cost", *, k: int | None = None,
               k_v: int | None = None) -> np.ndarray:
    """A finite non-negative ``(k, k_v)`` cost matrix with ``k, k_v >= 1``."""
    arr = check_finite_array(cost, name, allow_empty=True)
    if arr.ndim != 2:
        raise InvalidDataError(f"{name} must have shape (k, k_v), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidDataError(
            f"{name} has shape {arr.shape}; k >= 1 input points and k_v >= 1 output points "
            "are needed")
    for axis, want, what in ((0, k, "k (input points)"), (1, k_v, "k_v (output points)")):
        if want is not None and arr.shape[axis] != want:
            raise InvalidDataError(
                f"{name} has shape {arr.shape}; axis {axis} must have length {want} = {what}")
    if np.any(arr < 0):
        i = tuple(int(v) for v in np.argwhere(arr < 0)[0])
        raise InvalidDataError(f"{name} must be non-negative; {name}{list(i)} = {arr[i]!r}")
    return arr


def check_base_measure(base_measure: object, epsilon: float, *, k_v: int | None = None,
                       name: str = "base_measure") -> np.ndarray:
    """A base measure ``m >= 0`` of length ``k_v`` whose LDP polytope is non-empty.

    Non-empty means ``e^{-eps/2} sum(m) <= 1 <= e^{eps/2} sum(m)`` (Def. 2.2), i.e.
    ``sum(m)`` in ``[e^{-eps/2}, e^{eps/2}]``.
    """
    eps = check_epsilon(epsilon)
    arr = check_finite_array(base_measure, name, ndim=1)
    if k_v is not None and arr.shape[0] != k_v:
        raise InvalidDataError(
            f"{name} has length {arr.shape[0]} but there are k_v = {k_v} output points")
    if np.any(arr < 0):
        i = int(np.flatnonzero(arr < 0)[0])
        raise InvalidDataError(f"{name} must be non-negative; {name}[{i}] = {arr[i]!r}")
    total = float(arr.sum())
    lo, hi = math.exp(-eps / 2), math.exp(eps / 2)
    if not lo <= total <= hi:
        raise InvalidParameterError(
            f"sum({name})", total,
            f"a total mass in [e^-eps/2, e^eps/2] = [{lo:.6g}, {hi:.6g}] for epsilon={eps:g}; "
            "otherwise the LDP polytope is empty")
    return arr


def check_order(p: object, name: str = "p") -> float:
    """The order ``p >= 1`` of the Wasserstein distance."""
    value = check_positive(p, name)
    if value < 1:
        raise InvalidParameterError(name, p, "a finite number >= 1")
    return value


def check_regularization(lam: object, name: str = "lam") -> float:
    """The entropic regularisation ``lambda > 0``."""
    return check_positive(lam, name)


def check_channel(channel: object, k: int, k_v: int, name: str = "channel") -> np.ndarray:
    r"""A ``(k, k_v)`` channel, row ``i`` the law :math:`M[\delta_i]`: finite, entries
    ``>= -CHANNEL_ATOL``, rows summing to ``1 +- CHANNEL_ATOL``; as a float array."""
    ch = check_finite_array(channel, name, ndim=2)
    if ch.shape != (k, k_v):
        raise InvalidParameterError(name, f"<array of shape {ch.shape}>",
                                    f"a (k, k_v) = ({k}, {k_v}) array, row i = M[delta_i]")
    if np.any(ch < -CHANNEL_ATOL) or np.any(np.abs(ch.sum(axis=1) - 1.0) > CHANNEL_ATOL):
        raise InvalidParameterError(name, "<rows that are not distributions>",
                                    f"non-negative rows summing to 1 (within {CHANNEL_ATOL:g})")
    return ch
