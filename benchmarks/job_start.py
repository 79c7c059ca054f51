"""Job start: from a client's submission to the pipeline's ``main`` holding a usable SparkSession.

A real ZooKeeper, one JobManager and one TaskManager (1 slot) run as processes
(``python -m steward.cli ... jobmanager|taskmanager``). The pipeline records
``time.monotonic()`` (one clock for every process of the machine) when ``main`` starts, when
``ctx.spark`` returned, and when a trivial ``spark.range(1).count()`` completed, and returns
them as its result. The figure is the last one minus the client's ``time.monotonic()`` just
before ``submit``:

- ``cold``: ``taskmanager.spark.prewarm-runners=0``, a new Python and JVM per attempt (the
  behaviour before warm spares, and still the default);
- ``warm``: ``taskmanager.spark.prewarm-runners=1``; each trial waits until the TaskManager's
  spare is warm again (it is used once, then replaced), as a cluster between short jobs is;
- ``spark-submit`` (reference, not Steward): ``bin/spark-submit`` of the same trivial script,
  from the Popen call to the same instant.

Goal: warm under 1.5 s. Prints ONE JSON document on stdout, progress on stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pyspark

from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    run_main,
    summary,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.client import Client
from steward.config.configuration import validate
from steward.ha.acl import DIGEST_FILE_KEY, create_digest_file
from steward.security.credentials import INTERNAL_KEY
from steward.security.provision import register_admin_token
from steward.testing.credentials import auth_headers, export_admin_token, internal_token_file
from steward.testing.ports import free_port

GOAL_WARM = 1.5
MASTER = "local[*]"
READY_TIMEOUT = 120.0
JOB_TIMEOUT = 600.0

PIPELINE = """
import time

def main(ctx):
    entered = time.monotonic()
    spark = ctx.spark
    session = time.monotonic()
    spark.range(1).count()
    return {"main": entered, "session": session, "usable": time.monotonic()}
"""

SPARK_SUBMIT_SCRIPT = """
import time
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("job-start-reference").getOrCreate()
spark.range(1).count()
print("USABLE", time.monotonic(), flush=True)
spark.stop()
"""


class Cluster:
    """One JobManager and (one at a time) TaskManager processes on the benchmark's ZooKeeper."""

    def __init__(self, zookeeper: TempZooKeeper) -> None:
        self.workdir = zookeeper.workdir / "cluster"
        self.settings = {
            "high-availability.zookeeper.quorum": zookeeper.connect_string,
            "high-availability.zookeeper.root": "/steward-bench",
            "high-availability.cluster-id": "job-start",
            "high-availability.storage-dir": f"file://{self.workdir / 'storage'}",
            "taskmanager.workdir": str(self.workdir / "work"),
            "heartbeat.interval": "200ms",
            "spark.master": MASTER,
            # The cluster's ZooKeeper credential, as `steward cluster start` gives its own.
            DIGEST_FILE_KEY: str(self.workdir / "zookeeper.digest"),
            # And its internal credential (the admin token is registered at the JM's start).
            INTERNAL_KEY: str(internal_token_file(self.workdir)),
        }
        create_digest_file(self.workdir / "zookeeper.digest")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def _spawn(self, name: str, *tail: str, **overrides: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "steward.cli"]
        for key, value in {**self.settings, **overrides}.items():
            argv += ["-D", f"{key}={value}"]
        log = self.workdir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [*argv, *tail],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.workdir,
                env=env,
            )
        self.procs.append(proc)
        return proc

    def start_jobmanager(self) -> None:
        config = validate(dict(self.settings), dict.fromkeys(self.settings, "benchmark"))
        register_admin_token(config, export_admin_token())
        port = free_port()
        self._spawn("jm-1", "jobmanager", "--id", "jm-1", **{"jobmanager.port": str(port)})
        self.address = f"http://127.0.0.1:{port}"

    def start_taskmanager(self, tm_id: str, prewarm: int) -> subprocess.Popen[bytes]:
        return self._spawn(
            tm_id,
            "taskmanager",
            "--id",
            tm_id,
            **{
                "taskmanager.numberOfTaskSlots": "1",
                "taskmanager.spark.prewarm-runners": str(prewarm),
            },
        )

    def wait_taskmanagers(self, ids: set[str]) -> None:
        def ready() -> bool:
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                if httpx.get(self.address + "/readyz", timeout=2).status_code != 200:
                    return False
                answer = httpx.get(self.address + "/v1/cluster", timeout=2, headers=auth_headers())
                view = answer.json()
                return {tm["id"] for tm in view["taskmanagers"]} == ids
            return False

        wait_until(ready, READY_TIMEOUT, f"cluster with {sorted(ids)}", interval=0.1)

    def spare_ready(self, tm_id: str) -> bool:
        """A warm spare not handed out: its own folder still holds its log, saying ready."""
        folder = self.workdir / "work" / tm_id / ".spares"
        for log in folder.glob("spare-*/runner.log"):
            with contextlib.suppress(OSError):
                if "spare ready" in log.read_text(errors="replace"):
                    return True
        return False

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                self.stop(proc)


