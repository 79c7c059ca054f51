"""``steward jobmanager``: run one JobManager in the foreground."""

from __future__ import annotations

import os
import socket

import click

from steward import logformat
from steward.config import Configuration
from steward.long_lived_heap import LongLivedHeap
from steward.process_name import name_this_process
from steward.wire.values import check_job_id

from .foreground import serve_until_signalled


def default_id() -> str:
    host = "".join(c if c.isalnum() or c in "-_." else "-" for c in socket.gethostname())
    return f"jm-{host}-{os.getpid()}"


@click.command()
@click.option("--id", "jobmanager_id", help="This JobManager's id (default: jm-<host>-<pid>).")
@click.pass_obj
def jobmanager(config: Configuration, jobmanager_id: str | None) -> int:
    """Run a JobManager: contend for leadership, serve the REST API (foreground)."""
    chosen = jobmanager_id or default_id()
    try:
        check_job_id(chosen)
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("job id", "id"), param_hint="--id") from None
    name_this_process("steward-jm")
    # Its initialize hooks' child processes log as it does.
    logformat.configure(config.settings.log.format, f"jobmanager:{chosen}", export=True)
    return run(config, chosen)


def run(config: Configuration, jobmanager_id: str) -> int:
    """Run a JobManager in the foreground until SIGTERM or SIGINT; returns the exit code."""
    from steward.jobmanager.manager import JobManager

    def announce(manager: JobManager) -> None:
        if config.settings.log.format == "text":  # in JSON, "jobmanager started" says it
            print(
                f"jobmanager {jobmanager_id} serving on {manager.address} pid={os.getpid()}",
                flush=True,
            )

    def start() -> JobManager:
        manager = JobManager(config, jobmanager_id).start()
        # A full collection scans what it made since the last one, not the whole job table.
        LongLivedHeap().start()
        return manager

    return serve_until_signalled(start, announce)
