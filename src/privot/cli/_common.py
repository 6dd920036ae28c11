"""Argument helpers shared by the subcommands.

Light on purpose: the parser of every subcommand imports this module, so numpy and the
validators are imported inside the functions that run after parsing (issue 9: a fast
``privot --help``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["add_engine_arguments", "add_output_arguments", "add_point_table_arguments",
           "add_seed_argument", "engine_from_args", "engine_name", "rng_from_args",
           "write_json", "positive_float", "to_json"]

SEED_WARNING = ("privot: --seed given: noise comes from a seeded generator; the output is "
                "reproducible and NOT fit for publication")


def add_seed_argument(parser: argparse.ArgumentParser) -> None:
    """``--seed N``: reproducible runs, marked not for publication."""
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N",
        help="seed a numpy generator for reproducible runs; the release is then marked "
             "secure=False (not for publication). Default: OS entropy.")


def rng_from_args(args: argparse.Namespace) -> np.random.Generator | None:
    """A seeded generator when ``--seed`` was given (with a warning), else None (secure)."""
    if args.seed is None:
        return None
    import numpy as np

    from privot._validation import check_int

    seed = check_int(args.seed, "--seed", minimum=0)
    print(SEED_WARNING, file=sys.stderr)
    return np.random.default_rng(seed)


def engine_name(text: str) -> str:
    """argparse type of ``--engine``: ``local`` is the old name of ``duckdb``."""
    return "duckdb" if text == "local" else text


def add_engine_arguments(parser: argparse.ArgumentParser, help: str) -> None:
    """``--engine duckdb|spark`` (``help`` says what runs there) with DuckDB's
    ``--threads`` and ``--memory-limit``."""
    parser.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                        type=engine_name, help=help + " (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="DuckDB worker threads (default: one per core)")
    parser.add_argument("--memory-limit", default=None, metavar="SIZE",
                        help="DuckDB memory limit such as 4GB; past it, aggregates spill "
                             "to a temporary folder (default: DuckDB's, 80%% of the RAM)")


def add_point_table_arguments(parser: argparse.ArgumentParser) -> None:
    """The columns of a table of user points (``--user-column``, ``--x-column``,
    ``--y-column``) and how to read a text file (``--names``, ``--sep``)."""
    parser.add_argument("--user-column", default="user_id", help="default: %(default)s")
    parser.add_argument("--x-column", default="longitude", help="default: %(default)s")
    parser.add_argument("--y-column", default="latitude", help="default: %(default)s")
    add_text_file_arguments(parser, names_help=(
        "column names of a header-less text file, comma-separated "
        "(Gowalla: user_id,time,latitude,longitude,location_id)"))


def add_text_file_arguments(parser: argparse.ArgumentParser, *,
                            names_help: str | None = None) -> None:
    """``--names`` (header-less text files; only when ``names_help`` is given) and
    ``--sep``."""
    if names_help is not None:
        parser.add_argument("--names", default=None, metavar="A,B,...", help=names_help)
    parser.add_argument("--sep", default=None,
                        help="text delimiter (default from the suffix)")


def add_output_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    """``--output/-o DIR`` (a new or empty folder) and ``--force``."""
    parser.add_argument("--output", "-o", default=default, metavar="DIR",
                        help="output folder, new or empty (default: %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing non-empty output folder, replacing "
                             "the files privot writes there")


def engine_from_args(args: argparse.Namespace) -> Any:
    """The engine of ``--engine``/``--threads``/``--memory-limit``: a name, or a
    configured :class:`~privot.engines.duckdb.DuckDBEngine`."""
    from privot.errors import InvalidParameterError

    tuned = {k: v for k, v in (("--threads", args.threads),
                                 ("--memory-limit", args.memory_limit)) if v is not None}
    if not tuned:
        return args.engine
    if args.engine != "duckdb":
        name, value = next(iter(tuned.items()))
        raise InvalidParameterError(name, value, "only with --engine duckdb (Spark is "
                                    "configured through its session)")
    from privot._validation import check_int
    from privot.engines.duckdb import DuckDBEngine, check_memory_limit

    threads = None if args.threads is None else check_int(args.threads, "--threads",
                                                          minimum=1)
    limit = (None if args.memory_limit is None
             else check_memory_limit(args.memory_limit, "--memory-limit"))
    return DuckDBEngine(threads=threads, memory_limit=limit)


def positive_float(text: str) -> float:
    """argparse type: a float; range checks are left to the library's validators."""
    try:
        return float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from exc


def _jsonable(obj: Any) -> Any:
    from privot._jsonable import jsonable

    return jsonable(obj)


def to_json(payload: Any) -> str:
    """``payload`` as indented JSON text (numpy scalars and arrays converted)."""
    return json.dumps(payload, indent=2, default=_jsonable)


def write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON (numpy scalars converted)."""
    path.write_text(to_json(payload) + "\n")
