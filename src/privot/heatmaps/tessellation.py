r"""A public tessellation: the released heatmap's mass per tile (post-processing).

dp_mobility_report releases its maps on a public tessellation (districts, postcode
areas, hexagons). A privot heatmap is released on its grid -- the pyramid mechanism of
paper 002 needs the dyadic grid -- and this module carries the **released** distribution
over to the tiles of a public tessellation:

* :func:`read_tessellation` reads the tessellation (a GeoJSON FeatureCollection of
  Polygon / MultiPolygon features, or a GeoParquet file with WKB polygons) and refuses,
  with one line, a file that is missing, not valid GeoJSON/GeoParquet, empty, or holds
  other geometries;
* :func:`aggregate_to_tiles` computes each tile's mass;
* :func:`write_tiles_csv` / :func:`write_tiles_geojson` write ``tiles.csv`` (tile id,
  mass) and ``tiles.geojson`` (the tessellation's features with a ``"mass"`` property);
  :meth:`HeatmapResult.save(..., tessellation=...)
  <privot.heatmaps.result.HeatmapResult.save>` and ``privot heatmap --tessellation FILE``
  write them.

The rule: exact area weighting
------------------------------
A released cell's mass is spread uniformly over the cell (the release is a histogram on
the grid), so a tile receives, of every cell, the cell's mass times the **fraction of the
cell's area inside the tile**:

.. math:: m(T) = \sum_{c} m(c)\, |T \cap c| / |c|.

The area ``|T ∩ c|`` is exact (up to rounding): by Green's theorem the area of a ring's
interior inside an axis-aligned rectangle ``[x_0, x_1] x [y_0, y_1]`` is
``-∮ (clamp(y, y_0, y_1) - y_0) 1[x_0 <= x <= x_1] dx`` along the ring, an integral of a
piecewise-linear function on each edge, summed in closed form -- the area Sutherland-
Hodgman clipping of the ring to the rectangle would give, computed for all cells and
edges at once with numpy. A polygon's area is its exterior ring's minus its holes'
(each ring's orientation is ignored), a MultiPolygon's the sum of its polygons'. The
release is piecewise constant on the uniform dyadic blocks of
:func:`~privot.heatmaps.outputs.cell_blocks` (a pyramid release at Delta = 4096 is a
few hundred blocks), so the sum runs over blocks, not cells.

Why not the centre rule (a cell belongs to the tile holding its centre, the even-odd
test of :class:`~privot.barycenters.regions.PolygonRegion`): it moves a cell's whole
mass across a tile border that cuts the cell, an error of up to one cell's mass per
border cell, which is large at coarse resolutions and for small tiles; the area rule
has no such error, is linear in the release, and gives the same masses on tiles made of
whole cells (tested: four quadrant tiles give the sums of their cells).

Tiles should not overlap (a tessellation): overlapping tiles both count the shared
area. ``mass_outside_tessellation`` is the mass of the cells' parts inside no tile
(each cell's covered area is capped at the cell's area, so it is exact for a
tessellation and never negative).

Coordinates: the tessellation must be in the grid's coordinates (for GeoJSON, RFC 7946:
longitude, latitude, as privot's geographic ``--bounds``); a tessellation whose
bounding box does not meet the grid's bounds is refused (:func:`check_overlap`).

Privacy
-------
No release here. The tessellation is a **public** parameter (never derived from the
data): its file name and the SHA-256 of its bytes go to ``release.json``
(:meth:`Tessellation.describe`). Tile masses, ``tiles.geojson`` and
``mass_outside_tessellation`` are functions of the released distribution, the public
grid and the public tessellation (post-processing): publishable.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privot.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:
    from privot.grid import Grid

__all__ = ["AREA_RULE", "TileMasses", "Tessellation", "aggregate_to_tiles",
           "check_overlap", "polygon_area_in_boxes", "read_tessellation",
           "ring_area_in_boxes", "write_tiles_csv", "write_tiles_geojson"]

#: The rule, as ``release.json`` states it.
AREA_RULE = ("area-weighted: each tile gets, of every released cell, the cell's mass "
             "times the fraction of the cell's area inside the tile (exact "
             "polygon-rectangle intersection)")
#: Cells x edges handled at once (bounds the temporary arrays to a few tens of MB).
_CHUNK = 1 << 18


# -- the tessellation ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Tessellation:
    """A public tessellation: polygon tiles with ids (read by :func:`read_tessellation`).

    Attributes
    ----------
    ids : tuple
        One id per tile (unique): the id property's values, or the feature indices.
    polygons : tuple
        Per tile, its polygons; each polygon a tuple of ``(m, 2)`` rings (exterior first,
        then holes), in the grid's coordinates.
    features : tuple of dict
        Per tile, a GeoJSON Feature (its geometry and properties) for ``tiles.geojson``.
    name : str or None
        The file's name (public).
    sha256 : str or None
        SHA-256 of the file's bytes (public: which tessellation shaped the output).
    id_source : str
        Where the ids come from: ``"property NAME"``, ``"feature id"`` or ``"index"``.
    file_format : {"geojson", "geoparquet"}
    """

    ids: tuple[Any, ...]
    polygons: tuple[tuple[tuple[np.ndarray, ...], ...], ...]
    features: tuple[dict[str, Any], ...]
    name: str | None
    sha256: str | None
    id_source: str
    file_format: str

    def __repr__(self) -> str:
        return f"Tessellation({self.name!r}, {len(self.ids)} tiles, ids from {self.id_source})"

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(x_min, x_max, y_min, y_max)`` of every vertex (the grid's order)."""
        xy = np.concatenate([r for tile in self.polygons for poly in tile for r in poly])
        return (float(xy[:, 0].min()), float(xy[:, 0].max()), float(xy[:, 1].min()),
                float(xy[:, 1].max()))

    def describe(self) -> dict[str, Any]:
        """The public record for ``release.json``: file name, SHA-256, format, number
        of tiles, where the ids come from and the aggregation rule."""
        return {"file": self.name, "sha256": self.sha256, "format": self.file_format,
                "n_tiles": len(self.ids), "ids": self.id_source, "rule": AREA_RULE}


