"""``steward logs JOB``: print an attempt's log, from any machine that reaches a JobManager.

An attempt's output (the runner, the pipeline, the Spark JVM) is in ``runner.log`` on the
TaskManager that ran it (capped at ``taskmanager.attempt-log.max-size``, removed
``taskmanager.workdir.retention`` after the attempt ended) and, once the attempt ended, in the
log archive of the HA storage (kept for ``jobmanager.logs.max-age``). Any JobManager serves it
(``GET /v1/jobs/{id}/attempts/{n}/log``, asking that TaskManager, or reading the archive once
the TaskManager no longer has it), so this command needs nothing of the TaskManager's host:
:meth:`steward.Client.log` does the work. With
``--follow`` it prints what the attempt prints until the attempt ends, then says how the job
went on (a new attempt, to follow in turn).
"""

from __future__ import annotations

import sys

import click

from steward.cli import jobs
from steward.client import Client
from steward.config import Configuration


@click.command()
@click.argument("job_id", metavar="JOB")
@click.option("--attempt", type=click.IntRange(min=1), help="Which attempt (default: the last).")
@click.option("--tail", type=click.IntRange(min=1), metavar="N", help="Only the last N lines.")
@click.option(
    "--offset", type=click.IntRange(min=0), default=0, metavar="BYTES", help="Start at this byte."
)
@click.option(
    "-f", "--follow", is_flag=True, help="Keep printing what it appends until the attempt ends."
)
@click.pass_obj
def logs(
    config: Configuration,
    *,
    job_id: str,
    attempt: int | None,
    tail: int | None,
    offset: int,
    follow: bool,
) -> None:
    """Print the log of a job's attempt (its runner.log), wherever it ran."""
    with jobs.open_client(config) as client:
        if attempt is None:
            attempt = _latest(client, job_id)
        out = sys.stdout.buffer
        for block in client.log(job_id, attempt, offset=offset, tail=tail, follow=follow):
            out.write(block)
            if follow:
                out.flush()
        out.flush()
        if follow:
            _went_on(client, job_id, attempt)


def _latest(client: Client, job_id: str) -> int:
    view = client.job(job_id)
    if not view.attempts:
        raise click.ClickException(f"job {job_id} has no attempt yet (it is {view.state.value})")
    return max(record.number for record in view.attempts)


def _went_on(client: Client, job_id: str, attempt: int) -> None:
    """After following an attempt to its end: say what became of it and of the job."""
    view = client.job(job_id)
    ended = next((a for a in view.attempts if a.number == attempt), None)
    how = f" ({ended.state.value})" if ended is not None else ""
    newest = max((a.number for a in view.attempts), default=attempt)
    if newest > attempt:
        click.echo(
            f"attempt {attempt} of {job_id} ended{how}; the job went on to attempt {newest}:"
            f" steward logs {job_id} --attempt {newest} -f",
            err=True,
        )
    else:
        click.echo(
            f"attempt {attempt} of {job_id} ended{how}; the job is {view.state.value}", err=True
        )
