"""Job notifications end to end: real JobManagers and a TaskManager, a webhook receiver the
test runs, and a leader SIGKILLed between a job's end and its event's delivery.

The pipelines return or raise at once (no Spark). Each event's id is
``<job-id>:<attempt>:<event>``; the receiver counts what it accepted per id.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from webhook_receiver import FAIL_FIRST, WebhookReceiver

from e2e.incidents.zkview import ZkView
from steward.errors import StewardError
from steward.testing.processes import ProcessCluster
from steward.wire.jobs import FixedDelayRestart, NoRestart
from steward.wire.notifications import verify
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper

SECRET = b"webhook-secret-of-the-test"

PIPELINES = {
    "ok.py": "def main(ctx):\n    return {'ok': True}\n",
    "bad.py": "def main(ctx):\n    raise RuntimeError('bad input')\n",
    "flaky.py": (
        "def main(ctx):\n"
        "    if ctx.attempt == 1:\n"
        "        raise RuntimeError('first attempt fails')\n"
        "    return {'attempt': ctx.attempt}\n"
    ),
    "slow.py": "import time\n\ndef main(ctx):\n    time.sleep(120)\n",
}


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as server:
        yield server


@pytest.fixture
def cluster(
    tmp_path: Path, zk_quorum: str, cluster_id: str, receiver: WebhookReceiver
) -> Iterator[ProcessCluster]:
    secret = tmp_path / "webhook.secret"
    secret.write_bytes(SECRET + b"\n")
    extra = {
        "notifications.webhooks": f"{receiver.url}/cluster",
        "notifications.secret-file": str(secret),
        "notifications.allowed-urls": f"{receiver.url}/job",
    }
    with ProcessCluster(tmp_path, zk_quorum, cluster_id, extra=extra) as cluster:
        yield cluster


@pytest.fixture
def outbox(zk_quorum: str, cluster_id: str, cluster: ProcessCluster) -> Iterator[ZkView]:
    options = cluster.zookeeper_access.kazoo_options()
    with ZkView(zk_quorum, f"{ZK_TEST_ROOT}/{cluster_id}", options) as view:
        yield view


def _pipelines(folder: Path) -> dict[str, Path]:
    for name, source in PIPELINES.items():
        (folder / name).write_text(source)
    return {name.removesuffix(".py"): folder / name for name in PIPELINES}


def _waiting(outbox: ZkView) -> list[str]:
    return outbox.children(outbox.layout.notifications)


def test_job_events_reach_every_webhook_signed_retried_under_a_stable_id(
    cluster: ProcessCluster, receiver: WebhookReceiver, outbox: ZkView, tmp_path: Path
) -> None:
    receiver.answer = FAIL_FIRST  # every event's first call fails: each must be retried
    cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    files = _pipelines(tmp_path)
    with cluster.client(timeout=60) as client:
        client.submit(files["ok"], job_id="ok")
        client.submit(
            files["bad"],
            job_id="bad",
            restart=NoRestart(),
            notify=[f"{receiver.url}/job?token=abc:FAILED"],
        )
        client.submit(files["flaky"], job_id="flaky", restart=FixedDelayRestart(delay=0))
        client.submit(files["slow"], job_id="slow", timeout=2)
        client.submit(files["slow"], job_id="dropped")
        client.cancel("dropped")  # by its owner: CANCELED
        # A job's own webhook outside notifications.allowed-urls is refused, naming the field
        with pytest.raises(StewardError, match=r"spec\.notifications") as refused:
            client.submit(files["ok"], job_id="elsewhere", notify=["http://192.0.2.1/x?t=s3"])
        assert "t=s3" not in str(refused.value)
        for job_id in ("ok", "bad", "flaky", "slow", "dropped"):
            client.wait(job_id, timeout=60)
        # 0 if it ended before a slot was free for it, else 1
        slow_attempts = client.job("slow").attempt_count
        dropped_attempts = client.job("dropped").attempt_count
    expected = {
        "ok:1:FINISHED",
        "bad:1:FAILED",
        "flaky:1:RESTARTED",
        "flaky:2:FINISHED",
        f"slow:{slow_attempts}:TIMEOUT",  # cancelled at its timeout: not also CANCELED
        f"dropped:{dropped_attempts}:CANCELED",
    }
    wait_until(
        lambda: (
            set(receiver.accepted("/cluster")) == expected
            and set(receiver.accepted("/job?token=abc")) == {"bad:1:FAILED"}
        ),
        60,
        message="every event delivered",
    )
    wait_until(lambda: not _waiting(outbox), 30, message="the outbox emptied")
    # Each was refused once, then sent again under the same id with the same body
    for event_id in expected:
        calls = [c for c in receiver.calls_of(event_id) if c.path == "/cluster"]
        assert [c.status for c in calls] == [500, 200], event_id
        assert calls[0].body == calls[1].body
    assert receiver.all_signed_with(SECRET)
    first = receiver.calls[0]
    assert not verify(SECRET, first.body.replace(b"1", b"2"), first.signature)
    bad = next(c for c in receiver.calls_of("bad:1:FAILED") if c.accepted).event
    assert (bad["job_id"], bad["event"], bad["state"], bad["attempt"]) == (
        "bad",
        "FAILED",
        "FAILED",
        1,
    )
    assert "bad input" in bad["error"]["message"]
    restarted = receiver.calls_of("flaky:1:RESTARTED")[-1].event
    assert restarted["state"] == "RESTARTING"
    assert "first attempt fails" in restarted["error"]["message"]


def test_an_event_not_delivered_when_the_leader_dies_is_delivered_once_by_the_next(
    cluster: ProcessCluster, receiver: WebhookReceiver, outbox: ZkView, tmp_path: Path
) -> None:
    receiver.answer = 503  # the receiver is down: nothing is delivered by the first leader
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    cluster.wait_all_ready(30)
    files = _pipelines(tmp_path)
    expected = {"ok:1:FINISHED", "bad:1:FAILED"}
    with cluster.client(timeout=60) as client:
        client.submit(files["ok"], job_id="ok")
        client.submit(files["bad"], job_id="bad", restart=NoRestart())
        for job_id in ("ok", "bad"):
            client.wait(job_id, timeout=60)
        # The leader tried each event (so the jobs had ended) and the receiver refused it
        wait_until(lambda: set(receiver.tried()) == expected, 30, message="events tried")
        assert not receiver.accepted()
        leader = cluster.leader()
        assert leader is not None
        leader.signal(signal.SIGKILL)
        receiver.answer = 200
        new_leader = cluster.wait_ready(taskmanagers=1, timeout=60)
        assert new_leader.id != leader.id
        # The new leader delivers each event from the outbox, then deletes it
        wait_until(lambda: set(receiver.accepted()) == expected, 60, message="delivered")
        wait_until(lambda: not _waiting(outbox), 30, message="the outbox emptied")
    assert receiver.accepted() == dict.fromkeys(expected, 1)
    assert receiver.all_signed_with(SECRET)
