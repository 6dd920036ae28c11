"""Every import points down: ``engines/`` knows no capability, the capabilities own
their steps (issue 9, item 3). Checked on the source (AST), lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import privot

SRC = Path(privot.__file__).resolve().parent
CAPABILITIES = ("privot.heatmaps", "privot.barycenters", "privot.sampling", "privot.learning")


def _imports(package: str) -> dict[str, set[str]]:
    out = {}
    for path in sorted((SRC / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        out[str(path.relative_to(SRC))] = names
    return out


def _offending(package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for module, names in _imports(package).items():
        hits = sorted(n for n in names if n.startswith(forbidden))
        if hits:
            bad[module] = hits
    return bad


def test_engines_import_no_capability_and_no_cli():
    assert _offending("engines", (*CAPABILITIES, "privot.cli", "privot.demo")) == {}


def test_leaves_do_not_import_the_engines():
    for leaf in ("privacy", "ot"):
        assert _offending(leaf, ("privot.engines",)) == {}


def test_each_capability_owns_its_step():
    for capability in ("heatmaps", "barycenters", "sampling"):
        assert "privot.engines" in _imports(capability)[f"{capability}/engine_step.py"]


def test_no_capability_imports_another():
    """Shared pieces (the grid, the rule for unusable rows) live below the capabilities
    (``privot.grid``, ``privot._usable``)."""
    for capability in CAPABILITIES:
        others = tuple(c for c in CAPABILITIES if c != capability)
        assert _offending(capability.removeprefix("privot."), others) == {}, capability
