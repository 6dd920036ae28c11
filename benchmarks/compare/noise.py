"""Noise samplers (issue 27): privot's secure Laplace and Gaussian against OpenDP's, and
against numpy's floating-point samplers.

privot runs its production path: ``mechanisms.laplace_mechanism`` (sensitivity 1,
epsilon 1: scale 1) and ``mechanisms.add_gaussian_noise`` (sigma 1) on a zero vector,
``rng=None`` (the OS CSPRNG, exact discrete samplers on a dyadic grid, float-attack
safe). Peers, on the same vector and at the same scale:

* ``noise.laplace_opendp`` / ``noise.gaussian_opendp``: OpenDP's ``make_laplace`` /
  ``make_gaussian`` over ``vector_domain(atom_domain(T=float))`` (``l1_distance`` /
  ``l2_distance``, scale 1; "contrib" features enabled), also exact and secure.
  10^5 values (``--quick``: 10^4): OpenDP takes about 20 us (Laplace) and 50 us
  (Gaussian) per value here, so 10^6 values would take minutes per case.
* ``noise.laplace_numpy`` / ``noise.gaussian_numpy``: numpy's ``Generator.laplace`` /
  ``.normal`` on 10^6 values (``--quick``: 10^5): the floating-point samplers a user
  would write by hand, **not secure** (seeded PCG64, the textbook float attack applies).

Check: the sample standard deviation of each output is that of its distribution
(``sqrt(2)`` for Laplace(1), 1 for N(0, 1)), within six standard errors.
OpenDP is optional (the ``dev`` extra): without it its two cases are left out.
"""

from __future__ import annotations

import math

import numpy as np

from compare.case import Case

SCALE = 1.0
# kurtosis of each distribution: the variance of a sample variance is (kurt - 1) var^2 / n
_KURTOSIS = {"laplace": 6.0, "gaussian": 3.0}
_STD = {"laplace": math.sqrt(2.0) * SCALE, "gaussian": SCALE}


def _check(kind: str, n: int):
    """``check(privot, peer)``: both sample standard deviations match the distribution's."""

    def check(a, b) -> dict:
        tol = 6.0 * math.sqrt((_KURTOSIS[kind] - 1.0) / n)  # on var / expected var
        out = {}
        for who, values in (("privot", a), ("peer", b)):
            ratio = float(np.var(np.asarray(values, dtype=float))) / _STD[kind] ** 2
            if abs(ratio - 1.0) > tol:
                raise AssertionError(f"{who}'s {kind} variance is {ratio:.4f} x the "
                                     f"expected one (tolerance {tol:.4f})")
            out[f"var_ratio_{who}"] = ratio
        return out

    return check


def _privot(kind: str, zeros: np.ndarray):
    from privot.privacy import mechanisms

    if kind == "laplace":
        return lambda: mechanisms.laplace_mechanism(zeros, sensitivity=1.0,
                                                    epsilon=1.0 / SCALE).value
    return lambda: mechanisms.add_gaussian_noise(zeros, sigma=SCALE)


def _opendp_cases(quick: bool) -> list[Case]:
    try:
        import opendp.prelude as dp
    except ImportError:
        print("compare.noise: opendp is not installed (the dev extra): its cases are "
              "left out", flush=True)
        return []
    dp.enable_features("contrib")
    n = 10_000 if quick else 100_000
    zeros = np.zeros(n)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    out = []
    for kind, make, metric in (("laplace", dp.m.make_laplace, dp.l1_distance(T=float)),
                               ("gaussian", dp.m.make_gaussian, dp.l2_distance(T=float))):
        meas = make(domain, metric, scale=SCALE)
        out.append(Case(
            name=f"noise.{kind}_opendp",
            workload=f"{kind} noise of scale {SCALE:g} on {n:,} values (a zero vector)",
            peer=f"OpenDP {dp.__version__}: make_{kind}(vector_domain(float), scale=1)",
            run_privot=_privot(kind, zeros), run_peer=lambda meas=meas: meas(zeros),
            check=_check(kind, n), repeats=3,
            note="both exact and secure (privot: OS CSPRNG, discrete samplers on a dyadic "
                 "grid; OpenDP: its exact samplers); one thread each"))
    return out


def _numpy_cases(quick: bool) -> list[Case]:
    n = 100_000 if quick else 1_000_000
    zeros = np.zeros(n)
    gen = np.random.default_rng(0)
    peers = {"laplace": (lambda: zeros + gen.laplace(0.0, SCALE, n), "Generator.laplace"),
             "gaussian": (lambda: zeros + gen.normal(0.0, SCALE, n), "Generator.normal")}
    return [Case(name=f"noise.{kind}_numpy",
                 workload=f"{kind} noise of scale {SCALE:g} on {n:,} values (a zero vector)",
                 peer=f"numpy {call} (floating point, seeded PCG64)",
                 run_privot=_privot(kind, zeros), run_peer=run_peer,
                 check=_check(kind, n), repeats=7,
                 note="reference only: numpy's float samplers are NOT secure (seeded PRNG, "
                      "float attack); privot reads the OS CSPRNG and samples exactly")
            for kind, (run_peer, call) in peers.items()]


def cases(quick: bool) -> list[Case]:
    return _opendp_cases(quick) + _numpy_cases(quick)
