"""How the job commands show jobs to a person: status lines, tables and results (rich).

``--json`` output does not come from here: it is the REST views themselves, dumped.
"""

from __future__ import annotations

import json
import time

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from steward.wire.job_options import describe_timeout
from steward.wire.records import AttemptRecord, ErrorInfo
from steward.wire.redaction import DEFAULT as SECRETS
from steward.wire.rest import ClusterView, JobView, LeadershipView, ResultView
from steward.wire.values import JsonValue


def timestamp(seconds: float | None, *, short: bool = False) -> str:
    """A local wall-clock time (``short``: without the year), or '-'."""
    if seconds is None:
        return "-"
    return time.strftime(
        "%m-%d %H:%M:%S" if short else "%Y-%m-%d %H:%M:%S", time.localtime(seconds)
    )


def latest_attempt(view: JobView) -> AttemptRecord | None:
    return max(view.attempts, key=lambda attempt: attempt.number, default=None)


def progress_text(progress: dict[str, JsonValue] | None) -> str:
    if not progress:
        return ""
    return " ".join(f"{key}={value}" for key, value in progress.items())


def cause_text(cause: ErrorInfo | None) -> str:
    if cause is None:
        return ""
    message = SECRETS.text(cause.message)  # the server hides them too; never shown here
    first = message.splitlines()[0] if message else ""
    return f"{cause.type}: {first}" if first else cause.type


def status_line(view: JobView, elapsed: float | None = None) -> Text:
    """One line: id, state, attempt and TaskManager, reason, progress (the live follow line)."""
    line = Text()
    line.append(view.job_id, style="bold")
    line.append("  ")
    line.append(view.state.value, style=_state_style(view.state.value))
    attempt = latest_attempt(view)
    if attempt is not None:
        line.append(f"  attempt {attempt.number} on {attempt.taskmanager}")
    if view.reason:
        line.append(f"  ({SECRETS.text(view.reason)})", style="dim")
    progress = progress_text(view.progress)
    if progress:
        line.append(f"  {progress}")
    if elapsed is not None:
        line.append(f"  {elapsed:.0f}s", style="dim")
    return line


def jobs_table(views: list[JobView], width: int = 80) -> Table:
    """``steward list``. Every column keeps its full width (ids and times get copied) except
    the reason, which gives way to a narrow terminal; name and reason only when some job has
    one."""
    names = any(view.name for view in views)
    reasons = any(view.reason for view in views)
    headers = ["job", *["name"] * names, "state", "attempts", "taskmanager", "submitted"]
    rows = []
    for view in sorted(views, key=lambda v: v.submitted_at or 0.0):
        attempt = latest_attempt(view)
        rows.append(
            [
                view.job_id,
                *[view.name or "-"] * names,
                view.state.value,
                str(view.attempt_count),
                attempt.taskmanager if attempt else "-",
                timestamp(view.submitted_at, short=True),
            ]
        )
    table = Table()
    used = 1  # the left border; each column adds its padding and a border
    for index, header in enumerate(headers):
        column_width = max([len(header), *(len(row[index]) for row in rows)])
        table.add_column(header, no_wrap=True, min_width=column_width)
        used += column_width + 3
    if reasons:
        left = max(width - used - 3, len("reason"))
        table.add_column("reason", no_wrap=True, overflow="ellipsis", max_width=left)
    state_index = headers.index("state")
    for view, row in zip(sorted(views, key=lambda v: v.submitted_at or 0.0), rows, strict=True):
        cells: list[str | Text] = list(row)
        cells[state_index] = Text(row[state_index], style=_state_style(row[state_index]))
        reason = SECRETS.text(view.reason or "").split("\n", 1)[0]
        table.add_row(*cells, *[reason] * reasons)
    return table


