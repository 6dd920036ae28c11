"""Seeded releases of the four capabilities, digested: the same seeds give the same bytes.

``python tests/golden/seeded_releases.py --write`` records the digests in
``seeded_releases.json`` (after a deliberate change of a release, say why in the commit);
``tests/test_seeded_releases.py`` recomputes and compares them. Each case saves its
result's publishable files (``ReleaseResult.save``; curator files, which hold timings,
are left out) and digests them with SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from fair_data import logistic_model, two_group_table

GOLDEN = Path(__file__).with_name("seeded_releases.json")


def _points(seed: int = 0, users: int = 60) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    n = users * 4
    return pd.DataFrame({"user_id": np.repeat(np.arange(users), 4),
                         "x": gen.beta(2, 5, n), "y": gen.beta(5, 2, n)})


def heatmap(method: str):
    from privot.heatmaps import Grid, private_heatmap

    kw = {} if method == "pyramid" else {"method": method}
    return private_heatmap(_points(), x="x", y="y", user="user_id",
                           grid=Grid((0.0, 1.0, 0.0, 1.0), 16), epsilon=1.0, rng=11, **kw)


def barycenter(method: str, **extra):
    from privot.barycenters import PublicBounds, private_barycenter

    gen = np.random.default_rng(1)
    d = 2 if method != "subspace" else 6
    groups = [np.clip(gen.normal(0.2 * g, 0.3, (400, d)), -1, 1) for g in range(3)]
    bounds = PublicBounds.box([-1.0] * d, [1.0] * d)
    kw = {"delta": 1e-6} if method != "coreset" else {}
    return private_barycenter(groups, bounds=bounds, m=4, epsilon=2.0, method=method,
                              rng=12, **kw, **extra)


def sample(name: str, variant: str):
    from privot.grid import Grid
    from privot.sampling import make_mechanism, sample_population
    from privot.sampling.engine_step import user_cell_counts

    grid = Grid((0.0, 1.0, 0.0, 1.0), 4)
    counts = user_cell_counts(_points(users=30), grid=grid, x_column="x",
                              y_column="y")
    mech = make_mechanism(name, points=grid.cell_centre_points(), epsilon=1.0)
    return sample_population(counts, mech, variant=variant, rng=13)


def learning():
    import torch

    from privot.learning import LearningResult, make_private

    x, y, a = two_group_table(3)
    model = logistic_model()
    t = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), (x, y, a),
                     penalty="sp", alpha=0.5, noise_multiplier=4.0, target_delta=1e-5,
                     steps=4, rng=14)
    t.train()
    return LearningResult.from_trainer(t, architecture={"model": "logistic", "inputs": 2})


CASES = {
    "heatmap-pyramid": lambda: heatmap("pyramid"),
    "heatmap-laplace": lambda: heatmap("laplace"),
    "barycenter-coreset": lambda: barycenter("coreset"),
    "barycenter-perturbation-lloyd": lambda: barycenter("perturbation"),
    "barycenter-perturbation-anchored": lambda: barycenter("perturbation", step="anchored"),
    "barycenter-subspace": lambda: barycenter("subspace"),
    "sample-wpm-direct": lambda: sample("wpm", "direct"),
    "sample-wpm-entropic-linear": lambda: sample("wpm-entropic", "linear"),
    "sample-krr-direct": lambda: sample("krr", "direct"),
    "learning-sp": learning,
}


def digest(result) -> dict[str, str]:
    """SHA-256 of each publishable file ``result.save`` writes."""
    with tempfile.TemporaryDirectory() as tmp:
        result.save(tmp)
        out = {}
        for path in sorted(Path(tmp).rglob("*")):
            if path.is_file() and not path.name.startswith("curator-"):
                out[str(path.relative_to(tmp))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out


def compute(names=None) -> dict[str, dict[str, str]]:
    return {name: digest(CASES[name]()) for name in (names or CASES)}


if __name__ == "__main__":
    got = compute()
    if "--write" in sys.argv:
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    else:
        print(json.dumps(got, indent=2, sort_keys=True))
