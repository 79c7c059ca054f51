"""A storage outage while an attempt starts spends no restart (issue 23, item 1).

Given a real ZooKeeper, a ScriptedLeader and an in-process TaskManager, when the blob storage
is unreachable as a start command arrives, then the attempt is refused (it never ran, rule 9),
so the leader tries it again after its rejection back-off instead of counting a failure; a job
graph that is really missing still ends the attempt as failed (the neighbouring test in
test_taskmanager.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import start_command

from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

SETTLED = (AttemptPhase.ENDED, AttemptPhase.REJECTED)


def test_an_unmounted_storage_while_starting_refuses_the_attempt_spending_nothing(
    tmp_path: Path, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager("tm-1")
    # (the TaskManager talks to the leader before the storage goes: what follows is the start)
    wait_until(lambda: leader.heartbeats, 20, message="a first heartbeat of tm-1")
    command = start_command(rig.blobs, "job-x", leader.epoch, args=["-"])
    storage = tmp_path / "storage"  # the tm_config fixture's high-availability.storage-dir
    away = storage.with_name("storage-unmounted")
    storage.rename(away)  # the mount went away: nothing is lost, nothing can be read

    leader.command(command)

    report = leader.wait_report(lambda r: r.phase in SETTLED, "job-x")
    assert report.phase is AttemptPhase.REJECTED, report.outcome
    assert report.outcome is None
    assert "storage" in (report.rejection_message or "")
    assert report.lease_released
    assert manager.session.client.exists(manager.session.layout.execution("job-x")) is None
    away.rename(storage)
