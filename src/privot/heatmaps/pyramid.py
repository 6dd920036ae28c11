r"""The (scaled) pyramidal transform of paper 002, Sec. 3.1, as block sums.

Level :math:`i \in \{0,\dots,\ell\}` partitions :math:`[0,1)^2` into the
:math:`4^i` cells :math:`C_{2^i}` of side :math:`2^{-i}`. The level-:math:`i` partition
map :math:`\mathbf{P}_i` sums a grid vector over each level-:math:`i` cell, and the
scaled pyramidal transform stacks them with weights :math:`2^{-i}`:

.. math:: \mathbf{P} = \big[\mathbf{P}_0^\top\; 2^{-1}\mathbf{P}_1^\top\; \cdots\;
          2^{-\ell}\mathbf{P}_\ell^\top\big]^\top .

It is never formed as a matrix: :math:`\mathbf{P}_i s` is a reshape-and-sum of the
:math:`\Delta\times\Delta` array ``s`` over :math:`2^{\ell-i}\times 2^{\ell-i}` blocks,
:math:`O(\Delta^2)` work for all levels together (each level is computed from the one
below). Functions here return the *unscaled* block sums :math:`\mathbf{P}_i s`; the
caller applies :math:`2^{-i}` where the paper does.

Cells of level ``i`` are indexed ``(r, c)`` in a ``(2^i, 2^i)`` array, flat index
``r * 2^i + c``; the children of ``(r, c)`` at level ``i + 1`` are
``(2r + a, 2c + b)`` for ``a, b in {0, 1}``.
"""

from __future__ import annotations

import numpy as np

from privot._validation import check_int
from privot.errors import InvalidDataError

__all__ = ["block_sums", "pyramid", "children_flat", "leaf_block"]


def _check_square_power_of_two(s: np.ndarray, name: str) -> int:
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise InvalidDataError(f"{name} must be a square (Delta, Delta) array, got {s.shape}")
    d = s.shape[0]
    if d < 1 or d & (d - 1):
        raise InvalidDataError(f"{name} has side {d}; it must be a power of two")
    return d.bit_length() - 1


def block_sums(s: np.ndarray, level: int) -> np.ndarray:
    r""":math:`\mathbf{P}_i s` as a ``(2^i, 2^i)`` array (unscaled).

    Parameters
    ----------
    s : (Delta, Delta) array
        A grid vector (e.g. the sum of user distributions).
    level : int
        ``i`` in ``[0, log2(Delta)]``.
    """
    arr = np.asarray(s, dtype=np.float64)
    ell = _check_square_power_of_two(arr, "s")
    i = check_int(level, "level", minimum=0, maximum=ell)
    b = 1 << (ell - i)
    m = 1 << i
    return arr.reshape(m, b, m, b).sum(axis=(1, 3))


def pyramid(s: np.ndarray, *, start_level: int = 0) -> list[np.ndarray]:
    r"""All unscaled levels :math:`[\mathbf{P}_i s]_{i = \text{start},\dots,\ell}`.

    Computed bottom-up (each level from the next finer one), :math:`O(\Delta^2)` in all.

    Parameters
    ----------
    s : (Delta, Delta) array
    start_level : int
        First level returned (paper 002, Sec. 4: levels below ``q`` are not measured).

    Returns
    -------
    list of arrays
        ``out[j]`` is level ``start_level + j``, shape ``(2^i, 2^i)``; the last is ``s``.
    """
    arr = np.asarray(s, dtype=np.float64)
    ell = _check_square_power_of_two(arr, "s")
    start = check_int(start_level, "start_level", minimum=0, maximum=ell)
    levels = [arr]
    cur = arr
    for i in range(ell - 1, start - 1, -1):
        m = 1 << i
        cur = cur.reshape(m, 2, m, 2).sum(axis=(1, 3))
        levels.append(cur)
    return levels[::-1]


def children_flat(level: int, cells: np.ndarray) -> np.ndarray:
    """Flat indices at ``level + 1`` of the four children of each flat ``cells`` index
    at ``level``, shape ``(len(cells) * 4,)``, grouped by parent."""
    m = 1 << level
    cells = np.asarray(cells, dtype=np.int64)
    r, c = np.divmod(cells, m)
    rr = (2 * r)[:, None] + np.array([0, 0, 1, 1])
    cc = (2 * c)[:, None] + np.array([0, 1, 0, 1])
    return (rr * (2 * m) + cc).ravel()


def leaf_block(level: int, cell: int, ell: int) -> tuple[slice, slice]:
    """Row and column slices of the leaves (level ``ell``) inside a level-``level`` cell."""
    m = 1 << level
    b = 1 << (ell - level)
    r, c = divmod(int(cell), m)
    return slice(r * b, (r + 1) * b), slice(c * b, (c + 1) * b)
