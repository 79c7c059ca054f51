"""The OS user a runner is started as, when it is not the parent's own (``--proxy-user``).

Only the runner's process switches: the parent (a TaskManager running as root) starts it with
the user's uid, gid and supplementary groups (``subprocess``'s ``user=``, ``group=``,
``extra_groups=``, applied in the child between the fork and the exec, after it changed into
the attempt's folder). The log capper, the events pipe's reader and the dead-man's switch feed
stay the parent's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OsUser:
    """An OS user of this host, resolved once (:func:`steward.taskmanager.proxy_users.resolve`)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    """Its supplementary groups (its primary one among them), as ``getgrouplist`` gives them."""
    home: str

    def popen_arguments(self) -> dict[str, Any]:
        """What :class:`subprocess.Popen` needs to start a process as this user."""
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}
