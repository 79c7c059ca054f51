"""The same pipeline through apache-airflow-providers-apache-livy's ``LivyOperator``, pointed
at a Steward JobManager's Livy API (connection ``livy_default``)."""

import os
from datetime import datetime

from airflow.providers.apache.livy.operators.livy import LivyOperator
from airflow.sdk import DAG

with DAG(
    dag_id="livy_wordcount",
    start_date=datetime(2026, 1, 1),
    schedule=None,
    catchup=False,
):
    LivyOperator(
        task_id="count_words",
        file=os.environ["STEWARD_TEST_SCRIPT"],
        args=[os.environ["STEWARD_TEST_TEXT"], os.environ["STEWARD_TEST_OUTPUT"]],
        conf={"spark.master": "local[1]", "spark.ui.enabled": "false"},
        polling_interval=1,
        deferrable=os.environ.get("STEWARD_TEST_DEFERRABLE", "0") == "1",
    )
