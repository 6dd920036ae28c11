"""``privot audit``: an empirical lower bound on a privot mechanism's epsilon.

Runs the real mechanism of :mod:`privot.privacy.mechanisms` many times on a pair of
neighbouring inputs and calls :func:`privot.privacy.audit.audit`. ``--noise-factor``
below 1 breaks the mechanism on purpose (its noise is calibrated for
``epsilon / noise_factor`` while ``epsilon`` is claimed), to show that the audit
catches it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from privot.cli._common import add_seed_argument, positive_float, rng_from_args, to_json

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MECHANISMS", "DEFAULT_RUNS", "EXPONENTIAL_CANDIDATES", "mechanism_sampler",
           "register"]

MECHANISMS = ("laplace", "gaussian", "discrete-laplace", "exponential")

#: Runs per input when ``--runs`` is not given (the exponential mechanism is sampled one
#: selection at a time, the others in one vectorised call).
DEFAULT_RUNS = {"laplace": 200_000, "gaussian": 200_000, "discrete-laplace": 200_000,
                "exponential": 20_000}

#: Candidates of the exponential mechanism's audit: candidate 0 scores ``1 - d`` and the
#: others score ``d`` on input ``d`` in {0, 1}, so every score moves by the sensitivity 1
#: and the selection ratio of candidate 0 comes close to ``e^epsilon``.
EXPONENTIAL_CANDIDATES = 10

#: The neighbouring pair audited for each mechanism, as shown to the user.
NEIGHBOURS = {
    "laplace": "count 0 vs 1 (one unit added), L1 sensitivity 1",
    "gaussian": "value 0 vs 1 (one unit added), L2 sensitivity 1",
    "discrete-laplace": "integer count 0 vs 1 (one unit added), sensitivity 1",
    "exponential": (f"{EXPONENTIAL_CANDIDATES} candidates, scores (1-d, d, ..., d) for "
                    "d = 0 vs 1, sensitivity 1; statistic: the selected index"),
}

Sampler = Callable[[Any, int, "np.random.Generator"], "np.ndarray"]


def mechanism_sampler(mechanism: str, *, epsilon: float, delta: float = 0.0,
                      noise_factor: float = 1.0, secure: bool = True,
                      progress: bool = False) -> Sampler:
    """A vectorised audit sampler ``(d, n, rng) -> (n,) statistics`` for ``mechanism``.

    Parameters
    ----------
    mechanism : {"laplace", "gaussian", "discrete-laplace", "exponential"}
    epsilon : float
        The claimed epsilon.
    delta : float
        The claimed delta (the Gaussian mechanism is calibrated for it).
    noise_factor : float
        The noise is calibrated for ``epsilon / noise_factor``: below 1 the mechanism
        is broken on purpose (too little noise for its claim).
    secure : bool
        True: the mechanism draws from the OS CSPRNG exactly as in a release (the
        sampler ignores its ``rng``). False: from the audit's (seeded) generator.
    progress : bool
        tqdm bar for the one-at-a-time exponential mechanism (shown on a terminal).
    """
    import numpy as np

    from privot.privacy.mechanisms import (
        discrete_laplace_mechanism,
        exponential_mechanism,
        gaussian_mechanism,
        laplace_mechanism,
    )

    eps = epsilon / noise_factor

    def gen(rng: np.random.Generator) -> np.random.Generator | None:
        return None if secure else rng

    if mechanism == "laplace":
        def sampler(d: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            return laplace_mechanism(np.full(n, float(d)), sensitivity=1.0, epsilon=eps,
                                     rng=gen(rng)).value
    elif mechanism == "gaussian":
        def sampler(d: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            return gaussian_mechanism(np.full(n, float(d)), sensitivity=1.0, epsilon=eps,
                                      delta=delta, rng=gen(rng)).value
    elif mechanism == "discrete-laplace":
        def sampler(d: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            return discrete_laplace_mechanism(np.full(n, int(d), dtype=np.int64),
                                              sensitivity=1, epsilon=eps,
                                              rng=gen(rng)).value.astype(float)
    elif mechanism == "exponential":
        def sampler(d: Any, n: int, rng: np.random.Generator) -> np.ndarray:
            from tqdm.auto import trange

            scores = np.full(EXPONENTIAL_CANDIDATES, float(d))
            scores[0] = 1.0 - float(d)
            g = gen(rng)
            return np.fromiter(
                (exponential_mechanism(scores, sensitivity=1.0, epsilon=eps, rng=g).value
                 for _ in trange(n, desc=f"exponential mechanism, d={d}", leave=False,
                                 disable=None if progress else True)),
                dtype=float, count=n)
    else:  # argparse restricts the choices; a library caller gets a clear error
        from privot.errors import InvalidParameterError

        raise InvalidParameterError("mechanism", mechanism, f"one of {MECHANISMS}")
    return sampler


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit", help="empirically lower-bound a mechanism's epsilon",
        description="Run a privot mechanism many times on a pair of neighbouring inputs "
                    "and lower-bound its epsilon with exact (Clopper-Pearson) confidence "
                    "intervals. Neighbours: laplace: " + NEIGHBOURS["laplace"]
                    + "; gaussian: " + NEIGHBOURS["gaussian"] + "; discrete-laplace: "
                    + NEIGHBOURS["discrete-laplace"] + "; exponential: "
                    + NEIGHBOURS["exponential"] + ".",
        epilog="Exit status: 0 if the result is consistent with the claimed epsilon, 1 if "
               "the claim is VIOLATED (the lower bound exceeds it; a correct mechanism is "
               "flagged with probability at most 1 - confidence), 2 on invalid input. "
               "Without --seed the mechanism draws its noise from the OS CSPRNG, exactly "
               "as in a release.")
    p.add_argument("--mechanism", choices=MECHANISMS, required=True,
                   help="mechanism to audit")
    p.add_argument("--epsilon", type=positive_float, default=1.0,
                   help="claimed epsilon (> 0, default: %(default)s)")
    p.add_argument("--delta", type=positive_float, default=None,
                   help="claimed delta in [0, 1) (default: 1e-5 for gaussian, 0 otherwise)")
    p.add_argument("--runs", type=int, default=None, metavar="N",
                   help="runs per input (>= 100; default: 200000, 20000 for exponential)")
    p.add_argument("--confidence", type=positive_float, default=0.999,
                   help="confidence of the lower bound, in (0, 1): a correct mechanism is "
                        "reported VIOLATED with probability at most 1 - confidence "
                        "(default: %(default)s)")
    p.add_argument("--noise-factor", type=positive_float, default=1.0, metavar="F",
                   help="calibrate the noise for epsilon / F while claiming epsilon; F < 1 "
                        "breaks the mechanism on purpose (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_seed_argument(p)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from privot._validation import (
        check_delta,
        check_epsilon,
        check_int,
        check_positive,
        check_probability,
    )

    mech = args.mechanism
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if mech == "gaussian":
        delta = check_delta(1e-5 if args.delta is None else args.delta, "--delta",
                            allow_zero=False)
    else:
        delta = check_delta(0.0 if args.delta is None else args.delta, "--delta")
    runs = check_int(DEFAULT_RUNS[mech] if args.runs is None else args.runs, "--runs",
                     minimum=100)
    confidence = check_probability(args.confidence, "--confidence", open_left=True,
                                   open_right=True)
    factor = check_positive(args.noise_factor, "--noise-factor")
    rng = rng_from_args(args)

    from privot.privacy.audit import audit  # after the checks: a mistake answers fast

    sampler = mechanism_sampler(mech, epsilon=epsilon, delta=delta, noise_factor=factor,
                                secure=rng is None, progress=not args.json)
    result = audit(sampler, 0, 1, epsilon=epsilon, delta=delta, n_runs=runs,
                   confidence=confidence, rng=rng)
    noise = "seeded generator" if rng is not None else "OS CSPRNG (as in a release)"
    if args.json:
        print(to_json({"mechanism": mech, "neighbours": NEIGHBOURS[mech],
                       "claimed_epsilon": epsilon, "claimed_delta": delta,
                       "noise_factor": factor, "calibrated_epsilon": epsilon / factor,
                       "noise": noise, "epsilon_lower": result.epsilon_lower,
                       "epsilon_empirical": result.epsilon_empirical,
                       "confidence": confidence, "n_runs": result.n_runs,
                       "event": result.event, "counts": list(result.counts),
                       "violated": result.violated}))
    else:
        claim = f"epsilon={epsilon:g}" + (f", delta={delta:g}" if delta else " (pure)")
        print(f"mechanism: {mech}, claimed {claim}")
        print(f"neighbours: {NEIGHBOURS[mech]}")
        if factor != 1.0:
            what = "deliberately broken" if factor < 1 else "more noise than needed"
            print(f"noise calibrated for epsilon={epsilon / factor:.4g} "
                  f"(--noise-factor {factor:g}: {what})")
        print(f"noise source: {noise}")
        print(result.summary())
    return 1 if result.violated else 0
