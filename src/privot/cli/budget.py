"""``privot budget``: one privacy budget per data set, kept in a ledger file.

``privot budget init PATH --epsilon E`` creates the data set's ledger
(:class:`privot.privacy.ledger.Ledger`: one SQLite file holding the total budget, the
unit of privacy, the neighbouring relation and every release charged to it);
``privot budget show [PATH]`` prints what it has spent and has left, release by release
(``--json`` for machines, ``--plot FILE.png`` for the spending over the releases);
``privot budget plan [PATH] --releases N`` (or ``--weights``) splits what is left over
the releases a curator intends, charging nothing.

The releasing commands (``heatmap``, ``barycenter``, ``sample``, ``learn``) charge the
ledger named by ``--ledger PATH`` or by the environment variable ``PRIVOT_LEDGER``
before any noise is drawn, and are refused (exit status 2, nothing written) when it
cannot pay.

Privacy
-------
No release here: the ledger holds public parameters and budget amounts only (the
curator's file, next to the data; it names output folders and process ids, so it is
not itself a publishable file). Guarantee: everything released through one ledger is,
jointly, ``(epsilon, delta)``-DP for its unit and relation, under the filter named in
the file (``docs/privacy/budget.md``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from privot.cli._common import (
    LEDGER_ENV,
    RELEASE_RELATIONS,
    ledger_path,
    open_ledger,
    positive_float,
    to_json,
)

__all__ = ["register"]

# Parsing imports nothing heavy: these repeat privot.privacy.ledger's UNITS, RELATIONS
# and FILTERS; tests/cli/test_cli_budget.py checks they agree.
_UNITS = ("user", "row")
_RELATIONS = ("add-remove", "replace-one", "replace-one-in-group")
_FILTERS = ("hybrid", "rdp", "basic")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "budget", help="one privacy budget per data set: create and inspect its ledger",
        description="Keep a data set's whole privacy budget in one ledger file: every "
                    "release charged to it (--ledger PATH or $" + LEDGER_ENV + " on the "
                    "releasing commands) is checked against the total before any noise is "
                    "drawn, and recorded.",
        epilog="Exit status: 0 on success, 2 on invalid input.")
    commands = p.add_subparsers(dest="budget_command", metavar="ACTION")
    commands.required = True

    init = commands.add_parser(
        "init", help="create a data set's ledger",
        description="Create the ledger file of one data set: its total (epsilon, delta), "
                    "unit of privacy and neighbouring relation, fixed for good. An "
                    "existing file is refused (a budget is never reset).",
        epilog="Exit status: 0 on success, 2 on invalid input.")
    init.add_argument("path", metavar="PATH", help="the ledger file to create")
    init.add_argument("--epsilon", type=positive_float, required=True,
                      help="total epsilon of the data set (> 0)")
    init.add_argument("--delta", type=positive_float, default=0.0,
                      help="total delta, in [0, 1) (default: %(default)s)")
    init.add_argument("--name", default=None,
                      help="the data set's name (default: the file's stem)")
    init.add_argument("--for", dest="for_", default=None, metavar="COMMANDS",
                      help="the commands whose releases the ledger is for, e.g. "
                           "heatmap,barycenter,learn: the unit and relation are chosen to "
                           "record all of them at the least cost (instead of --unit and "
                           "--relation)")
    init.add_argument("--unit", choices=_UNITS, default=None,
                      help="unit of privacy (default: user)")
    init.add_argument("--relation", choices=_RELATIONS, default=None,
                      help="neighbouring relation (default: add-remove)")
    init.add_argument("--filter", choices=_FILTERS, default=None,
                      help="composition enforced: hybrid (the default when delta > 0: a "
                           "release is charged at most the (epsilon, delta) it proves, and "
                           "many releases the Renyi filter's figure), rdp (the Renyi filter "
                           "alone) or basic (sums; the default when delta is 0); "
                           "docs/privacy/budget.md")
    init.add_argument("--approx-delta", type=positive_float, default=None,
                      metavar="FRACTION",
                      help="fraction of --delta, in [0, 1), set aside for releases charged "
                           "by the (epsilon, delta) pair they prove (default: 0.5 with "
                           "the hybrid filter, 0 with rdp)")
    init.set_defaults(handler=_init)

    show = commands.add_parser(
        "show", help="what a ledger has spent and has left",
        description="Print a ledger's total, spent and remaining budget (the enforced "
                    "filter, basic composition and the privacy-loss-distribution figure) "
                    "and every release charged to it.",
        epilog="Exit status: 0 on success, 2 on invalid input.")
    show.add_argument("path", metavar="PATH", nargs="?", default=None,
                      help=f"the ledger file (default: ${LEDGER_ENV})")
    show.add_argument("--json", action="store_true",
                      help="print the status and the releases as JSON")
    show.add_argument("--plot", default=None, metavar="FILE.png",
                      help="also draw the spending over the releases into FILE.png")
    show.add_argument("--no-pld", action="store_true",
                      help="skip the privacy-loss-distribution composition (faster)")
    show.set_defaults(handler=_show)

    plan = commands.add_parser(
        "plan", help="split what a ledger has left over the releases you intend",
        description="Split the budget a ledger has left over the releases a curator "
                    "intends (evenly, or by weights): the largest epsilons that the "
                    "enforced filter accepts for all of them, charged one after the other, "
                    "and what each would be charged and leave. Nothing is charged or "
                    "recorded.",
        epilog="Example: privot budget plan people.ledger --weights 2,1,1 --names "
               "heatmap,barycenter,sample. Exit status: 0 on success, 2 on invalid input "
               "or a ledger with nothing left.")
    plan.add_argument("path", metavar="PATH", nargs="?", default=None,
                      help=f"the ledger file (default: ${LEDGER_ENV})")
    count = plan.add_mutually_exclusive_group(required=True)
    count.add_argument("--releases", type=int, default=None, metavar="N",
                       help="N releases sharing the budget evenly")
    count.add_argument("--weights", default=None, metavar="W1,W2,...",
                       help="one release per weight; epsilons in proportion to them")
    plan.add_argument("--names", default=None, metavar="A,B,...",
                      help="a name per release, for the table (default: #1, #2, ...)")
    plan.add_argument("--delta-each", type=positive_float, default=0.0, metavar="D",
                      help="each release proves (epsilon, D) (Gaussian noise, DP-SGD); "
                           "default 0: pure releases")
    plan.add_argument("--unit", choices=_UNITS, default=None,
                      help="the releases' unit of privacy (default: the ledger's)")
    plan.add_argument("--relation", choices=(*_RELATIONS, "local"), default=None,
                      help="the releases' neighbouring relation (default: the ledger's); "
                           "a conversion to the ledger's is applied as a release would "
                           "with --convert")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(handler=_plan)


def _init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from privot._validation import check_delta, check_epsilon, check_probability
    from privot.errors import InvalidParameterError
    from privot.privacy.ledger import Ledger

    epsilon = check_epsilon(args.epsilon, "--epsilon")
    delta = check_delta(args.delta, "--delta")
    fraction = (None if args.approx_delta is None
                else check_probability(args.approx_delta, "--approx-delta"))
    if fraction is not None and fraction >= 1:
        raise InvalidParameterError("--approx-delta", args.approx_delta,
                                    "a fraction of --delta in [0, 1)")
    if args.filter in ("hybrid", "rdp") and delta == 0:
        raise InvalidParameterError(
            "--filter", args.filter, "'basic' when --delta is 0",
            message=f"--filter {args.filter} needs --delta > 0 (its Renyi part converts to "
                    "(epsilon, delta) with delta > 0); give --delta, or use --filter "
                    "basic")
    if args.name is not None and not args.name.strip():
        raise InvalidParameterError("--name", args.name, "a non-empty name")
    path = Path(args.path)
    if path.exists():
        raise InvalidParameterError("PATH", args.path, "a file that does not exist yet (a "
                                    "ledger is never re-initialised)")
    if not path.parent.is_dir():
        raise InvalidParameterError("PATH", args.path, "a path in an existing folder")
    unit, relation = _unit_and_relation(args)
    ledger = Ledger.create(path, epsilon=epsilon, delta=delta, name=args.name,
                           unit=unit, relation=relation, filter=args.filter,
                           approx_delta=fraction)
    eps_t, dlt_t = ledger.total
    share = float(ledger.spec["approx_delta"]) / dlt_t if dlt_t > 0 else 0.0
    reserve = (f", {share:g} of delta reserved for releases charged by their "
               "(epsilon, delta)" if share > 0 else "")
    print(f"privot budget: created ledger {ledger.name!r} at {ledger.path}: total eps="
          f"{eps_t:g}, delta={dlt_t:g}, {ledger.unit}-level, {ledger.relation}, filter "
          f"{ledger.filter}{reserve}")
    print(f"privot budget: it records {_what_it_records(ledger.unit, ledger.relation)}")
    return 0


def _factors(unit: str, relation: str) -> dict[str, int | None]:
    """Each releasing command's group factor on a ``unit``/``relation`` ledger (None:
    refused)."""
    from privot.privacy.ledger import conversion_factor

    return {cap: conversion_factor(r["unit"], r["relation"], unit, relation)
            for cap, r in RELEASE_RELATIONS.items()}


def _what_it_records(unit: str, relation: str) -> str:
    """In words: which commands' releases a ledger records, at which factor."""
    parts = []
    for cap, k in _factors(unit, relation).items():
        parts.append(f"{cap}: refused" if k is None else f"{cap}: as it is" if k == 1
                     else f"{cap}: as a group of {k} (its epsilon {k} times, with --convert)")
    return "; ".join(parts)


