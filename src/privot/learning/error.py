r"""The error a private training run states before anything is spent: what the noise does
to one step (issue 28).

One DP-SGD step of :mod:`privot.learning.private` adds to the clipped batch gradient
:math:`g\in\mathbb R^P` a vector :math:`N` of ``P`` independent discrete Gaussians on the
grid :math:`2^{-k}\mathbb Z`, each of standard deviation (at most)
:math:`s = \sigma\Delta'` (the trainer's ``noise_std``). From the public parameters only:

* the noise norm, with probability at least ``confidence`` (Laurent--Massart; the
  discrete Gaussian is :math:`s`-sub-Gaussian, so the chi-square upper tail holds):

  .. math:: \lVert N\rVert_2 \le s\sqrt{P + 2\sqrt{Pt} + 2t},\qquad t = \ln\frac1{1-c};

* the largest norm the clipped gradient can have (the clipping bounds ``C, M, L``):

  .. math:: G = (1-\alpha)\,C\,[\text{ERM term}]
          + \alpha\sum_p w_p\,4M\,(L\,[a_p\text{ through the model}]
          + L\,[b_p\text{ through the model}]);

* hence a lower bound on the noise-to-signal ratio of every step,
  :math:`\sqrt{\mathbb E\lVert N\rVert^2}/\lVert g\rVert \ge \sqrt P\,s/G`.

:func:`learning_error` gives the :class:`~privot.error_bounds.ErrorStatement` for
``(params, group sizes, P)`` before any training; :func:`calibrated_error` is the same
from a :class:`~privot.learning.calibration.Calibration` (what :func:`make_private
<privot.learning.make_private>` attaches, before the charge). Derivation:
``docs/errors/learning.md``.

Privacy
-------
No data is read and nothing is released: group sizes are public under the relation
(Remark 6.2 of paper 004), and every other input is a public parameter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privot._validation import check_int
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    from privot.learning.groups import Groups
    from privot.learning.params import LearningParams

__all__ = ["CONFIDENCE", "calibrated_error", "learning_error", "noise_norm_bound",
           "signal_bound"]

#: Default confidence of the stated noise-norm bound.
CONFIDENCE = 0.99
_DERIVATION = "docs/errors/learning.md"
_METRIC = ("||N||_2: the L2 norm of the Gaussian noise added to one step's clipped batch "
           "gradient (the same at every step)")
_UNITS = "gradient units (L2 norm in the model's P trainable parameters)"
_EXCESS_RISK = (
    "not covered: the DP-SGD excess-risk bound (Bassily, Smith, Thakurta 2014, "
    "O(sqrt(P log(1/delta)) / (n epsilon))) assumes a convex Lipschitz loss minimised "
    "over a bounded convex set by projected noisy SGD with its step-size schedule and "
    "n^2 steps; here the parameters are unconstrained (no projection), the optimizer, "
    "its schedule and the number of steps are the caller's, the batches are fixed-size "
    "without replacement, the clipped surrogate is not the objective's gradient, and the "
    "Wasserstein penalty is not convex in the parameters")


@dataclass(frozen=True)
class _PublicGroup:
    """A group known by its public size only (for :func:`learning_error` from sizes)."""

    name: str
    size: int
    y: Any = True  # not None: the group has targets (an ERM term)
    private: bool = True
    through_model: bool = True


def noise_norm_bound(noise_std: float, n_parameters: int,
                     confidence: float = CONFIDENCE) -> float:
    r""":math:`s\sqrt{P + 2\sqrt{Pt} + 2t}`, :math:`t = -\ln(1-c)`: a bound on the
    noise vector's norm holding with probability at least ``confidence``.

    Parameters
    ----------
    noise_std : float
        ``s``, the standard deviation of each of the ``P`` coordinates (>= 0).
    n_parameters : int
        ``P`` (>= 1).
    confidence : float, default 0.99
        In (0, 1).

    Returns
    -------
    float
    """
    p = check_int(n_parameters, "n_parameters", minimum=1)
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise InvalidParameterError("confidence", confidence, "a number in (0, 1)")
    if not (isinstance(noise_std, (int, float)) and noise_std >= 0):
        raise InvalidParameterError("noise_std", noise_std, "a number >= 0")
    t = -math.log1p(-confidence)
    return float(noise_std) * math.sqrt(p + 2 * math.sqrt(p * t) + 2 * t)


def signal_bound(groups, params) -> tuple[float, float, float]:
    r"""The largest norm of one step's clipped batch gradient, ``(G, loss term, penalty
    term)`` (module docstring): each averaged ERM gradient is clipped to ``C``, and each
    side of a pair contributes at most :math:`n\cdot L\cdot 4M/n = 4ML` (points in the
    ball of radius ``M``, Jacobians clipped to ``L``).

    Parameters
    ----------
    groups : Groups
        Only the public structure is read (which groups have targets, go through the
        model, and the pairs with their weights).
    params : LearningParams

    Returns
    -------
    tuple of float
    """
    members = groups.groups
    erm = params.use_erm and any(g.y is not None and g.through_model for g in members)
    loss = (1 - params.alpha) * params.clip if erm else 0.0
    penalty = 0.0
    if params.alpha > 0:
        for pair in groups.pairs:
            sides = sum(1 for j in (pair.a, pair.b) if members[j].through_model)
            penalty += params.alpha * pair.weight * 4 * params.M * params.L * sides
    return loss + penalty, loss, penalty


def _public_groups(sizes, penalty: str):
    """Groups of the standard structure of ``penalty`` from their public sizes only."""
    from privot.learning.groups import Groups, Pair

    if isinstance(sizes, Mapping):
        named = [(str(k), v) for k, v in sizes.items()]
    elif isinstance(sizes, Sequence) and not isinstance(sizes, str):
        named = [(f"group {j}", v) for j, v in enumerate(sizes)]
    else:
        raise InvalidParameterError("groups_or_sizes", type(sizes).__name__,
                                    "a Groups, or the group sizes (a mapping or sequence)")
    members = tuple(_PublicGroup(name, check_int(v, "group size", minimum=2))
                    for name, v in named)
    k = len(members)
    if penalty in ("sp", "none") and k == 2:
        return Groups(members, (Pair(0, 1, 1.0),), "sp")
    if penalty == "eo" and k >= 2 and k % 2 == 0:
        # fairness_groups' order: for each label, the groups of each sensitive value
        pairs = tuple(Pair(2 * r, 2 * r + 1, 2.0 / k) for r in range(k // 2))
        return Groups(members, pairs, "eo")
    raise InvalidParameterError("groups_or_sizes", dict(named),
                                "2 sizes for 'sp'/'none', an even number for 'eo'; a "
                                "Groups (matching_groups) for 'match'")


def calibrated_error(calibration, groups, params, n_parameters: int, *,
                     confidence: float = CONFIDENCE) -> ErrorStatement:
    """The :class:`~privot.error_bounds.ErrorStatement` of a run from its
    :class:`~privot.learning.calibration.Calibration` (public numbers only).

    Parameters
    ----------
    calibration : Calibration
    groups : Groups
        Public structure only (see :func:`signal_bound`).
    params : LearningParams
    n_parameters : int
        ``P``.
    confidence : float, default 0.99

    Returns
    -------
    ErrorStatement
    """
    cal = calibration
    p = check_int(n_parameters, "n_parameters", minimum=1)
    std = cal.noise_multiplier * cal.effective_sensitivity
    bound = noise_norm_bound(std, p, confidence)
    g, g_loss, g_penalty = signal_bound(groups, params)
    rms = math.sqrt(p) * std  # sqrt(E ||N||^2): the discrete Gaussian's variance is s^2
    details = {
        "noise_std": std, "noise_multiplier": cal.noise_multiplier,
        "effective_sensitivity": cal.effective_sensitivity, "n_parameters": p,
        "rms_noise_norm": rms, "signal_bound": g, "signal_bound_loss": g_loss,
        "signal_bound_penalty": g_penalty,
        "noise_to_signal_at_least": rms / g if g > 0 else None,
        "noise_to_signal_definition": "sqrt(E||N||^2) / ||clipped batch gradient|| >= "
                                      "sqrt(P) * noise_std / signal_bound",
        "rounding_error_bound": math.sqrt(p) * math.ldexp(1.0, -cal.grid_exponent - 1),
        "batch_sizes": list(cal.batch_sizes), "steps": cal.steps,
        "excess_risk": _EXCESS_RISK,
    }
    return ErrorStatement(
        metric=_METRIC, bound=bound, confidence=float(confidence), units=_UNITS,
        covers=(f"the secure discrete Gaussian noise of one DP-SGD step: P = {p} "
                f"coordinates of standard deviation sigma * Delta' = {std:.6g}"),
        not_covered=("the signal: the clipped gradient's norm depends on the data (only "
                     "its bound details.signal_bound is public); the clipping's bias; the "
                     "rounding to the release grid (at most details.rounding_error_bound); "
                     "the trained model's excess risk (details.excess_risk says why no "
                     "theorem covers this run)"),
        derivation=_DERIVATION, details=details)


def learning_error(params: LearningParams,
                   groups_or_sizes: Groups | Mapping[str, int] | Sequence[int],
                   n_parameters: int, *,
                   confidence: float = CONFIDENCE) -> ErrorStatement:
    r"""What the noise will do to each step of a run, before anything is trained or spent.

    Parameters
    ----------
    params : LearningParams
        The public choices of the run.
    groups_or_sizes : Groups, mapping or sequence of int
        The groups (only their public sizes and structure are read), or their sizes
        alone for the standard structures: two for ``penalty="sp"``/``"none"``, an even
        number for ``"eo"`` (in :func:`~privot.learning.fairness_groups`' order).
    n_parameters : int
        ``P``, the number of trainable scalars of the model.
    confidence : float, default 0.99
        Of the noise-norm bound.

    Returns
    -------
    ErrorStatement
        ``bound``: the noise norm's bound at ``confidence``; ``details``: the noise
        standard deviation, the signal bound ``G`` and the noise-to-signal lower bound.
    """
    from privot.learning.calibration import calibrate_run
    from privot.learning.groups import Groups
    from privot.learning.params import LearningParams

    if not isinstance(params, LearningParams):
        raise InvalidParameterError("params", type(params).__name__, "a LearningParams")
    p = check_int(n_parameters, "n_parameters", minimum=1)
    groups = (groups_or_sizes if isinstance(groups_or_sizes, Groups)
              else _public_groups(groups_or_sizes, params.penalty))
    cal = calibrate_run(groups, params, n_parameters=p)
    return calibrated_error(cal, groups, params, p, confidence=confidence)
