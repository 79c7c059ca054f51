"""``steward logs JOB``: print an attempt's log, where its TaskManager's folder is reachable.

An attempt's output (the runner, the pipeline, the Spark JVM) is in ``runner.log`` in its
folder on the TaskManager that ran it: ``<taskmanager.workdir>/<tm-id>/<job-id>/<attempt>/``
(capped at ``taskmanager.attempt-log.max-size``, removed ``taskmanager.workdir.retention``
after the attempt ended). The job's view says which TaskManager ran which attempt, a finished
job's too (its result keeps its last attempts). On a local cluster, or wherever that folder is
mounted, this command prints the file; otherwise it says on which TaskManager and where it is.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import BinaryIO

import click

from steward.cli import jobs
from steward.config import Configuration
from steward.errors import StewardError
from steward.taskmanager.launcher import attempt_log
from steward.wire.records import AttemptRecord
from steward.wire.rest import JobView

_BLOCK = 64 * 1024


@click.command()
@click.argument("job_id", metavar="JOB")
@click.option("--attempt", type=click.IntRange(min=1), help="Which attempt (default: the last).")
@click.option("--tail", type=click.IntRange(min=1), metavar="N", help="Only the last N lines.")
@click.option("--path", "path_only", is_flag=True, help="Print where the log is, not the log.")
@click.pass_obj
def logs(
    config: Configuration, job_id: str, attempt: int | None, tail: int | None, path_only: bool
) -> None:
    """Print the log of a job's attempt (its runner.log) from its TaskManager's folder."""
    with jobs.open_client(config) as client:
        view = client.job(job_id)
    record = _pick(view, attempt)
    path = attempt_log(
        config.settings.taskmanager.workdir, record.taskmanager, job_id, record.number
    )
    if path_only:
        click.echo(f"{record.taskmanager} {path}")
        return
    try:
        log = path.open("rb")
    except OSError as exc:
        raise StewardError(
            f"attempt {record.number} of {job_id} ran on TaskManager {record.taskmanager}; its"
            f" log is not readable here: {path} ({exc.strerror}). It is on that TaskManager's"
            " host, in its taskmanager.workdir, until taskmanager.workdir.retention after the"
            " attempt ended"
        ) from None
    with log:
        out = sys.stdout.buffer
        if tail is not None:
            _seek_to_last_lines(log, tail)
        sys.stdout.flush()
        shutil.copyfileobj(log, out)
        out.flush()


def _pick(view: JobView, number: int | None) -> AttemptRecord:
    if not view.attempts:
        raise StewardError(f"job {view.job_id} has no attempt yet (it is {view.state.value})")
    if number is None:
        return max(view.attempts, key=lambda a: a.number)
    for record in view.attempts:
        if record.number == number:
            return record
    kept = ", ".join(str(a.number) for a in view.attempts)
    raise StewardError(f"job {view.job_id} has no attempt {number} on record (attempts: {kept})")


def _seek_to_last_lines(log: BinaryIO, lines: int) -> None:
    """Position ``log`` at the start of its last ``lines`` lines, reading from the end."""
    end = log.seek(0, os.SEEK_END)
    position, newlines = end, 0
    # A final newline ends the last line; it does not start another.
    if end > 0:
        log.seek(end - 1)
        if log.read(1) == b"\n":
            newlines = -1
    while position > 0:
        step = min(_BLOCK, position)
        position -= step
        log.seek(position)
        block = log.read(step)
        for index in range(len(block) - 1, -1, -1):
            if block[index] == 0x0A:
                newlines += 1
                if newlines == lines:
                    log.seek(position + index + 1)
                    return
    log.seek(0)
