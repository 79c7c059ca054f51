"""spark-submit's command line, read into a typed plan: what ``steward submit`` submits.

A person used to spark-submit prefixes an existing command line with ``steward submit``::

    steward submit --master yarn --num-executors 4 --py-files deps.zip app.py 2024-01-01

Where the words go (the rule ``steward submit --help`` states):

1. As with spark-submit, options come before the application file and every word after the
   file is the application's argument (``sys.argv[1:]`` of a script, ``ctx.args`` of a
   pipeline), even one that looks like an option.
2. ``--`` ends the options: every word after it is the application's, every word before it an
   option or the file, in any order (Steward's form: ``steward submit app.py --detach -- ARGS``).
3. When the file is the first word (``steward submit app.py --detach``), the options after it
   are read too, up to ``--`` or the first word that is not an option. An option there that
   ``steward submit`` does not know is an error pointing at ``--``, never an argument passed
   on by guess.

Settings follow spark-submit's precedence (its ``SparkSubmitArguments``): an explicit option
(``--master``, ``--driver-memory``, ``--jars``, ...) wins over ``--conf`` of the same key,
which wins over ``--properties-file`` (of which, as spark-submit, only ``spark.*`` keys are
read). Each option sets the Spark key spark-submit sets (:data:`SPARK_OPTIONS`).

Pure: it reads the properties file and checks that the files named exist, nothing else.
Errors are click usage errors (one line, exit code 2); the values are checked in
:mod:`steward.cli.submit_plan`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import click

from steward.wire.spark_options import SPARK_OPTION_KEYS


@dataclass(frozen=True)
class Option:
    """One option of ``steward submit``; ``metavar`` None means a flag (no value)."""

    name: str
    metavar: str | None
    help: str
    short: str | None = None

    @property
    def spark_key(self) -> str | None:
        """The Spark key the option sets (:data:`steward.wire.spark_options.SPARK_OPTION_KEYS`);
        ``--name`` is resolved with the job's name instead, and ``--queue`` is Steward's queue
        (the API's ``options.queue`` stays YARN's, as Livy's ``queue``)."""
        if self.name in ("--name", "--queue"):
            return None
        return SPARK_OPTION_KEYS.get(self.name.removeprefix("--"))


SPARK_OPTIONS: tuple[Option, ...] = (
    Option(
        "--master",
        "URL",
        "local[*], spark://HOST:PORT, yarn, k8s://https://HOST:PORT or sc://HOST"
        " (default: the cluster's).",
    ),
    Option(
        "--deploy-mode",
        "MODE",
        "client only: the driver runs on a TaskManager, which Steward"
        " supervises; cluster is refused.",
    ),
    Option("--name", "NAME", "A name for the job and the application. [spark.app.name]"),
    Option("--conf", "KEY=VALUE", "A Spark setting; repeat it.", short="-c"),
    Option("--properties-file", "FILE", "A spark-defaults style file; its spark.* keys are read."),
    Option(
        "--py-files",
        "FILES",
        "Comma-separated .py, .zip or .egg files for sys.path. [spark.submit.pyFiles]",
    ),
    Option(
        "--files",
        "FILES",
        "Comma-separated files put in the driver's working directory. [spark.files]",
    ),
    Option(
        "--archives",
        "ARCHIVES",
        "Comma-separated archives, each unpacked in the working"
        " directory as its name or as ALIAS (archive.zip#ALIAS). [spark.archives]",
    ),
    Option(
        "--jars",
        "JARS",
        "Comma-separated jars for the driver's and executors' classpaths. [spark.jars]",
    ),
    Option("--packages", "COORDS", "Comma-separated groupId:artifactId:version to fetch."),
    Option("--exclude-packages", "G:A,...", "groupId:artifactId to leave out of --packages."),
    Option("--repositories", "URLS", "More repositories to fetch --packages from."),
    Option("--driver-memory", "MEM", "The driver's memory, e.g. 2g."),
    Option("--driver-cores", "N", "The driver's cores."),
    Option("--driver-java-options", "OPTS", "Extra JVM options of the driver."),
    Option("--driver-class-path", "PATH", "Extra classpath of the driver."),
    Option("--driver-library-path", "PATH", "Extra native library path of the driver."),
    Option("--executor-memory", "MEM", "Memory per executor, e.g. 4g."),
    Option("--executor-cores", "N", "Cores per executor."),
    Option("--num-executors", "N", "Executors to start (YARN, Kubernetes)."),
    Option("--total-executor-cores", "N", "Cores of all executors (standalone)."),
    Option(
        "--verbose",
        None,
        "Print what is submitted (settings, files) before submitting.",
        short="-v",
    ),
)
"""spark-submit's options, with its names and meaning, and the Spark key each sets."""

STEWARD_OPTIONS: tuple[Option, ...] = (
    Option("--detach", None, "Return once submitted instead of following the job."),
    Option("--json", None, "Print one JSON document (the job, or its result)."),
    Option("--job-id", "ID", "The job's id (default: <file name>-<8 hex>)."),
    Option("--slots", "N", "Slots the job takes, 1-1024 (default 1)."),
    Option(
        "--restart",
        "STRATEGY",
        "none | fixed-delay[:attempts=3,delay=10s] | exponential-delay"
        "[:initial=1s,max=60s,multiplier=2,max-attempts=10].",
    ),
    Option("--program", "KIND", "auto | script | sdk: how the file runs (default auto)."),
    Option("--script", None, "Same as --program script: run the file as __main__."),
    Option("--sdk", None, "Same as --program sdk: call its main(ctx)."),
    Option("--entrypoint", "FUNC", "'function' or 'module:function' of an sdk pipeline."),
    Option("--kind", "KIND", "batch | streaming (default batch)."),
    Option("--label", "KEY=VALUE", "A label; repeat it."),
    Option(
        "--team", "TEAM", "The team that owns the job, one you are in (default: your only one)."
    ),
    Option(
        "--timeout",
        "DURATION",
        "Cancel the job (reason TIMEOUT) this long after its submission, over all its"
        " attempts: 90s, 45m, 2h, at most 30d (default: none).",
    ),
    Option(
        "--env",
        "NAME=VALUE",
        "An environment variable of the driver's process; repeat it. Shown redacted when"
        " its name or value looks secret.",
    ),
    Option(
        "--notify",
        "URL[:EVENTS]",
        "A webhook of the job's own (under the cluster's notifications.allowed-urls), called on"
        " FINISHED, FAILED, CANCELED, RESTARTED, TIMEOUT or the comma-separated EVENTS; repeat"
        " it.",
    ),
    Option(
        "--requirements",
        "FILE",
        "A pip requirements file: the job runs in a Python environment built from it.",
    ),
    Option(
        "--queue",
        "QUEUE",
        "The Steward queue (scheduling.queues) the job waits in for slots (default: default)."
        " Not YARN's: set that with --conf spark.yarn.queue=NAME.",
    ),
    Option("--priority", "N", "Within its queue, a higher priority starts first (default 0)."),
    Option("--max-concurrent", "N", "At most N jobs of this --name have an attempt at once."),
    Option(
        "--proxy-user",
        "NAME",
        "Run the driver as this OS user on the TaskManager; security.proxy-users must grant it"
        " to you.",
    ),
)
"""Steward's own options."""

_KERBEROS = (
    "Steward does not log in for a job; set spark.kerberos.principal and spark.kerberos.keytab"
    " with --conf (the keytab's path is read on the TaskManager's host)"
)

REFUSED: dict[str, str] = {
    "--class": "Steward runs Python applications; a JVM main class cannot be submitted",
    "--supervise": "Steward always supervises the driver; --restart sets how it restarts it",
    "--kill": "use steward cancel JOB",
    "--status": "use steward status JOB",
    "--principal": _KERBEROS,
    "--keytab": _KERBEROS,
}
"""spark-submit options Steward refuses, and why."""

_OPTIONS = {option.name: option for option in (*SPARK_OPTIONS, *STEWARD_OPTIONS)}
_OPTIONS.update({o.short: o for o in _OPTIONS.values() if o.short is not None})
HELP_NAMES = ("-h", "--help")
_OPTION_LIKE = re.compile(r"--?[A-Za-z]")


class HelpRequested(Exception):  # noqa: N818 - a request, not an error
    """``-h`` or ``--help`` stood where options are read."""


@dataclass
class CommandLine:
    """The words of a command line, sorted: options' values, the file, the arguments."""

    values: dict[str, list[str]] = field(default_factory=dict)
    """Option name (the long one) -> the values given, in order; a flag's are ``""``. Where
    an option takes one value, the last one given wins (:meth:`last`), as in spark-submit."""
    pipeline: str | None = None
    args: list[str] = field(default_factory=list)

    def last(self, name: str) -> str | None:
        """The value an option was last given, or None."""
        values = self.values.get(name)
        return values[-1] if values else None

    def given(self, name: str) -> bool:
        return name in self.values


def read_command_line(words: Sequence[str]) -> CommandLine:
    """Sort ``words`` into options, the file and its arguments (see the module docstring)."""
    line = CommandLine()
    file_first = bool(words) and not _is_option(words[0]) and words[0] != "--"
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            line.args = list(words[index + 1 :])
            break
        if line.pipeline is not None and not file_first and "--" not in words[index:]:
            line.args = list(words[index:])  # spark-submit: everything after the file
            break
        if _is_option(word):
            index = _read_option(words, index, line, after_file=line.pipeline is not None)
            continue
        if line.pipeline is not None:
            line.args = list(words[index:])
            break
        line.pipeline = word
        index += 1
    if line.pipeline is None:
        raise click.UsageError("Missing the application file (a .py file, a folder or a .zip).")
    return line


def _is_option(word: str) -> bool:
    return bool(_OPTION_LIKE.match(word))


def _read_option(words: Sequence[str], index: int, line: CommandLine, *, after_file: bool) -> int:
    """Read the option at ``words[index]`` into ``line``; returns the index after it."""
    word = words[index]
    name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
    if name in HELP_NAMES:
        raise HelpRequested
    if name in REFUSED:
        raise click.UsageError(f"{name} is not supported: {REFUSED[name]}.")
    option = _OPTIONS.get(name)
    if option is None:
        raise _no_such_option(name, after_file=after_file)
    if option.metavar is None:
        if equals:
            raise click.UsageError(f"Option '{name}' does not take a value.")
        line.values.setdefault(option.name, []).append("")
        return index + 1
    if equals:
        value, index = inline, index + 1
    else:
        if index + 1 >= len(words) or words[index + 1] == "--" or words[index + 1] in _OPTIONS:
            raise click.UsageError(f"Option '{name}' requires a value ({option.metavar}).")
        value, index = words[index + 1], index + 2
    line.values.setdefault(option.name, []).append(value)
    return index


def _no_such_option(name: str, *, after_file: bool) -> click.NoSuchOption:
    known = [*_OPTIONS, *HELP_NAMES]
    message = f"No such option: {name}."
    if after_file:
        message += (
            " The application's own arguments go after '--':"
            f" steward submit FILE [OPTIONS] -- {name} ..."
        )
    return click.NoSuchOption(
        name,
        message=message,
        possibilities=difflib.get_close_matches(name, known, n=2, cutoff=0.75),
    )
