"""``GET /v1/queues``: the leader's queues (``scheduling.queues``) and their use.

The leader's scheduler writes these at every pass (:mod:`steward.jobmanager.leader.queues`);
the CLI (``steward queues``), the web UI and the metrics read them.
"""

from __future__ import annotations

from pydantic import Field

from steward.wire.values import Value


class QueueView(Value):
    """One queue: its configured shares, and what its jobs hold and wait for."""

    name: str
    guarantee: float = Field(description="share of all slots it gets first (0 to 1)")
    maximum: float = Field(description="share of all slots it never goes past (0 to 1)")
    weight: float = Field(description="its part of the slots the guarantees leave over")
    running: int = Field(default=0, description="its jobs with an attempt in flight")
    waiting: int = Field(default=0, description="its jobs that want a slot and have none")
    slots_used: int = Field(default=0, description="slots its attempts in flight hold")
    guaranteed_slots: float = Field(default=0.0, description="guarantee x all slots now")
    max_slots: int = Field(default=0, description="slots it may hold now (at least 1)")
    share: float = Field(default=0.0, description="slots_used / all registered slots")


class QueueList(Value):
    """The queues as the leader's latest scheduling pass found them."""

    queues: list[QueueView]
    slots: int = Field(default=0, description="all registered slots")
    served_by: str = ""
