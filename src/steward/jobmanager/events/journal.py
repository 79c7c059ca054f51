"""The event journal of one JobManager: the last job events it saw, and who waits for more.

Events are appended by :mod:`.source` (from ZooKeeper watches on a standby, from its own
writes on the leader) and read by the REST streams on the server's event loop. Each event may
carry the job's listing entry as the record it came from shows it (an
:class:`~steward.jobmanager.job_index.IndexedJob`, about 500 bytes), so the job index that
follows the journal never reads the job back.

A cursor is ``<incarnation>-<sequence>``: the incarnation is drawn anew when the journal starts
and whenever it may have missed changes (a new ZooKeeper session), so a cursor of another
JobManager, of an earlier run of this one, or from before a gap is never mistaken for a place
to replay from: :meth:`Journal.read` answers None and the stream tells its consumer to re-read
(a ``reset``). The journal keeps ``capacity`` events; a consumer further behind than that gets
a reset too, which bounds the memory a slow consumer costs at nothing (waiters hold no queue,
only their cursor).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from steward.wire.events import JobEvent

from ..indexed_job import IndexedJob

DEFAULT_CAPACITY = 10_000


@dataclass(frozen=True)
class Entry:
    cursor: str
    event: JobEvent
    job: IndexedJob | None = None
    """The job as the record behind the event shows it (None: read it to know more)."""


@dataclass(frozen=True)
class Replay:
    """What :meth:`Journal.read` found after a cursor: the entries (maybe none), and the
    cursor to read from next."""

    entries: list[Entry]
    cursor: str


@dataclass(eq=False)
class Waiter:
    """A consumer on an event loop, woken (from any thread) when events are appended."""

    loop: asyncio.AbstractEventLoop
    woken: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.woken.set)

    async def wait(self, timeout: float) -> bool:
        """True if woken within ``timeout`` seconds (and ready to be woken again)."""
        try:
            await asyncio.wait_for(self.woken.wait(), timeout)
        except TimeoutError:
            return False
        self.woken.clear()
        return True


class Journal:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._lock = threading.Lock()
        self._entries: deque[tuple[int, JobEvent, IndexedJob | None]] = deque(maxlen=capacity)
        self._incarnation = secrets.token_hex(4)
        self._sequence = 0
        self._waiters: set[Waiter] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        """The JobManager is stopping: streams end."""
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.wake()

    @property
    def head(self) -> str:
        """The cursor of the last event appended: reading from it yields only later ones."""
        with self._lock:
            return self._cursor(self._sequence)

    def append(self, event: JobEvent, job: IndexedJob | None = None) -> None:
        self.append_many([(event, job)])

    def append_many(self, entries: Sequence[tuple[JobEvent, IndexedJob | None]]) -> None:
        """Append ``entries`` in order, and wake each waiter once for all of them (a
        takeover publishes thousands at once: a wake is a hop to the waiter's event loop)."""
        if not entries:
            return
        with self._lock:
            for event, job in entries:
                self._sequence += 1
                self._entries.append((self._sequence, event, job))
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.wake()

    def break_continuity(self) -> None:
        """Changes may have been missed: every cursor given out so far becomes unknown."""
        with self._lock:
            self._incarnation = secrets.token_hex(4)
            self._entries.clear()
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.wake()

    def read(self, cursor: str) -> Replay | None:
        """The entries after ``cursor``, or None if this journal cannot tell what followed it
        (another JobManager's cursor, an older incarnation, or too old to be kept)."""
        incarnation, _, number = cursor.partition("-")
        with self._lock:
            if incarnation != self._incarnation or not number.isdigit():
                return None
            after = int(number)
            if after > self._sequence:
                return None
            oldest = self._entries[0][0] if self._entries else self._sequence + 1
            if after + 1 < oldest:
                return None
            # Sequences are consecutive: what follows ``after`` is the newest entries, taken
            # from the right. A scan of the whole journal per read cost the leader's index
            # follower 10,000 entries for each burst of submissions it took up.
            newer = itertools.islice(reversed(self._entries), self._sequence - after)
            entries = [Entry(self._cursor(sequence), event, job) for sequence, event, job in newer]
            entries.reverse()
            return Replay(entries, self._cursor(self._sequence))

    @contextlib.contextmanager
    def waiting(self) -> Iterator[Waiter]:
        """A waiter of the running event loop, woken on every append while the block runs."""
        waiter = Waiter(asyncio.get_running_loop())
        with self._lock:
            self._waiters.add(waiter)
        try:
            yield waiter
        finally:
            with self._lock:
                self._waiters.discard(waiter)

    @property
    def waiters(self) -> int:
        """How many consumers wait now (open streams and long polls)."""
        with self._lock:
            return len(self._waiters)

    def _cursor(self, sequence: int) -> str:
        return f"{self._incarnation}-{sequence}"
