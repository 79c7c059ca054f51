"""The TaskManager's liveness probe; it lives in :mod:`steward.ha.liveness`.

The JobManager uses the same probe to stop its initialize hooks, and the JobManager and the
TaskManager never import each other, so the probe moved to the ``ha`` layer both build on.
"""

from __future__ import annotations

from steward.ha.liveness import LivenessProbe

__all__ = ["LivenessProbe"]
