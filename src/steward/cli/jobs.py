"""The job commands: ``steward submit|list|status|cancel|result|leader``.

Each talks to the cluster through :class:`steward.Client` (found by
:func:`steward.client.discovery.discover_addresses`: ``rest.address``, the local cluster of
``./.steward``, or ZooKeeper). ``--json`` prints exactly one JSON document on stdout, the REST
views as the API returns them; otherwise rich text. Errors are ``StewardError``s, which
``steward.cli.main`` prints as one line with exit code 2.

Exit codes: 0; 1 when a followed job (``submit`` without ``--detach``, ``status -f``) or a
``result`` ended FAILED or CANCELED, or when ``leader`` finds none; 2 for a user mistake.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import click
from pydantic import BaseModel
from rich.console import Console
from rich.live import Live

from steward.cli import render, submit_plan
from steward.cli.options import json_option
from steward.cli.spark_submit import HelpRequested
from steward.cli.submit_command import SubmitCommand, echo_help
from steward.cli.submit_plan import SubmitPlan
from steward.client import Client, JobFilter
from steward.config import Configuration
from steward.wire.rest import JobView, ResultView
from steward.wire.states import JobState, TerminalState


def open_client(config: Configuration) -> Client:
    """The client every job command uses (tests replace this function), with the token of
    ``--token`` if given (else the client finds one: steward.security.credentials)."""
    context = click.get_current_context(silent=True)
    token = context.find_root().meta.get("steward.token") if context is not None else None
    return Client.discover(config, token=token)


def _echo_json(document: BaseModel | Sequence[BaseModel] | None) -> None:
    data: Any
    if isinstance(document, Sequence):
        data = [item.model_dump(mode="json") for item in document]
    else:
        data = None if document is None else document.model_dump(mode="json")
    click.echo(json.dumps(data, indent=2))


def _show(document: BaseModel, *, as_json: bool, human: Callable[[], None]) -> None:
    """``document`` as JSON with --json, else as ``human`` prints it."""
    if as_json:
        _echo_json(document)
    else:
        human()


def _show_result(outcome: ResultView, *, as_json: bool) -> None:
    """A terminated job's result, then the command's exit code: 0 if it FINISHED, 1 otherwise."""
    _show(outcome, as_json=as_json, human=lambda: render.print_result(Console(), outcome))
    click.get_current_context().exit(_exit_code(outcome))


def _exit_code(result: ResultView) -> int:
    return 0 if result.state is TerminalState.FINISHED else 1


@click.command(cls=SubmitCommand)
@click.pass_context
def submit(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Submit FILE and follow the job until it ends.

    FILE is a .py file, a folder or a .zip: a spark-submit script (run unchanged, as
    __main__ with sys.argv == [FILE, *ARGS]) or a pipeline with main(ctx); --program chooses
    when the file could be both. Without --detach, shows a live status line, then the result;
    exit code 0 if the job FINISHED, 1 if it FAILED or was CANCELED.
    """
    try:
        plan = submit_plan.parse(words)
    except HelpRequested:
        echo_help(ctx)
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    if plan.verbose:
        click.echo("\n".join(submit_plan.describe(plan)), err=True)
    with open_client(ctx.obj) as client:
        view = _send(client, plan)
        if plan.detach:
            _echo_submitted(view, as_json=plan.as_json)
            return
        if not plan.as_json:
            click.echo(f"submitted {view.job_id}", err=True)
        result = _follow(client, view.job_id, quiet=plan.as_json)
    if plan.as_json:
        _echo_json(result)
    else:
        render.print_result(Console(), result)
    ctx.exit(_exit_code(result))


def _send(client: Client, plan: SubmitPlan) -> JobView:
    return client.submit(
        plan.pipeline,
        args=plan.args,
        name=plan.name,
        job_id=plan.job_id,
        slots=plan.slots,
        restart=plan.restart,
        spark_conf=plan.spark_conf or None,
        entrypoint=plan.entrypoint,
        kind=plan.kind,
        labels=plan.labels or None,
        team=plan.team,
        timeout=plan.timeout,
        env=plan.env or None,
        notify=plan.notify,
        queue=plan.queue,
        priority=plan.priority,
        max_concurrent=plan.max_concurrent,
        proxy_user=plan.proxy_user,
        program=plan.program,
        py_files=plan.py_files,
        files=plan.files,
        archives=plan.archives,
        jars=plan.jars,
        requirements=plan.requirements,
    )


def _echo_submitted(view: JobView, *, as_json: bool) -> None:
    if as_json:
        _echo_json(view)
    else:
        click.echo(f"submitted {view.job_id} ({view.state.value})")
        click.echo(f"follow it with: steward status {view.job_id}")


