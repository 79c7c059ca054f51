"""Executions: the lease is taken before the attempt starts and given back only once the
attempt's whole process group, grandchildren included, is gone (rule 3)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator

import psutil
import pytest

from steward.errors import FencedError
from steward.ha.election import Leadership
from steward.store.leases import ExecutionLeases, LeaseHeldError
from steward.supervisor.process_group import SpawnError
from steward.taskmanager.execution import Executions
from support import wait_until

pytestmark = pytest.mark.zookeeper

RUNNER_WITH_GRANDCHILD = ["sh", "-c", "sleep 1000 & sleep 1000"]


class Exits:
    """Records the exits the monitor reports (the other attempt events are ignored)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []
        self._lock = threading.Lock()

    def attempt_exited(self, job_id: str, attempt: int, returncode: int | None) -> None:
        with self._lock:
            self.calls.append((job_id, attempt, returncode))

    def outcome_of(self, job_id: str, attempt: int) -> None:
        return None

    def attempt_released(self, job_id: str, attempt: int, recorded: bool) -> None:
        pass

    def attempt_log_dropped(self, size: int) -> None:
        pass

    def attempt_forgotten(self, job_id: str, attempt: int, outcome_recorded: bool) -> None:
        pass


@pytest.fixture
def tm1(leases: Callable[..., ExecutionLeases]) -> ExecutionLeases:
    return leases("tm-1")


@pytest.fixture
def exits() -> Exits:
    return Exits()


@pytest.fixture
def executions(tm1: ExecutionLeases, exits: Exits) -> Iterator[Executions]:
    registry = Executions(tm1, exits, poll_interval=0.05)
    yield registry
    registry.kill_all("test over")
    for execution in registry.running().values():
        assert execution.group.wait_gone(10.0)
    registry.close()


def group_size(pgid: int) -> int:
    count = 0
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                count += 1
        except (ProcessLookupError, psutil.Error):
            continue
    return count


def test_lease_is_held_until_the_whole_group_is_gone(
    leader: Leadership, tm1: ExecutionLeases, executions: Executions, exits: Exits
) -> None:
    execution = executions.start("job-a", 0, leader.epoch, RUNNER_WITH_GRANDCHILD)
    group = execution.group
    wait_until(lambda: group_size(group.pgid) >= 2, timeout=10, message="runner + grandchild")

    os.kill(group.pid, signal.SIGKILL)  # the runner dies, its grandchild lives on
    wait_until(lambda: group.returncode is not None, timeout=10, message="runner reaped")
    executions.check_once()  # a monitor pass, made by hand so that it surely happened

    assert tm1.held("job-a") == execution.lease
    assert exits.calls == []
    assert executions.get("job-a") is execution

    executions.start_monitor()
    group.kill()

    # The monitor releases the lease, then forgets the attempt: wait for both.
    wait_until(
        lambda: tm1.held("job-a") is None and executions.get("job-a") is None,
        timeout=10,
        message="lease released and the attempt forgotten",
    )
    assert group_size(group.pgid) == 0
    assert exits.calls == [("job-a", 0, -signal.SIGKILL)]


def test_a_second_attempt_of_a_running_job_is_refused(
    leader: Leadership, executions: Executions, leases: Callable[..., ExecutionLeases]
) -> None:
    executions.start("job-a", 0, leader.epoch, ["sleep", "1000"])
    other_tm = Executions(leases("tm-2"), Exits())

    with pytest.raises(LeaseHeldError):
        executions.start("job-a", 1, leader.epoch, ["sleep", "1000"])
    with pytest.raises(LeaseHeldError):
        other_tm.start("job-a", 1, leader.epoch, ["sleep", "1000"])

    assert list(executions.running()) == ["job-a"]
    assert other_tm.running() == {}


def test_a_failed_spawn_gives_the_lease_back(
    leader: Leadership, tm1: ExecutionLeases, executions: Executions
) -> None:
    with pytest.raises(SpawnError):
        executions.start("job-a", 0, leader.epoch, ["/nonexistent/runner"])

    assert tm1.held("job-a") is None
    assert executions.running() == {}


def test_a_stale_epoch_starts_nothing(
    leader: Leadership, tm1: ExecutionLeases, executions: Executions
) -> None:
    tm1.observe_epoch(leader.epoch + 1)

    with pytest.raises(FencedError):
        executions.start("job-a", 0, leader.epoch, ["sleep", "1000"])

    assert executions.running() == {}
    assert tm1.held("job-a") is None


def test_kill_all_ends_every_attempt_and_releases_the_leases(
    leader: Leadership, tm1: ExecutionLeases, executions: Executions, exits: Exits
) -> None:
    executions.start_monitor()
    for job in ("job-a", "job-b"):
        executions.start(job, 0, leader.epoch, RUNNER_WITH_GRANDCHILD)

    assert executions.kill_all("test") == 2

    wait_until(lambda: tm1.all() == {}, timeout=10, message="both leases released")
    assert sorted(exits.calls) == [
        ("job-a", 0, -signal.SIGKILL),
        ("job-b", 0, -signal.SIGKILL),
    ]
