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


# -- the rules docs/ARCHITECTURE.md states (issue 25) -----------------------------------


def _module_name(path: Path) -> str:
    parts = ("privot", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _import_graph() -> dict[str, set[str]]:
    """Module -> privot modules it imports, lazy (function-local) imports included."""
    modules = _all_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        group.append(top)
                        if top == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return groups


def test_no_import_cycles_lazy_imports_included():
    assert _cycles(_import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_imported_across_packages():
    """``from privot.ot._exact import _cost`` in barycenters is refused; the shared
    top-level modules (``privot._validation``, ``privot._result``...) are the library's
    own internals, shared on purpose."""
    bad = []
    for name, path in _all_modules().items():
        own = name.split(".")[1] if "." in name else ""
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.startswith("privot.")):
                continue
            target = node.module.split(".")
            if target[1].startswith("_") or target[1] == own:
                continue
            for alias in node.names:
                if any(p.startswith("_") and not p.startswith("__")
                       for p in [*target[2:], alias.name]):
                    bad.append(f"{name}: from {node.module} import {alias.name}")
    assert bad == [], "\n".join(bad)


MAX_CODE_LINES = 100
MAX_PARAMETERS = 20


def _code_lines(node: ast.AST, lines: list[str]) -> int:
    body = node.body
    doc = set()
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        doc = set(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for i in range(node.lineno, node.end_lineno + 1)
               if i not in doc and lines[i - 1].strip()
               and not lines[i - 1].strip().startswith("#"))


def _n_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    n = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
         + (a.kwarg is not None))
    return n - (1 if a.args and a.args[0].arg in ("self", "cls") else 0)


def _dataclass_fields(node: ast.ClassDef) -> int | None:
    decorated = any((isinstance(d, ast.Name) and d.id == "dataclass")
                    or (isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dataclass")
                    for d in node.decorator_list)
    if not decorated:
        return None
    return sum(1 for s in node.body if isinstance(s, ast.AnnAssign)
               and "ClassVar" not in ast.unparse(s.annotation))


def test_no_function_over_100_code_lines_or_20_parameters():
    """Entry points dispatch on frozen parameter objects (``privot._params``); a
    dataclass's generated ``__init__`` counts as a function of its fields."""
    bad = []
    for name, path in _all_modules().items():
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size, params = _code_lines(node, lines), _n_parameters(node)
                if size > MAX_CODE_LINES or params > MAX_PARAMETERS:
                    bad.append(f"{name}.{node.name}: {size} lines, {params} parameters")
            elif isinstance(node, ast.ClassDef):
                fields = _dataclass_fields(node)
                if fields is not None and fields > MAX_PARAMETERS:
                    bad.append(f"{name}.{node.name}: a dataclass of {fields} fields")
    assert bad == [], "\n".join(bad)


#: What code outside ``privot.privacy`` may take from ``privot.privacy.noise``: the rng
#: rule and the entropy interface (exact samplers built on BitSource, such as the device
#: WPM sampler, read bits through it), and the release grid's exponent (a calibration).
NOISE_INTERFACE = {"BitSource", "RNG_RULE", "check_rng", "resolve_rng", "exp_neg_bounds",
                   "grid_exponent"}


def test_releases_draw_noise_through_privacy_mechanisms():
    """No sampler of ``privacy.noise`` is called outside ``privacy/``: every release
    draws through ``privacy.mechanisms`` (one noise layer)."""
    bad = []
    for name, path in _all_modules().items():
        if name.startswith("privot.privacy"):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "privot.privacy.noise":
                bad += [f"{name}: imports {a.name}" for a in node.names
                        if a.name not in NOISE_INTERFACE]
            elif isinstance(node, ast.ImportFrom) and node.module == "privot.privacy":
                bad += [f"{name}: imports the noise module" for a in node.names
                        if a.name == "noise"]
    assert bad == [], "\n".join(bad)


def test_release_paths_do_not_import_the_evaluation_namespace():
    """``privot.evaluation`` reads the exact data: only the CLI, the demo and the old
    import paths kept as re-exports (a capability's ``__init__.py``, ``metrics.py``,
    ``evaluation.py``) and the curator's figures (``plot.py``) use it."""
    shims = {"__init__.py", "metrics.py", "evaluation.py", "plot.py"}
    for capability in ("heatmaps", "barycenters", "sampling", "learning"):
        for module, names in _imports(capability).items():
            if Path(module).name in shims:
                continue
            assert not any(n.startswith("privot.evaluation") for n in names), module


ARCHITECTURE = SRC.parents[1] / "docs" / "ARCHITECTURE.md"


def _audit_table() -> list[tuple[str, str]]:
    text = ARCHITECTURE.read_text()
    section = text[text.index("## Mechanisms and their audits"):]
    section = section[: section.index("\n## ", 4)]
    rows = []
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("privot."):
            rows.append((cells[0], cells[1]))
    return rows


def test_every_mechanism_in_the_audit_table_has_its_audit():
    """docs/ARCHITECTURE.md's table: the mechanism exists, its test file runs audit()
    on it."""
    import importlib

    rows = _audit_table()
    assert len(rows) >= 17
    for dotted, test_file in rows:
        module, _, name = dotted.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), dotted
        text = (SRC.parents[1] / test_file).read_text()
        assert "audit(" in text and name in text, (dotted, test_file)
