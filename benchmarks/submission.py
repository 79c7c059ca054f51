"""Submission throughput and latency: small pipelines from several concurrent clients.

A cluster of real processes (2 JobManagers) and a small :data:`_cluster.QUICK` pipeline
(returns at once, no Spark, no ``initialize``). For each client count (1, 4, 16 threads)
every thread has its own ``steward.Client`` and submits ``--per-thread`` jobs one after
another (``Client.submit``: the packaging of the file, the POST, the leader's blob write and
its fenced, group-committed ZooKeeper transaction, the answer). Reported: jobs accepted per
second over the wall time of the whole round, the latency of one submit (p50, p99), and the
CPU the leader and the clients spent per job.

No TaskManager by default: the jobs wait in SCHEDULED, as a burst larger than the cluster's
slots does (a burst at midnight). With ``--taskmanager`` one TaskManager with 2 slots runs
them meanwhile; on a 2-core machine its runner processes (a Python interpreter per attempt)
then take the CPU the submissions are measured on.

The ceiling, measured in the same run against the same ZooKeeper: raw fenced creates (one
``check(leader/epoch)`` + ``create`` multi per znode, synchronous, the submission's only
ZooKeeper write before this change) from 16 threads of one session. The submission rate is
reported as a ratio of it. And the submissions' own write alone: 16 threads each making a
submission's five ZooKeeper operations through the group commit the leader uses, with no HTTP
and no blob (:func:`raw_group_commits`): what ZooKeeper and kazoo leave for submissions.

Then one client submits through the standby (which forwards to the leader): the cost of
asking the wrong JobManager. Then ``--batch-threads`` clients each submit ``--batches``
batches of ``--batch`` jobs with ``Client.submit_many`` (``POST /v1/jobs/batch``: one request
and one parse per batch, the items' creates sharing group commits), when the code measured
has it. The load average is in the document: CPU per job is what the load blurs least.

With ``--pin`` (2 CPUs or more) the leader runs on a CPU of its own and everything else (the
clients, ZooKeeper, the standby) on another: a JobManager on its own host, as deployed, which
the clients and the ensemble do not share. A Python process whose threads hand the
interpreter lock to each other across CPUs spends more CPU on each hand-over than one kept
on one CPU (docs/performance-journal.md, "29 Nov (3)"; docs/operations.md says how to pin one).

With ``--client-processes`` each client of the leader's rounds runs in a process of its own,
as an orchestrator's workers do, instead of a thread of this one, where 16 clients share one
interpreter lock and pay for handing it over; the clock starts once every one has made its
``Client``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from _cluster import QUICK, BenchCluster, bench_cluster
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    percentile,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
)
from fenced_writes import become_leader
from steward.client import Client
from steward.ha.session import Session
from steward.store.group_commit import Absent, Create, GroupCommit
from steward.testing.processes import Proc

CEILING_ROOT = "/steward-bench/submission-ceiling"


def submit_round(
    address: str,
    pipeline: Path,
    threads: int,
    per_thread: int,
    tag: str,
    *,
    leader: Proc | None = None,
    others: dict[str, int] | None = None,
    processes: bool = False,
) -> Json:
    """``threads`` clients, each ``per_thread`` submissions one after another: threads of this
    process, or (``processes``) processes of their own, as an orchestrator's workers are,
    whose clients then do not share one interpreter lock. The CPU per job of the leader, the
    clients and each of ``others`` (name -> pid: the standby, ZooKeeper) is reported, and
    their sum: on one machine, its cores over that sum is the rate it can reach at best."""
    others = others or {}
    before: dict[str, float] = {}

    def begin() -> None:
        before.update({name: _pid_cpu(pid) for name, pid in others.items()}, leader=_cpu(leader))

    clients = _client_processes if processes else _client_threads
    plan = RoundPlan(address, pipeline, threads, per_thread, tag)
    latencies, errors, clients_cpu, wall = clients(plan, begin)
    leader_cpu = _cpu(leader) - before["leader"]
    others_cpu = {name: _pid_cpu(pid) - before[name] for name, pid in others.items()}
    per_job = {
        "leader": leader_cpu / len(latencies) * 1000,
        "clients": clients_cpu / len(latencies) * 1000,
        **{name: cpu / len(latencies) * 1000 for name, cpu in others_cpu.items()},
    }
    if errors:
        raise RuntimeError(f"{len(errors)} submissions failed, first: {errors[0]}")
    result = {
        "threads": threads,
        "clients": "processes" if processes else "threads",
        "jobs": len(latencies),
        "seconds": round(wall, 3),
        "jobs_per_s": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(percentile(latencies, 0.50) * 1000, 2),
            "p99": round(percentile(latencies, 0.99) * 1000, 2),
            "max": round(max(latencies) * 1000, 2),
        },
        "cpu_ms_per_job": {
            **{name: round(ms, 2) for name, ms in per_job.items()},
            "total": round(sum(per_job.values()), 2),
        },
    }
    spent = ", ".join(f"{name} {ms:.2f}" for name, ms in per_job.items())
    progress(
        f"{tag}: {result['jobs_per_s']} jobs/s, p50 {result['latency_ms']['p50']} ms, "
        f"p99 {result['latency_ms']['p99']} ms; CPU ms a job: {spent}"
    )
    return result


@dataclass(frozen=True)
class RoundPlan:
    """A round's clients: where they submit, what, how many each, their job ids' prefix."""

    address: str
    pipeline: Path
    clients: int
    per_client: int
    tag: str


Clients = tuple[list[float], list[str], float, float]
"""What a round's clients did: each submit's latency, the errors, their CPU seconds while
submitting, and the round's wall time."""


