"""``privot calibrate``: the DP-SGD noise multiplier for a target (epsilon, delta).

Wraps :func:`privot.privacy.accounting.calibrate_noise_multiplier` for one or all of
the accountants (PLD, RDP, GDP central limit) and prints a table, or JSON.
"""

from __future__ import annotations

import argparse
import time

from privot.cli._common import positive_float, to_json

__all__ = ["register"]

#: The choices of ``--accountant`` and ``--sampling``: the values of
#: :data:`privot.privacy.accounting.ACCOUNTANTS` and ``SAMPLINGS``, repeated here so that
#: parsing does not import the accounting module (scipy); tests/cli/test_cli_imports.py
#: checks they are equal.
ACCOUNTANTS = ("pld", "rdp", "gdp-clt")
SAMPLINGS = ("poisson", "fixed-size")

_KIND = {True: "upper bound", False: "approximation"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="noise multiplier of DP-SGD for a target (epsilon, delta)",
        description="Find the smallest noise multiplier sigma (Gaussian noise std divided "
                    "by the clipping norm) such that STEPS subsampled Gaussian steps are "
                    "(epsilon, delta)-DP, with each accountant: 'pld' (privacy loss "
                    "distributions, tight upper bound), 'rdp' (Renyi DP, looser upper "
                    "bound) and 'gdp-clt' (Gaussian DP central limit theorem, an "
                    "approximation that can under-state epsilon).",
        epilog="Poisson sampling is accounted under add/remove neighbours, fixed-size "
               "sampling without replacement under replace-one. Exit status: 0 on "
               "success, 2 on invalid input.")
    p.add_argument("--epsilon", type=positive_float, required=True,
                   help="target epsilon (> 0)")
    p.add_argument("--delta", type=positive_float, required=True,
                   help="target delta, in (0, 1)")
    p.add_argument("--steps", type=int, required=True, help="number of steps T (>= 1)")
    p.add_argument("--sampling-rate", type=positive_float, required=True, metavar="Q",
                   help="sampling rate q = batch size / dataset size, in (0, 1]")
    p.add_argument("--sampling", choices=SAMPLINGS, default="poisson",
                   help="how batches are drawn (default: %(default)s)")
    p.add_argument("--accountant", choices=(*ACCOUNTANTS, "all"), default="all",
                   help="accountant to use (default: %(default)s, i.e. all three)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from privot._validation import check_delta, check_epsilon, check_int, check_probability

    # Validate with the flags' names before the (slow) accounting is imported or runs.
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    delta = check_delta(args.delta, "--delta", allow_zero=False)
    steps = check_int(args.steps, "--steps", minimum=1)
    q = check_probability(args.sampling_rate, "--sampling-rate", open_left=True)

    from privot.privacy.accounting import calibrate_noise_multiplier

    accountants = ACCOUNTANTS if args.accountant == "all" else (args.accountant,)

    rows = []
    for name in accountants:
        start = time.perf_counter()
        cal = calibrate_noise_multiplier(epsilon, delta, steps=steps, sampling_rate=q,
                                         accountant=name, sampling=args.sampling)
        rows.append({"accountant": name, "noise_multiplier": cal.noise_multiplier,
                     "epsilon": cal.epsilon, "is_upper_bound": cal.is_upper_bound,
                     "seconds": time.perf_counter() - start})
    relation = "add-remove" if args.sampling == "poisson" else "replace-one"
    if args.json:
        print(to_json({"target_epsilon": epsilon, "delta": delta, "steps": steps,
                       "sampling_rate": q, "sampling": args.sampling, "relation": relation,
                       "results": rows}))
        return 0
    print(f"target epsilon={epsilon:g}, delta={delta:g}; {steps} steps at sampling rate "
          f"{q:g} ({args.sampling} sampling, {relation} neighbours)")
    header = f"{'accountant':<11} {'sigma':>10} {'epsilon':>10}  {'kind':<14} {'time':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['accountant']:<11} {r['noise_multiplier']:>10.4f} {r['epsilon']:>10.5f}  "
              f"{_KIND[r['is_upper_bound']]:<14} {r['seconds']:>6.2f}s")
    return 0
