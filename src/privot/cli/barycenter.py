"""``privot barycenter INPUT``: a differentially private Wasserstein barycenter of a table.

Reads a CSV/TSV/Parquet table (one row per person: coordinate columns and, optionally, a
group column; ``--columns A,B,... --group-column NAME``, the column convention of every
command, :func:`privot.cli._common.add_column_arguments`), releases ``m`` equally
weighted support points and writes them into the output folder
(:mod:`privot.cli._output`). ``--method``:

* ``auto`` (default): :func:`privot.barycenters.api.choose_method` of the public
  dimension ``d`` (the number of coordinate columns): the coreset for ``d <= 2``, the
  subspace method above (on ``--engine spark`` always the coreset: the engine's leaf
  counts are all it has);
* ``coreset``: the private coreset method (paper 000 Alg. 2, epsilon-DP; ``--delta``
  refused);
* ``perturbation``: output perturbation from a private-coreset anchor,
  (epsilon, delta)-DP; ``--delta`` required. ``--step`` picks the released statistic:
  ``lloyd`` (default): noisy Lloyd steps on each group's power cells, balanced on the
  private coreset (``--balancing-rounds``, 0 to 10, default the library's 2;
  ``--proxy-size``, placed coreset points per group in the power-weight solves;
  :mod:`privot.barycenters.lloyd_perturbation`); ``anchored``: the anchored step over
  ``--splits`` parts (paper 000 Alg. 1 / paper 001 Thm 5 with splitting;
  ``--calibration``). ``--splits`` and ``--calibration`` are refused with
  ``--step lloyd``, ``--balancing-rounds`` and ``--proxy-size`` with ``--step
  anchored``, and all five with a method that is not the perturbation one;
* ``subspace``: private projection, DP Lloyd rounds in the subspace, the barycenter of
  the private summaries, the lift (:mod:`privot.barycenters.subspace`): pure
  epsilon-DP (Laplace noise) without ``--delta``, (epsilon, delta)-DP (Gaussian noise)
  with it. Its public choices: ``--basis dct --image-shape H,W [--basis-dim D0]`` (the
  columns are the pixels of ``H x W`` images, row-major; default basis: the identity),
  ``--subspace-dim``, ``--cells``, ``--rounds``, ``--projection-share``,
  ``--covariance`` (defaults: the library's, from public quantities). Like
  perturbation it needs the points: duckdb engine only. These options are refused with
  a method that is not the subspace one; the coreset's ``--projection-dim`` and
  ``--region`` are refused with the subspace one.

The files:

publishable (the public parameters and the noisy release only)
    * ``support.csv`` -- the private support points (the coordinate columns, weight
      ``1/m``);
    * ``barycenter.png`` -- the private support over the public bounds and region
      (2-D data only);
    * ``release.json`` -- what was released, its guarantee and parameters (``method``:
      the method that ran; ``params.method_requested``: what ``--method`` asked;
      ``params.step``: the perturbation method's step, with ``params.lloyd`` (its public
      plan and noise) or ``params.splits``; ``params.subspace``: the subspace method's
      public plan and noise). The group
      labels and group sizes are in it: they are public by the neighbouring relation.

curator-only (exact statistics of the raw data: never publish)
    * ``curator-report.json`` -- rows, unusable and clipped rows per group, timings,
      warnings raised while touching the data;
    * ``curator-data.png`` -- with ``--plot-data``: the support over the raw rows.

Rows that clearly fit the bounds with their first two columns swapped (most rows
outside as given, more than half inside swapped: the rule of
:func:`privot._usable.swapped_axes_hint`) are refused before anything is charged
(exit 2, one line). A release with fewer distinct support points than ``m`` says so: a
warning on stderr, ``DEGENERATE: N distinct atom(s)`` in the stdout summary and a
``degenerate`` entry in ``release.json`` (the count is a function of the release).

The files are written by :meth:`privot.barycenters.BarycenterResult.save` (one code
path with the library).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from privot.cli._common import (
    RELEASE_RELATIONS,
    add_column_arguments,
    add_engine_arguments,
    add_epsilon_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_progress_arguments,
    add_seed_argument,
    add_text_file_arguments,
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
    rng_from_args,
    say_from_args,
    say_notes,
)
from privot.cli._output import OutputFolder, capture_data_warnings
from privot.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["register"]

# Parsing imports neither numpy nor the library (a fast ``privot barycenter --help``):
# the functions below import them when they run. The choices and defaults of the parser
# repeat the library's (privot.barycenters: METHODS, CALIBRATIONS, PLACEMENTS,
# DEFAULT_ITERATIONS, PERTURBATION_STEPS, DEFAULT_BALANCING_ROUNDS);
# tests/cli/test_cli_imports.py checks they agree.


PUBLISHABLE = ("support.csv", "barycenter.png", "release.json")
#: ``--step``: the library's PERTURBATION_STEPS (the first is its default).
PERTURBATION_STEPS = ("lloyd", "anchored")
#: ``--balancing-rounds`` default: the library's DEFAULT_BALANCING_ROUNDS.
DEFAULT_BALANCING_ROUNDS = 2
#: ``--proxy-size`` default: the library's DEFAULT_PROXY_SIZE.
DEFAULT_PROXY_SIZE = 10_000
#: ``--proxy-size`` at most: the library's DEFAULT_MAX_PLACED (placed points per group).
MAX_PROXY_SIZE = 1_000_000
#: ``--calibration`` default with ``--step anchored`` (the library's default).
DEFAULT_CALIBRATION = "analytic"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``privot barycenter`` to the subcommands (its options in ``--help`` order)."""
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
    _add_input_arguments(p)
    _add_release_arguments(p)
    _add_perturbation_arguments(p)
    _add_coreset_arguments(p)
    _add_subspace_arguments(p)
    _add_run_arguments(p)
    p.set_defaults(handler=_run)


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The table, its columns and the public bounds (a box or a ball)."""
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


def _add_release_arguments(p: argparse.ArgumentParser) -> None:
    """The support size, the budget and the method."""
    p.add_argument("--m", type=int, default=48, help="support size (default: %(default)s)")
    add_epsilon_arguments(p, epsilon_help="budget (> 0)",
                          units="(the excess W2^2 cost, in squared caller units; planned "
                                "once the public group sizes are read, before any charge; "
                                "only the subspace method's mean-only plan states a finite "
                                "bound)")
    p.add_argument("--delta", type=positive_float, default=None,
                   help="delta in (0, 1): required by --method perturbation; optional with "
                        "subspace (Gaussian noise, (epsilon, delta)-DP; without it Laplace "
                        "noise, pure epsilon-DP); refused by coreset; not charged when auto "
                        "runs the coreset")
    p.add_argument("--method", choices=("auto", "coreset", "perturbation", "subspace"),
                   default="auto",
                   help="auto (default): coreset for d <= 2 coordinate columns, subspace "
                        "above (coreset on --engine spark); coreset: private coreset (pure "
                        "DP); perturbation: output perturbation; subspace: private "
                        "subspace summaries (high dimension)")


def _add_perturbation_arguments(p: argparse.ArgumentParser) -> None:
    """Output perturbation's step and its parameters (refused with the other methods)."""
    p.add_argument("--step", choices=PERTURBATION_STEPS, default=None,
                   help="perturbation: the released statistic. lloyd (default): noisy "
                        "Lloyd steps on power cells balanced on the private coreset; "
                        "anchored: the anchored step over --splits parts")
    p.add_argument("--balancing-rounds", type=int, default=None, metavar="N",
                   help="perturbation with --step lloyd: private balancing rounds of the "
                        "cell counts before each step, 0 to 10 (default: "
                        f"{DEFAULT_BALANCING_ROUNDS})")
    p.add_argument("--proxy-size", type=int, default=None, metavar="N",
                   help="perturbation with --step lloyd: placed coreset points per group "
                        f"in the power-weight solves, 100 to {MAX_PROXY_SIZE:,} (default: "
                        f"{DEFAULT_PROXY_SIZE}; larger is slower)")
    p.add_argument("--splits", type=int, default=None, metavar="K_PRIME",
                   help="perturbation with --step anchored: parts per group (default: "
                        "paper 001 Thm 8's k'*)")
    p.add_argument("--iterations", type=int, default=1,
                   help="perturbation: noisy steps (Lloyd or anchored, see --step) "
                        "(default: %(default)s)")
    p.add_argument("--calibration", choices=("analytic", "classic"), default=None,
                   help="perturbation with --step anchored: Gaussian calibration "
                        f"(default: {DEFAULT_CALIBRATION})")


