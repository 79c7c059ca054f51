"""What a process started through ``steward.cli`` imports (the cost: benchmarks/startup_cost.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded(imports: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded once it ran ``imports``."""
    script = f"import sys\n{imports}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout.split()


@pytest.mark.parametrize("entry", ["steward.jobmanager.manager", "steward.taskmanager.manager"])
def test_a_process_that_talks_http_does_not_load_httpxs_command_line(entry: str) -> None:
    # A fresh interpreter: this test process may have imported rich for other tests. httpx
    # imports its command-line tool (rich, pygments: 0.15 s of CPU) unless steward.cli stands in.
    imports = f"import steward.cli.main, {entry}, httpx"

    assert _loaded(imports, ("httpx", "pygments", "rich.console")) == ["httpx"]


def test_httpxs_stand_in_says_what_it_is() -> None:
    script = "import steward.cli, httpx._main as m; m.main()"
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 1
    assert "httpx's command line is not loaded in a Steward process" in result.stderr


def test_a_jobmanager_without_sign_on_does_not_load_jwt_or_cryptography() -> None:
    # steward.security.sign_on imports them when a SignOn is made (security.oidc.issuer set).
    imports = "import steward.cli.main, steward.cli.jobmanager, steward.jobmanager.manager"

    assert _loaded(imports, ("jwt", "cryptography", "steward.security.oidc")) == []


def test_a_jobmanager_loads_the_runner_supervisor_only_to_run_a_hook() -> None:
    # steward.jobmanager.hooks imports it when an initialize hook starts (and with it psutil).
    imports = "import steward.cli.main, steward.cli.jobmanager, steward.jobmanager.manager"

    assert _loaded(imports, ("psutil", "steward.supervisor.completion")) == []


def test_a_taskmanager_does_not_load_the_rate_limits_library() -> None:
    # Its port's middleware imports steward.security.rate_limits, but only a RateLimiter,
    # which a TaskManager never makes, loads limits.
    imports = "import steward.cli.main, steward.cli.taskmanager, steward.taskmanager.manager"

    assert _loaded(imports, ("limits", "steward.security.rate_limit_storage")) == []


def test_an_attempts_runner_loads_neither_fsspec_nor_the_configuration_models() -> None:
    # fsspec only when a stage moves its checkpoint data; the configuration's models never.
    loaded = _loaded("import steward.runtime.runner", ("fsspec", "asyncio", "steward.config"))

    assert loaded == []
