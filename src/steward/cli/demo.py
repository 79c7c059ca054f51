"""``steward demo``: the README's first command runs this."""

from __future__ import annotations

from pathlib import Path

import click

from steward.config import parse_duration


@click.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".steward"),
    show_default=True,
    help="Where the demo keeps ZooKeeper data and logs.",
)
@click.option(
    "--session-timeout", default="4s", show_default=True, help="ZooKeeper session timeout."
)
def demo(workdir: Path, session_timeout: str) -> None:
    """Three contenders; kill the leader, watch a standby take over with a higher epoch."""
    from steward.demo.election import run

    try:
        seconds = parse_duration(session_timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--session-timeout") from exc
    run(workdir.resolve(), session_timeout=seconds)
