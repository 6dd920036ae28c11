"""Build inputs of the documentation site (``make docs``; issue 29).

Run as a MkDocs hook (``mkdocs.yml``: ``hooks: [tools/docs_site.py]``) or by hand:

``python tools/docs_site.py cli``
    Write ``docs/reference/cli.md``: every ``privot`` command and subcommand's help,
    generated from the real argument parsers (so the reference cannot drift from them).
``python tools/docs_site.py tutorials``
    Run each tutorial's Python blocks in order, in one namespace, with
    ``docs/tutorials/`` as the working folder: the figures the pages show
    (``docs/tutorials/figures/*.png``) are the ones their code makes.

Both outputs are generated (git-ignored). The tests (tests/docs/) run the same code:
:func:`tutorial_blocks` and :func:`cli_reference`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = DOCS / "tutorials"
CLI_PAGE = DOCS / "reference" / "cli.md"
#: A tutorial's figures: ``![caption](figures/NAME.png)``.
FIGURE = re.compile(r"!\[[^\]]*\]\((figures/[A-Za-z0-9_.-]+\.png)\)")
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
#: Width of the outputs shown under the code blocks (longer lines are wrapped).
OUTPUT_WIDTH = 96


def tutorial_pages() -> list[Path]:
    """The pages whose code runs (the tutorials, in nav order, and "Choosing epsilon");
    each runs with its own folder as the working folder (figures in ``figures/``)."""
    return [*sorted(TUTORIALS.glob("*.md")), DOCS / "choosing-epsilon.md"]


def tutorial_blocks(page: Path) -> list[str]:
    """The ``python`` code blocks of ``page``, in order."""
    return _BLOCK.findall(page.read_text())


def referenced_figures(page: Path) -> list[str]:
    """The figure paths (relative to the page) that ``page`` shows."""
    return FIGURE.findall(page.read_text())


def run_block(block: str, namespace: dict, name: str) -> str:
    """Run one code block as a notebook cell: what it prints, then the ``repr`` of its
    last line when that is an expression (not None), as the reader would see it."""
    import ast
    import contextlib
    import io

    tree = ast.parse(block, name)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body = tree.body[:-1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tree, name, "exec"), namespace)  # noqa: S102 - the page's own code
        if last is not None:
            value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)  # noqa: S307
            if value is not None:
                print(repr(value))
    return out.getvalue()


def run_tutorial(page: Path, workdir: Path) -> list[str]:
    """Run ``page``'s blocks in one namespace with ``workdir`` as the working folder
    (figures land in ``workdir/figures/``); returns each block's output
    (:func:`run_block`)."""
    import matplotlib

    matplotlib.use("Agg")
    blocks = tutorial_blocks(page)
    (workdir / "figures").mkdir(parents=True, exist_ok=True)
    namespace: dict = {"__name__": "__tutorial__"}
    here = Path.cwd()
    os.chdir(workdir)
    try:
        return [run_block(block, namespace, f"{page.name} block {i}")
                for i, block in enumerate(blocks)]
    finally:
        os.chdir(here)
        import matplotlib.pyplot as plt

        plt.close("all")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    """The CLI reference page: each command's ``--help``, generated from the parsers."""
    from privot.cli.main import build_parser

    os.environ["COLUMNS"] = "90"  # argparse wraps help text to this width
    parser = build_parser()
    parts = ["# Command-line reference", "",
             "Generated from privot's argument parsers by `tools/docs_site.py` when the "
             "site is built: what `privot COMMAND --help` prints. Every releasing command "
             "exits with status 2 and one line on bad input, before anything is read or "
             "charged.", "", "```text", parser.format_help().rstrip(), "```", ""]

    def walk(prefix: str, sub: argparse.ArgumentParser, level: int) -> None:
        for name, child in _subcommands(sub).items():
            title = f"{prefix} {name}"
            parts.extend([f"{'#' * level} `{title}`", "", "```text",
                          child.format_help().rstrip(), "```", ""])
            walk(title, child, min(level + 1, 4))

    walk("privot", parser, 2)
    return "\n".join(parts)


def write_cli_page() -> Path:
    CLI_PAGE.parent.mkdir(parents=True, exist_ok=True)
    text = cli_reference()
    if not CLI_PAGE.exists() or CLI_PAGE.read_text() != text:
        CLI_PAGE.write_text(text)
    return CLI_PAGE


#: Each run page's block outputs, by page path relative to docs/ (set by the hook).
OUTPUTS: dict[str, list[str]] = {}


def run_tutorials() -> dict[str, list[str]]:
    """Run every page of :func:`tutorial_pages`; returns their block outputs."""
    outputs = {}
    for page in tutorial_pages():
        outputs[page.relative_to(DOCS).as_posix()] = run_tutorial(page, page.parent)
        missing = [f for f in referenced_figures(page) if not (page.parent / f).exists()]
        if missing:
            raise RuntimeError(f"{page.name} shows figures its code did not make: {missing}")
    return outputs


def with_outputs(markdown: str, outputs: list[str]) -> str:
    """``markdown`` with each python block followed by its output (a ``text`` block),
    where it printed or returned something."""
    blocks = iter(outputs)

    def add(match: re.Match) -> str:
        text = next(blocks, "").rstrip()
        if not text:
            return match.group(0)
        text = "\n".join(textwrap.fill(line, OUTPUT_WIDTH, subsequent_indent="    ",
                                        break_long_words=False) if line else line
                          for line in text.splitlines())
        return f"{match.group(0)}\n\n```text\n{text}\n```"

    return _BLOCK.sub(add, markdown)


# -- MkDocs hook ---------------------------------------------------------------------------

def on_pre_build(config: object, **kwargs: object) -> None:  # noqa: ARG001
    """Before MkDocs reads the pages: the CLI reference, then the runnable pages' code
    (their figures, and their outputs for :func:`on_page_markdown`)."""
    write_cli_page()
    OUTPUTS.clear()
    if os.environ.get("PRIVOT_DOCS_SKIP_TUTORIALS") != "1":
        OUTPUTS.update(run_tutorials())


#: A Sphinx cross-reference role left in a numpydoc docstring, as mkdocstrings renders it.
_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|exc|obj|const|math):"
                   r"<code>(~?)([^<]*)</code>")


def strip_roles(html: str) -> str:
    """``:func:`~a.b.c``` (rendered ``:func:<code>~a.b.c</code>``) as the reader should
    see it: ``<code>c</code>`` (Sphinx's ``~``: the last component), else the name."""
    def plain(m: re.Match) -> str:
        name = m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)
        return f"<code>{name}</code>"

    return _ROLE.sub(plain, html)


def on_page_content(html: str, **kwargs: object) -> str:  # noqa: ARG001
    """The API pages: docstrings' Sphinx roles shown as plain code names."""
    return strip_roles(html)


def on_page_markdown(markdown: str, page: object, **kwargs: object) -> str:  # noqa: ARG001
    """A runnable page shows what each of its blocks printed, as it ran for this build."""
    outputs = OUTPUTS.get(page.file.src_uri)  # type: ignore[attr-defined]
    return markdown if outputs is None else with_outputs(markdown, outputs)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("cli", "tutorials"))
    args = p.parse_args(argv)
    if args.what == "cli":
        print(write_cli_page())
    else:
        run_tutorials()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main(sys.argv[1:]))
