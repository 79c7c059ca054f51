"""Steward: a highly available job manager for PySpark pipelines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from steward.client import Client
    from steward.runtime.context import JobContext

__all__ = ["Client", "JobContext"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Both are imported on first use: a pipeline attempt imports steward for JobContext and
    # should not pay for the client (httpx, kazoo), and a JobManager, a TaskManager or the CLI
    # imports steward.<its package> and should not pay for the attempt's runtime.
    if name == "Client":
        from steward.client import Client

        return Client
    if name == "JobContext":
        from steward.runtime.context import JobContext

        return JobContext
    raise AttributeError(f"module 'steward' has no attribute {name!r}")