def _client_threads(plan: RoundPlan, begin: Callable[[], None]) -> Clients:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client_thread(index: int) -> None:
        with Client([plan.address], timeout=60) as client:
            prefix = f"{plan.tag}-{index:02d}"
            mine, failed = _submit_all(client, plan.pipeline, plan.per_client, prefix)
        with lock:
            latencies.extend(mine)
            errors.extend(failed)

    workers = [threading.Thread(target=client_thread, args=(i,)) for i in range(plan.clients)]
    begin()
    cpu = time.process_time()
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return latencies, errors, time.process_time() - cpu, time.perf_counter() - started


def _client_processes(plan: RoundPlan, begin: Callable[[], None]) -> Clients:
    """Each client in a process of its own (spawned: this one holds threads), timed from the
    moment every one of them has made its ``Client``."""
    context = multiprocessing.get_context("spawn")
    ready, go = context.Barrier(plan.clients + 1), context.Barrier(plan.clients + 1)
    answers: multiprocessing.Queue[tuple[list[float], list[str], float]] = context.Queue()
    children = [
        context.Process(
            target=_client_process,
            args=(replace(plan, tag=f"{plan.tag}-{i:02d}"), (ready, go), answers),
            daemon=True,
        )
        for i in range(plan.clients)
    ]
    for child in children:
        child.start()
    ready.wait(timeout=120)
    begin()
    started = time.perf_counter()
    go.wait(timeout=120)
    latencies: list[float] = []
    errors: list[str] = []
    cpu = 0.0
    for _ in children:
        mine, failed, spent = answers.get(timeout=600)
        latencies += mine
        errors += failed
        cpu += spent
    wall = time.perf_counter() - started
    for child in children:
        child.join(timeout=30)
    return latencies, errors, cpu, wall


def _client_process(plan: RoundPlan, barriers: tuple[Any, Any], answers: Any) -> None:
    ready, go = barriers
    with Client([plan.address], timeout=60) as client:
        ready.wait(timeout=120)
        go.wait(timeout=120)
        cpu = time.process_time()
        latencies, errors = _submit_all(client, plan.pipeline, plan.per_client, plan.tag)
        answers.put((latencies, errors, time.process_time() - cpu))


def _submit_all(
    client: Client, pipeline: Path, count: int, prefix: str
) -> tuple[list[float], list[str]]:
    """``count`` submissions of ``pipeline``, one after another: their latencies, errors."""
    latencies: list[float] = []
    errors: list[str] = []
    for n in range(count):
        before = time.perf_counter()
        try:
            client.submit(pipeline, job_id=f"{prefix}-{n:04d}")
        except Exception as exc:
            errors.append(repr(exc))
            continue
        latencies.append(time.perf_counter() - before)
    return latencies, errors


