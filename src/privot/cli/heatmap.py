"""``privot heatmap INPUT``: a user-level epsilon-DP heatmap of a table of points.

Reads a CSV/TSV/Parquet table (one row per point: a user id and two coordinates),
aggregates it on the chosen engine (DuckDB, embedded; or Spark), releases the private
distribution with Algorithms 1 and 2 of paper 002 (or a baseline) and writes, into the
output folder (:mod:`privot.cli._output`):

publishable (the public parameters and the noisy release only)
    * ``distribution.npy`` / ``distribution.csv`` -- the private distribution
      (Delta x Delta, sums to 1; row 0 is the bottom edge ``y_min``);
    * ``heatmap.npy`` -- its Gaussian-filtered heatmap; ``heatmap.png`` -- a picture;
    * ``release.json`` -- what was released, its guarantee and parameters.

curator-only (exact statistics of the raw data: never publish)
    * ``curator-report.json`` -- points read, dropped, users, timings, data warnings.

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
from pathlib import Path
from typing import TYPE_CHECKING

from privot.cli._common import (
    add_engine_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_point_table_arguments,
    add_seed_argument,
    engine_from_args,
    ledger_from_args,
    ledger_spender,
    ledger_summary,
    positive_float,
    rng_from_args,
)
from privot.cli._output import OutputFolder, capture_data_warnings
from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["register"]

# Parsing imports neither numpy nor the library (a fast ``privot heatmap --help``): the
# handler imports them. The choices and defaults below repeat the library's
# (privot.heatmaps: METHODS, DEFAULT_W, DEFAULT_GAMMA, DEFAULT_SIGMA, ASPECTS);
# tests/cli/test_cli_imports.py checks they agree.
_METHODS = {"none": "pyramid", "laplace": "laplace", "threshold": "threshold"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "heatmap", help="user-level epsilon-DP heatmap of a table of points (paper 002)",
        description="Release a user-level epsilon-DP heatmap: each user's points inside the "
                    "public --bounds become that user's distribution over a Delta x Delta "
                    "grid; the sum is measured with the hierarchical Laplace mechanism and "
                    "reconstructed by the sparse-EMD linear program (Ghazi et al., "
                    "Differentially Private Heatmaps).",
        epilog="Publishable: distribution.npy, distribution.csv, heatmap.npy, heatmap.png, "
               "release.json. Curator-only, never publish: curator-report.json (exact "
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
    p.add_argument("--epsilon", type=positive_float, required=True, help="total budget (> 0)")
    p.add_argument("--resolution", type=int, default=256, metavar="DELTA",
                   help="grid side, a power of two (default: %(default)s)")
    p.add_argument("--w", type=int, default=20,
                   help="cells kept per level by RECONSTRUCT (default: %(default)s)")
    p.add_argument("--gamma", type=positive_float, default=2 ** -0.5,
                   help="decay of the per-level budgets (default: 1/sqrt(2))")
    p.add_argument("--sigma", type=positive_float, default=2.0,
                   help="Gaussian filter width of the heatmap, in cells (default: %(default)s)")
    p.add_argument("--baseline", choices=tuple(_METHODS), default="none",
                   help="run a baseline of the paper's Sec. 4 instead (default: none)")
    p.add_argument("--threshold", type=positive_float, default=1.0, metavar="PERCENT",
                   help="--baseline threshold keeps the top PERCENT of cells (default: 1)")
    p.add_argument("--aspect", choices=("square", "stretch"), default="square",
                   help="cells of a non-square --bounds: square (default) or stretched")
    add_engine_arguments(p, "where the aggregation runs: duckdb (embedded; 'local' is "
                            "accepted as an alias) or spark")
    add_point_table_arguments(p)
    add_output_arguments(p, "privot-heatmap")
    add_seed_argument(p)
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


PUBLISHABLE = ("distribution.npy", "distribution.csv", "heatmap.npy", "heatmap.png",
               "release.json")


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    from privot._usable import check_usable
    from privot._validation import check_epsilon
    from privot.heatmaps import Grid, aggregate_user_cells, private_heatmap
    from privot.privacy.events import PureEvent

    epsilon = check_epsilon(args.epsilon, "--epsilon")
    grid = Grid(tuple(args.bounds), args.resolution, aspect=args.aspect)
    if args.w < 1:
        raise InvalidParameterError("--w", args.w, "an integer >= 1")
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    out = OutputFolder(args.output, command="heatmap", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    ledger = ledger_from_args(args, unit="user", relation="add-remove")
    engine = engine_from_args(args)
    rng = rng_from_args(args)
    method = _METHODS[args.baseline]

    with capture_data_warnings("heatmap") as data_warnings:
        start = time.perf_counter()
        sums = aggregate_user_cells(args.input, grid=grid, user_column=args.user_column,
                                    x_column=args.x_column, y_column=args.y_column,
                                    engine=engine, sep=args.sep, names=names)
        t_aggregate = time.perf_counter() - start
        if ledger is not None:
            # private_heatmap's own refusal of an input with no usable point, made here
            # so that the whole-release charge below is never spent on it
            check_usable(n_rows=sums.n_points, n_unusable=0, n_outside=sums.n_outside,
                         what="the input", outside="outside the bounds or unusable (dropped)")
        params = {"epsilon": epsilon, "bounds": list(grid.bounds),
                  "resolution": grid.resolution, "aspect": args.aspect, "w": args.w,
                  "gamma": args.gamma, "sigma": args.sigma, "method": method,
                  "threshold": args.threshold, "engine": args.engine}
        with ledger_spender(ledger, args, capability="heatmap", unit="user",
                            relation="add-remove", output=out.path,
                            event=PureEvent(epsilon, method), mechanism=method,
                            params=params) as acct:
            result = private_heatmap(sums, grid=grid, epsilon=epsilon, w=args.w,
                                     gamma=args.gamma, sigma=args.sigma, method=method,
                                     threshold=args.threshold, rng=rng, accountant=acct)

    # -- publishable: the public parameters and the noisy release only ------------------
    out.open()
    np.save(out.public("distribution.npy"), result.distribution)
    np.savetxt(out.public("distribution.csv"), result.distribution, delimiter=",",
               fmt="%.9g")
    np.save(out.public("heatmap.npy"), result.heatmap)
    _write_png(out.public("heatmap.png"), result.heatmap, grid, title=(
        f"{'pyramid (paper 002)' if args.baseline == 'none' else args.baseline + ' baseline'}"
        f", epsilon = {epsilon:g}, Delta = {grid.resolution}"))
    out.write_release({**result.release_dict(), "engine": args.engine})

    # -- curator-only ------------------------------------------------------------------
    report = result.curator_report()
    report["seconds"] = {"aggregate": t_aggregate, **report["seconds"]}
    out.write_curator_report(report, data_warnings)

    rel = result.release
    levels = ", ".join(f"{k}: {v:.4g}" for k, v in rel.level_epsilons.items())
    print(f"privot heatmap: spent epsilon = {rel.epsilon:g} (pure DP, unit = user, "
          f"add/remove one user; per level {levels})"
          + ("" if rel.secure else "; SEEDED: not for publication"))
    print(out.listing())
    if ledger is not None:
        print(ledger_summary(ledger))
    cur = result.diagnostics.curator_only
    print(f"privot heatmap: curator only (not private): {cur.n_points} points read, "
          f"{cur.n_outside} outside the bounds or unusable and dropped, {cur.n_users} "
          "users", file=sys.stderr)
    return 0


def _write_png(path: Path, heatmap: np.ndarray, grid, *, title: str) -> None:
    from privot.demo._report import new_figure

    fig, axes = new_figure(figsize=(6, 5.4))
    ax = axes[0, 0]
    x0, x1, y0, y1 = grid.bounds
    extent = (x0, x0 + grid.cell_width * grid.resolution,
              y0, y0 + grid.cell_height * grid.resolution)
    im = ax.imshow(heatmap, origin="lower", extent=extent, cmap="inferno",
                   interpolation="nearest")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.locator_params(axis="x", nbins=5)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("x (longitude)")
    ax.set_ylabel("y (latitude)")
    fig.colorbar(im, ax=ax, shrink=0.8, label="heat")
    fig.savefig(path, dpi=120, bbox_inches="tight")
