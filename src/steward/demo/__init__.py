"""Demonstrations runnable from the CLI (``steward demo``)."""
