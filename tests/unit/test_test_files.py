"""pytest imports test files by their base name (no __init__.py in tests/): two files of one name in different
folders fail the whole run's collection ("import file mismatch"), whichever lane collects both."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)
    assert names, "no test files found"
    assert [n for n, c in names.items() if c > 1] == []
