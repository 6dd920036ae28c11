"""Barycenters (issue 27): output perturbation against privot's own coreset method.

``barycenter.perturbation``: ``private_barycenter(method="perturbation")`` (its default
step, noisy Lloyd steps on power cells, anchored at a private coreset barycenter) against
``method="coreset"`` on the same public table, ``m = 48``, ``epsilon = 1`` (perturbation:
``delta = 1e-6``), the same seed. The peer is **privot's own coreset method**, not another
library: the issue's goal is that the perturbation release costs at most 3x the coreset
release. Data: the ``diamonds`` table of ``privot.datasets.tables`` (the optional extra
"datasets"), columns carat and price, its 4 groups by cut (53,940 rows; ``--quick``: 2,500
rows a group).
"""

from __future__ import annotations

import numpy as np

from compare.case import Case

M, EPSILON, DELTA, SEED = 48, 1.0, 1e-6, 0
COLUMNS = ("carat", "price")


def _groups(quick: bool) -> tuple[list[np.ndarray], object]:
    from privot.barycenters import PublicBounds
    from privot.datasets.tables import load_table

    table = load_table("diamonds", per_group=2_500 if quick else None, rng=SEED)
    cols = [table.columns.index(c) for c in COLUMNS]
    spec = {"carat": (0.0, 5.5), "price": (0.0, 20000.0)}  # the table's public bounds
    bounds = PublicBounds.box([spec[c][0] for c in COLUMNS], [spec[c][1] for c in COLUMNS])
    return [g[:, cols] for g in table.groups], bounds


def _check(pert, core) -> dict:  # noqa: ANN001 (BarycenterResult)
    a, b = np.asarray(pert.support), np.asarray(core.support)
    assert a.shape == b.shape == (M, 2), (a.shape, b.shape)
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    # how far apart the two releases are (a utility figure, not an agreement target)
    from privot.ot import wasserstein_distance

    return {"w2_between_supports": float(wasserstein_distance(a, b))}


def cases(quick: bool) -> list[Case]:
    from privot.barycenters import private_barycenter

    data: dict = {}

    def setup() -> None:
        data["groups"], data["bounds"] = _groups(quick)

    def release(method: str):  # noqa: ANN202
        kw = {"delta": DELTA} if method == "perturbation" else {}
        return private_barycenter(data["groups"], bounds=data["bounds"], m=M,
                                  epsilon=EPSILON, method=method, rng=SEED,
                                  progress=False, **kw)

    rows = "4 x 2,500" if quick else "53,940 (4 groups)"
    return [Case(
        name="barycenter.perturbation",
        workload=f"diamonds carat x price, {rows} rows, m = {M}, eps = {EPSILON:g}",
        peer="privot's own method='coreset' on the same data (not another library)",
        run_privot=lambda: release("perturbation"), run_peer=lambda: release("coreset"),
        goal=3.0, setup=setup, check=_check, repeats=3,
        note="perturbation: step='lloyd' (default), delta = 1e-6; both seeded (rng=0). "
             "Its time is the power-weight Newton solves (12 on 10,000-point proxies: "
             "exp and the (m, P) x (P, m) Hessian), kept to the same releases")]
