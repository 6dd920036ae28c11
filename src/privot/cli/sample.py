"""``privot sample INPUT``: one epsilon-local-DP sample per user (paper 003).

Reads a CSV/TSV/Parquet table (one row per point: a user id and two coordinates),
computes each user's distribution over the cells of a public grid on the chosen engine
(DuckDB, embedded; or Spark), and releases for every user one cell drawn from a
mechanism's output inside the LDP polytope (Wasserstein projection by default), exactly
as that user's device would; the server-side estimate of the population distribution
from those samples is written too. Into the output folder (:mod:`privot.cli._output`):

publishable (the public parameters and the released samples only)
    * ``samples.csv`` -- one row per released sample (``x, y, cell``: the centre of the
      drawn cell), sorted by cell, **without user ids**;
    * ``base_measure.csv`` -- the public base measure ``m`` over the cells (Delta x Delta);
    * ``estimate.csv`` -- the server's estimate of the population distribution;
    * ``sample.png`` -- the base measure, the samples and the estimate;
    * ``release.json`` -- mechanism, guarantee, parameters, worst-case W_p.

curator-only (never publish)
    * ``curator-samples.csv`` -- the same samples with their user ids;
    * ``curator-report.json`` -- rows read and dropped, users, timings, data warnings.

In the local model the set of participating users is not hidden (each sends a report):
the number of samples is public by assumption; each user's points are what is
protected (unit: one user's whole distribution; relation: any two inputs of a user).

Privacy
-------
Unit: one user's whole distribution over the grid. Relation: local (any two inputs of
one user). Sensitivity: none needed; each user's law lies in the LDP polytope of a
public base measure (paper 003, Prop. 3.2). Guarantee: pure ``--epsilon``-LDP per user,
one sample each, drawn exactly from certified integer weights
(``docs/privacy/sampling.md``, ``docs/privacy/sampling_device.md``). Grid, cost and
base measure come from ``--bounds`` and ``--resolution`` only, never from the data; the
release path is total (``privot.sampling.mechanism``).
"""

from __future__ import annotations

import argparse
import sys
import time
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

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

__all__ = ["register"]

# Parsing imports neither numpy nor the library: the choices below repeat the library's
# (privot.sampling.mechanism: MECHANISMS, BASE_MEASURES; privot.sampling.population:
# VARIANTS); tests/cli/test_cli_imports.py checks they agree.
_MECHANISMS = ("wpm", "wpm-entropic", "kpm", "exp", "krr")
_BASE_MEASURES = ("uniform", "best-uniform", "optimal")
_VARIANTS = ("direct", "linear")

