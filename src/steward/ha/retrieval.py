"""Leader retrieval: follow ``leader/info`` and report who leads, or that nobody does.

TaskManagers and clients use this to find the leading JobManager and to follow it when it
changes. While the connection is suspended the last known leader is still reported; once the
session is LOST, "no leader" is reported until the watch says otherwise.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from steward.errors import CorruptStateError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import ConnectionState, Session
from steward.wire.records import LeaderInfo

log = logging.getLogger(__name__)


class LeaderRetrieval:
    """Calls ``listener(info)`` with the new :class:`LeaderInfo`, or None, on every change."""

    def __init__(
        self, session: Session, listener: Callable[[LeaderInfo | None], None] = lambda _i: None
    ) -> None:
        self._session = session
        self._listener = listener
        self._leader: LeaderInfo | None = None
        self._changed = threading.Condition()
        self._stopped = False
        # Bumped on every report of the watch, so a re-read can tell it was overtaken.
        self._watch_reports = 0

    @property
    def leader(self) -> LeaderInfo | None:
        return self._leader

    def start(self) -> LeaderRetrieval:
        self._session.add_listener(self._on_connection)
        path = self._session.layout.leader_info
        try:
            self._session.client.DataWatch(path, self._on_data)
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        return self

    def stop(self) -> None:
        # The DataWatch has no remove: it ends when its callback next returns False.
        self._stopped = True
        self._session.remove_listener(self._on_connection)

    def wait_for_leader(
        self, timeout: float, predicate: Callable[[LeaderInfo], bool] = lambda _i: True
    ) -> LeaderInfo | None:
        """Block until a leader matching ``predicate`` is known, or ``timeout`` passes."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._leader is not None and predicate(self._leader), timeout=timeout
            )
            return self._leader

    def _on_connection(self, state: ConnectionState) -> None:
        if state is ConnectionState.LOST:
            self._report(None)
        elif state is ConnectionState.CONNECTED:
            self._reread()

    def _reread(self) -> None:
        # On a new session kazoo's DataWatch re-reads leader/info but calls back only if the
        # node changed meanwhile: an unchanged leader would stay reported as None after LOST.
        seen = self._watch_reports
        try:
            data, _stat = self._session.client.get(self._session.layout.leader_info)
        except NoNodeError:
            data = None
        except KAZOO_ERRORS as exc:
            log.warning("could not re-read leader info after a new session: %r", exc)
            return
        self._report(_decode(data), unless_watch_reported_since=seen)

    def _on_data(self, data: bytes | None, _stat: ZnodeStat | None) -> bool:
        if self._stopped:
            return False
        self._report(_decode(data), from_watch=True)
        return True

    def _report(
        self,
        info: LeaderInfo | None,
        *,
        from_watch: bool = False,
        unless_watch_reported_since: int | None = None,
    ) -> None:
        with self._changed:
            if self._stopped:
                return
            if unless_watch_reported_since not in (None, self._watch_reports):
                return  # the watch reported meanwhile: it has the last word (it re-fires)
            if from_watch:
                self._watch_reports += 1
            if info == self._leader:
                return
            self._leader = info
            self._changed.notify_all()
        log.info("leader changed leader=%s", info.model_dump() if info else None)
        try:
            self._listener(info)
        except Exception:
            log.exception("leader listener failed")


def _decode(data: bytes | None) -> LeaderInfo | None:
    if not data:
        return None
    try:
        return LeaderInfo.from_json(data)
    except CorruptStateError as exc:
        log.error("unreadable leader info ignored: %s", exc)
        return None
