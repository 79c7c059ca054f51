"""Wait cost: what following jobs costs the JobManager, by polling vs. by live events (issue 14).

One local cluster of real processes (a ZooKeeper, 1 JobManager, 1 TaskManager with a slot per
job). Each round submits N jobs (default 20) that each run ``--seconds`` (a ticking pipeline,
no Spark), and N client threads wait for their results, in one of two ways:

- ``polling``: what ``Client.wait`` did before live events: ``GET /v1/jobs/{id}`` every
  ``--poll`` seconds (50 ms, as the word-count overhead benchmark waited) until terminal;
- ``events``: ``Client.wait`` as it is: the job's stream (``GET /v1/events?job=``), a GET after
  the stream's first reset and one at the end.

For each round: the JobManager's CPU seconds (user + system) from the first submit to the last
result, and the requests the clients sent. The ways alternate over ``--repeats`` rounds in the
same run (on the same cluster), and the ratio is the polling CPU over the events CPU, by
medians. Printed as JSON.

    .venv/bin/python benchmarks/wait_cost.py [--quick] [--jobs 20] [--seconds 15] [--repeats 3]
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable

import httpx
import psutil

from _cluster import TICKING, BenchCluster, bench_cluster
from _common import Json, cluster_document, parser, progress, run_main, summary_row, temp_zookeeper
from steward.client import Client
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc


class Counting(httpx.HTTPTransport):
    """Counts the requests a client sends (each one reaches the JobManager)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.count += 1
        return super().handle_request(request)


def poll_until_done(client: Client, job_id: str, poll: float) -> str:
    """The old ``Client.wait``: a GET every ``poll`` seconds until the job is terminal."""
    while True:
        view = client.job(job_id)
        if view.state.is_terminal:
            return view.state.value
        time.sleep(poll)  # the loop being measured, not a synchronisation


def follow_events(client: Client, job_id: str, _poll: float) -> str:
    return client.wait(job_id, timeout=600).state.value


WAYS: dict[str, Callable[[Client, str, float], str]] = {
    "polling": poll_until_done,
    "events": follow_events,
}


def cpu_seconds(proc: Proc) -> float:
    times = psutil.Process(proc.pid).cpu_times()
    return float(times.user + times.system)


def one_round(cluster: BenchCluster, leader: Proc, way: str, round_no: int, args: _Args) -> Json:
    pipeline = cluster.workdir / "ticking.py"
    pipeline.write_text(TICKING)
    transport = Counting()
    states: list[str] = []
    with Client([leader.address], token=kit_admin_token(), timeout=60) as submitter:
        before = cpu_seconds(leader)
        started = time.monotonic()
        ids = []
        for n in range(args.jobs):
            job_id = f"{way}-{round_no}-{n}"
            truth = cluster.workdir / f"{job_id}.truth"
            submitter.submit(pipeline, args=[str(truth), str(args.seconds)], job_id=job_id)
            ids.append(job_id)

        def wait_one(job_id: str) -> None:
            with Client(
                [leader.address], token=kit_admin_token(), timeout=60, transport=transport
            ) as client:
                states.append(WAYS[way](client, job_id, args.poll))

        threads = [threading.Thread(target=wait_one, args=(job_id,)) for job_id in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.monotonic() - started
        used = cpu_seconds(leader) - before
    assert states.count("FINISHED") == args.jobs, states
    progress(
        f"{way} round {round_no}: {used:.2f} CPU s in {took:.1f} s, {transport.count} requests"
    )
    return {
        "way": way,
        "cpu_s": round(used, 3),
        "wall_s": round(took, 2),
        "requests": transport.count,
    }


class _Args:
    def __init__(self, jobs: int, seconds: float, poll: float, repeats: int) -> None:
        self.jobs, self.seconds, self.poll, self.repeats = jobs, seconds, poll, repeats


def measure(cluster: BenchCluster, args: _Args) -> Json:
    leader = cluster.start_jobmanager("jm-1")
    cluster.start_taskmanager("tm-1", slots=args.jobs)
    cluster.wait_taskmanagers(1, 120)
    rounds = []
    for round_no in range(args.repeats):
        order = ["polling", "events"] if round_no % 2 == 0 else ["events", "polling"]
        rounds += [one_round(cluster, leader, way, round_no, args) for way in order]
    medians = {
        way: {
            key: statistics.median(r[key] for r in rounds if r["way"] == way)
            for key in ("cpu_s", "wall_s", "requests")
        }
        for way in WAYS
    }
    ratio = medians["polling"]["cpu_s"] / max(medians["events"]["cpu_s"], 1e-3)
    return {"rounds": rounds, "medians": medians, "cpu_ratio_polling_over_events": round(ratio, 2)}


def rows(result: Json, args: _Args) -> list[Json]:
    medians = result["medians"]
    return [
        summary_row(
            f"JobManager CPU following {args.jobs} jobs of {args.seconds:g} s, events",
            medians["events"]["cpu_s"],
            "CPU s",
            goal="less than polling",
            met=medians["events"]["cpu_s"] < medians["polling"]["cpu_s"],
            peer=medians["polling"]["cpu_s"],
            note=f"peer: polling every {args.poll:g} s; requests"
            f" {medians['events']['requests']:.0f} vs {medians['polling']['requests']:.0f}",
        )
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="jobs followed at once (20)")
    cli.add_argument("--seconds", type=float, default=None, help="each job's run time (15)")
    cli.add_argument("--poll", type=float, default=0.05, help="the polling interval (0.05)")
    cli.add_argument("--repeats", type=int, default=None, help="rounds of each way (3)")
    options = cli.parse_args()
    args = _Args(
        options.jobs or (4 if options.quick else 20),
        options.seconds or (3.0 if options.quick else 15.0),
        options.poll,
        options.repeats or (1 if options.quick else 3),
    )
    parameters: Json = {**vars(args), "quick": options.quick}

    def body() -> Json:
        with temp_zookeeper("wait-cost") as zookeeper:
            with bench_cluster(
                zookeeper.workdir, zookeeper.connect_string, "wait-cost", 10.0, verbose=False
            ) as cluster:
                result = measure(cluster, args)
            return cluster_document("wait_cost", parameters, result, rows(result, args), zookeeper)

    return run_main(body, options.verbose)


if __name__ == "__main__":
    sys.exit(main())
