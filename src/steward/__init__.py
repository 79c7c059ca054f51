"""Steward: a highly available job manager for PySpark pipelines."""

__version__ = "0.1.0"
