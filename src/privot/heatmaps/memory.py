r"""The memory a heatmap resolution needs, and the check that refuses one too large.

The release and its files allocate dense ``Delta x Delta`` float64 arrays: the cell sums,
the pyramid levels, the LP's estimate, the distribution, the filtered heatmap and its
normalisation, and the copies the writers make. :func:`memory_estimate` is
:data:`MEMORY_COPIES` such arrays (measured: ``benchmarks/bench_heatmap_outputs.py``):

.. math:: \text{bytes}(\Delta) = \text{MEMORY\_COPIES} \cdot 8 \cdot \Delta^2 ,

and :func:`check_memory` refuses, before any data is read, a resolution whose estimate
exceeds the limit (default :data:`DEFAULT_MEMORY_FRACTION` of the machine's RAM).
Both :func:`~privot.heatmaps.private_heatmap` and ``privot heatmap`` call it
(:mod:`privot.heatmaps.outputs` re-exports these names).

Privacy
-------
No release here: the check reads the public resolution and the machine's RAM only.
"""

from __future__ import annotations

import os
import re

import numpy as np

from privot.errors import InvalidParameterError

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "MEMORY_COPIES",
    "check_memory",
    "memory_estimate",
    "memory_limit",
    "parse_size",
]

#: Dense Delta x Delta float64 arrays alive at the peak of release + save (measured
#: with tracemalloc: about 10.3 in the release at Delta 1024-4096, plus the writers' and
#: the engine's copies, rounded up; benchmarks/results/heatmap_outputs.json).
MEMORY_COPIES = 16
#: Default limit of :func:`check_memory`: this fraction of the machine's RAM.
DEFAULT_MEMORY_FRACTION = 0.5
_FALLBACK_RAM = 8 * 2**30  # when the OS does not say

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*")


def parse_size(value: object, name: str = "max_memory") -> int:
    """Bytes from an int or a size such as ``"8GB"``, ``"512MiB"`` or ``"1.5 GB"``."""
    if isinstance(value, bool):
        raise InvalidParameterError(name, value, "a size in bytes or a string such as 8GB")
    if isinstance(value, (int, np.integer)):
        if value <= 0:
            raise InvalidParameterError(name, value, "a positive size")
        return int(value)
    if isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if m and m.group(2).lower() in _UNITS and float(m.group(1)) > 0:
            return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    raise InvalidParameterError(name, value, "a size such as 8GB, 512MB or 1.5GiB (units B, "
                                "KB, MB, GB, TB, KiB, MiB, GiB, TiB) or a number of bytes")


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def memory_estimate(resolution: int) -> int:
    """Bytes a release + save at ``resolution`` needs: :data:`MEMORY_COPIES` dense
    ``Delta x Delta`` float64 arrays."""
    return MEMORY_COPIES * 8 * int(resolution) ** 2


def memory_limit() -> int:
    """The default limit: :data:`DEFAULT_MEMORY_FRACTION` of the machine's RAM
    (``os.sysconf``; 8 GiB assumed where the OS does not say)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        ram = 0
    return int(DEFAULT_MEMORY_FRACTION * (ram if ram > 0 else _FALLBACK_RAM))


def check_memory(resolution: int, *, max_memory: int | str | None = None,
                 name: str = "resolution", limit_name: str = "max_memory") -> int:
    """Refuse a resolution whose dense arrays would not fit, before any work.

    Parameters
    ----------
    resolution : int
        :math:`\\Delta` (public).
    max_memory : int or str, optional
        The limit in bytes (or ``"16GB"``...); None: :func:`memory_limit`.
    name, limit_name : str
        How the resolution and the limit are called in the message (``--resolution``
        and ``--max-memory`` in the CLI).

    Returns
    -------
    int
        The estimate, in bytes.

    Raises
    ------
    InvalidParameterError
        Naming ``resolution``, the estimate and the limit.
    """
    limit = memory_limit() if max_memory is None else parse_size(max_memory, limit_name)
    need = memory_estimate(resolution)
    if need > limit:
        side = 8 * int(resolution) ** 2
        source = (f"{DEFAULT_MEMORY_FRACTION:g} of this machine's RAM" if max_memory is None
                  else limit_name)
        raise InvalidParameterError(
            name, resolution,
            f"a resolution whose dense arrays fit in memory: Delta = {resolution} needs "
            f"about {_gib(need)} ({MEMORY_COPIES} arrays of {_gib(side)}) but the limit is "
            f"{_gib(limit)} ({source}); use a smaller resolution or raise {limit_name}")
    return need