PUBLISHABLE = ("samples.csv", "base_measure.csv", "estimate.csv", "sample.png",
               "release.json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample", help="one epsilon-local-DP sample per user (paper 003)",
        description="Release, for every user, one cell of a public grid drawn from an "
                    "epsilon-local-DP mechanism applied to that user's distribution over "
                    "the grid: by default the Wasserstein Projection Mechanism (Takakura, "
                    "Liew, Hasegawa), computed "
                    "as each user's device would, with exact sampling from certified "
                    "integer weights.",
        epilog="Publishable: samples.csv (no user ids), base_measure.csv, estimate.csv, "
               "sample.png, release.json. Curator-only, never publish: "
               "curator-samples.csv (samples with user ids), curator-report.json. Exit "
               "status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--bounds", type=positive_float, nargs=4, required=True,
                   metavar=("X_MIN", "X_MAX", "Y_MIN", "Y_MAX"),
                   help="public bounds of the grid; never taken from the data")
    p.add_argument("--epsilon", type=positive_float, required=True,
                   help="local-DP budget of each user's one sample (> 0)")
    p.add_argument("--resolution", type=int, default=20, metavar="DELTA",
                   help="grid side: DELTA x DELTA cells are the input and output points "
                        "(default: %(default)s, the paper's 20 x 20)")
    p.add_argument("--aspect", choices=("square", "stretch"), default="stretch",
                   help="cells of a non-square --bounds: stretched (default) or square")
    p.add_argument("--mechanism", choices=_MECHANISMS, default="wpm",
                   help="wpm (exact Wasserstein projection), wpm-entropic (Algorithm 1), "
                        "kpm (KL projection), exp (exponential mechanism), krr "
                        "(randomized response) (default: %(default)s)")
    p.add_argument("--variant", choices=_VARIANTS, default="direct",
                   help="direct: one sample of M[mu] (wpm: one LP per user, about 0.1 s "
                        "at 400 cells; wpm-entropic is batched); linear: one point of mu, "
                        "then one sample of its Dirac's channel row (one LP per cell, and "
                        "the server's population estimate by EM) (default: %(default)s)")
    p.add_argument("--base-measure", choices=_BASE_MEASURES, default="best-uniform",
                   help="WPM base measure: best-uniform (the best multiple of the uniform "
                        "measure), optimal (minimax over all inputs, Thm 3.4: the best "
                        "worst case, sparse) or uniform (default: %(default)s)")
    p.add_argument("--p", type=positive_float, default=1.0,
                   help="order of the Wasserstein distance, >= 1 (default: %(default)s)")
    p.add_argument("--lam", type=positive_float, default=None,
                   help="wpm-entropic regularisation (default: 0.01 x the largest cost)")
    p.add_argument("--n-iter", type=int, default=40,
                   help="wpm-entropic iterations, fixed (default: %(default)s)")
    add_engine_arguments(p, "where the per-user distributions are computed: duckdb "
                            "(embedded; 'local' is accepted as an alias) or spark")
    add_point_table_arguments(p)
    add_output_arguments(p, "privot-sample")
    add_seed_argument(p)
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    from privot._usable import check_usable
    from privot._validation import check_epsilon, check_int
    from privot.grid import Grid
    from privot.sampling import make_mechanism, user_cell_counts
    from privot.sampling.population import estimate_population, sample_population

    epsilon = check_epsilon(args.epsilon, "--epsilon")
    check_int(args.n_iter, "--n-iter", minimum=1)
    grid = Grid(tuple(args.bounds), check_int(args.resolution, "--resolution", minimum=1,
                                              maximum=64),
                aspect=args.aspect, dyadic=False)
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    out = OutputFolder(args.output, command="sample", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    ledger = ledger_from_args(args, unit="user", relation="local")
    engine = engine_from_args(args)
    rng = rng_from_args(args)
    points = grid.cell_centre_points()
    seconds: dict[str, float] = {}

    start = time.perf_counter()
    mechanism = make_mechanism(args.mechanism, points=points, epsilon=epsilon, p=args.p,
                               base_measure=args.base_measure, lam=args.lam,
                               n_iter=args.n_iter)  # public: points only
    seconds["mechanism"] = time.perf_counter() - start
    with capture_data_warnings("sample") as data_warnings:
        start = time.perf_counter()
        counts = user_cell_counts(args.input, grid=grid, user_column=args.user_column,
                                  x_column=args.x_column, y_column=args.y_column,
                                  engine=engine, sep=args.sep, names=names)
        seconds["distributions"] = time.perf_counter() - start
        check_usable(n_rows=counts.n_points, n_unusable=0, n_outside=counts.n_outside,
                     what=str(args.input), outside="outside the bounds or unusable")
        start = time.perf_counter()
        # the linear variant's public channel (k projections): computed once, used twice
        channel = mechanism.channel() if args.variant == "linear" else None
        # with a ledger: charged once, before anything is drawn
        with ledger_spender(ledger, args, capability="sample", unit="user",
                            relation="local", output=out.path) as acct:
            released = sample_population(counts, mechanism, variant=args.variant, rng=rng,
                                         channel=channel, accountant=acct)
        seconds["sample"] = time.perf_counter() - start

    # -- publishable: public parameters and the released samples only -----------------
    d = grid.resolution
    out.open()
    cells = released.released()  # the multiset, sorted: no user order, no ids
    centres = points.tolist()  # Python floats: repr is the shortest exact decimal
    with open(out.public("samples.csv"), "w", encoding="utf-8") as fh:
        fh.write("x,y,cell\n")
        for c in cells.tolist():
            fh.write(f"{centres[c][0]!r},{centres[c][1]!r},{c}\n")
    np.savetxt(out.public("base_measure.csv"), mechanism.base_measure.reshape(d, d),
               delimiter=",", fmt="%.12g")
    estimate = estimate_population(released, mechanism, channel=channel)
    np.savetxt(out.public("estimate.csv"), estimate.reshape(d, d), delimiter=",",
               fmt="%.12g")
    _write_png(out.public("sample.png"), grid, mechanism.base_measure, cells, estimate,
               title=f"{args.mechanism} ({args.variant}), epsilon = {epsilon:g}")
    out.write_release({**released.release_dict(), "engine": args.engine,
                       "grid": {"bounds": list(grid.bounds), "resolution": d,
                                "aspect": grid.aspect, "points": "cell centres"}})

    # -- curator-only ------------------------------------------------------------------
    with open(out.curator("curator-samples.csv"), "w", encoding="utf-8") as fh:
        fh.write("user_id,x,y,cell\n")
        for u, c in zip(counts.user_ids.tolist(), released.indices.tolist(), strict=True):
            fh.write(f"{u},{centres[c][0]!r},{centres[c][1]!r},{c}\n")
    report = {**released.curator_report(), "n_points": counts.n_points,
              "n_outside_or_unusable": counts.n_outside,
              "n_users_without_points_inside": counts.n_users_empty,
              "seconds": seconds}
    out.write_curator_report(report, data_warnings)

    print(f"privot sample: {cells.size} samples released, each epsilon = {epsilon:g} "
          f"local DP (unit = one user's distribution; mechanism {args.mechanism}, "
          f"{args.variant})" + ("" if released.secure else "; SEEDED: not for publication"))
    print(out.listing())
    if ledger is not None:
        print(ledger_summary(ledger))
    print(f"privot sample: curator only (not private): {counts.n_points} points read, "
          f"{counts.n_outside} outside the bounds or unusable, {counts.n_users} users",
          file=sys.stderr)
    return 0


def _write_png(path: Path, grid, base_measure: np.ndarray, cells: np.ndarray,
               estimate: np.ndarray, *, title: str) -> None:
    import numpy as np

    from privot.demo._report import new_figure

    d = grid.resolution
    fig, axes = new_figure(ncols=3, figsize=(15, 4.8))
    x0, x1, y0, y1 = grid.bounds
    extent = (x0, x0 + grid.cell_width * d, y0, y0 + grid.cell_height * d)
    hist = np.bincount(cells, minlength=d * d).reshape(d, d)
    for ax, img, name in ((axes[0, 0], base_measure.reshape(d, d), "public base measure m"),
                          (axes[0, 1], hist, "released samples (count per cell)"),
                          (axes[0, 2], estimate.reshape(d, d),
                           "server's population estimate")):
        im = ax.imshow(img, origin="lower", extent=extent, cmap="magma",
                       interpolation="nearest")
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("x")
        fig.colorbar(im, ax=ax, shrink=0.8)
    axes[0, 0].set_ylabel("y")
    fig.suptitle(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
