"""GroupCommit against a real ZooKeeper: concurrent fenced creates share one transaction, and
each writer still gets exactly its own outcome.

A transaction's creates all carry its zxid (``czxid``), so the number of distinct czxids among
the created znodes is the number of transactions that made them. To make the batching
deterministic the first writer's commit is held at a gate (a fence whose ``transaction()``
waits) while the others queue behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from stores_support import Contender

from steward.errors import FencedError, NodeExistsError, StewardError
from steward.ha.fencing import Fence, FencedTransaction
from steward.ha.session import Session
from steward.store.group_commit import Absent, Create, GroupCommit
from support import wait_until

pytestmark = pytest.mark.zookeeper


@dataclass(frozen=True)
class GatedFence(Fence):
    """A real fence whose first transaction waits for ``gate`` (the commit in flight)."""

    gate: threading.Event = field(default_factory=threading.Event, compare=False)
    entered: threading.Event = field(default_factory=threading.Event, compare=False)

    def transaction(self) -> FencedTransaction:
        if not self.entered.is_set():
            self.entered.set()
            self.gate.wait(10)
        return super().transaction()


@dataclass
class Writers:
    """Writer threads, each creating its znodes through one GroupCommit; outcomes by name."""

    commits: GroupCommit
    fence: Fence
    outcomes: dict[str, StewardError | None] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self, name: str, creates: list[Create]) -> None:
        def write() -> None:
            try:
                self.commits.create(self.fence, creates)
                self.outcomes[name] = None
            except StewardError as exc:
                self.outcomes[name] = exc

        thread = threading.Thread(target=write, name=f"writer-{name}")
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(20)
            assert not thread.is_alive(), f"{thread.name} never answered"


@pytest.fixture
def base(session: Session) -> str:
    path = f"{session.layout.root}/group-commit"
    session.client.ensure_path(path)
    return path


@pytest.fixture
def gated(leader: Contender) -> Iterator[GatedFence]:
    fence = leader.fence
    gated = GatedFence(fence.client, fence.epoch_path, fence.epoch, fence.timeout)
    yield gated
    gated.gate.set()


def _czxid(session: Session, path: str) -> int:
    _data, stat = session.client.get(path)
    return int(stat.czxid)


def _run_behind_a_commit_in_flight(
    writers: Writers, gated: GatedFence, base: str, queued: Callable[[], None]
) -> None:
    """Writer "first" (creating ``base``/w0) held in its commit, then ``queued`` (until all
    its writers are queued); then the commit goes on and every writer ends."""
    writers.start("first", [Create(f"{base}/w0", b"x")])
    wait_until(gated.entered.is_set, 10, message="the first commit in flight")
    queued()
    gated.gate.set()
    writers.join()


def test_writers_queued_behind_a_commit_in_flight_share_the_next_transaction(
    session: Session, gated: GatedFence, base: str
) -> None:
    commits = GroupCommit()
    writers = Writers(commits, gated)
    later = [f"{base}/w{n}" for n in range(1, 6)]

    def queued() -> None:
        for path in later:
            writers.start(path, [Create(path, b"x")])
        wait_until(lambda: len(commits._queue) == 5, 10, message="five writers queued")

    _run_behind_a_commit_in_flight(writers, gated, base, queued)

    assert all(outcome is None for outcome in writers.outcomes.values()), writers.outcomes
    first = _czxid(session, f"{base}/w0")
    shared = {_czxid(session, path) for path in later}
    assert len(shared) == 1, "the five queued writers were committed in one transaction"
    assert shared != {first}


def test_a_writer_whose_node_exists_fails_alone_and_the_others_are_created(
    session: Session, gated: GatedFence, base: str
) -> None:
    session.client.create(f"{base}/taken", b"earlier")
    commits = GroupCommit()
    writers = Writers(commits, gated)

    def queued() -> None:
        writers.start("a", [Create(f"{base}/a", b"x"), Create(f"{base}/a-status", b"y")])
        writers.start("dup", [Create(f"{base}/fresh", b"x"), Create(f"{base}/taken", b"y")])
        writers.start("b", [Create(f"{base}/b", b"x")])
        wait_until(lambda: len(commits._queue) == 3, 10, message="three writers queued")

    _run_behind_a_commit_in_flight(writers, gated, base, queued)

    failure = writers.outcomes["dup"]
    assert isinstance(failure, NodeExistsError)
    assert failure.path == f"{base}/taken"
    assert session.client.exists(f"{base}/fresh") is None, "none of the failed writer's creates"
    assert session.client.get(f"{base}/taken")[0] == b"earlier"
    for name in ("first", "a", "b"):
        assert writers.outcomes[name] is None
    assert session.client.exists(f"{base}/a-status") is not None
    assert _czxid(session, f"{base}/a") == _czxid(session, f"{base}/b")


def test_a_stale_fence_fails_every_writer_of_its_batch_and_creates_nothing(
    session: Session, leader: Contender, depose: Callable[[], Contender], base: str
) -> None:
    depose()
    commits = GroupCommit()
    writers = Writers(commits, leader.fence)
    for n in range(4):
        writers.start(f"w{n}", [Create(f"{base}/stale-{n}", b"x")])
    writers.join()

    assert all(isinstance(outcome, FencedError) for outcome in writers.outcomes.values())
    assert session.client.get_children(base) == []


def test_a_writer_alone_commits_at_once_in_its_own_transaction(
    session: Session, leader: Contender, base: str
) -> None:
    commits = GroupCommit()

    commits.create(leader.fence, [Create(f"{base}/one", b"1"), Create(f"{base}/two", b"2")])
    commits.create(leader.fence, [Create(f"{base}/three", b"3")])

    assert _czxid(session, f"{base}/one") == _czxid(session, f"{base}/two")
    assert _czxid(session, f"{base}/three") != _czxid(session, f"{base}/one")


def test_a_writer_guarded_by_a_node_that_exists_creates_nothing_and_the_others_commit(
    session: Session, gated: GatedFence, base: str
) -> None:
    session.client.create(f"{base}/result", b"earlier")
    commits = GroupCommit()
    writers = Writers(commits, gated)

    def queued() -> None:
        writers.start("guarded", [Absent(f"{base}/result"), Create(f"{base}/pointer", b"p")])
        writers.start("free", [Absent(f"{base}/no-result"), Create(f"{base}/other", b"p")])
        wait_until(lambda: len(commits._queue) == 2, 10, message="two writers queued")

    _run_behind_a_commit_in_flight(writers, gated, base, queued)

    failure = writers.outcomes["guarded"]
    assert isinstance(failure, NodeExistsError)
    assert failure.path == f"{base}/result"
    assert session.client.exists(f"{base}/pointer") is None
    assert session.client.get(f"{base}/result")[0] == b"earlier"
    assert writers.outcomes["free"] is None
    assert session.client.exists(f"{base}/other") is not None
    assert session.client.exists(f"{base}/no-result") is None, "a guard leaves no node behind"