def batch_round(
    address: str,
    pipeline: Path,
    threads: int,
    batches: int,
    batch: int,
    *,
    leader: Proc,
) -> Json:
    """``threads`` clients, each ``batches`` calls of ``submit_many`` of ``batch`` jobs."""
    latencies: list[float] = []
    failed: list[str] = []
    lock = threading.Lock()

    def client_thread(index: int) -> None:
        with Client([address], timeout=60) as client:
            for n in range(batches):
                jobs = [{"job_id": f"b-{index:02d}-{n:03d}-{k:03d}"} for k in range(batch)]
                before = time.perf_counter()
                outcomes = client.submit_many(pipeline, jobs, batch_size=batch)
                took = time.perf_counter() - before
                with lock:
                    latencies.append(took)
                    failed.extend(repr(o) for o in outcomes if isinstance(o, Exception))

    workers = [threading.Thread(target=client_thread, args=(i,)) for i in range(threads)]
    leader_cpu, clients_cpu = _cpu(leader), time.process_time()
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - started
    clients_cpu = time.process_time() - clients_cpu
    leader_cpu = _cpu(leader) - leader_cpu
    if failed or len(latencies) != threads * batches:
        raise RuntimeError(f"batch submissions failed: {failed[:1] or 'a thread died'}")
    jobs = threads * batches * batch
    result = {
        "threads": threads,
        "batch": batch,
        "jobs": jobs,
        "seconds": round(wall, 3),
        "jobs_per_s": round(jobs / wall, 1),
        "batch_latency_ms": {
            "p50": round(percentile(latencies, 0.50) * 1000, 2),
            "p99": round(percentile(latencies, 0.99) * 1000, 2),
        },
        "cpu_ms_per_job": {
            "leader": round(leader_cpu / jobs * 1000, 3),
            "clients": round(clients_cpu / jobs * 1000, 3),
        },
    }
    progress(f"batches of {batch}, {threads} threads: {result['jobs_per_s']} jobs/s")
    return result


def _cpu(proc: Proc | None) -> float:
    return 0.0 if proc is None else _pid_cpu(proc.pid)


