"""The documentation site (issue 29): what ``make docs`` builds is checked here without
building it (CI runs ``make docs`` itself, warnings as errors).

* every tutorial (and "Choosing epsilon") runs as written, in order, in one namespace, and
  the figures it shows are exactly the ones its code makes;
* every ``privot ...`` command line on the pages parses with the real parser, and every
  input file it reads is written by a command the page names;
* the CLI reference is generated from the parsers and covers every subcommand;
* the API reference covers every public module, and every page is in the nav.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import docs_site  # noqa: E402

PAGES = docs_site.tutorial_pages()


def test_there_is_one_tutorial_per_capability():
    names = [p.name for p in PAGES]
    for capability in ("heatmaps", "barycenters", "sampling", "learning"):
        assert any(capability in n for n in names), capability
    assert "choosing-epsilon.md" in names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_runs_and_shows_the_figures_it_makes(page, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    outputs = docs_site.run_tutorial(page, tmp_path)
    assert len(outputs) == len(docs_site.tutorial_blocks(page)) >= 2
    made = sorted(f"figures/{p.name}" for p in (tmp_path / "figures").glob("*.png"))
    assert made, f"{page.name} makes no figure"
    assert sorted(docs_site.referenced_figures(page)) == made


def test_outputs_are_shown_after_their_blocks():
    markdown = "intro\n```python\nprint(1)\n```\ntext\n```python\nx = 1\n```\n"
    shown = docs_site.with_outputs(markdown, ["1\n", ""])
    assert "```python\nprint(1)\n```\n\n```text\n1\n```" in shown
    assert shown.count("```text") == 1  # a block that prints nothing gets no output


def test_sphinx_roles_read_as_code_names():
    html = (":mod:<code>~privot.heatmaps.pyramid</code> and :func:<code>private_heatmap</code>"
            " and :py:class:<code>privot.grid.Grid</code>")
    assert docs_site.strip_roles(html) == ("<code>pyramid</code> and <code>private_heatmap"
                                           "</code> and <code>privot.grid.Grid</code>")


def test_long_outputs_are_wrapped():
    shown = docs_site.with_outputs("```python\nx\n```", ["word " * 40])
    assert max(len(line) for line in shown.splitlines()) <= docs_site.OUTPUT_WIDTH


def _commands(page: Path) -> list[str]:
    """The full command lines of ``page``: its ``bash`` blocks' ``privot`` lines and its
    inline ``privot ... --flag`` spans (continuations joined)."""
    text = re.sub(r"\\\n\s*", " ", page.read_text())
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    inline = [c for c in re.findall(r"`(privot [^`]+)`", text) if " --" in c]
    lines = [ln.strip() for b in blocks for ln in b.splitlines()]
    return [ln for ln in [*lines, *inline] if ln.startswith("privot ")]


ALL_PAGES = sorted((ROOT / "docs").rglob("*.md"))
#: The site's own pages (the notes and proofs under docs/ show usage templates).
SITE_PAGES = [*PAGES, ROOT / "docs" / "index.md", ROOT / "docs" / "what-is-public.md"]


@pytest.mark.parametrize("page", [p for p in SITE_PAGES if _commands(p)],
                         ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_command_lines_on_the_pages_parse(page):
    from privot.cli.main import build_parser

    for line in _commands(page):
        argv = shlex.split(line)[1:]
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:  # pragma: no cover - the message names the line
            pytest.fail(f"{page.name}: {line!r} does not parse (exit {exc.code})")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_input_file_is_written_by_a_named_command(page):
    from privot.cli.main import build_parser

    text = page.read_text()
    for line in _commands(page):
        args = build_parser().parse_args(shlex.split(line)[1:])
        source = getattr(args, "input", None)
        if source is None or args.command == "example-data":
            continue
        assert f"writes `{source}`" in text, f"{page.name}: where does {source} come from?"


def _subcommand_titles(parser, prefix="privot"):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{prefix} {name}"
                yield from _subcommand_titles(child, f"{prefix} {name}")


def test_cli_reference_covers_every_command_from_the_parsers():
    from privot.cli.main import build_parser

    text = docs_site.cli_reference()
    titles = list(_subcommand_titles(build_parser()))
    assert len(titles) >= 15
    for title in titles:
        assert f"`{title}`" in text, title
    assert "--target-error" in text and "--tessellation" in text  # the parsers' own help


def test_api_reference_covers_the_public_modules_and_nav_every_page():
    import yaml

    from packaging_public import PUBLIC_MODULES  # tests/packaging's list, one place

    api = {m.group(1) for p in (ROOT / "docs" / "reference" / "api").glob("*.md")
           for m in re.finditer(r"^::: ([\w.]+)$", p.read_text(), re.M)}
    assert set(PUBLIC_MODULES) <= api, set(PUBLIC_MODULES) - api

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for v in node.values():
                yield from pages(v)
        elif isinstance(node, list):
            for v in node:
                yield from pages(v)

    nav = set(pages(config["nav"]))
    excluded = {"tutorials/storm-heatmap"}
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in ALL_PAGES
               if not any(p.relative_to(ROOT / "docs").as_posix().startswith(e)
                          for e in excluded)}
    on_disk.add("reference/cli.md")  # generated at build time
    assert on_disk == nav, (on_disk - nav, nav - on_disk)
