"""A pipeline that tells the truth about every attempt it runs. No Spark.

Each attempt appends JSON lines ``{job, attempt, pid, event, t}`` (``t`` from
``time.monotonic()``: CLOCK_MONOTONIC is system-wide on Linux, so lines of different
processes compare) to a ground-truth file outside Steward's stores, opened with O_APPEND
so concurrent writers never interleave within a line. ``event`` is ``start`` when ``main``
begins and ``stop`` when it leaves (a normal return or a cancel's SIGTERM); an attempt
SIGKILLed by its dead-man's switch writes no ``stop``, and tests learn that time from when
its pid disappeared.

Arguments (``ctx.args``): ``TRUTH`` then options:

- ``--ticks N``: finish after N ticks (default: run until cancelled);
- ``--interval S``: seconds between ticks (default 0.2);
- ``--finish-on PATH``: finish (returning ``{"ticks": n, "pid": pid}``) once PATH exists;
- ``--init-output PATH``: ``initialize(ctx)`` creates PATH and raises if it already exists
  (seed 000: Flink's FileOutputFormat.initializeGlobal refusing an existing output).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any


def _options(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="truthful.py")
    parser.add_argument("truth")
    parser.add_argument("--ticks", type=int, default=None)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--finish-on", default=None)
    parser.add_argument("--init-output", default=None)
    return parser.parse_args(args)


def _record(truth: str, ctx: Any, event: str, **extra: Any) -> None:
    line = {
        "job": ctx.job_id,
        "attempt": ctx.attempt,
        "pid": os.getpid(),
        "event": event,
        "t": time.monotonic(),
        **extra,
    }
    fd = os.open(truth, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def initialize(ctx: Any) -> None:
    options = _options(ctx.args)
    _record(options.truth, ctx, "initialize", recovery=ctx.is_recovery)
    if options.init_output is None:
        return
    output = Path(options.init_output)
    if output.exists():
        raise FileExistsError(f"output {output} already exists")
    output.write_text("initialized\n")


def main(ctx: Any) -> dict[str, int]:
    options = _options(ctx.args)
    _record(options.truth, ctx, "start", recovery=ctx.is_recovery)
    ticks = 0
    try:
        while options.ticks is None or ticks < options.ticks:
            if options.finish_on is not None and os.path.exists(options.finish_on):
                break
            time.sleep(options.interval)
            ticks += 1
            ctx.report_progress(ticks=ticks)
    finally:
        _record(options.truth, ctx, "stop", ticks=ticks)
    return {"ticks": ticks, "pid": os.getpid()}
