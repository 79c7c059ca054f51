"""What Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from steward_airflow import __version__


def get_provider_info() -> dict[str, Any]:
    integration = "Steward"
    return {
        "package-name": "steward-airflow-provider",
        "name": "Steward",
        "description": "Submit PySpark jobs to a highly available Steward cluster.",
        "versions": [__version__],
        "integrations": [{"integration-name": integration, "tags": ["software"]}],
        "operators": [
            {
                "integration-name": integration,
                "python-modules": ["steward_airflow.operators.steward"],
            }
        ],
        "sensors": [
            {"integration-name": integration, "python-modules": ["steward_airflow.sensors.steward"]}
        ],
        "hooks": [
            {"integration-name": integration, "python-modules": ["steward_airflow.hooks.steward"]}
        ],
        "triggers": [
            {
                "integration-name": integration,
                "python-modules": ["steward_airflow.triggers.steward"],
            }
        ],
        "connection-types": [
            {
                "hook-class-name": "steward_airflow.hooks.steward.StewardHook",
                "connection-type": "steward",
            }
        ],
    }
