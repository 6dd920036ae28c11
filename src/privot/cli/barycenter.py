"""``privot barycenter INPUT``: a differentially private Wasserstein barycenter of a table.

Reads a CSV/TSV/Parquet table (one row per person: coordinate columns and, optionally, a
group column; ``--columns A,B,... --group-column NAME``, the column convention of every
command, :func:`privot.cli._common.add_column_arguments`), releases ``m`` equally
weighted support points with the private coreset method (paper 000 Alg. 2, epsilon-DP)
or output perturbation (paper 000 Alg. 1 / paper 001 Thm 5 with splitting, (epsilon,
delta)-DP) and writes, into the output folder (:mod:`privot.cli._output`):

publishable (the public parameters and the noisy release only)
    * ``support.csv`` -- the private support points (the coordinate columns, weight
      ``1/m``);
    * ``barycenter.png`` -- the private support over the public bounds and region
      (2-D data only);
    * ``release.json`` -- what was released, its guarantee and parameters. The group
      labels and group sizes are in it: they are public by the neighbouring relation.

curator-only (exact statistics of the raw data: never publish)
    * ``curator-report.json`` -- rows, unusable and clipped rows per group, timings,
      warnings raised while touching the data;
    * ``curator-data.png`` -- with ``--plot-data``: the support over the raw rows.

The files are written by :meth:`privot.barycenters.BarycenterResult.save` (one code
path with the library).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from privot.cli._common import (
    add_column_arguments,
    add_engine_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_seed_argument,
    add_text_file_arguments,
    engine_from_args,
    ledger_from_args,
    ledger_spender,
    ledger_summary,
    positive_float,
    rng_from_args,
)
from privot.cli._output import OutputFolder, capture_data_warnings
from privot.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["register"]

# Parsing imports neither numpy nor the library (a fast ``privot barycenter --help``):
# the functions below import them when they run. The choices and defaults of the parser
# repeat the library's (privot.barycenters: METHODS, CALIBRATIONS, PLACEMENTS,
# DEFAULT_ITERATIONS); tests/cli/test_cli_imports.py checks they agree.


PUBLISHABLE = ("support.csv", "barycenter.png", "release.json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "barycenter", help="differentially private Wasserstein barycenter of groups of "
                           "points (papers 000 and 001)",
        description="Release m equally weighted points that minimise the average W_p^p to "
                    "k sensitive groups of points, with differential privacy (unit: one "
                    "row = one person in one group; replace-one neighbouring). The group "
                    "labels and the number of rows of each group are NOT protected: they "
                    "are public by that relation and published exactly in release.json.",
        epilog="Publishable: support.csv, barycenter.png, release.json. Curator-only, never "
               "publish: curator-report.json (exact row, unusable and clipped counts, "
               "timings, data warnings) and, with --plot-data, curator-data.png. Rows "
               "outside --bounds are clipped to them; rows with a missing or non-numeric "
               "coordinate are left out and still count in their group's size; a group "
               "with no usable row inside the bounds is refused before anything is "
               "charged. Exit status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    add_column_arguments(p, count=None, group=True, columns_help=(
        "coordinate columns, comma-separated, d of them (default: longitude,latitude)"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--bounds", type=positive_float, nargs="+", metavar="V",
                       help="public box, never taken from the data: 2d numbers LOW_1 HIGH_1 "
                            "... LOW_d HIGH_d (for longitude,latitude: LON_MIN LON_MAX "
                            "LAT_MIN LAT_MAX)")
    where.add_argument("--ball", type=positive_float, nargs="+", metavar="V",
                       help="public ball instead of a box: d+1 numbers CENTRE_1 ... "
                            "CENTRE_d RADIUS")
    p.add_argument("--m", type=int, default=48, help="support size (default: %(default)s)")
    p.add_argument("--epsilon", type=positive_float, required=True, help="budget (> 0)")
    p.add_argument("--delta", type=positive_float, default=None,
                   help="delta in (0, 1), required by --method perturbation")
    p.add_argument("--method", choices=("coreset", "perturbation"), default="coreset",
                   help="private coreset (pure DP, default) or output perturbation")
    p.add_argument("--splits", type=int, default=None, metavar="K_PRIME",
                   help="perturbation: parts per group (default: paper 001 Thm 8's k'*)")
    p.add_argument("--iterations", type=int, default=1,
                   help="perturbation: noisy anchored steps (default: %(default)s)")
    p.add_argument("--calibration", choices=("analytic", "classic"), default="analytic",
                   help="perturbation: Gaussian calibration (default: %(default)s)")
    p.add_argument("--projection-dim", default="auto", metavar="D_PRIME",
                   help="JL target dimension, 'auto' (Thm 5.4's order) or 'none' "
                        "(default: %(default)s)")
    p.add_argument("--population-size", type=int, default=None, metavar="N",
                   help="the rows are a uniform sample WITHOUT replacement of a population "
                        "of N people per group: the budget is met on the population by "
                        "amplification")
    p.add_argument("--placement", choices=("scaled", "uniform", "centre"), default="scaled",
                   help="coreset points in their cell (default: %(default)s)")
    p.add_argument("--region", choices=("none", "continental-us"), default="none",
                   help="public region for the coreset points (default: %(default)s)")
    p.add_argument("--reg", type=positive_float, default=1e-3,
                   help="entropic regularisation of the barycenter solver "
                        "(default: %(default)s)")
    add_engine_arguments(p, "duckdb: the rows are read once, in memory, by DuckDB ('local' "
                            "is accepted as an alias); spark: the coreset's cell counts run "
                            "on Spark (coreset method)")
    p.add_argument("--plot-data", action="store_true",
                   help="also draw the raw rows under the support, into curator-data.png "
                        "(curator-only: never publish; duckdb engine, 2-D data)")
    add_text_file_arguments(p)
    add_output_arguments(p, "privot-barycenter")
    add_seed_argument(p)
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


def _bounds(box: list[float] | None, ball: list[float] | None, d: int):
    import numpy as np

    from privot.barycenters import PublicBounds

    if box is not None:
        if len(box) != 2 * d:
            raise InvalidParameterError(
                "--bounds", box, f"{2 * d} numbers LOW HIGH per coordinate column ({d} "
                "columns)")
        v = np.asarray(box, dtype=float).reshape(d, 2)
        return PublicBounds.box(v[:, 0], v[:, 1])
    if len(ball) != d + 1:
        raise InvalidParameterError(
            "--ball", ball, f"{d + 1} numbers: the centre's {d} coordinates and the radius")
    return PublicBounds.ball(ball[:d], ball[d])


#: The published label of rows whose group value is missing (the same on every engine).
MISSING_GROUP = "(missing)"


def group_label(value: object) -> str:
    """The published name of a group value: its text, or :data:`MISSING_GROUP` for a
    missing one (None or NaN), whichever engine read it."""
    if value is None or (isinstance(value, float) and value != value):
        return MISSING_GROUP
    return str(value)


def _read_groups(path: str, columns: list[str], group_column: str | None, sep: str | None,
                 engine: Any = "duckdb") -> tuple[list[np.ndarray], list[str]]:
    """The rows as groups, in memory (float; NaN for a missing or non-numeric value: the
    library leaves such rows out and keeps them in the public group size)."""
    import numpy as np

    from privot.engines import read_columns

    wanted = columns + ([group_column] if group_column else [])
    cols = read_columns(path, columns=wanted, float_columns=columns, sep=sep, engine=engine)
    x = np.column_stack([np.asarray(cols[c], dtype=np.float64) for c in columns])
    if len(x) == 0:
        raise InvalidDataError(f"{path} has no rows (a header-only file?); nothing was "
                               "charged or written")
    if group_column is None:
        return [x], ["all"]
    labels = np.asarray([group_label(v) for v in cols[group_column].tolist()])
    names = sorted(set(labels.tolist()))
    return [x[labels == name] for name in names], names


def _projection_dim(text: str) -> int | str | None:
    from privot._validation import check_int

    value = text.lower()
    if value == "auto":
        return "auto"
    if value == "none":
        return None
    try:
        dim = int(value)
    except ValueError as exc:
        raise InvalidParameterError("--projection-dim", text,
                                    "an integer >= 1, 'auto' or 'none'") from exc
    return check_int(dim, "--projection-dim", minimum=1)


def _run(args: argparse.Namespace) -> int:

    from privot._validation import check_epsilon, check_int
    from privot.barycenters import continental_us, private_barycenter

    columns = list(args.columns)  # a list of >= 1 names (add_column_arguments)
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    m = check_int(args.m, "--m", minimum=1)
    bounds = _bounds(args.bounds, args.ball, len(columns))
    if args.method == "perturbation" and args.delta is None:
        raise InvalidParameterError("--delta", None,
                                    "a number in (0, 1) for --method perturbation")
    projection_dim = _projection_dim(args.projection_dim)
    region = continental_us() if args.region == "continental-us" else None
    if args.method == "perturbation" and args.engine != "duckdb":
        raise InvalidParameterError("--engine", args.engine,
                                    "'duckdb' for --method perturbation (it needs the points)")
    if args.plot_data and (args.engine != "duckdb" or len(columns) != 2):
        raise InvalidParameterError("--plot-data", True, "2-D data on the duckdb engine")
    out = OutputFolder(args.output, command="barycenter", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    ledger = ledger_from_args(args, unit="row", relation="replace-one")
    engine = engine_from_args(args)

    seconds: dict[str, float] = {}
    with capture_data_warnings("barycenter") as data_warnings:
        start = time.perf_counter()
        groups: list[np.ndarray] | None = None
        if args.engine == "spark":
            # exact leaf counts on Spark (coreset method only, checked above); noise,
            # placement and the barycenter run here on the counts
            from privot.barycenters import coreset_leaf_counts
            from privot.barycenters.coresets import MAX_DEPTH

            data = coreset_leaf_counts(args.input, bounds=bounds, depth=MAX_DEPTH,
                                       coordinate_columns=columns,
                                       group_column=args.group_column, backend=engine,
                                       sep=args.sep)
            names = (["all"] if args.group_column is None
                     else [group_label(key) for key in data.counts])
            sizes = [int(data.n[key]) for key in data.counts]
        else:
            groups, names = _read_groups(args.input, columns, args.group_column, args.sep,
                                         engine)
            data = groups
            sizes = [len(g) for g in groups]
        seconds["read"] = time.perf_counter() - start
        for name, size in zip(names, sizes, strict=True):
            if size < m:  # group sizes are public: refused before anything is charged
                raise InvalidParameterError(
                    "--m", m, f"at most the size of the smallest group ({name!r} has "
                    f"{size} rows)")
        # with a ledger: charged once, with the release's event, before any noise
        with ledger_spender(ledger, args, capability="barycenter", unit="row",
                            relation="replace-one", output=out.path) as acct:
            result = private_barycenter(
                data, bounds=None if groups is None else bounds, m=m, epsilon=epsilon,
                delta=args.delta, method=args.method, population_size=args.population_size,
                projection_dim=projection_dim, splits=args.splits,
                iterations=args.iterations, calibration=args.calibration, reg=args.reg,
                placement=args.placement, region=region, rng=rng_from_args(args),
                accountant=acct)
        seconds["release"] = time.perf_counter() - start - seconds["read"]

    # -- publishable (public parameters and the noisy release) and curator-only files:
    # one code path with the library's BarycenterResult.save
    out.open()
    written = result.save(out.path, columns=columns, group_names=names, region=region,
                          release_extra={"engine": args.engine},
                          curator={"seconds": seconds},
                          data=groups if args.plot_data else None,
                          data_warnings=data_warnings)
    out.written_public += written["publishable"]
    out.written_curator += written["curator"]
    report = result.curator_report()

    c = result.cost
    kind = "pure DP" if c.delta == 0 else f"delta = {c.delta:g}"
    where = " on the population" if args.population_size else ""
    print(f"privot barycenter: {result.method} method, m = {m}, k = {len(sizes)} (group "
          f"labels and sizes public); spent epsilon = {c.epsilon:g} ({kind}){where}; unit "
          "= one row, replace-one" + ("" if result.secure else "; SEEDED: not for "
                                      "publication"))
    print(out.listing())
    if ledger is not None:
        print(ledger_summary(ledger))
    print("privot barycenter: curator only (not private): rows "
          + ", ".join(f"{n}: {s} ({cl} clipped, {un} unusable)" for n, s, cl, un in zip(
              names, sizes, report["rows_clipped_per_group"],
              report["rows_unusable_per_group"], strict=True)), file=sys.stderr)
    return 0

