"""Steward against Spark's standalone Master HA (ZooKeeper recovery), same machine, same run.

The peer (see :mod:`_spark_standalone`): two Spark masters and a worker started with the pyspark
package's ``bin/spark-class``, ``spark.deploy.recoveryMode=ZOOKEEPER``, and one long-running
PySpark application in client mode against ``spark://m1,m2`` (a tiny job every 200 ms).
Steward (see :mod:`_cluster`): two JobManagers and a TaskManager as processes, and one
long-running job (``examples/long_running.py``). Both use the same managed ZooKeeper.

Measured per ZooKeeper session timeout (median of ``--repeats`` each, kinds alternating):

- crash failover: SIGKILL the leading master / JobManager; seconds from the signal until
  Spark: the standby master's ``/json/`` says ALIVE and lists the application in
  ``activeapps``; Steward: another JobManager answers ``/readyz`` as leader and shows the job
  RUNNING with its attempt adopted (the new epoch in ``adopted_by``, no new attempt).
  Also: whether the application / job kept going (it completed more work after the failover).
- graceful failover: the same with SIGTERM.
- submission latency (once, at the first session timeout): ``spark-submit --master <HA URL>``
  of ``spark.range(10).count()`` to its exit, against Steward: ``Client.submit`` of the same
  pipeline to its result (polled every 50 ms; ``spark.master`` local[*], Steward's default),
  once with a cold JVM per attempt (the default) and once with a warm spare
  (``taskmanager.spark.prewarm-runners=1``; each submission waits until the spare is warm
  again, as a cluster between short jobs is).

Spark cannot be told its ZooKeeper session timeout: it asks for 60 s (hard-coded), and the
server grants at most its ``maxSessionTimeout``. A run "at session T" caps the server at T for
both; "default" leaves the managed server's cap (120 s), so Spark gets 60 s and Steward its
default 10 s. (A stock ZooKeeper with tickTime 2000 caps at 40 s, which is where the 33.6 s in
the issue comes from.)

Apache Flink's JobManager HA (optional in the issue) is the other peer: ``flink_peer.py``.
"""

from __future__ import annotations

import json
import signal
import statistics
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from _cluster import BenchCluster, bench_cluster
from _common import (
    Json,
    TempZooKeeper,
    machine,
    parser,
    progress,
    run_main,
    source,
    wait_until,
)
from _spark_standalone import (
    SPARK_ZK_SESSION_MS,
    SparkStandalone,
    read_ticks,
    spark_version,
    zookeeper_capped,
)

REPO = Path(__file__).resolve().parents[1]
LONG_RUNNING = REPO / "examples" / "long_running.py"
KINDS: dict[str, signal.Signals] = {"crash": signal.SIGKILL, "graceful": signal.SIGTERM}
STEWARD_DEFAULT_SESSION = 10.0
TRIVIAL_SPARK_PIPELINE = '''
"""spark.range(10).count(), the submission-latency probe."""


def main(ctx):
    return {"count": ctx.spark.range(10).count()}
'''


# ----------------------------------------------------------------------------- Spark peer


def spark_failover(
    zookeeper: TempZooKeeper, kinds: list[str], repeats: int, session: float
) -> Json:
    """Failover trials of Spark's masters; kinds alternate, each ``repeats`` times."""
    spark = SparkStandalone(
        zookeeper.workdir / f"spark-{uuid.uuid4().hex[:6]}", zookeeper.connect_string
    )
    setup_timeout = 240.0
    trial_timeout = 3 * session + 90.0
    trials: list[Json] = []
    try:
        started = time.perf_counter()
        first = spark.start_master("m1")
        spark.wait_alive_master(setup_timeout)
        second = spark.start_master("m2")
        _wait_status(second, "STANDBY", setup_timeout)
        spark.start_worker()
        spark.wait_worker_registered(first, setup_timeout)
        app, ticks, app_id_file = spark.start_long_app("app")
        wait_until(lambda: len(read_ticks(ticks)) >= 3, setup_timeout, "the app running", 0.2)
        app_id = app_id_file.read_text().strip()
        progress(f"Spark peer up in {time.perf_counter() - started:.1f}s: {spark.master_url}")
        for round_index in range(repeats):
            for kind in kinds if round_index % 2 == 0 else kinds[::-1]:
                spark.check_alive()
                trials.append(_spark_trial(spark, kind, app_id, ticks, trial_timeout))
                progress(f"  spark {kind}: {trials[-1]['seconds']:.2f}s")
        kept_going = app.alive() and all(t["app_kept_going"] for t in trials)
    finally:
        spark.stop()
    return {"trials": trials, "app_kept_going": kept_going, "zookeeper_dir": spark.zk_dir}


