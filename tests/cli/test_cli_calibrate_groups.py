"""``privot calibrate --group-sizes --batch-sizes``: fixed-size sampling per group.

Paper 004, Lemma 5.1: drawing ``b_j`` of the ``n_j`` records of each group without
replacement amplifies like fixed-size sampling at ``p = max_j b_j / n_j`` under
replace-one within a group; the accountants must see exactly that rate.
"""

from __future__ import annotations

import json

import pytest

from privot.cli.main import main
from privot.privacy.accounting import calibrate_noise_multiplier

BASE = ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "200"]


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_group_sampling_is_fixed_size_at_the_largest_fraction(capsys):
    rc, out, err = _run(capsys, [*BASE, "--group-sizes", "1000,400", "--batch-sizes",
                                 "100,80", "--accountant", "gdp-clt", "--json"])
    assert rc == 0, err
    payload = json.loads(out)
    assert payload["sampling_rate"] == pytest.approx(0.2)  # max(100/1000, 80/400)
    assert payload["sampling"] == "fixed-size"
    assert payload["group_sizes"] == [1000, 400] and payload["batch_sizes"] == [100, 80]
    assert "replace-one within a group" in payload["relation"]
    assert "public" in payload["note"]
    ref = calibrate_noise_multiplier(1.0, 1e-5, steps=200, sampling_rate=0.2,
                                     accountant="gdp-clt", sampling="fixed-size")
    assert payload["results"][0]["noise_multiplier"] == ref.noise_multiplier


def test_group_sampling_table_prints_p_relation_and_the_three_accountants(capsys):
    rc, out, err = _run(capsys, [*BASE, "--group-sizes", "500,500", "--batch-sizes",
                                 "100,50"])
    assert rc == 0, err
    assert "p = max b_j/n_j = 0.2" in out
    assert "replace-one within a group" in out and "group sizes are public" in out
    for accountant in ("pld", "rdp", "gdp-clt"):
        assert any(line.startswith(accountant + " ") for line in out.splitlines())


@pytest.mark.parametrize("extra,flag", [
    (["--group-sizes", "100,50"], "--batch-sizes"),  # missing
    (["--group-sizes", "100,50", "--batch-sizes", "10"], "--batch-sizes"),  # count
    (["--group-sizes", "100,50", "--batch-sizes", "10,60"], "--batch-sizes"),  # b > n
    (["--group-sizes", "100,50", "--batch-sizes", "0,5"], "--batch-sizes"),
    (["--group-sizes", "100,0", "--batch-sizes", "10,0"], "--group-sizes"),
    (["--group-sizes", "100,x", "--batch-sizes", "10,5"], "--group-sizes"),
    (["--group-sizes", "100,50", "--batch-sizes", "10,5", "--sampling", "poisson"],
     "--sampling"),
    (["--sampling-rate", "0.1", "--batch-sizes", "10,5"], "--batch-sizes"),
    (["--sampling-rate", "0.1", "--group-sizes", "100,50"], "--group-sizes"),
    ([], "--sampling-rate"),  # one of the two is required
])
def test_bad_group_sampling_is_one_line_and_exit_2(capsys, extra, flag):
    rc, out, err = _run(capsys, [*BASE, *extra])
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert flag in err


def test_sampling_rate_keeps_its_old_behaviour(capsys):
    rc, out, _ = _run(capsys, [*BASE, "--sampling-rate", "0.1", "--accountant", "gdp-clt",
                               "--json"])
    assert rc == 0
    payload = json.loads(out)
    assert payload["sampling"] == "poisson" and payload["relation"] == "add-remove"
    assert "group_sizes" not in payload
