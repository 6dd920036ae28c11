"""``privot learn INPUT``: a fair classifier trained with DP-SGD (paper 004).

Reads a CSV/TSV/Parquet table (one row per record: features, a binary target, a
two-class sensitive attribute), encodes the features with **public** encodings the caller
gives, and trains a logistic (``Linear + Sigmoid``) or MLP classifier with
:func:`privot.learning.make_private` on the penalised objective
``(1 - alpha) * BCE + alpha * W_2^2`` between the groups' score distributions
(statistical parity, ``--penalty sp``, Eq. 5) or within each label (equality of odds,
``eo``, Eq. 6), at a target ``(--epsilon, --delta)``. Into the output folder
(:mod:`privot.cli._output`, :meth:`privot.learning.result.LearningResult.save`):

publishable (public parameters and the noisy training only)
    * ``model.pt`` -- the trained ``state_dict`` (rebuild with
      :func:`privot.learning.result.load_model`);
    * ``release.json`` -- the guarantee (epsilon by PLD, RDP and the paper's GDP-CLT
      figure, delta, sigma, sensitivity, the public group and batch sizes), the epsilon
      curve, the architecture, the feature encoding and the hyperparameters;
    * ``privacy.png`` -- epsilon spent along the steps.

curator-only (never publish)
    * ``curator-metrics.json`` -- accuracy, demographic-parity and equalized-odds
      differences (bootstrap intervals) on the train and test splits, at initialisation
      and after training;
    * ``curator-scores.png`` -- score distributions per group, before and after;
    * ``curator-training.png`` -- the batch losses along the steps;
    * ``curator-report.json`` -- rows read, values clipped or missing per column, label
      counts, timings, data warnings.

Encoding (row by row, never fitted to the data): a numeric column needs public bounds
``--bounds col:lo:hi`` (values clipped into them and scaled to ``[0, 1]``; a missing or
non-numeric value becomes 0.5, the middle); a categorical column needs its public
category list ``--categories col:a|b|c`` (one-hot; any other or missing value is all
zeros). A feature without either is refused: privot never derives bounds or categories
from the data. The target is 1 where it equals ``--positive``, else 0. The sensitive
column must hold exactly the two ``--sensitive-values``.

Steps: ``--steps`` (:func:`~privot.learning.make_private`'s name), or
``round(--epochs / --batch-fraction)`` so that each record is drawn about ``--epochs``
times on average. Every hyperparameter not given (steps, batch fraction, optimizer,
learning rate and its schedule, momentum, ``C``, ``M``, ``L``) comes from one documented
rule of public quantities, :func:`privot.learning.defaults.default_hyperparameters`
(``docs/learning_defaults.md``): 300 steps, batch fraction 0.2, SGD with momentum 0.9 and
learning rate 2 decaying linearly to 0, ``C = G/4``, ``M = 1/4``, ``L = G/8`` with
``G = sqrt(k + 1)`` for ``k`` feature columns; ``release.json`` records the rule and which
values came from it. The penalty compares the centred scores ``probability - 1/2``.
A trained model predicting one class for at least 99% of the evaluated rows is flagged
on stderr and in ``curator-report.json`` (:mod:`privot.learning.diagnostics`).
``--penalty`` is ``make_private``'s name of the fairness criterion (the old
``--criterion`` is still accepted, not together with it).
``--progress``/``--quiet`` mean what they mean on every data command
(:func:`privot.cli._common.add_progress_arguments`). Default ``--delta``: ``1/n^2``,
``n`` the number of training rows (the sum of the public group sizes).

Privacy
-------
Unit: one record (row) of one group. Relation: replace one record inside one group (~k
of Def. 2.1 of paper 004, k = 2 groups for sp, 4 for eo); **group sizes are public**
(Remark 6.2), hence so are the training rows ``n``, the batch sizes, the sampling rate,
the sensitivity and the default delta. Sensitivity: Thm 6.1 (computed from ``--clip``,
``--M``, ``--L``, ``--alpha`` and the batch sizes). Guarantee: ``(epsilon, delta)``-DP of
the trained parameters by privot's fixed-size PLD accountant over all the steps
(:mod:`privot.learning.private`); the model's initialisation and the train/test split do
not depend on the data. The test split is never seen by the training. Seeded runs
(``--seed``) are reproducible and not fit for publication.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from privot.cli._common import (
    RELEASE_RELATIONS,
    add_epsilon_arguments,
    add_ledger_arguments,
    add_output_arguments,
    add_progress_arguments,
    add_renamed_argument,
    add_seed_argument,
    add_text_file_arguments,
    check_epsilon_arguments,
    check_plan_budget,
    ledger_from_args,
    ledger_spender,
    ledger_summary,
    plan_from_args,
    planned_release,
    positive_float,
    progress_from_args,
    rng_from_args,
    say_from_args,
)
from privot.errors import InvalidParameterError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["register"]

# Parsing imports neither numpy nor torch: these repeat the library's choices
# (privot.learning.groups.CRITERIA, privot.learning.result.MODELS,
# privot.learning.clipping.JACOBIAN_CLIPPINGS); tests/cli/test_cli_learn.py checks them.
_CRITERIA = ("sp", "eo")
_MODELS = ("logistic", "mlp")
_JACOBIAN_CLIPPINGS = ("spectral", "per-coordinate")
_OPTIMIZERS = ("sgd", "adam")
_SCHEDULES = ("constant", "linear")

PUBLISHABLE = ("model.pt", "release.json", "privacy.png")
MISSING_NUMERIC = 0.5
#: Checkpoints of the epsilon curve in release.json and privacy.png.
CURVE_POINTS = 20
#: Bootstrap resamples of the curator metrics.
BOOTSTRAP = 200


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "learn", help="a fair classifier trained with DP-SGD (paper 004)",
        description="Train a logistic or MLP classifier with DP-SGD on a binary target, "
                    "penalised by the squared Wasserstein distance between the score "
                    "distributions of two groups (statistical parity or equality of "
                    "odds), with clipped Wasserstein gradients (Rodriguez-Vitores, "
                    "Lalanne, Loubes). Unit: one record of one group; group sizes are "
                    "public. Features are encoded with public bounds and category lists "
                    "only.",
        epilog="Publishable: model.pt, release.json, privacy.png. Curator-only, never "
               "publish: curator-metrics.json, curator-scores.png, curator-training.png, "
               "curator-report.json. Exit status: 0 on success, 2 on invalid input.")
    p.add_argument("input", metavar="INPUT", help="CSV, TSV or Parquet file (or folder)")
    p.add_argument("--target", required=True, metavar="COL", help="the label column")
    p.add_argument("--positive", default="1", metavar="VALUE",
                   help="the target value that is class 1; any other value is 0 "
                        "(default: %(default)s)")
    p.add_argument("--sensitive", required=True, metavar="COL",
                   help="the sensitive attribute's column")
    p.add_argument("--sensitive-values", required=True, metavar="V0,V1",
                   help="its two classes (public); a row with another value is refused")
    p.add_argument("--features", default=None, metavar="A,B,...",
                   help="feature columns (default: the columns of --bounds, then of "
                        "--categories)")
    p.add_argument("--bounds", default=None, metavar="COL:LO:HI,...",
                   help="public bounds of each numeric feature: values are clipped into "
                        "them and scaled to [0, 1]; never taken from the data")
    p.add_argument("--categories", default=None, metavar="COL:A|B|C,...",
                   help="public category list of each categorical feature (one-hot; "
                        "another value encodes as all zeros)")
    # --penalty: make_private's name; --criterion, the old spelling, a hidden alias
    add_renamed_argument(p, "--penalty", "--criterion", dest="criterion",
                         choices=_CRITERIA, default="sp",
                         help="fairness penalty: sp (statistical parity, Eq. 5) or eo "
                              "(equality of odds, Eq. 6) (default: %(default)s)")
    p.add_argument("--alpha", type=positive_float, default=0.5,
                   help="weight of the Wasserstein penalty, in [0, 1] (default: "
                        "%(default)s)")
    add_epsilon_arguments(p, epsilon_help="target epsilon of the whole training (> 0)",
                          units="(the L2 norm of one step's Gaussian noise, in gradient "
                                "units, at --error-confidence, default 0.99; planned on the "
                                "public group sizes, counted before anything is trained or "
                                "charged)")
    p.add_argument("--delta", type=positive_float, default=None,
                   help="target delta, in (0, 1) (default: 1/n^2, n = training rows, the "
                        "sum of the public group sizes)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=None, metavar="N",
                        help="DP-SGD steps (make_private's steps) (default: 300, "
                             "docs/learning_defaults.md)")
    length.add_argument("--epochs", type=positive_float, default=None,
                        help="or the length in passes over the data: steps = "
                             "round(EPOCHS / batch-fraction), so each record is drawn "
                             "about EPOCHS times")
    p.add_argument("--batch-fraction", type=positive_float, default=None, metavar="Q",
                   help="batch size over group size, the same in every group, in (0, 1] "
                        "(default: 0.2, the paper's 1/5)")
    p.add_argument("--model", choices=_MODELS, default="logistic",
                   help="logistic (Linear + Sigmoid, the paper's) or mlp (default: "
                        "%(default)s)")
    p.add_argument("--hidden", default="64,64", metavar="W1,W2,...",
                   help="hidden widths of the MLP (default: %(default)s)")
    p.add_argument("--clip", type=positive_float, default=None,
                   help="C: per-example clipping of the loss gradients (default: G/4, "
                        "G = sqrt(number of feature columns + 1), the bound on an "
                        "encoded row's norm)")
    p.add_argument("--M", type=positive_float, default=None, dest="M",
                   help="M: clipping of the centred scores (score - 1/2) in the penalty "
                        "(default: 0.25)")
    p.add_argument("--L", type=positive_float, default=None, dest="L",
                   help="L: clipping of the per-example Jacobians (default: G/8)")
    p.add_argument("--jacobian-clipping", choices=_JACOBIAN_CLIPPINGS, default="spectral",
                   help="exact spectral clipping, or the paper's per-coordinate clipping "
                        "(Remark A.2) (default: %(default)s)")
    p.add_argument("--lr", type=positive_float, default=None,
                   help="learning rate (default: 2 for sgd, 0.05 for adam)")
    p.add_argument("--optimizer", choices=_OPTIMIZERS, default=None,
                   help="torch optimizer fed the noisy gradients (default: sgd)")
    p.add_argument("--momentum", type=float, default=None,
                   help="SGD's momentum, in [0, 1) (default: 0.9)")
    p.add_argument("--schedule", choices=_SCHEDULES, default=None,
                   help="learning rate: constant, or decaying linearly to 0 over the "
                        "steps (default: linear)")
    p.add_argument("--test-fraction", type=positive_float, default=0.2,
                   help="rows held out for the curator's metrics, in [0, 1); never seen "
                        "by the training (default: %(default)s)")
    p.add_argument("--show-metrics", action="store_true",
                   help="also print the curator's metrics (accuracy, DP and EO "
                        "differences; NOT private) on stderr")
    add_progress_arguments(p, bar="a progress bar of the steps (its loss values are "
                                  "the curator's)")
    add_text_file_arguments(p)
    add_output_arguments(p, "privot-learn")
    add_seed_argument(p)
    add_ledger_arguments(p)
    p.set_defaults(handler=_run)


# -- parsing the public encodings ---------------------------------------------------------

def _split_list(text: str | None, flag: str) -> list[str]:
    if text is None:
        return []
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise InvalidParameterError(flag, text, "comma-separated non-empty items")
    return items


def _parse_bounds(text: str | None) -> dict[str, tuple[float, float]]:
    import math

    out: dict[str, tuple[float, float]] = {}
    for item in _split_list(text, "--bounds"):
        parts = item.rsplit(":", 2)
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError
            lo, hi = float(parts[1]), float(parts[2])
        except ValueError:
            raise InvalidParameterError("--bounds", item, "COL:LO:HI with numbers LO < HI"
                                        ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InvalidParameterError("--bounds", item, "finite LO < HI")
        if parts[0] in out:
            raise InvalidParameterError("--bounds", item, f"one entry per column "
                                        f"({parts[0]!r} repeated)")
        out[parts[0]] = (lo, hi)
    return out


def _parse_categories(text: str | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in _split_list(text, "--categories"):
        col, sep, rest = item.rpartition(":")
        cats = [c.strip() for c in rest.split("|")]
        if not sep or not col or not all(cats) or len(set(cats)) != len(cats):
            raise InvalidParameterError("--categories", item,
                                        "COL:A|B|C with distinct non-empty categories")
        if col in out:
            raise InvalidParameterError("--categories", item, f"one entry per column "
                                        f"({col!r} repeated)")
        out[col] = cats
    return out


def _features(args: argparse.Namespace, bounds: dict, categories: dict) -> list[str]:
    both = sorted(set(bounds) & set(categories))
    if both:
        raise InvalidParameterError("--categories", both[0],
                                    "a column not also in --bounds (numeric or "
                                    "categorical, not both)")
    if args.features is not None:
        features = _split_list(args.features, "--features")
        if len(set(features)) != len(features):
            raise InvalidParameterError("--features", args.features, "distinct columns")
        for col in features:
            if col not in bounds and col not in categories:
                raise InvalidParameterError(
                    "--features", col,
                    f"a column with a public encoding: give --bounds {col}:LO:HI for a "
                    f"numeric column or --categories {col}:A|B|C for a categorical one "
                    "(privot never takes them from the data)")
        unused = [c for c in (*bounds, *categories) if c not in features]
        if unused:
            flag = "--bounds" if unused[0] in bounds else "--categories"
            raise InvalidParameterError(flag, unused[0], "a column listed in --features")
    else:
        features = [*bounds, *categories]
        if not features:
            raise InvalidParameterError("--features", None,
                                        "at least one feature with a public encoding "
                                        "(--bounds COL:LO:HI or --categories COL:A|B|C)")
    if args.target in features:
        raise InvalidParameterError("--features", args.target,
                                    "columns other than the --target")
    return features


def _hidden(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(t) for t in _split_list(text, "--hidden"))
    except ValueError:
        raise InvalidParameterError("--hidden", text, "comma-separated integers >= 1"
                                    ) from None
    if not widths or min(widths) < 1:
        raise InvalidParameterError("--hidden", text, "comma-separated integers >= 1")
    return widths


def _as_text(value: Any) -> str | None:
    """A cell as text (CSV cells are text already; Parquet numbers are not)."""
    if value is None:
        return None
    if isinstance(value, float):
        if value != value:
            return None
        if value.is_integer():
            return str(int(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value).strip()


# -- encoding (row by row, public rules) ----------------------------------------------------

def _encode(cols: dict, features: list[str], bounds: dict, categories: dict,
            n: int) -> tuple[np.ndarray, list[str], dict]:
    import numpy as np

    blocks, names, stats = [], [], {}
    for col in features:
        if col in bounds:
            lo, hi = bounds[col]
            v = np.asarray(cols[col], dtype=np.float64)
            missing = ~np.isfinite(v)
            clipped = np.clip(np.where(missing, lo, v), lo, hi)
            enc = np.where(missing, MISSING_NUMERIC, (clipped - lo) / (hi - lo))
            stats[col] = {"missing_or_non_numeric": int(missing.sum()),
                          "below_bounds": int((v[~missing] < lo).sum()),
                          "above_bounds": int((v[~missing] > hi).sum())}
            blocks.append(enc[:, None])
            names.append(col)
        else:
            cats = categories[col]
            text = [_as_text(v) for v in cols[col].tolist()]
            index = {c: i for i, c in enumerate(cats)}
            onehot = np.zeros((n, len(cats)))
            other = 0
            for r, t in enumerate(text):
                i = index.get(t)
                if i is None:
                    other += 1
                else:
                    onehot[r, i] = 1.0
            stats[col] = {"other_or_missing": other}
            blocks.append(onehot)
            names += [f"{col}={c}" for c in cats]
    return np.hstack(blocks).astype(np.float32), names, stats


def _curator_report(y_true, scores, sensitive, rng) -> dict | None:
    """The curator's fairness report, or None where the data leave it undefined (a
    group absent from a split): the budget is spent by now and the release must go out
    whatever the data decide (the reason goes to the curator report)."""
    from privot.errors import InvalidDataError
    from privot.evaluation.learning import fairness_report

    try:
        return fairness_report(y_true, scores, sensitive, threshold=0.5,
                               n_resamples=BOOTSTRAP, rng=rng).to_dict()
    except InvalidDataError as exc:
        return {"undefined": str(exc)}


def _encoding_release(features, bounds, categories, names) -> dict:
    encoding = []
    for col in features:
        if col in bounds:
            encoding.append({"column": col, "kind": "numeric", "bounds": list(bounds[col]),
                             "rule": "clipped into the bounds, then (v - lo) / (hi - lo); "
                                     f"missing or non-numeric -> {MISSING_NUMERIC}"})
        else:
            encoding.append({"column": col, "kind": "categorical",
                             "categories": list(categories[col]),
                             "rule": "one-hot over the public categories; any other or "
                                     "missing value -> all zeros"})
    return {"columns": names, "encoding": encoding,
            "note": "bounds and category lists are public parameters given by the caller, "
                    "never derived from the data"}


# -- the command -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Options:
    """The command's parameters, checked before the data is read (none data-dependent)."""

    epsilon: float | None  # None: planned from --target-error once the sizes are counted
    delta: float | None
    alpha: float
    clip: float
    M: float
    L: float
    lr: float
    q: float
    steps: int
    epochs: float
    hidden: tuple[int, ...]
    values: list[str]
    bounds: dict[str, tuple[float, float]]
    categories: dict[str, list[str]]
    features: list[str]
    optimizer: str
    momentum: float
    schedule: str
    defaulted: list[str]


