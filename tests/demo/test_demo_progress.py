"""The demo says what it is doing, in plain lines that survive redirection (issue 12)."""

from __future__ import annotations

import numpy as np

from privot.demo import run_demo


def test_progress_lines_on_stderr_only_when_asked(tmp_path, capsys):
    run_demo(tmp_path / "a", rng=np.random.default_rng(0), quick=True,
             sections=["privot.demo.ot_core"], progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "privot demo: [1/1] ot_core ..."
    assert err[1].startswith("privot demo: [1/1] ") and err[1].endswith(" s")
    run_demo(tmp_path / "b", rng=np.random.default_rng(0), quick=True,
             sections=["privot.demo.ot_core"])
    assert "privot demo:" not in capsys.readouterr().err
