"""``privot plan CAPABILITY``: the error a release would state, epsilon by epsilon.

Before anything is read or spent: for a planned release (its public parameters, named as
on the releasing command: ``privot plan heatmap --bounds ... --resolution ...``), the
error statement of :mod:`privot.error_bounds` at each of ``--epsilons`` (issue 28), as a
table on stdout, ``plan.json`` and ``plan.png`` (a log-log curve). With
``--target-error E`` it also says the smallest epsilon whose bound is ``<= E``
(:func:`privot.planning.epsilon_for_error`; the releasing commands take the same flag).

Capabilities and their statements: ``heatmap`` (:func:`~privot.heatmaps.heatmap_error`:
EMD, cells x users, or cells with ``--min-users``), ``sample``
(:func:`~privot.sampling.error.sample_error`: every user's W1, grid coordinates),
``barycenter`` (:func:`~privot.barycenters.barycenter_error`: excess W2^2 cost; the
public ``--group-sizes`` and dimension ``--d``), ``learn``
(:func:`~privot.learning.error.learning_error`: the noise norm of one DP-SGD step; the
public ``--group-sizes`` and the encoded width ``--d``, every hyperparameter not given
taken from ``privot learn``'s defaults rule, so the plan states what the run will).

Privacy
-------
No data is read, nothing is released or charged: every figure is a function of the
public parameters on the command line (publishable).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from privot.cli._common import (
    add_aspect_argument,
    add_output_arguments,
    check_target_arguments,
    plan_from_args,
    positive_float,
    say_from_args,
    write_json,
)
from privot.errors import InvalidParameterError

__all__ = ["DEFAULT_EPSILONS", "register"]

#: The epsilons of the table when ``--epsilons`` is not given.
DEFAULT_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
PUBLISHABLE = ("plan.json", "plan.png")
# the releasing commands' choices (privot.cli.heatmap / sample / barycenter)
_HEATMAP_METHODS = ("pyramid", "laplace", "threshold")
_MECHANISMS = ("wpm", "wpm-entropic", "kpm", "exp", "krr")
_BASE_MEASURES = ("uniform", "best-uniform", "optimal")
_VARIANTS = ("direct", "linear")


def _comma_list(kind: type, noun: str) -> Any:
    """An argparse type: ``"a,b,c"`` -> ``[kind(a), kind(b), kind(c)]``."""
    def parse(text: str) -> list:
        try:
            return [kind(t) for t in text.split(",") if t.strip()]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of "
                                             f"{noun}") from exc
    return parse


#: argparse type of ``--epsilons``: ``"0.1,1,10"`` -> ``[0.1, 1.0, 10.0]``.
epsilon_list = _comma_list(float, "numbers")
#: argparse type of ``--group-sizes``: ``"100,250"`` -> ``[100, 250]``.
_group_sizes = _comma_list(int, "integers")


def _common(p: argparse.ArgumentParser, confidence: bool = True) -> None:
    p.add_argument("--epsilons", type=epsilon_list, default=list(DEFAULT_EPSILONS),
                   metavar="E1,E2,...", help="the epsilons of the table (default: "
                   + ",".join(f"{e:g}" for e in DEFAULT_EPSILONS) + ")")
    p.add_argument("--target-error", type=positive_float, default=None, metavar="E",
                   help="also say the smallest epsilon whose stated bound is <= E")
    if confidence:
        p.add_argument("--error-confidence", type=positive_float, default=None,
                       metavar="C", help="the probability, in (0, 1), with which the "
                                         "bound holds (default: the release's own)")
    add_output_arguments(p, "privot-plan")
    p.set_defaults(handler=_run)


def _grid_arguments(p: argparse.ArgumentParser, resolution: int) -> None:
    p.add_argument("--bounds", type=positive_float, nargs=4, required=True,
                   metavar=("X_MIN", "X_MAX", "Y_MIN", "Y_MAX"), help="public bounds")
    p.add_argument("--resolution", type=int, default=resolution, metavar="DELTA",
                   help="grid side (default: %(default)s)")
    add_aspect_argument(p)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan", help="the error a release would state, epsilon by epsilon (no data read)",
        description="Tabulate the error statement of a planned release at several "
                    "epsilons, from its public parameters only (nothing is read or "
                    "charged); write plan.json and plan.png (log-log curve).",
        epilog="Exit status: 0 on success, 2 on invalid input.")
    caps = p.add_subparsers(dest="capability", metavar="CAPABILITY")
    caps.required = True
    h = caps.add_parser("heatmap", help="privot heatmap's EMD bound")
    _grid_arguments(h, 256)
    h.add_argument("--w", type=int, default=20, help="cells kept per level (default: 20)")
    h.add_argument("--gamma", type=positive_float, default=2 ** -0.5,
                   help="decay of the per-level budgets (default: 1/sqrt(2))")
    h.add_argument("--method", choices=_HEATMAP_METHODS, default="pyramid")
    h.add_argument("--min-users", type=int, default=None, metavar="N",
                   help="a public lower bound on the users: the bound is then in cells")
    _common(h)
    s = caps.add_parser("sample", help="privot sample's per-user W1 bound")
    _grid_arguments(s, 20)
    s.add_argument("--mechanism", choices=_MECHANISMS, default="wpm")
    s.add_argument("--variant", choices=_VARIANTS, default="direct")
    s.add_argument("--base-measure", choices=_BASE_MEASURES, default="best-uniform")
    s.add_argument("--p", type=positive_float, default=1.0)
    s.add_argument("--lam", type=positive_float, default=None)
    s.add_argument("--n-iter", type=int, default=40)
    _common(s, confidence=False)
    b = caps.add_parser("barycenter", help="privot barycenter's excess-cost bound")
    b.add_argument("--group-sizes", type=_group_sizes, required=True, metavar="N1,N2,...",
                   help="the public group sizes")
    b.add_argument("--d", type=int, required=True, help="the number of coordinate columns")
    b.add_argument("--m", type=int, default=48, help="support size (default: 48)")
    b.add_argument("--delta", type=positive_float, default=None)
    b.add_argument("--method", choices=("auto", "coreset", "perturbation", "subspace"),
                   default="auto")
    b.add_argument("--subspace-dim", type=int, default=None, metavar="D_PRIME")
    _common(b)
    learn = caps.add_parser("learn", help="privot learn's per-step noise-norm bound")
    learn.add_argument("--group-sizes", type=_group_sizes, required=True,
                       metavar="N1,N2,...", help="the public group sizes (2 for sp)")
    learn.add_argument("--d", type=int, required=True,
                       help="the model's input width: the encoded feature columns (a "
                            "categorical feature counts its categories)")
    learn.add_argument("--feature-columns", type=int, default=None, metavar="K",
                       help="the feature columns before encoding, which the defaults rule "
                            "reads (default: --d)")
    learn.add_argument("--model", choices=("logistic", "mlp"), default="logistic")
    learn.add_argument("--hidden", default="64,64", metavar="W1,W2,...",
                       help="hidden widths of the MLP (default: %(default)s)")
    learn.add_argument("--penalty", choices=("sp", "eo"), default="sp")
    learn.add_argument("--alpha", type=positive_float, default=0.5)
    learn.add_argument("--delta", type=positive_float, default=None,
                       help="default 1/n^2, n the sum of the group sizes (as privot learn)")
    length = learn.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=None)
    length.add_argument("--epochs", type=positive_float, default=None)
    for flag, dest in (("--batch-fraction", "batch_fraction"), ("--clip", "clip"),
                       ("--M", "M"), ("--L", "L")):
        learn.add_argument(flag, type=positive_float, default=None, dest=dest,
                           help="default: privot learn's rule (docs/learning_defaults.md)")
    learn.add_argument("--jacobian-clipping", choices=("spectral", "per-coordinate"),
                       default="spectral")
    _common(learn)


def _heatmap_state(args: argparse.Namespace) -> tuple[Any, str]:
    from dataclasses import replace

    from privot.grid import Grid
    from privot.heatmaps import HeatmapParams
    from privot.heatmaps.error import DEFAULT_CONFIDENCE, heatmap_error

    grid = Grid(tuple(args.bounds), args.resolution, aspect=args.aspect)
    try:
        params = HeatmapParams(grid=grid, epsilon=1.0, w=args.w, gamma=args.gamma,
                               method=args.method)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"--{exc.name}", exc.value, exc.allowed) from None
    conf = args.error_confidence or DEFAULT_CONFIDENCE
    return (lambda e: heatmap_error(replace(params, epsilon=e), n_users=args.min_users,
                                    confidence=conf)), "--method pyramid or laplace"


def _sample_state(args: argparse.Namespace) -> tuple[Any, str]:
    from privot.cli.sample import error_state
    from privot.grid import Grid

    grid = Grid(tuple(args.bounds), args.resolution, aspect=args.aspect, dyadic=False)
    return error_state(args, grid), ""


def _barycenter_state(args: argparse.Namespace) -> tuple[Any, str]:
    from privot.cli.barycenter import PLAN_ALTERNATIVE, error_state

    options: dict[str, Any] = {"m": args.m, "method": args.method, "delta": args.delta}
    if args.subspace_dim is not None:
        options["subspace_dim"] = args.subspace_dim
    return (error_state(options, args.group_sizes, args.d, args.error_confidence),
            PLAN_ALTERNATIVE)


def _learn_state(args: argparse.Namespace) -> tuple[Any, str]:
    """privot learn's own options and statement (:func:`privot.cli.learn.training_options`,
    :func:`~privot.cli.learn.learning_state`), from the public sizes and widths."""
    from privot._validation import check_int
    from privot.cli import learn
    from privot.learning.result import count_parameters, describe_classifier

    d = check_int(args.d, "--d", minimum=1)
    k = check_int(args.d if args.feature_columns is None else args.feature_columns,
                  "--feature-columns", minimum=1)
    run = argparse.Namespace(
        criterion=args.penalty, jacobian_clipping=args.jacobian_clipping,
        optimizer=None, momentum=None, schedule=None, steps=args.steps,
        epochs=args.epochs, batch_fraction=args.batch_fraction)
    if args.steps is not None:
        check_int(args.steps, "--steps", minimum=1)
    if args.batch_fraction is not None and not 0 < args.batch_fraction <= 1:
        raise InvalidParameterError("--batch-fraction", args.batch_fraction,
                                    "a number in (0, 1]")
    if not 0 <= args.alpha <= 1:
        raise InvalidParameterError("--alpha", args.alpha, "a number in [0, 1]")
    hidden = learn._hidden(args.hidden) if args.model == "mlp" else ()
    opts = learn._with_defaults(
        run, {"--clip": args.clip, "--M": args.M, "--L": args.L, "--lr": None},
        epsilon=None, delta=args.delta, alpha=args.alpha, hidden=hidden, values=[],
        bounds={}, categories={}, features=[""] * k)
    n = sum(args.group_sizes)
    delta = args.delta if args.delta is not None else 1.0 / n ** 2
    layers = describe_classifier(d, model=args.model, hidden=hidden)["layers"]
    return learn.learning_state(learn.training_options(run, opts, delta), args.group_sizes,
                                count_parameters(layers), args.error_confidence), ""


_STATES = {"heatmap": _heatmap_state, "sample": _sample_state,
           "barycenter": _barycenter_state, "learn": _learn_state}


def _check(args: argparse.Namespace) -> None:
    """The light checks (no numpy): one line, exit status 2."""
    for e in args.epsilons:
        if not (e > 0 and math.isfinite(e)):
            raise InvalidParameterError("--epsilons", args.epsilons, "numbers > 0")
    if not args.epsilons:
        raise InvalidParameterError("--epsilons", args.epsilons, "at least one number > 0")
    check_target_arguments(args)


def _plot(path: Any, curve: list[tuple[float, float]], units: str, title: str,
          target: float | None) -> bool:
    """``plan.png``: bound vs epsilon, log-log (False when no bound is finite)."""
    finite = [(e, b) for e, b in curve if math.isfinite(b) and b > 0]
    if not finite:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(*zip(*finite, strict=True), marker="o")
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", label=f"target {target:g}")
        ax.legend()
    ax.set_xlabel("epsilon")
    ax.set_ylabel(f"stated bound ({units})")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _run(args: argparse.Namespace) -> int:
    from privot.cli._output import OutputFolder

    _check(args)
    out = OutputFolder(args.output, command="plan", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()
    state, alternative = _STATES[args.capability](args)
    from privot.planning import error_curve

    statements = [state(e) for e in args.epsilons]  # each computed once, kept for plan.json
    curve = error_curve(dict(zip(args.epsilons, statements, strict=True)).__getitem__,
                        args.epsilons)
    planned = None
    if args.target_error is not None:
        planned = plan_from_args(args, state, alternative=alternative, announce=False)
    first = statements[0]
    say = say_from_args(args)
    say(f"privot plan {args.capability}: {first.metric} ({first.units}, confidence "
        f"{first.confidence:g}); public parameters only, nothing read or charged")
    say(f"{'epsilon':>10}  {'bound':>12}")
    for e, b in curve:
        say(f"{e:>10g}  {b:>12.4g}")
    if planned is not None:
        say(f"privot plan {args.capability}: --target-error {args.target_error:g}: "
            f"{planned}")
    out.open()
    payload = {"capability": args.capability, "metric": first.metric, "units": first.units,
               "confidence": first.confidence,
               "curve": [{"epsilon": e, "bound": None if math.isinf(b) else b,
                          "statement": st.to_dict()}
                         for (e, b), st in zip(curve, statements, strict=True)],
               "target_error": args.target_error,
               "planned": None if planned is None else planned.to_dict()}
    write_json(out.path / "plan.json", payload)
    written = ["plan.json"]
    if _plot(out.path / "plan.png", curve, first.units, f"privot plan {args.capability}: "
             f"{first.metric}"[:90], args.target_error):
        written.append("plan.png")
    out.record({"publishable": written, "curator": []})
    say(f"wrote {out.path}/: {', '.join(written)} (publishable: public parameters only)")
    return 0