def _add_coreset_arguments(p: argparse.ArgumentParser) -> None:
    """The JL dimension, amplification by subsampling and the coreset's placement and
    region."""
    p.add_argument("--projection-dim", default="auto", metavar="D_PRIME",
                   help="coreset and perturbation: JL target dimension, 'auto' (Thm "
                        "5.4's order) or 'none' (default: %(default)s)")
    p.add_argument("--population-size", type=int, default=None, metavar="N",
                   help="the rows are a uniform sample WITHOUT replacement of a population "
                        "of N people per group: the budget is met on the population by "
                        "amplification")
    p.add_argument("--placement", choices=("scaled", "uniform", "centre"), default="scaled",
                   help="coreset points in their cell (default: %(default)s)")
    p.add_argument("--region", choices=("none", "continental-us"), default="none",
                   help="public region for the coreset points (default: %(default)s)")


def _add_subspace_arguments(p: argparse.ArgumentParser) -> None:
    """The subspace method's public choices (an argument group)."""
    sub_opts = p.add_argument_group(
        "subspace method", "public choices of --method subspace (or auto for d > 2); "
        "refused with the other methods")
    sub_opts.add_argument("--basis", choices=("dct",), default=None,
                          help="public basis the rows are expressed in first: dct = the "
                               "2-D DCT of images of --image-shape, lowest frequencies "
                               "first (default: the identity)")
    sub_opts.add_argument("--image-shape", type=image_shape, default=None, metavar="H,W",
                          help="with --basis dct: the images' height and width, H * W = d "
                               "coordinate columns (row-major pixels)")
    sub_opts.add_argument("--basis-dim", type=int, default=None, metavar="D0",
                          help="with --basis dct: the number of lowest frequencies kept "
                               "(default: min(d, 100))")
    sub_opts.add_argument("--subspace-dim", type=int, default=None, metavar="D_PRIME",
                          help="dimension d' of the private subspace (top eigenvectors of "
                               "a DP second moment when D0 > d'; default: the library's "
                               "rule of epsilon * n, 3 to 8, at most D0; 0: each "
                               "group's DP mean only, the plan that states a finite "
                               "error bound at every epsilon)")
    sub_opts.add_argument("--cells", type=int, default=None,
                          help="Lloyd centres per group (default: the library's rule of "
                               "epsilon * n and m)")
    sub_opts.add_argument("--rounds", type=int, default=None,
                          help="DP Lloyd rounds, 0 to 100 (default: the library's rule)")
    sub_opts.add_argument("--projection-share", type=positive_float, default=None,
                          metavar="SHARE",
                          help="share of the budget spent on the DP second moment, in "
                               "(0, 1) (default: 0.35 with --delta, 0.5 without)")
    sub_opts.add_argument("--covariance", choices=("full", "diagonal"), default=None,
                          help="each group's DP Gaussian: its whole second moment in the "
                               "subspace (full) or its diagonal (default: the library's "
                               "rule: full with one cell, no --delta and epsilon * n >= "
                               "1500)")


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The solver, the engine, the files and the run's switches (seed, progress, ledger)."""
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
    add_progress_arguments(p, bar="the solver's progress bars")
    add_ledger_arguments(p)


