"""``steward queues``: the cluster's queues (``scheduling.queues``), their shares and use.

Read from the leader's latest scheduling pass (``GET /v1/queues``): per queue its guarantee
and maximum (as shares and as slots of the TaskManagers registered now), its jobs running and
waiting, the slots they hold and their share of all slots.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from steward.cli import jobs
from steward.cli.options import json_option
from steward.config import Configuration
from steward.wire.queues import QueueList


@click.command()
@json_option
@click.pass_obj
def queues(config: Configuration, as_json: bool) -> None:
    """Show each queue: its shares, jobs running and waiting, slots used."""
    with jobs.open_client(config) as client:
        answer = client.queues()
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json"), indent=2))
    else:
        Console().print(queues_table(answer))


def queues_table(answer: QueueList) -> Table:
    table = Table(
        "queue",
        "guarantee",
        "maximum",
        "weight",
        "running",
        "waiting",
        "slots",
        "share",
        title=f"{answer.slots} slot(s) registered",
    )
    for queue in answer.queues:
        table.add_row(
            queue.name,
            f"{queue.guarantee:.0%} ({queue.guaranteed_slots:g})",
            f"{queue.maximum:.0%} ({queue.max_slots})",
            f"{queue.weight:g}",
            str(queue.running),
            str(queue.waiting),
            f"{queue.slots_used}/{queue.max_slots}",
            f"{queue.share:.0%}",
        )
    return table
