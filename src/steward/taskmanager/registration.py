"""A TaskManager's membership: the ephemeral ``taskmanagers/<tm-id>`` znode.

The node carries :class:`~steward.wire.records.TaskManagerInfo` and lives as long as the
TaskManager's session. This module owns creating it at start, creating it again on every new
session (after LOST, a CONNECTED brings a session without it), and deleting it on a graceful
stop.

A TaskManager restarted under the same id while its previous process's session still lives
(a crash a moment ago) finds the node owned by that other session: it waits for the node to
vanish, which it does when the old session expires, instead of failing or stealing it.
"""

from __future__ import annotations

import logging
import threading
import time

from steward.errors import CoordinationError, NodeExistsError, StewardError
from steward.ha.membership import MemberNode
from steward.ha.session import ConnectionState, Session
from steward.wire.records import TaskManagerInfo

log = logging.getLogger(__name__)

_RETRY_DELAY = 0.5
_VANISH_POLL = 2.0


class TaskManagerIdInUseError(StewardError):
    """Another live session holds ``taskmanagers/<tm-id>``: a TaskManager with this id runs."""


class Registration:
    """Keeps ``taskmanagers/<tm_id>`` registered on ``session``."""

    def __init__(self, session: Session, tm_id: str, info: TaskManagerInfo) -> None:
        self._session = session
        self._path = session.layout.taskmanager(tm_id)
        self._node = MemberNode(session, self._path)
        self.tm_id = tm_id
        self.info = info
        self._stopped = threading.Event()
        self._again = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        return self._path

    def register(self, timeout: float) -> None:
        """Create the node, waiting up to ``timeout`` for another session's node to vanish.

        Raises :class:`TaskManagerIdInUseError` if it is still there after ``timeout``.
        """
        if not self._create_within(time.monotonic() + timeout):
            raise TaskManagerIdInUseError(
                f"TaskManager id {self.tm_id!r} is registered by another live session"
                f" ({self._path}) and did not go away within {timeout:g}s; is a TaskManager"
                " with this id still running? Use another --id."
            )

    def start(self) -> Registration:
        """Register again after every new session, from a thread of its own."""
        self._thread = threading.Thread(
            target=self._keep_registered, name=f"{self.tm_id}-registration", daemon=True
        )
        self._thread.start()
        self._session.add_listener(self._on_state)
        return self

    def stop(self) -> None:
        self._session.remove_listener(self._on_state)
        self._stopped.set()
        self._again.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def deregister(self) -> None:
        """Delete the node if this session owns it (a graceful stop)."""
        try:
            if self._node.delete_if_ours():
                log.info("taskmanager deregistered tm=%s", self.tm_id)
        except CoordinationError as exc:
            log.warning("could not deregister tm=%s cause=%r", self.tm_id, exc)

    # ------------------------------------------------------------------ internals

    def _on_state(self, state: ConnectionState) -> None:
        if state is ConnectionState.CONNECTED:  # a new session: the old node went with the old
            self._again.set()

    def _keep_registered(self) -> None:
        while True:
            self._again.wait()
            self._again.clear()
            if self._stopped.is_set():
                return
            # No deadline: the node of our own previous session vanishes within its timeout.
            self._create_within(None)

    def _create_within(self, deadline: float | None) -> bool:
        waiting_logged = False
        while not self._stopped.is_set():
            done, owner = self._try_create()
            if done:
                return True
            if owner is not None and not waiting_logged:
                log.warning(
                    "taskmanager id in use by another session; waiting for it to vanish"
                    " tm=%s owner=0x%x path=%s",
                    self.tm_id,
                    owner,
                    self._path,
                )
                waiting_logged = True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            if owner is not None:
                self._wait_vanished(min(remaining or _VANISH_POLL, _VANISH_POLL))
        return False

    def _try_create(self) -> tuple[bool, int | None]:
        """Create the node: (True, None) once it is ours; else (False, the owning session of
        the node that is there, or None when ZooKeeper failed and the caller should retry)."""
        try:
            self._node.create(self.info.to_json())
            log.info(
                "taskmanager registered tm=%s address=%s slots=%d",
                self.tm_id,
                self.info.address,
                self.info.slots,
            )
            return True, None
        except NodeExistsError:
            pass
        except CoordinationError as exc:
            log.warning("registration failed; retrying tm=%s cause=%r", self.tm_id, exc)
            self._stopped.wait(_RETRY_DELAY)
            return False, None
        try:
            owner = self._node.owner()
        except CoordinationError:
            self._stopped.wait(_RETRY_DELAY)
            return False, None
        if owner is None:
            return False, None  # vanished meanwhile: try again at once
        if owner == self._session.session_id:
            return True, None  # ours already: a create whose reply was lost
        return False, owner

    def _wait_vanished(self, timeout: float) -> None:
        gone = threading.Event()
        try:
            if not self._node.watch(gone.set):
                return
        except CoordinationError:
            pass
        gone.wait(timeout)
