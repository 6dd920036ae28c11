r"""The public choices of one private training run: :class:`LearningParams`.

One frozen, validated object (:class:`privot._params.ReleaseParams`) holds what the
caller of :func:`~privot.learning.make_private` chooses about the run -- the objective
(penalty, alpha, loss), the guarantee (target epsilon and delta, or a fixed noise
multiplier), the length and the batches, the clipping bounds ``C, M, L`` and how the
gradient is computed. What is not a parameter of the release stays an argument of
``make_private``: the model, the optimizer, the groups (the data), the accountant, the
randomness, the score map ``score_fn`` and the stated classes of tuple groups.

.. code-block:: python

    params = LearningParams(penalty="sp", alpha=0.7, target_epsilon=1.0,
                            target_delta=1e-5, steps=300)
    trainer = make_private(model, optimizer, groups, params, rng=None)
    # the same run: keyword options build the object
    trainer = make_private(model, optimizer, groups, penalty="sp", alpha=0.7,
                           target_epsilon=1.0, target_delta=1e-5, steps=300)

The field defaults below are the library's historical ones (kept: seeded runs reproduce
byte for byte). For a logistic model on features encoded into [0, 1], as ``privot learn``
encodes them, :func:`privot.learning.defaults.default_hyperparameters` gives the
documented defaults ``privot learn`` uses (``**defaults.options()`` here, plus its
optimizer and schedule; ``docs/learning_defaults.md``): at epsilon 1 the historical
ones often train a constant model.

Privacy
-------
Every field is public: a choice made without reading the data. The noise multiplier is
calibrated from them and the public group sizes (:mod:`privot.learning.calibration`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privot._params import ReleaseParams
from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
)
from privot.errors import InvalidParameterError
from privot.learning.clipping import JACOBIAN_CLIPPINGS
from privot.learning.losses import LOSSES
from privot.learning.per_example import METHODS

__all__ = [
    "MAX_TARGET_EPSILON",
    "MIN_NOISE_MULTIPLIER",
    "PENALTIES",
    "LearningParams",
]

PENALTIES = ("sp", "eo", "match", "none")
#: The smallest noise multiplier accepted: below it a run's epsilon is in the hundreds
#: (sigma = 0.5, p = 0.2, 300 steps: about 140) and the PLD grid no longer fits in memory.
MIN_NOISE_MULTIPLIER = 0.5
#: The largest target epsilon accepted (a larger one would call for sigma below the floor).
MAX_TARGET_EPSILON = 100.0


@dataclass(frozen=True, kw_only=True)
class LearningParams(ReleaseParams):
    r"""The public parameters of a DP-SGD run on a (sliced) Wasserstein objective.

    Validated when built (:class:`~privot.errors.InvalidParameterError` naming the
    field); numbers are stored as ``float``/``int``.

    Attributes
    ----------
    penalty : {"sp", "eo", "match", "none"}, default "sp"
        Statistical parity (Eq. 5), equality of odds (Eq. 6), the free-form pairs of
        :func:`~privot.learning.matching_groups`, or none (plain DP-SGD, ``alpha = 0``).
    alpha : float, default 0.5
        Weight of the Wasserstein term, in [0, 1]:
        :math:`(1-\alpha)\,\mathrm{ERM} + \alpha\sum_p w_p SW_2^2`.
    target_epsilon : float, optional
        Epsilon of the whole run, in (0, 100]; ``sigma`` is calibrated to it. Give
        exactly one of ``target_epsilon`` and ``noise_multiplier``.
    target_delta : float
        Delta of the whole run, in (0, 1) (required).
    noise_multiplier : float, optional
        A fixed ``sigma`` (>= 0.5) instead of a target epsilon.
    steps : int, default 500
        ``T``; the run is charged for all of them before the first.
    batch_fraction : float, default 0.2
        ``n'_j / n_j`` per group, in (0, 1] (ignored when ``batch_sizes`` is given).
    batch_sizes : sequence or mapping of int, optional
        ``n'_j`` per group (in group order, or by group name); stored as a tuple or dict.
    clip : float, default 5.0
        ``C``: per-example clipping of the loss gradients (> 0 when there is an ERM term).
    M, L : float, default 1.0
        Activation and Jacobian clipping of the Wasserstein term (> 0 when ``alpha > 0``).
    loss : {"bce", "mse", "cross-entropy"}, callable or None, default "bce"
        Per-example loss ``loss(outputs (B, d), targets) -> (B,)``; None: no ERM term
        (then ``alpha`` must be 1).
    n_projections : int, default 50
        Monte-Carlo directions of the sliced distance (ignored in 1-D).
    jacobian_clipping : {"spectral", "per-coordinate"}, default "spectral"
        Exact spectral clipping, or the paper's per-coordinate clipping (Remark A.2).
    direction_seed : int, default 0
        Seed of the public generator of the sliced directions.
    method : {"auto", "ghost", "functional"}, default "auto"
        How per-example Jacobian Grams are computed (:mod:`privot.learning.per_example`).
    """

    penalty: str = "sp"
    alpha: float = 0.5
    target_epsilon: float | None = None
    target_delta: float | None = None
    noise_multiplier: float | None = None
    steps: int = 500
    batch_fraction: float = 0.2
    batch_sizes: Sequence[int] | Mapping[str, int] | None = None
    clip: float = 5.0
    M: float = 1.0
    L: float = 1.0
    loss: str | Callable | None = "bce"
    n_projections: int = 50
    jacobian_clipping: str = "spectral"
    direction_seed: int = 0
    method: str = "auto"

    def __post_init__(self) -> None:
        self._check_objective()
        self._check_guarantee()
        self._check_batches()
        self._check_clipping()
        if self.jacobian_clipping not in JACOBIAN_CLIPPINGS:
            raise InvalidParameterError("jacobian_clipping", self.jacobian_clipping,
                                        f"one of {JACOBIAN_CLIPPINGS}")
        self._set("n_projections", check_int(self.n_projections, "n_projections", minimum=1))
        self._set("direction_seed", check_int(self.direction_seed, "direction_seed"))
        if self.method not in METHODS:
            raise InvalidParameterError("method", self.method, f"one of {METHODS}")

    # -- validation, one concern each ------------------------------------------------

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # frozen: normalise once, when built

    def _check_objective(self) -> None:
        if self.penalty not in PENALTIES:
            raise InvalidParameterError("penalty", self.penalty, f"one of {PENALTIES}")
        self._set("alpha", check_probability(self.alpha, "alpha"))
        if self.penalty == "none" and self.alpha != 0:
            raise InvalidParameterError("alpha", self.alpha, "0 with penalty='none'")
        loss = self.loss
        if (isinstance(loss, str) and loss not in LOSSES) or not (
                loss is None or isinstance(loss, str) or callable(loss)):
            raise InvalidParameterError("loss", loss, f"one of {LOSSES}, a callable or None")
        if self.alpha < 1 and loss is None:
            raise InvalidParameterError("loss", None, "a loss when alpha < 1")

    def _check_guarantee(self) -> None:
        if self.target_delta is None:
            raise InvalidParameterError("target_delta", None, "a number in (0, 1)")
        self._set("target_delta", check_delta(self.target_delta, "target_delta",
                                              allow_zero=False))
        if (self.target_epsilon is None) == (self.noise_multiplier is None):
            raise InvalidParameterError("target_epsilon", self.target_epsilon,
                                        "exactly one of target_epsilon and noise_multiplier")
        if self.target_epsilon is not None:
            eps = check_epsilon(self.target_epsilon, "target_epsilon")
            if eps > MAX_TARGET_EPSILON:
                raise InvalidParameterError("target_epsilon", self.target_epsilon,
                                            f"at most {MAX_TARGET_EPSILON:g}")
            self._set("target_epsilon", eps)
        else:
            sigma = check_positive(self.noise_multiplier, "noise_multiplier")
            if sigma < MIN_NOISE_MULTIPLIER:
                raise InvalidParameterError("noise_multiplier", self.noise_multiplier,
                                            f"at least {MIN_NOISE_MULTIPLIER} (below it "
                                            "epsilon is in the hundreds)")
            self._set("noise_multiplier", sigma)
        self._set("steps", check_int(self.steps, "steps", minimum=1))

    def _check_batches(self) -> None:
        sizes = self.batch_sizes
        if sizes is None:
            self._set("batch_fraction", check_probability(
                self.batch_fraction, "batch_fraction", open_left=True))
        elif isinstance(sizes, Mapping):
            self._set("batch_sizes", {k: check_int(b, "batch_sizes", minimum=1)
                                      for k, b in sizes.items()})
        else:
            self._set("batch_sizes", tuple(check_int(b, "batch_sizes", minimum=1)
                                           for b in sizes))

    def _check_clipping(self) -> None:
        self._set("clip", check_positive(self.clip, "clip") if self.use_erm
                  else float(self.clip or 0.0))
        if self.alpha > 0:
            self._set("M", check_positive(self.M, "M"))
            self._set("L", check_positive(self.L, "L"))
        else:  # unused without a Wasserstein term; recorded as given
            self._set("M", float(self.M))
            self._set("L", float(self.L))

    # -- derived --------------------------------------------------------------------

    @property
    def use_erm(self) -> bool:
        """Whether the objective has an ERM term (``alpha < 1`` and a loss)."""
        return self.alpha < 1 and self.loss is not None
