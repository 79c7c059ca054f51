"""``steward certificate create NAME --role ROLE``: a client certificate for a machine, signed by
the local cluster's private CA (``steward cluster start --tls`` made it in .steward/tls).

Under ``security.auth.client-certificates`` (with ``rest.ssl.client-auth`` optional or require)
a JobManager takes such a certificate as the machine's credential: its CN names the caller,
its O is the role and each OU a team it is in. With real certificates, your own CA issues
them the same way (docs/security.md).
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import click

from steward.cli.options import role_option
from steward.cluster.local import TLS_DIR
from steward.cluster.workdir import StateDir
from steward.errors import ConfigurationError
from steward.tls.certificates import issue_client_certificate
from steward.wire.tokens import TOKEN_NAME_PATTERN, check_teams

_NAME = re.compile(TOKEN_NAME_PATTERN)


@click.group()
def certificate() -> None:
    """Client certificates for machines (mutual TLS), from a local cluster's CA."""


@certificate.command()
@click.argument("name")
@role_option
@click.option(
    "--days", type=click.IntRange(1, 397), default=90, show_default=True, help="Validity."
)
@click.option(
    "--team",
    "teams",
    multiple=True,
    metavar="TEAM",
    help="A team it is in (an OU of its subject); repeat it (default: the default team).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to write NAME.pem and NAME-key.pem (0600) to.",
)
@click.option(
    "--cluster-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The local cluster's folder (the one holding .steward/tls).",
)
def create(
    name: str, *, role: str, days: int, teams: tuple[str, ...], out: Path, cluster_dir: Path
) -> None:
    """Issue a client certificate for NAME with ROLE, signed by the cluster's CA."""
    if not _NAME.fullmatch(name):
        raise click.BadParameter(
            "letters, digits, . _ - @ (at most 64, starting with a letter or digit)",
            param_hint="NAME",
        )
    try:
        units = check_teams(list(teams))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--team") from None
    folder = StateDir.of(cluster_dir).root / TLS_DIR
    try:
        issued = issue_client_certificate(
            folder,
            name,
            role,
            out.absolute(),
            validity=datetime.timedelta(days=days),
            teams=units,
        )
    except ValueError as exc:
        raise ConfigurationError(
            f"{exc}: start the cluster with `steward cluster start --tls` first, or give its"
            " folder with --cluster-dir"
        ) from None
    click.echo(f"{issued.certificate}\n{issued.key}")
    click.echo(
        f"certificate for {name}, role {role}, valid {days} days. A client presents it with"
        f" rest.ssl.certificate={issued.certificate} and rest.ssl.key={issued.key}; the"
        " JobManagers take it under security.auth.client-certificates=true with"
        " rest.ssl.client-auth=optional (or require).",
        err=True,
    )