def _check_options(args: argparse.Namespace) -> _Options:
    import math

    from privot._validation import (
        check_delta,
        check_int,
        check_positive,
        check_probability,
    )

    epsilon = check_epsilon_arguments(args)  # None: planned from --target-error
    delta = (None if args.delta is None
             else check_delta(args.delta, "--delta", allow_zero=False))
    alpha = check_probability(args.alpha, "--alpha")
    given = {name: (None if getattr(args, attr) is None
                    else check_positive(getattr(args, attr), name))
             for name, attr in (("--clip", "clip"), ("--M", "M"), ("--L", "L"),
                                ("--lr", "lr"))}
    if args.batch_fraction is not None:
        check_probability(args.batch_fraction, "--batch-fraction", open_left=True)
    if args.steps is not None:
        check_int(args.steps, "--steps", minimum=1)
    if args.epochs is not None:
        check_positive(args.epochs, "--epochs")
    if args.momentum is not None and not 0 <= args.momentum < 1:
        raise InvalidParameterError("--momentum", args.momentum, "a number in [0, 1)")
    if not (0 <= args.test_fraction < 1) or math.isnan(args.test_fraction):
        raise InvalidParameterError("--test-fraction", args.test_fraction,
                                    "a number in [0, 1)")
    hidden = _hidden(args.hidden) if args.model == "mlp" else ()
    values = _split_list(args.sensitive_values, "--sensitive-values")
    if len(values) != 2 or values[0] == values[1]:
        raise InvalidParameterError("--sensitive-values", args.sensitive_values,
                                    "exactly two distinct values V0,V1")
    if args.sensitive == args.target:
        raise InvalidParameterError("--sensitive", args.sensitive,
                                    "a column other than the --target")
    bounds = _parse_bounds(args.bounds)
    categories = _parse_categories(args.categories)
    features = _features(args, bounds, categories)
    return _with_defaults(args, given, epsilon=epsilon, delta=delta, alpha=alpha,
                          hidden=hidden, values=values, bounds=bounds,
                          categories=categories, features=features)


