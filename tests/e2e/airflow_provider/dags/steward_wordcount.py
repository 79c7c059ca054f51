"""The DAG of docs/coming-from.md ("Airflow"), with its paths from the test's environment.

``STEWARD_TEST_DEFERRABLE``: 1 defers to the trigger (the default of the operator), 0 follows
the job in the task process (the SIGKILL test kills that process). ``STEWARD_TEST_SENSOR``: 1
adds a deferrable ``StewardJobSensor`` before the submit, on job ``STEWARD_TEST_UPSTREAM``
(submitted outside Airflow), and a ``StewardJobSensor`` after it, on the job it submitted.
"""

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from steward_airflow.operators.steward import StewardSubmitOperator
from steward_airflow.sensors.steward import StewardJobSensor

with DAG(
    dag_id="steward_wordcount",
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
    default_args={"retries": 1, "retry_delay": timedelta(seconds=0)},
):
    submit = StewardSubmitOperator(
        task_id="count_words",
        application=os.environ["STEWARD_TEST_PIPELINE"],
        application_args=[os.environ["STEWARD_TEST_TEXT"], os.environ["STEWARD_TEST_GATE"]],
        conf={"spark.master": "local[1]", "spark.ui.enabled": False},
        labels={"team": "data"},
        restart="none",
        timeout="30m",
        deferrable=os.environ.get("STEWARD_TEST_DEFERRABLE", "1") == "1",
        poll_interval=2.0,
    )
    if os.environ.get("STEWARD_TEST_SENSOR") == "1":
        upstream = StewardJobSensor(
            task_id="wait_for_upstream",
            job_id=os.environ["STEWARD_TEST_UPSTREAM"],
            deferrable=True,
            poll_interval=1.0,
            timeout=600,
        )
        check = StewardJobSensor(
            task_id="check",
            job_id="{{ ti.xcom_pull(task_ids='count_words', key='job_id') }}",
            poke_interval=1,
        )
        upstream >> submit >> check
