"""Ground truth written by the pipelines themselves, outside Steward's stores.

Each attempt appends JSON lines ``{job, attempt, pid, event, t}`` (``t``: time.monotonic(),
one clock for every process of the machine) to the file named by its first argument:
``start`` once, ``tick`` every ``interval`` seconds, ``stop`` when it returns. A killed
attempt writes no ``stop``; its last ``tick`` bounds when it last ran.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

PIPELINE = """
import json, os, time

def _log(ctx, path, event):
    line = {"job": ctx.job_id, "attempt": ctx.attempt, "pid": os.getpid(), "event": event,
            "t": time.monotonic()}
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\\n")

def main(ctx):
    path, ticks, interval = ctx.args[0], int(ctx.args[1]), float(ctx.args[2])
    _log(ctx, path, "start")
    for _ in range(ticks):
        time.sleep(interval)
        _log(ctx, path, "tick")
    _log(ctx, path, "stop")
    return {"pid": os.getpid(), "attempt": ctx.attempt}
"""


@dataclass(frozen=True)
class Event:
    job: str
    attempt: int
    pid: int
    event: str
    t: float


def write_pipeline(directory: Path) -> Path:
    path = directory / "truth_pipeline.py"
    path.write_text(PIPELINE)
    return path


def read(path: Path) -> list[Event]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                events.append(Event(**json.loads(line)))
            except ValueError:
                continue  # a line being written right now
    return events


def starts(path: Path, job: str) -> list[Event]:
    return [e for e in read(path) if e.job == job and e.event == "start"]


def last_seen(path: Path, job: str, attempt: int) -> float:
    """When attempt ``attempt`` of ``job`` last wrote anything."""
    return max(e.t for e in read(path) if e.job == job and e.attempt == attempt)