def job_details(view: JobView) -> Group:
    """``steward status``: the job's fields, then its attempts."""
    fields = Table.grid(padding=(0, 2))
    fields.add_row("job", view.job_id)
    if view.name:
        fields.add_row("name", view.name)
    fields.add_row("state", Text(view.state.value, style=_state_style(view.state.value)))
    if view.reason:
        fields.add_row("reason", SECRETS.text(view.reason))
    fields.add_row("submitted", timestamp(view.submitted_at))
    fields.add_row("updated", timestamp(view.updated_at))
    fields.add_row("attempts", f"{view.attempt_count} ({view.failures} failed)")
    if view.queue is not None:
        fields.add_row("queue", f"{view.queue} (priority {view.priority or 0})")
    if view.proxy_user is not None:
        fields.add_row("proxy user", view.proxy_user)
    if view.timeout is not None:
        fields.add_row(
            "timeout", f"{describe_timeout(view.timeout)} (until {timestamp(view.deadline)})"
        )
    for name, value in sorted((view.env or {}).items()):
        fields.add_row("env", f"{name}={value}")  # as the server shows it: secrets redacted
    if view.progress:
        fields.add_row("progress", progress_text(view.progress))
    if view.checkpoints:
        newest = max(view.checkpoints, key=lambda c: c.checkpoint_id)
        fields.add_row("checkpoint", f"{newest.checkpoint_id} at {timestamp(newest.created_at)}")
    if view.result is not None:
        fields.add_row("result", result_summary(view.result))
    ordered = sorted(view.attempts, key=lambda a: a.number)
    _add_spark_app(fields, ordered)
    attempts = Table("#", "taskmanager", "epoch", "state", "start", "end", "cause")
    for attempt in ordered:
        attempts.add_row(
            str(attempt.number),
            attempt.taskmanager,
            str(attempt.epoch),
            attempt.state.value,
            timestamp(attempt.started_at),
            timestamp(attempt.ended_at),
            cause_text(attempt.cause),
        )
    return Group(fields, attempts) if ordered else Group(fields)


def _add_spark_app(fields: Table, attempts: list[AttemptRecord]) -> None:
    """The Spark application of the latest attempt that reported one: id, master, UI."""
    apps = [attempt.spark_app for attempt in attempts if attempt.spark_app is not None]
    if apps:
        fields.add_row("spark app", f"{apps[-1].app_id} on {apps[-1].master or '?'}")
        if apps[-1].ui_url:
            fields.add_row("spark ui", apps[-1].ui_url)


def result_summary(result: ResultView) -> str:
    if result.error is not None:
        return f"{result.state.value}: {cause_text(result.error)}"
    if result.state.value == "FINISHED":
        return f"{result.state.value}: {json.dumps(result.value)}"
    return result.state.value


def print_result(console: Console, result: ResultView) -> None:
    """A result for a person: its state and value, or the error with its traceback."""
    state = result.state.value
    console.print(Text(f"{state}  {result.job_id}", style=_state_style(state)))
    if result.error is not None:
        console.print(Text(cause_text(result.error)))
        if result.error.traceback:
            console.print(Text(SECRETS.text(result.error.traceback).rstrip(), style="dim"))
    elif state == "FINISHED":
        console.print(Text(f"value: {json.dumps(result.value, indent=2)}"))


def print_leadership(console: Console, view: LeadershipView) -> None:
    """The recorded terms of leadership, oldest first, one row each."""
    table = Table(box=None, pad_edge=False)
    for column in ("EPOCH", "LEADER", "ADDRESS", "GRANTED", "RECOVERED IN", "JOBS", "ADOPTED"):
        table.add_column(column)
    for term in view.history:
        table.add_row(
            str(term.epoch),
            term.contender,
            term.address,
            timestamp(term.granted_at),
            f"{term.ready_at - term.granted_at:.2f} s",
            str(term.jobs),
            str(term.adopted),
        )
    console.print(table if view.history else "no term of leadership recorded yet")


def cluster_leader_line(cluster: ClusterView) -> str:
    leader = cluster.leader
    if leader is None:
        return f"cluster {cluster.cluster_id}: no leader"
    return f"{leader.id}  {leader.address}  epoch {leader.epoch}"


def _state_style(state: str) -> str:
    return {
        "FINISHED": "green",
        "RUNNING": "cyan",
        "FAILED": "red",
        "CANCELED": "yellow",
        "CANCELLING": "yellow",
        "RESTARTING": "magenta",
    }.get(state, "")