def _with_defaults(args: argparse.Namespace, given: dict, **checked: Any) -> _Options:
    """The options, each hyperparameter not given taken from the defaults' rule
    (:func:`privot.learning.defaults.default_hyperparameters`: public quantities only,
    here the number of feature columns)."""
    from privot.learning.defaults import ADAM_LR, default_hyperparameters

    rule = default_hyperparameters(len(checked["features"]), epsilon=checked["epsilon"],
                                   delta=checked["delta"])
    chosen = {"--clip": rule.clip, "--M": rule.M, "--L": rule.L,
              "--optimizer": rule.optimizer, "--momentum": rule.momentum,
              "--schedule": rule.schedule, "--batch-fraction": rule.batch_fraction}
    flags = {"--clip": given["--clip"], "--M": given["--M"], "--L": given["--L"],
             "--optimizer": args.optimizer, "--momentum": args.momentum,
             "--schedule": args.schedule, "--batch-fraction": args.batch_fraction}
    values = {k: chosen[k] if v is None else v for k, v in flags.items()}
    defaulted = sorted(k for k, v in flags.items() if v is None)
    lr = given["--lr"]
    if lr is None:
        lr = rule.lr if values["--optimizer"] == rule.optimizer else ADAM_LR
        defaulted.append("--lr")
    q = float(values["--batch-fraction"])
    if args.steps is not None:  # make_private's steps, given as such
        steps = int(args.steps)
    elif args.epochs is not None:
        steps = max(1, round(float(args.epochs) / q))
    else:
        steps = rule.steps
        defaulted.append("--steps")
    return _Options(checked["epsilon"], checked["delta"], checked["alpha"],
                    float(values["--clip"]), float(values["--M"]), float(values["--L"]),
                    float(lr), q, steps, steps * q, checked["hidden"], checked["values"],
                    checked["bounds"], checked["categories"], checked["features"],
                    values["--optimizer"], float(values["--momentum"]),
                    values["--schedule"], sorted(defaulted))


