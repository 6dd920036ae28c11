"""The one parameter style of the four capabilities: frozen, validated parameter objects.

Each capability's public, data-independent choices live in one frozen dataclass
(PipelineDP's ``AggregateParams`` is the model):
:class:`~privot.heatmaps.HeatmapParams`, :class:`~privot.barycenters.BarycenterParams`,
the sampling mechanism objects (:mod:`privot.sampling.mechanism`) and
:class:`~privot.learning.LearningParams`. Every field is validated when the object is
built (an :class:`~privot.errors.InvalidParameterError` naming the field, the value and
what is allowed), so a parameter object that exists is a valid one, and the entry point
only dispatches on it:

.. code-block:: python

    params = HeatmapParams(grid=grid, epsilon=1.0)
    result = private_heatmap(data, params, accountant=ledger_spender)
    # or, the same release: keyword options build the object
    result = private_heatmap(data, grid=grid, epsilon=1.0, accountant=ledger_spender)

Keyword options given beside a parameter object replace its fields
(:meth:`ReleaseParams.replace`, validated again). What is not a parameter of the
release -- the data, the accountant, the randomness, the engine, the progress bar --
stays an argument of the entry point.

Privacy
-------
The fields are public by construction (the caller's choices, never read from the data);
:meth:`ReleaseParams.to_dict` is what a release records of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from privot.errors import InvalidParameterError

__all__ = ["ReleaseParams", "build_params", "check_option_names"]

P = TypeVar("P", bound="ReleaseParams")


class ReleaseParams:
    """Mixin of the frozen parameter dataclasses: build from options, replace, describe.

    Subclasses are ``@dataclass(frozen=True)`` and validate in ``__post_init__``.
    """

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The parameter names this object takes, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_options(cls: type[P], options: Mapping[str, Any]) -> P:
        """Build from keyword options, refusing a name that is not a field."""
        check_option_names(cls, options)
        return cls(**options)

    def replace(self: P, **changes: Any) -> P:
        """A copy with ``changes`` applied (validated again); unknown names refused."""
        check_option_names(type(self), changes)
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dictionary (public parameters only); a value JSON
        cannot hold (a grid, a callable) is given by its ``repr``."""
        from privot._jsonable import json_ready  # lazily: keeps this module import-light

        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            try:
                out[f.name] = json_ready(value)
            except (TypeError, ValueError):
                out[f.name] = repr(value)
        return out


def check_option_names(cls: type[ReleaseParams], options: Mapping[str, Any]) -> None:
    """Refuse option names that are not fields of ``cls``, naming the allowed ones."""
    allowed = cls.field_names()
    for name in options:
        if name not in allowed:
            raise InvalidParameterError(
                name, options[name],
                f"a parameter of {cls.__name__}: one of {', '.join(allowed)}")


def build_params(cls: type[P], params: P | None, options: Mapping[str, Any],
                 name: str = "params") -> P:
    """The parameter object an entry point runs with.

    ``params`` (an instance of ``cls`` or None) with ``options`` applied: options alone
    build a new object, both replace the object's fields, neither builds the defaults.
    """
    if params is None:
        return cls.from_options(options)
    if not isinstance(params, cls):
        raise InvalidParameterError(name, params, f"a {cls.__name__} or None")
    return params.replace(**options) if options else params