def _spark_trial(
    spark: SparkStandalone, kind: str, app_id: str, ticks: Path, timeout: float
) -> Json:
    leader = spark.wait_alive_master(timeout)
    standby = next(m for m in spark.masters if m is not leader)
    _wait_status(standby, "STANDBY", timeout)
    before = len(read_ticks(ticks))
    signalled = time.monotonic()
    leader.signal(KINDS[kind])

    def recovered() -> Json | None:
        status = standby.status()
        if status is None or status.get("status") != "ALIVE":
            return None
        apps = {a.get("id"): a for a in status.get("activeapps", [])}
        return apps.get(app_id)

    app = wait_until(recovered, timeout, f"Spark standby ALIVE with {app_id}", interval=0.02)
    elapsed = time.monotonic() - signalled
    # Kept going: the application completes jobs after the new master took over.
    at_recovery = len(read_ticks(ticks))
    kept_going = True
    try:
        wait_until(lambda: len(read_ticks(ticks)) >= at_recovery + 3, 60.0, "app ticks", 0.1)
    except TimeoutError:
        kept_going = False
    ticks_during = at_recovery - before
    spark.replace_master(leader)
    return {
        "kind": kind,
        "seconds": round(elapsed, 3),
        "app_state": app.get("state"),
        "app_jobs_during_failover": ticks_during,
        "app_kept_going": kept_going,
    }


def _wait_status(master: Any, status: str, timeout: float) -> None:
    wait_until(
        lambda: (master.status() or {}).get("status") == status,
        timeout,
        f"{master.name} {status}",
        interval=0.1,
    )


def spark_submissions(zookeeper: TempZooKeeper, count: int) -> Json:
    spark = SparkStandalone(zookeeper.workdir / "spark-submit", zookeeper.connect_string)
    try:
        spark.start_master("m1")
        leader = spark.wait_alive_master(240)
        second = spark.start_master("m2")
        _wait_status(second, "STANDBY", 240)
        spark.start_worker()
        spark.wait_worker_registered(leader, 240)
        seconds = []
        for index in range(count):
            seconds.append(spark.submit_trivial(f"submit-{index}", timeout=300))
            progress(f"  spark-submit {index}: {seconds[-1]:.2f}s")
    finally:
        spark.stop()
    return {"seconds": [round(s, 3) for s in seconds]}


# ----------------------------------------------------------------------------- Steward


def steward_cluster(
    zookeeper: TempZooKeeper, session: float, name: str
) -> AbstractContextManager[BenchCluster]:
    return bench_cluster(
        zookeeper.workdir,
        zookeeper.connect_string,
        f"{name}-{uuid.uuid4().hex[:6]}",
        session,
        verbose=False,
    )


