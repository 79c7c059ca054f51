"""Steward: a highly available job manager for PySpark pipelines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from steward.runtime.context import JobContext

if TYPE_CHECKING:
    from steward.client import Client

__all__ = ["Client", "JobContext"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The client (httpx, kazoo) is imported on first use: every pipeline attempt imports
    # steward for JobContext and should not pay for it.
    if name == "Client":
        from steward.client import Client

        return Client
    raise AttributeError(f"module 'steward' has no attribute {name!r}")
