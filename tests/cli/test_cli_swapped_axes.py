"""Issue 26: rows that clearly fit the public bounds with their first two coordinates
swapped are refused before anything is charged, by every command that reads coordinates
against bounds (heatmap, sample, barycenter) and by ``private_heatmap``: one rule,
``privot._usable.refuse_swapped_axes`` (most rows outside as given; more than half, and
more than as given, inside with the axes exchanged). Before, a release of the wrong data
went out with a warning. Deterministic: no false alarms."""

from __future__ import annotations

import numpy as np
import pytest

from privot.cli.main import main
from privot.errors import InvalidDataError
from privot.privacy import Ledger

pd = pytest.importorskip("pandas")

# bounds: x (longitude) in [0, 1], y (latitude) in [40, 41]
BOUNDS = ["--bounds", "0", "1", "40", "41"]
ARGS = {
    "heatmap": ["--epsilon", "1", "--resolution", "16", "--user-column", "uid",
                "--columns", "lon,lat", "--seed", "5"],
    "sample": ["--epsilon", "2", "--resolution", "4", "--user-column", "uid",
               "--columns", "lon,lat", "--seed", "5"],
    "barycenter": ["--columns", "lon,lat", "--m", "4", "--epsilon", "1", "--seed", "5"],
}


def _frame(swapped_share: float, n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Rows inside the bounds; the first ``swapped_share`` of them with lon and lat
    exchanged (lat 40.x written in the lon column)."""
    rng = np.random.default_rng(seed)
    lon, lat = rng.uniform(0.1, 0.9, n), rng.uniform(40.1, 40.9, n)
    k = int(swapped_share * n)
    lon[:k], lat[:k] = lat[:k].copy(), lon[:k].copy()
    return pd.DataFrame({"uid": rng.integers(0, 100, n), "lon": lon, "lat": lat})


@pytest.mark.parametrize("command", sorted(ARGS))
def test_mostly_swapped_rows_are_refused_before_the_charge(tmp_path, capsys, command):
    path = tmp_path / "rows.csv"
    _frame(0.8).to_csv(path, index=False)
    ledger_path = tmp_path / "budget.sqlite"
    # the sample command's local release is covered by a user-level replace-one ledger
    Ledger.create(ledger_path, epsilon=10.0, delta=1e-5,
                  unit="user" if command != "barycenter" else "row",
                  relation={"heatmap": "add-remove", "sample": "replace-one",
                            "barycenter": "replace-one-in-group"}[command])
    out = tmp_path / "out"
    rc = main([command, str(path), *BOUNDS, *ARGS[command], "--ledger", str(ledger_path),
               "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "swapped" in err and "nothing was charged" in err.lower()
    assert not out.exists()
    assert Ledger.open(ledger_path).status().spent_epsilon == 0.0


@pytest.mark.parametrize("command", sorted(ARGS))
def test_a_few_swapped_rows_are_dropped_not_refused(tmp_path, capsys, command):
    """20% of the rows swapped: they are outside and dropped (or clipped), the rest is
    released; the rule never refuses a table that mostly fits as given."""
    path = tmp_path / "rows.csv"
    _frame(0.2).to_csv(path, index=False)
    rc = main([command, str(path), *BOUNDS, *ARGS[command], "-o", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err


def test_private_heatmap_refuses_mostly_swapped_rows():
    from privot.heatmaps import Grid, private_heatmap

    frame = _frame(0.8)
    grid = Grid((0.0, 1.0, 40.0, 41.0), 8, aspect="stretch")
    with pytest.raises(InvalidDataError, match="swapped"):
        private_heatmap(frame, grid=grid, epsilon=1.0, user="uid", x="lon", y="lat", rng=0)
    res = private_heatmap(frame, grid=grid, epsilon=1.0, user="uid", x="lat", y="lon", rng=0)
    assert res.epsilon == 1.0
