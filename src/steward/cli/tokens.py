"""``steward token create|list|revoke``: the cluster's access tokens (an admin token needed).

``create`` prints the token once (it is stored hashed: nobody can show it again); ``list``
shows ids, names, roles and expiry, never a secret; ``revoke`` makes every JobManager refuse
the token within seconds.
"""

from __future__ import annotations

import json
import time

import click

from steward.cli.jobs import open_client
from steward.cli.options import json_option, role_option
from steward.config import parse_duration
from steward.errors import ConfigurationError


@click.group()
def token() -> None:
    """Create, list and revoke access tokens (needs an admin token)."""


@token.command()
@click.option("--name", required=True, help="Who the token is for (letters, digits, . _ - @).")
@role_option
@click.option("--expires", metavar="DURATION", help="Lifetime, e.g. 12h, 30d (default: never).")
@click.option(
    "--team",
    "teams",
    multiple=True,
    metavar="TEAM",
    help="A team whose jobs it sees and submits as; repeat it (default: the cluster's default"
    " team).",
)
@json_option
@click.pass_context
def create(
    ctx: click.Context,
    *,
    name: str,
    role: str,
    expires: str | None,
    teams: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create a token and print it, this once."""
    expires_in = _duration(expires) if expires else None
    with open_client(ctx.obj) as client:
        created = client.create_token(name, role, expires_in=expires_in, teams=teams)
    if as_json:
        click.echo(json.dumps(created.model_dump(mode="json"), indent=2))
        return
    info = created.info
    until = "never" if info.expires_at is None else _when(info.expires_at)
    click.echo(created.token)
    in_teams = ", ".join(info.teams) or "the default team"
    click.echo(
        f"token {info.id} for {info.name}, role {info.role.value}, teams {in_teams}, expires"
        f" {until}."
        " It is shown only now: store it (e.g. in a file of mode 0600 named by"
        " client.token-file, or in $STEWARD_TOKEN).",
        err=True,
    )


@token.command(name="list")
@json_option
@click.pass_context
def list_tokens(ctx: click.Context, as_json: bool) -> None:
    """Every token: id, name, role, created, expires (never a secret)."""
    with open_client(ctx.obj) as client:
        tokens = client.tokens()
    if as_json:
        click.echo(json.dumps([t.model_dump(mode="json") for t in tokens], indent=2))
        return
    click.echo(f"{'ID':<14}{'NAME':<24}{'ROLE':<11}{'CREATED':<21}{'EXPIRES':<21}TEAMS")
    for view in tokens:
        expires = "never" if view.expires_at is None else _when(view.expires_at)
        click.echo(
            f"{view.id:<14}{view.name:<24}{view.role.value:<11}{_when(view.created_at):<21}"
            f"{expires:<21}{','.join(view.teams) or '-'}"
        )


@token.command()
@click.argument("token_id", metavar="ID")
@click.pass_context
def revoke(ctx: click.Context, token_id: str) -> None:
    """Revoke token ID: every JobManager refuses it from now on (within 2 seconds)."""
    with open_client(ctx.obj) as client:
        client.revoke_token(token_id)
    click.echo(f"revoked {token_id}", err=True)


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except (ValueError, ConfigurationError) as exc:
        raise click.BadParameter(f"{text!r} is not a duration (e.g. 12h, 30d)") from exc
    if seconds <= 0:
        raise click.BadParameter("must be longer than zero")
    return seconds


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))
