"""The leader's side of the TaskManager heartbeat protocol, driven by a pretend TaskManager.

The test registers ``taskmanagers/<id>`` itself and posts :class:`Heartbeat` documents to the
real leader: start commands carry the leader's epoch; a finished attempt's outcome is
acknowledged once recorded and the job is cleaned up; a failure is restarted by the job's
strategy; a TaskManager that leaves loses its attempt, which is redeployed elsewhere after the
replacement grace; a new leader adopts an attempt whose lease it finds (rule 8).
"""

from __future__ import annotations

import contextlib
import threading
import time

import httpx
import pytest
from adoption_harness import running_behind_lease
from jobmanager_harness import (
    HEARTBEAT_INTERVAL,
    REPLACEMENT_GRACE,
    SETTLE,
    JobManagerCluster,
    PretendTaskManager,
    dispatcher_of,
    report,
)

from steward.store.blob import BlobRef, BlobStore
from steward.wire.heartbeat import (
    HEARTBEAT_PATH,
    AttemptReport,
    CancelAttempt,
    Heartbeat,
    Rejection,
    ReportedCheckpoint,
    StartAttempt,
)
from steward.wire.record_format import decode_pointer
from steward.wire.records import ErrorInfo, JobResultEntry, JobResultIndex
from steward.wire.runner_protocol import CheckpointEvent, FailedEvent, FinishedEvent
from steward.wire.states import AttemptPhase
from support import wait_until

pytestmark = pytest.mark.zookeeper

RUNNING = AttemptPhase.RUNNING
ENDED = AttemptPhase.ENDED


