"""The ``scheduling.*`` keys: named queues with shares of the slots, and concurrency limits.

A queue is written as a TOML array of tables, or (in an environment variable or ``-D``) as one
string of ``name:field=value,...`` parts separated by ``;``::

    [[scheduling.queues]]
    name = "etl"
    guarantee = 0.6      # share of all slots the queue gets first when it has jobs waiting
    maximum = 1.0        # share it never goes past (its jobs wait, saying so)
    weight = 2           # its part of what the guarantees leave over

    STEWARD_SCHEDULING_QUEUES="etl:guarantee=0.6,maximum=1;adhoc:guarantee=0.4,maximum=0.5"

The ``default`` queue always exists: unless configured, it is guaranteed what the others leave
(``1 - sum``), may use every slot and has weight 1. Guarantees add up to at most 1, and each
lies between 0 and its queue's maximum.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from steward.config.option import Option
from steward.config.units import to_str

DEFAULT_QUEUE = "default"
QUEUE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.\-]{0,62}$"
_QUEUE_NAME = re.compile(QUEUE_NAME_PATTERN)
_FIELDS = ("guarantee", "maximum", "weight")


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """One configured queue: its shares of all registered slots, and its weight."""

    name: str
    guarantee: float
    maximum: float = 1.0
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class LabelLimit:
    """At most ``limit`` jobs carrying label ``key=value`` have an attempt at once."""

    key: str
    value: str
    limit: int

    @property
    def label(self) -> str:
        return f"{self.key}={self.value}"


def to_queues(value: object) -> tuple[QueueSpec, ...]:
    """The configured queues, ``default`` among them; ``ValueError`` says what is wrong."""
    tables = _tables(value)
    queues = [_queue(table) for table in tables]
    names = [queue.name for queue in queues]
    if len(set(names)) != len(names):
        raise ValueError(f"a queue is named twice in {names}")
    total = sum(queue.guarantee for queue in queues)
    if total > 1.0 + 1e-9:
        raise ValueError(f"the guarantees add up to {total:g}; at most 1")
    if DEFAULT_QUEUE not in names:
        queues.insert(0, QueueSpec(DEFAULT_QUEUE, guarantee=round(max(0.0, 1.0 - total), 9)))
    return tuple(queues)


def _tables(value: object) -> list[Mapping[str, object]]:
    if isinstance(value, str):
        return [_parse_part(part) for part in value.split(";") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return list(value)
    raise ValueError("expected [[scheduling.queues]] tables or 'name:guarantee=0.5,...;...'")


def _parse_part(part: str) -> dict[str, object]:
    name, _, fields = part.strip().partition(":")
    table: dict[str, object] = {"name": name.strip()}
    for pair in (p for p in fields.split(",") if p.strip()):
        key, sep, number = pair.partition("=")
        if not sep:
            raise ValueError(f"queue {name.strip()!r}: {pair.strip()!r} is not field=value")
        table[key.strip()] = number.strip()
    return table


def _queue(table: Mapping[str, object]) -> QueueSpec:
    name = table.get("name")
    if not isinstance(name, str) or not _QUEUE_NAME.match(name):
        raise ValueError(f"queue name {name!r}: 1-63 lower-case letters, digits, '_', '.', '-'")
    unknown = sorted(set(table) - {"name", *_FIELDS})
    if unknown:
        raise ValueError(f"queue {name!r}: unknown fields {unknown} (known: {_FIELDS})")
    guarantee = _number(table, "guarantee", 0.0, name)
    maximum = _number(table, "maximum", 1.0, name)
    weight = _number(table, "weight", 1.0, name)
    if not 0.0 <= guarantee <= maximum <= 1.0:
        raise ValueError(f"queue {name!r}: need 0 <= guarantee <= maximum <= 1")
    if maximum <= 0.0 or weight <= 0.0:
        raise ValueError(f"queue {name!r}: maximum and weight must be greater than zero")
    return QueueSpec(name, guarantee, maximum, weight)


def _number(table: Mapping[str, object], field: str, default: float, queue: str) -> float:
    value = table.get(field, default)
    if isinstance(value, bool):
        raise ValueError(f"queue {queue!r}: {field} must be a number")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"queue {queue!r}: {field} {value!r} is not a number") from None


def to_label_limits(value: object) -> tuple[LabelLimit, ...]:
    """``key=value:N`` limits, comma-separated (or a TOML table ``{"key=value" = N}``)."""
    if isinstance(value, dict):
        pairs = [(str(label), count) for label, count in value.items()]
    else:
        pairs = [p.strip().rpartition(":")[::2] for p in to_str(value).split(",") if p.strip()]
    return tuple(_label_limit(label, count) for label, count in pairs)


def _label_limit(label: str, count: object) -> LabelLimit:
    key, sep, value = label.partition("=")
    text = str(count).strip()
    if not sep or not key.strip() or isinstance(count, bool) or not text.isdigit():
        raise ValueError(f"{label!r}: write key=value:N, N a positive integer")
    if int(text) < 1:
        raise ValueError(f"{label!r}: the limit must be at least 1")
    return LabelLimit(key.strip(), value.strip(), int(text))


SCHEDULING_OPTIONS: tuple[Option, ...] = (
    Option(
        "scheduling.queues",
        to_queues,
        "",
        "Named queues jobs are submitted to (`queue` in a spec, `steward submit --queue`), each"
        " with a `guarantee` and a `maximum` share of all registered slots (0 to 1) and a"
        " `weight`: `[[scheduling.queues]]` tables in steward.toml, or"
        " `name:guarantee=0.6,maximum=1,weight=1;...` as one string. The leader gives a free slot"
        " to the queue furthest below its guarantee, then by weight, never past a maximum; within"
        " a queue, by priority then age. `default` always exists (unless configured: guaranteed"
        " what the others leave, maximum 1). A submission naming another queue is refused (400)."
        " See [operations.md](operations.md#queues-and-priorities).",
        setting="scheduling.queues",
    ),
    Option(
        "scheduling.max-concurrent",
        to_label_limits,
        "",
        "Comma-separated `key=value:N`: at most N jobs carrying label `key=value` have an"
        " attempt at once; the others wait in SCHEDULED, saying so (a job's own"
        " `max_concurrent` limits the jobs of its name the same way). Empty: no limit.",
        setting="scheduling.label_limits",
    ),
)
