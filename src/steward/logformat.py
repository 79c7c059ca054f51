"""How a Steward process writes its log records: as text, or as one JSON object per line.

``log.format = json`` (environment: ``STEWARD_LOG_FORMAT=json``) makes every Steward process
(JobManager, TaskManager, the runner of each attempt, the CLI) write records like::

    {"ts": "2026-11-24T04:31:52.120Z", "level": "INFO", "logger": "steward.jobmanager...",
     "message": "job terminated job=etl-7 state=FINISHED epoch=4", "process": "jobmanager:jm-2",
     "pid": 4242, "job": "etl-7", "epoch": 4}

``job``, ``attempt``, ``epoch`` and ``taskmanager`` come from the ``key=value`` pairs Steward's
messages already carry (``tm=`` is the TaskManager), or from what the process knows of itself
(a runner knows its job and attempt); ``exc`` holds a traceback. Messages are already redacted
where they are made; the formatter adds nothing secret. A JSON line is never broken by the
message: newlines and quotes are escaped by ``json.dumps``.

A process that starts child processes exports ``STEWARD_LOG_FORMAT`` so that they log alike.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

TEXT = "text"
JSON = "json"
FORMATS = (TEXT, JSON)
ENV_VAR = "STEWARD_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_KEYS = {"job": "job", "attempt": "attempt", "epoch": "epoch", "tm": "taskmanager"}
_KEYS |= {"taskmanager": "taskmanager"}
_PAIR = re.compile(
    r"(?<![\w.-])(job|attempt|epoch|tm|taskmanager)="
    r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s,;()\[\]]+)"
)
_NUMBERS = frozenset({"attempt", "epoch"})


def fields_of(message: str) -> dict[str, Any]:
    """The known ``key=value`` pairs of ``message`` (the first of each), typed."""
    found: dict[str, Any] = {}
    for key, raw in _PAIR.findall(message):
        name = _KEYS[key]
        if name in found:
            continue
        value: Any = raw[1:-1] if raw[:1] in ("'", '"') and len(raw) >= 2 else raw
        if name in _NUMBERS:
            if not value.isdigit():
                continue
            value = int(value)
        found[name] = value
    return found


class JsonFormatter(logging.Formatter):
    """One JSON object per record; see the module docstring."""

    def __init__(self, process: str, fields: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.process = process
        self.fields = dict(fields or {})

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        document: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            "process": self.process,
            "pid": record.process,
            **self.fields,
        }
        for key, value in fields_of(message).items():
            document.setdefault(key, value)
        if record.exc_info:
            document["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        return json.dumps(document, ensure_ascii=False, default=str)


def _timestamp(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created * 1000) % 1000:03d}Z"


def check_format(value: str) -> str | None:
    """Why ``value`` is not a log format, or None."""
    return None if value in FORMATS else f"must be one of {', '.join(FORMATS)}"


def configure(
    log_format: str,
    process: str,
    *,
    fields: Mapping[str, Any] | None = None,
    export: bool = False,
) -> None:
    """Give every handler of the root logger the formatter of ``log_format``.

    ``export``: set ``STEWARD_LOG_FORMAT`` for the child processes this one starts.
    """
    formatter: logging.Formatter = (
        JsonFormatter(process, fields) if log_format == JSON else logging.Formatter(TEXT_FORMAT)
    )
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
    for handler in root.handlers:
        handler.setFormatter(formatter)
    if export:
        os.environ[ENV_VAR] = log_format


def from_environment(default: str = TEXT) -> str:
    """The format ``STEWARD_LOG_FORMAT`` names (a process without a configuration: the
    runner); ``default`` if it is unset or names none."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    return value if value in FORMATS else default