def _follow(client: Client, job_id: str, *, quiet: bool) -> ResultView:
    """Wait for the job's result, with a live status line on stderr unless ``quiet``.

    ``Client.wait`` follows the job's live events (one request per change, across a failover;
    it polls only a JobManager without them), so the line changes as soon as the job does."""
    if quiet:
        return client.wait(job_id)
    started = time.monotonic()
    console = Console(stderr=True)
    try:
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            result = client.wait(
                job_id,
                on_update=lambda view: live.update(
                    render.status_line(view, time.monotonic() - started)
                ),
            )
    except KeyboardInterrupt:
        console.print(f"stopped following; the job keeps running: steward status {job_id}")
        raise click.Abort from None
    if not console.is_terminal:
        console.line()  # off a terminal, Live leaves its last line without a newline
    return result


def _check_label(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and "=" not in value:
        raise click.BadParameter(f"{value!r} is not KEY=VALUE")
    return value


LIST_DEFAULT = 50
"""Jobs ``steward list`` shows without --all or --limit: the newest."""


@click.command("list")
@json_option
@click.option("--all", "every", is_flag=True, help="Every job, however many (read page by page).")
@click.option(
    "--limit", type=click.IntRange(min=1), help=f"The newest N jobs [default: {LIST_DEFAULT}]."
)
@click.option("--state", type=click.Choice([s.value for s in JobState], case_sensitive=False))
@click.option("--label", metavar="KEY=VALUE", callback=_check_label, help="Jobs with this label.")
@click.option("--name", metavar="PREFIX", help="Jobs whose name starts with PREFIX.")
@click.option("--submitter", help="Jobs this token's name submitted.")
@click.option("--team", help="One team's jobs (you see only your teams' unless an admin).")
@click.pass_obj
def list_jobs(
    config: Configuration,
    *,
    as_json: bool,
    every: bool,
    limit: int | None,
    state: str | None,
    label: str | None,
    name: str | None,
    submitter: str | None,
    team: str | None,
) -> None:
    """List jobs, newest last: running ones and those with a result (the newest 50 unless
    --all or --limit)."""
    where = JobFilter(
        state=state and state.upper(), label=label, name=name, submitter=submitter, team=team
    )
    wanted = None if every else (limit or LIST_DEFAULT)
    with open_client(config) as client:
        views = client.jobs(where, None if wanted is None else wanted + 1)
    more = wanted is not None and len(views) > wanted
    views = views[1:] if more else views
    if as_json:
        _echo_json(views)
    elif not views:
        click.echo("no jobs")
    else:
        console = Console()
        console.print(render.jobs_table(views, width=console.width))
    if more:
        click.echo(
            f"showing the newest {wanted}; more with --all, --limit N, or --state, --label,"
            " --name, --submitter",
            err=True,
        )


@click.command()
@click.argument("job_id", metavar="JOB")
@json_option
@click.option(
    "-f", "--follow", is_flag=True, help="Follow the job until it ends, then show its result."
)
@click.pass_obj
def status(config: Configuration, job_id: str, as_json: bool, follow: bool) -> None:
    """Show a job's state, reason, progress and attempts.

    With --follow, a live status line until the job ends (from the cluster's live events),
    then its result; exit code 0 if it FINISHED, 1 otherwise."""
    if follow:
        with open_client(config) as client:
            outcome = _follow(client, job_id, quiet=as_json)
        _show_result(outcome, as_json=as_json)
    with open_client(config) as client:
        view = client.job(job_id)
    _show(view, as_json=as_json, human=lambda: Console().print(render.job_details(view)))


@click.command()
@click.argument("job_id", metavar="JOB")
@json_option
@click.pass_obj
def cancel(config: Configuration, job_id: str, as_json: bool) -> None:
    """Cancel a job; returns once the cluster accepted (steward status shows the end)."""
    with open_client(config) as client:
        view = client.cancel(job_id)
    _show(
        view,
        as_json=as_json,
        human=lambda: click.echo(f"cancelling {view.job_id} ({view.state.value})"),
    )


@click.command()
@click.argument("job_id", metavar="JOB")
@json_option
@click.pass_obj
def result(config: Configuration, job_id: str, as_json: bool) -> None:
    """Show a terminated job's result. Exit code 0 if it FINISHED, 1 otherwise."""
    with open_client(config) as client:
        outcome = client.result(job_id)
    _show_result(outcome, as_json=as_json)


@click.command()
@json_option
@click.option("--history", is_flag=True, help="Also the latest terms of leadership, oldest first.")
@click.pass_obj
def leader(config: Configuration, as_json: bool, history: bool) -> None:
    """Show the leading JobManager (id, address, epoch). Exit code 1 if there is none.

    With --history, the latest terms of leadership: each epoch, who led, when it was granted
    and when it had recovered (an epoch missing between two is a leader that died before).
    """
    with open_client(config) as client:
        cluster = client.cluster()
        terms = client.leadership() if history else None
    if as_json:
        _echo_json(terms if terms is not None else cluster.leader)
    else:
        if terms is not None:
            render.print_leadership(Console(), terms)
        click.echo(render.cluster_leader_line(cluster))
    if cluster.leader is None:
        click.get_current_context().exit(1)


COMMANDS = (submit, list_jobs, status, cancel, result, leader)
