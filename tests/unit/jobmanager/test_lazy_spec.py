"""A JobMaster adopted from its status record alone reads its spec only when a decision needs it.

Issue 22: a new leader adopts a running attempt from its lease and record (``LazySpec``), and
the job's graph is read when the attempt ends or is lost (its restart strategy and webhooks are
in the spec). A graph that turns out missing or corrupt then fails the job with the cause
recovery gave such a job (rule 6); a store that does not answer changes nothing.
"""

from __future__ import annotations

import pytest

from steward.errors import BlobMissingError, BlobStoreError, CorruptStateError, StewardError
from steward.jobmanager.leader.job_facts import JobFacts, LazySpec
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.jobmanager.leader.queues import QueuePass
from steward.wire.jobs import FixedDelayRestart, JobGraphPointer, JobSpec
from steward.wire.records import AttemptRecord, ErrorInfo, JobStatusRecord
from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import AttemptState, JobState, TerminalState

EPOCH = 4
POINTER = JobGraphPointer(blob="jobgraphs/job-1/abc", sha256="0" * 64, epoch=1)
SPEC = JobSpec(
    job_id="job-1",
    name="nightly",
    slots=2,
    queue="default",
    restart_strategy=FixedDelayRestart(attempts=3, delay=0.0),
)
BOOM = ErrorInfo(type="ValueError", message="boom")


def running_record() -> JobStatusRecord:
    """What the earlier leader persisted for the job while attempt 1 ran."""
    master = JobMaster(SPEC, POINTER, submitted_at=100.0)
    master.adopt("tm-1", 1, 1, 1)
    return master.record(EPOCH - 1)


class Reader:
    """The graph's reader: counts its reads, and fails as told."""

    def __init__(self, error: StewardError | None = None) -> None:
        self.error = error
        self.reads = 0

    def __call__(self) -> JobSpec:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return SPEC


def adopted(reader: Reader) -> JobMaster:
    record = running_record()
    facts = JobFacts.of_record(record)
    assert facts is not None
    master = JobMaster(LazySpec(facts, record.env, reader), POINTER, 100.0, record=record)
    master.adopt("tm-1", 1, 1, EPOCH)
    return master


def test_adoption_and_its_record_need_no_read_of_the_graph() -> None:
    reader = Reader()
    master = adopted(reader)

    record = master.record(EPOCH)

    assert reader.reads == 0
    assert (master.state, master.facts.slots, master.job_id) == (JobState.RUNNING, 2, "job-1")
    assert (record.slots, record.queue, record.name) == (2, "default", "nightly")


def test_a_record_from_before_the_facts_were_kept_gives_none() -> None:
    record = running_record().model_copy(update={"slots": None, "queue": None})

    assert JobFacts.of_record(record) is None


def test_a_failed_attempt_reads_the_graph_once_and_restarts_by_its_strategy() -> None:
    reader = Reader()
    master = adopted(reader)

    terminal = master.ended(1, FailedEvent(error=BOOM), now=10.0)
    master.spec  # noqa: B018 (a second use reads nothing more)

    assert terminal is None
    assert master.state is JobState.RESTARTING
    assert reader.reads == 1


@pytest.mark.parametrize(
    "error",
    [BlobMissingError("blob gone"), CorruptStateError("job graph: sha256 mismatch")],
    ids=["missing", "corrupt"],
)
def test_an_unusable_graph_fails_the_job_when_its_attempt_ends(error: StewardError) -> None:
    master = adopted(Reader(error))

    terminal = master.ended(1, FailedEvent(error=BOOM), now=10.0)

    assert terminal is not None and terminal.state is TerminalState.FAILED
    assert terminal.error is not None and terminal.error.type == "steward.RecoveryError"
    assert "could not be recovered" in terminal.error.message
    assert master.attempts[-1].state is AttemptState.FAILED
    assert master.broken == terminal.error


def test_an_unusable_graph_fails_the_job_when_its_attempt_is_lost() -> None:
    master = adopted(Reader(BlobMissingError("blob gone")))
    lost = ErrorInfo(type="steward.TaskManagerLost", message="gone")

    terminal = master.lost(1, lost, now=10.0, grace=0.0)

    assert terminal is not None and terminal.state is TerminalState.FAILED
    assert master.attempts[-1].state is AttemptState.LOST


def test_a_finished_attempt_finishes_the_job_whatever_its_graph() -> None:
    master = adopted(Reader(BlobMissingError("blob gone")))

    terminal = master.ended(1, FinishedEvent(value={"rows": 3}), now=10.0)

    assert terminal is not None and terminal.state is TerminalState.FINISHED
    assert terminal.value == {"rows": 3}


def test_a_store_that_does_not_answer_changes_nothing() -> None:
    reader = Reader(BlobStoreError("storage unreachable"))
    master = adopted(reader)
    before: list[AttemptRecord] = list(master.attempts)

    with pytest.raises(BlobStoreError):
        master.ended(1, FailedEvent(error=BOOM), now=10.0)

    assert (master.state, master.attempts, master.broken) == (JobState.RUNNING, before, None)
    reader.error = None
    assert master.ended(1, FailedEvent(error=BOOM), now=10.0) is None  # asked again: read
    assert master.state is JobState.RESTARTING


def waiting(reader: Reader, spec: JobSpec = SPEC) -> JobMaster:
    """A job recovered from the record of a job waiting for a slot (no lease)."""
    first = JobMaster(spec, POINTER, submitted_at=100.0)
    first.hookless = True
    first.initializing()
    first.initialized(FinishedEvent())
    record = first.record(EPOCH - 1)
    facts = JobFacts.of_record(record)
    assert facts is not None
    return JobMaster(LazySpec(facts, record.env, reader), POINTER, 100.0, record=record)


def test_a_waiting_job_is_queued_from_its_record_without_reading_its_graph() -> None:
    spec = SPEC.model_copy(update={"max_concurrent": 2, "priority": 7})
    reader = Reader(BlobStoreError("must not be read"))
    master = waiting(reader, spec)
    plan = QueuePass((), (), capacity=4)

    plan.wants(master)
    plan.ready()

    assert reader.reads == 0
    assert master.hookless is True
    assert (master.facts.max_concurrent, master.facts.priority) == (2, 7)
    assert plan.concurrency.held(master) is None
    assert plan.pop(plan.queues["default"]) is master


def test_a_read_made_outside_the_lock_is_taken_once() -> None:
    reader = Reader()
    master = waiting(reader)
    read = master.spec_at_hand.pending()
    assert read is not None

    assert master.spec_at_hand.take(read()) is None
    assert master.spec_at_hand.pending() is None
    assert master.spec_at_hand.take(CorruptStateError("late and wrong")) is None
    assert (reader.reads, master.spec.slots, master.broken) == (1, 2, None)


def test_a_corrupt_graph_read_outside_the_lock_gives_recoverys_verdict() -> None:
    master = waiting(Reader())

    verdict = master.spec_at_hand.take(CorruptStateError("bad header"))

    assert verdict is not None and verdict.type == "steward.RecoveryError"
    assert "could not be recovered" in verdict.message
    assert master.spec_at_hand.pending() is None


def test_a_store_away_outside_the_lock_concludes_nothing() -> None:
    master = waiting(Reader())

    with pytest.raises(BlobStoreError):
        master.spec_at_hand.take(BlobStoreError("storage unmounted"))

    assert master.spec_at_hand.pending() is not None
    assert master.broken is None