def run_job(client: Client, pipeline: Path, job_id: str) -> Json:
    """Submit, wait, and return the pipeline's instants relative to the submission."""
    submitted = time.monotonic()
    client.submit(pipeline, job_id=job_id)
    result = client.wait(job_id, timeout=JOB_TIMEOUT, poll=0.2)
    if result.state != "FINISHED" or not isinstance(result.value, dict):
        raise RuntimeError(f"job {job_id} ended {result.state}: {result.error}")
    value: dict[str, Any] = result.value
    return {
        "to_main": value["main"] - submitted,
        "to_session": value["session"] - submitted,
        "to_usable": value["usable"] - submitted,
    }


def measure_mode(
    cluster: Cluster, client: Client, pipeline: Path, mode: str, repeats: int
) -> list[Json]:
    tm_id = f"tm-{mode}"
    proc = cluster.start_taskmanager(tm_id, prewarm=1 if mode == "warm" else 0)
    try:
        cluster.wait_taskmanagers({tm_id})
        trials = []
        for index in range(repeats):
            if mode == "warm":
                wait_until(
                    lambda: cluster.spare_ready(tm_id), JOB_TIMEOUT, "a warm spare", interval=0.05
                )
            trial = run_job(client, pipeline, f"{mode}-{index}")
            progress(f"{mode} #{index + 1}: usable after {trial['to_usable']:.3f}s")
            trials.append(trial)
        return trials
    finally:
        cluster.stop(proc)
        cluster.wait_taskmanagers(set())


def spark_submit_reference(repeats: int) -> list[float]:
    spark_home = Path(pyspark.__file__).parent
    script = Path(tempfile.mkdtemp(prefix="steward-bench-submit-")) / "trivial.py"
    script.write_text(textwrap.dedent(SPARK_SUBMIT_SCRIPT))
    figures = []
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable}
    for index in range(repeats):
        started = time.monotonic()
        output = subprocess.run(
            [str(spark_home / "bin" / "spark-submit"), "--master", MASTER, str(script)],
            capture_output=True,
            env=env,
            check=True,
            timeout=JOB_TIMEOUT,
        ).stdout.decode()
        usable = next(float(line.split()[1]) for line in output.splitlines() if "USABLE" in line)
        figures.append(usable - started)
        progress(f"spark-submit #{index + 1}: usable after {figures[-1]:.3f}s")
    return figures


def body(repeats: int, with_reference: bool) -> Json:
    with temp_zookeeper("job-start") as zookeeper:
        cluster = Cluster(zookeeper)
        pipeline = zookeeper.workdir / "job_start_probe.py"
        pipeline.write_text(textwrap.dedent(PIPELINE))
        try:
            cluster.start_jobmanager()
            cluster.wait_taskmanagers(set())
            client = Client([cluster.address], timeout=30.0)
            raw = {
                mode: measure_mode(cluster, client, pipeline, mode, repeats)
                for mode in ("cold", "warm")
            }
        finally:
            cluster.stop_all()
        reference = spark_submit_reference(repeats) if with_reference else []
        return cluster_document(
            "job_start",
            {
                "repeats": repeats,
                "spark_master": MASTER,
                "slots": 1,
                "pyspark": pyspark.__version__,
            },
            _results(raw, reference),
            _rows(raw, reference),
            zookeeper,
        )


def _results(raw: dict[str, list[Json]], reference: list[float]) -> Json:
    results: Json = {"trials": raw}
    for mode, trials in raw.items():
        results[mode] = {key: summary([t[key] for t in trials]) for key in trials[0]}
    if reference:
        results["spark_submit"] = {"to_usable": summary(reference), "trials": reference}
    return results


def _rows(raw: dict[str, list[Json]], reference: list[float]) -> list[Json]:
    cold = [t["to_usable"] for t in raw["cold"]]
    warm = [t["to_usable"] for t in raw["warm"]]
    peer = statistics.median(reference) if reference else None
    spread = f"min {min(warm):.3f} s, max {max(warm):.3f} s over {len(warm)}"
    return [
        summary_row(
            "job start, warm spare: submission to a usable SparkSession (median)",
            statistics.median(warm),
            "s",
            goal=f"< {GOAL_WARM} s",
            met=statistics.median(warm) < GOAL_WARM,
            note=f"{spread}; peer = plain spark-submit of the same trivial job",
            peer=None if peer is None else round(peer, 3),
        ),
        summary_row(
            "job start, cold JVM per attempt (median)",
            statistics.median(cold),
            "s",
            goal="reference (the default, taskmanager.spark.prewarm-runners=0)",
            met=None,
            note=f"min {min(cold):.3f} s, max {max(cold):.3f} s over {len(cold)}",
            peer=None if peer is None else round(peer, 3),
        ),
    ]


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--repeats", type=int, default=5, help="trials per mode")
    args_parser.add_argument(
        "--no-reference", action="store_true", help="skip the spark-submit reference"
    )
    args = args_parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    return run_main(lambda: body(repeats, not args.no_reference), verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
