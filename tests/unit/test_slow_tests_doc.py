"""docs/architecture.md's table of slow tests names every module that has one (so it stays true)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLOW = re.compile(r"pytest\.mark\.slow\b")


def _slow_table() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## Tests")
    return text[start : text.index("\n## ", start + 1)]


def test_every_module_with_a_slow_test_is_in_the_table() -> None:
    table = _slow_table()
    modules = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if SLOW.search(path.read_text(encoding="utf-8"))
    )
    assert modules, "no slow test found: the pattern no longer matches the marker"
    missing = [module for module in modules if module not in table]
    assert not missing, f"say why these are slow in docs/architecture.md's ## Tests: {missing}"


def test_the_table_names_only_files_that_exist() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)`", _slow_table())
    assert named
    gone = [name for name in named if not (ROOT / name).exists()]
    assert not gone, f"docs/architecture.md's ## Tests names files that are gone: {gone}"