def steward_failover(
    zookeeper: TempZooKeeper, kinds: list[str], repeats: int, session: float
) -> Json:
    timeout = 3 * session + 60.0
    trials: list[Json] = []
    with steward_cluster(zookeeper, session, "failover") as cluster:
        cluster.start_jobmanager("jm-1")
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=2)
        cluster.wait_taskmanagers(1, timeout=120)
        with cluster.client() as client:
            job = client.submit(LONG_RUNNING, args=["--interval", "0.2"], job_id="long")
        wait_until(lambda: _job(cluster, job.job_id, "RUNNING"), 60, "job RUNNING", 0.1)
        serial = 3
        for round_index in range(repeats):
            for kind in kinds if round_index % 2 == 0 else kinds[::-1]:
                cluster.check_alive()
                trials.append(_steward_trial(cluster, kind, job.job_id, timeout))
                progress(f"  steward {kind}: {trials[-1]['seconds']:.2f}s")
                cluster.start_jobmanager(f"jm-{serial}")
                serial += 1
    return {"trials": trials}


def _job(cluster: BenchCluster, job_id: str, state: str) -> Json | None:
    leader = cluster.leader()
    if leader is None:
        return None
    view = cluster.get_json(leader, f"/v1/jobs/{job_id}")
    return view if view is not None and view.get("state") == state else None


def _steward_trial(cluster: BenchCluster, kind: str, job_id: str, timeout: float) -> Json:
    # Both JobManagers up (the replacement started after the last trial is a ready standby).
    def standby_ready() -> bool:
        answers = [cluster.get_json(p, "/readyz") for p in cluster.jobmanagers()]
        return len(answers) >= 2 and all(a is not None for a in answers)

    wait_until(standby_ready, timeout, "two ready JobManagers", interval=0.1)
    leader = wait_until(cluster.leader, timeout, "a Steward leader", interval=0.05)
    before = wait_until(
        lambda: _progress_ticks(cluster.get_json(leader, f"/v1/jobs/{job_id}")),
        timeout,
        "the job reporting progress",
        interval=0.1,
    )
    others = [p for p in cluster.jobmanagers() if p is not leader]
    signalled = time.monotonic()
    leader.signal(KINDS[kind])

    def adopted() -> Json | None:
        for proc in others:
            info = cluster.get_json(proc, "/v1/cluster", timeout=1.0) or {}
            leader_info = info.get("leader") or {}
            if leader_info.get("id") != proc.id:
                continue
            ready = cluster.get_json(proc, "/readyz", timeout=1.0)
            if ready is None or ready.get("role") != "leader":
                continue
            view = cluster.get_json(proc, f"/v1/jobs/{job_id}", timeout=1.0)
            if view is None or view.get("state") != "RUNNING" or not view.get("attempts"):
                continue
            epoch = leader_info.get("epoch")
            if epoch in view["attempts"][-1].get("adopted_by", []):
                return {"view": view, "epoch": epoch, "leader": proc.id}
        return None

    found = wait_until(adopted, timeout, "job adopted by a new leader", interval=0.02)
    elapsed = time.monotonic() - signalled
    view = found["view"]
    leader.popen.wait(60)

    # Kept going: the same attempt reports more progress after the failover.
    def progressed() -> int | None:
        current = cluster.leader()
        if current is None:
            return None
        ticks = _progress_ticks(cluster.get_json(current, f"/v1/jobs/{job_id}"))
        return ticks if ticks is not None and ticks > before else None

    try:
        after: int | None = wait_until(progressed, timeout, "job progress after failover", 0.1)
    except TimeoutError:
        after = None
    return {
        "kind": kind,
        "seconds": round(elapsed, 3),
        "new_leader": found["leader"],
        "epoch": found["epoch"],
        "attempt_count": view.get("attempt_count"),
        "restarted_attempts": max(0, int(view.get("attempt_count", 1)) - 1),
        "job_kept_going": after is not None,
    }


def _progress_ticks(view: Any) -> int | None:
    if not isinstance(view, dict):
        return None
    progress_fields = view.get("progress") or {}
    ticks = progress_fields.get("ticks")
    return int(ticks) if isinstance(ticks, int) else None


