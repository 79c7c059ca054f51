"""Airflow provider for Steward: submit PySpark jobs to a highly available Steward cluster.

``StewardSubmitOperator`` (deferrable by default), ``StewardJobTrigger``, ``StewardJobSensor``
and ``StewardHook`` over a ``steward`` connection. See the README.
"""

from __future__ import annotations

__version__ = "0.1.0"
