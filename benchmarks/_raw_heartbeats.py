"""The TaskManager simulator's heartbeats over bare HTTP/1.1, for benchmarks only.

:class:`~_tm_simulator.TaskManagerSimulator` sends through httpx, whose per-request work in
the benchmark's one Python process was larger than the leader's: at a load of 20 it got 12
to 46 of 100 heartbeats a second answered, so the leader's CPU per heartbeat was a small
figure divided by a random count. :class:`RawHeartbeatSimulator` keeps everything else (real
registrations, fenced leases, the wire protocol's bodies, the long poll, the pacing) and
writes each request as bytes on one kept-alive asyncio connection per TaskManager, reading
the answer's status, ``content-length`` and body. Plain HTTP to one JobManager only: no TLS,
no turning to another leader (what ``failover_scale.py`` needs stays in the base class).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from _tm_simulator import NOT_LEADER, SimulatedTaskManager, TaskManagerSimulator
from steward.wire.heartbeat import HEARTBEAT_PATH, HeartbeatReply


class RawHeartbeatSimulator(TaskManagerSimulator):
    """A :class:`TaskManagerSimulator` whose heartbeats go to ``addresses[0]`` as raw HTTP."""

    async def _beat_all(self) -> None:
        tasks = [asyncio.create_task(self._raw_beat(tm)) for tm in self.taskmanagers]
        assert self._stopping is not None
        await self._stopping.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _raw_beat(self, tm: SimulatedTaskManager) -> None:
        # Spread the first heartbeats over one interval, as TaskManagers started apart are.
        await asyncio.sleep(self.interval * (hash(tm.tm_id) % 1000) / 1000)
        url = urlsplit(self.addresses[0])
        head = (
            f"POST {HEARTBEAT_PATH} HTTP/1.1\r\nhost: {url.netloc}\r\n"
            f"authorization: {self._headers['authorization']}\r\n"
            "content-type: application/json\r\n"
        ).encode()
        connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while True:
            if self.paused:
                await asyncio.sleep(self.interval / 10)
                if not self.paused:  # resume spread over a hold, as TaskManagers are apart
                    await asyncio.sleep(self._resume_spread(tm))
                continue
            started = time.monotonic()
            try:
                if connection is None:
                    connection = await asyncio.open_connection(url.hostname, url.port)
                answered = await self._raw_exchange(connection, head, tm)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                self.tally.failed += 1
                if connection is not None:
                    connection[1].close()
                connection, answered = None, False
            pause = started + self.interval - time.monotonic()
            if not answered or pause > 0:
                await asyncio.sleep(max(pause, 0.05) if answered else self.interval / 4)

    async def _raw_exchange(
        self,
        connection: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        head: bytes,
        tm: SimulatedTaskManager,
    ) -> bool:
        reader, writer = connection
        self._end_due(tm)
        beat = tm.beat(self.interval, self.idle_hold)
        self.tally.unchanged += getattr(beat, "unchanged", False)
        body = beat.to_json()
        writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        self.in_flight += 1
        try:
            status_line = await reader.readline()
        finally:
            self.in_flight -= 1
        if not status_line:
            # The server closed the kept-alive connection (uvicorn does after 5 s idle: the
            # heartbeats were paused): open another, as an HTTP client does.
            raise ConnectionResetError("connection closed")
        status = int(status_line.split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        content = await reader.readexactly(length)
        if status in NOT_LEADER:
            self.tally.refused += 1
            return False
        if status != 200:
            raise ValueError(f"heartbeat answered {status}: {content[:200]!r}")
        self.tally.answered += 1
        self._take(tm, HeartbeatReply.from_json(content))
        return True
