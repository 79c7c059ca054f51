"""The provider in a real Airflow 3 against a real Steward cluster.

- ``airflow dags test`` of the DAG in docs/coming-from.md: the operator submits a PySpark
  pipeline, defers, its trigger follows the job over ``/v1/events`` to its end, and the job's
  result comes back as the task's XCom.
- The task process SIGKILLed while its job runs, and Airflow's own retry: one Steward job,
  one attempt, the right result (``airflow dags test --use-executor`` with the LocalExecutor
  and an ``airflow api-server``: the task runs in a process the LocalExecutor's supervisor
  forks, the supervisor sees it die by SIGKILL and reports the try UP_FOR_RETRY, exactly as a
  scheduler's worker would, and the DAG run's loop queues try 2).
- A deferred task marked failed by a user (Airflow's REST API) while a real ``airflow
  triggerer`` runs its trigger: the trigger's ``on_kill`` cancels the Steward job.
- A deferrable ``StewardJobSensor`` waits in its trigger for a job submitted outside Airflow
  (in the first test's DAG run).
- The same pipeline through ``LivyOperator`` against Steward's Livy API.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from e2e.airflow_provider.airflow_env import AirflowVenv, base_env
from e2e.airflow_provider.conftest import Airflow
from e2e.wordcounts import SAMPLE, count_words
from steward.testing.ports import free_port
from steward.testing.processes import ProcessCluster
from steward.testing.waiting import WaitTimeoutError
from support import wait_until

# Airflow's processes start slowly (several CPU-seconds each to import) and the Spark driver
# takes its own: on a loaded 2-core machine one test takes minutes.
pytestmark = [pytest.mark.zookeeper, pytest.mark.spark, pytest.mark.timeout(900)]

WORDS = sum(count_words(SAMPLE.read_text()).values())
DEADLINE = 420.0
CANCEL_DEADLINE = 120.0
"""Seconds from a user's mark-failed to the job's end: the triggerer's next loop (about one
second) and the cancel (the job never got past its gate: no Spark to stop)."""
TASK_PROCESS = re.compile(r"airflow worker -- [0-9a-f]{8}-[0-9a-f-]{27}$")


GATED = """
import os
import sys
import time

