"""Write pytest's cache of rewritten test modules once, before a run's workers start.

pytest rewrites the ``assert`` statements of every test module and conftest it imports (the
failure messages that show each value), and caches the result as a pyc beside the module
(``__pycache__/<name>.<tag>-pytest-<version>.pyc``, keyed by the source's hash). It writes that
cache only where ``sys.dont_write_bytecode`` is off, and this machine sets
``PYTHONDONTWRITEBYTECODE``: so each of a run's xdist workers (every one collects the whole
suite) rewrote all ~330 test modules itself, and the pytest plugins' (hypothesis, schemathesis,
anyio, xdist: pytest rewrites an installed plugin's whole package), 12 of its 21 s of collection
CPU, five times over at ``-n 5``. ``scripts/test.sh`` runs this first: the rewrite is done once,
on every core, and the workers read what it wrote (docs/performance.md, "Start-up cost").

It writes exactly what pytest's own import hook writes, with pytest's own functions (private
ones: ``_pytest.assertion.rewrite``). A pytest without them, or a file that fails to rewrite,
only means that the workers rewrite as before: this prints why and exits 0.

    python tests/assertion_cache.py [TESTS_DIR]
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import importlib.util
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# pytest's default ``python_files`` (pyproject.toml keeps it), and every conftest.
PATTERNS = ("test_*.py", "*_test.py", "conftest.py")


def rewritten_modules(root: Path) -> list[Path]:
    """The modules under ``root`` that pytest's import hook rewrites."""
    return sorted(
        path
        for path in root.rglob("*.py")
        if "__pycache__" not in path.parts
        and any(fnmatch.fnmatch(path.name, pattern) for pattern in PATTERNS)
    )


def plugin_modules() -> list[Path]:
    """The files of the packages pytest marks for rewriting as installed plugins (those of a
    distribution with a ``pytest11`` entry point), found without importing them."""
    from _pytest.config import _iter_rewritable_modules

    paths: list[Path] = []
    for dist in importlib.metadata.distributions():
        if not any(entry.group == "pytest11" for entry in dist.entry_points):
            continue
        for name in _iter_rewritable_modules([str(file) for file in dist.files or ()]):
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                continue
            origin = Path(spec.origin)
            if spec.submodule_search_locations:  # a package: pytest rewrites all of it
                paths += (p for p in origin.parent.rglob("*.py") if "__pycache__" not in p.parts)
            elif origin.suffix == ".py":
                paths.append(origin)
    return sorted(set(paths))


def write_one(path: Path) -> bool:
    """Rewrite ``path`` and write its cache, unless a valid one exists; True if written."""
    from _pytest.assertion.rewrite import (
        PYC_TAIL,
        _read_pyc,
        _rewrite_test,
        _write_pyc_fp,
        get_cache_dir,
    )

    cache_dir = get_cache_dir(path)
    pyc = cache_dir / (path.name[:-3] + PYC_TAIL)
    if _read_pyc(path, pyc) is not None:
        return False
    try:  # the pass hook is off unless the ini file enables it (it does not): None says so
        source_hash, code = _rewrite_test(path, None)  # type: ignore[arg-type]
    except (SyntaxError, ValueError, OSError):  # pytest will say so itself, if it imports it
        return False
    cache_dir.mkdir(exist_ok=True)
    partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
    with partial.open("wb") as out:
        _write_pyc_fp(out, source_hash, code)
    partial.replace(pyc)  # atomic: a reader sees no pyc or a whole one, as pytest does
    return True


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    started = time.monotonic()
    try:
        import _pytest.assertion.rewrite  # noqa: F401
    except ImportError as exc:
        print(f"[assertion cache] skipped: {exc}")
        return 0
    try:
        modules = rewritten_modules(root) + plugin_modules()
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            written = sum(pool.map(write_one, modules, chunksize=8))
    except Exception as exc:  # any failure leaves the rewrite to the workers
        print(f"[assertion cache] skipped ({type(exc).__name__}: {exc}); workers rewrite")
        return 0
    took = time.monotonic() - started
    print(f"[assertion cache] {written} of {len(modules)} modules rewritten in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
