"""What ``steward submit`` sends: a :class:`SubmitPlan` built from a spark-submit command line.

:func:`parse` reads the words (:mod:`steward.cli.spark_submit` says where each goes) and
resolves them, with spark-submit's precedence:

    --properties-file (spark.* keys only) < --conf < an explicit option (--master, --jars, ...)

An explicit ``--py-files``, ``--files``, ``--archives`` or ``--jars`` likewise replaces the
``spark.submit.pyFiles``, ``spark.files``, ``spark.archives`` or ``spark.jars`` a ``--conf``
or the properties file set: the files it names travel with the job, and the runner puts
them in those keys. ``--name`` (else ``spark.app.name``) names the job and the application.

Nothing is sent and nothing changes on a bad line: every value is checked here, every file
named must exist, and a refused mode (``--deploy-mode cluster``, also through
``spark.submit.deployMode``) is an error that says why.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import click

from steward.cli.options import parse_env, parse_pairs, parse_restart, parse_timeout
from steward.cli.properties import parse_properties
from steward.cli.spark_submit import SPARK_OPTIONS, CommandLine, read_command_line
from steward.wire.job_options import describe_timeout
from steward.wire.jobs import (
    MAX_PRIORITY,
    PLAIN_FILENAME_PATTERN,
    JobKind,
    ProgramKind,
    RestartStrategy,
)
from steward.wire.notifications import redact_url
from steward.wire.redaction import Redactor
from steward.wire.spark_options import CLUSTER_MODE_REFUSED
from steward.wire.spark_options import DEPLOY_MODE_KEY as DEPLOY_MODE

APP_NAME = "spark.app.name"
FILE_KEYS = {
    "--py-files": "spark.submit.pyFiles",
    "--files": "spark.files",
    "--archives": "spark.archives",
    "--jars": "spark.jars",
}
"""The Spark key whose value a files option replaces (spark-submit: the option wins)."""

_MASTERS = ("local", "spark://", "yarn", "k8s://", "sc://")
_MEMORY = r"\d+([kmgtp]b?|b)?"
_ALIAS = re.compile(PLAIN_FILENAME_PATTERN)

E = TypeVar("E", bound=enum.StrEnum)


@dataclass(frozen=True)
class SubmitPlan:
    """A submission, typed: ``steward.Client.submit``'s arguments and the CLI's own flags."""

    pipeline: Path
    args: tuple[str, ...] = ()
    program: ProgramKind | None = None
    name: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    py_files: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    archives: tuple[str, ...] = ()
    """``path`` or ``path#alias``, as :meth:`steward.Client.submit` takes them."""
    jars: tuple[Path, ...] = ()
    requirements: Path | None = None
    job_id: str | None = None
    slots: int | None = None
    restart: RestartStrategy | None = None
    entrypoint: str | None = None
    kind: JobKind | None = None
    labels: dict[str, str] = field(default_factory=dict)
    team: str | None = None
    timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    notify: tuple[str, ...] = ()
    queue: str | None = None
    priority: int | None = None
    max_concurrent: int | None = None
    proxy_user: str | None = None
    detach: bool = False
    as_json: bool = False
    verbose: bool = False
    warnings: tuple[str, ...] = ()
    """Things spark-submit would warn about (ignored non-spark keys of the properties file)."""