@dataclass
class _Table:
    """The encoded table: features ``x`` (n, d), label ``y`` and group ``a`` (n,)."""

    n: int
    x: np.ndarray
    names: list[str]
    column_stats: dict
    y: np.ndarray
    a: np.ndarray
    sens_text: np.ndarray


def _read_table(args: argparse.Namespace, opts: _Options) -> _Table:
    import numpy as np

    from privot.engines import read_columns
    from privot.errors import InvalidDataError

    values = opts.values
    wanted = [args.target, args.sensitive, *opts.features]
    cols = read_columns(args.input, columns=wanted, float_columns=list(opts.bounds),
                        sep=args.sep)
    n = len(cols[args.target])
    if n == 0:
        raise InvalidDataError(f"{args.input} has no rows (a header-only file?); "
                               "nothing was trained or written")
    x, names, column_stats = _encode(cols, opts.features, opts.bounds, opts.categories, n)
    target_text = [_as_text(v) for v in cols[args.target].tolist()]
    y = np.asarray([t == args.positive for t in target_text], dtype=np.int64)
    _check_positive(args, target_text, y)
    sens_text = np.asarray([_as_text(v) for v in cols[args.sensitive].tolist()],
                           dtype=object)
    known = (sens_text == values[0]) | (sens_text == values[1])
    if not known.all():
        raise InvalidParameterError(
            "--sensitive-values", args.sensitive_values,
            f"the classes of column {args.sensitive!r}, which holds other (or "
            f"missing) values too (found {_found(sens_text)}"
            f"{_case_hint(values, sens_text)}); filter those rows first")
    missing = [v for v in values if not (sens_text == v).any()]
    if missing:
        raise InvalidParameterError("--sensitive-values", args.sensitive_values,
                                    f"two classes present in column "
                                    f"{args.sensitive!r}; {missing} never occurs "
                                    f"(found {_found(sens_text)}"
                                    f"{_case_hint(missing, sens_text)})")
    a = (sens_text == values[1]).astype(np.int64)
    return _Table(n, x, names, column_stats, y, a, sens_text)