def test_a_scheduled_job_runs_finishes_and_is_cleaned_up(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    epoch = dispatcher_of(leader).epoch
    cluster.submitted(leader, "job-ok")
    cluster.wait_state(leader, "job-ok", "SCHEDULED")
    tm = PretendTaskManager(cluster, "tm-1", slots=2).register()

    start, reply = tm.wait_command(leader, StartAttempt, "job-ok")
    assert (start.attempt, start.epoch, reply.epoch, reply.leader) == (1, epoch, epoch, "jm-1")
    assert not start.is_recovery
    pointer = decode_pointer(cluster.data(cluster.layout.jobgraph("job-ok")) or b"", "job-ok")
    assert (pointer.blob, pointer.sha256) == (start.job_graph_blob, start.job_graph_sha256)
    assert start.checkpoint_dir.endswith("/pipelines/job-ok")
    view = cluster.job(leader, "job-ok")
    assert view["attempts"][0]["taskmanager"] == "tm-1"
    assert view["attempts"][0]["state"] == "DEPLOYING"
    assert view["attempts"][0]["epoch"] == epoch
    tms = cluster.get(leader, "/v1/cluster").json()["taskmanagers"]
    assert [(t["id"], t["slots"], t["free_slots"]) for t in tms] == [("tm-1", 2, 1)]

    reply = tm.heartbeat(leader, report(start, RUNNING))
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-ok", 1, False)]
    running = cluster.wait_state(leader, "job-ok", "RUNNING")
    assert running["attempts"][0]["state"] == "RUNNING"
    assert running["attempts"][0]["started_at"] == 1_700_000_000.0
    # The standby-readable status record says RUNNING too.
    standby = cluster.start("jm-2")
    assert cluster.wait_state(standby, "job-ok", "RUNNING")["served_by"] == "jm-2"

    outcome = FinishedEvent(value={"rows": 42, "tables": ["a", "b"]})
    reply = tm.heartbeat(leader, report(start, ENDED, outcome))
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-ok", 1, True)]
    finished = cluster.wait_state(leader, "job-ok", "FINISHED")
    assert finished["result"]["value"] == {"rows": 42, "tables": ["a", "b"]}
    result = cluster.wait_result_clean(leader, "job-ok")
    assert result["state"] == "FINISHED"
    assert result["value"] == {"rows": 42, "tables": ["a", "b"]}
    assert not cluster.exists(cluster.layout.jobgraph("job-ok"))
    assert not cluster.exists(cluster.layout.job_status("job-ok"))
    assert not cluster.exists(cluster.layout.job("job-ok"))
    # Cleanup removed the job's blobs; only its result's body is left, beside its index.
    left = [p for p in cluster.blob_files() if "job-ok" in str(p)]
    assert [p.parent for p in left] == [cluster.storage / "results" / "job-ok"]
    entry = cluster.data(cluster.layout.result("job-ok"))
    assert entry is not None
    index = JobResultIndex.from_json(entry)
    body = BlobStore(cluster.storage.as_uri()).get(
        BlobRef(f"results/job-ok/{index.sha256}", index.sha256)
    )
    assert JobResultEntry.from_json(body).epoch == epoch
    # The finished job still shows where and how it ran (from its result), on any JobManager.
    for manager in (leader, standby):
        (attempt,) = cluster.job(manager, "job-ok")["attempts"]
        assert (attempt["number"], attempt["taskmanager"], attempt["state"]) == (
            1,
            "tm-1",
            "FINISHED",
        )
    # The slot is free again; a repeated report of the same outcome is acknowledged again.
    reply = tm.heartbeat(leader, report(start, ENDED, outcome))
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-ok", True)]
    assert reply.commands == []
    tms = cluster.get(leader, "/v1/cluster").json()["taskmanagers"]
    assert [(t["id"], t["free_slots"]) for t in tms] == [("tm-1", 2)]


def test_a_new_leader_keeps_the_restart_delay_of_a_failed_attempt(
    cluster: JobManagerCluster,
) -> None:
    """A failover during a restart delay does not cut it short (the record carries when the
    restart is due): a crash-looping job is not restarted faster because leadership moves."""
    delay = 6.0
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(
        leader,
        "job-looping",
        restart_strategy={"kind": "fixed-delay", "attempts": 3, "delay": delay},
    )
    first, _ = tm.wait_command(leader, StartAttempt, "job-looping")
    tm.heartbeat(leader, report(first, RUNNING))
    failure = FailedEvent(error=ErrorInfo(type="ValueError", message="bad row 17"))
    tm.heartbeat(leader, report(first, ENDED, failure))
    failed_at = time.monotonic()
    assert cluster.job(leader, "job-looping")["state"] == "RESTARTING"

    leader.stop()
    cluster.wait_leading(standby)
    restarting = cluster.job(standby, "job-looping")
    assert restarting["state"] == "RESTARTING"
    assert "restart delay" in restarting["reason"]
    second, _ = tm.wait_command(standby, StartAttempt, "job-looping", timeout=delay + SETTLE)
    assert time.monotonic() - failed_at >= delay - 0.5
    assert second.attempt == 2
    assert second.epoch > first.epoch


def test_a_failed_attempt_is_restarted_by_the_fixed_delay_strategy(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(
        leader,
        "job-flaky",
        # Long enough that the job is still RESTARTING when read after the reply on a loaded
        # machine (at 0.3 s, with a load of 10, attempt 2 had already been scheduled).
        restart_strategy={"kind": "fixed-delay", "attempts": 1, "delay": 2.0},
    )
    first, _ = tm.wait_command(leader, StartAttempt, "job-flaky")
    assert first.attempt == 1
    tm.heartbeat(leader, report(first, RUNNING))
    failure = FailedEvent(error=ErrorInfo(type="ValueError", message="bad row 17", traceback="tb"))
    failed_at = time.monotonic()  # before the leader hears of the failure: a lower bound
    reply = tm.heartbeat(leader, report(first, ENDED, failure))
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-flaky", 1, True)]
    restarting = cluster.job(leader, "job-flaky")
    assert restarting["state"] == "RESTARTING"
    assert restarting["failures"] == 1
    assert "bad row 17" in restarting["reason"]
    assert restarting["attempts"][0]["state"] == "FAILED"
    assert restarting["attempts"][0]["cause"]["message"] == "bad row 17"

    second, _ = tm.wait_command(leader, StartAttempt, "job-flaky")
    assert time.monotonic() - failed_at >= 2.0  # the strategy's delay
    assert second.attempt == 2
    assert second.epoch == first.epoch
    assert second.is_recovery
    tm.heartbeat(leader, report(second, RUNNING))
    tm.heartbeat(leader, report(second, ENDED, failure))
    failed = cluster.wait_state(leader, "job-flaky", "FAILED")
    assert failed["result"]["error"]["message"] == "bad row 17"
    result = cluster.wait_result_clean(leader, "job-flaky")
    ended = cluster.job(leader, "job-flaky")  # from the result now
    assert [(a["number"], a["state"]) for a in ended["attempts"]] == [(1, "FAILED"), (2, "FAILED")]
    assert ended["attempts"][0]["cause"]["message"] == "bad row 17"
    assert ended["attempts"][0]["cause"].get("traceback") is None  # the result's error has it
    assert result["state"] == "FAILED"


def test_a_lost_taskmanagers_attempt_is_redeployed_elsewhere_after_the_grace(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm1 = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(
        leader,
        "job-moving",
        restart_strategy={"kind": "fixed-delay", "attempts": 3, "delay": 0},
    )
    first, _ = tm1.wait_command(leader, StartAttempt, "job-moving")
    tm1.heartbeat(leader, report(first, RUNNING))
    cluster.wait_state(leader, "job-moving", "RUNNING")
    tm2 = PretendTaskManager(cluster, "tm-2").register()
    wait_until(
        lambda: len(cluster.get(leader, "/v1/cluster").json()["taskmanagers"]) == 2,
        SETTLE,
        message="the leader sees tm-2",
    )

    lost_at = time.monotonic()
    tm1.unregister()
    restarting = cluster.wait_state(leader, "job-moving", "RESTARTING")
    assert restarting["attempts"][0]["state"] == "LOST"
    assert restarting["attempts"][0]["cause"]["type"] == "steward.TaskManagerLost"
    assert restarting["failures"] == 1
    second, _ = tm2.wait_command(leader, StartAttempt, "job-moving")
    assert time.monotonic() - lost_at >= REPLACEMENT_GRACE - 0.05
    assert second.attempt == 2
    view = cluster.job(leader, "job-moving")
    assert [(a["number"], a["taskmanager"], a["state"]) for a in view["attempts"]] == [
        (1, "tm-1", "LOST"),
        (2, "tm-2", "DEPLOYING"),
    ]
    # The departed TaskManager's late report of its old attempt is told to stop it.
    stray = tm1.heartbeat(leader, report(first, RUNNING))
    assert any(
        isinstance(c, CancelAttempt) and (c.job_id, c.attempt) == ("job-moving", 1)
        for c in stray.commands
    )


def test_heartbeat_to_a_standby_is_refused_with_the_leader(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm = PretendTaskManager(cluster, "tm-1").register()
    response = tm.heartbeat_raw(standby)
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == "not_leader"
    assert body["leader"]["id"] == "jm-1"
    assert body["leader"]["address"] == leader.address
    bad = cluster.http.post(
        cluster.url(leader, "/internal/v1/heartbeat"),
        content=b"{}",
        headers={"authorization": f"Bearer {cluster.internal_credential}"},
    )
    assert bad.status_code == 400
    assert bad.json()["code"] == "bad_request"


def test_a_new_leader_adopts_an_attempt_whose_lease_it_finds(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm = PretendTaskManager(cluster, "tm-1").register()
    start = running_behind_lease(cluster, leader, tm, "job-adopted")

    leader.stop()
    cluster.wait_leading(standby)
    new_epoch = dispatcher_of(standby).epoch
    view = cluster.wait_state(standby, "job-adopted", "RUNNING")
    assert [(a["number"], a["state"], a["adopted_by"]) for a in view["attempts"]] == [
        (1, "RUNNING", [new_epoch])
    ]
    assert view["attempt_count"] == 1
    reply = tm.heartbeat(standby, report(start, RUNNING))
    assert reply.epoch == new_epoch
    assert reply.commands == []  # kept running: no new start, no cancel
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-adopted", 1, False)]
    tm.zk.delete(cluster.layout.execution("job-adopted"))
    reply = tm.heartbeat(standby, report(start, ENDED, FinishedEvent(value="done")))
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-adopted", True)]
    assert cluster.wait_result_clean(standby, "job-adopted")["value"] == "done"


def test_cancelling_a_running_attempt_sends_a_cancel_and_ends_canceled(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-stop")
    start, _ = tm.wait_command(leader, StartAttempt, "job-stop")
    tm.heartbeat(leader, report(start, RUNNING))
    response = cluster.post(leader, "/v1/jobs/job-stop/cancel")
    assert response.status_code == 202
    assert response.json()["state"] == "CANCELLING"
    cancel, _ = tm.wait_command(leader, CancelAttempt, "job-stop", report(start, RUNNING))
    assert (cancel.attempt, cancel.epoch) == (1, start.epoch)
    assert cluster.job(leader, "job-stop")["state"] == "CANCELLING"
    cancelled = FailedEvent(
        error=ErrorInfo(type="steward.wire.runner_protocol.AttemptCancelled", message="SIGTERM")
    )
    reply = tm.heartbeat(leader, report(start, ENDED, cancelled))
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-stop", True)]
    assert cluster.wait_result_clean(leader, "job-stop")["state"] == "CANCELED"


def test_cancel_then_a_refused_start_ends_the_job_canceled(cluster: JobManagerCluster) -> None:
    """BUG (jobmaster.py JobMaster.rejected): the start command was collected, the user
    cancels, and the TaskManager then refuses the attempt (here: the lease is still held).
    Nothing runs any more, yet the job is left SCHEDULED with the cancel pending, forever."""
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-refused")
    start, _ = tm.wait_command(leader, StartAttempt, "job-refused")
    response = cluster.post(leader, "/v1/jobs/job-refused/cancel")
    assert response.status_code == 202
    assert response.json()["state"] == "CANCELLING"
    reply = tm.heartbeat(
        leader, report(start, AttemptPhase.REJECTED, rejection=Rejection.LEASE_HELD)
    )
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-refused", True)]
    cluster.wait_state(leader, "job-refused", "CANCELED", timeout=3.0)


def test_a_cancel_requested_before_a_failover_is_carried_out_by_the_new_leader(
    cluster: JobManagerCluster,
) -> None:
    """BUG (jobmaster.py JobMaster.__init__ / dispatcher.py _recover_one): the status record
    says CANCELLING, but a new leader does not restore the cancel request: it adopts the
    attempt as RUNNING and never sends the cancel, so a job the user cancelled (202) runs on,
    and one whose attempt is gone would even be restarted."""
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm = PretendTaskManager(cluster, "tm-1").register()
    start = running_behind_lease(cluster, leader, tm, "job-unwanted")
    response = cluster.post(leader, "/v1/jobs/job-unwanted/cancel")
    assert response.status_code == 202
    assert response.json()["state"] == "CANCELLING"
    # The leader goes away before the TaskManager collected the cancel.
    leader.stop()
    cluster.wait_leading(standby)
    new_epoch = dispatcher_of(standby).epoch
    view = cluster.job(standby, "job-unwanted")
    assert view["state"] == "CANCELLING", (
        f"the cancelled job is {view['state']} ({view['reason']!r}) after the failover"
    )
    cancel, _ = tm.wait_command(standby, CancelAttempt, "job-unwanted", report(start, RUNNING))
    assert (cancel.attempt, cancel.epoch) == (1, new_epoch)


def test_an_outcome_reported_to_the_next_leader_is_recorded(cluster: JobManagerCluster) -> None:
    """The attempt ended (and released its lease) while there was no leader: the TaskManager
    reports the outcome to the next one, which waits for that report instead of restarting."""
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-late", restart_strategy={"kind": "none"})
    start, _ = tm.wait_command(leader, StartAttempt, "job-late")
    tm.heartbeat(leader, report(start, RUNNING))
    cluster.wait_state(leader, "job-late", "RUNNING")
    leader.stop()
    cluster.wait_leading(standby)
    waiting = cluster.wait_state(standby, "job-late", "RUNNING")
    assert "tm-1" in (waiting["reason"] or "")
    reply = tm.heartbeat(standby, report(start, ENDED, FinishedEvent(value=7)))
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-late", 1, True)]
    assert reply.commands == []
    result = cluster.wait_result_clean(standby, "job-late")
    assert (result["state"], result["value"]) == ("FINISHED", 7)


def test_checkpoints_and_progress_are_recorded_and_a_restart_resumes_from_the_latest(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1", **{"state.checkpoints.num-retained": 2})
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(
        leader, "job-stages", restart_strategy={"kind": "fixed-delay", "attempts": 1, "delay": 0}
    )
    first, _ = tm.wait_command(leader, StartAttempt, "job-stages")
    assert first.last_checkpoint is None
    assert first.completed_stages == {}
    checkpoints = [
        ReportedCheckpoint(
            seq=seq,
            event=CheckpointEvent(
                metadata={"stages": {f"s{n}": f"/ck/s{n}" for n in range(1, seq + 1)}}
            ),
        )
        for seq in (1, 2, 3)
    ]
    running = report(first, RUNNING).model_copy(
        update={"checkpoints": checkpoints, "progress": {"rows": 10}}
    )
    reply = tm.heartbeat(leader, running)
    assert [(a.job_id, a.checkpoint_seq) for a in reply.acks] == [("job-stages", 3)]
    # Sent again (the reply could have been lost): acknowledged, not recorded twice.
    reply = tm.heartbeat(leader, running)
    assert [(a.job_id, a.checkpoint_seq) for a in reply.acks] == [("job-stages", 3)]
    view = cluster.job(leader, "job-stages")
    assert view["progress"] == {"rows": 10}
    assert [(c["checkpoint_id"], c["attempt"]) for c in view["checkpoints"]] == [(2, 1), (3, 1)]
    assert view["checkpoints"][-1]["metadata"]["stages"] == {
        "s1": "/ck/s1",
        "s2": "/ck/s2",
        "s3": "/ck/s3",
    }

    failure = FailedEvent(error=ErrorInfo(type="OSError", message="disk full"))
    tm.heartbeat(leader, report(first, ENDED, failure))
    second, _ = tm.wait_command(leader, StartAttempt, "job-stages")
    assert second.attempt == 2
    assert second.last_checkpoint == checkpoints[-1].event.metadata
    assert second.completed_stages == {"s1": "/ck/s1", "s2": "/ck/s2", "s3": "/ck/s3"}
    tm.heartbeat(leader, report(second, ENDED, FinishedEvent(value=None)))
    cluster.wait_result_clean(leader, "job-stages")
    assert not cluster.exists(cluster.layout.job("job-stages"))
    # Cleanup removed the job's blobs; only its result's body is left, beside its index.
    left = [p for p in cluster.blob_files() if "job-stages" in str(p)]
    assert [p.parent for p in left] == [cluster.storage / "results" / "job-stages"]


def test_reports_of_unknown_attempts_are_cancelled_or_forgotten(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    epoch = dispatcher_of(leader).epoch
    running = AttemptReport(job_id="job-ghost", attempt=3, epoch=epoch, phase=RUNNING)
    reply = tm.heartbeat(leader, running)
    assert [(c.command, c.job_id, c.attempt) for c in reply.commands] == [
        ("cancel", "job-ghost", 3)
    ]
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-ghost", False)]
    # The cancel is sent once, not at every heartbeat.
    assert tm.heartbeat(leader, running).commands == []
    ended = running.model_copy(update={"phase": ENDED, "outcome": FinishedEvent(value=1)})
    reply = tm.heartbeat(leader, ended)
    assert [(a.job_id, a.attempt, a.outcome) for a in reply.acks] == [("job-ghost", 3, True)]
    assert not cluster.exists(cluster.layout.result("job-ghost"))

    # It occupied a slot while it ran: the free count shows it until it is gone. (The
    # leader lists a TaskManager once its membership watch saw it register, which may come
    # after these heartbeats: wait for the listing.)
    def free_slots() -> list[tuple[str, int]]:
        tms = cluster.get(leader, "/v1/cluster").json()["taskmanagers"]
        return [(t["id"], t["free_slots"]) for t in tms]

    wait_until(lambda: free_slots() == [("tm-1", 2)], SETTLE, message="tm-1 with 2 free slots")


def test_a_long_polling_heartbeat_gets_a_new_command_at_once(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    tm.heartbeat(leader)  # known to the leader
    beat = Heartbeat(taskmanager="tm-1", address=tm.address, slots=2, epoch=1, wait=20.0)
    replies: list[httpx.Response] = []

    def poll() -> None:
        with httpx.Client(timeout=30.0) as client:
            replies.append(
                client.post(
                    cluster.url(leader, HEARTBEAT_PATH),
                    content=beat.to_json(),
                    headers={
                        "content-type": "application/json",
                        "authorization": f"Bearer {cluster.internal_credential}",
                    },
                )
            )

    thread = threading.Thread(target=poll)
    started = time.monotonic()
    thread.start()
    cluster.submitted(leader, "job-soon")
    thread.join(25.0)
    assert replies, "the long poll did not return"
    assert time.monotonic() - started < 5.0
    commands = replies[0].json()["commands"]
    assert [(c["command"], c["job_id"]) for c in commands] == [("start", "job-soon")]


def test_many_long_polling_taskmanagers_do_not_starve_the_rest_api(
    cluster: JobManagerCluster,
) -> None:
    """BUG (api.py heartbeat -> _run_sync -> Dispatcher.heartbeat): a long poll blocks a worker
    of Starlette's thread pool (anyio's default limiter: 40 threads) for up to ``wait``
    seconds, and every sync endpoint (/healthz, /readyz, /v1/jobs, ...) needs one of the same
    workers. TaskManagers long-poll all the time (wait = heartbeat.interval), so with about 40
    of them the leader stops answering anything, health checks included."""
    leader = cluster.start_leader("jm-1")
    dispatcher = leader.dispatcher
    assert dispatcher is not None
    polls = 42  # more than the 40 workers of the thread pool
    hold = 3.0
    limits = httpx.Limits(max_connections=polls + 10)

    with httpx.Client(timeout=hold + 10.0, limits=limits) as pollers:

        def poll(n: int) -> None:
            beat = Heartbeat(
                taskmanager=f"tm-{n}", address=f"http://tm-{n}:1", slots=1, epoch=1, wait=hold
            )
            with contextlib.suppress(httpx.HTTPError):
                pollers.post(
                    cluster.url(leader, HEARTBEAT_PATH),
                    content=beat.to_json(),
                    headers={
                        "content-type": "application/json",
                        "authorization": f"Bearer {cluster.internal_credential}",
                    },
                )

        threads = [threading.Thread(target=poll, args=(n,), daemon=True) for n in range(polls)]
        for thread in threads:
            thread.start()
        # The first 40 polls are inside the leader (and holding a worker each).
        wait_until(
            lambda: sum(dispatcher.table.rm.get(f"tm-{n}") is not None for n in range(polls)) >= 40,
            SETTLE,
            message="40 long polls reached the leader",
        )
        with httpx.Client(timeout=hold + 10.0) as probe:
            started = time.monotonic()
            health = probe.get(cluster.url(leader, "/healthz"))
            took = time.monotonic() - started
        leader.stop()  # releases the remaining long polls at once
        for thread in threads:
            thread.join(hold + 10.0)
    assert health.status_code == 200
    assert took < 1.0, f"/healthz took {took:.2f}s while {polls} heartbeats long-polled"


def test_a_job_waits_for_enough_slots_with_the_reason_shown(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    small = PretendTaskManager(cluster, "tm-small", slots=2).register()
    cluster.submitted(leader, "job-wide", slots=3)
    view = wait_until(
        lambda: (
            ((v := cluster.job(leader, "job-wide"))["reason"] or "").endswith("registered: 2)")
            and v
        ),
        SETTLE,
        message="the shortage is shown",
    )
    assert view["state"] == "SCHEDULED"
    assert view["reason"] == "waiting for a TaskManager with 3 slot(s) (largest registered: 2)"
    assert view["failures"] == 0
    assert small.heartbeat(leader).commands == []
    big = PretendTaskManager(cluster, "tm-big", slots=4).register()
    start, _ = big.wait_command(leader, StartAttempt, "job-wide")
    assert start.attempt == 1
    tms = {
        t["id"]: t["free_slots"] for t in cluster.get(leader, "/v1/cluster").json()["taskmanagers"]
    }
    assert tms == {"tm-small": 2, "tm-big": 1}


def test_a_pass_refusing_a_wide_job_still_places_a_narrower_one_behind_it(
    cluster: JobManagerCluster,
) -> None:
    """A pass remembers the slot counts it found no room for (one search per count, not per
    waiting job): a narrower job behind a refused wide one is still placed, and the others
    say why they wait."""
    leader = cluster.start_leader("jm-1")
    for job_id, slots in (("job-wide", 3), ("job-narrow", 1), ("job-mid", 2)):
        cluster.submitted(leader, job_id, slots=slots)
    tm = PretendTaskManager(cluster, "tm-small", slots=2).register()
    start, _ = tm.wait_command(leader, StartAttempt, "job-narrow")
    assert start.attempt == 1
    expected = {
        "job-wide": "waiting for a TaskManager with 3 slot(s) (largest registered: 2)",
        "job-mid": "waiting for 2 free slot(s) on one TaskManager (1 registered)",
    }
    for job_id, reason in expected.items():
        wait_until(
            lambda job_id=job_id, reason=reason: cluster.job(leader, job_id)["reason"] == reason,
            SETTLE,
            message=f"{job_id} waits: {reason}",
        )
        assert cluster.job(leader, job_id)["state"] == "SCHEDULED"


def test_a_result_too_large_to_keep_fails_the_job_with_the_reason(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-big-result")
    start, _ = tm.wait_command(leader, StartAttempt, "job-big-result")
    huge = FinishedEvent(value="x" * (600 * 1024))
    reply = tm.heartbeat(leader, report(start, ENDED, huge))
    assert [(a.job_id, a.outcome) for a in reply.acks] == [("job-big-result", True)]
    result = cluster.wait_result_clean(leader, "job-big-result")
    assert result["state"] == "FAILED"
    assert result["value"] is None
    assert result["error"]["type"] == "steward.ResultTooLarge"


def test_cancel_before_the_start_is_collected_withdraws_it(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-early-cancel")
    wait_until(
        lambda: cluster.job(leader, "job-early-cancel")["attempts"],
        SETTLE,
        message="attempt 1 deployed (its start command queued)",
    )
    response = cluster.post(leader, "/v1/jobs/job-early-cancel/cancel")
    assert response.status_code == 202
    assert response.json()["state"] == "CANCELED"
    assert tm.heartbeat(leader).commands == []  # the start was withdrawn, nothing to cancel
    assert cluster.wait_result_clean(leader, "job-early-cancel")["state"] == "CANCELED"


def test_an_attempt_that_never_left_the_leader_spends_no_restart(
    cluster: JobManagerCluster,
) -> None:
    """BUG (dispatcher.py _taskmanager_lost -> JobMaster.lost): a TaskManager that leaves
    before it collected the start command never ran the attempt, yet the attempt is counted
    as a failure: with restart_strategy none the job is FAILED without ever having run. The
    leader knows (Deployment.collected_at is None); it should be handled like a rejection
    (rule 9: waiting must not spend restarts) and the job rescheduled."""
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-never-ran", restart_strategy={"kind": "none"})
    wait_until(
        lambda: cluster.job(leader, "job-never-ran")["attempts"],
        SETTLE,
        message="attempt 1 deployed to tm-1 (never collected)",
    )
    tm.unregister()
    wait_until(
        lambda: (
            cluster.job(leader, "job-never-ran")["reason"]
            == "waiting for a TaskManager to register"
            or cluster.job(leader, "job-never-ran")["state"] == "FAILED"
        ),
        SETTLE,
        message="the leader handled tm-1's departure",
    )
    view = cluster.job(leader, "job-never-ran")
    assert view["state"] == "SCHEDULED", (
        f"a job whose attempt never reached a TaskManager is {view['state']}: {view['reason']!r}"
    )
    assert view["failures"] == 0


def test_a_start_command_whose_reply_was_lost_is_sent_again_without_spending_a_restart(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    tm = PretendTaskManager(cluster, "tm-1").register()
    cluster.submitted(leader, "job-lost-reply", restart_strategy={"kind": "none"})
    first, _ = tm.wait_command(leader, StartAttempt, "job-lost-reply")
    collected = time.monotonic()
    # The TaskManager never saw that reply: its heartbeats do not mention the attempt. After
    # 2 heartbeat intervals + 5 s the leader takes it as refused, and deploys it again.
    again, _ = tm.wait_command(leader, StartAttempt, "job-lost-reply", timeout=20.0)
    assert time.monotonic() - collected >= 2 * HEARTBEAT_INTERVAL + 5.0 - 0.1
    assert again.attempt == first.attempt == 1
    view = cluster.job(leader, "job-lost-reply")
    assert view["failures"] == 0
    assert view["state"] == "SCHEDULED"
    assert [a["number"] for a in view["attempts"]] == [1]
