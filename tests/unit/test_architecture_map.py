"""docs/architecture.md cannot drift from the tree: it lists every file under plugins/ and lab/ with one line each
(a file added without its line, or a line left for a file that is gone, fails), and no file there outgrows its room
(plugins/: 400 lines of code, lab/: 600; docstrings, comments and a module's DOCUMENTATION, EXAMPLES and RETURN
are not code)."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAP = REPO / "docs" / "architecture.md"
ROOMS = {"plugins": 400, "lab": 600}
ENTRY = re.compile(r"^- `((?:plugins|lab)/[^`]+)`: \S")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", *ROOMS], cwd=REPO, capture_output=True, text=True, check=True).stdout
    files = {f for f in out.splitlines() if (REPO / f).is_file()}
    # files not committed yet but in the tree (a new file is mapped before its commit)
    extra = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", *ROOMS], cwd=REPO, capture_output=True, text=True
    ).stdout
    return sorted(files | set(extra.splitlines()))


def listed() -> list[str]:
    return [m.group(1) for line in MAP.read_text().splitlines() if (m := ENTRY.match(line))]


def test_every_file_has_its_line_and_every_line_its_file():
    files, lines = tracked(), listed()
    assert files, "no files found"
    assert sorted(set(files) - set(lines)) == [], "files missing from docs/architecture.md"
    assert sorted(set(lines) - set(files)) == [], "docs/architecture.md lists files that are gone"
    assert len(lines) == len(set(lines)), "a file listed twice"


def code_lines(text: str) -> int:
    """Lines holding code: not blank, not only a comment, not in a docstring or a module's documentation."""
    tree = ast.parse(text)
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            v = body[0].value
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                skip.update(range(body[0].lineno, body[0].end_lineno + 1))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("DOCUMENTATION", "EXAMPLES", "RETURN") for t in node.targets
        ):
            skip.update(range(node.lineno, node.end_lineno + 1))
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.ENDMARKER:
            continue
        code.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in skip)
    return len(code)


def test_code_lines_are_counted_without_docs_and_comments():
    text = (
        '"""Doc.\n\nMore."""\n\n# a comment\nDOCUMENTATION = """\nx: 1\n"""\n\n\n'
        'def f():\n    """Doc."""\n    return 1\n'
    )
    assert code_lines(text) == 2


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_no_file_outgrows_its_room(room):
    big = {}
    for f in tracked():
        if f.startswith(room + "/") and f.endswith(".py"):
            n = code_lines((REPO / f).read_text())
            if n > ROOMS[room]:
                big[f] = n
    assert big == {}, f"over {ROOMS[room]} lines of code"