def image_shape(text: str) -> tuple[int, int]:
    """argparse type of ``--image-shape``: ``H,W``, two integers >= 1."""
    parts = text.replace("x", ",").split(",")
    try:
        h, w = (int(v) for v in parts)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HEIGHT,WIDTH (two integers >= 1, e.g. 28,28)") from exc
    if h < 1 or w < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HEIGHT,WIDTH (two integers >= 1, e.g. 28,28)")
    return h, w


#: The subspace method's options: flag, argparse destination and library keyword.
SUBSPACE_OPTIONS = (("--basis", "basis", "basis"), ("--image-shape", "image_shape",
                                                   "image_shape"),
                    ("--basis-dim", "basis_dim", "basis_dim"),
                    ("--subspace-dim", "subspace_dim", "subspace_dim"),
                    ("--cells", "cells", "cells"), ("--rounds", "rounds", "rounds"),
                    ("--projection-share", "projection_share", "projection_share"),
                    ("--covariance", "covariance", "covariance"))


def _subspace_options(args: argparse.Namespace, method: str, d: int) -> dict[str, Any]:
    """The subspace keywords of ``private_barycenter``, checked before the data is read
    (public parameters only); refused, by flag, for a method that is not the subspace one.

    ``method`` is the method that will run (``auto`` resolved by the public ``d``)."""
    from privot._validation import check_int

    given = {flag: getattr(args, dest) for flag, dest, _ in SUBSPACE_OPTIONS
             if getattr(args, dest) is not None}
    if method != "subspace":
        if given:
            flag, value = next(iter(given.items()))
            ran = (f"this run has --method {args.method}" if args.method != "auto" else
                   f"--method auto runs {method} here (d = {d}"
                   + (", engine spark)" if args.engine == "spark" else ")"))
            raise InvalidParameterError(flag, value, "only with --method subspace (or "
                                        f"auto for d > 2 columns); {ran}")
        return {}
    if args.projection_dim.lower() != "auto":
        raise InvalidParameterError("--projection-dim", args.projection_dim,
                                    "omitted with the subspace method (its dimension is "
                                    "--subspace-dim)")
    if args.region != "none":
        raise InvalidParameterError("--region", args.region,
                                    "'none' with the subspace method (a coreset filter)")
    if args.basis is None:
        for flag in ("--image-shape", "--basis-dim"):
            if flag in given:
                raise InvalidParameterError(flag, given[flag], "only with --basis dct")
    elif args.image_shape is None:
        raise InvalidParameterError("--image-shape", None,
                                    f"H,W with H * W = d = {d} coordinate columns, "
                                    "required by --basis dct")
    elif args.image_shape[0] * args.image_shape[1] != d:
        raise InvalidParameterError(
            "--image-shape", ",".join(map(str, args.image_shape)),
            f"H,W with H * W = d = {d} coordinate columns (--basis dct)")
    out: dict[str, Any] = {"basis": args.basis, "image_shape": args.image_shape}
    if args.basis_dim is not None:
        out["basis_dim"] = check_int(args.basis_dim, "--basis-dim", minimum=1, maximum=d)
    if args.subspace_dim is not None:
        out["subspace_dim"] = check_int(args.subspace_dim, "--subspace-dim", minimum=0,
                                        maximum=d)
    if args.cells is not None:
        out["cells"] = check_int(args.cells, "--cells", minimum=1)
    if args.rounds is not None:
        out["rounds"] = check_int(args.rounds, "--rounds", minimum=0, maximum=100)
    if args.projection_share is not None:
        share = args.projection_share
        if not 0 < share < 1:
            raise InvalidParameterError("--projection-share", share, "a number in (0, 1)")
        out["projection_share"] = share
    if args.covariance is not None:
        out["covariance"] = args.covariance == "full"
    return out


