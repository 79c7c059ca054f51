"""Two options of a job that orchestrators need (issue 24): its timeout and its environment.

- ``timeout``: the longest a job may take, counted from its submission over all its attempts
  (restart delays and waits for a slot included). It is stored as seconds; what a person
  writes may also be a duration (``90s``, ``45m``, ``2h``, ``1d``). Past
  ``submitted_at + timeout`` the leader cancels the job: it ends CANCELED with an
  :class:`~steward.wire.records.ErrorInfo` of type :data:`TIMEOUT_ERROR_TYPE` (the reason
  TIMEOUT). Both parts of the deadline are stored with the job, so every leader computes the
  same one.
- ``env``: environment variables set in the driver's process (the runner) on the TaskManager.
  Names are portable shell names, not Steward's own (:data:`RESERVED_PREFIX`); values hold no
  NUL (``execve`` cannot carry one). Views show them by the rule that hides secret settings
  (:meth:`steward.wire.redaction.Redactor.env`).
"""

from __future__ import annotations

import re

from steward.wire.records import ErrorInfo

MAX_TIMEOUT = 30 * 86400.0
"""The longest timeout (30 days): a job that must run longer (a streaming job) has none."""

TIMEOUT_ERROR_TYPE = "steward.Timeout"
"""The error type of a job's result when the leader cancelled it at its timeout."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
RESERVED_PREFIX = "STEWARD_"
"""Names Steward sets in every attempt's processes (its containment token, its cgroup)."""
MAX_ENV_VARS = 64
MAX_ENV_CHARS = 16 * 1024
"""Characters of all names and values together: views and status records carry them."""

_ENV_NAME = re.compile(ENV_NAME_PATTERN)


def timeout_seconds(value: object) -> object:
    """A timeout as written (seconds, or a duration such as ``90s`` or ``2h``) in seconds;
    anything else is returned as it is, for the field's own checks to refuse."""
    if isinstance(value, bool):
        raise ValueError("timeout must be a number of seconds or a duration, not true/false")
    if not isinstance(value, str):
        return value
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(
            f"timeout {value[:40]!r} is not a duration: write seconds (90) or a number with"
            " a unit (90s, 45m, 2h, 1d)"
        )
    number, unit = match.groups()
    return float(number) * _UNIT_SECONDS[unit or "s"]


def deadline(submitted_at: float | None, timeout: float | None) -> float | None:
    """When (Unix seconds) a job with this ``timeout`` submitted then is cancelled."""
    if submitted_at is None or timeout is None:
        return None
    return submitted_at + timeout


def describe_timeout(seconds: float) -> str:
    """``seconds`` as a person reads a timeout (``90s``, ``45m``, ``2h``)."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def timeout_error(seconds: float) -> ErrorInfo:
    """The error a timed-out job's result carries (retrying cannot change it)."""
    return ErrorInfo(
        type=TIMEOUT_ERROR_TYPE,
        message=f"TIMEOUT: the job ran past its timeout of {describe_timeout(seconds)},"
        " counted from its submission; the leader cancelled it",
        permanent=True,
    )


def check_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` if its names and values may be set in a process's environment, else
    ``ValueError`` naming the first that may not."""
    if len(env) > MAX_ENV_VARS:
        raise ValueError(f"env has {len(env)} variables; at most {MAX_ENV_VARS}")
    size = sum(len(name) + len(value) for name, value in env.items())
    if size > MAX_ENV_CHARS:
        raise ValueError(f"env holds {size} characters; at most {MAX_ENV_CHARS}")
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise ValueError(
                f"env name {name[:40]!r}: use 1-128 letters, digits and '_', not starting"
                " with a digit"
            )
        if name.upper().startswith(RESERVED_PREFIX):
            raise ValueError(f"env name {name!r}: names starting {RESERVED_PREFIX} are Steward's")
        if "\0" in value:
            raise ValueError(f"env {name}: a value cannot hold a NUL character")
    return env
