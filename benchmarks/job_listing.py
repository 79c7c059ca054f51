"""Reads at scale (issue 22): a page of ``GET /v1/jobs`` with 1,000 to 100,000 jobs known, and
the live events stream under 1,000 state changes a second; and Livy's ``GET /batches``
(one job in ten is a Livy batch), first page and by offset from the middle.

One ZooKeeper, one JobManager process (the leader) and one JobManager in this process (a
standby: its index is the one measured).

- **Listing.** The standby's job index is filled with N synthetic jobs (90 % FINISHED, 8 %
  RUNNING, 2 % SCHEDULED; names, labels and submitters spread so each filter matches a known
  share). This is the load simulator: submitting 100,000 jobs at the measured submission rate
  would take most of an hour, and what the index holds is what its full read of ZooKeeper gives
  it. Every request is a real HTTP request through the real route (auth, validation, JSON).
  Each kind of page is asked ``--requests`` times, alternating with ``GET /healthz`` (the
  baseline, same server, same moment): p50 and p99 per page, and p50 over the baseline's.
  Also the memory the index holds per job (tracemalloc, building the synthetic entries).
- **Events.** ``--sse-jobs`` status records written straight to ``jobs/<id>/status`` with
  kazoo (what the leader writes, unfenced: the writer simulates a leader's write rate), each
  write a new state of one job, at ``--rate`` a second for ``--seconds``; one
  ``GET /v1/events`` stream on a standby JobManager process counts what arrives and how late
  (its receipt minus the record's ``updated_at``). A standby, since it is the one that follows
  the records through ZooKeeper watches: the leader's events come from its own writes, and
  these records are not its writes.

    .venv/bin/python benchmarks/job_listing.py [--quick] [--jobs 1000,10000,100000]
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import signal
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

from _cluster import BenchCluster, bench_cluster
from _common import (
    Json,
    cluster_document,
    parser,
    percentile,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.config.configuration import validate
from steward.ha.session import Session
from steward.jobmanager.indexed_job import IndexedJob, LatestAttempt
from steward.jobmanager.job_index import JobIndex, encode_cursor
from steward.jobmanager.manager import JobManager
from steward.long_lived_heap import LongLivedHeap
from steward.wire.livy import batch_job_id
from steward.wire.records import JobStatusRecord
from steward.wire.states import AttemptState, JobState

BASE_TIME = 1_700_000_000.0
LABELS = {
    (team, gold): {"team": f"t{team}", "tier": "gold" if gold else "std"}
    for team in range(20)
    for gold in (False, True)
}
GOAL_MS = 50.0


def synthetic_job(n: int) -> IndexedJob:
    """What :meth:`IndexedJob.of` makes of such a job's view (interned and shared fields)."""
    state = JobState.FINISHED if n % 50 < 45 else JobState.RUNNING if n % 50 < 49 else None
    state = state or JobState.SCHEDULED
    attempt = LatestAttempt(
        1, sys.intern(f"tm-{n % 1000}"), 1, AttemptState.FINISHED, BASE_TIME, None
    )
    return IndexedJob(
        job_id=batch_job_id(n // 10) if n % 10 == 5 else f"bench-{n:07d}",
        name=sys.intern(f"etl-{n % 50}"),
        state=state,
        submitted_at=BASE_TIME + n * 0.01,
        updated_at=BASE_TIME + n * 0.01 + 60,
        reason=None,
        attempt_count=1,
        failures=0,
        labels=LABELS[(n % 20, n % 100 == 0)],
        submitter=sys.intern(f"team-{n % 10}"),
        latest_attempt=None if state is JobState.SCHEDULED else attempt,
    )


def queries(n: int) -> dict[str, str]:
    middle = n // 2
    deep = encode_cursor((BASE_TIME + middle * 0.01, f"bench-{middle:07d}"))
    return {
        "first page (100)": "/v1/jobs",
        "deep page (cursor at the middle)": f"/v1/jobs?cursor={deep}",
        "largest page (1000)": "/v1/jobs?limit=1000",
        "state=RUNNING (8 %)": "/v1/jobs?state=RUNNING",
        "label tier=gold (1 %)": "/v1/jobs?label=tier%3Dgold",
        "name prefix + submitter (2 %)": "/v1/jobs?name=etl-7&submitter=team-7",
        "Livy GET /batches (10 % of jobs)": "/batches",
        "Livy GET /batches, offset at the middle": f"/batches?from={n // 20}&size=100",
    }


def timed_get(http: httpx.Client, path: str) -> float:
    started = time.perf_counter()
    answer = http.get(path)
    took = time.perf_counter() - started
    if answer.status_code != 200:
        raise RuntimeError(f"GET {path}: {answer.status_code} {answer.text[:300]}")
    return took


def latency(values: list[float]) -> Json:
    return {
        "p50_ms": round(percentile(values, 0.5) * 1000, 3),
        "p99_ms": round(percentile(values, 0.99) * 1000, 3),
    }


def measure_size(manager: JobManager, http: httpx.Client, n: int, requests: int) -> Json:
    tracemalloc.start()
    alone = JobIndex()
    alone.replace_all(synthetic_job(i) for i in range(n))
    held, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del alone
    manager.reader.index.replace_all(synthetic_job(i) for i in range(n))
    pages: Json = {}
    baseline: list[float] = []
    for name, path in queries(n).items():
        http.get(path)  # warm
        times = []
        for _ in range(requests):
            baseline.append(timed_get(http, "/healthz"))
            times.append(timed_get(http, path))
        pages[name] = latency(times)
    health = latency(baseline)
    for figures in pages.values():
        figures["p50_over_healthz"] = round(figures["p50_ms"] / health["p50_ms"], 2)
    worst = max(figures["p99_ms"] for figures in pages.values())
    progress(f"{n} jobs: worst p99 {worst:.1f} ms, healthz p50 {health['p50_ms']} ms")
    return {
        "jobs": n,
        "index_bytes_per_job": round(held / n),
        "healthz": health,
        "pages": pages,
        "worst_p99_ms": worst,
    }


def measure_listing(cluster: BenchCluster, sizes: list[int], requests: int) -> list[Json]:
    settings = {**cluster.settings, "jobmanager.port": "0"}
    config = validate(settings, dict.fromkeys(settings, "benchmark"))
    manager = JobManager(config, "jm-listing").start()
    # As in a JobManager's own process (cli/jobmanager.py): what survived a full collection
    # (the synthetic index among it) is left out of the next ones.
    heap = LongLivedHeap().start()
    try:
        wait_until(lambda: manager.reader.index.ready or None, 60, "the standby's index filled")
        with httpx.Client(
            base_url=manager.address, headers=cluster.headers, verify=cluster.tls.context
        ) as http:
            return [measure_size(manager, http, n, requests) for n in sizes]
    finally:
        heap.stop()
        manager.stop()


# ------------------------------------------------------------------------------ events


class Stream:
    """One ``GET /v1/events`` stream, read by a child process of its own (so that the writer's
    work in this process never delays a receipt), which writes each job event's receipt time
    to a file: what arrived, and how late (receipt minus the record's ``updated_at``)."""

    def __init__(self, cluster: BenchCluster, address: str, prefix: str, folder: Path) -> None:
        self._out = folder / "events.tsv"
        self._opened = folder / "stream.opened"
        verify: str | bool = cluster.settings.get("rest.ssl.ca") or True
        context = multiprocessing.get_context("spawn")
        self._child = context.Process(
            target=read_stream,
            args=(
                f"{address}/v1/events",
                cluster.headers,
                verify,
                prefix,
                (self._out, self._opened),
            ),
            daemon=True,
        )

    def start(self) -> Stream:
        self._child.start()
        wait_until(lambda: self._opened.exists() or None, 60, "the event stream open", 0.05)
        return self

    def stop(self) -> None:
        self._child.terminate()
        self._child.join(10)

    def received(self) -> tuple[list[float], dict[str, str]]:
        """The lag of each change received, and each job's latest reason seen."""
        lags: list[float] = []
        last: dict[str, str] = {}
        if not self._out.exists():
            return lags, last
        for line in self._out.read_text().splitlines():
            fields = line.split("\t")
            if len(fields) == 4:
                lags.append(float(fields[0]) - float(fields[2]))
                last[fields[1]] = fields[3]
        return lags, last


def read_stream(
    url: str, headers: dict[str, str], verify: str | bool, prefix: str, files: tuple[Path, Path]
) -> None:
    """The child's work: one line per job event of ``prefix``'s jobs into ``files[0]``, until
    terminated; ``files[1]`` is made once the stream is open."""
    out, opened = files
    timeout = httpx.Timeout(5, read=None)
    with (
        httpx.Client(headers=headers, verify=verify, timeout=timeout) as http,
        http.stream("GET", url) as answer,
        out.open("a") as sink,
    ):
        opened.touch()
        event = ""
        for line in answer.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "job":
                data = json.loads(line[6:])
                if data["job_id"].startswith(prefix) and data.get("reason"):
                    received = time.time()
                    sink.write(f"{received}\t{data['job_id']}\t{data['at']}\t{data['reason']}\n")
                    sink.flush()


_RECORDS: dict[str, dict[str, Any]] = {}


def status(job_id: str, n: int) -> bytes:
    """The status record of the job's ``n``-th change (0: its first), as the leader writes it:
    one record made by the model, then its JSON with a new state, reason and time (no pydantic
    in the writer's loop, which must reach 1,000 a second on a loaded 2-core machine)."""
    record = _RECORDS.get(job_id)
    if record is None:
        model = JobStatusRecord(
            job_id=job_id,
            name="sse",
            state=JobState.RUNNING,
            submitted_at=BASE_TIME,
            updated_at=time.time(),
            epoch=1,
            attempt_count=1,
        )
        record = _RECORDS[job_id] = json.loads(model.to_json())
    if n == 0:
        return json.dumps(record).encode()
    state = JobState.RUNNING if n % 2 else JobState.RESTARTING
    change = {"state": state.value, "reason": f"change {n}", "updated_at": time.time()}
    return json.dumps({**record, **change}).encode()


WRITERS = 2
"""Writer processes: one Python process does not reach 1,000 writes a second here."""


def write_share(
    settings: dict[str, str], ids: list[str], rate: float, seconds: float
) -> tuple[int, float, dict[str, str]]:
    """A writer process: ``rate`` status writes a second round robin over ``ids`` on a session
    of its own; (writes, seconds taken, each job's last reason)."""
    config = validate(settings, dict.fromkeys(settings, "benchmark"))
    session = Session.from_config(config, name="bench-writer").start()
    try:
        client, layout = session.client, session.layout
        total, tick = int(rate * seconds), 0.01
        per_tick = max(1, round(rate * tick))
        futures, last = [], {}
        started = time.monotonic()
        for sent in range(0, total, per_tick):
            for n in range(sent, min(total, sent + per_tick)):
                job_id = ids[n % len(ids)]
                futures.append(client.set_async(layout.job_status(job_id), status(job_id, n + 1)))
                last[job_id] = f"change {n + 1}"
            pause = started + (sent + per_tick) / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # the pacing being measured, not a synchronisation
        for future in futures:
            future.get(timeout=30)
        return total, time.monotonic() - started, last
    finally:
        session.close()


def write_paced(
    settings: dict[str, str], ids: list[str], rate: int, seconds: float
) -> tuple[int, float, dict[str, str]]:
    """``rate`` writes a second in all, shared by :data:`WRITERS` processes."""
    context = multiprocessing.get_context("spawn")
    shares = [(settings, ids[i::WRITERS], rate / WRITERS, seconds) for i in range(WRITERS)]
    with context.Pool(WRITERS) as pool:
        done = pool.starmap(write_share, shares)
    final: dict[str, str] = {}
    for _writes, _took, last in done:
        final.update(last)
    return sum(d[0] for d in done), max(d[1] for d in done), final


def measure_events(
    cluster: BenchCluster, standby_address: str, jobs: int, rate: int, seconds: float
) -> Json:
    config = validate(cluster.settings, dict.fromkeys(cluster.settings, "benchmark"))
    session = Session.from_config(config, name="bench-setup").start()
    prefix = "sse-"
    ids = [f"{prefix}{n:04d}" for n in range(jobs)]
    try:
        for job_id in ids:
            session.client.create(
                session.layout.job_status(job_id), status(job_id, 0), makepath=True
            )
    finally:
        session.close()
    wait_watched(cluster, standby_address, jobs)
    stream = Stream(cluster, standby_address, prefix, cluster.workdir).start()
    try:
        writes, took, final = write_paced(cluster.settings, ids, rate, seconds)
        with contextlib.suppress(TimeoutError):  # what arrived by then is the figure
            wait_until(lambda: stream.received()[1] == final or None, 30, "last states", 0.2)
        lags, last = stream.received()
    finally:
        stream.stop()
    finals = sum(last.get(job_id) == reason for job_id, reason in final.items())
    progress(f"events: {len(lags)}/{writes} delivered, {writes / took:.0f} writes/s")
    return {
        "writes": writes,
        "write_rate_per_s": round(writes / took, 1),
        "delivered": len(lags),
        "delivered_share": round(len(lags) / writes, 4),
        "last_state_seen_share": round(finals / jobs, 4),
        "lag_p50_ms": round(percentile(lags, 0.5) * 1000, 1) if lags else None,
        "lag_p99_ms": round(percentile(lags, 0.99) * 1000, 1) if lags else None,
    }


def wait_watched(cluster: BenchCluster, address: str, jobs: int) -> None:
    """Until the standby at ``address`` lists every job (so it watches each one)."""
    with httpx.Client(headers=cluster.headers, verify=cluster.tls.context) as http:

        def watched() -> bool | None:
            body = http.get(f"{address}/v1/jobs?limit=1").json()
            return sum(body["counts"].values()) >= jobs or None

        wait_until(watched, 120, f"the standby watches {jobs} jobs", interval=0.1)


# ------------------------------------------------------------------------------ report


def rows(result: Json) -> list[Json]:
    out = []
    for size in result["listing"] or []:
        pages = {k: v for k, v in size["pages"].items() if not k.startswith("largest")}
        worst = max(figures["p99_ms"] for figures in pages.values())
        largest = size["pages"]["largest page (1000)"]
        out.append(
            summary_row(
                f"GET /v1/jobs page of 100, worst p99 of 5 kinds, {size['jobs']:,} jobs known",
                worst,
                "ms",
                goal=f"< {GOAL_MS:g} ms",
                met=worst < GOAL_MS,
                peer=size["healthz"]["p99_ms"],
                note=f"peer: GET /healthz p99; a page of 1000: p50 {largest['p50_ms']} ms,"
                f" p99 {largest['p99_ms']} ms; index {size['index_bytes_per_job']} B/job",
            )
        )
    events = result["events"]
    if events is None:
        return out
    out.append(
        summary_row(
            f"SSE: every job's last state seen, {events['write_rate_per_s']:.0f} changes/s",
            events["last_state_seen_share"],
            "share",
            goal="1.0, lag p99 < 1 s",
            met=events["last_state_seen_share"] == 1.0 and (events["lag_p99_ms"] or 1e9) < 1000,
            note=f"{events['delivered_share']:.1%} of the changes delivered (a watch may skip"
            f" one overwritten at once); lag p50 {events['lag_p50_ms']} ms,"
            f" p99 {events['lag_p99_ms']} ms",
        )
    )
    return out


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="job counts, comma-separated")
    cli.add_argument("--requests", type=int, default=None, help="requests per page kind (200)")
    cli.add_argument("--rate", type=int, default=None, help="state changes a second (1000)")
    cli.add_argument("--seconds", type=float, default=None, help="seconds of changes (10)")
    cli.add_argument("--sse-jobs", type=int, default=None, help="jobs changing state (200)")
    cli.add_argument(
        "--only", choices=("listing", "events"), default=None, help="measure one part only"
    )
    options = cli.parse_args()
    quick = options.quick
    sizes = [
        int(n) for n in (options.jobs or ("1000" if quick else "1000,10000,100000")).split(",")
    ]
    requests = options.requests or (20 if quick else 200)
    rate = options.rate or (200 if quick else 1000)
    seconds = options.seconds or (1.0 if quick else 10.0)
    sse_jobs = options.sse_jobs or (20 if quick else 200)
    parameters: Json = {
        "jobs": sizes,
        "requests": requests,
        "rate": rate,
        "seconds": seconds,
        "sse_jobs": sse_jobs,
        "quick": quick,
    }

    def body() -> Json:
        with temp_zookeeper("job-listing") as zookeeper:
            with bench_cluster(
                zookeeper.workdir, zookeeper.connect_string, "job-listing", 10.0, verbose=False
            ) as cluster:
                cluster.register_admin_token()
                cluster.start_jobmanager("jm-1")
                cluster.wait_leader(120)
                events = listing = None
                if options.only in (None, "events"):
                    standby = cluster.start_jobmanager("jm-2")
                    cluster.wait_jobmanagers(2, 120)
                    events = measure_events(cluster, standby.address, sse_jobs, rate, seconds)
                    standby.signal(signal.SIGTERM)  # not a load on the listing's figures
                if options.only in (None, "listing"):
                    listing = measure_listing(cluster, sizes, requests)
            result = {"listing": listing, "events": events}
            return cluster_document("job_listing", parameters, result, rows(result), zookeeper)

    return run_main(body, options.verbose)


if __name__ == "__main__":
    sys.exit(main())
