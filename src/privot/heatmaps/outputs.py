r"""The files of a private heatmap.

:func:`save_heatmap` (:meth:`HeatmapResult.save <privot.heatmaps.result.HeatmapResult.save>`)
writes what ``privot heatmap`` writes; the CLI calls it (one code path). It reads the
result through :class:`SavableHeatmap` (what it needs of a
:class:`~privot.heatmaps.result.HeatmapResult`), so this module never imports the
result's module, which imports it.

Orientation
-----------
Every array here is indexed ``[row, col]`` as :class:`~privot.grid.Grid` lays cells out:
``row`` runs along ``y`` (the latitude for geographic data) with **row 0 at the southern
edge** ``y_min``, ``col`` along ``x`` (the longitude) with col 0 at the western edge
``x_min``. Cell ``(row, col)`` covers ``[x_min + col*w, x_min + (col+1)*w) x
[y_min + row*h, y_min + (row+1)*h)`` with ``w, h`` the grid's cell width and height. The
dense files (``.npy``, ``.npz``, ``distribution.csv``) keep that layout, so the first
line of ``distribution.csv`` is the *southern* row (a picture drawn from it is upside
down unless drawn with ``origin="lower"``). The GeoTIFF is written north-up (its first
raster row is the northern row ``Delta - 1``), as GIS tools expect; the long table and
the GeoJSON carry coordinates, so they need no convention.

Cell blocks
-----------
A pyramid release is piecewise constant: RECONSTRUCT spreads the mass of each left-out
cell uniformly over its leaves (``reconstruct.py``), so a ``4096 x 4096`` release with
3.6 million non-zero cells is about 80 uniform dyadic squares. The long table
(``distribution_cells.csv``) and the GeoJSON (``distribution.geojson``) list the
**maximal uniform dyadic blocks of non-zero cells** (:func:`cell_blocks`): a ``side x
side`` square of cells aligned on multiples of ``side``, every cell of which has the
same value, not contained in a larger such square. ``side = 1`` rows are single cells;
cells with zero mass are left out. The listing is exact: :func:`blocks_to_matrix`
rebuilds the matrix.

Memory
------
:mod:`privot.heatmaps.memory` estimates the memory of the dense ``Delta x Delta`` arrays
and refuses, before any data is read, a resolution that would not fit
(:func:`check_memory`; re-exported here).

Privacy
-------
No release here. Every publishable file is a function of the released distribution,
its filtered heatmap and the public parameters (post-processing); the curator report
(exact counts, timings, data warnings) goes to ``curator-report.json`` only. The memory
check reads the public resolution only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from privot._optional import figure_possible
from privot._result import CURATOR_REPORT, write_curator_report, write_release
from privot.errors import InvalidParameterError
from privot.heatmaps.memory import (
    DEFAULT_MEMORY_FRACTION,
    MEMORY_COPIES,
    check_memory,
    memory_estimate,
    memory_limit,
    parse_size,
)

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = [
    "CURATOR_FILES",
    "DEFAULT_MEMORY_FRACTION",
    "DENSE_MAX_RESOLUTION",
    "MAX_CSV_ROWS",
    "MAX_GEOJSON_FEATURES",
    "MEMORY_COPIES",
    "PUBLISHABLE_FILES",
    "SavableHeatmap",
    "blocks_to_matrix",
    "cell_blocks",
    "check_memory",
    "geographic_bounds",
    "memory_estimate",
    "memory_limit",
    "parse_size",
    "save_heatmap",
    "write_cells_csv",
    "write_geojson",
    "write_geotiff",
]

#: Every publishable file :func:`save_heatmap` may write (which ones depend on the
#: resolution, on rasterio being installed and on the number of non-zero blocks).
PUBLISHABLE_FILES = ("distribution.npy", "distribution.npz", "distribution.csv",
                     "distribution_cells.csv", "distribution.geojson", "distribution.tif",
                     "heatmap.npy", "heatmap.npz", "heatmap.png", "release.json")
#: The curator-only files (exact counts, timings, data warnings: never publish).
CURATOR_FILES = (CURATOR_REPORT,)

#: From this resolution on the dense arrays are written compressed (``.npz``) and the
#: dense ``distribution.csv`` (about 170 MB at Delta = 4096) is replaced by the long
#: table ``distribution_cells.csv``.
DENSE_MAX_RESOLUTION = 2048
#: The long table is skipped past this many non-zero blocks (a baseline release with
#: noise in every cell); the dense files hold the release.
MAX_CSV_ROWS = 1_000_000
#: The GeoJSON is skipped past this many features (about 200 bytes each).
MAX_GEOJSON_FEATURES = 250_000
class SavableHeatmap(Protocol):
    """What :func:`save_heatmap` reads of a release (a
    :class:`~privot.heatmaps.result.HeatmapResult` is one)."""

    grid: Grid
    distribution: np.ndarray
    heatmap: np.ndarray

    def plot(self, ax: Any = None, *, scale: str | None = None) -> Any: ...

    def release_dict(self) -> dict[str, Any]: ...

    def curator_report(self) -> dict[str, Any]: ...


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


def _block_geometry(grid: Grid, row: np.ndarray, col: np.ndarray, side: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x0, _, y0, _ = grid.bounds
    w, h = grid.cell_width, grid.cell_height
    return x0 + col * w, y0 + row * h, x0 + (col + side) * w, y0 + (row + side) * h


# -- writers ------------------------------------------------------------------------------

#: Columns of ``distribution_cells.csv``.
CELLS_COLUMNS = ("row", "col", "side", "x", "y", "x_min", "y_min", "x_max", "y_max",
                 "value", "mass")


def write_cells_csv(path: str | Path, values: np.ndarray, grid: Grid, *,
                    blocks: tuple[np.ndarray, ...] | None = None) -> int:
    """The long table: one row per maximal uniform block of non-zero cells.

    Columns :data:`CELLS_COLUMNS`: ``row, col`` the block's south-west cell (row 0 =
    southern edge), ``side`` its side in cells (1: a single cell), ``x, y`` its centre
    (longitude, latitude for geographic data), ``x_min .. y_max`` its bounds, ``value``
    the value of each of its cells and ``mass = value * side**2``. Zero cells are left
    out. Returns the number of rows.
    """
    row, col, side, value = cell_blocks(values) if blocks is None else blocks
    xa, ya, xb, yb = _block_geometry(grid, row, col, side)
    table = np.column_stack([row, col, side, (xa + xb) / 2, (ya + yb) / 2, xa, ya, xb, yb,
                             value, value * side.astype(np.float64) ** 2])
    fmt = ["%d", "%d", "%d"] + ["%.12g"] * 6 + ["%.9g", "%.9g"]
    np.savetxt(path, table, delimiter=",", fmt=fmt, header=",".join(CELLS_COLUMNS),
               comments="")
    return int(row.size)


def _num(v: float, digits: int = 12) -> str:
    return format(float(v), f".{digits}g")


def write_geojson(path: str | Path, values: np.ndarray, grid: Grid, *,
                  blocks: tuple[np.ndarray, ...] | None = None) -> int:
    """A GeoJSON FeatureCollection (RFC 7946: ``[x, y]`` = ``[longitude, latitude]``, the
    exterior ring counter-clockwise) of the maximal uniform blocks of non-zero cells,
    each a polygon with ``row, col, side, value, mass`` (as in :func:`write_cells_csv`).
    Returns the number of features."""
    row, col, side, value = cell_blocks(values) if blocks is None else blocks
    xa, ya, xb, yb = _block_geometry(grid, row, col, side)
    feats = []
    for i in range(row.size):
        a, b, c, d = _num(xa[i]), _num(ya[i]), _num(xb[i]), _num(yb[i])
        ring = f"[[{a},{b}],[{c},{b}],[{c},{d}],[{a},{d}],[{a},{b}]]"
        props = (f'{{"row":{int(row[i])},"col":{int(col[i])},"side":{int(side[i])},'
                 f'"value":{_num(value[i], 9)},"mass":{_num(value[i] * side[i] ** 2, 9)}}}')
        feats.append(f'{{"type":"Feature","geometry":{{"type":"Polygon","coordinates":'
                     f'[{ring}]}},"properties":{props}}}')
    x0, _, y0, _ = grid.bounds
    top = (x0 + grid.resolution * grid.cell_width, y0 + grid.resolution * grid.cell_height)
    bbox = f"[{_num(x0)},{_num(y0)},{_num(top[0])},{_num(top[1])}]"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f'{{"type":"FeatureCollection","bbox":{bbox},"features":[\n')
        fh.write(",\n".join(feats))
        fh.write("\n]}\n")
    return int(row.size)


def write_geotiff(path: str | Path, values: np.ndarray, grid: Grid, *,
                  crs: str | None = None) -> bool:
    """A single-band float64 GeoTIFF, north-up (deflate-compressed), with the grid's
    affine transform; ``crs`` (e.g. ``"EPSG:4326"``) or none. Returns False, writing
    nothing, when rasterio is not installed (``pip install 'privot[gis]'``)."""
    try:
        import rasterio
        from rasterio.transform import Affine
    except ImportError:
        return False
    a = np.asarray(values, dtype=np.float64)
    d = a.shape[0]
    x0, _, y0, _ = grid.bounds
    # north-up: the origin is the north-west corner, y decreases down the rows
    transform = Affine(grid.cell_width, 0.0, x0, 0.0, -grid.cell_height,
                       y0 + d * grid.cell_height)
    profile = {"driver": "GTiff", "height": d, "width": d, "count": 1, "dtype": "float64",
               "transform": transform, "compress": "deflate", "predictor": 3}
    if d >= 256:
        profile.update(tiled=True, blockxsize=256, blockysize=256)
    if crs is not None:
        profile["crs"] = crs
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(a[::-1], 1)  # row 0 of the raster is the northern row
        dst.update_tags(privot="differentially private heatmap distribution (sums to 1)")
    return True


# -- the whole folder ---------------------------------------------------------------------


def outputs_description(resolution: int, *, crs: str | None) -> dict[str, Any]:
    """The layout of the files (for ``release.json``): a function of public values."""
    dense = "npy" if resolution < DENSE_MAX_RESOLUTION else "npz (compressed)"
    return {
        "orientation": "arrays are [row, col]: row 0 is the southern edge y_min (row along "
                       "y / latitude), col 0 the western edge x_min (col along x / "
                       "longitude); distribution.tif is north-up",
        "dense": dense,
        "distribution_cells.csv": "one row per maximal uniform dyadic block of non-zero "
                                  "cells: row, col (south-west cell), side (cells; 1 = a "
                                  "single cell), x, y (centre), bounds, value (per cell), "
                                  "mass (value * side^2); zero cells are left out",
        "distribution.geojson": "the same blocks as polygons (RFC 7946, [x, y] = "
                                "[longitude, latitude])",
        "crs": crs,
    }


def save_heatmap(result: SavableHeatmap, folder: str | Path, *, scale: str | None = None,
                 crs: str | None = "auto", release_extra: Mapping[str, Any] | None = None,
                 curator: Mapping[str, Any] | None = None,
                 data_warnings: Sequence[str] = (), png: bool = True
                 ) -> dict[str, list[str]]:
    """Write ``result`` into ``folder`` as ``privot heatmap`` does.

    Parameters
    ----------
    result : HeatmapResult
        The release (any :class:`SavableHeatmap`).
    folder : str or Path
        Created if needed; files of the same names are replaced.
    scale : {"linear", "sqrt", "log"}, optional
        Colour scale of ``heatmap.png`` (default :data:`privot.heatmaps.plot.DEFAULT_SCALE`).
    crs : str or None, default "auto"
        CRS of the GeoTIFF: ``"auto"`` says EPSG:4326 when the public bounds fit in
        longitude/latitude ranges (:func:`geographic_bounds`) and nothing otherwise.
    release_extra : mapping, optional
        Public fields added to ``release.json`` (the CLI adds its engine).
    curator : mapping, optional
        Curator-only fields merged into ``curator-report.json`` (the CLI's timings).
    data_warnings : sequence of str
        Warnings raised while the data was read (curator-only).
    png : bool, default True
        Draw ``heatmap.png`` (needs matplotlib, the ``plot`` extra).

    Returns
    -------
    dict
        ``{"publishable": [...], "curator": [...], "notes": [...]}``: the names written
        and one-line notes on what was skipped (publishable: functions of the release).
    """
    from privot.heatmaps.plot import DEFAULT_SCALE, SCALES

    scale = DEFAULT_SCALE if scale is None else scale
    if scale not in SCALES:
        raise InvalidParameterError("scale", scale, f"one of {SCALES}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    grid = result.grid
    d = grid.resolution
    if crs == "auto":
        crs = "EPSG:4326" if geographic_bounds(grid.bounds) else None
    public: list[str] = []
    notes: list[str] = []
    # dense matrices
    if d < DENSE_MAX_RESOLUTION:
        np.save(folder / "distribution.npy", result.distribution)
        np.savetxt(folder / "distribution.csv", result.distribution, delimiter=",",
                   fmt="%.9g")
        np.save(folder / "heatmap.npy", result.heatmap)
        public += ["distribution.npy", "distribution.csv", "heatmap.npy"]
    else:
        np.savez_compressed(folder / "distribution.npz", distribution=result.distribution)
        np.savez_compressed(folder / "heatmap.npz", heatmap=result.heatmap)
        public += ["distribution.npz", "heatmap.npz"]
        notes.append(f"Delta = {d} >= {DENSE_MAX_RESOLUTION}: dense arrays compressed "
                     "(.npz); no dense distribution.csv (see distribution_cells.csv)")
    # GIS
    blocks = cell_blocks(result.distribution)
    n = int(blocks[0].size)
    if n <= MAX_CSV_ROWS:
        write_cells_csv(folder / "distribution_cells.csv", result.distribution, grid,
                        blocks=blocks)
        public.append("distribution_cells.csv")
    else:
        notes.append(f"distribution_cells.csv skipped: {n} non-zero blocks > {MAX_CSV_ROWS}")
    if n <= MAX_GEOJSON_FEATURES:
        write_geojson(folder / "distribution.geojson", result.distribution, grid,
                      blocks=blocks)
        public.append("distribution.geojson")
    else:
        notes.append(f"distribution.geojson skipped: {n} non-zero blocks > "
                     f"{MAX_GEOJSON_FEATURES}")
    if write_geotiff(folder / "distribution.tif", result.distribution, grid, crs=crs):
        public.append("distribution.tif")
    else:
        notes.append("distribution.tif skipped: rasterio is not installed "
                     "(pip install 'privot[gis]')")
    if png and figure_possible("heatmap.png", notes):
        fig = result.plot(scale=scale)
        fig.savefig(folder / "heatmap.png", dpi=120, format="png", bbox_inches="tight")
        public.append("heatmap.png")
    public.append("release.json")
    write_release(folder, {**result.release_dict(), **dict(release_extra or {}),
                           "outputs": outputs_description(d, crs=crs),
                           "png_scale": scale if png else None}, public)
    # curator-only
    report = result.curator_report()
    extra = dict(curator or {})
    if "seconds" in extra:
        report["seconds"] = {**report["seconds"], **extra.pop("seconds")}
    write_curator_report(folder, {**report, **extra, "data_warnings": list(data_warnings)},
                         CURATOR_FILES)
    return {"publishable": sorted(public), "curator": list(CURATOR_FILES), "notes": notes}
