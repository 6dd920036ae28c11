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
raster row is the northern row ``Delta - 1``), as GIS tools expect; the long table, the
GeoJSON and the GeoParquet carry coordinates, so they need no convention.

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
rebuilds the matrix. ``distribution.parquet`` (GeoParquet 1.1, written when pyarrow is
installed; :mod:`privot.heatmaps.geoparquet`) holds the same rows with each block's
rectangle as a WKB polygon.

Tessellations
-------------
``save_heatmap(..., tessellation=FILE)`` also writes ``tiles.csv`` and ``tiles.geojson``:
the released mass of each tile of a public tessellation
(:mod:`privot.heatmaps.tessellation`; exact area weighting), and records the file's name
and SHA-256 and ``mass_outside_tessellation`` in ``release.json``.

Memory
------
:mod:`privot.heatmaps.memory` estimates the memory of the dense ``Delta x Delta`` arrays
and refuses, before any data is read, a resolution that would not fit
(:func:`check_memory`; re-exported here).

Privacy
-------
No release here. Every publishable file is a function of the released distribution,
its filtered heatmap and the public parameters -- the public tessellation among them --
(post-processing); the curator report
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
from privot.heatmaps.blocks import (  # noqa: F401 - re-exported, the writers' geometry
    block_geometry,
    blocks_to_matrix,
    cell_blocks,
    geographic_bounds,
)
from privot.heatmaps.geoparquet import write_geoparquet
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
    "MAX_GEOPARQUET_ROWS",
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
#: resolution, on rasterio and pyarrow being installed, on the number of non-zero blocks
#: and on a tessellation being given).
PUBLISHABLE_FILES = ("distribution.npy", "distribution.npz", "distribution.csv",
                     "distribution_cells.csv", "distribution.geojson", "distribution.tif",
                     "distribution.parquet", "heatmap.npy", "heatmap.npz", "heatmap.png",
                     "tiles.csv", "tiles.geojson", "release.json")
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
#: The GeoParquet is skipped past this many rows (about 190 bytes each in memory).
MAX_GEOPARQUET_ROWS = 4_000_000

class SavableHeatmap(Protocol):
    """What :func:`save_heatmap` reads of a release (a
    :class:`~privot.heatmaps.result.HeatmapResult` is one)."""

    grid: Grid
    distribution: np.ndarray
    heatmap: np.ndarray

    def plot(self, ax: Any = None, *, scale: str | None = None) -> Any: ...

    def release_dict(self) -> dict[str, Any]: ...

    def curator_report(self) -> dict[str, Any]: ...


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
    xa, ya, xb, yb = block_geometry(grid, row, col, side)
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
    xa, ya, xb, yb = block_geometry(grid, row, col, side)
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
        "distribution.parquet": "the same blocks as GeoParquet 1.1 (columns of "
                                "distribution_cells.csv and a WKB polygon geometry)",
        "crs": crs,
    }


_TILES_OUTPUTS = {
    "tiles.csv": "tile_id, mass: each tile's share of the released distribution (the "
                 "tessellation's order; see tessellation.rule)",
    "tiles.geojson": "the tessellation's features with a mass property",
}


