"""Python's cyclic garbage collector held off while a new leader lists and adopts its jobs.

A takeover decodes and adopts thousands of records a second, each a few container objects
that outlive it (the record, its attempts, the job's master); every 700 such allocations
start a young collection that scans them again. In-process (decoding a status record and
copying its attempt, with a leader-sized heap) that is a quarter of the CPU; with the
collector off for the chunk, it is not spent. Reference counting still frees at once whatever
is not in a cycle; a cycle made meanwhile is collected by the first collection after.

Around the listing too (members, leases, graph ids, results: each try), and the flush of the
records recovery wrote before "ready": a full collection there scans the whole heap a standby
built (the records its watches read, the job index), 76 ms at 5,000 jobs, and a takeover's
growing heap is what makes the collector start one. Deferred, it runs between the steps or
once the term is ready.

Nor is what a step made scanned when the collector comes back: the first young collection
after a chunk scanned all of its objects at once (7 to 68 ms a chunk of 1,000 at 10,000 jobs,
and a middle one 41 to 60 ms, seen with a gc callback), and each later generation would scan
them again. So a pause ends by freezing every object there is (``gc.freeze``: moved aside,
O(1)), and the recovery hands them all back to the oldest generation when it ends
(:func:`kept_until_recovered`, ``gc.unfreeze``, O(1)): the standby's heap and the table just
built are scanned by the first full collection after "ready", once, instead of piecemeal
before it. A cycle that became garbage meanwhile waits for that collection.

The pause is short and bounded: each is one step of :mod:`.recovery` whose reads and writes
have their deadlines (a try of the listing, a chunk's prefetch and adoption, the flush), never
a wait for ZooKeeper to come back (the back-off between tries runs with the collector on). It
restores what it found: a collector someone else turned off stays off, and of two pauses that
overlap, the first to begin turns it back on when it ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic collection while the block runs (see the module docstring); what it made is
    then kept out of the collections (frozen) until :func:`kept_until_recovered` ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def kept_until_recovered() -> Iterator[None]:
    """Around a whole recovery: what its pauses froze is handed back to the collector (the
    oldest generation) when it ends, on an error too."""
    try:
        yield
    finally:
        gc.unfreeze()