def _refuse(name: str, value: object, why: str) -> InvalidParameterError:
    return InvalidParameterError(
        name, value, why,
        message=f"{name} {value}: {why}; a tessellation is a GeoJSON FeatureCollection of "
                "Polygon/MultiPolygon features or a GeoParquet file of WKB polygons")


def _ring(coords: Any, where: str) -> np.ndarray:
    try:
        ring = np.asarray(coords, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{where}: a ring is not a list of [x, y] positions") from None
    if ring.ndim != 2 or ring.shape[1] < 2:
        raise InvalidDataError(f"{where}: a ring is not a list of [x, y] positions")
    ring = ring[:, :2]
    if not np.isfinite(ring).all():
        raise InvalidDataError(f"{where}: a ring has a non-finite coordinate")
    if ring.shape[0] >= 2 and np.array_equal(ring[0], ring[-1]):
        ring = ring[:-1]  # closed rings: the closing edge is implied
    if ring.shape[0] < 3:
        raise InvalidDataError(f"{where}: a ring has fewer than 3 distinct positions")
    ring = np.ascontiguousarray(ring)
    ring.setflags(write=False)
    return ring


def _polygon(rings: Any, where: str) -> tuple[np.ndarray, ...]:
    if not isinstance(rings, list | tuple) or len(rings) == 0:
        raise InvalidDataError(f"{where}: an empty polygon")
    return tuple(_ring(r, where) for r in rings)


def _geojson_polygons(geometry: Any, where: str) -> tuple[tuple[np.ndarray, ...], ...]:
    if not isinstance(geometry, Mapping):
        raise InvalidDataError(f"{where} has no geometry (null)")
    kind = geometry.get("type")
    coords = geometry.get("coordinates")
    if kind == "Polygon":
        return (_polygon(coords, where),)
    if kind == "MultiPolygon":
        if not isinstance(coords, list) or len(coords) == 0:
            raise InvalidDataError(f"{where}: an empty MultiPolygon")
        return tuple(_polygon(p, where) for p in coords)
    raise InvalidDataError(f"{where} has a {kind} geometry, not a Polygon or MultiPolygon")


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | bool | int) or (
        isinstance(v, float) and math.isfinite(v))