def save_heatmap(result: SavableHeatmap, folder: str | Path, *, scale: str | None = None,
                 crs: str | None = "auto", release_extra: Mapping[str, Any] | None = None,
                 curator: Mapping[str, Any] | None = None,
                 data_warnings: Sequence[str] = (), png: bool = True,
                 tessellation: Any = None, tessellation_id: str | None = None
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
        CRS of the GeoTIFF and the GeoParquet: ``"auto"`` says EPSG:4326 when the public
        bounds fit in longitude/latitude ranges (:func:`geographic_bounds`) and nothing
        otherwise.
    release_extra : mapping, optional
        Public fields added to ``release.json`` (the CLI adds its engine).
    curator : mapping, optional
        Curator-only fields merged into ``curator-report.json`` (the CLI's timings).
    data_warnings : sequence of str
        Warnings raised while the data was read (curator-only).
    png : bool, default True
        Draw ``heatmap.png`` (needs matplotlib, the ``plot`` extra).
    tessellation : path or Tessellation, optional
        A public tessellation (GeoJSON or GeoParquet file, or a
        :class:`~privot.heatmaps.tessellation.Tessellation`): also write ``tiles.csv``
        and ``tiles.geojson`` (each tile's released mass) and record the tessellation
        and ``mass_outside_tessellation`` in ``release.json``. Checked before anything
        is written.
    tessellation_id : str, optional
        With a tessellation file: the property holding the tile ids (default ``"id"``
        or the feature index; :func:`~privot.heatmaps.tessellation.read_tessellation`).

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
    grid = result.grid
    blocks = cell_blocks(result.distribution)
    tess, tiles = _tiles(result, tessellation, tessellation_id, blocks)  # before writing
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    d = grid.resolution
    if crs == "auto":
        crs = "EPSG:4326" if geographic_bounds(grid.bounds) else None
    public: list[str] = []
    notes: list[str] = []
    extra_release: dict[str, Any] = {}
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
    _write_gis(folder, result.distribution, grid, blocks, crs, public, notes)
    if tiles is not None:
        from privot.heatmaps.tessellation import write_tiles_csv, write_tiles_geojson

        write_tiles_csv(folder / "tiles.csv", tiles)
        write_tiles_geojson(folder / "tiles.geojson", tess, tiles)
        public += ["tiles.csv", "tiles.geojson"]
        extra_release = {"tessellation": tess.describe(),
                         "mass_outside_tessellation": tiles.mass_outside}
    if png and figure_possible("heatmap.png", notes):
        fig = result.plot(scale=scale)
        fig.savefig(folder / "heatmap.png", dpi=120, format="png", bbox_inches="tight")
        public.append("heatmap.png")
    public.append("release.json")
    outputs = outputs_description(d, crs=crs)
    if tiles is not None:
        outputs.update(_TILES_OUTPUTS)
    write_release(folder, {**result.release_dict(), **dict(release_extra or {}),
                           **extra_release, "outputs": outputs,
                           "png_scale": scale if png else None}, public)
    # curator-only
    report = result.curator_report()
    extra = dict(curator or {})
    if "seconds" in extra:
        report["seconds"] = {**report["seconds"], **extra.pop("seconds")}
    write_curator_report(folder, {**report, **extra, "data_warnings": list(data_warnings)},
                         CURATOR_FILES)
    return {"publishable": sorted(public), "curator": list(CURATOR_FILES), "notes": notes}


def _tiles(result: SavableHeatmap, tessellation: Any, tessellation_id: str | None,
           blocks: tuple) -> tuple[Any, Any]:
    """``(tessellation, tile masses)`` of a public tessellation, or ``(None, None)``;
    the tessellation is read and checked here, before anything is written."""
    if tessellation is None:
        if tessellation_id is not None:
            raise InvalidParameterError("tessellation_id", tessellation_id,
                                        "only with a tessellation")
        return None, None
    from privot.heatmaps.tessellation import (
        Tessellation,
        aggregate_to_tiles,
        read_tessellation,
    )

    if isinstance(tessellation, Tessellation):
        if tessellation_id is not None:
            raise InvalidParameterError("tessellation_id", tessellation_id,
                                        "only with a tessellation file")
        tess = tessellation
    else:
        tess = read_tessellation(tessellation, id_property=tessellation_id)
    return tess, aggregate_to_tiles(result, tess, blocks=blocks)


def _write_gis(folder: Path, distribution: np.ndarray, grid: Grid, blocks: tuple,
               crs: str | None, public: list[str], notes: list[str]) -> None:
    """The GIS files of the distribution (cells CSV, GeoJSON, GeoTIFF, GeoParquet), each
    skipped with a note past its size limit or without its optional dependency."""
    n = int(blocks[0].size)
    if n <= MAX_CSV_ROWS:
        write_cells_csv(folder / "distribution_cells.csv", distribution, grid,
                        blocks=blocks)
        public.append("distribution_cells.csv")
    else:
        notes.append(f"distribution_cells.csv skipped: {n} non-zero blocks > {MAX_CSV_ROWS}")
    if n <= MAX_GEOJSON_FEATURES:
        write_geojson(folder / "distribution.geojson", distribution, grid,
                      blocks=blocks)
        public.append("distribution.geojson")
    else:
        notes.append(f"distribution.geojson skipped: {n} non-zero blocks > "
                     f"{MAX_GEOJSON_FEATURES}")
    if write_geotiff(folder / "distribution.tif", distribution, grid, crs=crs):
        public.append("distribution.tif")
    else:
        notes.append("distribution.tif skipped: rasterio is not installed "
                     "(pip install 'privot[gis]')")
    if n > MAX_GEOPARQUET_ROWS:
        notes.append(f"distribution.parquet skipped: {n} non-zero blocks > "
                     f"{MAX_GEOPARQUET_ROWS}")
    elif write_geoparquet(folder / "distribution.parquet", distribution, grid,
                          blocks=blocks, crs=crs):
        public.append("distribution.parquet")
    else:
        notes.append("distribution.parquet skipped: pyarrow is not installed "
                     "(pip install pyarrow, or 'privot[datasets]')")
