"""Library code never writes to stdout: DuckDB's progress bar stays off (issue 23, "Also").

DuckDB's Python client switches its progress bar on in interactive sessions (the REPL,
IPython/Jupyter, ``python -c``: ``duckdb.__interactive__``) and then prints it to
**stdout**, even a pipe or a file, for any query longer than ``progress_bar_time``
(2000 ms by default): ``aggregate_user_cells`` on 10^7 rows under ``python -c`` wrote
3.7 kB of bar into stdout before the fix. The engine now switches the bar off on every
connection it opens.

To test that on small inputs, the connections DuckDB hands out are made to behave as in
an interactive session (bar on) whatever runs the tests, and the subprocess test lowers
the wait to 0 ms on every query privot runs while the bar is on, so that DuckDB prints
at once if privot leaves it on (several bars for 2 * 10^4 rows before the fix). DuckDB's
``SET progress_bar_time`` also switches the bar on (seen with DuckDB 2.0.1), hence "while
the bar is on" and not "always".
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from privot.engines.duckdb import DuckDBEngine
from privot.heatmaps import Grid, aggregate_user_cells

duckdb = pytest.importorskip("duckdb")

GRID = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=16)


def _points(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user_id": rng.integers(0, max(n // 10, 1), n),
                         "longitude": rng.random(n), "latitude": rng.random(n)})


def _bar_on(con) -> bool:
    return bool(con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0])


@pytest.fixture
def interactive_duckdb(monkeypatch):
    """``duckdb.connect`` as in an interactive session: the progress bar on."""
    real = duckdb.connect

    def connect(*args, **kwargs):
        con = real(*args, **kwargs)
        con.execute("SET enable_progress_bar = true")
        return con

    monkeypatch.setattr(duckdb, "connect", connect)
    assert _bar_on(duckdb.connect(":memory:"))  # the precondition holds


@pytest.mark.parametrize("kwargs", [{}, {"threads": 1, "memory_limit": "512MB"}])
def test_engine_connections_have_duckdbs_progress_bar_off(interactive_duckdb, kwargs):
    con = DuckDBEngine(**kwargs)._connect()
    try:
        assert not _bar_on(con)
        if kwargs:  # the engine's own configuration still applies
            assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    finally:
        con.close()


def test_the_callers_duckdb_connections_are_not_reconfigured(interactive_duckdb):
    """The engine opens, configures and closes private connections: a connection of the
    caller's keeps its progress bar, and DuckDB's default connection its setting."""
    mine = duckdb.connect(":memory:")
    try:
        default_before = bool(duckdb.execute(
            "SELECT current_setting('enable_progress_bar')").fetchone()[0])
        cs = aggregate_user_cells(_points(2000), grid=GRID)
        assert cs.n_points == 2000
        assert _bar_on(mine)
        assert bool(duckdb.execute(
            "SELECT current_setting('enable_progress_bar')").fetchone()[0]) is default_before
    finally:
        mine.close()


#: Run in a fresh interpreter (a script, so stdout is exactly what the call writes).
_SCRIPT = textwrap.dedent("""
    import sys

    import duckdb
    import numpy as np
    import pandas as pd

    real_connect = duckdb.connect


    class EagerBar:
        \"\"\"A connection whose queries show DuckDB's bar at once (0 ms) while it is on.

        SET statements keep the default 2000 ms wait: they take microseconds and never
        print in real use.\"\"\"

        def __init__(self, con):
            self._con = con

        def __getattr__(self, name):
            return getattr(self._con, name)

        def execute(self, sql, *args, **kwargs):
            if not sql.lstrip().upper().startswith("SET "):
                on = self._con.execute(
                    "SELECT current_setting('enable_progress_bar')").fetchone()[0]
                if on:
                    self._con.execute("SET progress_bar_time = 0")
            return self._con.execute(sql, *args, **kwargs)


    def connect(*args, **kwargs):
        con = real_connect(*args, **kwargs)
        con.execute("SET enable_progress_bar = true")  # as in an interactive session
        return EagerBar(con)


    duckdb.connect = connect

    from privot.heatmaps import Grid, aggregate_user_cells

    n = int(sys.argv[1])
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"user_id": rng.integers(0, n // 10, n),
                       "longitude": rng.random(n), "latitude": rng.random(n)})
    cs = aggregate_user_cells(df, grid=Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=64))
    assert cs.n_points == n
""")


def test_aggregate_user_cells_writes_nothing_to_stdout(tmp_path):
    script = tmp_path / "call_privot.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(script), "20000"], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "", f"the library call wrote to stdout: {proc.stdout[:200]!r}"
    # nor a bar on stderr: no progress= switch asks for one (privot's rule, _progress.py)
    assert "%" not in proc.stderr, proc.stderr[-2000:]
