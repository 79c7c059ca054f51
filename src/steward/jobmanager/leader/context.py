"""What every part of one term is built from: the term, its job table, its stores, its hooks.

The Dispatcher makes one :class:`TermContext` per grant and hands it to each part (recovery,
submissions, heartbeats, membership, scheduler, records, ...) in place of the same four
arguments each; a part keeps what it uses. Building it does nothing: the term's threads start
later (:meth:`~.dispatcher.Dispatcher.start`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hooks import HookRunner
from .stores import LeaderStores
from .table import JobTable
from .term import Term


@dataclass(frozen=True)
class TermContext:
    term: Term
    """Epoch, fence, settings, clock and the term's events (:mod:`.term`)."""
    table: JobTable
    """The live jobs and the TaskManagers' slots, under the term's one lock (:mod:`.table`)."""
    stores: LeaderStores
    """The HA stores, written through the term's fence (:mod:`.stores`)."""
    hooks: HookRunner
    """Runs the jobs' ``initialize`` hooks in child processes (:mod:`..hooks`)."""
