"""Footprint: memory of idle JobManagers and TaskManager; ZooKeeper bytes per job.

A cluster of real processes (2 JobManagers, 1 TaskManager). Memory is the resident set
(RSS, psutil) of each process, sampled ``--samples`` times over a few seconds once the cluster
is ready, highest sample reported:

- idle: the leader, the standby and the TaskManager, each process alone (an idle process
  has no children: a JobManager's hook processes and a TaskManager's runners exist only for
  jobs);
- loaded: the same with ``--jobs`` long-running :data:`_cluster.TICKING` pipelines, the
  TaskManager both alone and with its descendants (the runner processes, one per attempt).

ZooKeeper bytes per job, at ``high-availability.record-format`` 2 (the default) and then 1,
each cluster on its own ZooKeeper: the server's ``mntr`` ``zk_approximate_data_size`` (data
plus path bytes of every znode) and ``zk_znode_count``, before and after the jobs were submitted and
run, divided by the number of jobs. The breakdown (``zk_per_job_znodes``) says which znodes
those are and what each costs: the cluster's tree is read before and after (a kazoo client
with the cluster's credential), and every znode created or grown in between is counted under
its path with the job id as ``<job-id>``: its path bytes (the full path, as the server counts
it; the benchmark's root ``/steward-bench/footprint`` is 8 bytes longer than the default
``/steward/default``) and its data bytes, averaged over the jobs.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import psutil
from kazoo.client import KazooClient

from _cluster import TICKING, BenchCluster, bench_cluster, rss_mib, tick_count
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
from steward.client import Client
from steward.testing.processes import Proc

ZK_BYTES_GOAL = 600


def rss(procs: dict[str, tuple[Proc, bool]], samples: int) -> dict[str, float]:
    """Highest RSS in MiB of each named process (``True``: with its descendants)."""
    seen: dict[str, list[int]] = {name: [] for name in procs}
    for _ in range(samples):
        for name, (proc, children) in procs.items():
            seen[name].append(proc.rss_bytes(children=children))
        time.sleep(0.5)  # spread the samples over a few seconds (not synchronisation)
    return {name: rss_mib(max(values)) for name, values in seen.items()}


def zk_counts(zookeeper: TempZooKeeper) -> tuple[int, int]:
    mntr = zookeeper.monitor()
    return int(mntr["zk_approximate_data_size"]), int(mntr["zk_znode_count"])


def zk_tree(cluster: BenchCluster) -> dict[str, tuple[int, int]]:
    """Every znode under the cluster's root: path -> (path bytes, data bytes)."""
    settings = cluster.settings
    client = KazooClient(
        settings["high-availability.zookeeper.quorum"],
        **cluster.zookeeper_access.kazoo_options(),
    )
    client.start(timeout=30)
    try:
        tree: dict[str, tuple[int, int]] = {}
        pending = [
            f"{settings['high-availability.zookeeper.root']}/{settings['high-availability.cluster-id']}"
        ]
        while pending:
            path = pending.pop()
            data, _stat = client.get(path)
            tree[path] = (len(path.encode()), len(data))
            pending.extend(f"{path}/{child}" for child in client.get_children(path))
        return tree
    finally:
        client.stop()
        client.close()


_JOB_ID = re.compile(r"footprint-\d{3}")


def breakdown(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], jobs: int
) -> Json:
    """What the jobs added to the tree, per znode kind (path with ``<job-id>``), per job."""
    kinds: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for path, (path_bytes, data_bytes) in after.items():
        old_path, old_data = before.get(path, (0, 0))
        if (path_bytes - old_path, data_bytes - old_data) != (0, 0):
            kinds[_JOB_ID.sub("<job-id>", path)].append(
                (path_bytes - old_path, data_bytes - old_data)
            )
    znodes = {
        kind: {
            "znodes_per_job": round(len(sizes) / jobs, 2),
            "path_bytes": round(sum(p for p, _ in sizes) / len(sizes), 1),
            "data_bytes": round(sum(d for _, d in sizes) / len(sizes), 1),
            "bytes_per_job": round(sum(p + d for p, d in sizes) / jobs, 1),
        }
        for kind, sizes in sorted(kinds.items())
    }
    total = sum(kind["bytes_per_job"] for kind in znodes.values())
    return {"zk_per_job_znodes": znodes, "zk_tree_bytes_per_job": round(total, 1)}


def run(zookeeper: TempZooKeeper, parameters: Json, record_format: int) -> Json:
    pipeline = zookeeper.workdir / "ticking.py"
    pipeline.write_text(TICKING)
    jobs, samples = parameters["jobs"], parameters["samples"]
    record_setting = {"high-availability.record-format": str(record_format)}
    with bench_cluster(
        zookeeper.workdir, zookeeper.connect_string, "footprint", 4.0, **record_setting
    ) as cluster:
        first = cluster.start_jobmanager("jm-1")
        cluster.wait_leader(60)
        second = cluster.start_jobmanager("jm-2")
        tm = cluster.start_taskmanager("tm-1", slots=jobs)
        cluster.wait_taskmanagers(1, 60)
        cluster.wait_jobmanagers(2, 60)
        leader = cluster.wait_leader(60)
        standby = second if leader is first else first
        idle = rss(
            {"leader": (leader, False), "standby": (standby, False), "taskmanager": (tm, False)},
            samples,
        )
        progress(f"idle RSS MiB: {idle}")
        data_before, znodes_before = zk_counts(zookeeper)
        tree_before = zk_tree(cluster)
        procs = {"leader": leader, "standby": standby, "taskmanager": tm}
        loaded = _with_jobs(cluster, procs, parameters, pipeline)
        data_after, znodes_after = zk_counts(zookeeper)
        tree_after = zk_tree(cluster)
    per_job = {
        "zk_approximate_data_size_bytes_per_job": round((data_after - data_before) / jobs, 1),
        "zk_znodes_per_job": round((znodes_after - znodes_before) / jobs, 2),
        **breakdown(tree_before, tree_after, jobs),
    }
    progress(f"record format {record_format}: loaded RSS MiB: {loaded}; ZooKeeper: {per_job}")
    return {"idle_rss_mib": idle, "loaded_rss_mib": loaded, **per_job}


