"""The leader's content collector against a real ZooKeeper and real blob storage: the
interleavings in which it used to delete a file an accepted job names (issue 23, item 3).

Each round is run on a thread of its own and held at a chosen step (the job graph store's
listing, the re-check of a file's age) while the other party runs its steps: a submission that
pins, checks and stores; a new leader elected meanwhile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest
from stores_support import Contender, make_graph

from steward.errors import FencedError, StewardError
from steward.ha.session import Session
from steward.jobmanager.leader.content_gc import ContentCollector
from steward.store.blob import BlobStore
from steward.store.contents import ContentInfo, ContentStore
from steward.store.job_graphs import JobGraphStore
from steward.wire.jobs import Dependency, DependencyKind, JobGraph, JobGraphPointer
from support import wait_until

pytestmark = pytest.mark.zookeeper

RETENTION = 60.0
HELD = 30.0
"""How long a held step waits for the test to release it (a failure, never a timing)."""


class HeldListing(JobGraphStore):
    """A job graph store whose first listing of job ids waits, once taken, until released."""

    def __init__(self, session: Session, blobs: BlobStore) -> None:
        super().__init__(session, blobs)
        self.listed = threading.Event()
        self.release = threading.Event()

    def job_ids(self) -> list[str]:
        ids = super().job_ids()
        if not self.listed.is_set():
            self.listed.set()
            assert self.release.wait(HELD), "the listing was never released"
        return ids


class HeldAgeCheck(ContentStore):
    """A content store whose first :meth:`age` (the collector's last look before a deletion)
    waits until released, like a JobManager frozen between its checks and the delete."""

    def __init__(self, blobs: BlobStore) -> None:
        super().__init__(blobs)
        self.checking = threading.Event()
        self.release = threading.Event()

    def age(self, sha256: str) -> ContentInfo | None:
        info = super().age(sha256)
        if not self.checking.is_set():
            self.checking.set()
            assert self.release.wait(HELD), "the age check was never released"
        return info


@pytest.fixture
def rounds() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gc-round") as pool:
        yield pool


def _collector(
    contents: ContentStore, graphs: JobGraphStore, who: Contender, **options: float
) -> ContentCollector:
    """A collector for which every stored file is past its retention (a clock an hour ahead)."""
    return ContentCollector(
        contents,
        graphs,
        RETENTION,
        fence=who.fence,
        clock=lambda: time.time() + 3600,
        **options,
    )


def _stored_file(contents: ContentStore) -> tuple[str, int]:
    data = os.urandom(2048)
    sha = hashlib.sha256(data).hexdigest()
    contents.put(sha, [data])
    return sha, len(data)


def _graph_naming(job_id: str, sha: str, size: int) -> JobGraph:
    graph = make_graph(job_id)
    dependency = Dependency(kind=DependencyKind.FILE, filename="data.bin", sha256=sha, size=size)
    spec = graph.spec.model_copy(update={"dependencies": [dependency]})
    return graph.model_copy(update={"spec": spec})


def _readable(contents: ContentStore, sha: str, tmp_path: Path) -> bool:
    """What an attempt does with a file its job names: fetch it, verified."""
    if not contents.exists(sha):
        return False
    contents.copy_to(sha, tmp_path / "fetched")
    return True


def _outcome(round_: Future[list[str]]) -> list[str] | BaseException:
    error = round_.exception(timeout=HELD)
    return error if error is not None else round_.result()


# ---------------------------------------------------------------- (a) pins across a round


def test_a_file_pinned_before_a_round_began_survives_the_round_that_cleared_its_names(
    leader: Contender, blobs: BlobStore, rounds: ThreadPoolExecutor, tmp_path: Path
) -> None:
    contents = ContentStore(blobs)
    graphs = HeldListing(leader.session, blobs)
    collector = _collector(contents, graphs, leader)
    sha, size = _stored_file(contents)

    with ExitStack() as submission:
        submission.enter_context(collector.pinned([sha]))  # pins, then checks its files
        assert contents.exists(sha)
        round_ = rounds.submit(collector.collect)
        assert graphs.listed.wait(HELD)  # the round listed the jobs: this one is not there yet
        graphs.put(leader.fence, _graph_naming("job-a", sha, size))
    graphs.release.set()  # the submission has unpinned (and answered 201)

    assert _outcome(round_) == []
    assert _readable(contents, sha, tmp_path)
    assert collector.collect() == []  # the next round reads the job's pointer
    assert _readable(contents, sha, tmp_path)


def test_a_file_no_job_names_any_more_is_still_collected(
    leader: Contender, blobs: BlobStore
) -> None:
    contents = ContentStore(blobs)
    graphs = JobGraphStore(leader.session, blobs)
    collector = _collector(contents, graphs, leader)
    kept, kept_size = _stored_file(contents)
    unnamed, _ = _stored_file(contents)
    graphs.put(leader.fence, _graph_naming("job-k", kept, kept_size))
    with collector.pinned([unnamed]):
        assert collector.collect() == []  # pinned while the round ran
    assert collector.collect() == [unnamed]
    assert contents.exists(kept)
    graphs.remove(leader.fence, "job-k")
    assert collector.collect() == [kept]


# ---------------------------------------------------------------- (b) deletions are fenced


def test_a_deposed_leaders_round_held_mid_way_deletes_nothing_the_new_leader_stored(
    leader: Contender,
    depose: Callable[[], Contender],
    blobs: BlobStore,
    rounds: ThreadPoolExecutor,
    tmp_path: Path,
) -> None:
    contents = ContentStore(blobs)
    old_graphs = HeldListing(leader.session, blobs)
    old = _collector(contents, old_graphs, leader)
    sha, size = _stored_file(contents)
    round_ = rounds.submit(old.collect)
    assert old_graphs.listed.wait(HELD)  # then it stalls: a long GC pause, a slow storage

    successor = depose()
    graphs = JobGraphStore(successor.session, blobs)
    new = _collector(contents, graphs, successor)
    with new.pinned([sha]):
        assert contents.exists(sha)
        graphs.put(successor.fence, _graph_naming("job-b", sha, size))
    old_graphs.release.set()

    assert isinstance(_outcome(round_), FencedError)
    assert _readable(contents, sha, tmp_path)
    assert graphs.job_ids() == ["job-b"]


def test_a_leader_frozen_between_its_fence_check_and_the_delete_deletes_nothing(
    leader: Contender,
    depose: Callable[[], Contender],
    blobs: BlobStore,
    rounds: ThreadPoolExecutor,
    tmp_path: Path,
) -> None:
    contents = HeldAgeCheck(blobs)
    window = 0.5
    old = _collector(contents, JobGraphStore(leader.session, blobs), leader, fence_window=window)
    sha, size = _stored_file(contents)
    round_ = rounds.submit(old.collect)
    assert contents.checking.wait(HELD)  # its epoch was confirmed just before this
    frozen_at = time.monotonic()

    successor = depose()
    graphs = JobGraphStore(successor.session, blobs)
    with _collector(ContentStore(blobs), graphs, successor).pinned([sha]):
        assert contents.exists(sha)
        graphs.put(successor.fence, _graph_naming("job-c", sha, size))
    # A frozen process's session expires only a session timeout after its last message, so
    # a new leader exists only once the freeze outlasted the window.
    wait_until(lambda: time.monotonic() - frozen_at > window, 5, message="freeze outlasts window")
    contents.release.set()

    assert _outcome(round_) == []
    assert _readable(contents, sha, tmp_path)


# ---------------------------------------------------------------- cost: what changed


class CountingGraphs(JobGraphStore):
    """Counts the job graph blobs read (each holds an artifact of up to 64 MB)."""

    def __init__(self, session: Session, blobs: BlobStore) -> None:
        super().__init__(session, blobs)
        self.graphs_read = 0

    def graph_at(self, job_id: str, pointer: JobGraphPointer) -> JobGraph:
        self.graphs_read += 1
        return super().graph_at(job_id, pointer)


def test_a_round_reads_only_the_job_graphs_stored_since_the_last_round(
    leader: Contender, blobs: BlobStore
) -> None:
    contents = ContentStore(blobs)
    graphs = CountingGraphs(leader.session, blobs)
    collector = _collector(contents, graphs, leader)
    named = [_stored_file(contents) for _ in range(3)]
    for index, (sha, size) in enumerate(named[:2]):
        graphs.put(leader.fence, _graph_naming(f"job-{index}", sha, size))

    assert collector.collect() == [named[2][0]]
    assert graphs.graphs_read == 2
    assert collector.collect() == []
    assert graphs.graphs_read == 2  # nothing changed: no graph read again

    graphs.remove(leader.fence, "job-0")
    again, again_size = _stored_file(contents)
    graphs.put(leader.fence, _graph_naming("job-0", again, again_size))  # same id, new graph
    assert collector.collect() == [named[0][0]]
    assert graphs.graphs_read == 3
    assert contents.exists(again)


def test_the_orphan_sweep_given_the_collectors_keys_confirms_each_candidate_before_deleting(
    leader: Contender, blobs: BlobStore
) -> None:
    graphs = JobGraphStore(leader.session, blobs)
    collector = _collector(ContentStore(blobs), graphs, leader)
    graphs.put(leader.fence, make_graph("job-seen"))
    collector.collect()
    graphs.put(leader.fence, make_graph("job-new"))  # after the round: not in its keys
    orphan = blobs.put("jobgraphs/job-gone/0-orphan", b"{}").key
    known = collector.known_graph_blobs()
    assert len(known) == 1

    assert graphs.collect_garbage(min_age=0, known=known) == [orphan]
    assert sorted(r.job_id for r in graphs.recover_all() if r.graph is not None) == [
        "job-new",
        "job-seen",
    ]


def test_a_pointer_write_of_unknown_outcome_is_reported_changed_round_after_round(
    leader: Contender, blobs: BlobStore, zk_quorum: str, zk_root: str
) -> None:
    graphs = JobGraphStore(leader.session, blobs)
    graphs.put(leader.fence, make_graph("job-sure"))
    assert graphs.take_changed() == {"job-sure"}
    assert graphs.take_changed() == set()
    gone = Session(zk_quorum, zk_root, name="jm-gone").start()
    gone.close()  # its writes are refused unsent: the store cannot tell them from lost ones
    cut_off = dataclasses.replace(leader.fence, client=gone.client)

    with pytest.raises(StewardError):
        graphs.put(cut_off, make_graph("job-unsure"))

    assert graphs.take_changed() == {"job-unsure"}
    assert graphs.take_changed() == {"job-unsure"}  # read again until it has surely settled
