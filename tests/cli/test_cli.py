"""The ``privot`` command line, run in-process through :func:`privot.cli.main.main`.

Exit statuses: 0 success / audit consistent, 1 audit VIOLATED, 2 user mistake (one
line on stderr, no traceback).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from privot.cli._common import SEED_WARNING
from privot.cli.main import SUBCOMMANDS, main
from privot.privacy.accounting import ACCOUNTANTS, calibrate_noise_multiplier

CALIBRATE = ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "500",
             "--sampling-rate", "0.2"]


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def reference_sigmas():
    return {a: calibrate_noise_multiplier(1.0, 1e-5, steps=500, sampling_rate=0.2,
                                          accountant=a).noise_multiplier
            for a in ACCOUNTANTS}


@pytest.mark.parametrize("command", [m.rsplit(".", 1)[1].replace("_", "-") for m in SUBCOMMANDS])
def test_help_of_every_subcommand(capsys, command):
    rc, out, err = _run(capsys, [command, "--help"])
    assert rc == 0
    assert f"usage: privot {command}" in out
    assert err == ""


def test_top_level_help_lists_subcommands(capsys):
    rc, out, _ = _run(capsys, ["--help"])
    assert rc == 0
    for m in SUBCOMMANDS:
        assert m.rsplit(".", 1)[1].replace("_", "-") in out


def test_audit_help_documents_exit_status(capsys):
    _, out, _ = _run(capsys, ["audit", "--help"])
    text = " ".join(out.split())
    assert "Exit status: 0" in text and "1 if the claim is VIOLATED" in text
    assert "2 on invalid input" in text


def test_console_script_help():
    script = Path(sys.executable).with_name("privot")
    if not script.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "usage: privot" in proc.stdout
    for name in ("demo", "audit", "calibrate"):
        assert name in proc.stdout


def test_calibrate_table_lists_the_three_accountants(capsys, reference_sigmas):
    rc, out, err = _run(capsys, CALIBRATE)
    assert rc == 0, err
    for accountant, sigma in reference_sigmas.items():
        line = next(ln for ln in out.splitlines() if ln.startswith(accountant + " "))
        assert f"{sigma:.4f}" in line
    assert "upper bound" in out and "approximation" in out


def test_calibrate_json_matches_the_library(capsys, reference_sigmas):
    rc, out, _ = _run(capsys, [*CALIBRATE, "--json"])
    assert rc == 0
    payload = json.loads(out)
    got = {r["accountant"]: r for r in payload["results"]}
    assert set(got) == set(ACCOUNTANTS)
    for accountant, sigma in reference_sigmas.items():
        assert got[accountant]["noise_multiplier"] == pytest.approx(sigma, rel=1e-12)
        assert got[accountant]["epsilon"] <= 1.0 + 1e-9
    assert got["gdp-clt"]["is_upper_bound"] is False
    assert payload["relation"] == "add-remove"


def test_calibrate_one_accountant_fixed_size(capsys):
    rc, out, _ = _run(capsys, ["calibrate", "--epsilon", "2", "--delta", "1e-5", "--steps",
                               "50", "--sampling-rate", "0.1", "--sampling", "fixed-size",
                               "--accountant", "gdp-clt", "--json"])
    assert rc == 0
    payload = json.loads(out)
    assert [r["accountant"] for r in payload["results"]] == ["gdp-clt"]
    ref = calibrate_noise_multiplier(2.0, 1e-5, steps=50, sampling_rate=0.1,
                                     accountant="gdp-clt", sampling="fixed-size")
    assert payload["results"][0]["noise_multiplier"] == ref.noise_multiplier
    assert payload["relation"] == "replace-one"


def test_audit_of_laplace_is_consistent(capsys):
    rc, out, err = _run(capsys, ["audit", "--mechanism", "laplace", "--epsilon", "1",
                                 "--seed", "1"])
    assert rc == 0, out
    assert "consistent with the claim" in out
    assert "VIOLATED" not in out
    assert SEED_WARNING in err


def test_audit_of_broken_laplace_is_violated(capsys):
    rc, out, _ = _run(capsys, ["audit", "--mechanism", "laplace", "--epsilon", "1",
                               "--noise-factor", "0.3", "--seed", "2"])
    assert rc == 1
    assert "VIOLATED" in out
    assert "deliberately broken" in out


def test_audit_without_seed_uses_secure_noise(capsys):
    rc, out, err = _run(capsys, ["audit", "--mechanism", "laplace", "--runs", "20000",
                                 "--noise-factor", "0.3"])
    assert rc == 1 and "VIOLATED" in out
    assert "OS CSPRNG" in out
    assert err == ""


@pytest.mark.parametrize("mechanism,runs", [("gaussian", 50_000),
                                            ("discrete-laplace", 50_000),
                                            ("exponential", 2_000)])
def test_audit_other_mechanisms(capsys, mechanism, runs):
    base = ["audit", "--mechanism", mechanism, "--runs", str(runs), "--json"]
    rc, out, _ = _run(capsys, [*base, "--seed", "3"])
    assert rc == 0
    assert json.loads(out)["violated"] is False
    rc, out, _ = _run(capsys, [*base, "--seed", "4", "--noise-factor", "0.3"])
    payload = json.loads(out)
    assert rc == 1 and payload["violated"] is True
    assert payload["epsilon_lower"] > 1.0
    assert payload["calibrated_epsilon"] == pytest.approx(1.0 / 0.3)


@pytest.mark.parametrize("argv", [
    ["audit", "--mechanism", "laplace", "--epsilon", "-1"],
    ["audit", "--mechanism", "laplace", "--epsilon", "nan"],
    ["audit", "--mechanism", "gaussian", "--delta", "1.5"],
    ["audit", "--mechanism", "laplace", "--delta", "1.5"],
    ["audit", "--mechanism", "no-such-mechanism"],
    ["audit", "--mechanism", "laplace", "--epsilon", "abc"],
    ["audit", "--mechanism", "laplace", "--runs", "10"],
    ["audit", "--mechanism", "laplace", "--confidence", "1"],
    ["audit", "--mechanism", "laplace", "--noise-factor", "0"],
    ["audit", "--mechanism", "laplace", "--seed", "-3"],
    ["audit"],
    [*CALIBRATE[:2], "-1", *CALIBRATE[3:]],
    [*CALIBRATE[:2], "nan", *CALIBRATE[3:]],
    [*CALIBRATE[:4], "1.5", *CALIBRATE[5:]],
    [*CALIBRATE[:6], "0", *CALIBRATE[7:]],
    [*CALIBRATE[:8], "1.2"],
    [*CALIBRATE, "--accountant", "moments"],
    ["calibrate", "--epsilon", "1"],
    ["no-such-command"],
    [],
], ids=lambda argv: " ".join(argv) or "<empty>")
def test_bad_input_is_one_line_and_status_2(capsys, argv):
    rc, out, err = _run(capsys, argv)
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln != SEED_WARNING]
    assert len(lines) == 1, err
    assert "error" in lines[0]
    assert "Traceback" not in err
    assert out == ""
