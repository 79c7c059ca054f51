"""The queues and jobs of the queue-scheduling tests (test_queue_scheduling.py,
test_queue_priority.py)."""

from __future__ import annotations

from pathlib import Path

from e2e.ticking import write_pipeline
from steward.client import Client
from steward.wire.rest import JobView
from steward.wire.states import JobState

QUEUES = "capped:guarantee=0.25,maximum=0.25;open:guarantee=0.5"
LONG = ["100000", "0.2"]
"""A ticking attempt that runs until it is cancelled."""


def state_is(client: Client, job_id: str, state: JobState) -> JobView | None:
    """The view of ``job_id`` if it is in ``state``, else None (for ``wait_until``)."""
    view = client.job(job_id)
    return view if view.state is state else None


def submit_ticking(client: Client, tmp_path: Path, name: str, **options: object) -> JobView:
    """Submit a ticking job that runs until it is cancelled, with ``options``."""
    truth = str(tmp_path / f"{name}.log")
    return client.submit(write_pipeline(tmp_path), args=[truth, *LONG], name=name, **options)  # type: ignore[arg-type]
