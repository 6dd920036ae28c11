r"""Fixed-size sampling without replacement from the secure generator (Algorithm 1, line 1).

Each step draws, for every group, ``k`` of its ``n`` records uniformly without
replacement by a partial Fisher-Yates shuffle whose swap positions are exact uniform
integers from :func:`privot.privacy.noise.uniform_integers` (the OS CSPRNG by default).
The sample is part of the secret: amplification (Lemma 5.1) holds only if nobody can
predict it, so it never comes from a seeded or public generator in a release.

Privacy
-------
No noise of its own. Its uniformity is what the fixed-size accountant assumes
(:func:`privot.privacy.accounting.pld_epsilon` with ``sampling="fixed-size"``).
"""

from __future__ import annotations

import numpy as np

from privot.errors import InvalidParameterError
from privot.privacy.noise import uniform_integers

__all__ = ["fixed_size_indices"]


def fixed_size_indices(n: int, k: int, *, rng: np.random.Generator | None = None
                       ) -> np.ndarray:
    """``k`` distinct indices of ``range(n)``, uniformly among all ``k``-subsets.

    Parameters
    ----------
    n : int
        Population size (>= 1).
    k : int
        Sample size, ``1 <= k <= n``.
    rng : numpy.random.Generator, optional
        None (default) for the OS CSPRNG; a seeded generator only in tests.

    Returns
    -------
    int64 array, shape (k,)
        In the order drawn (uniformly random order).
    """
    if int(n) < 1 or not (1 <= int(k) <= int(n)):
        raise InvalidParameterError("batch size", k, f"an integer in [1, {n}]")
    n, k = int(n), int(k)
    offsets = np.asarray(uniform_integers(n - np.arange(k, dtype=np.int64), rng=rng))
    # Partial Fisher-Yates on a sparse permutation: only touched positions are stored.
    swapped: dict[int, int] = {}
    out = np.empty(k, dtype=np.int64)
    for i, off in enumerate(offsets.tolist()):
        j = i + off
        vi = swapped.get(i, i)
        vj = swapped.get(j, j)
        out[i] = vj
        swapped[j] = vi
    return out
