"""A test's own read-only window on a cluster's ZooKeeper namespace.

Incident tests check the stores directly (a pointer, a lease, the epoch, a status record's
version), because "what the REST API says" is the thing under test; a separate kazoo session
sees what any new leader would see.
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from steward.ha.layout import Layout
from steward.wire.record_format import decode_pointer, decode_status


class ZkView:
    def __init__(self, quorum: str, root: str, kazoo_options: dict[str, Any] | None = None) -> None:
        """``kazoo_options``: the cluster's credential (``ProcessCluster.zookeeper_access``)."""
        self.layout = Layout(root)
        self._client = KazooClient(hosts=quorum, timeout=10.0, **(kazoo_options or {}))

    def __enter__(self) -> ZkView:
        self._client.start(timeout=30)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._client.stop()
        self._client.close()

    def read(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            data, stat = self._client.get(path)
        except NoNodeError:
            return None
        return data, stat

    def json(self, path: str) -> dict[str, Any] | None:
        found = self.read(path)
        return None if found is None else json.loads(found[0])  # type: ignore[no-any-return]

    def exists(self, path: str) -> bool:
        return self._client.exists(path) is not None

    def epoch(self) -> int:
        """The current leader epoch (``leader/epoch``, rule 1)."""
        found = self.read(self.layout.leader_epoch)
        assert found is not None, "no leader/epoch znode"
        return int(found[0])

    def pointer(self, job_id: str) -> bool:
        return self.exists(self.layout.jobgraph(job_id))

    def lease(self, job_id: str) -> dict[str, Any] | None:
        return self.json(self.layout.execution(job_id))

    def status(self, job_id: str) -> tuple[dict[str, Any], int] | None:
        """The job's status record and its znode version."""
        found = self.read(self.layout.job_status(job_id))
        if found is None:
            return None
        # Either record format; the fields by their names.
        return decode_status(found[0], job_id).model_dump(mode="json"), found[1].version

    def pointer_blob(self, job_id: str) -> str | None:
        """The blob key the job's graph pointer names (either record format)."""
        found = self.read(self.layout.jobgraph(job_id))
        return None if found is None else decode_pointer(found[0], job_id).blob

    def result(self, job_id: str) -> dict[str, Any] | None:
        return self.json(self.layout.result(job_id))

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self._client.get_children(path))
        except NoNodeError:
            return []
