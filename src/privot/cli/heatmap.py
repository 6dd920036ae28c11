"""``privot heatmap INPUT``: a user-level epsilon-DP heatmap of a table of points.

Reads a CSV/TSV/Parquet table (one row per point: a user id and two coordinates;
``--user-column NAME --columns X,Y``, the column convention of every command,
:func:`privot.cli._common.add_column_arguments`; the old ``--x-column``/``--y-column``
are still accepted), aggregates it on the chosen engine (DuckDB, embedded; or Spark),
releases the private distribution with Algorithms 1 and 2 of paper 002 (or a baseline)
and writes, into the output folder (:mod:`privot.cli._output`):

publishable (the public parameters and the noisy release only)
    * ``distribution.npy`` / ``distribution.csv`` -- the private distribution
      (Delta x Delta, sums to 1); from Delta = 2048 on ``distribution.npz``
      (compressed) and no dense CSV;
    * ``distribution_cells.csv`` -- the long table: one row per maximal uniform dyadic
      block of non-zero cells (row, col, side, centre x/y, bounds, value, mass; zero
      cells left out); ``distribution.geojson`` -- the same blocks as polygons (RFC 7946,
      lon/lat); ``distribution.tif`` -- a north-up GeoTIFF (with rasterio, the ``gis``
      extra; skipped with a note without it); ``distribution.parquet`` -- the same blocks
      as GeoParquet 1.1 (WKB polygons; with pyarrow, skipped with a note without it);
    * with ``--tessellation FILE`` (a public GeoJSON/GeoParquet of polygon tiles):
      ``tiles.csv`` (tile id, mass) and ``tiles.geojson`` (the tiles with a mass
      property) -- the released distribution carried over to the tiles by exact area
      weighting (``privot.heatmaps.tessellation``; ``docs/heatmap_tessellations.md``);
    * ``heatmap.npy`` (``.npz`` from Delta = 2048) -- its Gaussian-filtered heatmap;
      ``heatmap.png`` -- a picture (``--scale``, default sqrt);
    * ``release.json`` -- what was released, its guarantee, parameters, file layout.

curator-only (exact statistics of the raw data: never publish)
    * ``curator-report.json`` -- points read, dropped, users, timings, data warnings.

Orientation: arrays are ``[row, col]``, row 0 at the southern edge ``y_min`` (row along
y / latitude), col 0 at the western edge ``x_min`` (``docs/heatmaps_outputs.md``). The
files are written by :meth:`privot.heatmaps.HeatmapResult.save` (one code path).

Memory: a resolution whose dense arrays would exceed ``--max-memory`` (default half the
machine's RAM) is refused before the data is read (``privot.heatmaps.memory``).

Privacy
-------
Unit: one user (all of that user's rows). Relation: add/remove one user. Sensitivity:
every user's distribution has L1 mass 0 or 1, so each pyramid level has L1 sensitivity
1. Guarantee: pure ``--epsilon``-DP, split over the levels by basic composition
(``docs/privacy/heatmaps.md``). The grid comes from ``--bounds``/``--resolution`` only.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from privot.cli._common import (
    RELEASE_RELATIONS,
    add_aspect_argument,
    add_engine_arguments,
    add_epsilon_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_point_table_arguments,
    add_progress_arguments,
    add_renamed_argument,
    add_seed_argument,
    check_epsilon_arguments,
    check_plan_budget,
    engine_from_args,
    ledger_from_args,
    ledger_spender,
    ledger_summary,
    plan_from_args,
    planned_release,
    positive_float,
    progress_from_args,
    refuse_swapped_columns,
    rng_from_args,
    say_from_args,
    say_notes,
)
from privot.cli._output import OutputFolder, capture_data_warnings
from privot.errors import InvalidParameterError

__all__ = ["register"]

# Parsing imports neither numpy nor the library (a fast ``privot heatmap --help``): the
# handler imports them. The choices and defaults below repeat the library's
# (privot.heatmaps: METHODS, DEFAULT_W, DEFAULT_GAMMA, DEFAULT_SIGMA; privot.grid:
# ASPECTS, in privot.cli._common); tests/cli/test_cli_imports.py checks they agree.
#: ``--method``: private_heatmap's methods (the first, the paper's, is the default).
METHODS = ("pyramid", "laplace", "threshold")
#: ``--baseline``, the old hidden spelling of ``--method``: its values -> the method.
_METHODS = {"none": "pyramid", "laplace": "laplace", "threshold": "threshold"}

# privot.heatmaps.plot: SCALES, DEFAULT_SCALE (sqrt keeps 8% secondary hubs visible)
_SCALES = ("linear", "sqrt", "log")
_DEFAULT_SCALE = "sqrt"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "heatmap", help="user-level epsilon-DP heatmap of a table of points (paper 002)",
        description="Release a user-level epsilon-DP heatmap: each user's points inside the "
                    "public --bounds become that user's distribution over a Delta x Delta "
                    "grid; the sum is measured with the hierarchical Laplace mechanism and "
                    "reconstructed by the sparse-EMD linear program (Ghazi et al., "
                    "Differentially Private Heatmaps).",
        epilog="Publishable: distribution.npy, distribution.csv (Delta x Delta; row 0 is "
               "the southern edge y_min, col 0 the western edge x_min), "
               "distribution_cells.csv (long table of the non-zero cells, grouped in "
               "uniform dyadic blocks: row, col, side, centre x/y, bounds, value, mass), "
               "distribution.geojson (the same blocks as lon/lat polygons), "
               "distribution.tif (north-up GeoTIFF; needs rasterio: pip install "
               "'privot[gis]'), distribution.parquet (GeoParquet; needs pyarrow), "
               "heatmap.npy, heatmap.png, release.json; with --tessellation tiles.csv and "
               "tiles.geojson (mass per public tile); from "
               "--resolution 2048 on the dense arrays are .npz (compressed) and there is "
               "no dense distribution.csv (docs/heatmaps_outputs.md). Curator-only, never "
               "publish: "
               "curator-report.json (exact "
               "point and user counts, timings, data warnings). Points outside the bounds, "
               "and rows with a missing user id or a missing or non-numeric coordinate, are "
               "dropped and counted (curator-only); an input with no usable point inside "
               "the bounds is refused before anything is charged. Exit status: 0 on "
               "success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--bounds", type=positive_float, nargs=4, required=True,
                   metavar=("X_MIN", "X_MAX", "Y_MIN", "Y_MAX"),
                   help="public bounds; for geographic data x is the longitude and y the "
                        "latitude. Never taken from the data.")
    add_epsilon_arguments(p, epsilon_help="total budget (> 0)",
                          units="(the EMD between the release and the true distribution, "
                                "pyramid or laplace method: in cells x users, or in cells "
                                "with --min-users)")
    p.add_argument("--min-users", type=int, default=None, metavar="N",
                   help="with --target-error: a public lower bound on the number of users "
                        "(privot releases no count); the target is then the EMD in cells")
    p.add_argument("--resolution", type=int, default=256, metavar="DELTA",
                   help="grid side, a power of two (default: %(default)s); refused "
                        "before the data is read when its dense arrays (about 128 * "
                        "DELTA^2 bytes) exceed --max-memory")
    p.add_argument("--w", type=int, default=20,
                   help="cells kept per level by RECONSTRUCT (default: %(default)s)")
    p.add_argument("--gamma", type=positive_float, default=2 ** -0.5,
                   help="decay of the per-level budgets (default: 1/sqrt(2))")
    p.add_argument("--sigma", type=positive_float, default=2.0,
                   help="Gaussian filter width of the heatmap, in cells (default: %(default)s)")
    # --method: private_heatmap's name; --baseline (none = pyramid), the old spelling
    add_renamed_argument(p, "--method", "--baseline", dest="method", choices=METHODS,
                         default=METHODS[0], old_choices=_METHODS,
                         help="pyramid (the paper's Algorithms 1 and 2) or a baseline of "
                              "the paper's Sec. 4: laplace, threshold (default: "
                              "%(default)s)")
    p.add_argument("--threshold", type=positive_float, default=1.0, metavar="PERCENT",
                   help="--method threshold keeps the top PERCENT of cells (default: 1)")
    add_aspect_argument(p)
    p.add_argument("--scale", choices=_SCALES, default=_DEFAULT_SCALE,
                   help="colour scale of heatmap.png (default: %(default)s, which keeps "
                        "secondary hotspots visible)")
    p.add_argument("--tessellation", default=None, metavar="FILE",
                   help="a public tessellation (GeoJSON FeatureCollection of Polygon/"
                        "MultiPolygon features, or GeoParquet of WKB polygons) in the "
                        "coordinates of --bounds: also write tiles.csv and tiles.geojson, "
                        "each tile's share of the released distribution (exact area "
                        "weighting; post-processing, no extra budget)")
    p.add_argument("--tessellation-id", default=None, metavar="PROP",
                   help="the tile id property of --tessellation (default: 'id' when every "
                        "feature has one, else the GeoJSON feature id, else the feature "
                        "index)")
    p.add_argument("--max-memory", default=None, metavar="SIZE",
                   help="refuse a --resolution whose dense arrays need more memory than "
                        "SIZE, such as 16GB (default: half of this machine's RAM)")
    add_engine_arguments(p, "where the aggregation runs: duckdb (embedded; 'local' is "
                            "accepted as an alias) or spark")
    add_point_table_arguments(p)
    add_output_arguments(p, "privot-heatmap")
    add_seed_argument(p)
    add_progress_arguments(p, bar="a progress bar of the release's steps")
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


#: Every publishable file ``privot heatmap`` may write (privot.heatmaps.outputs).
PUBLISHABLE = ("distribution.npy", "distribution.npz", "distribution.csv",
               "distribution_cells.csv", "distribution.geojson", "distribution.tif",
               "distribution.parquet", "heatmap.npy", "heatmap.npz", "heatmap.png",
               "tiles.csv", "tiles.geojson", "release.json")


def _check_min_users(args: argparse.Namespace) -> None:
    """``--min-users``: an integer >= 1, only with ``--target-error`` (light)."""
    if args.min_users is None:
        return
    if args.target_error is None:
        raise InvalidParameterError("--min-users", args.min_users, "only with --target-error")
    if args.min_users < 1:
        raise InvalidParameterError("--min-users", args.min_users, "an integer >= 1")


def _tessellation(args: argparse.Namespace, grid: object) -> object:
    """``--tessellation``: the public tiles, read and checked (a missing or invalid file,
    no tile, a non-polygon, tiles away from --bounds: refused), or None. Public."""
    if args.tessellation is None:
        if args.tessellation_id is not None:
            raise InvalidParameterError("--tessellation-id", args.tessellation_id,
                                        "only with --tessellation")
        return None
    from privot.heatmaps.tessellation import check_overlap, read_tessellation

    tess = read_tessellation(args.tessellation, id_property=args.tessellation_id,
                             name="--tessellation")
    check_overlap(tess, grid, name="--tessellation")
    return tess


def _plan(args: argparse.Namespace, params: object) -> tuple[object, object]:
    """``(plan, state)`` of ``--target-error`` (``(None, None)`` without it): the smallest
    epsilon whose :func:`~privot.heatmaps.heatmap_error` meets the target. Public."""
    if args.target_error is None:
        return None, None
    from privot.heatmaps.error import DEFAULT_CONFIDENCE, heatmap_error

    conf = args.error_confidence or DEFAULT_CONFIDENCE

    def state(eps: float) -> object:
        return heatmap_error(replace(params, epsilon=eps), n_users=args.min_users,
                             confidence=conf)

    return plan_from_args(args, state, alternative="--method pyramid or laplace"), state


def _run(args: argparse.Namespace) -> int:
    from privot.grid import Grid

    # the light checks first: a refused epsilon or grid costs numpy's import only
    epsilon = check_epsilon_arguments(args)  # None: planned from --target-error below
    _check_min_users(args)
    grid = Grid(tuple(args.bounds), args.resolution, aspect=args.aspect)
    from privot._usable import check_usable
    from privot.heatmaps import HeatmapParams, aggregate_user_cells, private_heatmap
    from privot.heatmaps.memory import check_memory, parse_size
    from privot.privacy.events import PureEvent

    max_memory = None if args.max_memory is None else parse_size(args.max_memory,
                                                                 "--max-memory")
    # before the data is read: the dense Delta x Delta arrays must fit
    check_memory(grid.resolution, max_memory=max_memory, name="--resolution",
                 limit_name="--max-memory")
    # every public choice checked now, before the data is read (named by its flag)
    try:
        release_params = HeatmapParams(grid=grid, epsilon=epsilon or 1.0, w=args.w,
                                       gamma=args.gamma,
                                       sigma=args.sigma, method=args.method,
                                       threshold=args.threshold)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"--{exc.name}", exc.value, exc.allowed) from None
    tessellation = _tessellation(args, grid)  # public: read and checked before the data
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    out = OutputFolder(args.output, command="heatmap", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    method = args.method
    plan, state = _plan(args, release_params)  # --target-error: public parameters only
    if plan is not None:
        epsilon = plan.epsilon
        release_params = replace(release_params, epsilon=epsilon)
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    ledger = ledger_from_args(args, **RELEASE_RELATIONS["heatmap"],
                              planned=PureEvent(epsilon, method))
    check_plan_budget(plan, state, ledger, args, lambda e: PureEvent(e, method),
                      **RELEASE_RELATIONS["heatmap"])
    engine = engine_from_args(args)
    rng = rng_from_args(args)

    with capture_data_warnings("heatmap") as data_warnings:
        start = time.perf_counter()
        sums = aggregate_user_cells(args.input, grid=grid, user_column=args.user_column,
                                    x_column=args.columns[0], y_column=args.columns[1],
                                    engine=engine, sep=args.sep, names=names)
        t_aggregate = time.perf_counter() - start
        refuse_swapped_columns(args, aggregate_user_cells, sums, grid=grid, engine=engine,
                               names=names)  # before any charge
        if ledger is not None:
            # private_heatmap's own refusal of an input with no usable point, made here
            # so that the whole-release charge below is never spent on it
            check_usable(n_rows=sums.n_points, n_unusable=0, n_outside=sums.n_outside,
                         what="the input", outside="outside the bounds or unusable (dropped)")
        params = {"epsilon": epsilon, "bounds": list(grid.bounds),
                  "resolution": grid.resolution, "aspect": args.aspect, "w": args.w,
                  "gamma": args.gamma, "sigma": args.sigma, "method": method,
                  "threshold": args.threshold, "engine": args.engine}
        with ledger_spender(ledger, args, capability="heatmap",
                            **RELEASE_RELATIONS["heatmap"], output=out.path,
                            event=PureEvent(epsilon, method), mechanism=method,
                            params=params) as acct:
            result = private_heatmap(sums, release_params, rng=rng, accountant=acct,
                                     max_memory=max_memory,
                                     progress=progress_from_args(args))

    # -- publishable (public parameters and the noisy release) and curator-only files:
    # one code path with the library's HeatmapResult.save
    out.open()
    written = result.save(out.path, scale=args.scale, release_extra={"engine": args.engine,
                                                             **planned_release(plan)},
                          curator={"seconds": {"aggregate": t_aggregate}},
                          data_warnings=data_warnings, tessellation=tessellation)
    out.record(written)

    say = say_from_args(args)
    rel = result.release
    levels = ", ".join(f"{k}: {v:.4g}" for k, v in rel.level_epsilons.items())
    say(f"privot heatmap: spent epsilon = {rel.epsilon:g} (pure DP, unit = user, "
          f"add/remove one user; per level {levels})"
          + ("" if rel.secure else "; SEEDED: not for publication"))
    say(out.listing())
    say_notes(args, written)
    if ledger is not None:
        say(ledger_summary(ledger))
    cur = result.diagnostics.curator_only
    say(f"privot heatmap: curator only (not private): {cur.n_points} points read, "
          f"{cur.n_outside} outside the bounds or unusable and dropped, {cur.n_users} "
          "users", file=sys.stderr)
    return 0