def _perturbation_options(args: argparse.Namespace, method: str) -> dict[str, Any]:
    """The perturbation keywords of ``private_barycenter`` (``step``,
    ``balancing_rounds``, ``proxy_size``, ``splits``, ``calibration``), checked before
    the data is read (public parameters only). All five are refused with a method that
    is not the perturbation one;
    ``--splits`` and ``--calibration`` with ``--step lloyd``, ``--balancing-rounds``
    and ``--proxy-size`` with ``--step anchored``.

    ``method`` is the method that will run (``auto`` never runs perturbation)."""
    from privot._validation import check_int

    if method != "perturbation":
        for flag, value in (("--step", args.step),
                            ("--balancing-rounds", args.balancing_rounds),
                            ("--proxy-size", args.proxy_size), ("--splits", args.splits),
                            ("--calibration", args.calibration)):
            if value is not None:
                ran = (f"this run has --method {args.method}" if args.method != "auto"
                       else f"--method auto runs {method} here")
                raise InvalidParameterError(flag, value,
                                            f"only with --method perturbation; {ran}")
        return {}
    step = args.step or PERTURBATION_STEPS[0]
    if step == "lloyd":
        for flag, value in (("--splits", args.splits), ("--calibration", args.calibration)):
            if value is not None:
                raise InvalidParameterError(flag, value,
                                            "only with --step anchored (this run has "
                                            "--step lloyd, the default)")
        out: dict[str, Any] = {"step": step}
        if args.balancing_rounds is not None:
            out["balancing_rounds"] = check_int(args.balancing_rounds,
                                                "--balancing-rounds", minimum=0,
                                                maximum=10)
        if args.proxy_size is not None:
            out["proxy_size"] = check_int(args.proxy_size, "--proxy-size", minimum=100,
                                          maximum=MAX_PROXY_SIZE)
        return out
    for flag, value in (("--balancing-rounds", args.balancing_rounds),
                        ("--proxy-size", args.proxy_size)):
        if value is not None:
            raise InvalidParameterError(flag, value,
                                        "only with --step lloyd (this run has --step "
                                        "anchored)")
    return {"step": step, "splits": args.splits,
            "calibration": args.calibration or DEFAULT_CALIBRATION}


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


