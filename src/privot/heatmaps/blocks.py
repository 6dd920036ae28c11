"""The heatmap's grid geometry shared by its file writers: the maximal uniform dyadic
blocks of a released matrix and their rectangles in the bounds' units
(:mod:`privot.heatmaps.outputs`, :mod:`~privot.heatmaps.geoparquet`,
:mod:`~privot.heatmaps.tessellation`). Functions of the release and the public grid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = ["block_geometry", "blocks_to_matrix", "cell_blocks", "geographic_bounds"]


# -- geometry -----------------------------------------------------------------------------


def geographic_bounds(bounds: Sequence[float]) -> bool:
    """True when ``(x_min, x_max, y_min, y_max)`` fits in longitude [-180, 180] x
    latitude [-90, 90] (the public bounds only): the outputs then say EPSG:4326."""
    x0, x1, y0, y1 = (float(v) for v in bounds)
    return -180.0 <= x0 < x1 <= 180.0 and -90.0 <= y0 < y1 <= 90.0


def cell_blocks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The maximal uniform dyadic blocks of non-zero cells of a square matrix.

    Returns
    -------
    row, col, side : (k,) int64 arrays
        South-west cell and side (in cells) of each block; sorted by ``(row, col)``.
    value : (k,) float64 array
        The value of every cell of the block (its mass is ``value * side**2``).
    """
    a = np.asarray(values, dtype=np.float64)
    d = a.shape[0]
    if a.ndim != 2 or a.shape[1] != d:
        raise InvalidParameterError("values", a.shape, "a square (Delta, Delta) array")
    sides = [1]
    if d & (d - 1) == 0:
        while sides[-1] < d:
            sides.append(2 * sides[-1])
    lo, hi, uniform = {1: a}, {1: a}, {1: np.ones(a.shape, dtype=bool)}
    for prev, b in zip(sides[:-1], sides[1:], strict=False):
        m = d // b
        lo[b] = lo[prev].reshape(m, 2, m, 2).min(axis=(1, 3))
        hi[b] = hi[prev].reshape(m, 2, m, 2).max(axis=(1, 3))
        uniform[b] = (lo[b] == hi[b]) & uniform[prev].reshape(m, 2, m, 2).all(axis=(1, 3))
    rows, cols, sizes, vals = [], [], [], []
    for i, b in enumerate(sides):
        keep = uniform[b] & (lo[b] != 0)
        if i + 1 < len(sides):  # maximal: the parent block is not uniform
            parent = uniform[sides[i + 1]]
            keep &= ~np.repeat(np.repeat(parent, 2, axis=0), 2, axis=1)
        r, c = np.nonzero(keep)
        rows.append(r * b)
        cols.append(c * b)
        sizes.append(np.full(r.size, b, dtype=np.int64))
        vals.append(lo[b][r, c])
    row = np.concatenate(rows).astype(np.int64)
    col = np.concatenate(cols).astype(np.int64)
    side = np.concatenate(sizes)
    value = np.concatenate(vals)
    order = np.lexsort((col, row))
    return row[order], col[order], side[order], value[order]


def blocks_to_matrix(row: Any, col: Any, side: Any, value: Any, resolution: int) -> np.ndarray:
    """The ``(Delta, Delta)`` matrix a block listing (:func:`cell_blocks`, or the
    columns of ``distribution_cells.csv``) describes."""
    out = np.zeros((int(resolution), int(resolution)))
    for r, c, s, v in zip(np.asarray(row, dtype=np.int64), np.asarray(col, dtype=np.int64),
                          np.asarray(side, dtype=np.int64), np.asarray(value, dtype=float),
                          strict=True):
        out[r:r + s, c:c + s] = v
    return out


def block_geometry(grid: Grid, row: np.ndarray, col: np.ndarray, side: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x0, _, y0, _ = grid.bounds
    w, h = grid.cell_width, grid.cell_height
    return x0 + col * w, y0 + row * h, x0 + (col + side) * w, y0 + (row + side) * h
