"""BLAS thread limits for solvers whose products are long reductions (one job: a cached
threadpoolctl controller).

The limit is process-wide while the block runs (the BLAS libraries have no per-thread
setting). Fewer threads can change a product's last bits (OpenBLAS: 1 and 2 threads
differ), so a solver that limits them gets the same bits on every machine with the same
BLAS; on a busy machine it also stops threads from waiting on each other (issue 27).
"""

from __future__ import annotations

import contextlib

__all__ = ["blas_limit"]

_CONTROLLER: list = []  # a cached threadpoolctl controller (finding the libraries: ~10 ms)


def blas_limit(threads: int) -> contextlib.AbstractContextManager:
    """Limit the BLAS libraries to ``threads`` threads within the block (threadpoolctl,
    imported lazily; without it, or where it finds no BLAS, nothing is limited)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover (a dependency; only speed is lost)
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=threads, user_api="blas")
