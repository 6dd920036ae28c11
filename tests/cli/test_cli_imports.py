"""Parsing the command line imports only what parsing needs (issue 9: a fast ``--help``).

Not a timing test: a fresh interpreter builds the parser, parses ``--help`` of the
command and of every subcommand, and a few argument errors, and then lists the heavy
modules it imported. Each subcommand imports its dependencies inside its handler.

The CLI repeats a few of the library's choices and defaults as literals (the library
modules that define them import scipy); the second half of this file checks that the
literals still equal the library's values.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import subprocess
import sys

import pytest

from privot.cli.main import SUBCOMMANDS, build_parser

#: Top-level packages that parsing must not import.
HEAVY_PACKAGES = {"numpy", "scipy", "pandas", "matplotlib", "pyarrow", "pyspark", "duckdb",
                  "torch", "ot", "dp_accounting", "tqdm"}
#: privot modules that parsing must not import.
HEAVY_PRIVOT = {"privot.privacy", "privot.heatmaps", "privot.barycenters", "privot.engines",
                "privot.ot", "privot.datasets", "privot.demo", "privot._validation",
                "privot._jsonable", "privot.sampling", "privot.grid"}

_SCRIPT = r"""
import json, sys
from privot.cli.main import SUBCOMMANDS, build_parser, main

argvs = [["--help"], ["--version"], [], ["no-such-command"]]
for name in SUBCOMMANDS:
    command = name.rsplit(".", 1)[1].replace("_", "-")
    argvs += [[command, "--help"], [command], [command, "--no-such-flag"]]
argvs += [["calibrate", "--epsilon", "x", "--delta", "1e-5", "--steps", "1",
           "--sampling-rate", "0.1"],
          ["audit", "--mechanism", "nope"],
          ["heatmap", "in.csv", "--epsilon", "1", "--bounds", "0", "1", "0"],
          # issue 25: the renamed flags, their refused old spellings, --progress/--quiet
          ["heatmap", "in.csv", "--epsilon", "1", "--bounds", "0", "1", "0", "1",
           "--method", "pyramid", "--baseline", "none"],
          ["learn", "in.csv", "--target", "t", "--sensitive", "s", "--sensitive-values",
           "a,b", "--epsilon", "1", "--penalty", "sp", "--criterion", "eo"],
          ["sample", "in.csv", "--epsilon", "1", "--bounds", "0", "1", "0", "1",
           "--progress", "--quiet"]]
codes = []
for argv in argvs:
    parser = build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        codes.append(exc.code)
        codes.append(main(argv))  # the same through main(): no handler runs
    else:
        codes.append(None)  # parsed (``demo`` needs no argument): nothing is run

heavy = set(json.loads(sys.argv[1]))
privot_heavy = tuple(json.loads(sys.argv[2]))
loaded = sorted(m for m in sys.modules
                if m.split(".")[0] in heavy or m.startswith(privot_heavy))
