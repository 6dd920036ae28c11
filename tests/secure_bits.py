"""The production entropy path of privot's samplers, fed a seeded stream of raw bytes.

``rng=None`` sends every sampler to :class:`privot.privacy.noise._bits._OSEntropy`: a
buffer refilled from :func:`os.urandom`, cut into words, coins, bit fields and bounded
integers by the methods of :class:`~privot.privacy.noise.BitSource`. A seeded
:class:`numpy.random.Generator` takes other branches (numpy's own bounded integers and
coins). :func:`secure_source` runs the production class itself, with only the byte reader
replaced by raw bytes from a seeded PCG64, so the code fit for publication is tested,
reproducibly. Import it as ``from secure_bits import secure_source`` (``tests/`` is on
pytest's ``pythonpath``).
"""

from __future__ import annotations

import numpy as np

from privot.privacy.noise import BitSource
from privot.privacy.noise._bits import _OSEntropy

__all__ = ["SeededBytes", "secure_source", "secure_sources"]


class SeededBytes:
    """A reproducible stand-in for :func:`os.urandom`: ``read(n)`` returns the next ``n``
    raw bytes of a PCG64 stream seeded with ``seed``."""

    def __init__(self, seed: int) -> None:
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self.bytes_read = 0

    def __call__(self, n: int) -> bytes:
        self.bytes_read += n
        return self._gen.bytes(n)


def secure_source(seed: int) -> BitSource:
    """The OS-CSPRNG source class of production, reading ``SeededBytes(seed)``."""
    return _OSEntropy(read=SeededBytes(seed))


def secure_sources(seed: int) -> list:
    """Both code paths a release can take: a seeded generator (reproducible experiments)
    and the production entropy path on a seeded byte stream."""
    return [np.random.default_rng(seed), secure_source(seed)]
