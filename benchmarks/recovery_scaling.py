"""Recovery scaling: a new leader granted with N persisted jobs; time until all are recovered.

For each N (100, 1,000, 10,000) in a fresh namespace: this process wins the election and
writes N jobs as a leader would have left them, through Steward's own stores on the real
ZooKeeper (in parallel threads; not timed): a job graph (blob + fenced pointer) and a status
record each (SCHEDULED, waiting for a slot), for a small pipeline without ``initialize`` (no
hook process) and with no TaskManager up (nothing runs): no lease, so every job is to be
scheduled again. Then it leaves the election and starts one JobManager process,
and measures:

- ``recovery_s``: the leader's own figure, its "recovery done ... seconds=" log line (from
  the grant to every job recovered: results, leases, graphs, status records read);
- ``ready_s``: from the process spawn until ``/readyz`` answers 200 as the leader (adds the
  Python start-up, the ZooKeeper connection and the election).

The curve must be linear or better: per-job time at each N, and the ratio
(t(10,000)/10,000) / (t(100)/100) of the recovery times (goal: at most 1).
"""

from __future__ import annotations

import base64
import hashlib
import re
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _cluster import QUICK, ZK_ROOT, bench_cluster, configured_default
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.artifacts.pipeline import may_define_initialize
from steward.ha.acl import ZooKeeperAccess
from steward.ha.election import LeaderElection
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.jobmanager.leader.jobmaster import JobMaster
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.statuses import JobStatusStore
from steward.wire.jobs import Artifact, ArtifactKind, JobGraph, JobSpec
from steward.wire.runner_protocol import FinishedEvent

RECOVERY_DONE = re.compile(r"recovery done epoch=\d+ seconds=([0-9.]+) (.*)$", re.MULTILINE)
LISTED = re.compile(r"recovery listed epoch=\d+ seconds=([0-9.]+)")
CHUNK = re.compile(r"recovery chunk .* read_s=([0-9.]+) .*adopt_s=([0-9.]+)")
WROTE = re.compile(r"recovery wrote records epoch=\d+ seconds=([0-9.]+)")
LATER = re.compile(r"recovery wrote records epoch=\d+ seconds=[0-9.]+ later=([1-9]\d*)")
WROTE_LATE = re.compile(r"recovery wrote records late epoch=\d+ seconds=([0-9.]+)")
WRITERS = 32


def artifact() -> Artifact:
    code = QUICK.encode()
    return Artifact(
        filename="quick.py",
        kind=ArtifactKind.PYTHON_FILE,
        sha256=hashlib.sha256(code).hexdigest(),
        data_b64=base64.b64encode(code).decode(),
    )


def persist_jobs(quorum: str, root: str, storage: str, jobs: int, access: ZooKeeperAccess) -> float:
    """Write ``jobs`` job graphs and status records as a leader, with the cluster's ZooKeeper
    ``access`` (its ACLs, as the cluster's own leader would); returns the seconds taken."""
    shared = artifact()
    hookless = not may_define_initialize(shared)
    assert hookless, "the benchmark's pipeline must not define initialize"
    with Session(quorum, root, name="bench-writer", access=access) as session:
        election = LeaderElection(session, "bench-writer", "benchmark").start()
        leadership = wait_until(lambda: election.leadership, 30.0, "leadership")
        fence: Fence = leadership.fence
        graphs = JobGraphStore(session, BlobStore(storage))
        statuses = JobStatusStore(session)

        def write(index: int) -> None:
            spec = JobSpec(job_id=f"job-{index:05d}", name=f"recovered {index}")
            graph = JobGraph(spec=spec, artifact=shared, submitted_at=time.time())
            pointer = graphs.write_blob(fence, graph)
            master = JobMaster(spec, pointer, graph.submitted_at)
            # As the leader's submission leaves it: waiting for a slot, no hook to run.
            master.hookless = hookless
            master.initializing()
            master.initialized(FinishedEvent())
            record = master.record(leadership.epoch)
            # As the leader's submission writes them: the pointer and the job's first record
            # in one fenced transaction, group-committed with the other writers' (a put then
            # a record write took five round trips a job: 100,000 jobs did not fit a run).
            graphs.add(fence, spec.job_id, pointer, statuses.first_creates(record))

        started = time.perf_counter()
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(write, range(jobs)))
        seconds = time.perf_counter() - started
        election.stop()
    return seconds


