"""``privot demo``: the main job, a report on every implemented capability."""

from __future__ import annotations

import argparse
import sys

from privot.cli._common import add_seed_argument, rng_from_args

__all__ = ["register"]

FORCED = ("rerun with --force to run there: the earlier run's files, its budget ledgers "
          "included, are moved into earlier-runs/<time>/ first, never deleted")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run every capability on real packaged data and write a report",
        description="Run each implemented capability on real data with sensible defaults "
                    "and write report.md, results.json and PNG figures.")
    p.add_argument("--output", "-o", default="privot-demo", metavar="DIR",
                   help="report folder (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="smaller audits, grids and training runs: about half the full run's "
                        "time (the full run took 79 s on 2 quiet cores)")
    p.add_argument("--force", action="store_true",
                   help="run in a used folder: what an earlier run left there (its budget "
                        "ledgers included) is first moved into DIR/earlier-runs/<time>/, "
                        "never deleted")
    add_seed_argument(p)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from privot._folders import check_output_folder

    # before the heavy imports: a used folder (an earlier run's ledgers) is refused
    check_output_folder(args.output, force=args.force, forced=FORCED)
    from privot.demo import run_demo

    result = run_demo(args.output, rng=rng_from_args(args), quick=args.quick,
                      progress=True, force=args.force)
    if result.earlier_run is not None:
        print(f"privot demo: the earlier run's files were moved to {result.earlier_run}",
              file=sys.stderr)
    print(f"privot demo: {len(result.sections)} sections in {result.seconds:.1f} s; "
          f"report written to {result.report}")
    return 0
