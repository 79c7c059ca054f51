"""Delivery of job notifications: the leader POSTs each outbox event to its webhooks.

At term start the outbox (``notifications/``) is listed once and read in pipelined batches;
from then on :meth:`Delivery.add` hands over each event this term writes (in memory, never a
watch). A few worker threads send them, each webhook on its own: a 2xx is delivered, anything
else is tried again after an exponential back-off with jitter (:func:`retry_delay`) until the
event is ``notifications.max-age`` old, when the leader gives up on that webhook (an ERROR log
line). The event's record is deleted through the fence once every webhook took it or was
given up on. A crash before that leaves the record: the next leader sends it again, so
delivery is at least once, and a receiver deduplicates by the event id (docs/reliability.md).

Never in the way of the control plane: :meth:`Delivery.add` only queues (it is called under
the job table's lock), sends happen on the workers, outside every lock but this module's own.
The outbox is bounded: past ``notifications.outbox-max`` events the oldest is dropped. URLs are
logged with their query string and user info hidden, the secret never.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from steward.errors import FencedError, StewardError
from steward.store.outbox import NotificationOutbox
from steward.wire import notifications as wire
from steward.wire.notifications import NotificationRecord, redact_url

from .term import Term

log = logging.getLogger(__name__)

WORKERS = 4
"""Webhook calls in flight at once: a slow receiver holds one, not the others."""
INITIAL_DELAY = 1.0
MAX_DELAY = 300.0


def retry_delay(tries: int, rng: Callable[[], float] = random.random) -> float:
    """Seconds before the next try after ``tries`` failed ones: doubling from
    :data:`INITIAL_DELAY` up to :data:`MAX_DELAY`, jittered down by up to half so that the
    events of one outage do not all come back at once."""
    whole = min(MAX_DELAY, INITIAL_DELAY * 2.0 ** min(tries - 1, 30))
    return whole * (0.5 + rng() / 2)


@dataclass
class _Event:
    record: NotificationRecord
    waiting: set[str] = field(default_factory=set)
    """Webhooks that have not taken it yet (nor been given up on)."""


@dataclass(frozen=True)
class _Send:
    event_id: str
    url: str
    tries: int = 0


class Delivery:
    def __init__(self, term: Term, outbox: NotificationOutbox, cluster_id: str) -> None:
        self._term = term
        self._outbox = outbox
        self._cluster_id = cluster_id
        self._settings = term.settings.notifications
        self._secret = _read_secret(self._settings.secret_file)
        self._http: httpx.Client | None = None
        self._http_lock = threading.Lock()
        self._cond = threading.Condition()
        self._events: dict[str, _Event] = {}
        """Events not done, oldest first (the cap drops from the front)."""
        self._due: list[tuple[float, int, _Send]] = []
        self._order = itertools.count()
        self._dropped: list[str] = []
        """Events dropped by the cap whose record is still to be deleted."""
        term.when_stopped(self._wake)

    def add(self, record: NotificationRecord | None) -> None:
        """Deliver ``record``, written to the outbox (only queued: never blocks)."""
        if record is None:
            return
        with self._cond:
            self._admit(record)
            self._cond.notify_all()

    def run(self) -> None:
        """The term's delivery: the outbox read once, then workers until the term stops."""
        self._take_loaded(self._load())
        workers = [
            threading.Thread(target=self._work, name=f"notify-{n}", daemon=True)
            for n in range(1, WORKERS)
        ]
        for worker in workers:
            worker.start()
        self._work()
        for worker in workers:
            worker.join()
        if self._http is not None:
            self._http.close()

    def _client(self) -> httpx.Client:
        """The term's HTTP client, made at the first delivery: making one loads the CA
        certificates while holding the interpreter's lock (40-70 ms here), which a term with
        nothing to deliver should not spend, least of all while a new leader recovers."""
        with self._http_lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self._settings.timeout, follow_redirects=False)
            return self._http

    # ------------------------------------------------------------------ queue

    def _take_loaded(self, records: list[NotificationRecord]) -> None:
        """Queue the events read from the outbox at term start, ahead of those this term
        added meanwhile: written before this term, they are older, first in line for the cap."""
        with self._cond:
            added, self._events = self._events, {}
            for record in records:
                if record.event_id not in added:  # queued already: never sent twice
                    self._admit(record)
            self._events.update(added)
            self._cap()

    def _admit(self, record: NotificationRecord) -> None:
        """Under the condition: queue the record's sends; the oldest dropped past the cap."""
        if record.event_id in self._events:
            return
        urls = list(self._settings.webhook_urls) if record.cluster else []
        urls += [t.url for t in record.targets if t.url not in urls]
        self._events[record.event_id] = _Event(record, set(urls))
        for url in urls:
            self._schedule(_Send(record.event_id, url), 0.0)
        if not urls:
            self._dropped.append(record.event_id)  # no webhook left to want it
            del self._events[record.event_id]
        self._cap()

    def _cap(self) -> None:
        """Under the condition: the oldest events dropped past ``notifications.outbox-max``."""
        while len(self._events) > self._settings.outbox_max:
            oldest = next(iter(self._events))
            del self._events[oldest]
            self._dropped.append(oldest)
            self._term.metrics.notifications.labels(outcome="dropped").inc()
            log.warning("notification dropped, outbox full event=%s", oldest)

    def _schedule(self, send: _Send, delay: float) -> None:
        due = self._term.monotonic() + delay
        heapq.heappush(self._due, (due, next(self._order), send))

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _next(self) -> _Send | str | None:
        """The next send due, or an event id whose record to delete; None once stopped."""
        with self._cond:
            while not self._term.stopped.is_set():
                if self._dropped:
                    return self._dropped.pop()
                wait = None
                if self._due:
                    due, _, send = self._due[0]
                    wait = due - self._term.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._due)
                        if send.event_id in self._events:
                            return send
                        continue
                self._cond.wait(wait)
            return None

    # ------------------------------------------------------------------ work

    def _work(self) -> None:
        while (item := self._next()) is not None:
            try:
                if isinstance(item, str):
                    self._remove(item)
                else:
                    self._send(item)
            except Exception:  # a bug here must not end delivery for the term
                log.exception("notification worker error item=%s", item)

    def _send(self, send: _Send) -> None:
        with self._cond:
            event = self._events.get(send.event_id)
        if event is None:
            return
        error = self._post(send.url, event.record)
        if error is None:
            self._term.metrics.notifications.labels(outcome="delivered").inc()
            log.info("notification delivered event=%s url=%s", send.event_id, redact_url(send.url))
            self._done(event, send.url)
        elif self._term.wall() - event.record.at >= self._settings.max_age:
            self._term.metrics.notifications.labels(outcome="given_up").inc()
            log.error(
                "notification given up event=%s url=%s tries=%d error=%s",
                send.event_id,
                redact_url(send.url),
                send.tries + 1,
                error,
            )
            self._done(event, send.url)
        else:
            self._retry(send, error)

    def _retry(self, send: _Send, error: str) -> None:
        delay = retry_delay(send.tries + 1)
        self._term.metrics.notifications.labels(outcome="retried").inc()
        log.warning(
            "notification not delivered event=%s url=%s error=%s retry_in=%.1fs",
            send.event_id,
            redact_url(send.url),
            error,
            delay,
        )
        with self._cond:
            self._schedule(_Send(send.event_id, send.url, send.tries + 1), delay)
            self._cond.notify_all()

    def _post(self, url: str, record: NotificationRecord) -> str | None:
        """POST the event to ``url``: None if it took it (2xx), else why not."""
        payload = wire.body(record, self._cluster_id)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "steward-notifications",
            wire.EVENT_ID_HEADER: record.event_id,
            wire.EVENT_HEADER: record.event.value,
        }
        if self._secret is not None:
            headers[wire.SIGNATURE_HEADER] = wire.signature(self._secret, payload)
        try:
            answer = self._client().post(url, content=payload, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return type(exc).__name__  # its text may hold the URL (and a token in it)
        return None if answer.is_success else f"status {answer.status_code}"

    def _done(self, event: _Event, url: str) -> None:
        """``url`` is done with ``event``: the record is deleted once every webhook is."""
        with self._cond:
            event.waiting.discard(url)
            finished = not event.waiting and event.record.event_id in self._events
            if finished:
                del self._events[event.record.event_id]
        if finished:
            self._remove(event.record.event_id)

    def _remove(self, event_id: str) -> None:
        try:
            self._outbox.delete(self._term.fence, event_id)
        except FencedError as exc:
            self._term.fenced(exc)
        except StewardError as exc:  # left in the outbox: the next leader sends it again
            log.warning("notification record not deleted event=%s error=%r", event_id, exc)

    def _load(self) -> list[NotificationRecord]:
        """Every event in the outbox, oldest first; retried until read or the term stops."""
        delay = 0.5
        while not self._term.stopped.is_set():
            try:
                records = list(self._outbox.records(self._outbox.event_ids()))
            except StewardError as exc:
                log.warning("notification outbox not read yet retry_in=%.1fs error=%r", delay, exc)
                self._term.stopped.wait(delay)
                delay = min(30.0, delay * 2)
                continue
            log.info("notification outbox read events=%d", len(records))
            return sorted(records, key=lambda r: r.at)
        return []


def _read_secret(path: str) -> bytes | None:
    """The HMAC secret, or None (unsigned) if there is no file or it cannot be read."""
    if not path:
        return None
    try:
        return Path(path).read_bytes().strip()
    except OSError as exc:
        log.error("notification secret unreadable, sending unsigned path=%s error=%s", path, exc)
        return None
