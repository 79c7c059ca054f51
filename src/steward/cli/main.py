"""The ``steward`` command: the entry point that wires the sub-command groups together."""

from __future__ import annotations

import logging
import sys

import click

from steward.errors import StewardError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="steward")
def cli(verbose: int) -> None:
    """Steward: a highly available job manager for PySpark pipelines."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")


def _register() -> None:
    from steward.cli.zookeeper import zookeeper

    cli.add_command(zookeeper)


_register()


def main() -> None:
    """Run the CLI; a ``StewardError`` is one line on stderr and exit code 2, no traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except StewardError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
