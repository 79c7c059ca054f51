"""A submission's ZooKeeper writes: one fenced transaction, shared with concurrent ones.

The job graph pointer (what makes the job recoverable) and the job's first status record
(what standbys and the next leader read) are created together, before the 201, in a fenced
multi that concurrent submissions share (:mod:`steward.store.group_commit`). A transaction's
creates all carry its zxid, so equal ``czxid`` means one transaction.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from jobmanager_harness import JobManagerCluster

from steward.wire.record_format import decode_status

pytestmark = pytest.mark.zookeeper


def _czxid(cluster: JobManagerCluster, path: str) -> int:
    _data, stat = cluster.zk.get(path)
    return int(stat.czxid)


def test_a_submitted_job_has_its_pointer_and_first_record_from_one_transaction(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")

    cluster.submitted(leader, "job-one")

    layout = cluster.layout
    pointer = _czxid(cluster, layout.jobgraph("job-one"))
    assert _czxid(cluster, layout.job_status("job-one")) == pointer
    assert _czxid(cluster, layout.job("job-one")) == pointer
    # No empty checkpoints container: it comes with the job's first checkpoint (issue 22).
    assert not cluster.exists(layout.checkpoints("job-one"))
    data = cluster.data(layout.job_status("job-one"))
    assert data is not None
    assert decode_status(data, "job-one").state.value == "SCHEDULED"


def test_a_job_whose_nodes_outlived_an_earlier_job_of_its_id_is_stored_with_its_record(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    # Left by an earlier job of this id whose cleanup was cut short (no pointer, no result).
    cluster.zk.create(cluster.layout.job("job-again"), b"", makepath=True)

    view = cluster.submitted(leader, "job-again")

    assert view["state"] == "SCHEDULED"
    assert cluster.exists(cluster.layout.jobgraph("job-again"))
    data = cluster.data(cluster.layout.job_status("job-again"))
    assert data is not None
    assert decode_status(data, "job-again").job_id == "job-again"
    graphs = [p for p in cluster.blob_files() if "jobgraphs" in p.parts]
    assert len(graphs) == 1, "the first try's blob was discarded"


def test_concurrent_submissions_are_each_stored_once_with_their_record(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    answers: dict[str, httpx.Response] = {}

    def submit(job_id: str) -> None:
        answers[job_id] = cluster.submit(leader, job_id)

    ids = [f"job-{n:02d}" for n in range(16)]
    threads = [threading.Thread(target=submit, args=(job_id,)) for job_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert {job_id: answers[job_id].status_code for job_id in ids} == dict.fromkeys(ids, 201)
    assert cluster.children(cluster.layout.jobgraphs) == ids
    for job_id in ids:
        data = cluster.data(cluster.layout.job_status(job_id))
        assert data is not None
        assert decode_status(data, job_id).job_id == job_id
