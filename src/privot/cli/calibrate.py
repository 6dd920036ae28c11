"""``privot calibrate``: the DP-SGD noise multiplier for a target (epsilon, delta).

Wraps :func:`privot.privacy.accounting.calibrate_noise_multiplier` for one or all of
the accountants (PLD, RDP, GDP central limit) and prints a table, or JSON.

The sampling is either one rate ``--sampling-rate q`` (Poisson or fixed-size), or
fixed-size sampling inside groups of public sizes (``--group-sizes n1,n2,...`` with
``--batch-sizes b1,b2,...``; paper 004, Lemma 5.1): ``b_j`` of the ``n_j`` records of
every group are drawn without replacement, and the run is accounted as fixed-size
sampling at ``p = max_j b_j / n_j`` under replace-one within a group (the worst group
holds the record that changes). This is the sampling of ``privot learn``.

Privacy
-------
No release: pure accounting of public parameters. For the group scheme the relation is
replace one record inside one group (~k of Def. 2.1 of paper 004), with the group sizes
public (Remark 6.2).
"""

from __future__ import annotations

import argparse
import time

from privot.cli._common import positive_float, to_json
from privot.errors import InvalidParameterError

__all__ = ["register"]

#: The choices of ``--accountant`` and ``--sampling``: the values of
#: :data:`privot.privacy.accounting.ACCOUNTANTS` and ``SAMPLINGS``, repeated here so that
#: parsing does not import the accounting module (scipy); tests/cli/test_cli_imports.py
#: checks they are equal.
ACCOUNTANTS = ("pld", "rdp", "gdp-clt")
SAMPLINGS = ("poisson", "fixed-size")

_KIND = {True: "upper bound", False: "approximation"}
GROUP_RELATION = "replace-one within a group (~k, Def. 2.1 of paper 004)"
GROUP_NOTE = ("group sizes are public under this relation (Remark 6.2 of paper 004); "
              "accounted as fixed-size sampling at p")


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(t) for t in text.split(",")]
    except ValueError:
        raise InvalidParameterError(flag, text, "comma-separated integers") from None
    return values


def _group_sampling(group_sizes: str, batch_sizes: str | None) -> dict:
    """Validate ``--group-sizes``/``--batch-sizes``; ``p = max b_j / n_j`` (Lemma 5.1)."""
    sizes = _int_list(group_sizes, "--group-sizes")
    if min(sizes) < 1:
        raise InvalidParameterError("--group-sizes", group_sizes, "integers >= 1")
    if batch_sizes is None:
        raise InvalidParameterError("--batch-sizes", None,
                                    "one batch size per group with --group-sizes")
    batches = _int_list(batch_sizes, "--batch-sizes")
    if len(batches) != len(sizes):
        raise InvalidParameterError("--batch-sizes", batch_sizes,
                                    f"{len(sizes)} sizes, one per group of --group-sizes")
    for j, (b, n) in enumerate(zip(batches, sizes, strict=True)):
        if not 1 <= b <= n:
            raise InvalidParameterError("--batch-sizes", batch_sizes,
                                        f"integers in [1, n_j]; group {j + 1} has size {n} "
                                        f"and batch {b}")
    from fractions import Fraction

    p = max(Fraction(b, n) for b, n in zip(batches, sizes, strict=True))
    return {"group_sizes": sizes, "batch_sizes": batches, "sampling_rate": float(p)}


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
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--sampling-rate", type=positive_float, metavar="Q",
                      help="sampling rate q = batch size / dataset size, in (0, 1]")
    rate.add_argument("--group-sizes", default=None, metavar="N1,N2,...",
                      help="public group sizes for fixed-size sampling per group (paper "
                           "004, Lemma 5.1; needs --batch-sizes): p = max b_j / n_j, "
                           "replace-one within a group")
    p.add_argument("--batch-sizes", default=None, metavar="B1,B2,...",
                   help="batch size drawn from each group, without replacement (with "
                        "--group-sizes)")
    p.add_argument("--sampling", choices=SAMPLINGS, default=None,
                   help="how batches are drawn (default: poisson; fixed-size with "
                        "--group-sizes, the only choice there)")
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
    groups = None
    if args.group_sizes is not None:
        groups = _group_sampling(args.group_sizes, args.batch_sizes)
        if args.sampling == "poisson":
            raise InvalidParameterError("--sampling", args.sampling,
                                        "fixed-size with --group-sizes (Lemma 5.1 draws a "
                                        "fixed number of records from every group)")
        sampling = "fixed-size"
        q = groups["sampling_rate"]
    else:
        if args.batch_sizes is not None:
            raise InvalidParameterError("--batch-sizes", args.batch_sizes,
                                        "only with --group-sizes")
        sampling = args.sampling or "poisson"
        q = check_probability(args.sampling_rate, "--sampling-rate", open_left=True)

    from privot.privacy.accounting import calibrate_noise_multiplier

    accountants = ACCOUNTANTS if args.accountant == "all" else (args.accountant,)

    rows = []
    for name in accountants:
        start = time.perf_counter()
        cal = calibrate_noise_multiplier(epsilon, delta, steps=steps, sampling_rate=q,
                                         accountant=name, sampling=sampling)
        rows.append({"accountant": name, "noise_multiplier": cal.noise_multiplier,
                     "epsilon": cal.epsilon, "is_upper_bound": cal.is_upper_bound,
                     "seconds": time.perf_counter() - start})
    relation = "add-remove" if sampling == "poisson" else "replace-one"
    if groups is not None:
        relation = GROUP_RELATION
    if args.json:
        payload = {"target_epsilon": epsilon, "delta": delta, "steps": steps,
                   "sampling_rate": q, "sampling": sampling, "relation": relation}
        if groups is not None:
            payload.update(group_sizes=groups["group_sizes"],
                           batch_sizes=groups["batch_sizes"], note=GROUP_NOTE)
        print(to_json({**payload, "results": rows}))
        return 0
    if groups is not None:
        print(f"target epsilon={epsilon:g}, delta={delta:g}; {steps} steps, fixed-size "
              f"sampling per group: batch sizes {groups['batch_sizes']} of group sizes "
              f"{groups['group_sizes']}, p = max b_j/n_j = {q:g} (paper 004, Lemma 5.1)")
        print(f"relation: {relation}; {GROUP_NOTE}")
    else:
        print(f"target epsilon={epsilon:g}, delta={delta:g}; {steps} steps at sampling "
              f"rate {q:g} ({sampling} sampling, {relation} neighbours)")
    header = f"{'accountant':<11} {'sigma':>10} {'epsilon':>10}  {'kind':<14} {'time':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['accountant']:<11} {r['noise_multiplier']:>10.4f} {r['epsilon']:>10.5f}  "
              f"{_KIND[r['is_upper_bound']]:<14} {r['seconds']:>6.2f}s")
    return 0
