"""The parts a TaskManager test works with, in one fixture (``rig``, from this folder's
conftest): scripted leaders, in-process TaskManagers, their blob storage, leases and sessions.

Import as ``from rig import Rig`` from tests in this folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scripted_leader import ScriptedLeader

from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.leases import ExecutionLeases
from steward.taskmanager.manager import TaskManager


@dataclass(frozen=True)
class Rig:
    scripted: Callable[..., ScriptedLeader]
    """``scripted(name="jm-scripted", wait=True)``: a started (or only contending) leader."""
    taskmanager: Callable[..., TaskManager]
    """``taskmanager(tm_id="tm-1", **keys)``: a started TaskManager, stopped after the test."""
    blobs: BlobStore
    leases: Callable[..., ExecutionLeases]
    """``leases(tm_id)``: that TaskManager's leases, on a session of its own."""
    session: Callable[..., Session]
    """``session(name)``: a session on the test's cluster root."""
