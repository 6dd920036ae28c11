"""``py.typed`` backed by checks (issue 29): every public callable is annotated, and
mypy accepts code written against the public API the way the docs show it.

Public API: the ``__all__`` of the modules in :data:`PUBLIC_MODULES`. The mypy check runs
on ``typed_usage.py`` with ``--follow-imports=silent`` (privot's own modules are read for
their annotations; errors are reported in the usage file only), and the same file is run,
so that what mypy accepts also works.
"""

from __future__ import annotations

import importlib
import inspect
import runpy
import subprocess
import sys
from pathlib import Path

from packaging_public import PUBLIC_MODULES  # tests/packaging_public.py: one list

HERE = Path(__file__).resolve().parent


def _public_callables():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module_name}.{name}", obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if (inspect.isfunction(member) and member.__module__.startswith("privot")
                            and (not attr.startswith("_") or attr == "__init__")):
                        yield f"{module_name}.{name}.{attr}", member


def test_every_public_callable_is_annotated():
    missing = {}
    seen = 0
    for label, func in _public_callables():
        seen += 1
        sig = inspect.signature(func)
        gaps = [p.name for p in sig.parameters.values()
                if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
        if func.__name__ != "__init__" and sig.return_annotation is inspect.Signature.empty:
            gaps.append("return")
        if gaps:
            missing[label] = gaps
    assert seen > 300  # the walk found the API (a broken __all__ would find nothing)
    assert not missing, missing


def test_mypy_accepts_the_documented_usage():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                           "--ignore-missing-imports", "--cache-dir=/dev/null",
                           str(HERE / "typed_usage.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_rejects_a_wrong_use():
    # the check can fail: a result assigned to the wrong type is reported
    body = ("from privot.grid import Grid\nfrom privot.heatmaps import HeatmapParams, "
            "heatmap_error\nbound: str = heatmap_error(HeatmapParams(grid=Grid((0.0, 1.0, "
            "0.0, 1.0), 8), epsilon=1.0)).bound\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent",
                           "--ignore-missing-imports", "--cache-dir=/dev/null", "-c", body],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "[assignment]" in proc.stdout, proc.stdout + proc.stderr


def test_the_documented_usage_runs():
    runpy.run_path(str(HERE / "typed_usage.py"))
