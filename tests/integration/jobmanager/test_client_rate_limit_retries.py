"""The client waits out a 429 by itself (issue 27 part 4): a real JobManager, its submission
limit set low.

A submission is idempotent by its body, so ``steward.Client`` sends it again after the
server's Retry-After (jittered), within its own timeout; a request that is not idempotent (a
Livy batch: each one is a new batch) gets its 429 as it came, and a wait that would pass the
client's timeout is not waited. The first fails without the retry (the submission past the
share is a 429).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from jobmanager_harness import PIPELINE, JobManagerCluster, submission
from test_rate_limits import limited_total

from steward.client import Client
from steward.client.failover import Failover
from steward.errors import ApiError
from steward.jobmanager.manager import JobManager
from steward.testing.credentials import kit_admin_token
from steward.wire.patterns import MAX_BATCH
from support import wait_until

pytestmark = pytest.mark.zookeeper


def _limits(window: str) -> dict[str, object]:
    return {
        "security.rate-limits.submissions.per-team": MAX_BATCH,  # the least allowed
        "security.rate-limits.submissions.window": window,
    }


def _spend_the_share(
    cluster: JobManagerCluster, leader: JobManager, prefix: str, window: float
) -> None:
    """Spend the team's share early in one of the limiter's windows. Its windows are aligned to
    the clock (multiples of their length), and a share spent in one window weighs a little
    less the moment the next begins: a request just past that boundary would pass (the first
    test then saw no 429 at all when the batch and the client's submission straddled it)."""
    margin = min(window / 2, 30.0)
    wait_until(
        lambda: window - time.time() % window > margin,
        margin + 1,
        message="early enough in a window of the limiter",
    )
    batch = {"submissions": [submission(f"{prefix}-{n}") for n in range(MAX_BATCH)]}
    assert cluster.post(leader, "/v1/jobs/batch", batch).status_code == 200


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "limited.py"
    path.write_bytes(PIPELINE)
    return path


def test_submissions_past_the_limit_wait_their_retry_after_and_are_stored(
    cluster: JobManagerCluster, pipeline: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A window long enough that spending the share (one batch, seconds on a loaded machine)
    # ends well inside it, short enough that the client's wait stays short.
    leader = cluster.start_leader(**_limits("15s"))
    caplog.set_level(logging.INFO, logger="steward.client.failover")
    _spend_the_share(cluster, leader, "share", 15)
    with Client([leader.address], timeout=60) as client:
        view = client.submit(pipeline, job_id="limited")
    assert view.job_id == "limited"
    assert limited_total(cluster, leader, "submissions") >= 1  # it was refused, and waited
    assert "rate limited, retrying method=POST path=/v1/jobs" in caplog.text


def test_a_wait_past_the_clients_timeout_returns_the_429_at_once(
    cluster: JobManagerCluster, pipeline: Path
) -> None:
    leader = cluster.start_leader(**_limits("10m"))
    started = time.monotonic()
    _spend_the_share(cluster, leader, "share", 600)
    with Client([leader.address], timeout=5) as client, pytest.raises(ApiError) as refused:
        client.submit(pipeline, job_id="past-the-limit")
    assert refused.value.status == 429
    assert time.monotonic() - started < 60  # not the window's ten minutes


def test_a_request_that_is_not_idempotent_gets_its_429_unretried(
    cluster: JobManagerCluster, pipeline: Path, caplog: pytest.LogCaptureFixture
) -> None:
    leader = cluster.start_leader(**_limits("10m"))
    caplog.set_level(logging.INFO, logger="steward.client.failover")
    _spend_the_share(cluster, leader, "share", 600)
    failover = Failover([leader.address], timeout=30, token=kit_admin_token())
    try:
        # A Livy batch: the same body sent again would be a second batch.
        answer, _maybe = failover.send("POST", "/batches", {"file": str(pipeline)})
    finally:
        failover.close()
    assert answer.status_code == 429
    assert "rate limited, retrying" not in caplog.text
