"""Leader election with epochs (rules 1, 2 and 5).

Each contender creates an ephemeral-sequential ``leader/latch/latch-<seq>`` node; the lowest
sequence leads. Every other contender watches only its predecessor, so a release wakes one
process, not the herd. When a contender finds itself first it bumps ``leader/epoch`` with a
compare-and-set that also checks its own latch still exists, so only a live, first-in-line
contender can ever be granted. The new epoch (the znode's version) is the fencing token for
every write of that term, and ``leader/info`` is published through that fence.

Leadership is revoked when the session is LOST, when the latch or the epoch is taken from us,
and on SUSPENDED only if ``tolerate_suspended`` is off (Flink's LeaderLatch behaviour, which
seed 001 shows is what lets a ZooKeeper hiccup start a second leader). ``stop()`` releases at
once: a standby takes over without waiting for the session timeout.

All ZooKeeper work runs on one thread per contender, so grants and revocations are strictly
ordered; the callbacks run on that thread too and must hand long work off.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent

from steward.errors import FencedError, StewardError
from steward.ha.fencing import Fence
from steward.ha.session import ConnectionState, Session
from steward.wire.records import ContenderInfo, LeaderInfo

log = logging.getLogger(__name__)

LATCH_PREFIX = "latch-"


def in_line(names: list[str]) -> list[str]:
    """Latch node names in the order they contend: by sequence number, first leads."""
    return sorted(names, key=lambda name: name.rsplit("-", 1)[-1])


@dataclass(frozen=True)
class Leadership:
    """One term of leadership: its epoch and the fence every write of the term goes through."""

    contender: str
    epoch: int
    fence: Fence


class _Event(enum.Enum):
    EVALUATE = "evaluate"
    STOP = "stop"


class LeaderElection:
    """Contend for leadership of the cluster whose layout ``session`` carries."""

    def __init__(
        self,
        session: Session,
        contender_id: str,
        address: str,
        *,
        tolerate_suspended: bool = True,
        on_granted: Callable[[Leadership], None] = lambda _leadership: None,
        on_revoked: Callable[[Leadership], None] = lambda _leadership: None,
    ) -> None:
        self._session = session
        self._layout = session.layout
        self.contender_id = contender_id
        self.address = address
        self.tolerate_suspended = tolerate_suspended
        self._on_granted = on_granted
        self._on_revoked = on_revoked
        self._events: queue.Queue[_Event | ConnectionState] = queue.Queue()
        self._latch: str | None = None
        self._leadership: Leadership | None = None
        self._requeue_latch = False
        self._in_line = False
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    # ------------------------------------------------------------------ public

    @property
    def leadership(self) -> Leadership | None:
        """The current term if this contender leads, else None."""
        return self._leadership

    @property
    def is_leader(self) -> bool:
        return self._leadership is not None

    @property
    def in_line(self) -> bool:
        """Our latch was among the contenders the last time we looked (and we watch the one
        before it, or lead): a release or a removal of the leader's latch reaches us."""
        return self._in_line

    def start(self) -> LeaderElection:
        self._session.add_listener(self._events.put)
        self._thread = threading.Thread(
            target=self._run, name=f"election-{self.contender_id}", daemon=True
        )
        self._thread.start()
        self._events.put(_Event.EVALUATE)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop contending; a leader steps down and deletes its latch so a standby takes over."""
        self._session.remove_listener(self._events.put)
        self._events.put(_Event.STOP)
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout)

    # ------------------------------------------------------------------ event loop

    def _run(self) -> None:
        while True:
            event = self._events.get()
            try:
                if event is _Event.STOP:
                    self._release()
                    return
                if isinstance(event, ConnectionState):
                    self._on_connection(event)
                else:
                    self._evaluate()
            except (KazooException, KazooTimeoutError, StewardError) as exc:
                # Lost the connection mid-step: the next state change brings us back here.
                log.warning("election step failed contender=%s error=%r", self.contender_id, exc)
            except Exception:
                log.exception("election step crashed contender=%s", self.contender_id)

    def _watch(self, _event: WatchedEvent) -> None:
        self._events.put(_Event.EVALUATE)

    def _on_connection(self, state: ConnectionState) -> None:
        if state is ConnectionState.SUSPENDED:
            if self._leadership and not self.tolerate_suspended:
                self._revoke("connection suspended and tolerance is off")
                self._requeue_latch = True
        elif state is ConnectionState.LOST:
            self._latch, self._in_line = None, False  # ephemeral: gone with the session
            self._revoke("session lost")
        elif state is ConnectionState.RECONNECTED:
            if self._leadership and not self._still_leader(self._leadership):
                self._revoke("epoch or latch changed while suspended")
            self._evaluate()
        else:  # CONNECTED: a new session after LOST
            self._evaluate()

    # ------------------------------------------------------------------ steps

    def _evaluate(self) -> None:
        if self._stopped.is_set() or not self._session.connected:
            return
        client = self._session.client
        if self._requeue_latch:
            self._delete_latch()
            self._requeue_latch = False
        if self._latch is None:
            self._latch = self._create_latch()
        children = in_line(client.get_children(self._layout.leader_latch))
        mine = self._latch.rsplit("/", 1)[-1]
        self._in_line = mine in children
        if not self._in_line:
            # Our latch was removed under us (session change, or an operator): start over.
            self._revoke("latch node disappeared")
            self._latch = None
            self._events.put(_Event.EVALUATE)
            return
        position = children.index(mine)
        if position == 0:
            if self._leadership is None:
                self._grant()
            # Watch our own latch: if it is deleted we must notice and step down.
            client.exists(self._latch, watch=self._watch)
            return
        self._revoke("no longer first in line")
        predecessor = f"{self._layout.leader_latch}/{children[position - 1]}"
        if client.exists(predecessor, watch=self._watch) is None:
            self._events.put(_Event.EVALUATE)

    def _create_latch(self) -> str:
        info = ContenderInfo(contender=self.contender_id, address=self.address)
        # A create (or a requeue's delete) whose reply was lost with the connection may have
        # left a latch of ours on the server. Queueing a second one behind it would wait
        # forever for our own live node, so adopt it instead (Curator's "protected" creates,
        # matched here by owning session and data rather than by a name prefix).
        orphan = self._find_own_latch(info.to_json())
        if orphan is not None:
            log.info("contending contender=%s latch=%s (adopted)", self.contender_id, orphan)
            return orphan
        path: str = self._session.client.create(
            f"{self._layout.leader_latch}/{LATCH_PREFIX}",
            info.to_json(),
            ephemeral=True,
            sequence=True,
        )
        log.info("contending contender=%s latch=%s", self.contender_id, path)
        return path

    def _find_own_latch(self, data: bytes) -> str | None:
        client = self._session.client
        session_id = self._session.session_id
        for name in sorted(client.get_children(self._layout.leader_latch)):
            path = f"{self._layout.leader_latch}/{name}"
            try:
                value, stat = client.get(path)
            except NoNodeError:
                continue
            if stat.ephemeralOwner == session_id and value == data:
                return path
        return None

    def _grant(self) -> None:
        assert self._latch is not None
        client = self._session.client
        _data, stat = client.get(self._layout.leader_epoch)
        epoch = stat.version + 1
        # The latch check makes the bump conditional on our still being first in line.
        txn = client.transaction()
        txn.check(self._latch, 0)
        txn.set_data(self._layout.leader_epoch, str(epoch).encode(), stat.version)
        results = txn.commit()
        failure = next((r for r in results if isinstance(r, Exception)), None)
        if failure is not None:
            log.info("grant lost a race contender=%s cause=%r", self.contender_id, failure)
            if isinstance(results[0], NoNodeError):
                self._latch = None
            self._events.put(_Event.EVALUATE)
            return
        leadership = Leadership(
            self.contender_id,
            epoch,
            Fence(client, self._layout.leader_epoch, epoch, self._session.session_timeout),
        )
        try:
            self._publish_info(leadership)
        except FencedError:
            self._events.put(_Event.EVALUATE)
            return
        self._leadership = leadership
        log.info("granted leadership contender=%s epoch=%d", self.contender_id, epoch)
        self._on_granted(leadership)

    def _publish_info(self, leadership: Leadership) -> None:
        info = LeaderInfo(contender=self.contender_id, address=self.address, epoch=leadership.epoch)
        client = self._session.client
        txn = leadership.fence.transaction()
        stat = client.exists(self._layout.leader_info)
        if stat is not None:
            txn.delete(self._layout.leader_info, stat.version)
        txn.create(self._layout.leader_info, info.to_json(), ephemeral=True)
        txn.commit()

    def _still_leader(self, leadership: Leadership) -> bool:
        return self._latch is not None and (
            self._session.client.exists(self._latch) is not None and leadership.fence.is_current()
        )

    def _revoke(self, reason: str) -> None:
        leadership, self._leadership = self._leadership, None
        if leadership is None:
            return
        # A deliberate stop is routine; anything else is worth an operator's attention.
        log.log(
            logging.INFO if reason == "stopped" else logging.WARNING,
            "leadership revoked contender=%s epoch=%d reason=%s",
            self.contender_id,
            leadership.epoch,
            reason,
        )
        try:
            self._on_revoked(leadership)
        except Exception:
            log.exception("on_revoked callback failed contender=%s", self.contender_id)

    def _release(self) -> None:
        self._stopped.set()
        leadership = self._leadership
        self._revoke("stopped")
        if leadership is not None:
            try:
                leadership.fence.transaction().delete(self._layout.leader_info).commit()
            except StewardError as exc:
                log.info("leader info not removed on release: %s", exc)
        self._delete_latch()

    def _delete_latch(self) -> None:
        self._in_line = False
        if self._latch is None:
            return
        try:
            self._session.client.delete(self._latch)
        except NoNodeError:
            pass
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("could not delete latch %s: %r", self._latch, exc)
        self._latch = None