print(json.dumps({"loaded": loaded, "codes": codes}))
"""


def test_parsing_imports_no_heavy_module():
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(sorted(HEAVY_PACKAGES)),
         json.dumps(sorted(HEAVY_PRIVOT))],
        capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    # every argv above ends in --help/--version (0) or an argument error (2)
    assert set(result["codes"]) <= {0, 2, None}
    assert 2 in result["codes"] and 0 in result["codes"]


# -- the literals the parser repeats, checked against the library ----------------------

def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[command]


def _option(command: str, dest: str) -> argparse.Action:
    return next(a for a in _subparser(command)._actions if a.dest == dest)


def test_every_subcommand_is_registered():
    assert {name.rsplit(".", 1)[1] for name in SUBCOMMANDS} == {
        "demo", "audit", "calibrate", "heatmap", "barycenter", "sample", "learn", "budget",
        "repair", "plan", "example_data"}


def test_calibrate_choices_are_the_accounting_modules():
    from privot.cli import calibrate
    from privot.privacy import accounting

    assert calibrate.ACCOUNTANTS == accounting.ACCOUNTANTS
    assert calibrate.SAMPLINGS == accounting.SAMPLINGS
    assert tuple(_option("calibrate", "accountant").choices) == (*accounting.ACCOUNTANTS,
                                                                "all")
    assert tuple(_option("calibrate", "sampling").choices) == accounting.SAMPLINGS


def test_heatmap_choices_and_defaults_are_the_librarys():
    from privot.cli import heatmap

    # importlib: the package re-exports functions under some of these module names
    api = importlib.import_module("privot.heatmaps.api")
    grid = importlib.import_module("privot.grid")
    measure = importlib.import_module("privot.heatmaps.measure")

    assert set(heatmap._METHODS.values()) == set(api.METHODS)
    assert heatmap._METHODS["none"] == "pyramid"
    assert _option("heatmap", "w").default == measure.DEFAULT_W
    assert _option("heatmap", "gamma").default == pytest.approx(measure.DEFAULT_GAMMA,
                                                               rel=1e-15)
    assert _option("heatmap", "sigma").default == api.DEFAULT_SIGMA
    assert tuple(_option("heatmap", "aspect").choices) == grid.ASPECTS
    # issue 25: one column rule, the library's defaults are the CLI's
    assert tuple(_option("heatmap", "columns").default) == (grid.DEFAULT_X_COLUMN,
                                                             grid.DEFAULT_Y_COLUMN)
    assert _option("heatmap", "user_column").default == grid.DEFAULT_USER_COLUMN
    # issue 25: --method is private_heatmap's parameter, its choices the library's
    assert heatmap.METHODS == api.METHODS
    assert tuple(_option("heatmap", "method").choices) == api.METHODS
    assert _option("heatmap", "method").default == api.METHODS[0] == "pyramid"
    params = importlib.import_module("privot.heatmaps.params")
    assert inspect.signature(params.HeatmapParams).parameters["method"].default == (
        _option("heatmap", "method").default)


def test_aspect_literals_and_default_are_the_librarys():
    """Issue 25: one --aspect default (the library Grid's) on every grid command."""
    from privot.cli import _common

    grid = importlib.import_module("privot.grid")
    assert _common.ASPECTS == grid.ASPECTS
    assert _common.DEFAULT_ASPECT == inspect.signature(grid.Grid).parameters[
        "aspect"].default
    for command in ("heatmap", "sample"):
        assert tuple(_option(command, "aspect").choices) == grid.ASPECTS
        assert _option(command, "aspect").default == _common.DEFAULT_ASPECT


def test_cli_flags_are_the_library_parameter_names():
    """Issue 25: learn's --penalty and --steps are make_private's parameters (fields of
    its parameter object, LearningParams); the library calls' progress= switches exist
    where the commands thread them."""
    private = importlib.import_module("privot.learning.private")
    bary = importlib.import_module("privot.barycenters.api")
    population = importlib.import_module("privot.sampling.population")
    heatmaps = importlib.import_module("privot.heatmaps.api")

    params = importlib.import_module("privot.learning.params").LearningParams.field_names()
    assert "penalty" in params and "steps" in params
    assert tuple(_option("learn", "criterion").choices) == tuple(
        importlib.import_module("privot.learning.groups").CRITERIA)
    assert "--penalty" in _option("learn", "criterion").option_strings
    assert "--steps" in _option("learn", "steps").option_strings
    for fn in (heatmaps.private_heatmap, bary.private_barycenter,
               population.sample_population, private.PrivateWassersteinTrainer.train):
        assert inspect.signature(fn).parameters["progress"].default is None


def test_barycenter_choices_and_defaults_are_the_librarys():
    api = importlib.import_module("privot.barycenters.api")
    coresets = importlib.import_module("privot.barycenters.coresets")
    perturbation = importlib.import_module("privot.barycenters.perturbation")

    assert tuple(_option("barycenter", "method").choices) == api.METHODS
    assert tuple(_option("barycenter", "calibration").choices) == perturbation.CALIBRATIONS
    assert set(_option("barycenter", "placement").choices) == set(coresets.PLACEMENTS)
    assert _option("barycenter", "iterations").default == api.DEFAULT_ITERATIONS
    # the Lloyd step's options: the CLI repeats the library's constants (lazy imports)
    lloyd = importlib.import_module("privot.barycenters.lloyd_perturbation")
    from privot.cli import barycenter

    assert tuple(_option("barycenter", "step").choices) == api.PERTURBATION_STEPS
    assert barycenter.PERTURBATION_STEPS[0] == "lloyd"
    assert barycenter.DEFAULT_BALANCING_ROUNDS == lloyd.DEFAULT_BALANCING_ROUNDS
    assert barycenter.DEFAULT_PROXY_SIZE == lloyd.DEFAULT_PROXY_SIZE
    assert barycenter.MAX_PROXY_SIZE == api.DEFAULT_MAX_PLACED
    assert barycenter.DEFAULT_CALIBRATION == "analytic"



def test_sample_choices_and_defaults_are_the_librarys():
    from privot.cli import sample

    mechanism = importlib.import_module("privot.sampling.mechanism")
    population = importlib.import_module("privot.sampling.population")

    assert tuple(_option("sample", "mechanism").choices) == mechanism.MECHANISMS
    assert tuple(_option("sample", "base_measure").choices) == mechanism.BASE_MEASURES
    assert tuple(_option("sample", "variant").choices) == population.VARIANTS
    assert sample._MECHANISMS == mechanism.MECHANISMS
