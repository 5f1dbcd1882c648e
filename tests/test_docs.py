"""The docs are the house behind the README's door: every command they show must be one the code accepts.

Each ``archstudy ...`` line of a bash block in the README and in docs/*.md is parsed by the real command line
(nothing runs); each Python block compiles (the README's tour block runs in tests/test_readme.py); the README
stays at most 15 KB and links every page; the public API page lists exactly ``archstudy.__all__``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import archstudy
from archstudy.study.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))
TEXTS = [ROOT / "README.md", *PAGES]


def blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def archstudy_commands(block: str) -> list[str]:
    """The ``archstudy ...`` commands of a bash block: continuation lines joined, comments and prompts cut,
    each command of a ``&&`` chain apart."""
    text = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        for part in line.split("&&"):
            part = part.strip()
            if part.startswith("archstudy ") or part == "archstudy":
                out.append(part.split(" #", 1)[0].strip())
    return out


COMMANDS = [
    (path.relative_to(ROOT).as_posix(), cmd)
    for path in TEXTS
    for b in blocks(path, "bash")
    for cmd in archstudy_commands(b)
]


def test_the_docs_show_commands():
    assert len(COMMANDS) >= 30 and {p for p, _ in COMMANDS} >= {"README.md", "docs/running.md", "docs/cluster.md"}


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in COMMANDS])
def test_every_archstudy_command_in_the_docs_parses(page, command):
    argv = shlex.split(command)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse's error exit: the command shown is not one the code takes
        pytest.fail(f"{page}: `{command}` does not parse (exit {e.code})")
    assert callable(args.func)


PYTHON = [(path.relative_to(ROOT).as_posix(), i, b) for path in TEXTS for i, b in enumerate(blocks(path, "python"))]


@pytest.mark.parametrize("page, index, block", PYTHON, ids=[f"{p}#{i}" for p, i, _ in PYTHON])
def test_every_python_block_compiles(page, index, block):
    compile(block, f"{page} block {index}", "exec")


def test_the_readme_is_a_door_not_a_house():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 15_000
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme))
    assert linked == {p.relative_to(ROOT).as_posix() for p in PAGES}


def test_every_page_reference_names_a_page():
    for path in TEXTS:
        for ref in re.findall(r"\bdocs/([\w-]+\.md)", path.read_text(encoding="utf-8")):
            assert (ROOT / "docs" / ref).is_file(), f"{path.name} names docs/{ref}"


def test_the_api_page_lists_the_public_api():
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    listed = {name for cell in rows for name in re.findall(r"`(\w+)`", cell)}
    assert listed == set(archstudy.__all__)
