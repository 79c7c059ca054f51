"""The job commands: ``steward submit|list|status|cancel|result|leader``.

Each talks to the cluster through :class:`steward.Client` (found by
:func:`steward.discovery.discover_addresses`: ``rest.address``, the local cluster of
``./.steward``, or ZooKeeper). ``--json`` prints exactly one JSON document on stdout, the REST
views as the API returns them; otherwise rich text. Errors are ``StewardError``s, which
``steward.cli.main`` prints as one line with exit code 2.

Exit codes: 0; 1 when a followed job (``submit`` without ``--detach``) or a ``result`` ended
FAILED or CANCELED, or when ``leader`` finds none; 2 for a user mistake.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from rich.console import Console
from rich.live import Live

from steward.cli import render
from steward.cli.options import RESTART_HELP, parse_pairs, parse_restart
from steward.client import Client
from steward.config import Configuration
from steward.model import JobKind, RestartStrategy, TerminalState
from steward.status import ResultView

_json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def open_client(config: Configuration) -> Client:
    """The client every job command uses (tests replace this function)."""
    return Client.discover(config)


def _echo_json(document: BaseModel | Sequence[BaseModel] | None) -> None:
    data: Any
    if isinstance(document, Sequence):
        data = [item.model_dump(mode="json") for item in document]
    else:
        data = None if document is None else document.model_dump(mode="json")
    click.echo(json.dumps(data, indent=2))


def _exit_code(result: ResultView) -> int:
    return 0 if result.state is TerminalState.FINISHED else 1


def _restart(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    return None if value is None else parse_restart(value)


@click.command()
@click.argument("pipeline", type=click.Path(path_type=Path))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--name", help="A name to show beside the job id.")
@click.option("--job-id", help="The job's id (default: <pipeline name>-<8 hex>).")
@click.option("--slots", type=click.IntRange(1, 1024), help="Slots the job takes (default 1).")
@click.option("--restart", callback=_restart, metavar="STRATEGY", help=RESTART_HELP)
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="A Spark setting.")
@click.option("--label", "label", multiple=True, metavar="KEY=VALUE", help="A label.")
@click.option("--entrypoint", help="'function' or 'module:function' (default: main).")
@click.option("--kind", type=click.Choice([k.value for k in JobKind]), help="Default: batch.")
@click.option("--detach", is_flag=True, help="Return once submitted instead of following.")
@_json_option
@click.pass_obj
def submit(
    config: Configuration,
    *,
    pipeline: Path,
    args: tuple[str, ...],
    name: str | None,
    job_id: str | None,
    slots: int | None,
    restart: RestartStrategy | None,
    conf: tuple[str, ...],
    label: tuple[str, ...],
    entrypoint: str | None,
    kind: str | None,
    detach: bool,
    as_json: bool,
) -> None:
    """Submit PIPELINE (a .py file, a folder or a .zip) and follow it until it ends.

    Arguments after `--` are the pipeline's (ctx.args). Without --detach, shows a live status
    line, then the result; exit code 0 if the job FINISHED, 1 if it FAILED or was CANCELED.
    """
    spark_conf = parse_pairs(conf, "--conf")
    labels = parse_pairs(label, "--label")
    with open_client(config) as client:
        view = client.submit(
            pipeline,
            args=args,
            name=name,
            job_id=job_id,
            slots=slots,
            restart=restart,
            spark_conf=spark_conf or None,
            entrypoint=entrypoint,
            kind=kind,
            labels=labels or None,
        )
        if detach:
            if as_json:
                _echo_json(view)
            else:
                click.echo(f"submitted {view.job_id} ({view.state.value})")
                click.echo(f"follow it with: steward status {view.job_id}")
            return
        if not as_json:
            click.echo(f"submitted {view.job_id}", err=True)
        result = _follow(client, view.job_id, quiet=as_json)
    if as_json:
        _echo_json(result)
    else:
        render.print_result(Console(), result)
    click.get_current_context().exit(_exit_code(result))


def _follow(client: Client, job_id: str, *, quiet: bool) -> ResultView:
    """Wait for the job's result, with a live status line on stderr unless ``quiet``."""
    if quiet:
        return client.wait(job_id)
    started = time.monotonic()
    console = Console(stderr=True)
    try:
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            return client.wait(
                job_id,
                on_update=lambda view: live.update(
                    render.status_line(view, time.monotonic() - started)
                ),
            )
    except KeyboardInterrupt:
        console.print(f"stopped following; the job keeps running: steward status {job_id}")
        raise click.Abort from None


@click.command("list")
@_json_option
@click.pass_obj
def list_jobs(config: Configuration, as_json: bool) -> None:
    """List every job: running ones and those with a result."""
    with open_client(config) as client:
        views = client.jobs()
    if as_json:
        _echo_json(views)
    elif not views:
        click.echo("no jobs")
    else:
        console = Console()
        console.print(render.jobs_table(views, width=console.width))


@click.command()
@click.argument("job_id", metavar="JOB")
@_json_option
@click.pass_obj
def status(config: Configuration, job_id: str, as_json: bool) -> None:
    """Show a job's state, reason, progress and attempts."""
    with open_client(config) as client:
        view = client.job(job_id)
    if as_json:
        _echo_json(view)
    else:
        Console().print(render.job_details(view))


@click.command()
@click.argument("job_id", metavar="JOB")
@_json_option
@click.pass_obj
def cancel(config: Configuration, job_id: str, as_json: bool) -> None:
    """Cancel a job; returns once the cluster accepted (steward status shows the end)."""
    with open_client(config) as client:
        view = client.cancel(job_id)
    if as_json:
        _echo_json(view)
    else:
        click.echo(f"cancelling {view.job_id} ({view.state.value})")


@click.command()
@click.argument("job_id", metavar="JOB")
@_json_option
@click.pass_obj
def result(config: Configuration, job_id: str, as_json: bool) -> None:
    """Show a terminated job's result. Exit code 0 if it FINISHED, 1 otherwise."""
    with open_client(config) as client:
        outcome = client.result(job_id)
    if as_json:
        _echo_json(outcome)
    else:
        render.print_result(Console(), outcome)
    click.get_current_context().exit(_exit_code(outcome))


@click.command()
@_json_option
@click.pass_obj
def leader(config: Configuration, as_json: bool) -> None:
    """Show the leading JobManager (id, address, epoch). Exit code 1 if there is none."""
    with open_client(config) as client:
        cluster = client.cluster()
    if as_json:
        _echo_json(cluster.leader)
    else:
        click.echo(render.cluster_leader_line(cluster))
    if cluster.leader is None:
        click.get_current_context().exit(1)


COMMANDS = (submit, list_jobs, status, cancel, result, leader)
