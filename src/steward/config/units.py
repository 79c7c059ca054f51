"""Units of configuration values: durations and sizes as written, and the converters every key's
raw value (from TOML, an environment variable or ``-D``) goes through.

A converter takes what the user wrote and returns the parsed value or raises ``ValueError``
saying what was expected; :mod:`steward.config.configuration` turns that into a
:class:`~steward.errors.ConfigurationError` naming the key.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Parse ``500ms``, ``4s``, ``2m``, ``1h`` (or a bare number of milliseconds) into seconds."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration (expected e.g. 500ms, 4s, 2m)")
    number, unit = match.groups()
    return float(number) * _UNIT_SECONDS[unit or "ms"]


def format_duration(seconds: float) -> str:
    """Format seconds the way the docs and error messages show durations."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def to_duration(value: object) -> float:
    """A duration in seconds: a string with a unit, or a bare number of milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 500ms, 4s or 2m")
    if isinstance(value, int | float):
        return float(value) / 1000.0
    if isinstance(value, str):
        return parse_duration(value)
    raise ValueError("expected a duration such as 500ms, 4s or 2m")


_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Parse ``512k``, ``64MiB``, ``1g`` (binary units, as in Flink) or bare bytes into bytes."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (expected e.g. 65536, 512k, 64MiB, 1g)")
    number, unit = match.groups()
    return int(number) * _UNIT_BYTES[(unit or "")[:1].lower()]


def to_size(value: object) -> int:
    """A size in bytes: a string with a binary unit, or a bare integer of bytes."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512k, 64MiB or 1g")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_size(value)
    raise ValueError("expected a size such as 512k, 64MiB or 1g")


def to_bool(value: object) -> bool:
    """A boolean: TOML's true/false, or true/yes/on/1 and false/no/off/0 as text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "on", "1"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "no", "off", "0"}:
        return False
    raise ValueError("expected true or false")


def to_int(value: object) -> int:
    """An integer: TOML's integer, or its digits as text."""
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise ValueError("expected an integer")


def to_str(value: object) -> str:
    """A string; a TOML number is taken as its text."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError("expected a string")
