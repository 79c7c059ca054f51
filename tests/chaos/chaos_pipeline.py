"""The chaos workload's pipeline: it leaves ground truth outside Steward, then does its work.

Submitted to Steward as a file, so it imports nothing from the test tree. Arguments:
``TRUTH_DIR SECONDS MODE`` with MODE ``plain`` (sleeps, no JVM) or ``spark`` (a small word
count through ``ctx.spark``).

Ground truth (read by :mod:`chaos.truth`):

- ``TRUTH_DIR/truth.jsonl``: one JSON line per event, written with one ``write`` on an
  ``O_APPEND`` descriptor (lines of concurrent writers never interleave): ``start`` when the
  attempt begins, ``stop`` (with the value it returns) when it ends. ``t`` is
  ``time.monotonic()`` (CLOCK_MONOTONIC, one clock for every process on Linux), ``wall`` is
  ``time.time()`` for comparing with Steward's own (wall clock) timestamps.
- ``TRUTH_DIR/locks/<job>.<attempt>.<pid>.lock``: held (``flock``) for the attempt's whole life,
  so whether it still runs is a question the kernel answers.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from typing import Any

TRUTH_FILE = "truth.jsonl"
LOCKS = "locks"


def _emit(truth_dir: str, record: dict[str, Any]) -> None:
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(os.path.join(truth_dir, TRUTH_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def text_for(job_id: str) -> list[str]:
    """The deterministic input of a Spark job: a few lines derived from its id."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    digest = hashlib.sha256(job_id.encode()).digest()
    return [" ".join(words[b % len(words)] for b in digest[i : i + 8]) for i in range(0, 32, 8)]


def _spark_counts(ctx: Any, lines: list[str]) -> dict[str, int]:
    from pyspark.sql import functions as sf

    frame = ctx.spark.createDataFrame([(line,) for line in lines], ["line"])
    words = frame.select(sf.explode(sf.split(sf.col("line"), " ")).alias("word"))
    rows = words.groupBy("word").count().collect()
    return {str(row["word"]): int(row["count"]) for row in rows}


def main(ctx: Any) -> dict[str, Any]:
    truth_dir, seconds, mode = ctx.args[0], float(ctx.args[1]), ctx.args[2]
    pid = os.getpid()
    base = {"job": ctx.job_id, "attempt": ctx.attempt, "pid": pid}
    lock_path = os.path.join(truth_dir, LOCKS, f"{ctx.job_id}.{ctx.attempt}.{pid}.lock")
    lock_fd = os.open(lock_path, os.O_CREAT | os.O_RDWR)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # released by the kernel when this process dies
    _emit(truth_dir, {**base, "event": "start", "t": time.monotonic(), "wall": time.time()})
    value: dict[str, Any] = {
        **base,
        "digest": hashlib.sha256(ctx.job_id.encode()).hexdigest()[:16],
    }
    if mode == "spark":
        value["counts"] = _spark_counts(ctx, text_for(ctx.job_id))
    deadline = time.monotonic() + seconds
    tick = 0
    while time.monotonic() < deadline:
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        tick += 1
        ctx.report_progress(tick=tick)
    _emit(
        truth_dir,
        {**base, "event": "stop", "t": time.monotonic(), "wall": time.time(), "value": value},
    )
    return value


def expected_counts(job_id: str) -> dict[str, int]:
    """The word counts a Spark job of ``job_id`` must return, computed without Spark."""
    counts: dict[str, int] = {}
    for line in text_for(job_id):
        for word in re.split(" ", line):
            counts[word] = counts.get(word, 0) + 1
    return counts
