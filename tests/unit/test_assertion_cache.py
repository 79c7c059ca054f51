"""The assertion cache (tests/assertion_cache.py): what it writes, pytest reads, with the same
rewritten assertions its own import hook would have made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assertion_cache import rewritten_modules, write_one

FAILING = "def test_sum():\n    total = 1 + 1\n    assert total == 3\n"


def _pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DEBUG": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-p",
         "no:cacheprovider", "-m", "", "-c", os.devnull, "--rootdir", str(folder), str(folder)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_a_worker_reads_the_cached_rewrite_and_still_explains_a_failure(tmp_path: Path) -> None:
    (tmp_path / "test_sum.py").write_text(FAILING)
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "helper.py").write_text("")  # not a test module: pytest does not rewrite it
    assert [p.name for p in rewritten_modules(tmp_path)] == ["conftest.py", "test_sum.py"]
    assert [write_one(p) for p in rewritten_modules(tmp_path)] == [True, True]
    assert [write_one(p) for p in rewritten_modules(tmp_path)] == [False, False]  # kept

    run = _pytest(tmp_path)
    assert run.returncode == 1, run.stdout[-2000:]
    trace = run.stderr + run.stdout
    for module in ("conftest.py", "test_sum.py"):
        assert f"found cached rewritten pyc for {tmp_path / module}" in trace
        assert f"rewriting {tmp_path / module!r}" not in trace  # nothing left for the worker
    assert "assert 2 == 3" in run.stdout  # the rewritten assertion shows the value


def test_a_changed_module_is_rewritten_again(tmp_path: Path) -> None:
    module = tmp_path / "test_sum.py"
    module.write_text(FAILING)
    assert write_one(module)
    module.write_text(FAILING.replace("3", "4"))
    assert write_one(module)  # the cache is keyed by the source's hash
    assert "assert 2 == 4" in _pytest(tmp_path).stdout
