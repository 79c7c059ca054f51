"""The click side of ``steward submit``: its words go to our own parser, its help lists ours.

spark-submit's placement rule (options before the file, everything after it the
application's) is not one click's parser can follow, so :class:`SubmitCommand` hands the
command's words, untouched, to the callback as ``words`` (:mod:`steward.cli.submit_plan`
reads them), and writes ``--help`` from the same option tables the parser uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import click

from steward.cli.spark_submit import HELP_NAMES, SPARK_OPTIONS, STEWARD_OPTIONS, Option

PLACEMENT = """\
Options go before FILE, as with spark-submit, and every word after FILE is the application's
(sys.argv[1:] of a script, ctx.args of a pipeline). Or put the application's arguments after
'--': then options may also follow FILE (steward submit app.py --detach -- ARGS). When FILE
comes first, the options after it are read up to '--' or the first word that is not one."""


class SubmitCommand(click.Command):
    """A command whose callback takes the raw ``words`` and whose help lists the tables."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.params = {"words": tuple(args)}
        ctx.args = []
        return []

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[OPTIONS]", "FILE", "[ARGS]..."]

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(PLACEMENT)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Steward's options"):
            formatter.write_dl([*_rows(STEWARD_OPTIONS), (", ".join(HELP_NAMES), "Show this.")])
        with formatter.section("spark-submit's options (same names and meaning; Spark key)"):
            formatter.write_dl(list(_rows(SPARK_OPTIONS)))


def _rows(options: Iterable[Option]) -> Iterable[tuple[str, str]]:
    for option in options:
        names = f"{option.short}, {option.name}" if option.short else option.name
        term = f"{names} {option.metavar}" if option.metavar else names
        text = f"{option.help} [{option.spark_key}]" if option.spark_key else option.help
        yield term, text


def echo_help(ctx: click.Context) -> NoReturn:
    """Print the command's help and end it with exit code 0."""
    click.echo(ctx.get_help(), color=ctx.color)
    ctx.exit(0)
