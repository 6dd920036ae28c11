"""Argument helpers shared by the subcommands.

Light on purpose: the parser of every subcommand imports this module, so numpy and the
validators are imported inside the functions that run after parsing (issue 9: a fast
``privot --help``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from privot.privacy.ledger import Ledger

__all__ = ["ASPECTS", "DEFAULT_ASPECT", "DEFAULT_COLUMNS", "DryRunDone", "LEDGER_ENV",
           "RELEASE_RELATIONS", "add_aspect_argument", "add_column_arguments",
           "add_engine_arguments", "add_epsilon_arguments", "add_ledger_arguments",
           "add_output_arguments", "add_point_table_arguments", "add_progress_arguments",
           "add_renamed_argument", "add_seed_argument", "check_epsilon_arguments",
           "check_plan_budget", "check_target_arguments", "column_list", "engine_from_args",
           "engine_name", "ledger_from_args", "ledger_path", "ledger_spender", "ledger_summary",
           "plan_from_args", "planned_release", "positive_float", "progress_from_args",
           "refuse_swapped_columns", "rng_from_args", "say_from_args", "say_notes", "to_json",
           "write_json"]

#: :data:`privot.privacy.ledger.LEDGER_ENV`, repeated so that parsing imports nothing
#: heavy (tests/cli/test_cli_budget.py checks they agree).
LEDGER_ENV = "PRIVOT_LEDGER"

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


# -- --aspect: one default for every grid command (heatmap, sample) ---------------------

#: :data:`privot.grid.ASPECTS`, repeated so that parsing imports nothing heavy
#: (tests/cli/test_cli_imports.py checks they agree).
ASPECTS = ("square", "stretch")
#: The default of :class:`privot.grid.Grid` and of every grid command: square cells.
DEFAULT_ASPECT = "square"


def add_aspect_argument(parser: argparse.ArgumentParser, *, changed: str = "") -> None:
    """``--aspect square|stretch``, default square for every command.

    Why square: it is the library's default (:class:`privot.grid.Grid`), so a command
    line and the library call it stands for build the same grid; and a square cell is as
    long as it is wide, so a distance on the grid (the heatmap's EMD, the sampler's W_p)
    means the same along both axes. A square ``--bounds`` gives the same grid either way.
    ``changed`` is appended to the help (a command whose default changed says so).
    """
    parser.add_argument(
        "--aspect", choices=ASPECTS, default=DEFAULT_ASPECT,
        help="cells of a non-square --bounds: square (default, as in the library's Grid: "
             "the grid covers the square of side max(width, height) from the lower-left "
             "corner, so every cell is as long as it is wide and distances mean the same "
             "along both axes; cells past the short side receive no point) or stretch "
             "(each axis cut into DELTA cells of its own length)"
             + (f". {changed}" if changed else ""))


# -- --progress / --quiet: one meaning for every data command ----------------------------

def add_progress_arguments(parser: argparse.ArgumentParser, *,
                           bar: str = "the library's progress bars") -> None:
    """``--progress`` and ``--quiet`` (mutually exclusive), the same on every data command.

    Neither: privot's one progress rule (:func:`privot._progress.show_progress` of None):
    bars on stderr only when stderr is a terminal. ``--progress``: bars on stderr always.
    ``--quiet``: no bars, and nothing printed but errors and warnings (the release summary
    on stdout and the curator's summary lines on stderr are left out; the files are
    written as always). ``bar`` says what the bars show.
    """
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("--progress", action="store_const", const=True, default=None,
                           help=f"show {bar} on stderr even when it is not a terminal "
                                "(default: only when stderr is a terminal)")
    verbosity.add_argument("--quiet", action="store_true",
                           help="print nothing but errors and warnings: no progress bar, "
                                "no summary on stdout, no curator lines on stderr")


def progress_from_args(args: argparse.Namespace) -> bool | None:
    """The ``progress=`` of the library calls: False with ``--quiet``, True with
    ``--progress``, else None (bars only when stderr is a terminal)."""
    if getattr(args, "quiet", False):
        return False
    return True if getattr(args, "progress", None) else None


def say_from_args(args: argparse.Namespace) -> Any:
    """``print``, or a no-op with ``--quiet`` (summaries on stdout and the curator's lines
    on stderr alike; errors and warnings are not printed through it)."""
    if getattr(args, "quiet", False):
        return lambda *a, **k: None
    return print


# -- a flag renamed to the library's name, the old spelling kept as a hidden alias -------

class _RenamedAction(argparse.Action):
    """One spelling of an option with two (the library's name and an old hidden alias):
    stores the value (mapped by ``convert``), refusing the second spelling."""

    def __init__(self, *args: Any, convert: Any = None,
                 names: tuple[str, str] = ("", ""), **kwargs: Any) -> None:
        self.convert = convert
        self.names = names
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        seen = dict(getattr(namespace, "_renamed_flags", {}))
        flag = option_string or self.option_strings[0]
        other = seen.get(self.dest)
        if other is not None and other != flag:
            new, old = self.names
            raise argparse.ArgumentError(
                self, f"give {new} once: {old} is its old name, accepted alone, not "
                      f"together with {new}")
        seen[self.dest] = flag
        namespace._renamed_flags = seen
        setattr(namespace, self.dest, values if self.convert is None
                else self.convert(values))


def add_renamed_argument(parser: argparse.ArgumentParser | Any, flag: str, old: str, *,
                         dest: str, old_choices: Mapping[str, str] | None = None,
                         **kwargs: Any) -> None:
    """``flag`` (the library's parameter name) with ``old``, its previous spelling, kept
    as a hidden alias to the same ``dest`` so that existing command lines keep working;
    both given at once are refused (one line, exit status 2).

    ``old_choices`` maps the old flag's values to the new one's (``--baseline none`` is
    ``--method pyramid``); without it the old flag takes the same values.
    """
    parser.add_argument(flag, dest=dest, action=_RenamedAction, names=(flag, old),
                        **kwargs)
    old_kwargs = {k: v for k, v in kwargs.items() if k in ("type", "metavar")}
    if old_choices is not None:
        old_kwargs["choices"] = tuple(old_choices)
        convert = old_choices.__getitem__
    else:
        if "choices" in kwargs:
            old_kwargs["choices"] = kwargs["choices"]
        convert = None
    parser.add_argument(old, dest=dest, action=_RenamedAction, convert=convert,
                        names=(flag, old), default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS, **old_kwargs)


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


#: Default coordinate columns of ``--columns`` (longitude, then latitude).
DEFAULT_COLUMNS = ("longitude", "latitude")
#: The old spellings of ``--columns``, kept as hidden aliases (index of the column each
#: one names).
COLUMN_ALIASES = {"--x-column": 0, "--y-column": 1}


def column_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (empty names dropped)."""
    return [c.strip() for c in str(text).split(",") if c.strip()]


def _spelled(namespace: argparse.Namespace, flag: str) -> set[str]:
    """The column flags given so far (recorded on the namespace), ``flag`` added."""
    seen = set(getattr(namespace, "_column_flags", ()))
    seen.add(flag)
    namespace._column_flags = tuple(sorted(seen))
    return seen


def _both_spellings(seen: set[str]) -> bool:
    return "--columns" in seen and any(a in seen for a in COLUMN_ALIASES)


_BOTH = ("give the coordinate columns once: --columns A,B (the old --x-column/--y-column "
         "are accepted alone, not together with --columns)")


class _ColumnsAction(argparse.Action):
    """``--columns A,B[,...]``: a list of names, ``count`` of them when given."""

    def __init__(self, *args: Any, count: int | None = None, **kwargs: Any) -> None:
        self.count = count
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if _both_spellings(_spelled(namespace, "--columns")):
            raise argparse.ArgumentError(self, _BOTH)
        names = column_list(values)
        if self.count is not None and len(names) != self.count:
            raise argparse.ArgumentError(
                self, f"{self.count} comma-separated column names (x,y), got {values!r}")
        if not names:
            raise argparse.ArgumentError(self, f"at least one column name, got {values!r}")
        setattr(namespace, self.dest, names)


class _ColumnAliasAction(argparse.Action):
    """A hidden old spelling (``--x-column NAME``): replaces one name of ``--columns``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        flag = option_string or self.option_strings[0]
        if _both_spellings(_spelled(namespace, flag)):
            raise argparse.ArgumentError(self, _BOTH)
        current = getattr(namespace, self.dest, None)
        names = list(DEFAULT_COLUMNS if current is None else current)
        names[COLUMN_ALIASES[flag]] = str(values)
        setattr(namespace, self.dest, names)


def add_column_arguments(parser: argparse.ArgumentParser, *, count: int | None = 2,
                         user: bool = False, group: bool = False,
                         columns_help: str | None = None) -> None:
    """The column convention of every command that reads a table of points.

    * ``--columns A,B[,...]`` -- the coordinate columns, comma-separated, in order
      (``count`` of them: 2, x then y, for a grid; any number for a barycenter), stored
      as a list in ``args.columns`` (default :data:`DEFAULT_COLUMNS`);
    * ``--user-column NAME`` (``user=True``) and ``--group-column NAME`` (``group=True``)
      -- the id columns;
    * ``--x-column`` / ``--y-column`` -- the old spellings of ``--columns``' first and
      second name, hidden from ``--help`` and still accepted alone (existing scripts);
      given together with ``--columns`` they are refused (one line, exit status 2).
    """
    default = ",".join(DEFAULT_COLUMNS)
    if columns_help is None:
        columns_help = ("coordinate columns x,y (for geographic data longitude,latitude), "
                        f"comma-separated (default: {default})")
    parser.add_argument("--columns", action=_ColumnsAction, count=count,
                        default=list(DEFAULT_COLUMNS),
                        metavar="A,B" if count == 2 else "A,B,...", help=columns_help)
    for flag in COLUMN_ALIASES:
        parser.add_argument(flag, action=_ColumnAliasAction, dest="columns",
                            default=argparse.SUPPRESS, metavar="NAME",
                            help=argparse.SUPPRESS)
    if user:
        parser.add_argument("--user-column", default="user_id", metavar="NAME",
                            help="column of the user ids (default: %(default)s)")
    if group:
        parser.add_argument("--group-column", default=None, metavar="NAME",
                            help="column naming each row's group (default: one group). "
                                 "Group labels and sizes are published exactly.")


def add_point_table_arguments(parser: argparse.ArgumentParser) -> None:
    """The columns of a table of user points (``--columns X,Y``, ``--user-column``;
    :func:`add_column_arguments`) and how to read a text file (``--names``, ``--sep``)."""
    add_column_arguments(parser, count=2, user=True)
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


def to_json(payload: Any) -> str:
    """``payload`` as indented JSON text: :func:`privot._jsonable.to_json` (the one writer;
    imported here lazily, numpy being heavy for the parser)."""
    from privot._jsonable import to_json as _to_json

    return _to_json(payload)


def write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON: :func:`privot._jsonable.write_json`."""
    from privot._jsonable import write_json as _write_json

    _write_json(path, payload)


# -- the privacy budget ledger (privot.privacy.ledger) -------------------------------------

#: The unit and neighbouring relation each releasing command states (the library's:
#: heatmaps user add/remove; sampling user local with the user list public; barycenters
#: and DP-SGD learning row replace-one inside a group, the group sizes public). One
#: table for the commands, ``privot budget init --for`` and the docs
#: (``docs/privacy/budget.md``).
RELEASE_RELATIONS: dict[str, dict[str, str]] = {
    "heatmap": {"unit": "user", "relation": "add-remove"},
    "barycenter": {"unit": "row", "relation": "replace-one-in-group"},
    "sample": {"unit": "user", "relation": "local"},
    "learn": {"unit": "row", "relation": "replace-one-in-group"},
    "repair": {"unit": "row", "relation": "replace-one-in-group"},
}


def add_ledger_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ledger PATH`` (default ``$PRIVOT_LEDGER``) and ``--convert`` of a releasing
    command."""
    group = parser.add_argument_group(
        "privacy budget ledger", "charge the release to the data set's budget ledger "
        "(created by 'privot budget init'); the charge is committed before any noise is "
        "drawn, and a release the ledger cannot pay is refused with nothing written")
    group.add_argument("--ledger", default=None, metavar="PATH",
                       help=f"the ledger file to charge (default: ${LEDGER_ENV} when set; "
                            "none: no ledger)")
    group.add_argument("--convert", action="store_true",
                       help="allow recording the release on a ledger of another unit or "
                            "relation by the documented conversion (group privacy: its "
                            "cost may be restated as a group of 2; docs/privacy/budget.md)"
                            "; off by default, units and relations are never mixed "
                            "silently")
    group.add_argument("--dry-run", action="store_true",
                       help="say what the release would charge the ledger and whether the "
                            "ledger would accept it, then stop: nothing is read, charged "
                            "or written (exit status 0 if it would be accepted, 1 if not)")


class DryRunDone(Exception):  # noqa: N818 (not an error: the command's planned end)
    """A ``--dry-run`` said its line; :func:`privot.cli.main.main` returns ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def ledger_path(arg: str | None, *, flag: str = "--ledger") -> tuple[str, str] | None:
    """``(path, where it came from)``: ``arg`` if given, else ``$PRIVOT_LEDGER`` when set
    and non-empty, else None."""
    if arg is not None:
        return arg, flag
    env = os.environ.get(LEDGER_ENV)
    return (env, f"${LEDGER_ENV}") if env else None


def open_ledger(path: str, source: str) -> Ledger:
    """:meth:`Ledger.open`, its refusal naming the flag (or variable) ``source``."""
    from privot.errors import InvalidParameterError
    from privot.privacy.ledger import Ledger

    try:
        return Ledger.open(path)
    except InvalidParameterError as exc:
        raise InvalidParameterError(source, path, exc.allowed) from None


def ledger_from_args(args: argparse.Namespace, *, unit: str, relation: str,
                     planned: Any = None, planned_note: str = "") -> Ledger | None:
    """The ledger of ``--ledger``/``$PRIVOT_LEDGER``, or None (no ledger: as before).

    Called before the data is read: a missing or invalid file, and a ledger that cannot
    record a ``unit``/``relation`` release (or only by a conversion without
    ``--convert``), are refused here (exit status 2) before anything is read or charged.

    With ``--dry-run``: says on stdout what the release would charge (``planned``, the
    event its arguments determine; ``planned_note`` qualifies it, e.g. "by the pair it
    proves") and whether the ledger would accept it, then stops the command
    (:class:`DryRunDone`) before anything is read, charged or written.
    """
    ledger = _ledger_for(args, unit=unit, relation=relation)
    if getattr(args, "dry_run", False):
        _dry_run(args, ledger, unit=unit, relation=relation, planned=planned,
                 note=planned_note)
    return ledger


def _dry_run(args: argparse.Namespace, ledger: Ledger | None, *, unit: str, relation: str,
             planned: Any, note: str) -> None:
    """Say what the release would charge and stop (:class:`DryRunDone`)."""
    what = f"a {unit}-level {relation} release"
    if planned is not None:
        what += f" of {planned.describe()}"
    if note:
        what += f" ({note})"
    head = f"privot {args.command}: dry run: "
    tail = "; nothing was read, charged or written"
    if ledger is None:
        print(f"{head}{what}; no ledger (--ledger or ${LEDGER_ENV}), so nothing would be "
              f"charged{tail}")
        raise DryRunDone(0)
    if planned is None:
        print(f"{head}{what} on ledger {ledger.name!r}: the charge depends on sizes read "
              f"from the data{tail}")
        raise DryRunDone(0)
    p = ledger.preview(planned, unit=unit, relation=relation, convert=args.convert)
    group = "" if p.conversion == 1 else f" as a group of {p.conversion}"
    route = f", {p.view} route" if p.view else ""
    eps_t = ledger.total[0]
    if p.accepted:
        print(f"{head}{what} would be charged eps={p.charged:.6g}{group} on ledger "
              f"{ledger.name!r} ({ledger.filter} filter{route}): accepted, spent "
              f"{p.spent_before:.6g} -> {p.spent_after:.6g} of {eps_t:g}, "
              f"{p.remaining_after:.6g} left{tail}")
        raise DryRunDone(0)
    print(f"{head}{what}{group} would be refused by ledger {ledger.name!r}: {p.reason}; "
          f"{p.remaining_after:.6g} of {eps_t:g} left{tail}")
    raise DryRunDone(1)


def _ledger_for(args: argparse.Namespace, *, unit: str, relation: str) -> Ledger | None:
    """:func:`ledger_from_args` without the dry run."""
    from privot.errors import InvalidParameterError

    found = ledger_path(args.ledger)
    if found is None:
        if args.convert:
            raise InvalidParameterError("--convert", True, f"only with --ledger PATH or "
                                        f"${LEDGER_ENV} (there is no ledger to convert to)")
        return None
    path, source = found
    ledger = open_ledger(path, source)
    from privot.privacy.ledger import accepting_ledgers, conversion_factor

    k = conversion_factor(unit, relation, ledger.unit, ledger.relation)
    if k is None:
        raise InvalidParameterError(
            source, path, f"a ledger that can record this {unit}-level {relation} release",
            message=f"ledger {ledger.name!r} ({path}) is {ledger.unit}-level "
                    f"{ledger.relation} and cannot record this {unit}-level {relation} "
                    "release: no documented conversion leads there "
                    "(docs/privacy/budget.md); nothing was read or charged. A ledger of "
                    f"{accepting_ledgers(unit, relation)} would record it.")
    if k > 1 and not args.convert:
        raise InvalidParameterError(
            "--convert", False, f"given to record it as a group of {k}",
            message=f"this {unit}-level {relation} release counts as a group of {k} on "
                    f"ledger {ledger.name!r} ({ledger.unit}-level {ledger.relation}): its "
                    f"epsilon would be charged {k} times (docs/privacy/budget.md); nothing "
                    "was read or charged. Rerun with --convert to record it so, or use a "
                    f"ledger of {accepting_ledgers(unit, relation, group=1)}.")
    return ledger


@contextlib.contextmanager
def ledger_spender(ledger: Ledger | None, args: argparse.Namespace, *, capability: str,
                   unit: str, relation: str, output: str | os.PathLike[str],
                   event: Any = None, mechanism: str | None = None,
                   params: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """The ``accountant=`` of a release charged to ``ledger`` (None without a ledger).

    With ``event`` (and ``mechanism``, ``params``): :meth:`Ledger.release`, the whole
    release charged on entering the block. Without: :meth:`Ledger.accountant`
    (``pending=True``), charged once by the API before its noise. Either way the
    charge is closed "released" when the block ends and "failed" on an exception. A
    refusal is re-raised as one line naming the ledger and what it has left.
    """
    if ledger is None:
        yield None
        return
    from privot.errors import BudgetExceededError

    out = str(Path(output).resolve())
    if event is not None:
        cm = ledger.release(event, capability=capability, mechanism=mechanism or capability,
                            unit=unit, relation=relation, convert=args.convert,
                            params=params, output=out)
    else:
        cm = ledger.accountant(capability=capability, unit=unit, relation=relation,
                               convert=args.convert, output=out, pending=True)
    try:
        with cm as acct:
            yield acct
    except BudgetExceededError as exc:
        st = ledger.status(pld=False)
        raise BudgetExceededError(
            f"{exc}; ledger {ledger.name!r} has eps={st.remaining_epsilon:.6g} of "
            f"{ledger.total[0]:g} left ({st.releases} releases); no output was "
            "written") from None


def ledger_summary(ledger: Ledger) -> str:
    """One line after a release: public budget figures only."""
    st = ledger.status(pld=False)
    return (f"ledger {ledger.name}: spent eps={st.spent_epsilon:.6g} of "
            f"{ledger.total[0]:g}, {st.remaining_epsilon:.6g} left ({st.releases} "
            "releases)")


def refuse_swapped_columns(args: argparse.Namespace, step: Any, counts: Any, *, grid: Any,
                           engine: Any, names: Any) -> None:
    """:func:`privot._usable.refuse_swapped_axes` on a table of user points.

    ``counts`` is what ``step`` (``aggregate_user_cells`` or ``user_cell_counts``) read
    with ``--columns`` as given; only when most rows are outside does ``step`` read the
    table again with the two columns exchanged. A curator decision, before any charge.
    """
    from privot._usable import refuse_swapped_axes

    refuse_swapped_axes(
        n_rows=counts.n_points, n_outside=counts.n_outside, what=str(args.input),
        n_outside_swapped=lambda: step(
            args.input, grid=grid, user_column=args.user_column, x_column=args.columns[1],
            y_column=args.columns[0], engine=engine, sep=args.sep, names=names).n_outside)


# -- --target-error: epsilon planned from the stated error (privot.planning) -------------

def add_epsilon_arguments(parser: argparse.ArgumentParser, *, epsilon_help: str,
                          units: str, confidence: bool = True) -> None:
    """``--epsilon`` or ``--target-error E`` (one of them, required) and, with
    ``confidence``, ``--error-confidence C``.

    ``--target-error``: epsilon becomes the smallest one whose error statement (from the
    public parameters, before anything is read) is ``<= E`` in ``units``
    (:func:`privot.planning.epsilon_for_error`).
    """
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--epsilon", type=positive_float, default=None, help=epsilon_help)
    budget.add_argument("--target-error", type=positive_float, default=None, metavar="E",
                        help="instead of --epsilon: spend the smallest epsilon whose stated "
                             f"error bound is <= E {units}, planned from the public "
                             "parameters before anything is read ('privot plan' shows the "
                             "curve)")
    if confidence:
        parser.add_argument("--error-confidence", type=positive_float, default=None,
                            metavar="C", help="with --target-error: the probability, in "
                                              "(0, 1), with which the planned bound holds "
                                              "(default: the release's own statement's)")


def check_epsilon_arguments(args: argparse.Namespace) -> float | None:
    """``--epsilon`` checked (a float), or None with ``--target-error`` (checked, with
    ``--error-confidence``); light: no numpy. One line, exit status 2, on bad input."""
    from privot._validation import check_epsilon
    from privot.errors import InvalidParameterError

    conf = getattr(args, "error_confidence", None)
    if args.target_error is None:
        if conf is not None:
            raise InvalidParameterError("--error-confidence", conf,
                                        "only with --target-error")
        return check_epsilon(args.epsilon, "--epsilon")
    check_target_arguments(args)
    return None


def check_target_arguments(args: argparse.Namespace) -> None:
    """``--target-error`` (finite, > 0) and ``--error-confidence`` (in (0, 1)), each
    when given: the releasing commands' and ``privot plan``'s one check."""
    from privot.errors import InvalidParameterError

    target = args.target_error
    if target is not None and not (target > 0 and target != float("inf")):
        raise InvalidParameterError("--target-error", target, "a finite number > 0")
    conf = getattr(args, "error_confidence", None)
    if conf is not None and not 0 < conf < 1:
        raise InvalidParameterError("--error-confidence", conf, "a number in (0, 1)")


def plan_from_args(args: argparse.Namespace, state: Any, *, alternative: str = "",
                   announce: bool = True) -> Any:
    """:func:`privot.planning.epsilon_for_error` for ``--target-error``, its refusals
    naming the flag; with ``announce``, says one line (the chosen epsilon and its
    statement) on stdout."""
    from privot.errors import InvalidParameterError
    from privot.planning import epsilon_for_error

    try:
        plan = epsilon_for_error(state, args.target_error, alternative=alternative)
    except InvalidParameterError as exc:
        if exc.name != "target_error":
            raise
        raise InvalidParameterError("--target-error", exc.value, exc.allowed,
                                    message=str(exc).replace("target_error=",
                                                             "--target-error ")) from None
    if announce:
        say_from_args(args)(f"privot {args.command}: planned epsilon = {plan.epsilon:.6g} "
                            f"for --target-error {args.target_error:g}: {plan.statement}")
    return plan


def planned_release(plan: Any) -> dict[str, Any]:
    """``release.json``'s ``"planned"`` entry: how ``--target-error`` chose epsilon
    (public: a function of the public parameters); ``{}`` without a plan."""
    if plan is None:
        return {}
    return {"planned": {
        "target_error": plan.target, "confidence": plan.statement.confidence,
        "units": plan.statement.units, "epsilon": plan.epsilon,
        "largest_epsilon_missing_the_target": plan.lower,
        "monotone_on_scan": plan.monotone_on_scan,
        "rule": "the smallest epsilon whose error statement's bound is <= target_error "
                "(privot.planning.epsilon_for_error), planned from the public parameters "
                "before anything was charged"}}


def check_plan_budget(plan: Any, state: Any, ledger: Ledger | None,
                      args: argparse.Namespace, event: Any, *, unit: str,
                      relation: str) -> None:
    """Refuse (before anything is read) a planned epsilon ``ledger`` cannot pay, stating
    the best error its remaining budget reaches; ``event(epsilon)`` is the release's
    privacy event. Nothing without a plan or a ledger."""
    if plan is None or ledger is None:
        return
    from privot.planning import refuse_unaffordable

    refuse_unaffordable(plan, state, lambda e: ledger.preview(
        event(e), unit=unit, relation=relation, convert=args.convert).accepted)


def say_notes(args: argparse.Namespace, written: dict) -> None:
    """Say each of a release's ``written["notes"]`` (a file skipped and why) on stdout:
    functions of the public parameters and the release."""
    say = say_from_args(args)
    for note in written.get("notes", ()):
        say(f"privot {args.command}: note: {note}")
