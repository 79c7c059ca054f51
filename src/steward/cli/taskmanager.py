"""``steward taskmanager``: run one TaskManager in the foreground.

SIGTERM or SIGINT stops it gracefully (attempts cancelled, their leases released,
deregistered); SIGKILL leaves its runners to their dead-man's switch.
"""

from __future__ import annotations

import logging
import os

import click

from steward import logformat
from steward.config import Configuration
from steward.process_name import name_this_process

from .foreground import serve_until_signalled


@click.command()
@click.option("--id", "taskmanager_id", help="This TaskManager's id (default: tm-<host>-<pid>).")
@click.pass_obj
def taskmanager(config: Configuration, taskmanager_id: str | None) -> int:
    """Run a TaskManager: register, heartbeat to the leader, run attempts (foreground)."""
    from steward.errors import ConfigurationError
    from steward.taskmanager.manager import check_id, default_id

    chosen = taskmanager_id or default_id()
    try:
        check_id(chosen)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--id") from None
    name_this_process("steward-tm")
    # Its runners (and their spares) inherit STEWARD_LOG_FORMAT: they log as it does.
    logformat.configure(config.settings.log.format, f"taskmanager:{chosen}", export=True)
    return run(config, chosen)


def run(config: Configuration, taskmanager_id: str) -> int:
    """Run a TaskManager until SIGTERM or SIGINT; returns the exit code."""
    from steward.taskmanager.manager import TaskManager

    # A server process: its own INFO lines are its log, unless -v asked for more.
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger("steward").setLevel(logging.INFO)

    def announce(manager: TaskManager) -> None:
        if config.settings.log.format == "text":  # in JSON, "taskmanager started" says it
            click.echo(
                f"taskmanager {taskmanager_id} started pid={os.getpid()} slots={manager.slots}"
            )

    return serve_until_signalled(lambda: TaskManager(config, taskmanager_id).start(), announce)