def _release_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``private_barycenter`` (bounds, m, epsilon, method and each
    method's options), every public choice checked before the data is read or anything
    is charged; refused by flag."""
    from privot._validation import check_int

    columns = list(args.columns)  # a list of >= 1 names (add_column_arguments)
    # the light checks first: a refused epsilon or m costs numpy's import only
    epsilon = check_epsilon_arguments(args)  # None: planned from --target-error
    m = check_int(args.m, "--m", minimum=1)
    from privot.barycenters import continental_us
    from privot.barycenters.api import choose_method

    bounds = _bounds(args.bounds, args.ball, len(columns))
    if args.method == "perturbation" and args.delta is None:
        raise InvalidParameterError("--delta", None,
                                    "a number in (0, 1) for --method perturbation")
    projection_dim = _projection_dim(args.projection_dim)
    region = continental_us() if args.region == "continental-us" else None
    if args.method in ("perturbation", "subspace") and args.engine != "duckdb":
        raise InvalidParameterError("--engine", args.engine,
                                    f"'duckdb' for --method {args.method} (it needs the "
                                    "points)")
    # the method that will run: auto resolved by the public d (the library's rule; on
    # Spark only the coreset runs, on the engine's leaf counts)
    runs = (args.method if args.method != "auto" else
            "coreset" if args.engine == "spark" else choose_method(len(columns)))
    if args.target_error is not None and runs != "subspace":
        # refused before the data is read: no error bound is stated for these methods
        raise InvalidParameterError(
            "--target-error", args.target_error, "--method subspace",
            message=f"--target-error cannot be planned for the {runs} method"
                    + (f" (auto, from the d = {len(columns)} coordinate columns)"
                       if args.method == "auto" else "")
                    + ": it states no finite error bound (docs/errors/barycenters.md); "
                    + f"{PLAN_ALTERNATIVE} states one; nothing was read or charged")
    subspace_kw = _subspace_options(args, runs, len(columns))
    perturbation_kw = _perturbation_options(args, runs)
    if args.plot_data and (args.engine != "duckdb" or len(columns) != 2):
        raise InvalidParameterError("--plot-data", True, "2-D data on the duckdb engine")
    return {"bounds": bounds, "m": m, "epsilon": epsilon, "delta": args.delta,
            "method": args.method, "population_size": args.population_size,
            "projection_dim": projection_dim, "iterations": args.iterations,
            "reg": args.reg, "placement": args.placement, "region": region,
            **perturbation_kw, **subspace_kw}


def _read_data(args: argparse.Namespace, bounds: Any, engine: Any
               ) -> tuple[Any, list[np.ndarray] | None, list[str], list[int]]:
    """The data the library reads: ``(data, groups, names, sizes)``. On Spark the
    engine's exact leaf counts (``groups`` None), else the rows in memory."""
    columns = list(args.columns)
    if args.engine == "spark":
        # exact leaf counts on Spark (coreset method only, checked before); noise,
        # placement and the barycenter run here on the counts
        from privot.barycenters import coreset_leaf_counts
        from privot.barycenters.coresets import MAX_DEPTH

        data = coreset_leaf_counts(args.input, bounds=bounds, depth=MAX_DEPTH,
                                   coordinate_columns=columns,
                                   group_column=args.group_column, engine=engine,
                                   sep=args.sep)
        names = (["all"] if args.group_column is None
                 else [group_label(key) for key in data.counts])
        return data, None, names, [int(data.n[key]) for key in data.counts]
    groups, names = _read_groups(args.input, columns, args.group_column, args.sep, engine)
    return groups, groups, names, [len(g) for g in groups]


def _describe(args: argparse.Namespace, result: Any) -> str:
    """The method that ran and its public plan, in words (public parameters only)."""
    how = f"{result.method} method" + (" (auto)" if args.method == "auto" else "")
    if result.method == "perturbation":  # its step, and k' only for the anchored one
        step = result.params.get("step")
        lloyd = result.params.get("lloyd")
        if step == "lloyd" and lloyd is not None:
            how += (f" (lloyd step: {lloyd['balancing_rounds']} balancing round(s), "
                    f"{lloyd['steps']} step(s))")
        elif step == "anchored":
            how += (f" (anchored step: k' = {result.params['splits']} parts, "
                    f"{result.params['iterations']} step(s))")
    plan = result.params.get("subspace")
    if plan is not None:  # its public plan
        how += (f" ({plan['mechanism']} noise, d' = {plan['subspace_dim']}, "
                f"{plan['cells']} cell(s), {plan['rounds']} Lloyd round(s))")
    if result.degenerate:  # a function of the release: public
        how += (f"; DEGENERATE: {result.distinct_atoms} distinct atom(s) of m = "
                f"{result.m}")
    return how


def _event(epsilon: float, delta: float | None) -> Any:
    """The release's privacy event (what the ledger charges)."""
    from privot.privacy.events import ApproxEvent, PureEvent

    return (PureEvent(epsilon, "barycenter") if delta is None
            else ApproxEvent(epsilon, delta, "barycenter"))


#: What a --target-error refusal suggests: the plan whose bound is finite at every epsilon.
PLAN_ALTERNATIVE = "--method subspace (its mean-only plan, --subspace-dim 0)"


def error_state(options: dict[str, Any], sizes: list[int], d: int,
                confidence: float | None) -> Any:
    """``state(epsilon) -> ErrorStatement``: :func:`~privot.barycenters.barycenter_error`
    of the release ``options`` describe, on the public group sizes (``privot barycenter
    --target-error`` and ``privot plan barycenter`` alike)."""
    from privot._params import build_params
    from privot.barycenters import BarycenterParams, barycenter_error
    from privot.barycenters.error import DEFAULT_CONFIDENCE

    conf = float(confidence or DEFAULT_CONFIDENCE)

    def state(eps: float) -> Any:
        params = build_params(BarycenterParams, None, {**options, "epsilon": eps})
        return barycenter_error(params, sizes, d, confidence=conf)

    return state


def _plan(args: argparse.Namespace, options: dict[str, Any], sizes: list[int],
          ledger: Any) -> Any:
    """``--target-error``: the smallest epsilon whose
    :func:`~privot.barycenters.barycenter_error` meets it, on the public group sizes
    (public by the relation; read, nothing charged yet), refused when the ledger cannot
    pay it."""
    state = error_state(options, sizes, len(args.columns), args.error_confidence)
    plan = plan_from_args(args, state, alternative=PLAN_ALTERNATIVE)
    check_plan_budget(plan, state, ledger, args, lambda e: _event(e, args.delta),
                      **RELEASE_RELATIONS["barycenter"])
    return plan


def _run(args: argparse.Namespace) -> int:
    options = _release_options(args)  # the public choices first, before the library
    from privot.barycenters import private_barycenter

    bounds, m, epsilon = options["bounds"], options["m"], options["epsilon"]
    out = OutputFolder(args.output, command="barycenter", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything charged
    # the ledger too: a missing file or a unit/relation it cannot record is refused now
    # (with --target-error the charge depends on the public group sizes, read below)
    ledger = ledger_from_args(
        args, **RELEASE_RELATIONS["barycenter"],
        planned=(None if epsilon is None else _event(epsilon, args.delta)),
        planned_note="" if args.delta is None else "by the (epsilon, delta) pair it proves")
    engine = engine_from_args(args)

    seconds: dict[str, float] = {}
    with capture_data_warnings("barycenter") as data_warnings:
        start = time.perf_counter()
        data, groups, names, sizes = _read_data(args, bounds, engine)
        seconds["read"] = time.perf_counter() - start
        for name, size in zip(names, sizes, strict=True):
            if size < m:  # group sizes are public: refused before anything is charged
                raise InvalidParameterError(
                    "--m", m, f"at most the size of the smallest group ({name!r} has "
                    f"{size} rows)")
        plan = None
        if epsilon is None:  # --target-error: planned on the public group sizes
            plan = _plan(args, options, sizes, ledger)
            options["epsilon"] = plan.epsilon
        # with a ledger: charged once, with the release's event, before any noise
        with ledger_spender(ledger, args, capability="barycenter",
                            **RELEASE_RELATIONS["barycenter"], output=out.path) as acct:
            result = private_barycenter(
                data, **{**options, "bounds": None if groups is None else bounds},
                rng=rng_from_args(args), accountant=acct, progress=progress_from_args(args))
        seconds["release"] = time.perf_counter() - start - seconds["read"]

    # -- publishable (public parameters and the noisy release) and curator-only files:
    # one code path with the library's BarycenterResult.save
    out.open()
    written = result.save(out.path, columns=list(args.columns), group_names=names,
                          region=options["region"],
                          release_extra={"engine": args.engine, **planned_release(plan)},
                          curator={"seconds": seconds},
                          data=groups if args.plot_data else None,
                          data_warnings=data_warnings)
    out.record(written)
    report = result.curator_report()

    c = result.cost
    kind = "pure DP" if c.delta == 0 else f"delta = {c.delta:g}"
    where = " on the population" if args.population_size else ""
    say = say_from_args(args)
    say(f"privot barycenter: {_describe(args, result)}, m = {m}, k = {len(sizes)} (group "
          f"labels and sizes public); spent epsilon = {c.epsilon:g} ({kind}){where}; unit "
          "= one row, replace-one" + ("" if result.secure else "; SEEDED: not for "
                                      "publication"))
    say(out.listing())
    say_notes(args, written)
    if ledger is not None:
        say(ledger_summary(ledger))
    say("privot barycenter: curator only (not private): rows "
          + ", ".join(f"{n}: {s} ({cl} clipped, {un} unusable)" for n, s, cl, un in zip(
              names, sizes, report["rows_clipped_per_group"],
              report["rows_unusable_per_group"], strict=True)), file=sys.stderr)
    return 0
