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
* :mod:`~privot.learning.error` -- :func:`learning_error`, what the noise does to each
  step (noise norm, noise-to-signal ratio), stated from the public parameters;

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
* :mod:`~privot.learning.defaults` -- ``privot learn``'s defaults, one documented rule of
  public quantities (``docs/learning_defaults.md``);
* :mod:`~privot.learning.diagnostics` -- the curator's check that a trained classifier
  is not constant;
* :mod:`~privot.learning.torch_backend` -- the one import of torch;
* :mod:`~privot.learning.repair`, :mod:`~privot.learning.repair_result` -- the second
  route to fairness: the private repair of a model's scores to the Wasserstein
  barycenter of the groups' score distributions (numpy only, no torch).

The names below are imported when first used (PEP 562), so that the torch-free parts
(``privot repair``, :func:`private_repair`) do not import torch.

The fairness metrics (fairlearn's definitions) with bootstrap intervals are
:mod:`privot.evaluation.learning` (curator-only); :mod:`privot.learning.metrics` and
``privot.learning.fairness_report`` re-export them.

Privacy
-------
Unit: one record of one group; relation: replace one record inside one group (~k of
Def. 2.1); group sizes are public (Remark 6.2). See :mod:`privot.learning.private` and
``docs/privacy/learning.md``.
"""

import importlib
from typing import Any

#: Exported name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "FairnessReport": "privot.evaluation.learning",
    "fairness_report": "privot.evaluation.learning",
    "Group": "privot.learning.groups",
    "Groups": "privot.learning.groups",
    "Pair": "privot.learning.groups",
    "fairness_groups": "privot.learning.groups",
    "matching_groups": "privot.learning.groups",
    "LearningParams": "privot.learning.params",
    "learning_error": "privot.learning.error",
    "PrivateWassersteinTrainer": "privot.learning.private",
    "StepRecord": "privot.learning.private",
    "make_private": "privot.learning.private",
    "private_learning": "privot.learning.private",
    "LearningResult": "privot.learning.result",
    "objective_sensitivity": "privot.learning.sensitivity",
    "require_torch": "privot.learning.torch_backend",
    "random_directions": "privot.learning.wasserstein",
    "sliced_w2_squared": "privot.learning.wasserstein",
    "w2_squared_1d": "privot.learning.wasserstein",
    "LearningDefaults": "privot.learning.defaults",
    "default_hyperparameters": "privot.learning.defaults",
    "degenerate_predictions": "privot.learning.diagnostics",
    "RepairParams": "privot.learning.repair",
    "private_repair": "privot.learning.repair",
    "RepairResult": "privot.learning.repair_result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'privot.learning' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
