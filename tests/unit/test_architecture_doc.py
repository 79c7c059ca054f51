"""docs/architecture.md's module map names every module of src/steward (so it stays true)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "steward"


def _module_map() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## Modules")
    return text[start : text.index("\n## ", start + 1)]


def test_every_module_is_in_the_module_map() -> None:
    section = _module_map()
    modules = sorted(
        path.relative_to(SOURCE)
        for path in SOURCE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )
    missing = [str(module) for module in modules if module.name not in section]
    assert not missing, f"add these to the module map of docs/architecture.md: {missing}"


def test_every_package_is_in_the_module_map() -> None:
    section = _module_map()
    packages = sorted(p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists())
    missing = [name for name in packages if f"{name}/" not in section]
    assert not missing, f"add these packages to docs/architecture.md: {missing}"