def _ids(properties: Sequence[Mapping[str, Any]], feature_ids: Sequence[Any] | None,
         id_property: str | None) -> tuple[tuple[Any, ...], str]:
    n = len(properties)
    if id_property is not None:
        ids = []
        for i, props in enumerate(properties):
            v = props.get(id_property)
            if v is None or not _scalar(v):
                raise InvalidDataError(f"feature {i} has no scalar property {id_property!r} "
                                       "(the id property)")
            ids.append(v)
        source = f"property {id_property}"
    elif all(_scalar(p.get("id")) and p.get("id") is not None for p in properties):
        ids, source = [p["id"] for p in properties], "property id"
    elif feature_ids is not None and all(_scalar(v) and v is not None for v in feature_ids):
        ids, source = list(feature_ids), "feature id"
    else:
        ids, source = list(range(n)), "index"
    seen: dict[str, int] = {}
    for i, v in enumerate(ids):
        key = str(v)
        if key in seen:
            raise InvalidDataError(f"features {seen[key]} and {i} have the same id {v!r} "
                                   f"(ids from {source}: they must be unique)")
        seen[key] = i
    return tuple(ids), source


def _read_geojson(data: bytes, id_property: str | None) -> tuple[tuple, tuple, tuple, str]:
    def refuse_constant(name: str) -> None:
        # JSON has no NaN/Infinity; tiles.geojson is written strictly (allow_nan=False),
        # so such a value is refused now, before anything is written, not midway
        raise ValueError(name)

    try:
        obj = json.loads(data.decode("utf-8-sig"), parse_constant=refuse_constant)
    except (UnicodeDecodeError, ValueError):
        raise InvalidDataError("not valid GeoJSON (not JSON: NaN and Infinity are not "
                               "JSON) nor GeoParquet") from None
    if not isinstance(obj, Mapping) or obj.get("type") != "FeatureCollection":
        kind = obj.get("type") if isinstance(obj, Mapping) else type(obj).__name__
        raise InvalidDataError(f"not a GeoJSON FeatureCollection (type {kind!r})")
    feats = obj.get("features")
    if not isinstance(feats, list):
        raise InvalidDataError("a FeatureCollection without a list of features")
    if not feats:
        raise InvalidDataError("an empty FeatureCollection (no tile)")
    polygons, properties, feature_ids = [], [], []
    for i, f in enumerate(feats):
        if not isinstance(f, Mapping) or f.get("type") != "Feature":
            raise InvalidDataError(f"feature {i} is not a GeoJSON Feature")
        polygons.append(_geojson_polygons(f.get("geometry"), f"feature {i}"))
        props = f.get("properties")
        properties.append(dict(props) if isinstance(props, Mapping) else {})
        feature_ids.append(f.get("id"))
    ids, source = _ids(properties, feature_ids, id_property)
    features = tuple({"type": "Feature", **({"id": f["id"]} if "id" in f else {}),
                      "geometry": f["geometry"], "properties": p}
                     for f, p in zip(feats, properties, strict=True))
    return ids, tuple(polygons), features, source


