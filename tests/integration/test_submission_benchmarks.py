"""benchmarks/submission.py and benchmarks/recovery_scaling.py keep working: a quick run of
each prints its figures, in the default suite (the cluster suite's quick run is marked slow).

Each starts its own ZooKeeper and real JobManager processes; about 5 s each on a quiet 2-core
machine.
"""

from __future__ import annotations

import pytest

from support import run_benchmark

pytestmark = pytest.mark.zookeeper

CPU_KEYS = {"leader", "clients", "standby", "zookeeper", "total"}


def test_quick_submission_run_accepts_every_job_and_prints_its_rates_and_cpu() -> None:
    # --quick: 1 thread of 5 jobs and 16 of 3, one forwarded round, one batch of 50 and the
    # raw ceilings from 16 threads of 20 writes. The script raises on any refused submission.
    doc = run_benchmark("submission.py", "--quick", timeout=240)
    parameters, results = doc["parameters"], doc["results"]
    threads, per_thread = parameters["threads"], parameters["per_thread"]

    rounds = results["leader"]
    assert list(rounds) == [f"threads_{n}" for n in threads]
    for n, per in zip(threads, per_thread, strict=False):
        r = rounds[f"threads_{n}"]
        assert r["jobs"] == n * per, r
        assert r["jobs_per_s"] > 0, r
        assert 0 < r["latency_ms"]["p50"] <= r["latency_ms"]["p99"] <= r["latency_ms"]["max"]
        cpu = r["cpu_ms_per_job"]
        assert set(cpu) == CPU_KEYS, cpu
        # This process's own CPU is timed finely; the others' in clock ticks (10 ms), which a
        # round of 5 jobs may not reach: each is present, and the parts add up to the total.
        assert cpu["clients"] > 0, cpu
        assert min(cpu.values()) >= 0, cpu
        assert cpu["total"] == pytest.approx(sum(cpu[k] for k in CPU_KEYS - {"total"}), abs=0.05)
    busiest = rounds[f"threads_{max(threads)}"]["cpu_ms_per_job"]
    assert busiest["leader"] > 0 and busiest["zookeeper"] > 0, busiest

    forwarded = results["forwarded_1_thread"]
    assert forwarded["threads"] == 1 and forwarded["jobs"] == per_thread[0], forwarded
    assert forwarded["jobs_per_s"] > 0, forwarded
    # Measured like the leader's rounds: the standby forwards, the leader stores.
    assert set(forwarded["cpu_ms_per_job"]) == CPU_KEYS, forwarded

    batch = results["batch"]  # None: a Client without submit_many
    assert batch is not None
    jobs = parameters["batch_threads"] * parameters["batches"] * parameters["batch"]
    assert batch["jobs"] == jobs, batch
    assert batch["jobs_per_s"] > 0 and batch["cpu_ms_per_job"]["leader"] > 0, batch

    ceiling = parameters["ceiling_per_thread"]
    raw = results["raw_fenced_creates"]
    assert raw["creates"] == 16 * ceiling and raw["per_s"] > 0, raw
    grouped = results["raw_group_committed_submissions"]
    assert grouped["submissions"] == 16 * ceiling and grouped["per_s"] > 0, grouped
    assert results["busiest_over_raw_creates"] > 0
    assert results["busiest_over_raw_group_commits"] > 0

    figures = {row["figure"] for row in doc["summary"]}
    assert {
        f"submissions accepted per second, {max(threads)} client thread(s)",
        "submissions accepted per second, batches of 50 from 1 client thread(s)",
        "submit latency p50 through the standby (forwarded), 1 thread",
    } <= figures
    assert all(row["steward"] > 0 for row in doc["summary"]), doc["summary"]


def test_clients_in_processes_of_their_own_submit_every_job_and_report_their_cpu() -> None:
    # Spawned clients each make their Client, then all start together; each reports the CPU
    # it spent submitting, and the round adds them up.
    args = ("--quick", "--client-processes", "--threads", "2", "--per-thread", "3")
    doc = run_benchmark("submission.py", *args, timeout=240)

    assert doc["parameters"]["client_processes"] is True
    (r,) = doc["results"]["leader"].values()
    assert (r["clients"], r["threads"], r["jobs"]) == ("processes", 2, 6), r
    assert r["cpu_ms_per_job"]["clients"] > 0, r
    assert doc["results"]["forwarded_1_thread"]["clients"] == "threads"


def test_quick_recovery_scaling_run_schedules_every_persisted_job_again() -> None:
    # --quick: 20 and 100 jobs persisted as SCHEDULED (no lease, no TaskManager), then one
    # JobManager recovers them. The script raises unless its leader's "recovery done" line
    # counts every job and no failure; here, each must be scheduled again, none adopted.
    doc = run_benchmark("recovery_scaling.py", "--quick", timeout=240)
    points = doc["results"]["points"]
    assert [p["jobs"] for p in points] == doc["parameters"]["jobs"] == [20, 100]
    for point in points:
        jobs = str(point["jobs"])
        outcome = point["summary"]
        assert outcome["jobs"] == outcome["restarted"] == jobs, outcome
        assert outcome["adopted"] == outcome["awaiting"] == outcome["failed"] == "0", outcome
        assert 0 < point["recovery_s"] < point["ready_s"], point
        assert point["recovery_ms_per_job"] > 0 and point["write_s"] > 0, point
        assert point["phases_s"]["listing"] is not None, point

    rows = doc["summary"]
    assert [row["figure"] for row in rows] == [
        "recovery of 20 jobs (leader's own figure)",
        "recovery of 100 jobs (leader's own figure)",
        "per-job recovery time, 100 over 20 jobs",
    ]
    assert all(row["steward"] > 0 for row in rows), rows
    assert isinstance(rows[-1]["met"], bool)
