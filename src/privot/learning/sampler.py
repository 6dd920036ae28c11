r"""Fixed-size sampling without replacement from the secure generator (Algorithm 1, line 1).

Each step draws, for every group, ``k`` of its ``n`` records uniformly without
replacement: one exact uniform 62-bit key per record from
:func:`privot.privacy.mechanisms.secret_uniform_integers` (the OS CSPRNG by default),
and the ``k`` records with the smallest keys (vectorised; exactly uniform, see the code).
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
from privot.privacy.mechanisms import secret_uniform_integers

__all__ = ["fixed_size_indices"]

_KEY_RANGE = 2**62


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
        Sorted.
    """
    if int(n) < 1 or not (1 <= int(k) <= int(n)):
        raise InvalidParameterError("batch size", k, f"an integer in [1, {n}]")
    n, k = int(n), int(k)
    if k == n:
        return np.arange(n, dtype=np.int64)
    while True:
        # One exact uniform key in [0, 2^62) per record; the k smallest form a uniform
        # k-subset by exchangeability, provided the k-th and (k+1)-th keys differ (the
        # rule is then unambiguous; redrawing on a tie, probability < n 2^-62, is an
        # event symmetric in the records, so the conditional law stays uniform).
        keys = np.asarray(secret_uniform_integers(_KEY_RANGE, size=n, rng=rng))
        part = np.argpartition(keys, k)
        if keys[part[:k]].max() < keys[part[k]]:
            return np.sort(part[:k]).astype(np.int64)