def _read_geoparquet(data: bytes, id_property: str | None) -> tuple[tuple, tuple, tuple, str]:
    from privot.heatmaps.geoparquet import read_wkb_polygons

    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidDataError("a GeoParquet tessellation needs pyarrow (pip install "
                               "'privot[datasets]'); or give it as GeoJSON") from None
    try:
        table = pq.read_table(pa.BufferReader(data))  # the bytes already hashed: read once
    except Exception as exc:  # noqa: BLE001 -- pyarrow's errors: an unreadable file
        raise InvalidDataError(f"not a readable Parquet file "
                               f"({' '.join(str(exc).splitlines())})") from None
    meta = table.schema.metadata or {}
    try:
        geo = json.loads(meta[b"geo"])
        primary = geo["primary_column"]
        encoding = geo["columns"][primary]["encoding"]
    except (KeyError, TypeError, ValueError):
        raise InvalidDataError("a Parquet file without GeoParquet 'geo' metadata "
                               "(primary_column, its encoding)") from None
    if str(encoding).upper() != "WKB" or primary not in table.column_names:
        raise InvalidDataError(f"GeoParquet geometry column {primary!r} with encoding "
                               f"{encoding!r}: only WKB is read")
    if table.num_rows == 0:
        raise InvalidDataError("an empty GeoParquet file (no tile)")
    polygons, features = [], []
    geoms = table.column(primary).to_pylist()
    others = [c for c in table.column_names if c != primary]
    rows = table.select(others).to_pylist() if others else [{}] * table.num_rows
    properties = [{k: v for k, v in r.items() if _scalar(v)} for r in rows]
    for i, g in enumerate(geoms):
        if g is None:
            raise InvalidDataError(f"row {i} has no geometry (null)")
        kind, polys = read_wkb_polygons(g, where=f"row {i}")
        tile = tuple(_polygon([r for r in p], f"row {i}") for p in polys)
        polygons.append(tile)
        coords = [[r.tolist() for r in p] for p in polys]
        features.append({"type": "Feature",
                         "geometry": {"type": kind,
                                      "coordinates": coords[0] if kind == "Polygon"
                                      else coords},
                         "properties": properties[i]})
    ids, source = _ids(properties, None, id_property)
    return ids, tuple(polygons), tuple(features), source


def read_tessellation(path: str | Path, *, id_property: str | None = None,
                      name: str = "tessellation") -> Tessellation:
    """Read a public tessellation file.

    Parameters
    ----------
    path : str or Path
        A GeoJSON FeatureCollection of Polygon / MultiPolygon features (RFC 7946:
        ``[x, y]`` = ``[longitude, latitude]``), or a GeoParquet file (told apart by its
        ``PAR1`` magic bytes) whose primary geometry column holds WKB Polygons /
        MultiPolygons (reading it needs pyarrow).
    id_property : str, optional
        The property holding each tile's id (every feature must have it). Default:
        the property ``"id"`` when every feature has one, else the GeoJSON Feature's
        ``"id"`` member when every feature has one, else the feature's index
        (0-based). Ids must be unique.
    name : str, default "tessellation"
        The parameter's name in messages (the CLI says ``--tessellation``).

    Returns
    -------
    Tessellation

    Raises
    ------
    InvalidParameterError
        A missing file, a file that is not valid GeoJSON/GeoParquet, an empty one, a
        non-polygon (or null, or empty) geometry, a missing or repeated id: one line.
    """
    p = Path(path)
    if not p.is_file():
        raise _refuse(name, p, "no such file")
    data = p.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    try:
        if data[:4] == b"PAR1":
            ids, polygons, features, source = _read_geoparquet(data, id_property)
            fmt = "geoparquet"
        else:
            ids, polygons, features, source = _read_geojson(data, id_property)
            fmt = "geojson"
    except InvalidDataError as exc:
        raise _refuse(name, p, " ".join(str(exc).splitlines())) from None
    return Tessellation(ids=ids, polygons=polygons, features=features, name=p.name,
                        sha256=digest, id_source=source, file_format=fmt)


def check_overlap(tessellation: Tessellation, grid: Grid, *, name: str = "tessellation"
                  ) -> None:
    """Refuse a tessellation whose bounding box does not meet the grid's bounds (a
    tessellation in other coordinates, such as projected metres for lon/lat bounds).
    Public values only."""
    tx0, tx1, ty0, ty1 = tessellation.bounds
    gx0, gx1, gy0, gy1 = _grid_extent(grid)
    if tx1 <= gx0 or tx0 >= gx1 or ty1 <= gy0 or ty0 >= gy1:
        raise InvalidParameterError(
            name, tessellation.name, "tiles that meet the grid's bounds",
            message=f"{name} {tessellation.name}: its tiles (x {tx0:g}..{tx1:g}, y "
                    f"{ty0:g}..{ty1:g}) do not meet the grid's bounds (x {gx0:g}..{gx1:g}, "
                    f"y {gy0:g}..{gy1:g}); are they in the same coordinates (for GeoJSON, "
                    "longitude and latitude)?")


