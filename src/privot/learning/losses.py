r"""The per-example losses of the ERM term: ``loss(outputs (B, d), targets) -> (B,)``.

``"bce"`` takes probabilities (the paper's sigmoid classifier), ``"mse"`` sums the
squared error over the output coordinates and ``"cross-entropy"`` takes logits. A
callable of the same signature may be given instead (:func:`resolve_loss`).

Privacy
-------
None of its own: the ERM gradients these losses give are clipped to ``C`` per example
(:mod:`privot.learning.clipping`) before any noise is added.
"""

from __future__ import annotations

from collections.abc import Callable

from privot.learning.torch_backend import torch

__all__ = ["LOSSES", "LOSS_FUNCTIONS", "resolve_loss"]

LOSSES = ("bce", "mse", "cross-entropy")


def _bce(out, y):
    p = out[:, 0] if out.ndim == 2 else out
    return torch.nn.functional.binary_cross_entropy(p, y.reshape(p.shape).to(p.dtype),
                                                    reduction="none")


def _mse(out, y):
    return ((out - y.reshape(out.shape).to(out.dtype)) ** 2).reshape(out.shape[0], -1).sum(1)


def _cross_entropy(out, y):
    return torch.nn.functional.cross_entropy(out, y.reshape(-1).long(), reduction="none")


#: The named losses, by name.
LOSS_FUNCTIONS: dict[str, Callable] = {"bce": _bce, "mse": _mse,
                                       "cross-entropy": _cross_entropy}


def resolve_loss(loss: str | Callable | None) -> tuple[Callable | None, str]:
    """The loss function and the name a run records for it.

    Parameters
    ----------
    loss : {"bce", "mse", "cross-entropy"}, callable or None
        A name of :data:`LOSSES` (validated by :class:`~privot.learning.LearningParams`),
        a callable (recorded by its ``__name__``, else ``"custom"``) or None (``"none"``).

    Returns
    -------
    fn : callable or None
    name : str
    """
    if isinstance(loss, str):
        return LOSS_FUNCTIONS[loss], loss
    return loss, getattr(loss, "__name__", "none" if loss is None else "custom")
