r"""GeoParquet and WKB for the heatmap's files (no shapely, no geopandas).

:func:`write_geoparquet` writes ``distribution.parquet``: the released distribution as
GeoParquet 1.1, one row per maximal uniform dyadic block of non-zero cells (the rows of
``distribution_cells.csv``, :func:`privot.heatmaps.outputs.cell_blocks`) with its
rectangle as a WKB polygon. :func:`rectangles_wkb` builds those WKB polygons with numpy
(a fixed 93-byte record per rectangle); :func:`read_wkb_polygons` decodes WKB polygons
and multipolygons (for the tessellations of :mod:`privot.heatmaps.tessellation`, and for
the tests) with :mod:`struct`.

The file
--------
Columns: :data:`GEOPARQUET_COLUMNS` -- those of ``distribution_cells.csv`` (``row, col,
side, x, y, x_min, y_min, x_max, y_max, value, mass``) and ``geometry``, the block's
rectangle (little-endian WKB Polygon, one exterior ring, counter-clockwise, closed:
``(x_min, y_min), (x_max, y_min), (x_max, y_max), (x_min, y_max), (x_min, y_min)``).
Rows are sorted by ``(row, col)`` (row 0 = the southern edge). The file metadata key
``"geo"`` follows GeoParquet 1.1: ``version``, ``primary_column = "geometry"`` and
``columns.geometry`` with ``encoding = "WKB"``, ``geometry_types = ["Polygon"]``,
``orientation = "counterclockwise"``, ``bbox`` (of the rows written) and ``crs``: a
PROJJSON object for the grid's CRS -- ``EPSG:4326`` (:data:`EPSG_4326_PROJJSON`) when the
public bounds are longitude/latitude (the rule of ``distribution.geojson`` and
``distribution.tif``), another CRS given by name converted with rasterio when it is
installed -- or ``null`` (an unknown CRS; GeoParquet reads a *missing* ``crs`` as
OGC:CRS84, so it is always written). WKB coordinates are ``(x, y)``, longitude first,
whatever the CRS's axis order (GeoParquet's rule).

The bytes are deterministic: no timestamps, fixed writer settings
(:data:`PARQUET_OPTIONS`: one row group per :data:`ROW_GROUP_SIZE` rows, snappy); the
footer's ``created_by`` names the pyarrow version, so another pyarrow may write other
bytes for the same release.

Privacy
-------
No release here: ``distribution.parquet`` is a function of the released distribution
and the public grid (post-processing), publishable.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privot.errors import InvalidDataError

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = ["EPSG_4326_PROJJSON", "GEOPARQUET_COLUMNS", "GEOPARQUET_VERSION",
           "PARQUET_OPTIONS", "ROW_GROUP_SIZE", "crs_projjson", "geo_metadata",
           "read_wkb_polygons", "rectangles_wkb", "write_geoparquet"]

#: The GeoParquet version written in the ``"geo"`` metadata.
GEOPARQUET_VERSION = "1.1.0"
#: Columns of ``distribution.parquet`` (``distribution_cells.csv``'s and the geometry).
GEOPARQUET_COLUMNS = ("row", "col", "side", "x", "y", "x_min", "y_min", "x_max", "y_max",
                      "value", "mass", "geometry")
#: Rows per row group (fixed, so that the bytes depend on the release only).
ROW_GROUP_SIZE = 65_536
#: The writer's settings (fixed: deterministic bytes).
PARQUET_OPTIONS: dict[str, Any] = {
    "row_group_size": ROW_GROUP_SIZE, "compression": "snappy", "version": "2.6",
    "use_dictionary": False, "write_statistics": True, "data_page_version": "1.0",
}

#: PROJJSON of WGS 84 longitude/latitude (EPSG:4326), the CRS of geographic bounds.
EPSG_4326_PROJJSON: dict[str, Any] = {
    "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
    "type": "GeographicCRS",
    "name": "WGS 84",
    "datum": {"type": "GeodeticReferenceFrame", "name": "World Geodetic System 1984",
              "ellipsoid": {"name": "WGS 84", "semi_major_axis": 6378137,
                            "inverse_flattening": 298.257223563}},
    "coordinate_system": {"subtype": "ellipsoidal", "axis": [
        {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north",
         "unit": "degree"},
        {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east",
         "unit": "degree"}]},
    "id": {"authority": "EPSG", "code": 4326},
}

# one WKB polygon of one closed 5-point ring: byte order, type, rings, points, 10 doubles
_RECT_DTYPE = np.dtype([("order", "u1"), ("type", "<u4"), ("rings", "<u4"),
                        ("points", "<u4"), ("xy", "<f8", (10,))])
_WKB_POLYGON, _WKB_MULTIPOLYGON = 3, 6


def rectangles_wkb(x_min: Any, y_min: Any, x_max: Any, y_max: Any) -> tuple[bytes, int]:
    """The WKB polygons of axis-aligned rectangles, as one buffer.

    Each rectangle is a little-endian WKB Polygon of 93 bytes: one exterior ring of five
    points, counter-clockwise, closed (``(x_min, y_min), (x_max, y_min), (x_max,
    y_max), (x_min, y_max), (x_min, y_min)``).

    Returns
    -------
    data : bytes
        The ``k`` polygons one after the other.
    itemsize : int
        Bytes per polygon (93): polygon ``i`` is ``data[i * itemsize:(i + 1) * itemsize]``.
    """
    xa, ya, xb, yb = (np.asarray(v, dtype=np.float64).ravel() for v in (x_min, y_min, x_max,
                                                                        y_max))
    rec = np.zeros(xa.size, dtype=_RECT_DTYPE)
    rec["order"] = 1  # little endian
    rec["type"] = _WKB_POLYGON
    rec["rings"] = 1
    rec["points"] = 5
    rec["xy"] = np.column_stack([xa, ya, xb, ya, xb, yb, xa, yb, xa, ya])
    return rec.tobytes(), _RECT_DTYPE.itemsize


def _read_ring_list(buf: bytes, pos: int, endian: str, dims: int, where: str
                    ) -> tuple[list[np.ndarray], int]:
    try:
        (n_rings,) = struct.unpack_from(endian + "I", buf, pos)
        pos += 4
        rings = []
        for _ in range(n_rings):
            (n_points,) = struct.unpack_from(endian + "I", buf, pos)
            pos += 4
            size = 8 * dims * n_points
            if pos + size > len(buf):
                raise InvalidDataError(f"{where}: truncated WKB")
            xy = np.frombuffer(buf, dtype=endian + "f8", count=dims * n_points, offset=pos)
            rings.append(xy.reshape(n_points, dims)[:, :2].astype(np.float64))
            pos += size
    except struct.error:
        raise InvalidDataError(f"{where}: truncated WKB") from None
    return rings, pos


def _read_header(buf: bytes, pos: int, where: str) -> tuple[str, int, int, int]:
    """``(endian, base type, dims, pos)`` of the WKB geometry at ``pos`` (ISO and EWKB
    Z/M flags; an EWKB SRID is skipped)."""
    if pos + 5 > len(buf) or buf[pos] not in (0, 1):
        raise InvalidDataError(f"{where}: not WKB")
    endian = "<" if buf[pos] == 1 else ">"
    (code,) = struct.unpack_from(endian + "I", buf, pos + 1)
    pos += 5
    dims = 2
    if code & 0x80000000:  # EWKB Z
        dims += 1
    if code & 0x40000000:  # EWKB M
        dims += 1
    if code & 0x20000000:  # EWKB SRID
        pos += 4
    code &= 0x0FFFFFFF
    iso, base = divmod(code, 1000)
    dims += {0: 0, 1: 1, 2: 1, 3: 2}.get(iso, 0)
    if iso > 3:
        base = -1
    return endian, base, dims, pos


def read_wkb_polygons(buf: bytes, *, where: str = "geometry"
                      ) -> tuple[str, list[list[np.ndarray]]]:
    """Decode one WKB Polygon or MultiPolygon (2-D; Z and M coordinates are dropped).

    Returns
    -------
    kind : {"Polygon", "MultiPolygon"}
    polygons : list of list of (m, 2) arrays
        The polygons (one for a Polygon), each a list of rings (the exterior first).

    Raises
    ------
    InvalidDataError
        Not WKB, truncated, or another geometry type (the message names ``where``).
    """
    buf = bytes(buf)
    endian, base, dims, pos = _read_header(buf, 0, where)
    if base == _WKB_POLYGON:
        rings, _ = _read_ring_list(buf, pos, endian, dims, where)
        return "Polygon", [rings]
    if base == _WKB_MULTIPOLYGON:
        try:
            (n,) = struct.unpack_from(endian + "I", buf, pos)
        except struct.error:
            raise InvalidDataError(f"{where}: truncated WKB") from None
        pos += 4
        polygons = []
        for _ in range(n):
            e, b, d, pos = _read_header(buf, pos, where)
            if b != _WKB_POLYGON:
                raise InvalidDataError(f"{where}: a MultiPolygon holds a non-polygon")
            rings, pos = _read_ring_list(buf, pos, e, d, where)
            polygons.append(rings)
        return "MultiPolygon", polygons
    raise InvalidDataError(f"{where}: WKB geometry type {base} is not a Polygon or "
                           "MultiPolygon")


def crs_projjson(crs: str | None) -> dict[str, Any] | None:
    """The PROJJSON object of ``crs`` for GeoParquet's ``crs`` field.

    ``"EPSG:4326"`` (any case): :data:`EPSG_4326_PROJJSON`; another name: rasterio's
    PROJJSON when rasterio is installed (the ``gis`` extra); ``None`` (an unknown CRS)
    otherwise.
    """
    if crs is None:
        return None
    if str(crs).strip().upper() == "EPSG:4326":
        return EPSG_4326_PROJJSON
    try:
        from rasterio.crs import CRS
    except ImportError:
        return None
    try:
        return CRS.from_user_input(crs).to_dict(projjson=True)
    except Exception:  # noqa: BLE001 -- an unknown name: the CRS is unknown
        return None


def geo_metadata(bbox: Sequence[float] | None, crs: str | None) -> dict[str, Any]:
    """The GeoParquet 1.1 ``"geo"`` file metadata of ``distribution.parquet``."""
    column: dict[str, Any] = {"encoding": "WKB", "geometry_types": ["Polygon"],
                              "crs": crs_projjson(crs), "orientation": "counterclockwise",
                              "edges": "planar"}
    if bbox is not None:
        column["bbox"] = [float(v) for v in bbox]
    return {"version": GEOPARQUET_VERSION, "primary_column": "geometry",
            "columns": {"geometry": column}}


def write_geoparquet(path: str | Path, values: np.ndarray, grid: Grid, *,
                     blocks: tuple[np.ndarray, ...] | None = None,
                     crs: str | None = None) -> bool:
    """Write ``distribution.parquet`` (GeoParquet 1.1; see the module docstring).

    Parameters
    ----------
    path : str or Path
    values : (Delta, Delta) array
        The released distribution (``[row, col]``, row 0 at the southern edge).
    grid : Grid
        The public grid.
    blocks : tuple of arrays, optional
        :func:`~privot.heatmaps.outputs.cell_blocks` of ``values`` (computed if absent).
    crs : str, optional
        The grid's CRS (``"EPSG:4326"`` for longitude/latitude bounds), or None.

    Returns
    -------
    bool
        False, writing nothing, when pyarrow is not installed (``pip install
        'privot[datasets]'``).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    from privot.heatmaps.blocks import block_geometry, cell_blocks

    row, col, side, value = cell_blocks(values) if blocks is None else blocks
    xa, ya, xb, yb = block_geometry(grid, row, col, side)
    data, itemsize = rectangles_wkb(xa, ya, xb, yb)
    k = int(row.size)
    offsets = np.arange(k + 1, dtype=np.int32) * np.int32(itemsize)
    geometry = pa.Array.from_buffers(pa.binary(), k, [None, pa.py_buffer(offsets),
                                                      pa.py_buffer(data)])
    columns = {"row": row, "col": col, "side": side, "x": (xa + xb) / 2,
               "y": (ya + yb) / 2, "x_min": xa, "y_min": ya, "x_max": xb, "y_max": yb,
               "value": value, "mass": value * side.astype(np.float64) ** 2}
    # from the numpy buffers: pa.array(ndarray) would import pandas (a heatmap release
    # loads no pandas; tests/test_import_footprint.py)
    arrays = [_from_numpy(np.asarray(v, dtype=np.int64 if n in ("row", "col", "side")
                                     else np.float64), pa) for n, v in columns.items()]
    bbox = None if k == 0 else (float(xa.min()), float(ya.min()), float(xb.max()),
                                float(yb.max()))
    meta = {b"geo": json.dumps(geo_metadata(bbox, crs), separators=(",", ":")).encode()}
    schema = pa.schema([pa.field(n, a.type) for n, a in zip(columns, arrays, strict=True)]
                       + [pa.field("geometry", pa.binary())], metadata=meta)
    table = pa.Table.from_arrays([*arrays, geometry], schema=schema)
    pq.write_table(table, str(path), **PARQUET_OPTIONS)
    return True


def _from_numpy(values: np.ndarray, pa: Any) -> Any:
    """A pyarrow array over ``values``' bytes (int64 or float64, no nulls), without the
    conversion path that imports pandas."""
    values = np.ascontiguousarray(values)
    kind = pa.int64() if values.dtype == np.int64 else pa.float64()
    return pa.Array.from_buffers(kind, int(values.size), [None, pa.py_buffer(values)])