def _grid_extent(grid: Grid) -> tuple[float, float, float, float]:
    x0, _, y0, _ = grid.bounds
    return (x0, x0 + grid.resolution * grid.cell_width, y0,
            y0 + grid.resolution * grid.cell_height)


# -- exact areas --------------------------------------------------------------------------


def ring_area_in_boxes(ring: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Signed area of a ring's interior inside each axis-aligned box.

    Parameters
    ----------
    ring : (m, 2) array
        The ring's vertices (closing edge implied; a repeated first vertex is harmless).
    boxes : (k, 4) array
        ``x_min, y_min, x_max, y_max`` of each box.

    Returns
    -------
    (k,) array
        ``∫_box w``, ``w`` the ring's winding number: the area of the ring's interior
        inside the box, positive for a counter-clockwise ring, negative for a clockwise
        one (exact up to rounding: Green's theorem on each edge, see the module notes).
    """
    ring = np.asarray(ring, dtype=np.float64)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    xa, ya = ring[:, 0], ring[:, 1]
    xb, yb = np.roll(xa, -1), np.roll(ya, -1)
    keep = xa != xb  # vertical edges: dx = 0, no contribution
    xa, ya, xb, yb = xa[keep], ya[keep], xb[keep], yb[keep]
    out = np.zeros(b.shape[0])
    if xa.size == 0 or b.shape[0] == 0:
        return out
    sign = np.sign(xb - xa)
    left, right = np.minimum(xa, xb), np.maximum(xa, xb)
    slope = (yb - ya) / (xb - xa)
    flat = slope == 0
    safe = np.where(flat, 1.0, slope)
    step = max(1, _CHUNK // xa.size)
    for start in range(0, b.shape[0], step):
        bx0, by0, bx1, by1 = (b[start:start + step, j][:, None] for j in range(4))
        lo, hi = np.maximum(left, bx0), np.minimum(right, bx1)
        valid = hi > lo

        def h(x: np.ndarray, y0: np.ndarray = by0, y1: np.ndarray = by1) -> np.ndarray:
            # the edge's height above the box's floor, clamped to the box
            return np.clip(ya + (x - xa) * slope, y0, y1) - y0

        t0 = np.where(flat, lo, xa + (by0 - ya) / safe)
        t1 = np.where(flat, lo, xa + (by1 - ya) / safe)
        c0, c1 = np.clip(t0, lo, hi), np.clip(t1, lo, hi)
        m0, m1 = np.minimum(c0, c1), np.maximum(c0, c1)
        h_lo, h0, h1, h_hi = h(lo), h(m0), h(m1), h(hi)
        integral = ((h_lo + h0) * (m0 - lo) + (h0 + h1) * (m1 - m0)
                    + (h1 + h_hi) * (hi - m1)) / 2
        out[start:start + step] = -(sign * np.where(valid, integral, 0.0)).sum(axis=1)
    return out


def polygon_area_in_boxes(polygons: Sequence[Sequence[np.ndarray]], boxes: np.ndarray
                          ) -> np.ndarray:
    """Area of a (multi)polygon inside each box: per polygon, its exterior ring's area
    minus its holes' (orientation ignored), summed over the polygons, never negative."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    total = np.zeros(b.shape[0])
    for rings in polygons:
        area = np.abs(ring_area_in_boxes(rings[0], b))
        for hole in rings[1:]:
            area -= np.abs(ring_area_in_boxes(hole, b))
        total += np.maximum(area, 0.0)
    return total


# -- the tile masses ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TileMasses:
    """The released mass of each tile (:func:`aggregate_to_tiles`). Publishable.

    Attributes
    ----------
    ids : tuple
        The tiles' ids (the tessellation's order).
    mass : (n_tiles,) array
        Each tile's mass.
    mass_outside : float
        The mass inside no tile (``mass_outside_tessellation``).
    rule : str
        :data:`AREA_RULE`.
    """

    ids: tuple[Any, ...]
    mass: np.ndarray
    mass_outside: float
    rule: str = AREA_RULE

    def __repr__(self) -> str:
        return (f"TileMasses({len(self.ids)} tiles, total {float(self.mass.sum()):.4g}, "
                f"outside {self.mass_outside:.4g})")

    def to_dict(self) -> dict[str, Any]:
        """``{"tiles": {id: mass}, "mass_outside_tessellation": ..., "rule": ...}``."""
        return {"tiles": {str(i): float(m) for i, m in zip(self.ids, self.mass, strict=True)},
                "mass_outside_tessellation": self.mass_outside, "rule": self.rule}


def aggregate_to_tiles(result: Any, tessellation: Tessellation | str | Path, *,
                       id_property: str | None = None, blocks: tuple | None = None
                       ) -> TileMasses:
    """Each tile's share of a released heatmap distribution (post-processing).

    Parameters
    ----------
    result : HeatmapResult
        The release (anything with ``grid`` and ``distribution``).
    tessellation : Tessellation or path
        The public tiles (a path is read by :func:`read_tessellation`).
    id_property : str, optional
        With a path: the id property (:func:`read_tessellation`).
    blocks : tuple, optional
        :func:`~privot.heatmaps.outputs.cell_blocks` of the distribution (computed if
        absent).

    Returns
    -------
    TileMasses
        ``mass[t] = sum_c m(c) |T_t ∩ c| / |c|`` (exact areas, see the module notes)
        and the mass inside no tile.

    Raises
    ------
    InvalidParameterError
        A refused tessellation file, or tiles that do not meet the grid's bounds.
    """
    from privot.heatmaps.blocks import block_geometry, cell_blocks

    if not isinstance(tessellation, Tessellation):
        tessellation = read_tessellation(tessellation, id_property=id_property)
    elif id_property is not None:
        raise InvalidParameterError("id_property", id_property,
                                    "only with a tessellation file (a Tessellation has ids)")
    grid = result.grid
    check_overlap(tessellation, grid)
    row, col, side, value = cell_blocks(result.distribution) if blocks is None else blocks
    xa, ya, xb, yb = block_geometry(grid, row, col, side)
    boxes = np.column_stack([xa, ya, xb, yb]).astype(np.float64)
    block_area = (xb - xa) * (yb - ya)
    block_mass = value * side.astype(np.float64) ** 2
    covered = np.zeros(boxes.shape[0])
    masses = np.zeros(len(tessellation))
    for t, polys in enumerate(tessellation.polygons):
        xy = np.concatenate([r for p in polys for r in p])
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        cand = np.flatnonzero((xb > lo[0]) & (xa < hi[0]) & (yb > lo[1]) & (ya < hi[1]))
        if cand.size == 0:
            continue
        area = np.minimum(polygon_area_in_boxes(polys, boxes[cand]), block_area[cand])
        covered[cand] += area
        masses[t] = float(np.sum(block_mass[cand] * area / block_area[cand]))
    inside = np.minimum(covered, block_area) / np.where(block_area > 0, block_area, 1.0)
    outside = float(np.sum(block_mass * (1.0 - inside)))
    return TileMasses(ids=tessellation.ids, mass=masses, mass_outside=outside)


# -- the files ----------------------------------------------------------------------------


def write_tiles_csv(path: str | Path, tiles: TileMasses) -> int:
    """``tiles.csv``: a header ``tile_id,mass``, then one line per tile (the
    tessellation's order). Returns the number of tiles."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["tile_id", "mass"])
        for i, m in zip(tiles.ids, tiles.mass, strict=True):
            out.writerow([i, format(float(m), ".12g")])
    return len(tiles.ids)


def write_tiles_geojson(path: str | Path, tessellation: Tessellation, tiles: TileMasses
                        ) -> int:
    """``tiles.geojson``: the tessellation's features (geometry and properties as read)
    with a ``"mass"`` property (replacing one of that name). Returns the number of
    features."""
    lines = []
    for feat, m in zip(tessellation.features, tiles.mass, strict=True):
        f = {**feat, "properties": {**feat["properties"], "mass": float(m)}}
        lines.append(json.dumps(f, separators=(",", ":"), allow_nan=False,
                                ensure_ascii=False))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"type":"FeatureCollection","features":[\n')
        fh.write(",\n".join(lines))
        fh.write("\n]}\n")
    return len(lines)
