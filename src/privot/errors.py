"""Exceptions raised by privot.

Every error that a caller can cause names the parameter, the value it received and
what is allowed. The CLI turns the subclasses of :class:`PrivotError` into one line on
stderr and exit status 2.

Privacy
-------
No release happens here. Unit, relation, sensitivity and guarantee belong to the
mechanisms (``docs/privacy/``). Messages name parameters and public values only; the
one exception, :class:`BudgetExceededError`, reports budget amounts (public), never
data. ``epsilon``/``delta`` in the examples are the caller's budget parameters.
"""

from __future__ import annotations

__all__ = [
    "PrivotError",
    "InvalidParameterError",
    "InvalidDataError",
    "BudgetExceededError",
    "MissingExtraError",
    "ConvergenceError",
    "DataWarning",
]


class PrivotError(Exception):
    """Base class of every error privot raises on purpose."""


class InvalidParameterError(PrivotError, ValueError):
    """A parameter is outside its allowed range (``epsilon <= 0``, ``delta >= 1``...)."""

    def __init__(self, name: str, value: object, allowed: str) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"{name}={value!r} is not allowed: {allowed}")


class InvalidDataError(PrivotError, ValueError):
    """Input data is unusable: wrong shape, empty, non-finite or negative weights."""


class BudgetExceededError(PrivotError, RuntimeError):
    """An accountant refused a release that would spend more than its total budget."""


class MissingExtraError(PrivotError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class ConvergenceError(PrivotError, RuntimeError):
    """A numerical solver failed (overflow, NaN, no convergence) and says so loudly."""


class DataWarning(UserWarning):
    """A warning about the raw data (most rows clipped or dropped, a likely swap of axes).

    **Curator-only.** Whether it is raised depends on the exact data, so it is not
    differentially private: privot prints it on stderr and writes it to the
    ``curator-report.json`` of a command, never into a release. Callers of the library
    who publish results must treat it the same way.
    """
