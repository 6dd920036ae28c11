"""``privot sample INPUT``: one epsilon-local-DP sample per user (paper 003).

Reads a CSV/TSV/Parquet table (one row per point: a user id and two coordinates;
``--user-column NAME --columns X,Y``, the column convention of every command,
:func:`privot.cli._common.add_column_arguments`; the old ``--x-column``/``--y-column``
are still accepted), computes each user's distribution over the cells of a public grid
on the chosen engine (DuckDB, embedded; or Spark), and releases for every user one cell
drawn from a mechanism's output inside the LDP polytope (Wasserstein projection by
default), exactly as that user's device would; the server-side estimate of the
population distribution from those samples is written too. Every distinct user id of
INPUT reports exactly once: a user with no usable point inside ``--bounds`` reports
through the same mechanism, at the same epsilon, from the public default input (the
uniform distribution over the grid's cells), so the number of samples is the number of
user ids. Into the output folder (:mod:`privot.cli._output`):

publishable (the public parameters and the released samples only)
    * ``samples.csv`` -- one row per released sample (``x, y, cell``: the centre of the
      drawn cell), sorted by cell, **without user ids**;
    * ``base_measure.csv`` -- the public base measure ``m``, one row per cell
      (``cell, x, y, row, col, mass``: row 0 the southern row, col 0 the western column,
      ``cell = row * Delta + col``; ``m`` is a measure, not a probability: its total,
      in ``release.json``, is any value in ``[e^-eps/2, e^eps/2]``);
    * ``estimate.csv`` -- one row per cell (``cell, x, y, row, col, estimate``; values
      under 1e-12 are solvers' round-off, written as 0): the server's estimate of the
      population distribution (linear
      variant: EM through the public channel stopped by a public rule of the number of
      reports and epsilon, ``--estimator stopped``, the default; ``mle`` runs it to
      convergence; ``docs/sampling_estimate.md``);
    * ``estimate_intervals.csv`` -- (up to 1024 cells) per-cell 90% bootstrap
      intervals of the estimate (``cell, x, y, estimate, lower, upper``; indicative),
      computed from the released samples and public parameters only;
    * ``estimate_uncertainty.json`` -- the estimate's uncertainty statement: W_1
      (population, estimate) <= ``w1_radius`` (grid units) at nominal 90%;
    * ``sample.png`` -- the base measure, the samples and the estimate;
    * ``release.json`` -- mechanism, guarantee, parameters, worst-case W_p.

curator-only (never publish)
    * ``curator-samples.csv`` -- the same samples with their user ids;
    * ``curator-report.json`` -- rows read and dropped, users, timings, data warnings.

The files are written by :meth:`privot.sampling.PopulationSample.save` (one code path
with the library; the figure is :mod:`privot.sampling.plot`'s).

What is public
--------------
In the local model the user list is public (each listed user sends one report): the
number of samples is the number of distinct user ids of INPUT, public by assumption;
each user's points are what is protected (unit: one user's whole distribution;
relation: any two inputs of a user, "no usable point inside the bounds" included). On a
budget ledger (``--ledger``, ``--convert``): a user-level replace-one ledger records the
release at ``--epsilon`` (a group of 1: one user's data changes, the user list stays); a
row-level ledger refuses it (a replaced row may take a user id not in the table, adding
a report), and so does an add/remove ledger (adding a user adds a report: participation
is public). How many users had no usable point is curator-only.

Privacy
-------
Unit: one user's whole distribution over the grid. Relation: local (any two inputs of
one user). Sensitivity: none needed; each user's law lies in the LDP polytope of a
public base measure (paper 003, Prop. 3.2), the public default input's too. Guarantee:
pure ``--epsilon``-LDP per user, one sample per user of the public user list, drawn
exactly from certified integer weights
(``docs/privacy/sampling.md``, ``docs/privacy/sampling_device.md``). Grid, cost and
base measure come from ``--bounds`` and ``--resolution`` only, never from the data; the
release path is total (``privot.sampling.mechanism``).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from privot.cli._common import (
    RELEASE_RELATIONS,
    add_aspect_argument,
    add_engine_arguments,
    add_epsilon_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_point_table_arguments,
    add_progress_arguments,
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

__all__ = ["register"]

# Parsing imports neither numpy nor the library: the choices below repeat the library's
# (privot.sampling.mechanism: MECHANISMS, BASE_MEASURES; privot.sampling.population:
# VARIANTS); tests/cli/test_cli_imports.py checks they agree.
_MECHANISMS = ("wpm", "wpm-entropic", "kpm", "exp", "krr")
_BASE_MEASURES = ("uniform", "best-uniform", "optimal")
_VARIANTS = ("direct", "linear")

PUBLISHABLE = ("samples.csv", "base_measure.csv", "estimate.csv",
               "estimate_intervals.csv", "estimate_uncertainty.json", "sample.png",
               "release.json")
_ESTIMATORS = ("stopped", "mle")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample", help="one epsilon-local-DP sample per user (paper 003)",
        description="Release, for every user, one cell of a public grid drawn from an "
                    "epsilon-local-DP mechanism applied to that user's distribution over "
                    "the grid: by default the Wasserstein Projection Mechanism (Takakura, "
                    "Liew, Hasegawa), computed "
                    "as each user's device would, with exact sampling from certified "
                    "integer weights. Every distinct user id of INPUT reports exactly "
                    "once: a user with no usable point inside --bounds reports through "
                    "the same mechanism and epsilon from the public default input (uniform "
                    "over the grid), so the number of samples is the number of user ids.",
        epilog="What is public: the user list and so the number of samples (local model: "
               "one report per user); each user's points are protected, including "
               "whether any lies inside --bounds. On a ledger (--convert): user-level "
               "replace-one records the release at --epsilon; row-level ledgers (a "
               "replaced row may take a new user id, adding a report) and add/remove "
               "ones (participation is public) refuse it. "
               "Publishable: samples.csv (no user ids), base_measure.csv, estimate.csv, "
               "estimate_intervals.csv, estimate_uncertainty.json, "
               "sample.png, release.json. Curator-only, never publish: "
               "curator-samples.csv (samples with user ids), curator-report.json. Exit "
               "status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--bounds", type=positive_float, nargs=4, required=True,
                   metavar=("X_MIN", "X_MAX", "Y_MIN", "Y_MAX"),
                   help="public bounds of the grid; never taken from the data")
    add_epsilon_arguments(p, epsilon_help="local-DP budget of each user's one sample (> 0)",
                          units="(every user's W1 between its distribution and the law of "
                                "its released sample, in grid coordinates; a worst case, "
                                "confidence 1)", confidence=False)
    p.add_argument("--resolution", type=int, default=20, metavar="DELTA",
                   help="grid side: DELTA x DELTA cells are the input and output points "
                        "(default: %(default)s, the paper's 20 x 20)")
    add_aspect_argument(p, changed=(
        "Changed in issue 25: the default was stretch; with a non-square --bounds a "
        "seeded run now gives other samples (--aspect stretch gives the old grid); a "
        "square --bounds gives the same grid and samples either way (release.json "
        "records the aspect)."))
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
    p.add_argument("--estimator", choices=_ESTIMATORS, default="stopped",
                   help="linear variant's population estimate: stopped (EM through the "
                        "public channel, stopped after ceil(3 sqrt(n) / eps^1.25) steps, "
                        "a rule of public quantities) or mle (EM to convergence, which "
                        "overfits few reports) (default: %(default)s)")
    add_engine_arguments(p, "where the per-user distributions are computed: duckdb "
                            "(embedded; 'local' is accepted as an alias) or spark")
    add_point_table_arguments(p)
    add_output_arguments(p, "privot-sample")
    add_seed_argument(p)
    add_progress_arguments(p, bar="a progress bar of the users")
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


def error_state(args: argparse.Namespace, grid: Any) -> Any:
    """``state(epsilon) -> ErrorStatement``: the per-user statement
    (:func:`~privot.sampling.error.population_error`) of the mechanism these flags name,
    on ``grid``; public parameters only (``privot sample --target-error`` and ``privot
    plan sample`` alike)."""
    from privot.sampling import SampleParams, make_mechanism
    from privot.sampling.error import population_error

    points = grid.cell_centre_points()

    def state(eps: float) -> Any:
        mech = make_mechanism(args.mechanism, points=points, epsilon=eps, p=args.p,
                              base_measure=args.base_measure, lam=args.lam,
                              n_iter=args.n_iter)
        # the per-user bound does not depend on the number of reports (1 here)
        return population_error(SampleParams(mechanism=mech, variant=args.variant), grid, 1)

    return state


def _plan(args: argparse.Namespace, grid: object) -> tuple[object, object]:
    """``(plan, state)`` of ``--target-error`` (``(None, None)`` without it): the smallest
    epsilon whose per-user statement (:func:`error_state`) meets the target. Public: the
    grid and the flags only."""
    if args.target_error is None:
        return None, None
    state = error_state(args, grid)
    return plan_from_args(args, state), state


def _run(args: argparse.Namespace) -> int:

    from privot._validation import check_int
    from privot.grid import Grid

    # the light checks first: a refused epsilon or grid costs numpy's import only
    epsilon = check_epsilon_arguments(args)  # None: planned from --target-error below
    check_int(args.n_iter, "--n-iter", minimum=1)
    grid = Grid(tuple(args.bounds), check_int(args.resolution, "--resolution", minimum=1,
                                              maximum=64),
                aspect=args.aspect, dyadic=False)
    from privot._usable import check_usable
    from privot.privacy.events import PureEvent
    from privot.sampling import SampleParams, make_mechanism, user_cell_counts
    from privot.sampling.population import sample_population

    names = [n.strip() for n in args.names.split(",")] if args.names else None
    out = OutputFolder(args.output, command="sample", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    plan, state = _plan(args, grid)  # --target-error: public parameters only
    if plan is not None:
        epsilon = plan.epsilon
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    ledger = ledger_from_args(args, **RELEASE_RELATIONS["sample"],
                              planned=PureEvent(epsilon, args.mechanism),
                              planned_note="one eps-LDP report per user")
    check_plan_budget(plan, state, ledger, args, lambda e: PureEvent(e, args.mechanism),
                      **RELEASE_RELATIONS["sample"])
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
                                  x_column=args.columns[0], y_column=args.columns[1],
                                  engine=engine, sep=args.sep, names=names)
        seconds["distributions"] = time.perf_counter() - start
        refuse_swapped_columns(args, user_cell_counts, counts, grid=grid, engine=engine,
                               names=names)  # before any charge
        check_usable(n_rows=counts.n_points, n_unusable=0, n_outside=counts.n_outside,
                     what=str(args.input), outside="outside the bounds or unusable")
        start = time.perf_counter()
        # the linear variant's public channel (k projections): computed once, recorded in
        # the sample for the server's estimate
        channel = mechanism.channel() if args.variant == "linear" else None
        params = SampleParams(mechanism=mechanism, variant=args.variant, channel=channel)
        # with a ledger: charged once, before anything is drawn
        with ledger_spender(ledger, args, capability="sample",
                            **RELEASE_RELATIONS["sample"], output=out.path) as acct:
            released = sample_population(counts, params, rng=rng, accountant=acct,
                                         progress=progress_from_args(args))
        seconds["sample"] = time.perf_counter() - start

    # -- publishable (public parameters and the released samples) and curator-only
    # files: one code path with the library's PopulationSample.save
    out.open()
    written = released.save(out.path, grid=grid, release_extra={"engine": args.engine,
                                                               **planned_release(plan)},
                            curator={"n_users_without_points_inside": counts.n_users_empty,
                                     "seconds": seconds},
                            data_warnings=data_warnings, estimator=args.estimator,
                            columns=args.columns[:2])  # the axis labels of sample.png
    out.record(written)

    say = say_from_args(args)
    say(f"privot sample: {released.n_reports} samples released (one per user id), each "
          f"epsilon = {epsilon:g} local DP (unit = one user's distribution; mechanism "
          f"{args.mechanism}, {args.variant})"
          + ("" if released.secure else "; SEEDED: not for publication"))
    if released.error is not None:  # public parameters only (release.json "error")
        say(f"privot sample: error stated before the release: {released.error}")
    say(out.listing())
    say_notes(args, written)
    if ledger is not None:
        say(ledger_summary(ledger))
    say(f"privot sample: curator only (not private): {counts.n_points} points read, "
          f"{counts.n_outside} outside the bounds or unusable, {counts.n_users} users with "
          f"a point inside, {counts.n_users_empty} without (they reported from the public "
          "default input)", file=sys.stderr)
    return 0