while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
"""


def xcom(home: Path, key: str) -> Any:
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute(
            "SELECT value FROM xcom WHERE key = ? AND task_id = 'count_words'", (key,)
        ).fetchall()
    assert len(rows) == 1, rows
    value = rows[0][0]
    return json.loads(value) if isinstance(value, str | bytes) else value


def task_tries(home: Path, dag_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(home / "airflow.db") as db:
        return db.execute(
            "SELECT try_number, state FROM task_instance WHERE dag_id = ?", (dag_id,)
        ).fetchall()


def only_job(steward: ProcessCluster, besides: tuple[str, ...] = ()) -> Any:
    with steward.client() as client:
        jobs = [job for job in client.jobs() if job.job_id not in besides]
        assert len(jobs) == 1, [job.job_id for job in jobs]
        return client.job(jobs[0].job_id)


def test_a_deferred_task_follows_its_job_over_events_and_pushes_its_result(
    airflow_home: Airflow, steward: ProcessCluster, tmp_path: Path
) -> None:
    """Also both sensors: a deferrable one first, waiting in its trigger for a job submitted
    outside Airflow (``upstream``), and one on the job the operator submitted."""
    script, upstream_gate = tmp_path / "gated.py", tmp_path / "upstream-gate"
    script.write_text(GATED)
    with steward.client() as client:
        client.submit(script, args=[str(upstream_gate)], job_id="upstream", program="script")
    (tmp_path / "gate").touch()
    airflow_home.env.update(STEWARD_TEST_SENSOR="1", STEWARD_TEST_UPSTREAM="upstream")
    run = airflow_home.start("dags-test", "dags", "test", "steward_wordcount")
    waiting(
        airflow_home,
        lambda: "running trigger in line" in airflow_home.log("dags-test"),
        "the sensor deferred",
    )
    upstream_gate.touch()
    assert run.wait(DEADLINE) == 0, airflow_home.log("dags-test")[-4000:]
    output = airflow_home.log("dags-test")
    assert output.count("running trigger in line") == 2, output[-4000:]  # sensor, operator
    assert "steward job=upstream state=FINISHED" in output
    job = only_job(steward, besides=("upstream",))
    assert job.job_id.startswith("steward_wordcount.count_words.manual__"), job.job_id
    assert job.state.value == "FINISHED" and job.attempt_count == 1
    assert job.labels == {"team": "data"}
    assert job.result is not None and job.result.value == {"words": WORDS}
    assert xcom(airflow_home.home, "return_value") == {"words": WORDS}
    assert xcom(airflow_home.home, "steward_job") == {
        "job_id": job.job_id,
        "state": "FINISHED",
        "attempts": 1,
    }
    assert f"counted {WORDS} words" in xcom(airflow_home.home, "log_tail")
    assert f"steward job={job.job_id} state=FINISHED" in output
    assert task_tries(airflow_home.home, "steward_wordcount") == [
        (1, "success"),
        (1, "success"),
        (1, "success"),
    ]  # the deferrable sensor, the submit, then StewardJobSensor on the job id it pushed


def test_a_task_killed_while_its_job_runs_is_retried_onto_the_same_job(
    airflow_home: Airflow, steward: ProcessCluster, tmp_path: Path
) -> None:
    port = free_port()
    airflow_home.env.update(
        STEWARD_TEST_DEFERRABLE="0",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__PARALLELISM="1",
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{port}/execution/",
        # The task's supervisor tells the api-server the task started; its first answer can
        # take tens of seconds on a loaded machine, and a retried start is refused (400).
        AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT="180",
    )
    airflow_home.start(
        "api-server",
        "api-server",
        "--apps",
        "execution",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    )
    waiting(airflow_home, lambda: healthy(port), "the api-server serving", log="api-server")
    run = airflow_home.start("dags-test", "dags", "test", "steward_wordcount", "--use-executor")
    started = tmp_path / "gate.started"
    waiting(
        airflow_home,
        lambda: started.exists() and task_processes(run),
        "job and task running",
    )
    [first_try] = task_processes(run)
    first_try.send_signal(signal.SIGKILL)
    waiting(
        airflow_home,
        lambda: "steward job=" in airflow_home.task_logs("steward_wordcount").get(2, ""),
        "try 2 found its job",
    )
    assert "attached to" in airflow_home.task_logs("steward_wordcount")[2]
    (tmp_path / "gate").touch()
    assert run.wait(DEADLINE) == 0, airflow_home.log("dags-test")[-4000:]
    job = only_job(steward)
    assert job.state.value == "FINISHED" and job.attempt_count == 1
    assert job.result is not None and job.result.value == {"words": WORDS}
    assert started.read_text() == "attempt 1\n"
    assert task_tries(airflow_home.home, "steward_wordcount") == [(2, "success")]
    assert xcom(airflow_home.home, "return_value") == {"words": WORDS}


ON_KILL = """
import asyncio
import sys

from steward_airflow.triggers.steward import StewardJobTrigger

for job_id, cancel in zip(sys.argv[1::2], sys.argv[2::2]):
    asyncio.run(StewardJobTrigger(job_id=job_id, cancel_on_kill=cancel == "1").on_kill())
