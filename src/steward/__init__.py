"""Steward: a highly available job manager for PySpark pipelines."""

from steward.runtime.context import JobContext

__all__ = ["JobContext"]
__version__ = "0.1.0"
