"""``privot repair INPUT``: repair a model's scores to the Wasserstein barycenter of the
groups' score distributions, each released with pure epsilon-DP (issue 26).

Reads a CSV/TSV/Parquet table with one row per example: a score column (a trained
model's score, e.g. a probability) and a group column. Each group's clipped scores are
counted on ``--bins`` equal bins of the public ``--bounds``; one discrete Laplace release
of all the histograms (sensitivity 2); each group's monotone CDF and quantile function,
the barycenter (the weighted average of the quantile functions) and the repair map
``T_g(s) = (1 - theta) s + theta Q_bar(F_g(s))`` follow by post-processing
(:func:`privot.learning.repair.private_repair`). Into the output folder
(:mod:`privot.cli._output`):

publishable (the public parameters and the noisy release only)
    * ``release.json`` -- guarantee, parameters, group labels and sizes (public), the
      noisy histograms, flags;
    * ``quantiles.csv`` -- the public levels, each group's released quantile function
      and the barycenter's: the whole repair map, for anyone to apply to new scores;
    * ``repair.png`` -- the quantile functions and the barycenter.

curator-only (never publish)
    * ``curator-repaired-scores.csv`` -- the table's rows (row number, group, score)
      with their repaired scores: the curator's own data transformed row by row, as
      private as the scores;
    * ``curator-report.json`` -- rows read, clipped scores per group, timings, data
      warnings.

The files are written by :meth:`privot.learning.repair_result.RepairResult.save`.

Privacy
-------
Unit: one record (row) of one group. Relation: replace one row inside one group; the
group labels and sizes are public. Sensitivity 2 (one score leaves one bin and enters
another of the same group's histogram); discrete Laplace of scale ``2 / --epsilon``:
pure ``--epsilon``-DP (``docs/privacy/repair.md``). ``--bounds``, ``--bins`` (default: a
rule of the public sizes and epsilon), ``--levels``, ``--theta`` and ``--weights`` are
public choices, never read from the data. On a budget ledger (``--ledger``): recorded
as a row-level replace-one-in-group release, like ``privot barycenter`` and ``privot
learn``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from privot.cli._common import (
    RELEASE_RELATIONS,
    add_ledger_arguments,
    add_output_arguments,
    add_progress_arguments,
    add_seed_argument,
    ledger_from_args,
    ledger_spender,
    ledger_summary,
    positive_float,
    progress_from_args,
    rng_from_args,
    say_from_args,
)

__all__ = ["PUBLISHABLE", "RELATION", "WEIGHTS", "register"]

#: Repeat privot.learning.repair_result.PUBLISHABLE_FILES and
#: privot.learning.repair.WEIGHTS (parsing imports neither numpy nor the library;
#: tests/cli/test_cli_repair.py checks they agree).
PUBLISHABLE = ("release.json", "quantiles.csv", "repair.png")
WEIGHTS = ("sizes", "equal")
#: The unit and relation the release is stated for (privot's learning's).
RELATION = RELEASE_RELATIONS["repair"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "repair", help="fair repair of scores to the groups' Wasserstein barycenter, "
                       "with each group's score distribution released with epsilon-DP",
        description="Release each group's score distribution (a histogram on public "
                    "bins of --bounds, discrete Laplace noise, pure epsilon-DP) and the "
                    "repair map to their Wasserstein barycenter: T_g(s) = (1 - theta) s + "
                    "theta Q_bar(F_g(s)), Q_bar the weighted average of the groups' "
                    "quantile functions. The map (quantiles.csv) is publishable and "
                    "applies to new scores; the table's own repaired rows are written as "
                    "a curator-only file.",
        epilog="Unit: one row of one group; relation: replace one row inside its group "
               "(group labels and sizes public). Publishable: release.json, "
               "quantiles.csv, repair.png. Curator-only, never publish: "
               "curator-repaired-scores.csv (the table's rows repaired), "
               "curator-report.json. Exit status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--score-column", required=True, metavar="NAME",
                   help="the column of the model's scores")
    p.add_argument("--group-column", required=True, metavar="NAME",
                   help="the column of the group labels (public, with the group sizes)")
    p.add_argument("--epsilon", type=positive_float, required=True,
                   help="pure epsilon-DP of the release (> 0)")
    p.add_argument("--bounds", type=positive_float, nargs=2, default=(0.0, 1.0),
                   metavar=("LO", "HI"),
                   help="public range of the scores; outside scores are clipped "
                        "(default: 0 1, probabilities)")
    p.add_argument("--bins", type=int, default=None,
                   help="equal bins of --bounds per group (default: round((eps n_min / "
                        "2 sqrt 2)^(2/3)) in [4, 512], n_min the smallest public group "
                        "size)")
    p.add_argument("--theta", type=positive_float, default=1.0,
                   help="repair strength in [0, 1]: 1 full repair (default), 0 none")
    p.add_argument("--levels", type=int, default=201,
                   help="quantile levels tabulated in quantiles.csv (default: "
                        "%(default)s)")
    p.add_argument("--weights", choices=WEIGHTS, default="sizes",
                   help="barycenter weights: the public group proportions (sizes, "
                        "default) or equal")
    p.add_argument("--sep", default=None, help="text delimiter (default from the suffix)")
    add_output_arguments(p, "privot-repair")
    add_seed_argument(p)
    add_progress_arguments(p, bar="nothing (the release is one step)")
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


def _check_args(args: argparse.Namespace) -> None:
    """The public choices, refused before anything heavy is imported or read."""
    from privot.errors import InvalidParameterError

    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise InvalidParameterError("--epsilon", args.epsilon, "a finite number > 0")
    lo, hi = args.bounds
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError("--bounds", [lo, hi], "two finite numbers LO < HI")
    if args.bins is not None and not 2 <= args.bins <= 100_000:
        raise InvalidParameterError("--bins", args.bins, "an integer in [2, 100000]")
    if not 0.0 <= args.theta <= 1.0:
        raise InvalidParameterError("--theta", args.theta, "a number in [0, 1]")
    if not 2 <= args.levels <= 100_000:
        raise InvalidParameterError("--levels", args.levels, "an integer in [2, 100000]")


def _read(args: argparse.Namespace):
    """The scores (float, NaN where missing) and the group labels (text)."""
    import numpy as np

    from privot.engines import read_columns
    from privot.errors import InvalidDataError

    cols = read_columns(args.input, columns=[args.score_column, args.group_column],
                        float_columns=[args.score_column], sep=args.sep)
    scores = cols[args.score_column]
    raw = cols[args.group_column].tolist()
    if len(raw) == 0:
        raise InvalidDataError(f"{args.input} has no rows; nothing was charged or written")
    missing = sum(v is None or (isinstance(v, float) and math.isnan(v)) for v in raw)
    if missing:
        raise InvalidDataError(f"{missing} row(s) of {args.input} have no group in "
                               f"{args.group_column!r}; nothing was charged or written")
    bad = int(np.sum(~np.isfinite(scores)))
    if bad:
        raise InvalidDataError(f"{bad} row(s) of {args.input} have a missing or "
                               f"non-numeric score in {args.score_column!r}; nothing was "
                               "charged or written")
    return scores, np.asarray([str(v) for v in raw], dtype=object)


def _run(args: argparse.Namespace) -> int:
    _check_args(args)
    from privot.cli._output import OutputFolder, capture_data_warnings

    out = OutputFolder(args.output, command="repair", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    from privot.privacy.events import PureEvent

    ledger = ledger_from_args(args, **RELATION,
                              planned=PureEvent(args.epsilon, "discrete-laplace"))
    rng = rng_from_args(args)
    import numpy as np

    from privot.learning.repair import RepairParams, private_repair

    params = RepairParams(epsilon=args.epsilon, bounds=tuple(args.bounds), bins=args.bins,
                          theta=args.theta, levels=args.levels, weights=args.weights)
    seconds: dict[str, float] = {}
    with capture_data_warnings("repair") as data_warnings:
        start = time.perf_counter()
        scores, groups = _read(args)
        seconds["read"] = time.perf_counter() - start
        if len(set(groups.tolist())) < 2:
            from privot.errors import InvalidParameterError

            raise InvalidParameterError("--group-column", args.group_column,
                                        "a column with at least two groups")
        with ledger_spender(ledger, args, capability="repair", **RELATION,
                            output=out.path) as acct:
            result = private_repair(scores, groups, params, accountant=acct, rng=rng,
                                    progress=progress_from_args(args))
        repaired = result.transform(scores, groups)

    out.open()
    rows = {"row": np.arange(scores.size), args.group_column: groups,
            args.score_column: scores, "repaired": repaired}
    written = result.save(out.path, rows=rows, curator={"seconds": seconds},
                          data_warnings=data_warnings,
                          release_extra={"score_column": args.score_column,
                                         "group_column": args.group_column})
    out.record(written)
    say = say_from_args(args)
    say(f"privot repair: {len(result.labels)} group score distributions released, "
        f"epsilon = {result.epsilon:g} (pure DP; unit = one row of one group, group sizes "
        f"public), {result.bins} bins, theta = {result.theta:g}"
        + ("" if result.secure else "; SEEDED: not for publication"))
    for flag in result.flags:
        say(f"privot repair: FLAGGED (public): {flag}")
    say(out.listing())
    if ledger is not None:
        say(ledger_summary(ledger))
    cur = result.curator_report()
    say(f"privot repair: curator only (not private): {cur['n_rows']} rows read, "
        f"{sum(cur['n_clipped'].values())} scores clipped into the bounds", file=sys.stderr)
    return 0