def _unit_and_relation(args: argparse.Namespace) -> tuple[str, str]:
    """``--unit``/``--relation`` (defaults user, add-remove), or the ledger that records
    every command of ``--for`` at the least total factor."""
    from privot.errors import InvalidParameterError
    from privot.privacy.ledger import RELATIONS, UNITS

    if args.for_ is None:
        return args.unit or "user", args.relation or "add-remove"
    if args.unit is not None or args.relation is not None:
        raise InvalidParameterError(
            "--for", args.for_, "--for or --unit/--relation",
            message="give either --for (the commands the ledger is for; privot chooses "
                    "the unit and relation) or --unit and --relation, not both")
    caps = [c.strip() for c in args.for_.split(",") if c.strip()]
    unknown = [c for c in caps if c not in RELEASE_RELATIONS]
    if not caps or unknown:
        raise InvalidParameterError(
            "--for", args.for_, f"commands among {', '.join(RELEASE_RELATIONS)}",
            message=f"--for {args.for_!r}: name releasing commands, separated by commas, "
                    f"among {', '.join(RELEASE_RELATIONS)}")
    best = None
    for u in UNITS:
        for r in RELATIONS:
            ks = _factors(u, r)
            if all(ks[c] is not None for c in caps):
                cost = sum(ks[c] for c in caps)
                if best is None or cost < best[0]:
                    best = (cost, u, r)
    if best is None:
        need = "; ".join(f"{c}: {RELEASE_RELATIONS[c]['unit']}-level "
                         f"{RELEASE_RELATIONS[c]['relation']}" for c in caps)
        raise InvalidParameterError(
            "--for", args.for_, "commands one ledger can record together",
            message=f"no one ledger records all of {', '.join(caps)}: their releases are "
                    f"private for relations no single relation covers ({need}; "
                    "docs/privacy/budget.md), so their guarantees do not compose into "
                    "one: give each group of commands its own ledger, each guarantee "
                    "stated for its own relation")
    return best[1], best[2]


