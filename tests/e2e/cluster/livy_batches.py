"""Livy's batch API driven by curl as Livy's REST docs do: the scripts a batch runs and the
calls, for tests/e2e/cluster/test_livy.py (one shared cluster) and test_livy_failover.py."""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc
from support import wait_until

SPARK_DEADLINE = 240.0
QUICK_DEADLINE = 60.0
TERMINAL = {"success", "dead", "killed"}

PI_SCRIPT = """
import sys
from random import random
from operator import add

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    n = 10000 * partitions

    def f(_):
        x = random() * 2 - 1
        y = random() * 2 - 1
        return 1 if x ** 2 + y ** 2 <= 1 else 0

    count = spark.sparkContext.parallelize(range(1, n + 1), partitions).map(f).reduce(add)
    print("Pi is roughly %f" % (4.0 * count / n))
    spark.stop()
"""

# Runs until the gate file appears (no Spark: no JVM), then appends one line to its output.
GATED_SCRIPT = """
import os
import sys
import time

gate, output = sys.argv[1], sys.argv[2]
print("greeting", os.environ.get("GREETING"), flush=True)
print("waiting for", gate, flush=True)
while not os.path.exists(gate):
    time.sleep(0.1)
with open(output, "a") as out:
    out.write(f"ran {os.getpid()}\\n")
print("done", flush=True)
"""


def write_jobs(folder: Path) -> Path:
    """``folder`` with ``pi.py`` and ``gated.py``, made if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pi.py").write_text(textwrap.dedent(PI_SCRIPT))
    (folder / "gated.py").write_text(textwrap.dedent(GATED_SCRIPT))
    return folder


def curl(
    url: str, *args: str, auth: str | None = "bearer", data: str | None = None
) -> tuple[int, Any]:
    """curl's status and JSON body; ``auth``: bearer, basic (the token as the password) or
    None."""
    argv = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args]
    if auth == "bearer":
        argv += ["-H", f"Authorization: Bearer {kit_admin_token()}"]
    elif auth == "basic":
        argv += ["-u", f"airflow:{kit_admin_token()}"]
    if data is not None:
        argv += ["-X", "POST", "--data", data, "-H", "Content-Type: application/json"]
    done = subprocess.run([*argv, url], capture_output=True, text=True, timeout=60, check=True)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body) if body else None


def submit(jm: Proc, body: dict[str, Any]) -> dict[str, Any]:
    status, batch = curl(f"{jm.address}/batches", data=json.dumps(body))
    assert status == 201, batch
    return dict(batch)


def state_of(jm: Proc, batch_id: int) -> str:
    status, answer = curl(f"{jm.address}/batches/{batch_id}/state")
    assert status == 200, answer
    assert answer["id"] == batch_id
    return str(answer["state"])


def gated(jobs_dir: Path, tmp_path: Path, name: str) -> tuple[dict[str, Any], Path, Path]:
    gate, output = tmp_path / f"{name}.gate", tmp_path / f"{name}.out"
    body = {"file": str(jobs_dir / "gated.py"), "args": [str(gate), str(output)], "name": name}
    return body, gate, output


def batch_ids(jm: Proc) -> list[int]:
    """The ids of every batch the cluster lists, oldest first."""
    status, listing = curl(f"{jm.address}/batches?from=0&size=1000")
    assert status == 200, listing
    return [int(session["id"]) for session in listing["sessions"]]


def next_batch_id(jm: Proc) -> int:
    """The id the cluster's next batch gets: ids are counted from 0, one a batch (an id whose
    job was named by hand is skipped, and those are listed too)."""
    return max(batch_ids(jm), default=-1) + 1


def in_state(jm: Proc, batch_id: int, state: str) -> Callable[[], bool]:
    """A condition for :func:`wait_until`: batch ``batch_id`` is in ``state``."""
    return lambda: state_of(jm, batch_id) == state


def release(jm: Proc, *gated_batches: tuple[int, Path]) -> None:
    """Open each batch's gate and wait until it succeeded: a test on a shared cluster leaves
    no batch running."""
    for _batch_id, gate in gated_batches:
        gate.touch()
    for batch_id, _gate in gated_batches:
        wait_until(in_state(jm, batch_id, "success"), QUICK_DEADLINE, message=f"{batch_id} done")
