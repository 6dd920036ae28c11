"""``privot barycenter INPUT``: a differentially private Wasserstein barycenter of a table.

Reads a CSV/TSV/Parquet table (one row per person: coordinate columns and, optionally,
a group column), releases ``m`` equally weighted support points with the private
coreset method (paper 000 Alg. 2, epsilon-DP) or output perturbation (paper 000
Alg. 1 / paper 001 Thm 5 with splitting, (epsilon, delta)-DP) and writes, into the
output folder:

* ``support.csv`` -- the private support points (one row per point, the coordinate
  columns, weight ``1/m``);
* ``barycenter.png`` -- the support over a light scatter of the input (2-D data only;
  the scatter shows raw data: for the curator's eyes, not for publication);
* ``release.json`` -- what was released and spent (publishable), and, under
  ``curator_only``, exact counts of the raw data that must **not** be published.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from privot._validation import check_epsilon, check_int
from privot.cli._common import add_seed_argument, positive_float, rng_from_args, write_json
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "barycenter", help="differentially private Wasserstein barycenter of groups of "
                           "points (papers 000 and 001)",
        description="Release m equally weighted points that minimise the average W_p^p to "
                    "k sensitive groups of points, with differential privacy (unit: one "
                    "row = one person in one group; replace-one neighbouring).",
        epilog="Rows outside --bounds are clipped to them and counted (curator-only). "
               "Exit status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--columns", default="longitude,latitude", metavar="A,B,...",
                   help="coordinate columns, comma-separated (default: %(default)s)")
    p.add_argument("--group-column", default=None, metavar="NAME",
                   help="column naming each row's group (default: one group)")
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
                   help="the rows are a uniform sample of a population of N people per "
                        "group: the budget is met on the population by amplification")
    p.add_argument("--placement", choices=("scaled", "uniform", "centre"), default="scaled",
                   help="coreset points in their cell (default: %(default)s)")
    p.add_argument("--region", choices=("none", "continental-us"), default="none",
                   help="public region for the coreset points (default: %(default)s)")
    p.add_argument("--reg", type=positive_float, default=1e-3,
                   help="entropic regularisation of the barycenter solver "
                        "(default: %(default)s)")
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local: the rows are read once, in memory; spark: the coreset's "
                        "cell counts run on Spark (coreset method; no data scatter in the "
                        "PNG) (default: %(default)s)")
    p.add_argument("--sep", default=None, help="text delimiter (default from the suffix)")
    p.add_argument("--output", "-o", default="privot-barycenter", metavar="DIR",
                   help="output folder (default: %(default)s)")
    add_seed_argument(p)
    p.set_defaults(handler=_run)


def _bounds(box: list[float] | None, ball: list[float] | None, d: int):
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


def _read_groups(path: str, columns: list[str], group_column: str | None, sep: str | None,
                 bounds) -> tuple[list[np.ndarray], list[str], list[int]]:
    """The rows as groups, in memory. A row with a missing or non-finite coordinate is
    kept, at the centre of the bounds, and counted: dropping it would change the public
    group size the replace-one guarantee relies on (the engines do the same). Returns
    the groups, their names and the number of such rows per group."""
    from privot.engines import get_backend

    backend = get_backend("local")
    wanted = columns + ([group_column] if group_column else [])
    data = backend.read(path, columns=wanted, float_columns=columns, sep=sep)
    cols = backend.collect_to_numpy(data, wanted)
    x = np.column_stack([np.asarray(cols[c], dtype=np.float64) for c in columns])
    if len(x) == 0:
        raise InvalidDataError(f"{path} has no rows")
    bad = ~np.all(np.isfinite(x), axis=1)
    x[bad] = bounds.centre
    if group_column is None:
        return [x], ["all"], [int(bad.sum())]
    labels = np.asarray(cols[group_column]).astype(str)
    names = sorted(set(labels.tolist()))
    return ([x[labels == name] for name in names], names,
            [int(bad[labels == name].sum()) for name in names])


def _run(args: argparse.Namespace) -> int:
    from privot.barycenters import continental_us, private_barycenter

    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    if not columns:
        raise InvalidParameterError("--columns", args.columns, "at least one column name")
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    m = check_int(args.m, "--m", minimum=1)
    bounds = _bounds(args.bounds, args.ball, len(columns))
    if args.method == "perturbation" and args.delta is None:
        raise InvalidParameterError("--delta", None,
                                    "a number in (0, 1) for --method perturbation")
    pd_arg = args.projection_dim.lower()
    projection_dim: int | str | None
    if pd_arg == "auto":
        projection_dim = "auto"
    elif pd_arg == "none":
        projection_dim = None
    else:
        try:
            projection_dim = int(pd_arg)
        except ValueError as exc:
            raise InvalidParameterError("--projection-dim", args.projection_dim,
                                        "an integer >= 1, 'auto' or 'none'") from exc
        check_int(projection_dim, "--projection-dim", minimum=1)
    region = continental_us() if args.region == "continental-us" else None
    if args.method == "perturbation" and args.engine != "local":
        raise InvalidParameterError("--engine", args.engine,
                                    "'local' for --method perturbation (it needs the points)")
    groups: list[np.ndarray] | None = None
    if args.engine == "spark":
        # exact leaf counts on Spark (coreset method only, checked above); noise,
        # placement and the barycenter run here on the counts
        from privot.barycenters.coresets import MAX_DEPTH
        from privot.engines import coreset_leaf_counts

        data = coreset_leaf_counts(args.input, bounds=bounds, depth=MAX_DEPTH,
                                   coordinate_columns=columns,
                                   group_column=args.group_column, backend=args.engine,
                                   sep=args.sep)
        names = [str(key) if key is not None else "all" for key in data.counts]
        sizes = [int(data.n[key]) for key in data.counts]
        imputed = [0] * len(names)  # the engine already counts them as clipped
    else:
        groups, names, imputed = _read_groups(args.input, columns, args.group_column,
                                              args.sep, bounds)
        data = groups
        sizes = [len(g) for g in groups]
    for name, size in zip(names, sizes, strict=True):
        if size < m:
            raise InvalidParameterError(
                "--m", m, f"at most the size of the smallest group ({name!r} has {size} rows)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        result = private_barycenter(
            data, bounds=None if groups is None else bounds, m=m, epsilon=epsilon,
            delta=args.delta, method=args.method, population_size=args.population_size,
            projection_dim=projection_dim, splits=args.splits, iterations=args.iterations,
            calibration=args.calibration, reg=args.reg, placement=args.placement,
            region=region, rng=rng_from_args(args))
    notes = [str(w.message) for w in caught]
    for note in notes:
        print(f"privot barycenter: warning: {note}", file=sys.stderr)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    header = ",".join(columns + ["weight"])
    np.savetxt(out / "support.csv", np.column_stack([result.support, result.weights]),
               delimiter=",", header=header, comments="", fmt="%.10g")
    wrote = ["support.csv", "release.json"]
    if len(columns) == 2:
        _write_png(out / "barycenter.png", groups, names, result, columns, region)
        wrote.insert(1, "barycenter.png")
    summary = result.to_dict()
    summary.pop("support")
    summary.pop("weights")
    summary["columns"] = columns
    summary["groups"] = names
    summary["warnings"] = notes
    curator = summary["curator_only"]
    curator.pop("n_clipped")
    curator.update({
        "rows_per_group": dict(zip(names, sizes, strict=True)),
        "rows_clipped_per_group": {name: int(c) + extra for name, c, extra
                                   in zip(names, result.n_clipped, imputed, strict=True)},
        "note": "rows with a missing or non-finite coordinate are placed at the centre "
                "of the bounds and counted as clipped",
    })
    write_json(out / "release.json", summary)
    c = result.cost
    kind = "pure DP" if c.delta == 0 else f"delta = {c.delta:g}"
    where = " on the population" if args.population_size else ""
    print(f"privot barycenter: {result.method} method, m = {m}, k = {len(sizes)}; spent "
          f"epsilon = {c.epsilon:g} ({kind}){where}; unit = one row, replace-one"
          + ("" if result.secure else "; SEEDED: not for publication"))
    print(f"wrote {out}/" + f", {out}/".join(wrote))
    return 0


def _write_png(path: Path, groups, names, result, columns, region) -> None:
    from privot.barycenters import plot_barycenters

    outline = None if region is None else getattr(region, "vertices", None)
    fig = plot_barycenters(groups or [], {f"private ({result.method})": result.support},
                           group_names=names, outline=outline, xlabel=columns[0],
                           ylabel=columns[1],
                           title=f"private barycenter, m = {result.m}, "
                                 f"epsilon = {result.cost.epsilon:g}")
    fig.savefig(path, dpi=120, bbox_inches="tight")
