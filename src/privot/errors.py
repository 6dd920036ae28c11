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

import sys

__all__ = [
    "plain_repr",
    "PrivotError",
    "InvalidParameterError",
    "InvalidDataError",
    "BudgetExceededError",
    "MissingExtraError",
    "ConvergenceError",
    "SourceNotFoundError",
    "DataNotFoundError",
    "EngineResultError",
    "PolytopeViolationError",
    "DataWarning",
]


class PrivotError(Exception):
    """Base class of every error privot raises on purpose."""


class InvalidParameterError(PrivotError, ValueError):
    """A parameter is outside its allowed range (``epsilon <= 0``, ``delta >= 1``...)."""

    def __init__(self, name: str, value: object, allowed: str, *,
                 message: str | None = None) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        # ``message``: the whole text in plain words (what happened, why, what would
        # work), for refusals a person reads on the command line
        super().__init__(message if message is not None
                         else f"{name}={plain_repr(value)} is not allowed: {allowed}")


#: Arrays with more elements are shown by shape and dtype only in messages.
_MAX_SHOWN_ELEMENTS = 8


def plain_repr(value: object) -> str:
    """``repr`` for messages, with numpy's types shown as the Python values they hold.

    ``np.float64(-87.5)`` reads ``-87.5``, a small array ``[1.0, 2.0]``, a large one
    ``<float64 array of shape (1000, 2)>``; containers are shown element by element.
    """
    # a numpy value exists only once numpy is imported: never import it here (the CLI
    # refuses bad input with this message before any heavy import)
    np = sys.modules.get("numpy")
    if np is None:
        return repr(value)
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, np.ndarray):
        if value.size > _MAX_SHOWN_ELEMENTS:
            return f"<{value.dtype} array of shape {value.shape}>"
        return repr(value.tolist())
    if isinstance(value, tuple):
        inner = ", ".join(plain_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(plain_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{plain_repr(k)}: {plain_repr(v)}"
                               for k, v in value.items()) + "}"
    return repr(value)


class InvalidDataError(PrivotError, ValueError):
    """Input data is unusable: wrong shape, empty, non-finite or negative weights."""


class BudgetExceededError(PrivotError, RuntimeError):
    """An accountant refused a release that would spend more than its total budget."""


class MissingExtraError(PrivotError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class ConvergenceError(PrivotError, RuntimeError):
    """A numerical solver failed (overflow, NaN, no convergence) and says so loudly."""


class SourceNotFoundError(PrivotError, FileNotFoundError):
    """The input file or folder given to an engine does not exist.

    Subclasses :class:`PrivotError` (the CLI reports it on one line) and
    :class:`FileNotFoundError` (``except FileNotFoundError`` catches it). Also importable
    from :mod:`privot.engines`.
    """


class DataNotFoundError(PrivotError, FileNotFoundError):
    """The shared data folder, or a file inside it, could not be found.

    Subclasses :class:`PrivotError` (so the CLI reports it on one line) and
    :class:`FileNotFoundError` (so ``except FileNotFoundError`` catches it). Also
    importable from :mod:`privot.datasets`.
    """


class EngineResultError(PrivotError, RuntimeError):
    """An engine's query, or a step's row function, broke the step's own contract (no
    totals row, a wrong number of values per row, inconsistent counts).

    A bug in privot or a broken engine, never a property of the caller's data: the
    message names the step and what it expected.
    """


class PolytopeViolationError(PrivotError, RuntimeError):
    """Integer weights outside the certified grid polytope: nothing is sampled.

    Raised by the local device sampler (:mod:`privot.sampling.device`, which also
    exports it).
    """


class DataWarning(UserWarning):
    """A warning about the raw data (most rows clipped or dropped, a likely swap of axes).

    **Curator-only.** Whether it is raised depends on the exact data, so it is not
    differentially private: privot prints it on stderr and writes it to the
    ``curator-report.json`` of a command, never into a release. Callers of the library
    who publish results must treat it the same way.
    """
