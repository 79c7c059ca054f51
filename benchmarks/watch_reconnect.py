"""Watch reconnect: what a reconnect costs a JobManager that follows N live jobs (issue 22).

A real standalone ZooKeeper; N live jobs' ``jobs/<id>/status`` records written directly under
the cluster layout (no result yet, so each job also holds an exists watch on ``results/<id>``).
A :class:`JobEventSource` (what every JobManager runs for live events) follows them. Then its
connection is dropped (``Session.drop_connection``: kazoo reconnects, same session), and for
``--window`` seconds a probe callback is queued on kazoo's callback thread (the thread the
election and the leader retrieval get their callbacks on) every 10 ms: the figure is how long
the longest one waited. Also the process's peak thread count over that window and the server's
watch count (``mntr``'s ``zk_watch_count``). Printed as JSON.

    .venv/bin/python benchmarks/watch_reconnect.py [--quick] [--jobs 1000,10000]
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

from kazoo.protocol.states import Callback

from _common import Json, document, parser, progress, run_main, temp_zookeeper, wait_until
from steward.ha.session import Session
from steward.jobmanager.events.journal import Journal
from steward.jobmanager.events.source import JobEventSource
from steward.store.blob import BlobStore
from steward.wire.records import JobStatusRecord
from steward.wire.states import JobState

ROOT = "/steward-bench"
PROBE_EVERY = 0.01


def create_jobs(session: Session, prefix: str, count: int) -> None:
    client, now = session.client, time.time()
    pending = []
    for n in range(count):
        job_id = f"{prefix}-{n}"
        record = JobStatusRecord(
            job_id=job_id,
            name="etl",
            state=JobState.RUNNING,
            reason=None,
            submitted_at=now,
            updated_at=now,
            epoch=1,
            submitter="bench",
        )
        pending.append(
            client.create_async(session.layout.job_status(job_id), record.to_json(), makepath=True)
        )
        if len(pending) >= 500:
            for reply in pending:
                reply.get()
            pending.clear()
    for reply in pending:
        reply.get()


def _followed(journal: Journal, begin: str) -> int:
    replay = journal.read(begin)
    return 0 if replay is None else len(replay.entries)


def probe_delays(session: Session, window: float) -> tuple[float, int]:
    """The longest wait of a callback queued on kazoo's callback thread, and the peak thread
    count, over ``window`` seconds."""
    worst, peak, end = 0.0, threading.active_count(), time.monotonic() + window
    while time.monotonic() < end:
        ran = threading.Event()
        queued = time.monotonic()
        session.client.handler.dispatch_callback(Callback("bench", ran.set, ()))
        while not ran.wait(PROBE_EVERY):
            peak = max(peak, threading.active_count())
        worst = max(worst, time.monotonic() - queued)
        peak = max(peak, threading.active_count())
        time.sleep(PROBE_EVERY)  # the probe's period, not a synchronisation
    return worst, peak


def one_size(zk_connect: str, zookeeper_watches: object, count: int, window: float) -> Json:
    with (
        Session(zk_connect, f"{ROOT}-{count}", name="bench-writer") as writer,
        tempfile.TemporaryDirectory(prefix="steward-bench-blobs-") as storage,
    ):
        create_jobs(writer, "job", count)
        blobs = BlobStore(Path(storage).as_uri())  # results' bodies: none written here
        with Session(zk_connect, f"{ROOT}-{count}", name="bench-follower") as follower:
            journal = Journal(capacity=count + 10)
            begin = journal.head
            source = JobEventSource(follower, blobs, journal).start()
            wait_until(lambda: _followed(journal, begin) >= count, 600, "every job followed")
            threads_before = threading.active_count()
            watches = zookeeper_watches()  # type: ignore[operator]
            progress(f"{count} jobs followed; {threads_before} threads, {watches} server watches")
            dropped_at = time.monotonic()
            follower.drop_connection("benchmark")
            wait_until(lambda: follower.connected, 60, "reconnected")
            worst, peak = probe_delays(follower, window)
            source.stop()
            return {
                "jobs": count,
                "threads_before": threads_before,
                "threads_peak_after_reconnect": peak,
                "server_watches": watches,
                "reconnect_s": round(time.monotonic() - dropped_at - window, 3),
                "callback_wait_max_ms": round(worst * 1000, 1),
            }


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", default=None, help="comma-separated job counts (default 1000,10000)")
    cli.add_argument(
        "--window", type=float, default=None, help="seconds probed after the reconnect"
    )
    args = cli.parse_args()
    sizes = [int(n) for n in (args.jobs or ("200" if args.quick else "1000,10000")).split(",")]
    window = args.window or (2.0 if args.quick else 10.0)

    def body() -> Json:
        with temp_zookeeper("watch-reconnect") as zookeeper:

            def watches() -> int:
                return int(zookeeper.monitor().get("zk_watch_count", "-1"))

            results = {
                f"jobs_{n}": one_size(zookeeper.connect_string, watches, n, window) for n in sizes
            }
            return document(
                "watch_reconnect", {"jobs": sizes, "window_s": window}, results, zookeeper
            )

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
