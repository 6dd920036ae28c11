r"""The public grid in the engines' SQL: :func:`cell_sql`, and :class:`Grid` re-exported.

:class:`~privot.bounds.Grid` (a caller's rectangle mapped to a
:math:`\Delta\times\Delta` grid of cells) lives in :mod:`privot.bounds` beside
:class:`~privot.bounds.PublicBounds`; this module keeps its import path and holds the
grid's cell assignment written once as SQL (:data:`CELL_SQL`, :func:`cell_sql`), for the
engine steps of the capabilities that read user points over public cells (heatmaps and
sampling), and the check of their point columns.

Privacy
-------
No release here. The grid is public by assumption; the SQL assigns each row by a rule
reading that row alone (the float operations of :meth:`Grid.assign`).
"""

from __future__ import annotations

import math

from privot.bounds import ASPECTS, CellAssignment, Grid
from privot.engines.base import double_literal
from privot.errors import InvalidParameterError

__all__ = ["ASPECTS", "CELL_SQL", "DEFAULT_USER_COLUMN", "DEFAULT_X_COLUMN", "DEFAULT_Y_COLUMN",
           "EARTH_MEAN_RADIUS_M", "Grid", "CellAssignment", "cell_sql", "check_point_columns",
           "latlon_cell_metres"]

# -- the one column rule of a table of user points (heatmaps, sampling, the CLI) --------

#: The user-id column of a table of points, unless named (library, engines and CLI).
DEFAULT_USER_COLUMN = "user_id"
#: The x column (longitude for geographic data), unless named.
DEFAULT_X_COLUMN = "longitude"
#: The y column (latitude for geographic data), unless named.
DEFAULT_Y_COLUMN = "latitude"


# -- the same assignment in SQL, for the engine steps over a grid (heatmaps, sampling) --


#: The cell of a row (columns ``u``, ``x``, ``y``): the float64 operations of
#: :meth:`Grid.assign`; -1 for a row outside the bounds or unusable.
CELL_SQL = """CASE WHEN u IS NOT NULL AND x >= {x0} AND x < {x1} AND y >= {y0} AND y < {y1}
              THEN least(CAST(floor((y - {y0}) / {h}) AS BIGINT), {dm1}) * {d}
                   + least(CAST(floor((x - {x0}) / {w}) AS BIGINT), {dm1})
              ELSE -1 END"""


def cell_sql(grid: Grid) -> str:
    """:data:`CELL_SQL` with the constants of ``grid`` (exact doubles): the one cell
    assignment of every engine step over a grid (heatmaps, sampling)."""
    x0, x1, y0, y1 = (float(v) for v in grid.bounds)
    d = grid.resolution
    return CELL_SQL.format(
        x0=double_literal(x0), x1=double_literal(x1), y0=double_literal(y0),
        y1=double_literal(y1), w=double_literal(grid.cell_width),
        h=double_literal(grid.cell_height), d=int(d), dm1=int(d) - 1)


def check_point_columns(user_column: str, x_column: str, y_column: str) -> dict[str, str]:
    """``{"u": user_column, "x": x_column, "y": y_column}`` after checking the names."""
    cols = {"user_column": user_column, "x_column": x_column, "y_column": y_column}
    for name, value in cols.items():
        if not isinstance(value, str) or not value:
            raise InvalidParameterError(name, value, "a column name (non-empty str)")
    if len(set(cols.values())) != 3:
        raise InvalidParameterError("user_column/x_column/y_column", tuple(cols.values()),
                                    "three different columns")
    return {"u": user_column, "x": x_column, "y": y_column}


#: Mean Earth radius :math:`R_1 = (2a + b)/3` of the WGS84 ellipsoid, in metres.
EARTH_MEAN_RADIUS_M = 6_371_008.8


def latlon_cell_metres(grid: Grid) -> tuple[float, float]:
    r"""Cell width and height in metres of a longitude/latitude grid (equirectangular).

    With ``x`` = longitude and ``y`` = latitude in degrees, and :math:`\varphi_m` the
    latitude of the middle of the grid's extent,

    .. math::

        h = R\,\Delta\varphi, \qquad w = R \cos\varphi_m\,\Delta\lambda ,
        \qquad R = 6\,371\,008.8\ \mathrm{m}\ \text{(WGS84 mean radius)},

    with :math:`\Delta\varphi, \Delta\lambda` the cell's angular size in radians.

    Accuracy (local equirectangular approximation on a sphere): east-west lengths at
    latitude :math:`\varphi` are off by a factor
    :math:`\cos\varphi/\cos\varphi_m - 1 \approx -\tan\varphi_m(\varphi - \varphi_m)`,
    i.e. at most about 0.16% at the north/south edges of a 20 km box at 45 degrees
    (0.27% at 60 degrees, 0.05% at 15 degrees); the sphere itself, against the WGS84
    ellipsoid, is up to 0.56% short (north-south, at the equator) or 0.5% long (at the
    poles) and within 0.2% at mid-latitudes. Good for comparing heatmaps; not
    geodesy.

    Parameters
    ----------
    grid : Grid
        A grid whose bounds are ``(lon_min, lon_max, lat_min, lat_max)`` in degrees.

    Returns
    -------
    (width, height) : tuple of float
        Metres per cell along longitude and along latitude.

    Raises
    ------
    InvalidParameterError
        The grid's latitude extent leaves ``[-90, 90]`` or its longitude extent
        exceeds 360 degrees.
    """
    if not isinstance(grid, Grid):
        raise InvalidParameterError("grid", grid, "a privot.heatmaps.Grid")
    x0, _, y0, _ = grid.bounds
    lon_span = grid.cell_width * grid.resolution
    lat_span = grid.cell_height * grid.resolution
    if y0 < -90.0 or y0 + lat_span > 90.0:
        raise InvalidParameterError(
            "grid", grid.bounds,
            f"latitudes in [-90, 90]: the grid covers [{y0}, {y0 + lat_span}] (y is the "
            "latitude; aspect='square' extends the shorter side)")
    if lon_span > 360.0:
        raise InvalidParameterError("grid", grid.bounds,
                                    f"a longitude extent of at most 360 degrees, got {lon_span}")
    lat_mid = math.radians(y0 + 0.5 * lat_span)
    height = EARTH_MEAN_RADIUS_M * math.radians(grid.cell_height)
    width = EARTH_MEAN_RADIUS_M * math.cos(lat_mid) * math.radians(grid.cell_width)
    if not width > 0:
        raise InvalidParameterError("grid", grid.bounds,
                                    "a grid whose mid-latitude is not a pole")
    return width, height