def steward_submissions(
    zookeeper: TempZooKeeper, session: float, count: int, *, prewarm: int = 0
) -> Json:
    """Submit-to-result of the trivial job, ``count`` times; with ``prewarm``, each submission
    waits first until the TaskManager's spare is warm again, as between a cluster's short jobs."""
    seconds = []
    with steward_cluster(zookeeper, session, "warm" if prewarm else "cold") as cluster:
        pipeline = cluster.workdir / "trivial_spark.py"
        pipeline.write_text(TRIVIAL_SPARK_PIPELINE)
        cluster.start_jobmanager("jm-1")
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=2, prewarm=prewarm)
        cluster.wait_taskmanagers(1, timeout=120)
        with cluster.client(timeout=300) as client:
            for index in range(count):
                if prewarm:
                    wait_until(lambda: cluster.spare_ready("tm-1"), 300, "a warm spare", 0.05)
                started = time.perf_counter()
                job = client.submit(pipeline, job_id=f"trivial-{index}")
                result = client.wait(job.job_id, timeout=300, poll=0.05)
                seconds.append(time.perf_counter() - started)
                if result.state.value != "FINISHED" or result.value != {"count": 10}:
                    raise RuntimeError(f"trivial job did not finish right: {result}")
                progress(f"  steward submit {index}: {seconds[-1]:.2f}s")
    return {"seconds": [round(s, 3) for s in seconds]}


# ----------------------------------------------------------------------------- the run


def _median(trials: list[Json], kind: str) -> float | None:
    values = [t["seconds"] for t in trials if t["kind"] == kind]
    return round(statistics.median(values), 3) if values else None


def _ratio(steward: float | None, peer: float | None) -> float | None:
    return round(steward / peer, 3) if steward is not None and peer else None


def steward_only(sessions: list[str], repeats: int) -> Json:
    """Steward's half of the failover trials, each session as in :func:`measure`."""
    load_before = machine()["load_average_1m"]
    per_session = []
    for label in sessions:
        cap_ms = None if label == "default" else int(float(label) * 1000)
        session = STEWARD_DEFAULT_SESSION if cap_ms is None else cap_ms / 1000
        with zookeeper_capped("spark-peer", cap_ms) as zookeeper:
            ours = steward_failover(zookeeper, list(KINDS), repeats, session)
        per_session.append({"session": label, "steward_session_seconds": session, "steward": ours})
    return {
        "benchmark": "spark_peer",
        "steward_only": True,
        "parameters": {"sessions": sessions, "repeats": repeats},
        "results": {"sessions": per_session},
        "environment": {**machine(), "load_average_1m_at_start": load_before},
        "steward": source(),
    }


def measure(quick: bool, sessions: list[str], repeats: int, submissions: int) -> Json:
    kinds = list(KINDS)
    per_session: list[Json] = []
    submission: Json = {}
    for label in sessions:
        cap_ms = None if label == "default" else int(float(label) * 1000)
        spark_session = SPARK_ZK_SESSION_MS / 1000 if cap_ms is None else cap_ms / 1000
        steward_session = STEWARD_DEFAULT_SESSION if cap_ms is None else cap_ms / 1000
        progress(f"session {label}: Spark {spark_session:g}s, Steward {steward_session:g}s")
        with zookeeper_capped("spark-peer", cap_ms) as zookeeper:
            peer = spark_failover(zookeeper, kinds, repeats, spark_session)
            ours = steward_failover(zookeeper, kinds, repeats, steward_session)
            if not submission:
                progress("submission latency")
                submission = {
                    "session": label,
                    "peer": spark_submissions(zookeeper, submissions),
                    "steward": steward_submissions(zookeeper, steward_session, submissions),
                    "steward_warm": steward_submissions(
                        zookeeper, steward_session, submissions, prewarm=1
                    ),
                }
        per_session.append(
            {
                "session": label,
                "spark_session_seconds": spark_session,
                "steward_session_seconds": steward_session,
                "peer": peer,
                "steward": ours,
            }
        )
    return {"per_session": per_session, "submission": submission, "quick": quick}


