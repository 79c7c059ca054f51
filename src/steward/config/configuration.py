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
from steward.errors import ConfigurationError
from steward.timing import TimingChain


class Configuration:
    """Validated, immutable settings. Read a key with ``config["key"]`` or a typed property."""

    def __init__(self, values: Mapping[str, Any], raw: Mapping[str, object] | None = None) -> None:
        self._values = dict(values)
        # The unparsed inputs, so overrides re-validate from what the user wrote (parsed
        # durations are seconds, while a bare number in the input means milliseconds).
        self._raw = dict(raw or {})

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

    @property
    def zookeeper_quorum(self) -> str:
        return str(self["high-availability.zookeeper.quorum"])

    @property
    def zookeeper_root(self) -> str:
        return f"{self['high-availability.zookeeper.root']}/{self['high-availability.cluster-id']}"

    @property
    def session_timeout(self) -> float:
        return float(self["high-availability.zookeeper.session-timeout"])

    @property
    def connection_timeout(self) -> float:
        return float(self["high-availability.zookeeper.connection-timeout"])

    @property
    def tolerate_suspended(self) -> bool:
        return bool(self["high-availability.zookeeper.tolerate-suspended-connections"])

    @property
    def crash_detection(self) -> float:
        return float(self["high-availability.crash-detection"])

    @property
    def storage_dir(self) -> str:
        return str(self["high-availability.storage-dir"])

    @property
    def taskmanager_slots(self) -> int:
        return int(self["taskmanager.numberOfTaskSlots"])

    @property
    def fence_after(self) -> float:
        return float(self["taskmanager.fence-after"])

    @property
    def jobmanager_fence_after(self) -> float:
        return float(self["jobmanager.fence-after"])

    @property
    def timing(self) -> TimingChain:
        """The timeouts that must stay in order (docs/architecture.md, "Timing chain")."""
        return TimingChain(
            session_timeout=self.session_timeout,
            fence_after=self.fence_after,
            deadman_timeout=self.deadman_timeout,
            jobmanager_fence_after=self.jobmanager_fence_after,
            replacement_grace=float(self["jobmanager.replacement-grace"]),
        )

    @property
    def checkpoints_retained(self) -> int:
        return int(self["state.checkpoints.num-retained"])

    @property
    def deadman_timeout(self) -> float:
        return float(self["taskmanager.deadman-timeout"])

    @property
    def prewarm_runners(self) -> int:
        return int(self["taskmanager.spark.prewarm-runners"])

    @property
    def attempt_log_max_size(self) -> int | None:
        """The attempt log cap in bytes; None when it is off (0)."""
        size = int(self["taskmanager.attempt-log.max-size"])
        return size or None

    @property
    def workdir_retention(self) -> float:
        return float(self["taskmanager.workdir.retention"])

    @property
    def upload_max_size(self) -> int:
        return int(self["jobmanager.upload.max-size"])

    @property
    def contents_retention(self) -> float:
        return float(self["jobmanager.contents.retention"])

    @property
    def heartbeat_interval(self) -> float:
        return float(self["heartbeat.interval"])

    @property
    def cluster_id(self) -> str:
        return str(self["high-availability.cluster-id"])


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
    problems = Configuration(values).timing.problems()
    if problems:
        key = problems[0][0]
        raise ConfigurationError(
            f"bad value for {key}: " + "; ".join(text for _, text in problems), key=key
        )


def _absolute_storage(url: str) -> str:
    # A relative local folder would mean different folders for processes started elsewhere.
    if "://" not in url:
        return "file://" + str(Path(url).resolve())
    scheme, _, rest = url.partition("://")
    if scheme == "file" and not rest.startswith("/"):
        return "file://" + str(Path(rest).resolve())
    return url
