"""Steward's HA state as ZooKeeper holds it, read directly (not through Steward's API).

Paths from ``steward.ha.layout.Layout``; payloads are plain JSON (``results/<id>`` is a
``JobResultEntry``), and a result's write time is its znode's creation time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from chaos.checker import ResultRecord
from steward.ha.layout import Layout


@dataclass
class HaState:
    results: dict[str, ResultRecord]
    pointers: set[str]
    leases: set[str]


def read_state(
    connect_string: str, root: str, kazoo_options: dict[str, Any] | None = None
) -> HaState:
    """``kazoo_options``: the cluster's credential (``ProcessCluster.zookeeper_access``)."""
    layout = Layout(root)
    client = KazooClient(hosts=connect_string, timeout=10.0, **(kazoo_options or {}))
    client.start(timeout=30)
    try:
        return HaState(
            results=_results(client, layout),
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


def _results(client: KazooClient, layout: Layout) -> dict[str, ResultRecord]:
    found: dict[str, ResultRecord] = {}
    for job in _children(client, layout.results):
        try:
            data, stat = client.get(f"{layout.results}/{job}")
        except NoNodeError:
            continue
        entry = json.loads(data)
        found[job] = ResultRecord(
            job=job,
            state=str(entry["state"]),
            status=str(entry.get("status", "DIRTY")),
            value=entry.get("value"),
            written_wall=stat.ctime / 1000.0,
        )
    return found
