"""Heatmap aggregation (issue 27): privot's exact-integer cell sums on DuckDB against the
float query a user would write by hand on DuckDB.

Data: ``bench_engines.make_data`` (resampled Gowalla NYC users, rows shuffled), 10^7
check-ins of 10^6 users as Parquet (``--quick``: 10^6 of 10^5), written once under
``/tmp/privot_bench`` and reused by ``bench_engines.py``. Grid: the public NYC box,
Delta = 256.

* ``heatmap.aggregate_sql``: privot's whole step (``aggregate_user_cells``, DuckDB
  engine: per (user, cell) counts, per-user totals, fixed-point digits, exact integer
  sums per cell, the driver's correctly rounded floats) against the same plan written
  with float arithmetic (``sum(k / n)`` per cell). Check: the same occupied cells and
  the same values up to float rounding.
* ``heatmap.aggregate_vs_duckdb``: the same privot step against the shortest float
  query (each point weighs ``1 / n_u``; no per (user, cell) counts). The exact
  arithmetic needs the counts ``k_{u,c}`` (``floor(2^96 k / n)`` is not linear in
  ``k``), hence a group-by over (user, cell) pairs that this peer skips: reported,
  no goal.

Both contenders open a fresh in-memory DuckDB connection per run with DuckDB's default
threads; the peer's SQL uses the same half-open bounds and the same cell formula.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from compare.case import Case

BOUNDS = (-74.26, -73.70, 40.48, 40.92)  # bench_engines.BOUNDS
RESOLUTION = 256
DATA = Path("/tmp/privot_bench")


def _parquet(quick: bool) -> Path:
    """The Parquet file of ``bench_engines.make_data`` (generated once)."""
    import bench_engines

    users, checkins = (100_000, 1_000_000) if quick else (1_000_000, 10_000_000)
    stem = DATA / f"gowalla_resampled_{users}u_{checkins}c"
    meta = stem.with_suffix(".json")
    if not meta.exists():
        meta.write_text(json.dumps(bench_engines.make_data(stem, users, checkins)))
    return stem.with_suffix(".parquet")


def _cells_sql(path: Path) -> str:
    """The points inside the box with their cell (the grid's formula, half-open)."""
    from privot.grid import Grid

    g = Grid(bounds=BOUNDS, resolution=RESOLUTION)
    x0, x1, y0, y1 = (float(v) for v in g.bounds)
    d = RESOLUTION
    return (f"SELECT user_id AS u, least(CAST(floor((latitude - {y0!r}) / "
            f"{g.cell_height!r}) AS INTEGER), {d - 1}) * {d} + least(CAST(floor("
            f"(longitude - {x0!r}) / {g.cell_width!r}) AS INTEGER), {d - 1}) AS cell "
            f"FROM read_parquet('{path}') WHERE user_id IS NOT NULL AND longitude >= "
            f"{x0!r} AND longitude < {x1!r} AND latitude >= {y0!r} AND latitude < {y1!r}")


def _same_plan_sql(path: Path) -> str:
    return (f"WITH pts AS ({_cells_sql(path)}), "
            "uc AS (SELECT u, cell, count(*) AS k FROM pts GROUP BY u, cell), "
            "nu AS (SELECT u, sum(k) AS n FROM uc GROUP BY u) "
            "SELECT cell, sum(k / n) AS s FROM uc JOIN nu USING (u) GROUP BY cell")


def _per_point_sql(path: Path) -> str:
    return (f"WITH pts AS ({_cells_sql(path)}), "
            "nu AS (SELECT u, count(*) AS n FROM pts GROUP BY u) "
            "SELECT cell, sum(1.0 / n) AS s FROM pts JOIN nu USING (u) GROUP BY cell")


def _peer(sql_of):
    def run(path: Path) -> np.ndarray:
        import duckdb

        con = duckdb.connect(":memory:")
        try:
            con.execute("SET enable_progress_bar = false")
            got = con.execute(sql_of(path)).fetchnumpy()
        finally:
            con.close()
        out = np.zeros(RESOLUTION * RESOLUTION)
        out[np.asarray(got["cell"], dtype=np.int64)] = np.asarray(got["s"], dtype=float)
        return out.reshape(RESOLUTION, RESOLUTION)
    return run


def _privot(path: Path) -> np.ndarray:
    from privot.grid import Grid
    from privot.heatmaps.engine_step import aggregate_user_cells

    return aggregate_user_cells(path, grid=Grid(bounds=BOUNDS, resolution=RESOLUTION)).sums


def _check(a: np.ndarray, b: np.ndarray) -> dict:
    assert np.array_equal(a > 0, b > 0), "different occupied cells"
    rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))
    assert rel < 1e-9, f"cell sums differ by {rel:g} (relative)"
    return {"max_rel_diff": rel, "cells_occupied": int(np.count_nonzero(a)),
            "sum": float(a.sum())}


def cases(quick: bool) -> list[Case]:
    rows = "10^6" if quick else "10^7"
    state: dict = {}

    def setup() -> None:
        state.setdefault("path", _parquet(quick))

    def case(name: str, peer: str, sql_of, goal: float | None, note: str) -> Case:
        run_peer = _peer(sql_of)
        return Case(
            name=name, workload=f"{rows} check-ins (Parquet), NYC box, Delta = {RESOLUTION}",
            peer=peer, run_privot=lambda: _privot(state["path"]),
            run_peer=lambda: run_peer(state["path"]), goal=goal, setup=setup,
            check=_check, repeats=3 if quick else 5, note=note)

    return [
        case("heatmap.aggregate_sql", "DuckDB, the same plan in float (sum(k / n))",
             _same_plan_sql, 1.15,
             "privot: exact fixed-point integer sums, bit-identical on every engine"),
        case("heatmap.aggregate_vs_duckdb", "DuckDB, per-point float weights 1 / n_u",
             _per_point_sql, None,
             "the peer skips the per (user, cell) counts the exact sums need"),
    ]
