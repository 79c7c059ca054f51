"""The CLI validates the configuration once at start-up and reports a user mistake in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _steward(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "steward.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("-D", "no.such.key=1"), "unknown configuration key 'no.such.key'"),
        (
            ("-D", "high-availability.zookeeper.session-timeout=soon"),
            "high-availability.zookeeper.session-timeout",
        ),
        (("-D", "novalue"), "-D expects key=value"),
        (("--config", "missing.toml"), "missing.toml does not exist"),
    ],
)
def test_bad_configuration_is_one_line_error_without_traceback(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    result = _steward(*args, "zookeeper", "status", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_value_in_steward_toml_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "steward.toml").write_text("[state.checkpoints]\nnum-retained = 0\n")
    result = _steward("zookeeper", "status", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "state.checkpoints.num-retained" in result.stderr