def summarise(results: Json) -> list[Json]:
    rows: list[Json] = []
    for entry in results["per_session"]:
        label = entry["session"]
        for kind in KINDS:
            ours = _median(entry["steward"]["trials"], kind)
            peer = _median(entry["peer"]["trials"], kind)
            goal_seconds = 2.0 if kind == "crash" else 1.0
            restarted = sum(t["restarted_attempts"] for t in entry["steward"]["trials"])
            rows.append(
                {
                    "figure": f"{kind} failover ({'SIGKILL' if kind == 'crash' else 'SIGTERM'}),"
                    f" session {label}",
                    "steward": ours,
                    "peer": peer,
                    "unit": "s",
                    "ratio": _ratio(ours, peer),
                    "goal": f"< {goal_seconds:g} s and faster than Spark",
                    "met": None
                    if ours is None
                    else ours < goal_seconds and (peer is None or ours < peer),
                    "note": f"Spark session {entry['spark_session_seconds']:g} s, Steward"
                    f" {entry['steward_session_seconds']:g} s; Spark app kept going:"
                    f" {entry['peer']['app_kept_going']}; Steward attempts restarted: {restarted}",
                }
            )
    sub = results["submission"]
    if sub:
        peer = round(statistics.median(sub["peer"]["seconds"]), 3)
        ways = [("steward", "a cold JVM (taskmanager.spark.prewarm-runners=0, the default)")]
        if "steward_warm" in sub:
            ways.append(("steward_warm", "a warm spare (taskmanager.spark.prewarm-runners=1)"))
        for key, how in ways:
            ours = round(statistics.median(sub[key]["seconds"]), 3)
            rows.append(
                {
                    "figure": "submission latency, trivial Spark job, "
                    + ("warm spare" if key == "steward_warm" else "cold JVM")
                    + " (median)",
                    "steward": ours,
                    "peer": peer,
                    "unit": "s",
                    "ratio": _ratio(ours, peer),
                    "goal": "faster than spark-submit to the HA master (ratio < 1)",
                    "met": ours < peer,
                    "note": f"Steward: Client.submit to result, job on local[*] with {how};"
                    " peer: spark-submit --master spark://m1,m2 to exit (executor on the"
                    f" standalone worker); runs: Steward {sub[key]['seconds']} s, peer"
                    f" {sub['peer']['seconds']} s",
                }
            )
    return rows


def main() -> int:
    options = parser(__doc__)
    options.add_argument("--sessions", default=None, help="comma list of seconds or 'default'")
    options.add_argument("--repeats", type=int, default=None)
    options.add_argument("--submissions", type=int, default=None)
    options.add_argument(
        "--steward-only",
        action="store_true",
        help="Steward's failover trials alone (no Spark: when the machine is too loaded for"
        " its JVMs); no summary, no peer",
    )
    options.add_argument(
        "--resummarise",
        type=Path,
        default=None,
        help="measure nothing: re-derive the summary of a stored document",
    )
    args = options.parse_args()
    if args.resummarise is not None:
        stored = json.loads(args.resummarise.read_text())
        stored["summary"] = summarise(stored["results"])
        stored["resummarised"] = "summary re-derived from the stored trials"
        print(json.dumps(stored, indent=2))
        return 0
    sessions = (args.sessions or ("4" if args.quick else "4,10,default")).split(",")
    repeats = args.repeats or (1 if args.quick else 3)
    submissions = args.submissions or (2 if args.quick else 5)

    if args.steward_only:
        return run_main(lambda: steward_only(sessions, repeats), args.verbose)

    def body() -> Json:
        load_before = machine()["load_average_1m"]
        results = measure(args.quick, sessions, repeats, submissions)
        return {
            "benchmark": "spark_peer",
            "summary": summarise(results),
            "parameters": {"sessions": sessions, "repeats": repeats, "submissions": submissions},
            "results": results,
            "peer": {
                "name": "Spark standalone Master HA (ZooKeeper recovery)",
                "version": spark_version(),
            },
            "environment": {**machine(), "load_average_1m_at_start": load_before},
            "steward": source(),
        }

    return run_main(body, args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
