"""Fast crash detection: a standby removes the latch of a leader whose port refuses connections.

When only the leader's *process* dies, its host answers a TCP connect to the leader's REST port
with a reset (ECONNREFUSED) at once, while ZooKeeper keeps the dead process's session, and so
its latch, for up to a whole session timeout. A standby that sees the published leader's
address refuse every probe for ``refused-for`` deletes that leader's latch node, and the
election moves on to the next contender without waiting for the session to expire.

Why a wrong guess is harmless (only liveness rides on this signal, never safety):

- The latch decides nothing by itself: a contender is granted only by bumping ``leader/epoch``
  (rule 1), and every write of a leader is fenced by its epoch (rule 2). A leader that
  was alive after all loses its term at the new grant: its writes fail, its election sees its
  latch gone and it queues again as a standby.
- Only a refused connection counts. A frozen (SIGSTOPped) leader's kernel still completes the
  TCP handshake, and a dead host or a partition gives timeouts; neither is acted on, so those
  cases wait for the session timeout as before.
- Only the first latch in line, carrying the same contender id and address as the published
  leader, is deleted, with the version read just before, and never one of our own session.
- A refusal says that the process which listened at the address is gone only if this
  standby saw one listen there: refusals count only after the leader's address accepted a
  probe of this detector under the same epoch. An address can name something else from
  here: a wildcard (``0.0.0.0``, ``::``) connects to the standby's own host, a loopback
  address published by a leader on another host names the standby's own loopback, and a
  NAT'd or mistyped one names nobody; each of those would refuse for ever and get a live
  leader's latch deleted at every term. Wildcards are never probed at all. The cost: a
  standby that never saw the leader alive (it started after the crash, or the leader died
  within one probe interval of its grant) waits for the session timeout, as without
  detection.
"""

from __future__ import annotations

import enum
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from kazoo.exceptions import BadVersionError, KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from steward.errors import StewardError
from steward.ha.election import in_line
from steward.ha.session import Session
from steward.wire.records import ContenderInfo, LeaderInfo

log = logging.getLogger(__name__)

MIN_PROBE_INTERVAL = 0.05
"""Between probes of a leader that accepts: a connect every 50 ms costs its kernel a
handshake and its REST server an accept, and says nothing until the leader dies."""
MIN_SUSPECT_INTERVAL = 0.01
PROBES_PER_WINDOW = 5
"""Probes per ``refused-for`` window once a probe was refused; at least three refusals in a
row are required in any case."""


