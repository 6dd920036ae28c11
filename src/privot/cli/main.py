"""The ``privot`` command: one subcommand per module, registered in :data:`SUBCOMMANDS`.

User mistakes (any :class:`~privot.errors.PrivotError`, bad arguments) print one line
on stderr and exit with status 2; no traceback. Anything else is a bug and keeps its
traceback. :func:`main` returns the exit status instead of raising ``SystemExit``
(also for ``--help`` and argument errors), so it can be called in-process.

Privacy
-------
No release here; each subcommand states its unit, relation and guarantee in its
``--help`` and ``release.json``. Errors are raised before any budget is charged (the
release paths are total), so an exit status of 2 and its one line depend on the
arguments and, for a refusal such as "no usable row", on the data as seen by the
curator, never on the noise; the output folder's split into publishable and curator
files is :mod:`privot.cli._output`'s.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from privot import __version__
from privot.cli._common import DryRunDone
from privot.errors import PrivotError

__all__ = ["SUBCOMMANDS", "build_parser", "console", "main"]

#: Modules that each define ``register(subparsers)``; a capability adds its own here
#: (the command is the module's name with ``_`` spelt ``-``: ``example_data`` ->
#: ``privot example-data``).
SUBCOMMANDS: tuple[str, ...] = (
    "privot.cli.demo",
    "privot.cli.audit",
    "privot.cli.calibrate",
    "privot.cli.heatmap",
    "privot.cli.barycenter",
    "privot.cli.sample",
    "privot.cli.learn",
    "privot.cli.repair",
    "privot.cli.budget",
    "privot.cli.plan",
    "privot.cli.example_data",
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2).

    argparse's default prints the whole usage block before the message; a user
    mistake should read as one line, like the errors raised by the library.
    Subparsers inherit the class (``add_subparsers`` uses ``type(self)``).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = _Parser(
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


#: Commands whose process never needs an array backend of POT (torch, JAX, TensorFlow,
#: CuPy): :func:`console` keeps POT from importing them (about 1-3 s of torch import).
NO_ARRAY_BACKENDS = ("heatmap", "barycenter", "sample")
#: POT's switches (read once, when POT is first imported).
POT_BACKEND_SWITCHES = ("POT_BACKEND_DISABLE_PYTORCH", "POT_BACKEND_DISABLE_JAX",
                        "POT_BACKEND_DISABLE_TENSORFLOW", "POT_BACKEND_DISABLE_CUPY")


def console() -> int:
    """The ``privot`` executable: :func:`main` in a process of its own.

    For the commands of :data:`NO_ARRAY_BACKENDS` the process is ours alone, so POT's
    array backends are switched off (its documented environment variables, unless the
    caller set them) before POT is imported: POT's exact solvers then load neither torch
    nor the other array libraries, which these commands never use. :func:`main` called
    in-process (tests, notebooks) changes nothing: a library user's POT keeps its
    backends.
    """
    import os

    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in NO_ARRAY_BACKENDS and "ot" not in sys.modules:
        for key in POT_BACKEND_SWITCHES:
            os.environ.setdefault(key, "1")
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and argument errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.handler(args) or 0)
    except DryRunDone as done:  # --dry-run said its line
        return done.code
    except (PrivotError, FileNotFoundError) as exc:
        message = " ".join(str(exc).splitlines())  # always one line
        print(f"privot {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("privot: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
