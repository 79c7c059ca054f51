"""``steward jobmanager``: run one JobManager in the foreground."""

from __future__ import annotations

import os
import socket

import click

from steward import logformat
from steward.config import Configuration
from steward.wire.values import check_job_id


def default_id() -> str:
    host = "".join(c if c.isalnum() or c in "-_." else "-" for c in socket.gethostname())
    return f"jm-{host}-{os.getpid()}"


@click.command()
@click.option("--id", "jobmanager_id", help="This JobManager's id (default: jm-<host>-<pid>).")
@click.pass_obj
def jobmanager(config: Configuration, jobmanager_id: str | None) -> int:
    """Run a JobManager: contend for leadership, serve the REST API (foreground)."""
    from steward.jobmanager.foreground import run

    chosen = jobmanager_id or default_id()
    try:
        check_job_id(chosen)
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("job id", "id"), param_hint="--id") from None
    # Its initialize hooks' child processes log as it does.
    logformat.configure(config.settings.log.format, f"jobmanager:{chosen}", export=True)
    return run(config, chosen)
