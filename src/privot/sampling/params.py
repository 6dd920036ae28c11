r"""The public choices of a population sample: :class:`SampleParams` (paper 003 at scale).

:func:`~privot.sampling.population.sample_population` takes its data-independent
choices -- the mechanism, the variant, the batch size, the linear variant's channel and
the grid exponent -- as one frozen, validated object (privot's one parameter style,
:mod:`privot._params`):

.. code-block:: python

    params = SampleParams(mechanism=make_mechanism("wpm", points=pts, epsilon=1.0),
                          variant="linear")
    sample = sample_population(counts, params, accountant=spender)
    # the same release: keyword options build the object
    sample = sample_population(counts, mechanism=mech, variant="linear",
                               accountant=spender)
    # and so does the historical call, the mechanism in the params position
    sample = sample_population(counts, mech, variant="linear", accountant=spender)

The mechanism object itself (:mod:`privot.sampling.mechanism`) holds the mechanism's
own parameters (epsilon, base measure, cost, solver); :class:`SampleParams` holds how a
population releases through it.

Privacy
-------
No release here. Every field is public by construction: the caller's choices, never
read from the data (the channel is a function of the public mechanism only). A
``SampleParams`` that exists is valid; the release itself is in
:mod:`privot.sampling.population`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from privot._params import ReleaseParams, build_params
from privot._validation import check_int
from privot.errors import InvalidParameterError
from privot.sampling._checks import check_channel
from privot.sampling.device import DEFAULT_BITS, MAX_BITS
from privot.sampling.mechanism import SamplingMechanism

__all__ = ["VARIANTS", "SampleParams", "sample_params"]

#: The two ways a population releases one sample per user.
VARIANTS = ("direct", "linear")


@dataclass(frozen=True, repr=False)
class SampleParams(ReleaseParams):
    r"""How a population releases one eps-LDP report per user (all public).

    Parameters
    ----------
    mechanism : SamplingMechanism
        Built once from public parameters
        (:func:`~privot.sampling.mechanism.make_mechanism`); its ``k`` input points are
        the cells the counts index. Required.
    variant : {"direct", "linear"}, default "direct"
        ``"direct"``: release a sample of :math:`M[\mu_u]`; ``"linear"``: draw
        :math:`i \sim \mu_u` exactly, release a sample of :math:`M[\delta_i]`
        (:mod:`privot.sampling.population`).
    batch_size : int, optional
        ``>= 1``. Direct variant: users privatised at once (memory
        ``batch * max(k, k_v)`` floats); linear variant: users drawn at once. Default:
        about 32 MB of floats.
    channel : (k, k_v) array, optional
        Linear variant only: :meth:`mechanism.channel() <SamplingMechanism.channel>`
        computed beforehand (public; it costs ``k`` projections, so callers cache it).
        Rows must be distributions within ``1e-6``; whatever they hold, the release
        snaps them into the certified polytope of the mechanism's base measure.
    bits : int, default 61
        Grid exponent ``b`` of the integer laws ``w / 2**b``, in ``[1, 61]``.

    Raises
    ------
    InvalidParameterError
        A ``mechanism`` that is not a :class:`SamplingMechanism`, an unknown
        ``variant``, ``batch_size < 1``, ``bits`` outside ``[1, 61]``, a ``channel``
        given with ``variant="direct"`` or not ``(k, k_v)`` distributions; naming the
        field, the value and what is allowed.
    """

    mechanism: SamplingMechanism | None = None
    variant: str = "direct"
    batch_size: int | None = None
    channel: np.ndarray | None = field(default=None, compare=False)
    bits: int = DEFAULT_BITS

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InvalidParameterError("variant", self.variant, f"one of {VARIANTS}")
        if not isinstance(self.mechanism, SamplingMechanism):
            raise InvalidParameterError(
                "mechanism", type(self.mechanism).__name__,
                "a privot.sampling.SamplingMechanism (make_mechanism; given as mechanism= "
                "or in the params position)")
        # frozen: the validated values replace the given ones (an int, a float array)
        object.__setattr__(self, "bits",
                           check_int(self.bits, "bits", minimum=1, maximum=MAX_BITS))
        if self.batch_size is not None:
            object.__setattr__(self, "batch_size",
                               check_int(self.batch_size, "batch_size", minimum=1))
        if self.channel is not None:
            if self.variant != "linear":
                raise InvalidParameterError("channel", "<array>", "None for variant='direct'")
            object.__setattr__(self, "channel", check_channel(
                self.channel, int(self.mechanism.k), int(self.mechanism.k_v)))

    def __repr__(self) -> str:
        """One line: the mechanism's repr and the choices (a channel by its shape)."""
        ch = "None" if self.channel is None else f"<{self.channel.shape} array>"
        return (f"SampleParams({self.mechanism!r}, variant={self.variant!r}, "
                f"batch_size={self.batch_size}, channel={ch}, bits={self.bits})")

    def to_dict(self) -> dict[str, Any]:
        """The public choices, JSON-ready: the mechanism's public description
        (:meth:`SamplingMechanism.release_dict`) and the channel by its shape."""
        mechanism = cast(SamplingMechanism, self.mechanism)  # validated in __post_init__
        return {"mechanism": mechanism.release_dict(), "variant": self.variant,
                "batch_size": self.batch_size, "bits": self.bits,
                "channel": None if self.channel is None else list(self.channel.shape)}


def sample_params(params: object, options: Mapping[str, Any]) -> SampleParams:
    """The :class:`SampleParams` a call of ``sample_population(counts, params, **options)``
    runs with (:func:`privot._params.build_params`).

    A :class:`SamplingMechanism` (or anything else that is not a ``SampleParams``) in
    the ``params`` position is the ``mechanism`` option: the historical call
    ``sample_population(counts, mechanism, variant=...)`` keeps working, and a wrong
    object there is refused as a ``mechanism``.
    """
    if params is not None and not isinstance(params, SampleParams):
        if "mechanism" in options:
            raise InvalidParameterError(
                "params", type(params).__name__,
                "a SampleParams or None when mechanism= is given")
        return build_params(SampleParams, None, {**options, "mechanism": params})
    return build_params(SampleParams, params, options)