#: How many distinct values a refusal lists (the curator's own data, before any charge).
_LISTED_VALUES = 12


def _found(text) -> str:
    """The distinct values of a column, for a refusal (the curator reads it)."""
    seen = sorted({"<missing>" if t is None else str(t) for t in text})
    more = len(seen) - _LISTED_VALUES
    return ", ".join(repr(v) for v in seen[:_LISTED_VALUES]) + (
        f" and {more} more" if more > 0 else "")


def _case_hint(wanted, text) -> str:
    """'; did you mean ...' when a wanted value matches a found one but for case."""
    seen = {str(t) for t in text if t is not None}
    hints = [f"{v!r} -> {t!r}" for v in wanted for t in sorted(seen)
             if t != v and t.casefold() == str(v).casefold()]
    return f"; values are case-sensitive: did you mean {', '.join(hints)}?" if hints else ""


def _check_positive(args: argparse.Namespace, target_text: list, y: np.ndarray) -> None:
    """Refuse a --positive value that never occurs, or occurs in every row (a target
    of one class: nothing to learn), before anything is charged."""
    if y.any() and not y.all():
        return
    why = ("never occurs" if not y.any() else "is the value of every row (one class: "
           "nothing to learn)")
    raise InvalidParameterError(
        "--positive", args.positive,
        f"a value of column {args.target!r} that some rows hold and others not; "
        f"{args.positive!r} {why} (found {_found(target_text)}"
        f"{_case_hint([args.positive], target_text)})")


