"""Every code block of the README runs as written (issue 12: "Every code block in the
README runs in the test suite").

* ``python`` blocks are executed, each in a fresh namespace and an empty working folder.
* ``privot ...`` command lines of the ``bash``/``console`` blocks are parsed by the real
  argument parser (running them needs their input files), so a renamed or removed flag
  fails here; ``make`` lines are left to CI itself.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
SHELL_BLOCKS = re.findall(r"```(bash|console)\n(.*?)```", TEXT, re.S)


def _commands() -> list[str]:
    """The ``privot`` command lines of the shell blocks (continuations joined, prompts,
    comments and outputs dropped)."""
    out = []
    for kind, block in SHELL_BLOCKS:
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if kind == "console":  # a session: commands after the prompt, the rest output
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line.startswith("privot ") and not line.startswith("privot budget:"):
                out.append(line.split("  #")[0].strip())
    return out


COMMANDS = _commands()


def test_the_readme_has_examples_to_check():
    assert len(PYTHON_BLOCKS) >= 5 and len(COMMANDS) >= 10


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_python_block_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    from privot.datasets import DataNotFoundError

    code = compile(PYTHON_BLOCKS[index], f"README.md python block {index}", "exec")
    try:
        exec(code, {"__name__": "__readme__"})  # noqa: S102 - the README's own code
    except DataNotFoundError as exc:  # the shared data (Gowalla) is not on every machine
        pytest.skip(f"README block {index} needs the shared data: {exc}")


@pytest.mark.parametrize("line", COMMANDS)
def test_command_line_parses(line):
    from privot.cli.main import build_parser

    argv = shlex.split(line)[1:]
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on an unknown flag or a bad choice
        if exc.code == 0:  # --help, --version
            return
        pytest.fail(f"README command does not parse ({exc.code}): {line}")
