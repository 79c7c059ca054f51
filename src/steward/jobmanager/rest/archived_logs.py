"""An attempt's log from the log archive, for the log route (:mod:`.logs`) once the
TaskManager that ran the attempt no longer serves it (stopped, lost, or its retention removed
the file).

The archive holds a log only once the attempt ended and all of it was copied
(:mod:`steward.store.log_archive`), so what it serves is complete: ``offset`` and ``tail``
work as on the TaskManager, and ``follow`` ends at the end of the file. The answer names the
TaskManager that ran the attempt and says where the bytes came from (:data:`SOURCE_HEADER`).
A storage that cannot be read counts as "not archived": the caller answers what it would have
without the archive, and the reason is logged.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import BinaryIO

import anyio.to_thread
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from steward.errors import BlobStoreError
from steward.store.log_archive import BLOCK, LogArchive, last_lines_start
from steward.wire.logs import (
    LOG_MEDIA_TYPE,
    SOURCE_HEADER,
    START_HEADER,
    TASKMANAGER_HEADER,
    LogQuery,
)

log = logging.getLogger(__name__)


async def archived_log(
    archive: LogArchive, job_id: str, attempt: int, taskmanager: str, query: LogQuery
) -> StreamingResponse | None:
    """The archived log as an answer, or None if it is not archived (or cannot be read)."""
    try:
        found = await run_in_threadpool(_open, archive, job_id, attempt, query)
    except BlobStoreError as exc:
        log.warning("archived log unreadable job=%s attempt=%d error=%s", job_id, attempt, exc)
        return None
    if found is None:
        return None
    opened, start = found
    return StreamingResponse(
        _blocks(opened),
        media_type=LOG_MEDIA_TYPE,
        headers={
            START_HEADER: str(start),
            TASKMANAGER_HEADER: taskmanager,
            SOURCE_HEADER: "archive",
            "cache-control": "no-store",
        },
    )


def _open(
    archive: LogArchive, job_id: str, attempt: int, query: LogQuery
) -> tuple[BinaryIO, int] | None:
    """The log open at the first byte to send, and that byte's offset."""
    opened = archive.open(job_id, attempt)
    if opened is None:
        return None
    try:
        size = opened.seek(0, 2)
        start = min(query.offset, size)
        if query.tail is not None:
            start = max(start, last_lines_start(opened, query.tail))
        opened.seek(start)
    except OSError as exc:
        opened.close()
        raise BlobStoreError(f"cannot read the archived log of {job_id}/{attempt}: {exc}") from exc
    return opened, start


async def _blocks(opened: BinaryIO) -> AsyncIterator[bytes]:
    """The file's bytes to its end; closed however the stream ends."""
    try:
        while block := await anyio.to_thread.run_sync(opened.read, BLOCK):
            yield block
    except OSError as exc:
        log.warning("archived log stream broke: %s", exc)
    finally:
        opened.close()
