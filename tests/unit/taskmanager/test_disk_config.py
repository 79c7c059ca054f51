"""The disk keys: taskmanager.attempt-log.max-size and taskmanager.workdir.retention.

Good values parse into bytes and seconds; bad ones stop start-up with one clear error that
names the key, the value and what was expected.
"""

from __future__ import annotations

import pytest

from steward import config
from steward.errors import ConfigurationError

SIZE = "taskmanager.attempt-log.max-size"
RETENTION = "taskmanager.workdir.retention"


def test_defaults_are_64_mib_and_one_hour() -> None:
    cfg = config.load(None, {}, environ={})
    assert cfg.settings.taskmanager.attempt_log_max_size == 64 * 1024 * 1024
    assert cfg.settings.taskmanager.workdir_retention == 3600.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("65536", 65536),
        ("512k", 512 * 1024),
        ("512KiB", 512 * 1024),
        ("64MB", 64 << 20),
        ("64m", 64 << 20),
        ("2 GiB", 2 << 30),
        ("0", None),
    ],
)
def test_sizes_parse_in_binary_units(text: str, expected: int | None) -> None:
    assert (
        config.load(None, {SIZE: text}, environ={}).settings.taskmanager.attempt_log_max_size
        == expected
    )


@pytest.mark.parametrize(
    ("text", "expected"), [("0", 0.0), ("0s", 0.0), ("90s", 90.0), ("2h", 7200.0), ("1d", 86400.0)]
)
def test_retention_is_a_duration(text: str, expected: float) -> None:
    assert (
        config.load(None, {RETENTION: text}, environ={}).settings.taskmanager.workdir_retention
        == expected
    )


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        (SIZE, "lots", "is not a size (expected e.g. 65536, 512k, 64MiB, 1g)"),
        (SIZE, "-5m", "is not a size"),
        (SIZE, "1.5m", "is not a size"),
        (SIZE, "64 parsecs", "is not a size"),
        (SIZE, "1k", "must be at least 64k (0 turns the cap off)"),
        (SIZE, True, "expected a size"),
        (RETENTION, "a while", "is not a duration"),
        (RETENTION, "-1s", "is not a duration"),
        (RETENTION, -5, "must not be negative"),
    ],
)
def test_a_bad_value_is_a_clear_error(key: str, value: object, needle: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        config.load(None, {key: value}, environ={})
    message = str(caught.value)
    assert message.startswith(f"bad value {value!r} for {key}: "), message
    assert needle in message, message
    assert "\n" not in message


def test_the_environment_sets_them_too() -> None:
    cfg = config.load(
        None,
        {},
        environ={
            "STEWARD_TASKMANAGER_ATTEMPT_LOG_MAX_SIZE": "1m",
            "STEWARD_TASKMANAGER_WORKDIR_RETENTION": "10m",
        },
    )
    assert (
        cfg.settings.taskmanager.attempt_log_max_size,
        cfg.settings.taskmanager.workdir_retention,
    ) == (1 << 20, 600.0)
