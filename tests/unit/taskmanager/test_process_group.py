"""ProcessGroup: the whole group, grandchildren included, is what counts as the attempt."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from steward.supervisor.process_group import ProcessGroup, SpawnError
from support import wait_until

RUNNER_WITH_GRANDCHILD = ["sh", "-c", "sleep 1000 & sleep 1000"]


def members(group: ProcessGroup) -> list[psutil.Process]:
    """The live (non-zombie) processes of ``group``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == group.pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


@pytest.fixture
def spawned() -> Iterator[list[ProcessGroup]]:
    groups: list[ProcessGroup] = []
    yield groups
    for group in groups:
        group.kill()
        assert group.wait_gone(10.0)


def spawn(spawned: list[ProcessGroup], argv: list[str], **kwargs: object) -> ProcessGroup:
    group = ProcessGroup.spawn(argv, **kwargs)  # type: ignore[arg-type]
    spawned.append(group)
    return group


def test_child_leads_its_own_process_group(spawned: list[ProcessGroup]) -> None:
    group = spawn(spawned, ["sleep", "1000"])

    assert group.pgid == group.pid == os.getpgid(group.pid)
    assert group.pgid != os.getpgrp()
    assert group.alive()


def test_group_stays_alive_while_a_grandchild_lives(spawned: list[ProcessGroup]) -> None:
    group = spawn(spawned, RUNNER_WITH_GRANDCHILD)
    wait_until(lambda: len(members(group)) >= 2, timeout=10, message="runner and grandchild")

    os.kill(group.pid, signal.SIGKILL)  # the runner alone dies
    wait_until(lambda: group.returncode is not None, timeout=10, message="runner reaped")

    assert group.returncode == -signal.SIGKILL
    assert group.alive(), "a grandchild still runs, so the attempt is not gone"
    assert all(proc.pid != group.pid for proc in members(group))

    group.kill()

    assert group.wait_gone(10.0)
    assert members(group) == []
    assert not group.alive()


def test_kill_takes_the_whole_group(spawned: list[ProcessGroup]) -> None:
    group = spawn(spawned, RUNNER_WITH_GRANDCHILD)
    wait_until(lambda: len(members(group)) >= 2, timeout=10, message="runner and grandchild")
    pids = [proc.pid for proc in members(group)]

    group.kill()

    assert group.wait_gone(10.0)
    assert not any(psutil.pid_exists(pid) and _live(pid) for pid in pids)


STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(1000)
"""


def test_terminate_escalates_to_sigkill_after_grace(
    spawned: list[ProcessGroup], tmp_path: Path
) -> None:
    log_path = tmp_path / "attempt.log"
    group = spawn(spawned, [sys.executable, "-c", STUBBORN], log_path=log_path)
    # Only once it printed "ready" does it ignore SIGTERM.
    wait_until(lambda: "ready" in log_path.read_text(), timeout=10, message="child ready")

    assert group.terminate(grace=0.5)
    assert group.returncode == -signal.SIGKILL


def test_terminate_is_enough_for_a_polite_group(spawned: list[ProcessGroup]) -> None:
    group = spawn(spawned, RUNNER_WITH_GRANDCHILD)
    wait_until(lambda: len(members(group)) >= 2, timeout=10, message="runner and grandchild")

    assert group.terminate(grace=10.0)
    assert group.returncode == -signal.SIGTERM


def test_output_goes_to_the_log_file(spawned: list[ProcessGroup], tmp_path: Path) -> None:
    log_path = tmp_path / "attempt.log"
    group = spawn(spawned, ["sh", "-c", "echo out; echo err >&2"], log_path=log_path)

    assert group.wait_gone(10.0)
    assert group.returncode == 0
    assert sorted(log_path.read_text().split()) == ["err", "out"]


def test_a_missing_executable_is_a_spawn_error() -> None:
    with pytest.raises(SpawnError, match="no-such-runner"):
        ProcessGroup.spawn(["/nonexistent/no-such-runner"])


def _live(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