def _pid_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def raw_fenced_creates(quorum: str, threads: int, per_thread: int) -> Json:
    """Fenced creates per second, each its own synchronous multi, ``threads`` at once on one
    session: what ZooKeeper and kazoo give a leader that writes one znode per request."""
    with Session(quorum, CEILING_ROOT, name="bench-ceiling") as session:
        election, fence = become_leader(session)
        session.client.ensure_path(f"{CEILING_ROOT}/creates")

        def creator(index: int) -> None:
            for n in range(per_thread):
                path = f"{CEILING_ROOT}/creates/{index:02d}-{n:05d}"
                fence.transaction().create(path, b"x" * 200).commit()

        workers = [threading.Thread(target=creator, args=(i,)) for i in range(threads)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
        election.stop()
    rate = threads * per_thread / wall
    progress(f"raw fenced creates, {threads} threads: {rate:.0f}/s")
    return {"threads": threads, "creates": threads * per_thread, "per_s": round(rate, 1)}


def raw_group_commits(quorum: str, threads: int, per_thread: int) -> Json:
    """A submission's ZooKeeper write alone, ``threads`` at once on one session: each writer's
    five operations (the result check's create and delete, the pointer, the job's node and its
    status record: :meth:`Submissions._store`'s shape) through :class:`GroupCommit`, which
    shares one fenced multi among the writers queued. The ceiling the ensemble and kazoo put
    on submissions, with no HTTP, no blob and no leader."""
    root = f"{CEILING_ROOT}/grouped-{time.time_ns():x}"
    commits = GroupCommit()
    failed: list[str] = []
    with Session(quorum, CEILING_ROOT, name="bench-grouped") as session:
        election, fence = become_leader(session)
        for folder in ("results", "jobgraphs", "jobs"):
            session.client.ensure_path(f"{root}/{folder}")

        def writer(index: int) -> None:
            try:
                write(index)
            except Exception as exc:
                failed.append(repr(exc))

        def write(index: int) -> None:
            for n in range(per_thread):
                job = f"{index:02d}-{n:05d}"
                record = b"s" * 160  # about a first status record's size
                commits.create(
                    fence,
                    [
                        Absent(f"{root}/results/{job}"),
                        Create(f"{root}/jobgraphs/{job}", b"p" * 120),
                        Create(f"{root}/jobs/{job}", b""),
                        Create(f"{root}/jobs/{job}/status", record),
                    ],
                )

        workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
        cpu, started = time.process_time(), time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        election.stop()
    if failed:
        raise RuntimeError(f"{len(failed)} group-committed writers failed, first: {failed[0]}")
    jobs = threads * per_thread
    progress(f"raw group-committed submission writes, {threads} threads: {jobs / wall:.0f}/s")
    return {
        "threads": threads,
        "submissions": jobs,
        "per_s": round(jobs / wall, 1),
        "cpu_ms_per_submission": round(cpu / jobs * 1000, 3),
    }


LEADER_CPU = 1
"""With ``--pin``: the leader's CPU; everything else runs on CPU 0."""


def pin_leader(leader: Proc) -> None:
    """Every thread of the leader onto :data:`LEADER_CPU` (threads it makes later inherit the
    CPU of the thread that makes them: called again before each round)."""
    for tid in os.listdir(f"/proc/{leader.pid}/task"):
        try:
            os.sched_setaffinity(int(tid), {LEADER_CPU})
        except ProcessLookupError:
            continue  # a thread that ended meanwhile


def zookeeper_pid(zookeeper: TempZooKeeper) -> int:
    (server,) = zookeeper.ensemble.status()
    if server.pid is None:
        raise RuntimeError("the benchmark's ZooKeeper is not running")
    return server.pid


def start(cluster: BenchCluster, taskmanager: bool) -> tuple[Proc, Proc]:
    first = cluster.start_jobmanager("jm-1")
    cluster.wait_leader(60)
    second = cluster.start_jobmanager("jm-2")
    if taskmanager:
        cluster.start_taskmanager("tm-1", slots=2)
        cluster.wait_taskmanagers(1, 60)
    cluster.wait_jobmanagers(2, 60)
    leader = cluster.wait_leader(60)
    return leader, second if leader is first else first


def run(zookeeper: TempZooKeeper, parameters: Json) -> Json:
    pipeline = zookeeper.workdir / "quick.py"
    pipeline.write_text(QUICK)
    quorum = zookeeper.connect_string
    # The team's submission rate limit (2,000 jobs per 10 minutes) is what is measured
    # otherwise: a run of more than 2,000 jobs would be answered 429.
    no_limit = {"security.rate-limits.submissions.per-team": "0"}
    with bench_cluster(zookeeper.workdir, quorum, "submission", 4.0, **no_limit) as cluster:
        leader, standby = start(cluster, parameters["taskmanager"])
        per_thread = parameters["per_thread"]
        pinned = pin_leader if parameters["pinned"] else lambda _leader: None
        pinned(leader)
        others = {"standby": standby.pid, "zookeeper": zookeeper_pid(zookeeper)}
        # One unmeasured submission: the leader's first one loads code paths.
        submit_round(leader.address, pipeline, 1, 1, "warmup")
        rounds = {}
        for i, n in enumerate(parameters["threads"]):
            pinned(leader)
            rounds[f"threads_{n}"] = submit_round(
                leader.address,
                pipeline,
                n,
                per_thread[i],
                f"t{n}",
                leader=leader,
                others=others,
                processes=parameters["client_processes"],
            )
        forwarded = submit_round(
            standby.address, pipeline, 1, per_thread[0], "forwarded", leader=leader, others=others
        )
        batched = None
        if hasattr(Client, "submit_many"):  # not in the code before the batch endpoint
            batched = batch_round(
                leader.address,
                pipeline,
                parameters["batch_threads"],
                parameters["batches"],
                parameters["batch"],
                leader=leader,
            )
        cluster.check_alive()
        ceiling = raw_fenced_creates(quorum, 16, parameters["ceiling_per_thread"])
        grouped = raw_group_commits(quorum, 16, parameters["ceiling_per_thread"])
    busiest = rounds[f"threads_{max(parameters['threads'])}"]
    ratio = busiest["jobs_per_s"] / ceiling["per_s"]
    return {
        "leader": rounds,
        "forwarded_1_thread": forwarded,
        "batch": batched,
        "raw_fenced_creates": ceiling,
        "raw_group_committed_submissions": grouped,
        "busiest_over_raw_creates": round(ratio, 3),
        "busiest_over_raw_group_commits": round(busiest["jobs_per_s"] / grouped["per_s"], 3),
    }


def rows(results: Json) -> list[Json]:
    table = []
    for key, r in results["leader"].items():
        table.append(
            summary_row(
                f"submissions accepted per second, {r['threads']} client thread(s)",
                r["jobs_per_s"],
                "jobs/s",
                goal="",
                met=None,
                note=f"{r['jobs']} jobs; latency p50 {r['latency_ms']['p50']:.1f} ms, "
                f"p99 {r['latency_ms']['p99']:.1f} ms; leader CPU "
                f"{r['cpu_ms_per_job']['leader']:.2f} ms/job",
                digits=1,
            )
        )
        table.append(
            summary_row(
                f"submit latency p50, {r['threads']} client thread(s)",
                r["latency_ms"]["p50"],
                "ms",
                goal="",
                met=None,
                note=f"p99 {r['latency_ms']['p99']:.1f} ms ({key})",
                digits=1,
            )
        )
    ceiling = results["raw_fenced_creates"]
    table.append(
        _ratio_row(
            "busiest round over raw fenced creates (16 threads, same ZooKeeper, same run)",
            results["busiest_over_raw_creates"],
            f"raw fenced creates {ceiling['per_s']:.0f}/s",
        )
    )
    grouped = results.get("raw_group_committed_submissions")
    if grouped is not None:
        table.append(
            _ratio_row(
                "busiest round over the submissions' own ZooKeeper writes, group-committed"
                " from 16 threads (same ZooKeeper, same run, no HTTP or blob)",
                results["busiest_over_raw_group_commits"],
                f"raw group-committed submission writes {grouped['per_s']:.0f}/s",
            )
        )
    b = results.get("batch")
    if b is not None:
        table.append(
            summary_row(
                f"submissions accepted per second, batches of {b['batch']} from"
                f" {b['threads']} client thread(s)",
                b["jobs_per_s"],
                "jobs/s",
                goal="",
                met=None,
                note=f"{b['jobs']} jobs; leader CPU {b['cpu_ms_per_job']['leader']:.2f} ms/job,"
                f" clients {b['cpu_ms_per_job']['clients']:.2f} ms/job; batch p50"
                f" {b['batch_latency_ms']['p50']:.0f} ms",
                digits=1,
            )
        )
    f = results["forwarded_1_thread"]
    table.append(
        summary_row(
            "submit latency p50 through the standby (forwarded), 1 thread",
            f["latency_ms"]["p50"],
            "ms",
            goal="",
            met=None,
            note=f"p99 {f['latency_ms']['p99']:.1f} ms, {f['jobs_per_s']} jobs/s; CPU a job:"
            f" leader {f['cpu_ms_per_job']['leader']:.2f} ms, standby"
            f" {f['cpu_ms_per_job']['standby']:.2f} ms",
            digits=1,
        )
    )
    return table


def _ratio_row(figure: str, ratio: float, note: str) -> Json:
    return summary_row(figure, ratio, "ratio", goal="", met=None, note=note, digits=3)


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--threads", default=None, help="client threads, comma-separated (1,4,16)")
    cli.add_argument("--per-thread", default=None, help="jobs per thread, per count (60,40,40)")
    cli.add_argument(
        "--taskmanager", action="store_true", help="run the jobs on a TaskManager meanwhile"
    )
    cli.add_argument("--batch", type=int, default=50, help="jobs per batch (submit_many)")
    cli.add_argument("--batches", type=int, default=None, help="batches per batch thread")
    cli.add_argument("--batch-threads", type=int, default=4, help="threads of submit_many")
    cli.add_argument(
        "--pin", action="store_true", help="the leader on a CPU of its own, the rest on another"
    )
    cli.add_argument(
        "--client-processes",
        action="store_true",
        help="each client of the leader's rounds in a process of its own (default: threads)",
    )
    args = cli.parse_args()
    pinned = args.pin and len(os.sched_getaffinity(0)) >= 2
    if pinned:
        os.sched_setaffinity(0, {0})  # this process and every process it starts
    threads = [int(n) for n in (args.threads or ("1,16" if args.quick else "1,4,16")).split(",")]
    default_per = "5,3" if args.quick else "60,40,40"
    per_thread = [int(n) for n in (args.per_thread or default_per).split(",")]
    if len(per_thread) < len(threads):
        per_thread += [per_thread[-1]] * (len(threads) - len(per_thread))
    parameters: Json = {
        "threads": threads,
        "per_thread": per_thread,
        "jobmanagers": 2,
        "taskmanager": args.taskmanager,
        "taskmanager_slots": 2 if args.taskmanager else 0,
        "ceiling_per_thread": 20 if args.quick else 100,
        "batch": args.batch,
        "batches": args.batches or (1 if args.quick else 4),
        "batch_threads": 1 if args.quick else args.batch_threads,
        "quick": args.quick,
        "pinned": pinned,
        "client_processes": args.client_processes,
    }

    def body() -> Json:
        with temp_zookeeper("submission") as zookeeper:
            results = run(zookeeper, parameters)
            return cluster_document("submission", parameters, results, rows(results), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
