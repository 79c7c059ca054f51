"""The pipelined reads the doctor uses, against a real ZooKeeper: answers in the order asked,
a missing znode read as None (or no children), every read sent before any is awaited."""

from __future__ import annotations

import pytest

from steward.ha.session import Session
from steward.store import zk

pytestmark = pytest.mark.zookeeper


def test_reads_and_children_answer_in_order_with_missing_nodes_as_none(session: Session) -> None:
    root = session.layout.root
    session.client.create(f"{root}/many/a", b"A", makepath=True)
    session.client.create(f"{root}/many/b", b"", makepath=True)
    session.client.create(f"{root}/many/b/child", b"c")

    found = zk.read_many(session.client, [f"{root}/many/b", f"{root}/many/gone", f"{root}/many/a"])

    assert [None if f is None else f[0] for f in found] == [b"", None, b"A"]
    assert found[2] is not None and found[2][1].version == 0
    assert zk.children_many(session.client, [f"{root}/many", f"{root}/nothing"]) == [
        ["a", "b"],
        [],
    ]
    assert zk.read_many(session.client, []) == []