def measure(zookeeper: TempZooKeeper, jobs: int, deadline: float) -> Json:
    cluster_id = f"recovery-{jobs}"
    with bench_cluster(zookeeper.workdir, zookeeper.connect_string, cluster_id, 10.0) as cluster:
        storage = cluster.settings["high-availability.storage-dir"]
        written = persist_jobs(
            zookeeper.connect_string,
            f"{ZK_ROOT}/{cluster_id}",
            storage,
            jobs,
            cluster.zookeeper_access,
        )
        progress(f"{jobs} jobs persisted in {written:.1f}s; starting the JobManager")
        started = time.perf_counter()
        proc = cluster.start_jobmanager("jm-1")
        wait_until(
            lambda: cluster.check_alive() or cluster.serving_leader(proc),
            deadline,
            "the leader recovered",
            interval=0.02,
        )
        ready = time.perf_counter() - started
        found = wait_until(
            lambda: RECOVERY_DONE.search(proc.log.read_text(errors="replace")), 10.0, "log line"
        )
        recovery = float(found.group(1))
        phases = recovery_phases(proc.log.read_text(errors="replace"))
        # What no line times: the jobs recovered one by one (each reading its graph blob).
        phases["job_by_job"] = round(recovery - sum(v or 0.0 for v in phases.values()), 3)
        outcome = dict(pair.split("=", 1) for pair in found.group(2).split())
        late = late_records_s(proc.log, deadline)
        proc.signal(signal.SIGTERM)
    progress(
        f"{jobs} jobs: recovery {recovery:.3f}s, ready after {ready:.3f}s, {outcome}, {phases}"
    )
    if int(outcome.get("jobs", -1)) != jobs or int(outcome.get("failed", 0)):
        raise RuntimeError(f"recovered {outcome} of {jobs} jobs")
    return {
        "jobs": jobs,
        "write_s": round(written, 3),
        "recovery_s": recovery,
        "ready_s": round(ready, 3),
        "recovery_ms_per_job": round(recovery / jobs * 1000, 4),
        "summary": outcome,
        "phases_s": phases,
        "records_written_after_ready_s": late,
    }


def late_records_s(log: Path, deadline: float) -> float | None:
    """Seconds the leader spent writing, after it was ready, the records of the jobs it
    recovered from them (None: it wrote none late, or is a version that writes all before)."""
    if not LATER.search(log.read_text(errors="replace")):
        return None
    found = wait_until(
        lambda: WROTE_LATE.search(log.read_text(errors="replace")), deadline, "late records"
    )
    return float(found.group(1))


def recovery_phases(log: str) -> Json:
    """Where the leader's recovery time went, from its own log lines: the listings, the
    chunks' batched reads, recovering them (from records, then job by job), the records'
    batched writes."""
    listed = LISTED.search(log)
    chunks = [(float(read), float(rest)) for read, rest in CHUNK.findall(log)]
    wrote = WROTE.search(log)
    return {
        "listing": float(listed.group(1)) if listed else None,
        "chunk_reads": round(sum(read for read, _ in chunks), 3),
        "from_records": round(sum(rest for _, rest in chunks), 3),
        "records_written": float(wrote.group(1)) if wrote else None,
    }


def rows(points: list[Json]) -> list[Json]:
    result = [
        summary_row(
            f"recovery of {p['jobs']:,} jobs (leader's own figure)",
            p["recovery_s"],
            "s",
            goal="",
            met=None,
            note=f"{p['recovery_ms_per_job']:.3f} ms per job; /readyz 200 {p['ready_s']:.2f} s "
            "after the process spawn",
        )
        for p in points
    ]
    if len(points) > 1:
        low, high = points[0], points[-1]
        ratio = high["recovery_ms_per_job"] / low["recovery_ms_per_job"]
        result.append(
            summary_row(
                f"per-job recovery time, {high['jobs']:,} over {low['jobs']:,} jobs",
                ratio,
                "ratio",
                goal="<= 1 (linear or better)",
                met=ratio <= 1.0,
                note=f"{high['recovery_ms_per_job']:.3f} vs {low['recovery_ms_per_job']:.3f} "
                "ms per job",
            )
        )
    return result


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated (100,1000,10000)")
    args = cli.parse_args()
    counts = [
        int(n) for n in (args.jobs or ("20,100" if args.quick else "100,1000,10000")).split(",")
    ]
    parameters: Json = {
        "jobs": counts,
        "writers": WRITERS,
        "recovery_parallelism": configured_default("jobmanager.recovery-parallelism"),
        "taskmanagers": 0,
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("recovery-scaling") as zookeeper:
            points = [measure(zookeeper, n, 120 + n * 0.05) for n in counts]
            results = {"points": points}
            return cluster_document(
                "recovery_scaling", parameters, results, rows(points), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
