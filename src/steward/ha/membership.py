"""The ZooKeeper side of TaskManager membership: the ephemeral ``taskmanagers/<tm-id>`` znodes.

:class:`MemberNode` is one member's own node (created, owned and deleted by its session);
:func:`watch_members` is the leader's watch on all of them. Only kazoo's calls are here, their
exceptions translated (:func:`~steward.ha.kazoo_errors.translate`): each raises a
:class:`~steward.errors.CoordinationError` when ZooKeeper fails. The policy (when to register
again, how long to wait for another session's node, what a member's leaving means) stays
with the TaskManager's registration and the leader's membership.
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.exceptions import NoNodeError as KazooNoNode

from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import Session


class MemberNode:
    """One ephemeral membership znode at ``path``, owned by ``session`` once created."""

    def __init__(self, session: Session, path: str) -> None:
        self._session = session
        self.path = path

    def create(self, data: bytes) -> None:
        """Create the node; :class:`~steward.errors.NodeExistsError` if a node is there."""
        try:
            self._session.client.create(self.path, data, ephemeral=True)
        except KAZOO_ERRORS as exc:
            raise translate(exc, self.path) from exc

    def owner(self) -> int | None:
        """The id of the session that owns the node, or None if there is no node."""
        try:
            _data, stat = self._session.client.get(self.path)
        except KazooNoNode:
            return None
        except KAZOO_ERRORS as exc:
            raise translate(exc, self.path) from exc
        return int(stat.ephemeralOwner)

    def delete_if_ours(self) -> bool:
        """Delete the node if this session owns it (version-checked); False if there is none
        or it is another session's."""
        client = self._session.client
        try:
            _data, stat = client.get(self.path)
            if stat.ephemeralOwner != self._session.session_id:
                return False
            client.delete(self.path, version=stat.version)
        except KazooNoNode:
            return False
        except KAZOO_ERRORS as exc:
            raise translate(exc, self.path) from exc
        return True

    def watch(self, on_change: Callable[[], None]) -> bool:
        """Whether the node exists; if it does, ``on_change`` is called once at its next
        change (deleted, or its data set)."""
        try:
            stat = self._session.client.exists(self.path, watch=lambda _event: on_change())
        except KAZOO_ERRORS as exc:
            raise translate(exc, self.path) from exc
        return stat is not None


def watch_members(session: Session, on_change: Callable[[list[str]], bool]) -> None:
    """Call ``on_change`` with the ``taskmanagers/`` children now and at every change, until
    it returns False (kazoo's ``ChildrenWatch``)."""
    path = session.layout.taskmanagers
    try:
        session.client.ChildrenWatch(path, on_change)
    except KAZOO_ERRORS as exc:
        raise translate(exc, path) from exc
