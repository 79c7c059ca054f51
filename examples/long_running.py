"""A pipeline that runs until it is cancelled, reporting progress every second. No Spark.

    steward submit examples/long_running.py [-- --ticks N] [--interval SECONDS]

For demos and tests of cancellation, failover and adoption: it starts no JVM, so it is up in a
fraction of a second, and its progress shows that the same attempt is still alive. With
``--ticks N`` it finishes after N reports with ``{"ticks": N}``; without, it runs until
cancelled (SIGTERM ends it through ``steward.wire.runner.AttemptCancelled``).
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steward import JobContext

log = logging.getLogger(__name__)


def main(ctx: JobContext) -> dict[str, int]:
    parser = argparse.ArgumentParser(prog="long_running.py")
    parser.add_argument("--ticks", type=int, default=None, help="finish after N reports")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between reports")
    options = parser.parse_args(ctx.args)

    started = time.monotonic()
    ticks = 0
    try:
        while options.ticks is None or ticks < options.ticks:
            time.sleep(options.interval)
            ticks += 1
            ctx.report_progress(ticks=ticks, elapsed=round(time.monotonic() - started, 3))
    finally:
        log.info("long_running: stopping after %d ticks (attempt %d)", ticks, ctx.attempt)
    return {"ticks": ticks}