ZK_FIGURES = (
    "zk_approximate_data_size_bytes_per_job",
    "zk_znodes_per_job",
    "zk_per_job_znodes",
    "zk_tree_bytes_per_job",
)
"""What the run at record format 1 reports (its memory is the same cluster's)."""


def _with_jobs(
    cluster: BenchCluster, procs: dict[str, Proc], parameters: Json, pipeline: Path
) -> dict[str, float]:
    leader, tm = procs["leader"], procs["taskmanager"]
    jobs = parameters["jobs"]
    truth = cluster.workdir / "truth"
    truth.mkdir()
    with Client([leader.address], timeout=60) as client:
        for n in range(jobs):
            job_id = f"footprint-{n:03d}"
            client.submit(pipeline, args=[str(truth / f"{job_id}.log"), "86400"], job_id=job_id)
    wait_until(
        lambda: (
            cluster.check_alive()
            or all(tick_count(truth / f"footprint-{n:03d}.log") for n in range(jobs))
        ),
        60 + 2.0 * jobs,
        "every job ticking",
        interval=0.2,
    )
    loaded = rss(
        {
            "leader": (leader, False),
            "standby": (procs["standby"], False),
            "taskmanager": (tm, False),
            "taskmanager_with_runners": (tm, True),
        },
        parameters["samples"],
    )
    runners = [c.memory_info().rss for c in psutil.Process(tm.pid).children(recursive=True)]
    loaded["runner_median"] = rss_mib(int(statistics.median(runners))) if runners else 0.0
    return loaded


def rows(results: Json, jobs: int) -> list[Json]:
    idle, loaded = results["idle_rss_mib"], results["loaded_rss_mib"]
    return [
        summary_row(
            "idle JobManager RSS, leader",
            idle["leader"],
            "MiB",
            goal="",
            met=None,
            note=f"process alone (no children when idle); standby {idle['standby']} MiB",
            digits=1,
        ),
        summary_row(
            "idle TaskManager RSS",
            idle["taskmanager"],
            "MiB",
            goal="",
            met=None,
            note="process alone (no runners when idle)",
            digits=1,
        ),
        summary_row(
            f"leader RSS with {jobs} running jobs",
            loaded["leader"],
            "MiB",
            goal="",
            met=None,
            note=f"TaskManager alone {loaded['taskmanager']} MiB, with its runners "
            f"{loaded['taskmanager_with_runners']} MiB (median runner "
            f"{loaded['runner_median']} MiB)",
            digits=1,
        ),
        summary_row(
            "ZooKeeper bytes per running job",
            results["zk_approximate_data_size_bytes_per_job"],
            "B",
            goal=f"< {ZK_BYTES_GOAL} B (issue 22)",
            met=results["zk_approximate_data_size_bytes_per_job"] < ZK_BYTES_GOAL,
            note=f"zk_approximate_data_size delta / {jobs} jobs; "
            f"{results['zk_znodes_per_job']} znodes per job: "
            + ", ".join(  # each kind without the cluster's root: jobs/<job-id>/status
                f"{kind.split('/', 3)[-1]} {znode['bytes_per_job']} B"
                for kind, znode in results["zk_per_job_znodes"].items()
            ),
            digits=1,
        ),
        *_format_1_rows(results, jobs),
    ]


def _format_1_rows(results: Json, jobs: int) -> list[Json]:
    if "record_format_1" not in results:  # a document from before record format 2
        return []
    older = results["record_format_1"]
    return [
        summary_row(
            "ZooKeeper bytes per running job, record format 1",
            older["zk_approximate_data_size_bytes_per_job"],
            "B",
            goal="",
            met=None,
            note=f"the same run on its own ZooKeeper, high-availability.record-format=1; "
            f"format 2 above is {results['zk_approximate_data_size_bytes_per_job']} B",
            digits=1,
        )
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="running jobs for the loaded figures")
    cli.add_argument("--samples", type=int, default=None, help="RSS samples per process (6)")
    args = cli.parse_args()
    parameters: Json = {
        "jobs": args.jobs or (3 if args.quick else 20),
        "samples": args.samples or (2 if args.quick else 6),
        "rss": "psutil memory_info().rss; idle processes alone",
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("footprint") as zookeeper:
            results = run(zookeeper, parameters, 2)
            # Back to back, each on its own ZooKeeper (the same paths): the format of the
            # releases before 2026-11-28, which a rolling upgrade keeps until every process reads 2.
            with temp_zookeeper("footprint") as older:
                format_1 = run(older, {**parameters, "samples": 1}, 1)
            results["record_format"] = 2
            results["record_format_1"] = {key: format_1[key] for key in ZK_FIGURES}
            return cluster_document(
                "footprint", parameters, results, rows(results, parameters["jobs"]), zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
