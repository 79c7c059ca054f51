"""Containment: every process of an attempt counts and is killed, whatever its group or session.

A "runner" here is a small Python program that starts a daemon-style sleeper (double fork and
``setsid``, see tests/escapers.py) and then sleeps or exits. Each test runs twice: with a
cgroup per attempt (where the host has cgroup v2) and with the fallback (process group and
environment token).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from escapers import DOUBLE_FORK, escaped_from, kill_sleepers
from steward.supervisor import containment
from steward.supervisor.process_group import ProcessGroup
from support import pid_alive, wait_until

# Like the real runner, it joins its attempt's cgroup first thing (containment.enter_attempt,
# without the subreaper): the TaskManager's own move of the pid comes after the spawn, and a
# child forked before it would start outside the cgroup.
RUNNER = """
import os, subprocess, sys, time
from pathlib import Path
from steward.supervisor import containment
if os.environ.get(containment.CGROUP_ENV):
    containment.Cgroup(Path(os.environ[containment.CGROUP_ENV])).add(os.getpid())
subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]], check=True)
time.sleep(1000)
"""

SUBREAPER = """
import subprocess, sys, time
from steward.supervisor import containment
assert containment.become_subreaper() and containment.is_subreaper()
subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]], check=True)
time.sleep(1000)
"""


class Spawned:
    """What a test started: groups killed, escaped sleepers too, whatever the test did."""

    def __init__(self) -> None:
        self.groups: list[ProcessGroup] = []
        self.escaped: list[int] = []

    def start(self, tmp_path: Path, program: str = RUNNER) -> tuple[ProcessGroup, int]:
        """A runner whose sleeper escaped its group and session; the group and that pid."""
        pid_file = tmp_path / "escaped.pid"
        group = ProcessGroup.spawn([sys.executable, "-c", program, DOUBLE_FORK, str(pid_file)])
        self.groups.append(group)
        wait_until(pid_file.exists, 10, message="sleeper started")
        escaped = int(pid_file.read_text())
        self.escaped.append(escaped)
        assert escaped_from(escaped, group.pid)
        return group, escaped


@pytest.fixture
def spawned() -> Iterator[Spawned]:
    started = Spawned()
    yield started
    for group in started.groups:
        group.kill()
        group.wait_gone(10.0)
    kill_sleepers(started.escaped)


def test_the_attempt_lives_while_an_escaped_process_lives_and_that_process_is_killed(
    spawned: Spawned, tmp_path: Path, containment_mode: str
) -> None:
    group, escaped = spawned.start(tmp_path)

    os.kill(group.pid, signal.SIGKILL)  # the runner alone dies
    wait_until(lambda: group.returncode is not None, 10, message="runner reaped")

    assert group.alive(), "the escaped sleeper is a process of the attempt"
    wait_until(lambda: not pid_alive(escaped), 10, message="escaped sleeper killed")
    assert group.wait_gone(10.0)


def test_kill_takes_processes_in_other_sessions(
    spawned: Spawned, tmp_path: Path, containment_mode: str
) -> None:
    group, escaped = spawned.start(tmp_path)

    group.kill()

    assert group.wait_gone(10.0)
    assert not pid_alive(escaped)


def test_a_cgroup_holds_the_runner_and_is_removed_once_its_attempt_is_gone(
    spawned: Spawned, tmp_path: Path
) -> None:
    if containment.attempt_parent() is None:
        pytest.skip("no usable cgroup v2 on this host")
    group, escaped = spawned.start(tmp_path)
    assert group.cgroup is not None
    path = group.cgroup.path
    assert {group.pid, escaped} <= set(group.cgroup.pids())

    group.kill()

    assert group.wait_gone(10.0)
    assert not path.exists()


def test_a_subreaper_adopts_the_orphans_of_its_descendants(
    spawned: Spawned, tmp_path: Path
) -> None:
    group, escaped = spawned.start(tmp_path, SUBREAPER)

    # The sleeper writes its pid before its parent, the middle process, has surely exited:
    # it is an orphan, adopted, only once that exit is done (a fresh clone's run under load
    # saw the middle process still its parent).
    wait_until(
        lambda: psutil.Process(escaped).ppid() == group.pid, 10, message="adopted by the runner"
    )


# Forks a child into a new session, which does the same, while its parent exits: no pid and
# no group lives long, so no scan of the process table can catch it; its cgroup does. It joins
# its cgroup first thing, as the runner does (the TaskManager's move may come late under load).
WALKER = """
import os, sys, time
from steward.supervisor import containment
containment.enter_attempt()
open(sys.argv[1], "w").close()
deadline = time.monotonic() + 120  # a walker this test failed to kill stops by itself
while time.monotonic() < deadline:
    time.sleep(0.005)
    if os.fork() == 0:
        os.setsid()
        continue
    os._exit(0)
"""


def test_a_process_that_keeps_forking_into_new_sessions_is_killed_with_its_cgroup(
    spawned: Spawned, tmp_path: Path
) -> None:
    if containment.attempt_parent() is None:
        pytest.skip("no usable cgroup v2 on this host")
    started = tmp_path / "walking"
    group = ProcessGroup.spawn([sys.executable, "-c", WALKER, str(started)])
    spawned.groups.append(group)
    wait_until(started.exists, 10, message="walker started")
    assert group.cgroup is not None
    cgroup = containment.Cgroup(group.cgroup.path)
    wait_until(lambda: group.returncode is not None, 10, message="first walker gone")
    assert cgroup.populated(), "it walks on"

    group.kill()

    assert group.wait_gone(10.0)
    assert not cgroup.populated()


@pytest.mark.parametrize("gone", [errno.ENOENT, errno.ENODEV])
def test_a_cgroup_removed_while_it_is_read_is_empty(
    gone: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file of a cgroup opened just before another thread removes the cgroup reads as ENODEV
    # (the kernel's answer; seen in CI while the monitor removed an emptied attempt's cgroup).
    def removed(self: Path, *args: object, **kwargs: object) -> str:
        raise OSError(gone, os.strerror(gone))

    monkeypatch.setattr(Path, "read_text", removed)
    cgroup = containment.Cgroup(tmp_path / "attempt")

    assert not cgroup.populated()
    assert cgroup.pids() == []


def test_another_read_error_of_a_cgroup_is_not_taken_for_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(errno.EACCES, "denied")

    monkeypatch.setattr(Path, "read_text", refused)
    with pytest.raises(PermissionError):
        containment.Cgroup(tmp_path / "attempt").populated()
