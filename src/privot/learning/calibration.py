r"""The public numbers of a run: batch sizes, sensitivity, release grid and noise multiplier.

:func:`calibrate_run` computes, from the :class:`~privot.learning.LearningParams`, the
public group sizes and the model's parameter count only, everything the guarantee of a
DP-SGD run rests on (:class:`Calibration`):

* the batch sizes ``n'_j`` and the sampling rate :math:`p = \max_j n'_j/n_j` over the
  private groups;
* the sensitivity :math:`\Delta` of the clipped surrogate gradient
  (:func:`~privot.learning.sensitivity.objective_sensitivity`);
* the release grid :math:`2^{-k}\mathbb Z` and the sensitivity of the rounded gradient
  :math:`\Delta' = \Delta + \sqrt P\,2^{-k}` (``P`` trainable parameters);
* ``sigma``, calibrated to ``(target_epsilon, target_delta)`` over ``steps`` steps by
  privot's fixed-size PLD accountant (or given), with the epsilon it achieves, the
  paper's GDP central-limit figure (Sec. 5.3) and dp-accounting's RDP bound.

Privacy
-------
No data is read: group sizes are public under the relation (Remark 6.2 of paper 004).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.groups import Groups
from privot.learning.params import LearningParams
from privot.learning.sensitivity import Sensitivity, objective_sensitivity
from privot.privacy.noise import grid_exponent

__all__ = ["Calibration", "batch_sizes_for", "calibrate_run"]


@dataclass
class Calibration:
    """The public numbers of one run (see the module docs); all JSON-able but ``sensitivity``.

    Attributes
    ----------
    batch_sizes : tuple of int, shape (k,)
        ``n'_j`` in group order.
    sampling_rate : float
        ``p``, the largest ``n'_j / n_j`` over private groups.
    sensitivity : Sensitivity
        ``Delta`` of the clipped gradient (and per group).
    grid_exponent : int
        ``k`` of the release grid.
    effective_sensitivity : float
        ``Delta'`` of the gradient rounded to the grid.
    noise_multiplier : float
        ``sigma``.
    epsilon, epsilon_paper : float
        The PLD upper bound after ``steps`` steps, and the paper's GDP-CLT figure.
    calibrated : bool
        Whether ``sigma`` was calibrated to a target epsilon (else given).
    steps : int
    delta : float
    """

    batch_sizes: tuple[int, ...]
    sampling_rate: float
    sensitivity: Sensitivity
    grid_exponent: int
    effective_sensitivity: float
    noise_multiplier: float
    epsilon: float
    epsilon_paper: float
    calibrated: bool
    steps: int
    delta: float

    @functools.cached_property
    def epsilon_rdp(self) -> float | None:
        """dp-accounting's RDP bound for the same event (computed once, on demand)."""
        from privot.privacy.accounting import rdp_epsilon

        try:
            return rdp_epsilon(noise_multiplier=self.noise_multiplier,
                               sampling_rate=self.sampling_rate, steps=self.steps,
                               delta=self.delta, sampling="fixed-size")
        except (ValueError, OverflowError):  # dp-accounting refuses extreme inputs
            return None


def batch_sizes_for(groups: Groups, params: LearningParams) -> tuple[int, ...]:
    """``n'_j`` per group, from ``params.batch_sizes`` or ``params.batch_fraction``."""
    given = params.batch_sizes
    if given is not None:
        if isinstance(given, Mapping):
            missing = [g.name for g in groups.groups if g.name not in given]
            if missing:
                raise InvalidParameterError("batch_sizes", dict(given),
                                            f"a size for every group; missing {missing}")
            sizes = [given[g.name] for g in groups.groups]
        else:
            sizes = list(given)
            if len(sizes) != len(groups.groups):
                raise InvalidParameterError("batch_sizes", given,
                                            f"{len(groups.groups)} sizes, one per group")
    else:
        q = params.batch_fraction
        sizes = [max(1, int(round(q * g.size))) for g in groups.groups]
    for g, b in zip(groups.groups, sizes, strict=True):
        if g.size < 2:
            raise InvalidDataError(f"group {g.name} has {g.size} record: a Wasserstein "
                                   "term needs at least 2 per group")
        if b > g.size:
            raise InvalidParameterError("batch_sizes", {g.name: b},
                                        f"at most the group size {g.size} (group {g.name})")
    return tuple(sizes)


def _sensitivity(groups: Groups, sizes: tuple[int, ...], params: LearningParams
                 ) -> Sensitivity:
    sens = objective_sensitivity(groups, sizes, alpha=params.alpha, C=params.clip,
                                 M=params.M, L=params.L, erm=params.use_erm)
    if sens.value <= 0:
        raise InvalidParameterError("alpha", params.alpha, "a value giving a private group "
                                    "a non-zero gradient (check loss, alpha and groups)")
    for pair in groups.pairs:
        if pair.a == pair.b:
            raise InvalidParameterError("groups", f"pair ({pair.a}, {pair.b})",
                                        "pairs of two different groups")
    return sens


@functools.lru_cache(maxsize=128)
def _calibrated_sigma(target_epsilon: float, delta: float, steps: int, q: float
                      ) -> tuple[float, float]:
    """PLD calibration, cached: sweeps of alpha at one (eps, delta, T, p) pay it once."""
    from privot.privacy.accounting import calibrate_noise_multiplier

    cal = calibrate_noise_multiplier(target_epsilon, delta, steps=steps, sampling_rate=q,
                                     accountant="pld", sampling="fixed-size")
    return cal.noise_multiplier, cal.epsilon


@functools.lru_cache(maxsize=128)
def _pld_epsilon(sigma: float, delta: float, steps: int, q: float) -> float:
    from privot.privacy.accounting import pld_epsilon

    return float(pld_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=steps,
                             delta=delta, sampling="fixed-size"))


def calibrate_run(groups: Groups, params: LearningParams, *, n_parameters: int
                  ) -> Calibration:
    r"""The :class:`Calibration` of a run of ``params`` on ``groups``.

    Parameters
    ----------
    groups : Groups
        Only their public sizes and pairs are read.
    params : LearningParams
    n_parameters : int
        ``P``, the number of trainable scalars (the length of the noisy gradient).

    Returns
    -------
    Calibration
    """
    from privot.privacy.accounting import gdp_clt_epsilon

    sizes = batch_sizes_for(groups, params)
    q = max(b / g.size for g, b in zip(groups.groups, sizes, strict=True) if g.private)
    sens = _sensitivity(groups, sizes, params)
    # The release grid 2^-k (float-attack safety) and the rounded gradient's sensitivity.
    root_p = math.sqrt(n_parameters)
    k = grid_exponent(sens.value / root_p)
    effective = math.nextafter(sens.value + math.ldexp(root_p, -k), math.inf)
    delta, steps = params.target_delta, params.steps
    if params.noise_multiplier is None:
        sigma, eps = _calibrated_sigma(params.target_epsilon, delta, steps, q)
    else:
        sigma = params.noise_multiplier
        eps = _pld_epsilon(sigma, delta, steps, q)
    eps_paper = gdp_clt_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=steps,
                                delta=delta, sampling="fixed-size")
    return Calibration(sizes, q, sens, k, effective, sigma, float(eps), float(eps_paper),
                       params.noise_multiplier is None, steps, delta)
