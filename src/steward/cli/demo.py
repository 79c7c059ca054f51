"""``steward demo``: the README's first command runs this."""

from __future__ import annotations

from pathlib import Path

import click

from steward.config import parse_duration


@click.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".steward/demo"),
    show_default=True,
    help="Where the demo's cluster keeps its state, logs and the word count's output.",
)
@click.option(
    "--session-timeout", default="4s", show_default=True, help="ZooKeeper session timeout."
)
@click.option(
    "--election-only",
    is_flag=True,
    help="Only the leader-election demo: three contenders, no jobs, no Spark.",
)
def demo(workdir: Path, session_timeout: str, election_only: bool) -> None:
    """A local HA cluster runs a PySpark word count; its leading JobManager is SIGKILLed."""
    try:
        seconds = parse_duration(session_timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--session-timeout") from exc
    if election_only:
        from steward.demo.election import run as run_election

        run_election(workdir.resolve(), session_timeout=seconds)
        return
    from steward.demo.cluster import run

    run(workdir.resolve(), session_timeout=session_timeout)
