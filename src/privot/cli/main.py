"""The ``privot`` command: one subcommand per module, registered in :data:`SUBCOMMANDS`.

User mistakes (any :class:`~privot.errors.PrivotError`, bad arguments) print one line
on stderr and exit with status 2; no traceback. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from privot import __version__
from privot.errors import PrivotError

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: Modules that each define ``register(subparsers)``; a capability adds its own here.
SUBCOMMANDS: tuple[str, ...] = (
    "privot.cli.demo",
    "privot.cli.audit",
    "privot.cli.calibrate",
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="privot",
        description="Differentially private optimal transport: heatmaps, barycenters, "
                    "sampling and Wasserstein learning with checkable guarantees.",
    )
    parser.add_argument("--version", action="version", version=f"privot {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (PrivotError, FileNotFoundError) as exc:
        print(f"privot {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("privot: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