"""
"""Each (job id, cancel_on_kill) pair's trigger killed in turn, one trigger object each, in one
process (as Airflow's triggerer holds many): the provider's import costs CPU-seconds once."""


def test_the_triggers_on_kill_cancels_its_job_unless_told_not_to(
    airflow_home: Airflow, steward: ProcessCluster, tmp_path: Path
) -> None:
    script = tmp_path / "gated.py"
    script.write_text(GATED)
    with steward.client() as client:
        for job_id in ("kept", "killed"):
            client.submit(script, args=[str(tmp_path / "never")], job_id=job_id, program="script")
        done = subprocess.run(
            [str(airflow_home.venv.bin / "python"), "-c", ON_KILL, "kept", "0", "killed", "1"],
            check=False,
            env=airflow_home.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        wait_until(
            lambda: client.job("killed").state.value == "CANCELED",
            CANCEL_DEADLINE,
            message="the job cancelled",
        )
        assert client.job("kept").state.value not in ("CANCELLING", "CANCELED")
        client.cancel("kept")


# Slow: three Airflow processes (an api-server, a triggerer, a LocalExecutor's worker; ~3 min
# under load) to show that Airflow calls the trigger's on_kill when a user marks a deferred
# task failed; the default run has the trigger's on_kill cancelling the job (above).
@pytest.mark.slow
def test_a_deferred_task_marked_failed_cancels_its_job_from_the_triggerer(
    airflow_home: Airflow, steward: ProcessCluster, tmp_path: Path
) -> None:
    port = free_port()
    airflow_home.env.update(
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        AIRFLOW__CORE__PARALLELISM="1",
        AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://127.0.0.1:{port}/execution/",
        AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT="180",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",  # the REST call below
    )
    airflow_home.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(port))
    waiting(airflow_home, lambda: healthy(port), "the api-server serving", log="api-server")
    airflow_home.start("triggerer", "triggerer")
    airflow_home.start("dags-test", "dags", "test", "steward_wordcount", "--use-executor")
    started = tmp_path / "gate.started"
    waiting(
        airflow_home,
        lambda: started.exists() and trigger_running(airflow_home),
        "the job running and its trigger in the triggerer",
        log="triggerer",
    )
    [run_id] = run_ids(airflow_home.home, "steward_wordcount")
    url = f"http://127.0.0.1:{port}/api/v2/dags/steward_wordcount/dagRuns/{run_id}"
    marked = httpx.patch(
        f"{url}/taskInstances/count_words", json={"new_state": "failed"}, timeout=60
    )
    assert marked.is_success, marked.text
    with steward.client() as client:
        [job] = client.jobs()

        def cancelled() -> bool:
            return client.job(job.job_id).state.value == "CANCELED"

        waiting(airflow_home, cancelled, "the job cancelled", "triggerer", CANCEL_DEADLINE)
    assert "task killed while deferred: cancelling steward job=" in trigger_log(airflow_home)
    assert not started.with_name("gate").exists()  # the job never got past its gate


def trigger_log(airflow: Airflow) -> str:
    """What the task's trigger logged in the triggerer (Airflow keeps it beside the task's)."""
    logs = (airflow.home / "logs").glob("dag_id=steward_wordcount/**/*.trigger.*")
    return "".join(path.read_text(errors="replace") for path in logs)


def trigger_running(airflow: Airflow) -> bool:
    """Whether the triggerer runs the task's trigger (it logged the job's state)."""
    return "steward job=" in trigger_log(airflow)


def run_ids(home: Path, dag_id: str) -> list[str]:
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute("SELECT run_id FROM dag_run WHERE dag_id = ?", (dag_id,)).fetchall()
    return [row[0] for row in rows]


def waiting(
    airflow: Airflow,
    predicate: Callable[[], object],
    message: str,
    log: str = "dags-test",
    deadline: float = DEADLINE,
) -> None:
    try:
        wait_until(predicate, deadline, message=message, interval=0.2)
    except WaitTimeoutError as exc:
        raise AssertionError(f"{exc}\n{airflow.log(log)[-4000:]}") from None


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/execution/health", timeout=5).is_success
    except httpx.HTTPError:
        return False


def task_processes(run: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """Airflow task processes (``airflow worker -- <task instance id>``) below ``run``: another
    test run on this host may be running the same DAG (and Airflow's process titles hide the
    environment a task process was given)."""
    try:
        below = psutil.Process(run.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for proc in below:
        with contextlib.suppress(psutil.Error):
            if TASK_PROCESS.fullmatch(" ".join(proc.cmdline()).strip()):
                found.append(proc)
    return found


# Slow: a third Airflow run and Spark driver (~3.5 minutes under load) for what the default run
# shows more cheaply: Steward's Livy API driven by curl as Livy's docs do
# (tests/e2e/cluster/test_livy.py), and the Airflow tests above.
@pytest.mark.slow
@pytest.mark.parametrize("deferrable", [False, True], ids=["polling", "deferrable"])
def test_livy_operator_runs_the_pipeline_through_stewards_livy_api(
    airflow_home: Airflow, steward: ProcessCluster, tmp_path: Path, deferrable: bool
) -> None:
    """``LivyOperator`` as Airflow's Livy provider ships it, polling the batch from its worker
    or deferred to its trigger (``LivyTrigger``, which polls ``GET /batches/{id}/state``)."""
    airflow_home.env.update(STEWARD_TEST_DEFERRABLE="1" if deferrable else "0")
    done = airflow_home.run("dags", "test", "livy_wordcount")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "livy-output.txt").read_text() == str(WORDS)
    job = only_job(steward)
    assert job.job_id == "livy-0" and job.state.value == "FINISHED"
    assert job.attempt_count == 1


PROVIDER_CHECK = """
import json
from airflow.providers_manager import ProvidersManager

manager = ProvidersManager()
hook = manager.hooks.get("steward")
print(json.dumps({
    "providers": sorted(manager.providers),
    "hook": hook.hook_class_name if hook else None,
    "connection_type": hook.connection_type if hook else None,
}))
"""


def test_airflow_finds_the_provider_and_its_connection_type(airflow: AirflowVenv) -> None:
    done = subprocess.run(
        [str(airflow.bin / "python"), "-c", PROVIDER_CHECK],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=base_env(airflow.root / "template-home"),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "steward-airflow-provider" in found["providers"], found
    assert found["hook"] == "steward_airflow.hooks.steward.StewardHook"
    assert found["connection_type"] == "steward"