def parse(words: Sequence[str]) -> SubmitPlan:
    """The plan for ``steward submit WORDS``; a bad line raises a click usage error."""
    line = read_command_line(words)
    spark_conf, warnings = _spark_conf(line)
    return SubmitPlan(
        pipeline=Path(line.pipeline or ""),
        args=tuple(line.args),
        program=_program(line),
        name=line.last("--name") or spark_conf.get(APP_NAME),
        spark_conf=spark_conf,
        py_files=tuple(_local_files(line, "--py-files")),
        files=tuple(_local_files(line, "--files")),
        archives=tuple(_archives(line)),
        jars=tuple(_local_files(line, "--jars")),
        requirements=_existing(line.last("--requirements"), "--requirements"),
        job_id=line.last("--job-id"),
        slots=_slots(line.last("--slots")),
        restart=_restart(line.last("--restart")),
        entrypoint=line.last("--entrypoint"),
        kind=_choice(line.last("--kind"), JobKind, "--kind"),
        labels=parse_pairs(line.values.get("--label", []), "--label"),
        team=line.last("--team"),
        timeout=_timeout(line.last("--timeout")),
        env=parse_env(line.values.get("--env", [])),
        notify=tuple(line.values.get("--notify", [])),
        queue=line.last("--queue"),
        priority=_integer(line.last("--priority"), "--priority", -MAX_PRIORITY, MAX_PRIORITY),
        max_concurrent=_integer(line.last("--max-concurrent"), "--max-concurrent", 1, 10_000),
        proxy_user=line.last("--proxy-user"),
        detach=line.given("--detach"),
        as_json=line.given("--json"),
        verbose=line.given("--verbose"),
        warnings=tuple(warnings),
    )


# ---------------------------------------------------------------- Spark settings


def _spark_conf(line: CommandLine) -> tuple[dict[str, str], list[str]]:
    conf, warnings = _properties_file(line.last("--properties-file"))
    conf.update(parse_pairs(line.values.get("--conf", []), "--conf"))
    deploy_mode = line.last("--deploy-mode")
    _check_deploy_mode(deploy_mode, conf.get(DEPLOY_MODE))
    if deploy_mode is not None and DEPLOY_MODE in conf:
        conf[DEPLOY_MODE] = deploy_mode  # the option wins, as in spark-submit
    for option in SPARK_OPTIONS:
        value = line.last(option.name)
        if option.spark_key is not None and value is not None:
            _check_value(option.name, value)
            conf[option.spark_key] = value
    if line.given("--name"):
        conf.pop(APP_NAME, None)  # the job's name is the app's name; --name wins, as in Spark
    for name, key in FILE_KEYS.items():
        if line.given(name):
            conf.pop(key, None)
    return conf, warnings


