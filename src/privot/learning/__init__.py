r"""Private Wasserstein learning: DP-SGD with clipped (sliced) Wasserstein gradients (paper 004).

Train any per-example ``torch.nn.Module`` with a plain torch optimizer on objectives that
compare whole distributions -- a fairness penalty :math:`SW_2^2` between the score
distributions of two groups (statistical parity, equality of odds), a generator matched
to private data, an encoder matched to a reference -- with a user-level guarantee the
library computes: ``make_private(model, optimizer, groups, target_epsilon=...,
target_delta=..., steps=..., penalty="sp", alpha=..., clip=..., M=..., L=...)``, or
``make_private(model, optimizer, groups, LearningParams(...))`` (the keyword options
build the same frozen, validated :class:`LearningParams`). A trained trainer gives its
:class:`LearningResult` with ``trainer.result(architecture=...)``;
:func:`private_learning` is the three steps in one call, the shape of every
capability's entry point (data, parameters, ``accountant``, ``rng``, ``progress`` -> a
result).

Modules (each with one job; torch is the ``torch`` extra, imported here and reached from
outside the package with :func:`require_torch`):

* :mod:`~privot.learning.params` -- :class:`LearningParams`, the public choices of a run;
* :mod:`~privot.learning.calibration` -- the public numbers of a run (batch sizes,
  sampling rate, sensitivity, release grid, noise multiplier and epsilon);
* :mod:`~privot.learning.losses` -- the per-example losses of the ERM term;

* :mod:`~privot.learning.wasserstein` -- differentiable 1-D W2 with the rank weights
  for ``n != m`` (Props 3.1-3.2) and Monte-Carlo sliced W2;
* :mod:`~privot.learning.groups` -- groups of public sizes and the pairs compared (SP,
  EO, free form);
* :mod:`~privot.learning.per_example` -- per-example Jacobian Grams (ghost trick for
  ``nn.Linear`` models, ``torch.func`` otherwise) and the one weighted backward pass;
* :mod:`~privot.learning.clipping` -- activation, exact spectral / per-coordinate
  Jacobian and DP-SGD gradient clipping (Eq. 3, Remark A.2);
* :mod:`~privot.learning.sensitivity` -- Thm 4.1 / A.1 / 6.1, generalised to any pairs;
* :mod:`~privot.learning.sampler` -- fixed-size batches from the secure generator;
* :mod:`~privot.learning.private` -- :func:`make_private` and the training loop
  (Algorithm 1) with fixed-size PLD accounting;
* :mod:`~privot.learning.result` -- :class:`LearningResult`, the model with its guarantee
  and the curator's view, in the result protocol every capability shares;
* :mod:`~privot.learning.plot` -- figures;
* :mod:`~privot.learning.torch_backend` -- the one import of torch.

The fairness metrics (fairlearn's definitions) with bootstrap intervals are
:mod:`privot.evaluation.learning` (curator-only); :mod:`privot.learning.metrics` and
``privot.learning.fairness_report`` re-export them.

Privacy
-------
Unit: one record of one group; relation: replace one record inside one group (~k of
Def. 2.1); group sizes are public (Remark 6.2). See :mod:`privot.learning.private` and
``docs/privacy/learning.md``.
"""

from privot.evaluation.learning import FairnessReport, fairness_report
from privot.learning.groups import Group, Groups, Pair, fairness_groups, matching_groups
from privot.learning.params import LearningParams
from privot.learning.private import (
    PrivateWassersteinTrainer,
    StepRecord,
    make_private,
    private_learning,
)
from privot.learning.result import LearningResult
from privot.learning.sensitivity import objective_sensitivity
from privot.learning.torch_backend import require_torch
from privot.learning.wasserstein import random_directions, sliced_w2_squared, w2_squared_1d

__all__ = [
    "FairnessReport",
    "Group",
    "Groups",
    "LearningParams",
    "LearningResult",
    "Pair",
    "PrivateWassersteinTrainer",
    "StepRecord",
    "fairness_groups",
    "fairness_report",
    "make_private",
    "private_learning",
    "matching_groups",
    "objective_sensitivity",
    "random_directions",
    "require_torch",
    "sliced_w2_squared",
    "w2_squared_1d",
]
