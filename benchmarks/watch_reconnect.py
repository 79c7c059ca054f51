"""Watch reconnect: what a reconnect costs a JobManager that follows N live jobs (issue 22).

A real standalone ZooKeeper; N live jobs' ``jobs/<id>/status`` records written directly under
the cluster layout (no result yet). A :class:`JobEventSource` (what every JobManager runs for
live events) follows them: through two persistent recursive watches (``jobs/``, ``results/``)
since issue 22's second part, through two one-shot watches per job before. Then its
connection is dropped (``Session.drop_connection``: kazoo reconnects, same session), and for
``--window`` seconds a probe callback is queued on kazoo's callback thread (the thread the
election and the leader retrieval get their callbacks on) every 10 ms: the figure is how long
the longest one waited. Also the process's peak thread count over that window, the server's
watch count (``mntr``'s ``zk_watch_count``), how long following the N jobs took from the
source's start, and how long after a change written right after the reconnect the journal
held it. Printed as JSON.

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


def _record(job_id: str, state: JobState) -> bytes:
    now = time.time()
    return JobStatusRecord(
        job_id=job_id,
        name="etl",
        state=state,
        reason=None,
        submitted_at=now,
        updated_at=now,
        epoch=1,
        submitter="bench",
    ).to_json()


def create_jobs(session: Session, prefix: str, count: int) -> None:
    client = session.client
    pending = []
    for n in range(count):
        job_id = f"{prefix}-{n}"
        record = _record(job_id, JobState.RUNNING)
        pending.append(
            client.create_async(session.layout.job_status(job_id), record, makepath=True)
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


def _seen(journal: Journal, cursor: str, job_id: str, times: list[float]) -> None:
    """Append the time the journal first holds an event of ``job_id`` after ``cursor``."""

    def seen() -> bool:
        replay = journal.read(cursor)
        return replay is not None and any(e.event.job_id == job_id for e in replay.entries)

    wait_until(seen, 600, f"{job_id}'s change seen")
    times.append(time.monotonic())


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
            started = time.monotonic()
            source = JobEventSource(follower, blobs, journal).start()
            wait_until(lambda: _followed(journal, begin) >= count, 600, "every job followed")
            follow_s = time.monotonic() - started
            threads_before = threading.active_count()
            watches = zookeeper_watches()  # type: ignore[operator]
            progress(f"{count} jobs followed; {threads_before} threads, {watches} server watches")
            dropped_at = time.monotonic()
            follower.drop_connection("benchmark")
            wait_until(lambda: follower.connected, 60, "reconnected")
            # A change right after the reconnect: seen once the watches are back.
            last, cursor = f"job-{count - 1}", journal.head
            seen_at: list[float] = []
            changed_at = time.monotonic()
            writer.client.set(writer.layout.job_status(last), _record(last, JobState.RESTARTING))
            waiter = threading.Thread(target=_seen, args=(journal, cursor, last, seen_at))
            waiter.start()
            worst, peak = probe_delays(follower, window)
            waiter.join()
            source.stop()
            return {
                "jobs": count,
                "threads_before": threads_before,
                "threads_peak_after_reconnect": peak,
                "server_watches": watches,
                "follow_s": round(follow_s, 3),
                "change_seen_after_reconnect_s": round(seen_at[0] - changed_at, 3),
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