class ProbeOutcome(enum.Enum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    UNKNOWN = "unknown"
    """A timeout or any other error: says nothing about the process, so it is never acted on."""


def probe(address: str, timeout: float) -> ProbeOutcome:
    """Try a TCP connect to the host and port of ``address`` (an http:// URL)."""
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ProbeOutcome.UNKNOWN
    if not host or is_wildcard(host):
        return ProbeOutcome.UNKNOWN
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return ProbeOutcome.ACCEPTED
    except ConnectionRefusedError:
        return ProbeOutcome.REFUSED
    except OSError:
        return ProbeOutcome.UNKNOWN


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is an unspecified address (``0.0.0.0``, ``::``): a listening socket
    bound to all interfaces, never an address of one machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


@dataclass
class RefusalWindow:
    """Decides when one leader has refused long enough: every probe refused, for ``refused_for``.

    Anything but a refusal, or a different leader, starts the window over.
    """

    refused_for: float
    min_refusals: int = 3
    _leader: tuple[str, str, int] | None = None
    _since: float | None = None
    _refusals: int = 0

    def observe(self, leader: LeaderInfo, outcome: ProbeOutcome, now: float) -> bool:
        key = (leader.contender, leader.address, leader.epoch)
        if key != self._leader:
            self._leader, self._since, self._refusals = key, None, 0
        if outcome is not ProbeOutcome.REFUSED:
            self._since, self._refusals = None, 0
            return False
        if self._since is None:
            self._since = now
        self._refusals += 1
        return self._refusals >= self.min_refusals and now - self._since >= self.refused_for

    @property
    def open(self) -> bool:
        """Refusals are being counted: the leader may have died."""
        return self._since is not None

    def reset(self) -> None:
        self._leader, self._since, self._refusals = None, None, 0


class CrashDetector:
    """Probes the published leader from a standby and removes its latch once it is dead.

    ``current_leader`` returns the published leader (``leader/info``); ``is_leader`` tells
    whether this process leads (then there is nothing to probe).
    """

    def __init__(
        self,
        session: Session,
        contender_id: str,
        *,
        refused_for: float,
        current_leader: Callable[[], LeaderInfo | None],
        is_leader: Callable[[], bool],
    ) -> None:
        self._session = session
        self._contender_id = contender_id
        self._current_leader = current_leader
        self._is_leader = is_leader
        self.interval = max(MIN_PROBE_INTERVAL, refused_for / PROBES_PER_WINDOW)
        self.suspect_interval = max(MIN_SUSPECT_INTERVAL, refused_for / PROBES_PER_WINDOW)
        """After a refusal that counts: the window's refusals come at this pace, so the
        verdict comes ``refused_for`` after the first refusal, not a probe interval later."""
        self._window = RefusalWindow(refused_for)
        self._acted_on: tuple[str, int] | None = None
        self._seen_alive: tuple[str, str, int] | None = None
        """The leader (contender, address, epoch) whose address accepted one of our probes."""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.probes = 0
        """How many probes this detector made (for tests)."""
        self.removed = 0
        """How many dead leaders' latches this detector removed (for tests and logs)."""

    def start(self) -> CrashDetector:
        self._thread = threading.Thread(
            target=self._run, name=f"crash-detector-{self._contender_id}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def leader_changed(self) -> None:
        """Probe now rather than at the next tick: a new leader is seen alive (and so can be
        judged dead) one probe interval sooner."""
        self._wake.set()

    def armed_for(self, leader: LeaderInfo) -> bool:
        """Whether a crash of ``leader`` would be acted on: its address accepted a probe of
        this detector under its current epoch, so its refusals would count."""
        return self._seen_alive == (leader.contender, leader.address, leader.epoch)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.check_once()
            except Exception:
                log.exception("crash detector step failed contender=%s", self._contender_id)
            self._wake.wait(self.suspect_interval if self._window.open else self.interval)

    def check_once(self) -> bool:
        """One probe; removes the leader's latch when the window says it is dead."""
        leader = self._current_leader()
        if (
            leader is None
            or leader.contender == self._contender_id
            or self._is_leader()
            or not self._session.connected
            or self._acted_on == (leader.contender, leader.epoch)
        ):
            self._window.reset()
            return False
        outcome = self._judged(leader, probe(leader.address, timeout=self.interval))
        self.probes += 1
        if not self._window.observe(leader, outcome, time.monotonic()):
            return False
        self._window.reset()
        self._acted_on = (leader.contender, leader.epoch)
        return self._remove_latch(leader)

    def _judged(self, leader: LeaderInfo, outcome: ProbeOutcome) -> ProbeOutcome:
        """A refusal of an address never seen accepting here says nothing: UNKNOWN."""
        key = (leader.contender, leader.address, leader.epoch)
        if outcome is ProbeOutcome.ACCEPTED:
            self._seen_alive = key
        elif outcome is ProbeOutcome.REFUSED and self._seen_alive != key:
            return ProbeOutcome.UNKNOWN
        return outcome

    def _remove_latch(self, leader: LeaderInfo) -> bool:
        client = self._session.client
        latch_dir = self._session.layout.leader_latch
        try:
            children = in_line(client.get_children(latch_dir))
            if not children:
                return False
            path = f"{latch_dir}/{children[0]}"
            data, stat = client.get(path)
            contender = ContenderInfo.from_json(data)
            if (
                contender.contender != leader.contender
                or contender.address != leader.address
                or stat.ephemeralOwner == self._session.session_id
            ):
                return False
            client.delete(path, version=stat.version)
        except (NoNodeError, BadVersionError, StewardError):
            return False  # someone else moved first, or not a latch we understand
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("could not remove a dead leader's latch: %r", exc)
            return False
        self.removed += 1
        log.warning(
            "leader %s at %s refuses connections: removed its latch %s so the election moves on"
            " without waiting for its session to expire (epoch %d)",
            leader.contender,
            leader.address,
            path,
            leader.epoch,
        )
        return True
