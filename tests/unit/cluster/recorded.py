"""A local cluster's record (cluster.json) written by a test, of processes it started itself:
what ``steward cluster status`` and ``stop`` read. Import as ``from recorded import ...``
(pytest puts this folder on sys.path)."""

from __future__ import annotations

import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir, save_state
from steward.supervisor.detached import spawn

CLUSTER_ID = "local-x"


def spawn_sleeper(
    tmp_path: Path, marker: str, role: Role, proc_id: str, **fields: Any
) -> tuple[subprocess.Popen[bytes], ProcessEntry]:
    """A detached ``sleep <marker>`` (its output in tmp_path/sleep.log), and the entry the
    cluster keeps of it as ``proc_id`` (``fields`` add to the entry)."""
    child, record = spawn(["sleep", marker], tmp_path / "sleep.log", marker=marker)
    log = str(tmp_path / "sleep.log")
    return child, ProcessEntry(role=role, id=proc_id, log=log, **asdict(record), **fields)


def record_cluster(tmp_path: Path, *processes: ProcessEntry) -> None:
    """tmp_path's cluster.json: cluster :data:`CLUSTER_ID`, no managed ZooKeeper, ``processes``."""
    state_dir = StateDir.of(tmp_path)
    state = ClusterState(
        cluster_id=CLUSTER_ID,
        quorum="127.0.0.1:9",
        managed_zookeeper=False,
        config=str(state_dir.config),
        started_at=0.0,
        processes=list(processes),
    )
    save_state(state_dir, state)