def _split(args: argparse.Namespace, table: _Table, values: list[str], rng
           ) -> dict[str, np.ndarray]:
    """Rows of the train (and test) split: data-independent randomness, sizes from n."""
    import numpy as np

    n, a = table.n, table.a
    split_rng = rng if rng is not None else np.random.default_rng()
    perm = split_rng.permutation(n)
    n_test = int(round(args.test_fraction * n)) if args.test_fraction > 0 else 0
    if args.test_fraction > 0 and not (1 <= n_test <= n - 2):
        raise InvalidParameterError("--test-fraction", args.test_fraction,
                                    f"a fraction leaving at least one test row and "
                                    f"two training rows of the {n}")
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    for name, value in zip([f"A={v}" for v in values], (0, 1), strict=True):
        size = int((a[train] == value).sum())
        if size < 2:
            raise InvalidParameterError(
                "--sensitive", args.sensitive,
                f"at least 2 training rows per group; group {name} has {size} "
                "(a Wasserstein term needs two)")
    return {"train": train, **({"test": test} if n_test else {})}


def _model_and_optimizer(args: argparse.Namespace, opts: _Options, d: int, rng):
    """The classifier, initialised from public randomness only, and its optimizer."""
    from privot.learning import require_torch
    from privot.learning.result import build_classifier

    torch = require_torch()
    init_seed = None if rng is None else int(rng.integers(2**62))
    model = build_classifier(d, model=args.model, hidden=opts.hidden or (64, 64),
                             seed=init_seed)
    if opts.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=opts.lr, momentum=opts.momentum)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=opts.lr)
    steps = opts.steps
    rule = ((lambda t: max(0.0, 1.0 - t / steps)) if opts.schedule == "linear"
            else (lambda t: 1.0))  # a public schedule: post-processing
    return model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, rule)