def _properties_file(path: str | None) -> tuple[dict[str, str], list[str]]:
    if path is None:
        return {}, []
    file = _existing(path, "--properties-file")
    assert file is not None
    try:
        found = parse_properties(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise click.BadParameter(
            f"cannot read {path}: {exc}", param_hint="--properties-file"
        ) from exc
    conf = {key: value for key, value in found.items() if key.startswith("spark.")}
    warnings = [
        f"ignoring non-Spark property {key!r} of {path}" for key in found if key not in conf
    ]
    return conf, warnings


def _check_deploy_mode(option: str | None, conf: str | None) -> None:
    if option is not None and option not in ("client", "cluster"):
        raise click.BadParameter(
            f"must be client or cluster, not {option!r}", param_hint="--deploy-mode"
        )
    if (option or conf) == "cluster":
        raise click.UsageError(CLUSTER_MODE_REFUSED)


def _check_value(option: str, value: str) -> None:
    """Refuse what spark-submit refuses: an unknown master, a memory or count that is no size."""
    if option == "--master" and not value.startswith(_MASTERS):
        raise click.BadParameter(
            f"{value!r} is no Spark master: expected local[*], spark://HOST:PORT, yarn,"
            " k8s://https://HOST:PORT or sc://HOST:PORT",
            param_hint=option,
        )
    if option.endswith("-memory") and not re.fullmatch(_MEMORY, value, flags=re.IGNORECASE):
        raise click.BadParameter(
            f"{value!r} is no amount of memory: expected e.g. 512m, 2g", param_hint=option
        )
    if option.endswith(("-cores", "-executors")) and not (value.isdigit() and int(value) > 0):
        raise click.BadParameter(f"{value!r} is not a positive number", param_hint=option)


# ---------------------------------------------------------------- files


def _local_files(line: CommandLine, option: str) -> list[Path]:
    paths = []
    for entry in _entries(line.last(option)):
        if "#" in entry:
            raise click.BadParameter(
                f"{entry!r}: only --archives take a '#alias'", param_hint=option
            )
        path = _existing(entry, option)
        assert path is not None
        paths.append(path)
    return paths


def _archives(line: CommandLine) -> list[str]:
    archives = []
    for entry in _entries(line.last("--archives")):
        path, _, alias = entry.partition("#")
        if "#" in entry and not _ALIAS.match(alias):
            raise click.BadParameter(
                f"{entry!r}: the alias must be a plain file name", param_hint="--archives"
            )
        local = _existing(path, "--archives")
        archives.append(f"{local}#{alias}" if alias else str(local))
    return archives


def _entries(value: str | None) -> list[str]:
    """spark-submit's comma-separated list: empty entries are skipped."""
    return [entry.strip() for entry in (value or "").split(",") if entry.strip()]


def _existing(entry: str | None, option: str) -> Path | None:
    """``entry`` (a path or a ``file:`` URL) as a path to an existing file, or an error."""
    if entry is None:
        return None
    parsed = urlparse(entry)
    if parsed.scheme == "file":
        entry = parsed.path
    elif len(parsed.scheme) > 1:  # one letter is a Windows drive, not a scheme
        raise click.BadParameter(
            f"{entry!r} is not a local file: Steward sends the files a job names along with"
            " it, so name a file on this machine",
            param_hint=option,
        )
    path = Path(entry)
    if not path.exists():
        raise click.BadParameter(f"no such file: {entry}", param_hint=option)
    if not path.is_file():
        raise click.BadParameter(f"{entry} is not a file", param_hint=option)
    return path


# ---------------------------------------------------------------- Steward's options


def _program(line: CommandLine) -> ProgramKind | None:
    chosen = {_choice(line.last("--program"), ProgramKind, "--program")}
    chosen |= {ProgramKind.SCRIPT if line.given("--script") else None}
    chosen |= {ProgramKind.SDK if line.given("--sdk") else None}
    chosen.discard(None)
    if len(chosen) > 1:
        kinds = " and ".join(sorted(str(kind) for kind in chosen))
        raise click.UsageError(f"The file cannot be run both as {kinds}: choose one.")
    return chosen.pop() if chosen else None


def _slots(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 1024:
        raise click.BadParameter(
            f"expected a number from 1 to 1024, got {value!r}", param_hint="--slots"
        )
    return int(value)


def _integer(value: str | None, option: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"-?\d+", value) or not low <= int(value) <= high:
        raise click.BadParameter(
            f"expected a whole number from {low} to {high}, got {value!r}", param_hint=option
        )
    return int(value)


def _timeout(value: str | None) -> float | None:
    return None if value is None else parse_timeout(value)


def _restart(value: str | None) -> RestartStrategy | None:
    if value is None:
        return None
    try:
        return parse_restart(value)
    except click.BadParameter as exc:
        exc.param_hint = "--restart"
        raise


def _choice(value: str | None, kind: type[E], option: str) -> E | None:
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = " | ".join(member.value for member in kind)
        raise click.BadParameter(f"expected {allowed}, got {value!r}", param_hint=option) from None


def describe(plan: SubmitPlan) -> list[str]:
    """``--verbose``: what is submitted, one ``name: value`` line each, as spark-submit's."""
    rule = Redactor.for_job(plan.spark_conf, plan.args, plan.env)  # secrets are never shown
    lines = [f"file: {plan.pipeline}", f"arguments: {rule.args(plan.args)}"]
    optional = {
        "program": plan.program,
        "name": plan.name,
        "py-files": ",".join(map(str, plan.py_files)),
        "files": ",".join(map(str, plan.files)),
        "archives": ",".join(plan.archives),
        "jars": ",".join(map(str, plan.jars)),
        "requirements": plan.requirements,
        "timeout": plan.timeout and describe_timeout(plan.timeout),
        "notify": ",".join(redact_url(url) for url in plan.notify),
        "queue": plan.queue,
        "priority": plan.priority,
        "proxy-user": plan.proxy_user,
    }
    lines += [f"{key}: {value}" for key, value in optional.items() if value]
    shown = rule.conf(plan.spark_conf)
    lines += [f"spark_conf: {key}={value}" for key, value in sorted(shown.items())]
    lines += [f"env: {key}={value}" for key, value in sorted(rule.env(plan.env).items())]
    return lines
