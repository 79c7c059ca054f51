"""Logs from anywhere (issue 14): what reading a large attempt log costs, straight from the
TaskManager's port and through a JobManager's proxy, and that neither holds it in memory.

One cluster (1 JobManager, 1 TaskManager, the log cap off) runs a job that prints
``--megabytes`` MB of lines and ends. Then, ``--repeats`` times each, the whole log is read
(a) from the TaskManager's ``/v1/attempts/{job}/1/log`` and (b) through the JobManager's
``/v1/jobs/{job}/attempts/1/log``, counting bytes as they arrive (nothing kept), while the
TaskManager's and the JobManager's resident memory is sampled every 50 ms. Reported: MB/s
(median), and each process's peak RSS during the reads over its RSS before (what a read costs
in memory: far below the log's size when it streams).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

from _cluster import bench_cluster
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
from steward.testing.processes import Proc

PRINTER = """
def main(ctx):
    line = "x" * 1023 + "\\n"
    for _ in range(int(ctx.args[0]) * 1024):
        print(line, end="")
    return {"ok": True}
"""


class PeakRss:
    """The highest resident memory of ``procs`` seen every 50 ms while it runs."""

    def __init__(self, procs: list[Proc]) -> None:
        self.procs = procs
        self.peak = {p.id: p.rss_bytes() for p in procs}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            for proc in self.procs:
                self.peak[proc.id] = max(self.peak[proc.id], proc.rss_bytes())


def _read(client: httpx.Client, url: str) -> tuple[int, float]:
    started = time.perf_counter()
    size = 0
    with client.stream("GET", url, timeout=120) as answer:
        answer.raise_for_status()
        for block in answer.iter_raw():
            size += len(block)
    return size, time.perf_counter() - started


def run(zookeeper: TempZooKeeper, parameters: Json) -> Json:
    uncapped = {"taskmanager.attempt-log.max-size": "0"}
    quorum = zookeeper.connect_string
    with bench_cluster(zookeeper.workdir, quorum, "logs", 4.0, verbose=True, **uncapped) as c:
        jobmanager = c.start_jobmanager("jm-1")
        taskmanager = c.start_taskmanager("tm-1", 1)
        c.wait_ready(taskmanagers=1)
        pipeline = c.workdir / "printer.py"
        pipeline.write_text(PRINTER)
        with c.client(timeout=60) as client:
            client.submit(pipeline, args=[str(parameters["megabytes"])], job_id="printer")
            client.wait("printer", timeout=600)
            (tm,) = client.cluster().taskmanagers
        log_file = Path(c.workdir / "work" / "tm-1" / "printer" / "1" / "runner.log")
        size = wait_until(lambda: log_file.stat().st_size, 30, "the log is written")
        progress(f"log of {size / 1e6:.1f} MB written")
        urls = {
            "taskmanager": f"{tm.http_address}/v1/attempts/printer/1/log",
            "proxy": f"{jobmanager.address}/v1/jobs/printer/attempts/1/log",
        }
        results: Json = {"log_bytes": size}
        procs = [jobmanager, taskmanager]
        for name, url in urls.items():
            before = {p.id: p.rss_bytes() for p in procs}
            rates = []
            with PeakRss(procs) as peak:
                for _ in range(int(parameters["repeats"])):
                    got, seconds = _read(c.http, url)
                    assert got == size, (got, size)
                    rates.append(size / seconds / 1e6)
            results[name] = {
                "mb_per_s": round(statistics.median(rates), 1),
                "mb_per_s_all": [round(r, 1) for r in rates],
                "rss_growth_mb": {
                    p.id: round((peak.peak[p.id] - before[p.id]) / 1e6, 1) for p in procs
                },
            }
            progress(f"{name}: {results[name]}")
        return results


def rows(results: Json, parameters: Json) -> list[Json]:
    mb = results["log_bytes"] / 1e6
    table = []
    for name in ("taskmanager", "proxy"):
        growth = max(results[name]["rss_growth_mb"].values())
        table.append(
            summary_row(
                f"read a {mb:.0f} MB log ({name})",
                results[name]["mb_per_s"],
                "MB/s",
                goal="streamed: memory growth far below the log's size",
                met=growth < mb / 4,
                note=f"largest RSS growth {growth:.1f} MB",
            )
        )
    return table


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--megabytes", type=int, default=None, help="size of the log (100)")
    cli.add_argument("--repeats", type=int, default=None, help="reads of each way (3)")
    args = cli.parse_args()
    parameters: Json = {
        "megabytes": args.megabytes or (10 if args.quick else 100),
        "repeats": args.repeats or (1 if args.quick else 3),
        "quick": args.quick,
    }

    def body() -> Json:
        with temp_zookeeper("log_stream") as zookeeper:
            results = run(zookeeper, parameters)
            table = rows(results, parameters)
            return cluster_document("log_stream", parameters, results, table, zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
