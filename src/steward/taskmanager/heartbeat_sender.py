"""The sending side of the heartbeat: its attempts' reports to the leader, the reply back.

This module owns the HTTP side of :mod:`steward.wire.heartbeat`. Three threads share one
``httpx.Client``:

- the poller heartbeats continuously, asking the leader to hold each request up to
  ``heartbeat.interval`` (long polling), so a command reaches an idle TaskManager at once; it
  never starts two heartbeats within one interval unless the reply carried commands (a leader
  that answers at once must not get a busy loop);
- the notifier sends a heartbeat at once whenever :attr:`Attempts.changed` is set (an attempt
  changed phase, has a new checkpoint, released its lease) or the leader changed;
- the pacer (:mod:`.progress_pacer`) has the reports carry new progress at most once per
  ``heartbeat.progress-interval``, and sends it itself only while the poller's request is held
  longer: otherwise the poller's next heartbeat carries it.

An idle TaskManager's reports are the same every second: once the leader's reply says it
keeps them (``taken``: their digest), the heartbeats to that leader (its epoch) leave them out
(``unchanged``) until they change, and a ``resend`` reply (a leader that does not hold them)
sends them in full at once. A leader of another epoch always gets them in full first.

Idle holds: a reply that keeps the reports also says how long that leader holds a heartbeat
whose reports it keeps (``idle_hold``); the poller's heartbeats to it ask the shorter of that
and ``heartbeat.idle-hold`` (the leader grants it only if it keeps their reports too: unchanged,
or only their progress new), so an idle or busy TaskManager sends about one request per hold.
Its changes do not wait for the held poll: the notifier and the pacer send them. Nor does a
leader change: a poll held by a leader that is no longer the one retrieval names (frozen, cut
off: its request would hang until its timeout) is abandoned to a new poller thread at once,
which polls the new leader; the old thread ends when its request does (a reply to it is still
handled: the epoch decides).

Heartbeats are numbered (``seq``) in the order they are built, and each says up to which one
every earlier heartbeat's reply was handled or given up (``settled``): the leader judges a
start command never taken only by a heartbeat built after the reply that carried it was
handled (issue 23), never by when a heartbeat happened to arrive.

The leader is whoever its :class:`~steward.ha.retrieval.LeaderRetrieval` says (it follows
``leader/info`` on the TaskManager's session, and a new session or a new leader is reported to
at once). A JobManager that answers 409 or 503 is not (or not yet) the leader: retrieval will
say who is. While no leader is known nothing is sent, and the attempts keep running; their
reports are sent to the next leader. Replies go to ``on_reply``
(:meth:`steward.taskmanager.admission.Admission.on_reply`), which must be thread-safe (both
threads call it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from steward.errors import StewardError
from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import ConnectionState, Session
from steward.store.leases import ExecutionLeases
from steward.taskmanager.progress_pacer import ProgressPacer
from steward.taskmanager.reporting import Attempts
from steward.tls.contexts import ClientTls, client_tls
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply, reports_digest
from steward.wire.records import LeaderInfo

log = logging.getLogger(__name__)

MAX_WAIT = 60.0
"""The most a heartbeat may ask the leader to hold it (the contract's bound)."""
REQUEST_SLACK = 5.0
"""A heartbeat's HTTP timeout is its ``wait`` plus this."""
NOT_LEADER = frozenset({409, 503})


@dataclass(frozen=True)
class _Kept:
    """What the latest-built heartbeat's reply said its leader keeps (``taken``)."""

    seq: int
    """The heartbeat that reply answered: a reply to an older one is stale."""
    epoch: int
    digest: str | None
    idle_hold: float | None


class HeartbeatSender:
    """Sends this TaskManager's heartbeats to the current leader."""

    def __init__(
        self,
        *,
        tm_id: str,
        address: str,
        slots: int,
        interval: float,
        attempts: Attempts,
        session: Session,
        leases: ExecutionLeases,
        on_reply: Callable[[HeartbeatReply], None],
        client: httpx.Client | None = None,
        credential: str | None = None,
        tls: ClientTls | None = None,
        idle_hold: float | None = None,
        progress_interval: float | None = None,
    ) -> None:
        """``credential``: the cluster's internal credential, sent with every heartbeat
        (``security.internal.token-file``); None sends none (auth off). ``idle_hold``: the
        longest wait its polls ask (``heartbeat.idle-hold``; None: the interval, no longer
        hold). ``progress_interval``: ``heartbeat.progress-interval`` (None: the interval)."""
        self.tm_id = tm_id
        self.address = address
        self.slots = slots
        self.interval = interval
        self.idle_hold = max(interval, min(idle_hold or interval, MAX_WAIT))
        self._attempts = attempts
        self._pacer = ProgressPacer(attempts, progress_interval or interval, interval)
        self._session = session
        self._leases = leases
        self.retrieval = LeaderRetrieval(session, self.leader_changed)
        self._on_reply = on_reply
        headers = {"content-type": "application/json"}
        if credential is not None:
            headers["authorization"] = f"Bearer {credential}"
        # Verifies the leader's certificate with rest.ssl.ca (default: the system's CAs).
        self._tls = tls or client_tls()
        self._client = client or httpx.Client(headers=headers, verify=self._tls.context)
        self._stop = threading.Event()
        self._leader_changed = threading.Event()
        self._threads: list[threading.Thread] = []
        self.sent = 0
        """Heartbeats answered with 200 (for status and tests)."""
        self._numbering = threading.Lock()
        self._last_seq = 0
        self._in_flight: set[int] = set()
        self._kept: _Kept | None = None
        self._polling = threading.Lock()
        self._generation = 0
        """The current poller's number: a poller whose number is older ends."""
        self._polling_to: LeaderInfo | None = None
        """The leader the current poller's request is out to."""
        self._poll_back_by: float | None = None
        """When that request is expected back at the latest (monotonic)."""
        self.abandoned_polls = 0
        """Polls left to a leader that was no longer the one retrieval named (for tests)."""

    def start(self) -> HeartbeatSender:
        """Follow the leader and start sending."""
        self._session.add_listener(self._on_connection)
        self.retrieval.start()
        self._start_poller()
        for name, target in (("notify", self._notify), ("pace", self._pace)):
            self._start_thread(name, target)
        return self

    def _start_thread(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"{self.tm_id}-hb-{name}", daemon=True)
        thread.start()
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def _start_poller(self) -> None:
        with self._polling:
            self._generation += 1
            generation = self._generation
            self._polling_to, self._poll_back_by = None, None
        self._start_thread(f"poll-{generation}", lambda: self._poll(generation))

    def stop(self) -> None:
        """Stop sending at once; an outstanding long poll is abandoned, not waited for."""
        self._stop.set()
        self._attempts.changed.set()
        self._attempts.progressed.set()
        self._leader_changed.set()
        self._client.close()
        self.retrieval.stop()
        self._session.remove_listener(self._on_connection)

    def leader_changed(self, info: LeaderInfo | None) -> None:
        """The retrieval's listener: report to the new leader at once."""
        if info is None:
            log.warning("no leader known; attempts keep running tm=%s", self.tm_id)
        else:
            log.info(
                "following leader tm=%s leader=%s address=%s epoch=%d",
                self.tm_id,
                info.contender,
                info.address,
                info.epoch,
            )
        self._abandon_poll(info)
        self._report_now()

    def _abandon_poll(self, leader: LeaderInfo | None) -> None:
        """Leave a poll that is out to another leader than ``leader`` to its thread, and poll
        ``leader`` from a new one: a deposed leader that is frozen or cut off would keep it
        until its timeout (up to the idle hold + :data:`REQUEST_SLACK`)."""
        with self._polling:
            out_to = self._polling_to
            if out_to is None or _same(out_to, leader) or self._stop.is_set():
                return
            self.abandoned_polls += 1
        log.info(
            "poll left to the previous leader tm=%s leader=%s epoch=%d",
            self.tm_id,
            out_to.contender,
            out_to.epoch,
        )
        self._start_poller()

    def _on_connection(self, state: ConnectionState) -> None:
        if state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED):
            self._report_now()

    def _report_now(self) -> None:
        self._leader_changed.set()
        self._attempts.changed.set()

    # ------------------------------------------------------------------ loops

    def _poll(self, generation: int) -> None:
        while not self._stop.is_set() and generation == self._generation:
            with self._polling:
                # Under the lock that _abandon_poll takes: retrieval names the new leader
                # before it calls leader_changed, so a poll to the old one is always seen.
                # Long until known otherwise (built before new progress, it may be held long).
                leader = self._polling_to = self.retrieval.leader
                self._poll_back_by = float("inf")
            if leader is None:
                self._leader_changed.clear()
                self._leader_changed.wait(self.interval)
                continue
            started = time.monotonic()
            reply = self._send_poll(leader, generation)
            if generation != self._generation:
                return  # abandoned (leader change): a newer poller polls the new leader
            if reply is not None and reply.commands:
                continue  # there may be more: ask again at once
            pause = self.interval if reply is None else started + self.interval - time.monotonic()
            if pause > 0:
                self._leader_changed.clear()
                self._leader_changed.wait(pause)

    def _notify(self) -> None:
        changed = self._attempts.changed
        while not self._stop.is_set():
            changed.wait()
            changed.clear()
            if self._stop.is_set():
                return
            leader = self.retrieval.leader
            if leader is not None:
                self.send(leader, wait=0.0)

    def _pace(self) -> None:
        self._pacer.run(self._stop, self._poll_back, self._send_progress)

    def _poll_back(self) -> float | None:
        with self._polling:
            return self._poll_back_by

    def _send_progress(self) -> None:
        leader = self.retrieval.leader
        if leader is not None:
            self.send(leader, wait=0.0)

    def _send_poll(self, leader: LeaderInfo, generation: int) -> HeartbeatReply | None:
        beat = self.heartbeat(min(self.interval, MAX_WAIT), leader.epoch, poll=True)
        with self._polling:
            if generation == self._generation:
                self._poll_back_by = time.monotonic() + beat.wait
        try:
            return self._exchange(leader, beat)
        finally:
            self._settle(beat.seq)
            with self._polling:
                if generation == self._generation:
                    self._polling_to, self._poll_back_by = None, None

    # ------------------------------------------------------------------ one heartbeat

    def heartbeat(
        self, wait: float, leader_epoch: int | None = None, *, poll: bool = False
    ) -> Heartbeat:
        """The next heartbeat (to the leader of ``leader_epoch``: without its reports if that
        leader keeps them; if it is the poller's (``poll``), asking the idle hold of a leader
        that keeps them, and carrying new progress only once due); the caller must
        :meth:`_settle` its ``seq`` once its reply is handled or given up."""
        (self._pacer.on_poll if poll else self._pacer.publish)()
        seq, settled = self._number()
        # Read after numbering: the starts of every settled reply are admitted by now.
        attempts = self._attempts.reports()
        digest = reports_digest(attempts)
        kept = self._kept
        unchanged = (
            leader_epoch is not None
            and kept is not None
            and (kept.epoch, kept.digest) == (leader_epoch, digest)
        )
        if poll and kept is not None and kept.epoch == leader_epoch and kept.idle_hold is not None:
            wait = max(wait, min(self.idle_hold, kept.idle_hold))
        return Heartbeat(
            taskmanager=self.tm_id,
            address=self.address,
            slots=self.slots,
            epoch=self._leases.newest_epoch,
            attempts=[] if unchanged else attempts,
            wait=wait,
            session=self._session.session_id,
            seq=seq,
            settled=settled,
            digest=digest,
            unchanged=unchanged,
        )

    def _number(self) -> tuple[int, int]:
        with self._numbering:
            self._last_seq += 1
            self._in_flight.add(self._last_seq)
            return self._last_seq, min(self._in_flight) - 1

    def _settle(self, seq: int | None) -> None:
        with self._numbering:
            self._in_flight.discard(seq or 0)

    def send(self, leader: LeaderInfo, wait: float) -> HeartbeatReply | None:
        """One heartbeat to ``leader``; the reply (already handed to ``on_reply``) or None."""
        beat = self.heartbeat(wait, leader.epoch)
        try:
            return self._exchange(leader, beat)
        finally:
            self._settle(beat.seq)

    def _exchange(self, leader: LeaderInfo, beat: Heartbeat) -> HeartbeatReply | None:
        url = leader.address.rstrip("/") + HEARTBEAT_PATH
        wait = beat.wait
        try:
            response = self._client.post(url, content=beat.to_json(), timeout=wait + REQUEST_SLACK)
        except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: client closed by stop()
            untrusted = self._tls.untrusted(leader.address, exc)
            if untrusted is not None and not self._stop.is_set():
                log.error("heartbeat not sent: %s", untrusted)
            elif not self._stop.is_set():
                log.warning("heartbeat failed leader=%s epoch=%d cause=%r", url, leader.epoch, exc)
            return None
        if response.status_code in NOT_LEADER:
            log.info(
                "heartbeat refused: not the leader url=%s status=%d", url, response.status_code
            )
            return None
        if response.status_code != 200:
            log.warning(
                "heartbeat rejected url=%s status=%d body=%s",
                url,
                response.status_code,
                response.text[:500],
            )
            return None
        try:
            reply = HeartbeatReply.from_json(response.content)
        except StewardError as exc:
            log.warning("malformed heartbeat reply url=%s cause=%s", url, exc)
            return None
        self.sent += 1
        self._note_taken(reply, beat.seq or 0)
        try:
            self._on_reply(reply)
        except Exception:
            log.exception("handling a heartbeat reply failed url=%s", url)
        return reply

    def _note_taken(self, reply: HeartbeatReply, seq: int) -> None:
        """Remember which reports the replying leader keeps, unless a reply to a heartbeat
        built later said so already (a poll held long can be answered after the notifier's
        and the pacer's heartbeats); on ``resend``, send them in full at once (through the
        notifier)."""
        with self._numbering:
            if self._kept is None or seq > self._kept.seq:
                self._kept = _Kept(seq, reply.epoch, reply.taken, reply.idle_hold)
        if reply.resend:
            log.info("leader asks for the reports in full leader=%s", reply.leader)
            self._attempts.changed.set()


def _same(one: LeaderInfo, other: LeaderInfo | None) -> bool:
    return other is not None and (one.address, one.epoch) == (other.address, other.epoch)
