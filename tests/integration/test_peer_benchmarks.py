"""The peer benchmarks' own logic: input generation, log parsing, summaries, the capped server.

benchmarks/spark_peer.py and benchmarks/pipeline_overhead.py take many minutes (Spark JVMs,
~200 MB of text), so their full runs are not tests; these check the parts whose mistakes
would silently skew a figure: the input is the same on every run, the runner's phase marks
are read right, the summary divides the right way round and judges the goal, and the capped
ZooKeeper really grants Spark's 60 s request only up to the cap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pipeline_overhead  # noqa: E402
import spark_peer  # noqa: E402
from _spark_standalone import SPARK_ZK_SESSION_MS, zookeeper_capped  # noqa: E402
from steward.zookeeper import layout  # noqa: E402
from support import wait_until  # noqa: E402


def test_generated_input_is_deterministic_and_sized(tmp_path: Path) -> None:
    first = pipeline_overhead.generate_input(tmp_path / "a", megabytes=2, seed=7)
    second = pipeline_overhead.generate_input(tmp_path / "b", megabytes=2, seed=7)
    other = pipeline_overhead.generate_input(tmp_path / "c", megabytes=2, seed=8)
    files = sorted((tmp_path / "a").iterdir())
    assert len(files) == pipeline_overhead.FILES
    assert first == second
    assert 2_000_000 <= first["bytes"] < 3_000_000
    assert [f.read_bytes() for f in files] == [
        f.read_bytes() for f in sorted((tmp_path / "b").iterdir())
    ]
    assert other["bytes"] > 0
    assert (tmp_path / "a" / "part-00.txt").read_bytes() != (
        tmp_path / "c" / "part-00.txt"
    ).read_bytes()


def test_runner_marks_are_seconds_after_acceptance(tmp_path: Path) -> None:
    log = tmp_path / "runner.log"
    log.write_text(
        "2026-11-21 07:06:38,880 INFO steward.runtime.runner: attempt starting job=j attempt=1\n"
        "2026-11-21 07:06:38,949 INFO steward.runtime.spark: starting SparkSession master=x\n"
        "26/11/21 07:06:41 WARN Utils: noise from Spark\n"
        "2026-11-21 07:06:52,547 INFO steward.runtime.context: stage materialised name=words\n"
        "2026-11-21 07:07:02,476 INFO steward.runtime.runner: attempt finished job=j attempt=1\n"
    )
    accepted = time.mktime(time.strptime("2026-11-21 07:06:37", "%Y-%m-%d %H:%M:%S"))
    marks = pipeline_overhead._runner_marks(log, accepted)
    assert marks == {
        "runner_started": 1.88,
        "session_requested": 1.949,
        "stage_written": 15.547,
        "attempt_finished": 25.476,
    }
    assert pipeline_overhead._runner_marks(None, accepted) == {}


def _trial(kind: str, seconds: float, **extra: object) -> dict[str, object]:
    return {"kind": kind, "seconds": seconds, **extra}


def test_spark_peer_summary_is_steward_over_peer() -> None:
    steward_trials = [_trial("crash", s, restarted_attempts=0) for s in (1.0, 1.2, 5.0)] + [
        _trial("graceful", s, restarted_attempts=0) for s in (0.4, 0.5, 0.6)
    ]
    peer_trials = [_trial("crash", s) for s in (4.0, 4.4, 4.2)] + [
        _trial("graceful", s) for s in (0.2, 0.3, 0.25)
    ]
    results = {
        "per_session": [
            {
                "session": "4",
                "spark_session_seconds": 4.0,
                "steward_session_seconds": 4.0,
                "peer": {"trials": peer_trials, "app_kept_going": True},
                "steward": {"trials": steward_trials},
            }
        ],
        "submission": {
            "peer": {"seconds": [10.0, 12.0]},
            "steward": {"seconds": [3.0, 3.0]},
            "steward_warm": {"seconds": [1.0, 12.0, 1.5]},
        },
    }
    rows = {row["figure"]: row for row in spark_peer.summarise(results)}
    crash = rows["crash failover (SIGKILL), session 4"]
    assert (crash["steward"], crash["peer"], crash["ratio"]) == (1.2, 4.2, 0.286)
    assert crash["met"] is True
    graceful = rows["graceful failover (SIGTERM), session 4"]
    # Under the 1 s goal but slower than the peer: not met.
    assert graceful["ratio"] == 2.0
    assert graceful["met"] is False
    cold = rows["submission latency, trivial Spark job, cold JVM (median)"]
    assert (cold["steward"], cold["peer"], cold["ratio"]) == (3.0, 11.0, 0.273)
    assert cold["met"] is True
    warm = rows["submission latency, trivial Spark job, warm spare (median)"]
    assert (warm["steward"], warm["peer"], warm["ratio"]) == (1.5, 11.0, 0.136)
    assert "prewarm-runners=1" in warm["note"]


def _run(way: str, seconds: float, phase: float) -> dict[str, object]:
    return {
        "way": way,
        "seconds": seconds,
        "result": {"words": 1},
        "load_average_1m": 2.5,
        "phases": {"main": phase},
    } | (
        {
            "phases": {
                "main": phase,
                "client_to_accepted": 0.1,
                "accepted_to_attempt_started": 0.2,
                "job_finished_to_client": 0.05,
            }
        }
        if way == "steward"
        else {}
    )


def test_pipeline_summary_judges_the_ratio() -> None:
    runs = [_run("steward", s, s - 1) for s in (10.0, 10.4, 12.0)]
    runs += [_run("spark-submit", s, s - 2) for s in (10.0, 9.0, 11.0)]
    results = {"input": {"bytes": 200_000_000}, "runs": runs}
    row, fixed = pipeline_overhead.summarise(results)  # no CPU sampled: no CPU row
    assert (row["steward"], row["peer"], row["ratio"], row["met"]) == (10.4, 10.0, 1.04, True)
    assert (fixed["steward"], fixed["met"]) == (0.35, True)  # under 5 % of 10 s
    assert "results agree: True" in row["note"]
    assert pipeline_overhead.breakdown(results) == {
        "steward": {
            "phases.accepted_to_attempt_started": 0.2,
            "phases.client_to_accepted": 0.1,
            "phases.job_finished_to_client": 0.05,
            "phases.main": 9.4,
        },
        "spark-submit": {"phases.main": 8.0},
    }
    noisy = [*runs[:3], _run("spark-submit", 20.0, 1), *runs[4:]]
    row, _ = pipeline_overhead.summarise({"input": {"bytes": 1}, "runs": noisy})
    assert row["met"] is None
    assert "NOT JUDGED" in row["note"]
    runs[0]["result"] = {"words": 2}
    row, _ = pipeline_overhead.summarise({"input": {"bytes": 1}, "runs": runs[:1] + runs[3:]})
    assert "results agree: False" in row["note"]


def test_pipeline_summary_counts_stewards_cpu_but_not_sparks() -> None:
    runs = [_run("steward", 10.0, 9.0), _run("spark-submit", 10.0, 8.0)]
    runs[0]["cpu"] = {"JobManager": 0.5, "ZooKeeper": 0.3, "runner (Python)": 0.2, "spark JVM": 15}
    runs[1]["cpu"] = {"Python driver": 0.4, "spark JVM": 15}
    *_, cpu = pipeline_overhead.summarise({"input": {"bytes": 1}, "runs": runs})
    assert cpu["steward"] == 1.0
    assert cpu["note"].startswith(f"{100 * 1.0 / (10.0 * (os.cpu_count() or 1)):.1f} % ")


@pytest.mark.zookeeper
def test_capped_zookeeper_grants_spark_only_the_cap() -> None:
    before = dict(layout.SERVER_SETTINGS)
    with zookeeper_capped("test-cap", 4000) as zookeeper:
        assert before == layout.SERVER_SETTINGS, "the override must not outlive the start"
        client = KazooClient(hosts=zookeeper.connect_string, timeout=SPARK_ZK_SESSION_MS / 1000)
        client.start(timeout=30)
        try:
            # What the server granted the client that asked for Spark's 60 s ("to=" in cons).
            session_id = f"sid=0x{client.client_id[0]:x}"
            (line,) = [c for c in zookeeper.four_letter("cons").splitlines() if session_id in c]
            assert "to=4000," in line
        finally:
            client.stop()
            client.close()
    assert before == layout.SERVER_SETTINGS


def test_cpu_sampler_counts_a_child_born_and_gone_during_the_run() -> None:
    from _cpu import CpuSampler

    # A parent that idles while its child burns CPU for ~0.6 s and exits.
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys;"
            f" subprocess.run([sys.executable, '-c', {burn!r}]); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
    )
    try:
        with CpuSampler({parent.pid: ("parent", "child")}, interval=0.05) as cpu:
            wait_until(
                lambda: psutil.Process(parent.pid).children(), 30, message="the child started"
            )
            wait_until(
                lambda: not psutil.Process(parent.pid).children(), 30, message="the child exited"
            )
        used = cpu.seconds_by_role()
    finally:
        parent.kill()
        parent.wait()
    assert 0.4 <= used["child"] <= 1.0, used
    assert used["parent"] < 0.4, used
