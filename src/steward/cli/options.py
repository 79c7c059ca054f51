"""Parsing the job commands' option values: ``--restart`` strategies, ``key=value`` pairs,
``--timeout`` and ``--env``; and the options several commands share (``--json``, ``--role``).

Pure functions raising ``click.BadParameter`` (a usage error, exit code 2) with a sentence that
says what was expected, so they are tested without a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import click
from pydantic import TypeAdapter, ValidationError

from steward.config import parse_duration
from steward.wire.job_options import MAX_TIMEOUT, check_env, describe_timeout
from steward.wire.jobs import RestartStrategy
from steward.wire.tokens import Role

RESTART_HELP = (
    "none | fixed-delay[:attempts=3,delay=10s] |"
    " exponential-delay[:initial=1s,max=60s,multiplier=2,max-attempts=10]"
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
role_option = click.option(
    "--role",
    type=click.Choice([role.value for role in Role]),
    default=Role.SUBMITTER.value,
    show_default=True,
    help="viewer: read; submitter: also submit and cancel its own jobs; admin: everything.",
)

_BARE_NUMBER = re.compile(r"\s*\d+(\.\d+)?\s*")


def _duration(text: str) -> float:
    # parse_duration reads a bare number as milliseconds (as in steward.toml); on a command
    # line "delay=10" is too easily meant as seconds, so a unit is required here.
    if _BARE_NUMBER.fullmatch(text):
        raise ValueError(f"{text!r} needs a unit, e.g. {text.strip()}s or {text.strip()}ms")
    return parse_duration(text)


# Per strategy: the option names a user writes, and how each becomes a model field.
_PARAMETERS: dict[str, dict[str, tuple[str, Callable[[str], object]]]] = {
    "none": {},
    "fixed-delay": {"attempts": ("attempts", int), "delay": ("delay", _duration)},
    "exponential-delay": {
        "initial": ("initial", _duration),
        "max": ("max", _duration),
        "multiplier": ("multiplier", float),
        "max-attempts": ("max_attempts", int),
    },
}

_RESTART = TypeAdapter[RestartStrategy](RestartStrategy)


def parse_restart(text: str) -> RestartStrategy:
    """``kind[:name=value,...]`` -> a restart strategy (see :data:`RESTART_HELP`)."""
    kind, _, rest = text.strip().partition(":")
    if kind not in _PARAMETERS:
        raise click.BadParameter(f"unknown restart strategy {kind!r}; expected {RESTART_HELP}")
    fields: dict[str, object] = {"kind": kind}
    known = _PARAMETERS[kind]
    for pair in filter(None, (part.strip() for part in rest.split(","))):
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or name not in known:
            allowed = ", ".join(known) or "no parameters"
            raise click.BadParameter(f"{kind} takes {allowed}; got {pair!r}")
        field, convert = known[name]
        try:
            fields[field] = convert(value.strip())
        except ValueError as exc:
            raise click.BadParameter(f"{kind}: bad {name}={value.strip()!r}: {exc}") from exc
    try:
        return _RESTART.validate_python(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = str(first["loc"][-1]).replace("_", "-") if first["loc"] else kind
        raise click.BadParameter(f"{kind}: {where}: {first['msg']}") from exc


def parse_pairs(pairs: Iterable[str], option: str) -> dict[str, str]:
    """``key=value`` arguments of a repeatable option (``--conf``, ``--label``)."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint=option)
        result[key.strip()] = value
    return result


def parse_timeout(text: str) -> float:
    """``--timeout``: a duration with its unit (``90s``, ``45m``, ``2h``, ``1d``) in seconds."""
    try:
        seconds = _duration(text)
    except ValueError as exc:
        raise click.BadParameter(f"{exc} (e.g. 90s, 45m, 2h)", param_hint="--timeout") from None
    if not 0 < seconds <= MAX_TIMEOUT:
        raise click.BadParameter(
            f"must be more than 0 and at most {describe_timeout(MAX_TIMEOUT)}, got {text!r}",
            param_hint="--timeout",
        )
    return seconds


def parse_env(pairs: Iterable[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` (repeatable): the job's environment variables, checked."""
    env = parse_pairs(pairs, "--env")
    try:
        return check_env(env)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--env") from None
