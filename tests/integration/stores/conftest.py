"""Fixtures of the store contract tests: a ZooKeeper session, a granted leader, blob storage.

``leader`` is "jm-1", granted on ``session``. ``depose()`` (the ``depose`` fixture) stops it and
elects "jm-2" on a second session, so the first leader's fence is stale from then on while its
session stays connected: exactly the deposed-but-alive leader of seed 002.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from stores_support import Contender

from steward.ha.election import LeaderElection
from steward.ha.session import Session
from steward.store.blob import BlobStore
from support import ZK_TEST_ROOT, wait_until

# Generous: no contract here is about a session's expiry (the tests that are expire it on purpose),
# and on a loaded 2-core machine a worker stalled for a few seconds (a large import holding the
# interpreter lock) lost a 4 s session between its grant and its first write.
SESSION_TIMEOUT = 15.0
GRANT_TIMEOUT = 10.0


def _contend(stack: ExitStack, quorum: str, root: str, name: str) -> Contender:
    session = Session(quorum, root, session_timeout=SESSION_TIMEOUT, name=name).start()
    stack.callback(session.close)
    election = LeaderElection(session, name, f"http://{name}:8081").start()
    stack.callback(election.stop)
    leadership = wait_until(
        lambda: election.leadership,
        timeout=GRANT_TIMEOUT,
        message=f"{name} granted leadership",
    )
    return Contender(session, election, leadership)


@pytest.fixture
def zk_root(cluster_id: str) -> str:
    return f"{ZK_TEST_ROOT}/{cluster_id}"


@pytest.fixture
def contenders(zk_quorum: str) -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.fixture
def leader(contenders: ExitStack, zk_quorum: str, zk_root: str) -> Contender:
    return _contend(contenders, zk_quorum, zk_root, "jm-1")


@pytest.fixture
def session(leader: Contender) -> Session:
    return leader.session


@pytest.fixture
def standby_session(zk_quorum: str, zk_root: str, leader: Contender) -> Iterator[Session]:
    """A second JobManager's session ("jm-2"), standing by while ``leader`` leads."""
    session = Session(zk_quorum, zk_root, session_timeout=SESSION_TIMEOUT, name="jm-2").start()
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def depose(
    contenders: ExitStack, zk_quorum: str, zk_root: str, leader: Contender
) -> Callable[[], Contender]:
    """Stop ``leader`` contending and return "jm-2", granted the next epoch."""

    def _depose() -> Contender:
        leader.election.stop()
        assert leader.election.leadership is None
        successor = _contend(contenders, zk_quorum, zk_root, "jm-2")
        assert successor.leadership.epoch > leader.leadership.epoch
        return successor

    return _depose


@pytest.fixture
def blob_root(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def blobs(blob_root: Path) -> BlobStore:
    return BlobStore(f"file://{blob_root}")
