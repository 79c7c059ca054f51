"""Orphan job graph blobs: blobs no pointer names, deleted once they are old enough.

A writer that crashed between writing a blob and creating its pointer leaves the blob behind
(blobs are written before their pointers, so such a blob never held an acknowledged job). The
age guard leaves alone a blob whose writer has not created its pointer yet; a job whose pointer
cannot be read keeps all its blobs, since one of them is the only copy of its graph.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Protocol

from steward.errors import CorruptStateError, JobNotFoundError
from steward.store.blob import BlobStore
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import GRAPH_BLOB_PREFIX
from steward.wire.values import check_job_id

log = logging.getLogger(__name__)


class Pointers(Protocol):
    """What the collector reads of the job graph store: its jobs and their pointers."""

    def job_ids(self) -> list[str]: ...

    def pointer(self, job_id: str) -> JobGraphPointer: ...


def collect_orphans(
    pointers: Pointers, blobs: BlobStore, min_age: float, known: set[str] | None
) -> list[str]:
    """Delete the job graph blobs no pointer names that are older than ``min_age`` seconds.

    ``known``: blob keys the caller knows pointers name (the content collector's); then only
    the pointers of the jobs with an old blob outside it are read, to confirm, instead of every
    pointer.
    """
    if known is None:
        known, _ = _referenced_keys(pointers, pointers.job_ids())
    cutoff = time.time() - min_age
    old = [i.key for i in blobs.list(GRAPH_BLOB_PREFIX) if i.modified <= cutoff]
    candidates = [key for key in old if key not in known]
    owners = {key: _owner(key) for key in candidates}
    referenced, unreadable = _referenced_keys(pointers, sorted(set(owners.values()) - {""}))
    deleted = []
    for key in candidates:
        if key in referenced or owners[key] in unreadable:
            continue
        blobs.delete(key)
        deleted.append(key)
    if deleted:
        log.info("orphan job graph blobs deleted count=%d", len(deleted))
    return deleted


def _referenced_keys(pointers: Pointers, job_ids: Iterable[str]) -> tuple[set[str], set[str]]:
    """The blob keys the pointers name, and the jobs whose pointer cannot be read.

    A job with an unreadable pointer keeps all its blobs: one of them is the only copy of
    its graph, and an operator may still repair the pointer (deleting them as orphans
    turned a damaged znode into a lost job).
    """
    referenced: set[str] = set()
    unreadable: set[str] = set()
    for job_id in job_ids:
        try:
            referenced.add(pointers.pointer(job_id).blob)
        except JobNotFoundError:
            continue
        except CorruptStateError:
            unreadable.add(job_id)
    return referenced, unreadable


def _owner(key: str) -> str:
    """The job whose pointer may name the blob ``key`` (jobgraphs/<job-id>/<unique>), or ""."""
    parts = key.split("/")
    try:
        return check_job_id(parts[1]) if len(parts) >= 3 else ""
    except ValueError:
        return ""
