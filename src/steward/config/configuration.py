"""The validated configuration: every key's parsed value, checked once, as a whole.

:func:`validate` parses each raw value with its key's converter and check (see
:mod:`steward.config.keys`), derives the timing chain's unset bounds from the session timeout
and refuses a chain out of order, and makes a relative storage folder absolute. Nothing runs
on a half-valid configuration: the first problem is a :class:`ConfigurationError` naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from steward.config.keys import BY_KEY, FENCE_AFTER_SHARE, OPTIONS
from steward.config.settings import Settings
from steward.errors import ConfigurationError


class Configuration:
    """Validated, immutable values of every key. Processes read the typed :attr:`settings`;
    ``config["key"]`` (an untyped value) is for showing and documenting the configuration."""

    def __init__(self, values: Mapping[str, Any], raw: Mapping[str, object] | None = None) -> None:
        self._values = dict(values)
        # The unparsed inputs, so overrides re-validate from what the user wrote (parsed
        # durations are seconds, while a bare number in the input means milliseconds).
        self._raw = dict(raw or {})
        self.settings: Settings = Settings.from_values(self._values)
        """Every key as a typed field, built once (see :mod:`steward.config.settings`)."""

    def __getitem__(self, key: str) -> Any:
        if key not in BY_KEY:
            raise ConfigurationError(f"unknown configuration key {key!r}", key=key)
        return self._values[key]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def with_overrides(self, overrides: Mapping[str, object]) -> Configuration:
        """A new configuration with ``overrides`` (raw values) merged in and validated."""
        merged: dict[str, object] = dict(self._raw)
        merged.update(overrides)
        return validate(merged, sources=dict.fromkeys(overrides, "override"))


def validate(raw: Mapping[str, object], sources: Mapping[str, str]) -> Configuration:
    """Parse and check every key of ``raw`` (``sources`` says where each came from)."""
    values: dict[str, Any] = {}
    for key in raw:
        if key not in BY_KEY:
            where = sources.get(key, "configuration")
            raise ConfigurationError(
                f"unknown configuration key {key!r} (from {where});"
                " see docs/configuration.md for the list",
                key=key,
            )
    for option in OPTIONS:
        value = raw.get(option.key, option.default)
        if value is None:
            continue  # derived from other keys below
        try:
            parsed = option.parse(value)
        except ValueError as exc:
            raise ConfigurationError(
                f"bad value {value!r} for {option.key}: {exc}", key=option.key
            ) from exc
        problem = option.check(parsed)
        if problem:
            raise ConfigurationError(
                f"bad value {value!r} for {option.key}: {problem}", key=option.key
            )
        values[option.key] = parsed
    _derive_timing(values)
    _check_idle_hold(values)
    _check_progress_interval(values)
    values["high-availability.storage-dir"] = _absolute_storage(
        values["high-availability.storage-dir"]
    )
    return Configuration(values, raw)


def _derive_timing(values: dict[str, Any]) -> None:
    """Fill in the derived timeouts, then refuse a chain that is out of order."""
    session_timeout = values["high-availability.zookeeper.session-timeout"]
    values.setdefault("taskmanager.fence-after", FENCE_AFTER_SHARE * session_timeout)
    values.setdefault("taskmanager.deadman-timeout", values["taskmanager.fence-after"])
    values.setdefault("jobmanager.fence-after", values["taskmanager.fence-after"])
    problems = Settings.from_values(values).timing.problems()
    if problems:
        key = problems[0][0]
        raise ConfigurationError(
            f"bad value for {key}: " + "; ".join(text for _, text in problems), key=key
        )


def _check_idle_hold(values: Mapping[str, Any]) -> None:
    """An idle TaskManager's hold is never shorter than its busy one's."""
    interval, hold = values["heartbeat.interval"], values["heartbeat.idle-hold"]
    if hold < interval:
        raise ConfigurationError(
            f"bad value for heartbeat.idle-hold: {hold:g}s is shorter than heartbeat.interval"
            f" ({interval:g}s); set it to at least that (equal: no longer hold)",
            key="heartbeat.idle-hold",
        )


def _check_progress_interval(values: Mapping[str, Any]) -> None:
    """Progress goes with heartbeats, so never more often than they do."""
    interval, pace = values["heartbeat.interval"], values["heartbeat.progress-interval"]
    if pace < interval:
        raise ConfigurationError(
            f"bad value for heartbeat.progress-interval: {pace:g}s is shorter than"
            f" heartbeat.interval ({interval:g}s); set it to at least that (equal: progress on"
            " every heartbeat)",
            key="heartbeat.progress-interval",
        )


def _absolute_storage(url: str) -> str:
    # A relative local folder would mean different folders for processes started elsewhere.
    if "://" not in url:
        return "file://" + str(Path(url).resolve())
    scheme, _, rest = url.partition("://")
    if scheme == "file" and not rest.startswith("/"):
        return "file://" + str(Path(rest).resolve())
    return url
