"""Local DP (issue 27): privot's k-RR against pure-ldp's k-RR client.

* ``ldp.krr_pure_ldp``: ``make_mechanism("krr", ...).sample_cells`` on 10^5 users
  given by their cell of a 20 x 20 grid (k = 400, eps = 1; ``--quick``: 2 x 10^4),
  ``rng=None`` (the OS CSPRNG, certified snapped channel built once per mechanism, in
  the warm-up), against pure-ldp's direct-encoding (k-RR) client, ``DEClient(epsilon,
  d).privatise(item)`` called once per user in a Python loop, as its users do (items
  ``1..d``, its default index mapper; output indices ``0..d-1``). pure-ldp draws from
  Python's ``random`` (Mersenne Twister, not secure). Check: both keep the true cell at
  the k-RR rate ``e^eps / (e^eps + k - 1)`` within six standard errors.

pure-ldp is optional (the ``dev`` extra): without it the case is left out. Its package
``pure_ldp.frequency_oracles`` imports its RAPPOR server, which needs ``statsmodels``
(not a declared dependency of pure-ldp 1.2.0); without statsmodels the client's module
``direct_encoding/de_client.py`` is loaded from its file (the same class).
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from compare.case import Case, keep_rate_check

SIDE = 20  # as compare/sampling.py: a 20 x 20 grid, k = 400 cells
EPS = 1.0


def _de_client():
    """pure-ldp's ``DEClient`` class, or None when pure-ldp is not installed."""
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient
    except ModuleNotFoundError as err:
        if err.name != "statsmodels":
            return None
        # the package's __init__ imports RAPPOR (statsmodels); the client does not need it
        import pure_ldp

        path = f"{pure_ldp.__path__[0]}/frequency_oracles/direct_encoding/de_client.py"
        spec = importlib.util.spec_from_file_location("_pure_ldp_de_client", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        DEClient = module.DEClient  # noqa: N806
    return DEClient


def _krr_case(quick: bool, de_client) -> Case:  # noqa: ANN001
    from privot.sampling import make_mechanism

    n, k = (20_000 if quick else 100_000), SIDE * SIDE
    cells = np.random.default_rng(1).integers(0, k, n)
    g = np.stack(np.meshgrid(np.arange(SIDE), np.arange(SIDE), indexing="ij"), -1)
    mech = make_mechanism("krr", points=g.reshape(-1, 2) / (SIDE - 1), epsilon=EPS)
    client = de_client(epsilon=EPS, d=k)
    items = (cells + 1).tolist()  # pure-ldp's items are 1..d (its default index mapper)
    keep = math.exp(EPS) / (math.exp(EPS) + k - 1)

    def run_privot():
        return mech.sample_cells(cells).indices  # rng=None: the OS CSPRNG (publishable)

    def run_peer():
        return [client.privatise(item) for item in items]

    check = keep_rate_check(cells, keep)

    return Case(name="ldp.krr_pure_ldp",
                workload=f"k-RR, {n:,} users given by their cell, k = {k}, eps = {EPS:g}",
                peer="pure-ldp DEClient.privatise, one call per user (Python loop)",
                run_privot=run_privot, run_peer=run_peer, check=check, repeats=5,
                note="privot: RandomizedResponse.sample_cells, secure OS entropy; pure-ldp: "
                     "Python's random (Mersenne Twister, not secure)")


def cases(quick: bool) -> list[Case]:
    de_client = _de_client()
    if de_client is None:
        print("compare.ldp: pure-ldp is not installed (the dev extra): its case is left "
              "out", flush=True)
        return []
    return [_krr_case(quick, de_client)]