def _named_ledger(args: argparse.Namespace, example: str) -> Any:
    """The ledger of PATH or ``$PRIVOT_LEDGER``; refused in plain words (with the
    command line ``example``) when neither is given."""
    from privot.errors import InvalidParameterError

    found = ledger_path(args.path, flag="PATH")
    if found is None:
        raise InvalidParameterError(
            "PATH", None, f"a ledger file: give PATH or set ${LEDGER_ENV}",
            message=f"no ledger given: name its file ({example}) or set "
                    f"${LEDGER_ENV}=FILE")
    return open_ledger(*found)


def _show(args: argparse.Namespace) -> int:
    from privot.errors import InvalidParameterError

    ledger = _named_ledger(args, "privot budget show FILE")
    if args.plot is not None:
        from pathlib import Path

        from privot._optional import require

        plot = Path(args.plot)
        if plot.suffix.lower() != ".png":
            raise InvalidParameterError("--plot", args.plot, "a FILE.png path")
        if not plot.parent.is_dir():
            raise InvalidParameterError("--plot", args.plot, "a path in an existing folder")
        require("matplotlib.figure", "plot")
    pld = not args.no_pld
    if args.json:
        payload = {"ledger": {"name": ledger.name, "path": str(ledger.path),
                              "unit": ledger.unit, "relation": ledger.relation,
                              "filter": ledger.filter, "total": list(ledger.total)},
                   "status": ledger.status(pld=pld).to_dict(),
                   "releases": [r.to_dict() for r in ledger.releases()]}
        print(to_json(payload))
    else:
        print(ledger.report(pld=pld))
    if args.plot is not None:
        ledger.plot(args.plot)
        print(f"privot budget: wrote {args.plot}", file=sys.stderr if args.json else
              sys.stdout)
    return 0