def _scores(model, x: np.ndarray, splits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's scores on each split (curator-only)."""
    from privot.learning import require_torch

    torch = require_torch()
    with torch.no_grad():
        return {k: model(torch.as_tensor(x[r])).reshape(-1).double().numpy()
                for k, r in splits.items()}


def _curator_metrics(table: _Table, splits: dict, scores: dict, values: list[str],
                     rng) -> dict[str, Any]:
    """Fairness reports before and after training, per split (curator-only)."""
    import numpy as np

    metric_rng = None if rng is None else np.random.default_rng(int(rng.integers(2**62)))
    metrics: dict[str, Any] = {"threshold": 0.5, "sensitive_values": {"0": values[0],
                                                                      "1": values[1]}}
    for when in ("before", "after"):
        metrics[when] = {k: _curator_report(table.y[r], scores[when][k], table.a[r],
                                            metric_rng)
                         for k, r in splits.items()}
    # the degenerate-model check (privot.learning.diagnostics): a constant model's
    # parity gap is 0 because it decides nothing, never a fairness success
    metrics["degenerate"] = {when: {k: _degenerate(scores[when][k], table, r, values)
                                    for k, r in splits.items()}
                             for when in ("before", "after")}
    return metrics


def _degenerate(scores: np.ndarray, table: _Table, rows: np.ndarray,
                values: list[str]) -> dict[str, Any]:
    import numpy as np

    from privot.learning.diagnostics import degenerate_predictions

    names = np.asarray(values, dtype=object)[table.a[rows]]
    return degenerate_predictions(scores, names, threshold=0.5)


def _settings(args: argparse.Namespace, opts: _Options, names: list[str]) -> dict:
    """The public settings release.json records beside the guarantee."""
    values = opts.values
    return {
        "features": _encoding_release(opts.features, opts.bounds, opts.categories, names),
        "target": {"column": args.target, "positive": args.positive,
                   "rule": "1 where the value equals the positive value, else 0"},
        "sensitive": {"column": args.sensitive, "values": list(values),
                      "groups": {f"A={v}": v for v in values}},
        "hyperparameters": {
            "criterion": args.criterion, "alpha": opts.alpha, "epochs": opts.epochs,
            "batch_fraction": opts.q, "steps": opts.steps, "optimizer": opts.optimizer,
            "lr": opts.lr, "momentum": opts.momentum if opts.optimizer == "sgd" else None,
            "schedule": opts.schedule, "clip": opts.clip, "M": opts.M, "L": opts.L,
            "penalised_score": "model output - 1/2 (W2 is translation invariant; M bounds "
                               "the centred score)",
            "defaults": {"rule": _defaults_rule(), "taken_from_rule": opts.defaulted},
            "jacobian_clipping": args.jacobian_clipping,
            "test_fraction": args.test_fraction, "loss": "bce",
            "delta_rule": ("given (--delta)" if args.delta is not None else
                           "1/n^2, n = training rows = the sum of the public group sizes")},
        "public_by_relation": (
            "group sizes are public under the relation (replace one record inside one "
            "group, Remark 6.2 of paper 004); so are the training rows n, the batch sizes, "
            "the sampling rate, the sensitivity and the default delta, which are functions "
            "of them. Nothing else in this file is computed from the data: metrics, losses, "
            "scores and other counts are in the curator- files only."),
    }


def _defaults_rule() -> str:
    from privot.learning.defaults import DEFAULT_RULE

    return DEFAULT_RULE


def _curator_extras(table: _Table, splits: dict, values: list[str], seconds: dict,
                    data_warnings, metrics: dict, split: str) -> dict:
    """curator-report.json: row counts, clipped values, timings, data warnings."""
    a = table.a
    return {"rows_read": table.n, "rows_train": int(splits["train"].size),
            "rows_test": int(splits["test"].size) if "test" in splits else 0,
            "positives": int(table.y.sum()),
            "rows_per_sensitive_value": {values[0]: int((a == 0).sum()),
                                         values[1]: int((a == 1).sum())},
            "columns": table.column_stats, "seconds": seconds,
            "data_warnings": list(data_warnings),
            "degenerate_model": metrics["degenerate"]["after"][split]}


def _summary(args: argparse.Namespace, opts: _Options, result) -> str:
    p = result.privacy
    return (f"privot learn: {args.model} classifier, {args.criterion} penalty "
            f"alpha={opts.alpha:g}, {opts.steps} DP-SGD steps at sampling rate "
            f"{p['sampling_rate']:.4g}: epsilon = {p['epsilon']:.4g} (PLD upper bound; "
            f"paper's GDP-CLT figure {p['epsilon_paper_gdp_clt']:.4g}), delta = "
            f"{p['delta']:.3g}, sigma = {p['noise_multiplier']:.4g} (unit = one record of "
            "one group; group sizes public)" + _error_clause(result)
            + ("" if result.secure else "; SEEDED: not for publication"))


def _error_clause(result) -> str:
    """The run's error statement (public, stated before the charge), or nothing."""
    st = getattr(result, "error", None)
    if st is None:
        return ""
    ratio = st.details.get("noise_to_signal_at_least")
    return (f"; each step's noise: norm <= {st.bound:.4g} with probability "
            f"{st.confidence:g}" + ("" if ratio is None else
                                    f", noise-to-signal >= {ratio:.3g}")
            + " (release.json error)")


def _print_metrics(metrics: dict, split: str) -> None:
    """--show-metrics: the curator's line on stderr (not private)."""
    m0, m1 = metrics["before"][split], metrics["after"][split]

    def pair(key):
        v0, v1 = m0.get(key), m1.get(key)
        v0 = v0["estimate"] if v0 else None
        v1 = v1["estimate"] if v1 else None
        return f"{v0:.3f} -> {v1:.3f}" if v0 is not None and v1 is not None else "n/a"

    flag = metrics.get("degenerate", {}).get("after", {}).get(split, {})
    note = f" ({flag['note']})" if flag.get("degenerate") else ""
    print(f"privot learn: curator only (not private), {split} split, init -> trained: "
          f"accuracy {pair('accuracy')}, DP difference "
          f"{pair('demographic_parity_difference')}, EO difference "
          f"{pair('equalized_odds_difference')}{note}", file=sys.stderr)


def _degenerate_warning(metrics: dict, split: str) -> str | None:
    """The curator's warning line when the trained model is degenerate (else None)."""
    flag = metrics["degenerate"]["after"][split]
    if not flag["degenerate"]:
        return None
    return (f"privot learn: WARNING (curator only, not private): the trained model is "
            f"degenerate: it predicts class {flag['majority_class']} for "
            f"{flag['majority_share']:.1%} of the {split} rows ({flag['note']}); "
            "see docs/learning_defaults.md")


def training_options(args: argparse.Namespace, opts: _Options, delta: float) -> dict:
    """:func:`~privot.learning.make_private`'s public choices, less the rng, the
    accountant and the score function (one place: the run and its ``--target-error``
    plan, so that the plan states what the run will state)."""
    return {"penalty": args.criterion, "alpha": opts.alpha, "target_epsilon": opts.epsilon,
            "target_delta": delta, "steps": opts.steps, "batch_fraction": opts.q,
            "clip": opts.clip, "M": opts.M, "L": opts.L, "loss": "bce",
            "jacobian_clipping": args.jacobian_clipping}


def learning_state(options: dict, groups: Any, n_parameters: int,
                   confidence: float | None = None):
    """``state(epsilon) -> ErrorStatement``: the run's
    :func:`~privot.learning.error.learning_error` at each epsilon, everything else
    fixed (public: ``options``, the groups' sizes and structure, ``P``)."""
    from privot.learning.error import CONFIDENCE, learning_error
    from privot.learning.params import LearningParams

    conf = float(confidence or CONFIDENCE)
    return lambda eps: learning_error(LearningParams(**{**options, "target_epsilon": eps}),
                                      groups, n_parameters, confidence=conf)


def _plan(args: argparse.Namespace, opts: _Options, delta: float, groups: Any, d: int,
          ledger: Any) -> Any:
    """``--target-error``: the smallest epsilon whose per-step noise-norm statement
    meets it, on the public group sizes (public by the relation; counted, nothing trained
    or charged yet) and the model's public parameter count; refused when the ledger
    cannot pay it."""
    from privot.learning.result import count_parameters, describe_classifier
    from privot.privacy.events import ApproxEvent

    layers = describe_classifier(d, model=args.model, hidden=opts.hidden)["layers"]
    state = learning_state(training_options(args, opts, delta), groups,
                           count_parameters(layers), args.error_confidence)
    plan = plan_from_args(args, state)
    check_plan_budget(plan, state, ledger, args,
                      lambda e: ApproxEvent(e, delta, "dp-sgd"),
                      **RELEASE_RELATIONS["learn"])
    return plan


def _open_ledger(args: argparse.Namespace, opts: _Options):
    """The budget ledger (a missing file or a unit/relation it cannot record is refused
    now, before the data is read)."""
    from privot.privacy.events import ApproxEvent

    delta = opts.delta
    if opts.epsilon is None:  # --target-error: planned on the group sizes, read below
        return ledger_from_args(args, **RELEASE_RELATIONS["learn"], planned=None)
    return ledger_from_args(
        args, **RELEASE_RELATIONS["learn"],
        planned=None if delta is None else ApproxEvent(opts.epsilon, delta, "dp-sgd"),
        planned_note=("by the (epsilon, delta) pair it proves" if delta is not None else
                      "its delta is 1/n^2 of the training rows: give --delta to preview "
                      "the charge"))


def _run(args: argparse.Namespace) -> int:
    from privot._optional import require

    opts = _check_options(args)  # every parameter, before the data is read

    from privot.cli._output import OutputFolder, capture_data_warnings

    out = OutputFolder(args.output, command="learn", force=args.force,
                       publishable=PUBLISHABLE)
    out.check()  # before the data is read or anything computed
    ledger = _open_ledger(args, opts)
    require("matplotlib.figure", "plot")  # the figures are written after the charge
    rng = rng_from_args(args)
    say = say_from_args(args)

    import numpy as np

    from privot.learning import fairness_groups, make_private
    from privot.learning.defaults import centred_score
    from privot.learning.result import describe_classifier

    seconds: dict[str, float] = {}
    with capture_data_warnings("learn") as data_warnings:
        start = time.perf_counter()
        table = _read_table(args, opts)
        seconds["read_and_encode"] = time.perf_counter() - start
        splits = _split(args, table, opts.values, rng)
        train = splits["train"]
        groups = fairness_groups(table.x[train].copy(), table.y[train].copy(),
                                 np.asarray(table.sens_text[train], dtype=str),
                                 criterion=args.criterion,
                                 sensitive_values=tuple(opts.values))
        n_train = sum(groups.sizes.values())  # public: the sum of the group sizes
        delta = opts.delta if opts.delta is not None else 1.0 / n_train ** 2
        plan = None
        if opts.epsilon is None:  # --target-error: planned on the public group sizes
            plan = _plan(args, opts, delta, groups, table.x.shape[1], ledger)
            opts = replace(opts, epsilon=plan.epsilon)
        model, optimizer, schedule = _model_and_optimizer(args, opts, table.x.shape[1],
                                                          rng)
        scores = {"before": _scores(model, table.x, splits)}
        # with a ledger: the whole run charged once, with its event, before any noise
        with ledger_spender(ledger, args, capability="learn",
                            **RELEASE_RELATIONS["learn"], output=out.path) as acct:
            start = time.perf_counter()
            trainer = make_private(model, optimizer, groups,
                                   **training_options(args, opts, delta), rng=rng,
                                   score_fn=centred_score,
                                   sensitive_values=tuple(opts.values), accountant=acct)
            seconds["calibration"] = time.perf_counter() - start
            start = time.perf_counter()
            trainer.train(progress=progress_from_args(args),
                          callback=lambda rec: schedule.step())
            seconds["training"] = time.perf_counter() - start
        model.eval()
        scores["after"] = _scores(model, table.x, splits)
        start = time.perf_counter()
        metrics = _curator_metrics(table, splits, scores, opts.values, rng)
        seconds["metrics"] = time.perf_counter() - start

    split = "test" if "test" in splits else "train"
    rows = splits[split]
    score_data = {"split": split, "sensitive": table.a[rows],
                  "before": scores["before"][split], "after": scores["after"][split],
                  "labels": tuple(opts.values),
                  "y_true": table.y[rows] if args.criterion == "eo" else None}
    result = trainer.result(
        architecture=describe_classifier(table.x.shape[1], model=args.model,
                                         hidden=opts.hidden),
        settings={**_settings(args, opts, table.names), **planned_release(plan)},
        metrics=metrics, scores=score_data,
        curator=_curator_extras(table, splits, opts.values, seconds, data_warnings,
                                metrics, split),
        curve_points=CURVE_POINTS)
    out.open()
    out.record(result.save(out.path))

    say(_summary(args, opts, result))
    say(out.listing())
    if ledger is not None:
        say(ledger_summary(ledger))
    warning = _degenerate_warning(metrics, split)
    if warning is not None:  # a curator line: --quiet silences it (the report keeps it)
        say(warning, file=sys.stderr)
    if args.show_metrics and not args.quiet:
        _print_metrics(metrics, split)
    return 0
