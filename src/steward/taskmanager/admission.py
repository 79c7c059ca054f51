"""Admission: a leader's reply applied at once, on the heartbeat's thread.

A reply from a leader older than the newest epoch seen is ignored whole (a deposed leader's).
Otherwise its acks go first (they may free an attempt and its slot), then its commands:

- a start is refused while this TaskManager fences itself
  (:class:`~steward.taskmanager.self_fencing.Fence`) or when its epoch is older than the
  newest seen; ignored when the attempt is known or recently ended (a repeated command must
  never run it twice); refused ``no-slot`` when the slots are taken. The last two are checked
  under the attempts' lock (:meth:`~steward.taskmanager.reporting.Attempts.admit`). An admitted
  attempt goes to a launch worker (:mod:`~steward.taskmanager.launches`): the heartbeat never
  waits for the storage or a process;
- a cancel of a known attempt that has not ended is noted (a starting attempt then ends
  cancelled before its runner runs) and passed on to its runner, which stops within the grace.
"""

from __future__ import annotations

import logging

from steward.store.leases import ExecutionLeases
from steward.taskmanager.launches import Launches
from steward.taskmanager.reporting import Attempts
from steward.taskmanager.self_fencing import Fence
from steward.wire.heartbeat import CancelAttempt, HeartbeatReply, Rejection, StartAttempt

log = logging.getLogger(__name__)


class Admission:
    """Applies the leaders' replies to one TaskManager's attempts."""

    def __init__(
        self, *, attempts: Attempts, leases: ExecutionLeases, fence: Fence, launches: Launches
    ) -> None:
        self._attempts = attempts
        self._leases = leases
        self._fence = fence
        self._launches = launches

    def on_reply(self, reply: HeartbeatReply) -> None:
        """Apply a leader's reply: acks first (they may free an attempt), then commands."""
        if not self._leases.observe_epoch(reply.epoch):
            log.warning(
                "reply of a deposed leader ignored leader=%s epoch=%d", reply.leader, reply.epoch
            )
            return
        for ack in reply.acks:
            self._attempts.acknowledge(ack)
        for command in reply.commands:
            if isinstance(command, StartAttempt):
                self.start(command)
            else:
                self.cancel(command)

    def start(self, command: StartAttempt) -> None:
        """Admit ``command`` (or reject it) and hand it to a launch worker."""
        refusal, message = None, ""
        if self._fence.fenced:
            refusal, message = Rejection.FENCED, "the TaskManager is fencing itself"
        elif not self._leases.observe_epoch(command.epoch):
            refusal = Rejection.STALE_EPOCH
            message = f"epoch {command.epoch} is older than epoch {self._leases.newest_epoch}"
        attempt = self._attempts.admit(command, refusal, message)
        if attempt is None:
            log.info("repeated start ignored job=%s attempt=%d", command.job_id, command.attempt)
            return
        if attempt.active:
            log.info(
                "attempt starting job=%s attempt=%d epoch=%d recovery=%s",
                command.job_id,
                command.attempt,
                command.epoch,
                command.is_recovery,
            )
            self._launches.submit(attempt, command)

    def cancel(self, command: CancelAttempt) -> None:
        if not self._leases.observe_epoch(command.epoch):
            return
        attempt = self._attempts.get(command.job_id, command.attempt)
        if attempt is None or attempt.settled:
            log.info(
                "cancel of an unknown or ended attempt ignored job=%s attempt=%d",
                command.job_id,
                command.attempt,
            )
            return
        log.info(
            "cancel requested job=%s attempt=%d grace=%.1fs",
            command.job_id,
            command.attempt,
            command.grace,
        )
        self._attempts.request_cancel(attempt, command.grace)
        if attempt.runner is not None and attempt.pid is not None:
            attempt.runner.cancel(command.grace)
