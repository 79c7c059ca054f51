"""The ``steward`` command: the entry point that wires the sub-command groups together.

The configuration (``--config``, ``STEWARD_*`` environment variables, ``-D key=value``) is
loaded and validated once, here, before any sub-command runs; sub-commands find it in
``click.get_current_context().obj``.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from pathlib import Path

import click

from steward import config, logformat
from steward.errors import StewardError

TOKEN_META = "steward.token"
"""Where ``--token`` is kept for the sub-commands (``click.Context.meta``)."""


# Each sub-command's module, imported only when that command runs (or help lists them all):
# a JobManager or TaskManager process, started hundreds of times by a test run and once per
# node by `steward cluster`, then does not pay for the client, the cluster tooling and the
# certificate code, and `steward status` does not pay for FastAPI.
_COMMANDS: dict[str, tuple[str, str]] = {
    "zookeeper": ("steward.cli.zookeeper", "zookeeper"),
    "demo": ("steward.cli.demo", "demo"),
    "submit": ("steward.cli.jobs", "submit"),
    "list": ("steward.cli.jobs", "list_jobs"),
    "status": ("steward.cli.jobs", "status"),
    "cancel": ("steward.cli.jobs", "cancel"),
    "result": ("steward.cli.jobs", "result"),
    "leader": ("steward.cli.jobs", "leader"),
    "queues": ("steward.cli.queues", "queues"),
    "logs": ("steward.cli.logs", "logs"),
    "cluster": ("steward.cli.cluster", "cluster"),
    "jobmanager": ("steward.cli.jobmanager", "jobmanager"),
    "taskmanager": ("steward.cli.taskmanager", "taskmanager"),
    "token": ("steward.cli.tokens", "token"),
    "certificate": ("steward.cli.certificates", "certificate"),
    "doctor": ("steward.cli.doctor", "doctor"),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported from :data:`_COMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = _COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command), f"{module_name}.{attribute}"
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="steward.toml to read (default: $STEWARD_CONFIG, else ./steward.toml, else the local"
    " cluster's ./.steward/steward.toml, if present).",
)
@click.option(
    "-D", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a configuration key."
)
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.option(
    "--token",
    metavar="TOKEN",
    help="Bearer token to send (default: $STEWARD_TOKEN, else the file client.token-file"
    " names, else the local cluster's .steward/admin.token).",
)
@click.version_option(package_name="steward")
@click.pass_context
def cli(
    ctx: click.Context,
    config_file: Path | None,
    overrides: tuple[str, ...],
    verbose: int,
    token: str | None,
) -> None:
    """Steward: a highly available job manager for PySpark pipelines."""
    ctx.meta[TOKEN_META] = token
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format=logformat.TEXT_FORMAT)
    threading.excepthook = _log_thread_death
    ctx.obj = config.load(config_file, config.parse_overrides(overrides))
    logformat.configure(ctx.obj.settings.log.format, ctx.invoked_subcommand or "cli")


def _log_thread_death(args: threading.ExceptHookArgs) -> None:
    """A thread that dies of an exception is logged whole, in one record, not interleaved.

    The message keeps Python's own "Exception in thread" words: the chaos checker, and
    anyone grepping a log, look for them.
    """
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("steward.threads").critical(
        "Exception in thread %s: the thread died",
        name,
        exc_info=(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback),
    )


def main() -> None:
    """Run the CLI; a ``StewardError`` is one line on stderr and exit code 2, no traceback."""
    try:
        # Without standalone mode click returns ctx.exit()'s code instead of exiting.
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except StewardError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if isinstance(code, int) and not isinstance(code, bool):
        sys.exit(code)
