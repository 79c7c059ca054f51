"""A pipeline that records each attempt's start and end outside Steward: the ground truth of
end-to-end tests that must tell what really ran from what Steward reports."""

from __future__ import annotations

from pathlib import Path

# Records every attempt's start and end in TRUTH (an append-only file), then ticks.
TICKING = """
import os, sys, time

def main(ctx):
    truth, ticks, interval = ctx.args[0], int(ctx.args[1]), float(ctx.args[2])
    with open(truth, "a") as out:
        out.write(f"start {ctx.attempt} {os.getpid()} {time.monotonic()}\\n")
    for tick in range(ticks):
        time.sleep(interval)
        ctx.report_progress(tick=tick + 1, pid=os.getpid())
    with open(truth, "a") as out:
        out.write(f"end {ctx.attempt} {os.getpid()} {time.monotonic()}\\n")
    return {"ticks": ticks, "pid": os.getpid()}
"""


def write_pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "ticking.py"
    path.write_text(TICKING)
    return path


def read_truth(path: Path) -> list[tuple[str, int, int]]:
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [(kind, int(attempt), int(pid)) for kind, attempt, pid, _ in lines]