def _plan(args: argparse.Namespace) -> int:
    from privot.errors import InvalidParameterError
    from privot.privacy.ledger import split_budget

    if args.releases is not None:
        if args.releases < 1:
            raise InvalidParameterError("--releases", args.releases, "an integer >= 1")
        weights = [1.0] * args.releases
    else:
        try:
            weights = [float(w) for w in args.weights.split(",")]
        except ValueError:
            weights = []
        if not weights or any(not (w > 0 and w < float("inf")) for w in weights):
            raise InvalidParameterError("--weights", args.weights,
                                        "positive numbers separated by commas (2,1,1)")
    names = ([n.strip() for n in args.names.split(",")] if args.names
             else [f"#{i}" for i in range(1, len(weights) + 1)])
    if len(names) != len(weights):
        raise InvalidParameterError("--names", args.names,
                                    f"{len(weights)} names, one per release")
    ledger = _named_ledger(args, "privot budget plan FILE --releases N")
    eps, previews = split_budget(ledger, weights, delta_each=args.delta_each,
                                 unit=args.unit, relation=args.relation, convert=True)
    rows = [{"name": n, "weight": w, "epsilon": e, "delta": args.delta_each,
             "group": p.conversion, "route": p.view, "charged": p.charged,
             "spent_after": p.spent_after, "left_after": p.remaining_after}
            for n, w, e, p in zip(names, weights, eps, previews, strict=True)]
    if args.json:
        print(to_json({"ledger": {"name": ledger.name, "path": str(ledger.path),
                                  "filter": ledger.filter, "total": list(ledger.total)},
                       "plan": rows}))
        return 0
    eps_t, dlt_t = ledger.total
    print(f"Plan for ledger {ledger.name!r} ({ledger.path}): total eps={eps_t:g}, "
          f"delta={dlt_t:g}, {ledger.filter} filter; spent eps="
          f"{previews[0].spent_before:.6g} now. Nothing is charged.")
    print(f"  {'release':<16} {'weight':>6} {'epsilon':>10} {'group':>5} {'charged':>10} "
          f"{'spent after':>12} {'left':>10}")
    for r in rows:
        route = f"  ({r['route']} route)" if r["route"] else ""
        print(f"  {r['name']:<16} {r['weight']:>6g} {r['epsilon']:>10.6g} "
              f"{r['group']:>5d} {r['charged']:>10.6g} {r['spent_after']:>12.6g} "
              f"{r['left_after']:>10.6g}{route}")
    flag = f" --delta {args.delta_each:g}" if args.delta_each else ""
    print(f"Give each release its epsilon (--epsilon E{flag}) and --ledger {ledger.path}.")
    return 0
