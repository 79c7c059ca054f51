"""Steward's HA state as ZooKeeper holds it, read directly (not through Steward's API).

Paths from ``steward.ha.layout.Layout``; payloads are plain JSON, and a result's write time
is its znode's creation time. ``results/<id>`` is a result's index, naming its body in the blob
storage (``results/<id>/<sha256>``, read with its checksum checked), or, as an older version
wrote it, the whole ``JobResultEntry``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from chaos.checker import ResultRecord
from steward.ha.layout import Layout
from steward.store.blob import BlobRef, BlobStore


@dataclass
class HaState:
    results: dict[str, ResultRecord]
    pointers: set[str]
    leases: set[str]


def read_state(
    connect_string: str, root: str, blobs: BlobStore, kazoo_options: dict[str, Any] | None = None
) -> HaState:
    """``blobs``: the cluster's blob storage (``high-availability.storage-dir``);
    ``kazoo_options``: the cluster's credential (``ProcessCluster.zookeeper_access``)."""
    layout = Layout(root)
    client = KazooClient(hosts=connect_string, timeout=10.0, **(kazoo_options or {}))
    client.start(timeout=30)
    try:
        return HaState(
            results=_results(client, layout, blobs),
            pointers=set(_children(client, layout.jobgraphs)),
            leases=set(_children(client, layout.executions)),
        )
    finally:
        client.stop()
        client.close()


def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []


def _results(client: KazooClient, layout: Layout, blobs: BlobStore) -> dict[str, ResultRecord]:
    found: dict[str, ResultRecord] = {}
    for job in _children(client, layout.results):
        try:
            data, stat = client.get(f"{layout.results}/{job}")
        except NoNodeError:
            continue
        entry = json.loads(data)
        body = entry
        if "sha256" in entry and "job_id" not in entry:  # an index: the body is a blob
            key = f"results/{job}/{entry['sha256']}"
            body = json.loads(blobs.get(BlobRef(key, entry["sha256"])))
        found[job] = ResultRecord(
            job=job,
            state=str(entry["state"]),
            status=str(entry.get("status", "DIRTY")),
            value=body.get("value"),
            written_wall=stat.ctime / 1000.0,
        )
    return found
