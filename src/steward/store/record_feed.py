"""Who hears of the job records the leader has just written, or read: its own event stream and
job index (:mod:`steward.jobmanager.events.source`), which need not then read them back through
ZooKeeper watches.

A store calls its feed only once ZooKeeper acknowledged the write, from the writer's thread
(the leader's writes of one job are made under its job table's lock, so in order). A write
that failed or whose outcome is unknown is not fed: it is written again, or the session is
lost and every consumer re-reads. What the stores read is fed too: a new leader's recovery
reads every live job's record and which jobs have a result, and that is what its event source
needs to catch up with the previous leader's last writes, with no read of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from steward.wire.records import JobResultEntry, JobStatusRecord


class RecordFeed(Protocol):
    def wrote(self, records: Sequence[JobStatusRecord]) -> None:
        """These status records are stored (created or overwritten)."""

    def ended(self, entry: JobResultEntry) -> None:
        """This result is stored (the job is globally terminal)."""

    def removed(self, job_id: str) -> None:
        """The job's status record is deleted (its cleanup)."""

    def read(self, records: Sequence[JobStatusRecord]) -> None:
        """These status records were read (as they are now, or were a moment ago)."""

    def have_results(self, job_ids: Collection[str]) -> None:
        """These jobs were found to have a result."""

    def recovered(self) -> None:
        """The term's recovery is done (it has read every live job's record)."""


class NoFeed:
    """The feed of a store nobody listens to (standbys, tools, tests)."""

    def wrote(self, records: Sequence[JobStatusRecord]) -> None:
        pass

    def ended(self, entry: JobResultEntry) -> None:
        pass

    def removed(self, job_id: str) -> None:
        pass

    def read(self, records: Sequence[JobStatusRecord]) -> None:
        pass

    def have_results(self, job_ids: Collection[str]) -> None:
        pass

    def recovered(self) -> None:
        pass


NO_FEED = NoFeed()
