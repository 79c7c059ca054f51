"""docs/architecture.md's module map names every module of src/steward under its own package
(so it stays true)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "steward"
MAX_TREE_INDENT = 12
"""Deeper than this, a line continues the one above (its words are not the tree's)."""
_MODULE = re.compile(r"(?<![\w/.])(\w+\.py)\b")


def _module_map() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## Modules")
    return text[start : text.index("\n## ", start + 1)]


def _mapped_modules() -> set[str]:
    """The modules the map's tree names, as paths below src/steward/: a name counts under the
    package whose line it follows (a package is a name ending in ``/``, indented by its depth;
    a line may name several modules, its continuation lines too)."""
    lines = _module_map().split("\n")
    packages: list[tuple[int, str]] = [(-1, "")]
    named: set[str] = set()
    for line in lines[lines.index("src/steward/") + 1 :]:
        if line.startswith("```"):
            break
        first = re.match(r"( *)(\S+)", line)
        if first is None:
            continue
        indent, word = len(first[1]), first[2]
        if word.endswith(("/", ".py")) and indent <= MAX_TREE_INDENT:
            while packages[-1][0] >= indent:
                packages.pop()
            if word.endswith("/"):
                packages.append((indent, packages[-1][1] + word))
        named |= {packages[-1][1] + name for name in _MODULE.findall(line)}
    return named


def test_every_module_is_in_the_module_map_under_its_package() -> None:
    mapped = _mapped_modules()
    modules = sorted(
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )
    missing = [module for module in modules if module not in mapped]
    assert not missing, f"add these to the module map of docs/architecture.md: {missing}"


def test_every_package_is_in_the_module_map() -> None:
    section = _module_map()
    packages = sorted(p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists())
    missing = [name for name in packages if f"{name}/" not in section]
    assert not missing, f"add these packages to docs/architecture.md: {missing}"
