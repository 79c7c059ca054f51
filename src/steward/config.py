"""Configuration: the known keys, their defaults, and how sources are merged and validated.

Sources, lowest precedence first: built-in defaults, ``steward.toml``, environment variables
(``STEWARD_`` + the key upper-cased with ``.`` and ``-`` turned into ``_``), and ``-D key=value``
overrides. Keys are Flink-style (``high-availability.zookeeper.quorum``). Everything is validated
once, in :func:`load`: an unknown key or a bad value is a :class:`ConfigurationError` naming the
key, and nothing runs on a half-valid configuration.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from steward.errors import ConfigurationError
from steward.timing import TimingChain

T = TypeVar("T")

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


def _to_duration(value: object) -> float:
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


def _to_size(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected a size such as 512k, 64MiB or 1g")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_size(value)
    raise ValueError("expected a size such as 512k, 64MiB or 1g")


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "on", "1"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "no", "off", "0"}:
        return False
    raise ValueError("expected true or false")


def _to_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise ValueError("expected an integer")


def _to_str(value: object) -> str:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError("expected a string")


@dataclass(frozen=True)
class Option:
    """One configuration key: its type converter, default, validation and documentation."""

    key: str
    parse: Callable[[object], Any]
    default: Any
    doc: str
    check: Callable[[Any], str | None] = lambda _value: None

    @property
    def env_var(self) -> str:
        return "STEWARD_" + re.sub(r"[.\-]", "_", self.key).upper()


def _positive(value: float) -> str | None:
    return None if value > 0 else "must be greater than zero"


MIN_ATTEMPT_LOG_SIZE = 64 * 1024
"""Smallest attempt log cap: room for a traceback at each end (see steward.supervisor.logcap)."""


def _attempt_log_size(value: int) -> str | None:
    if value == 0 or value >= MIN_ATTEMPT_LOG_SIZE:
        return None
    return "must be at least 64k (0 turns the cap off)"


def _zk_path(value: str) -> str | None:
    if not value.startswith("/") or value.endswith("/") or "//" in value:
        return "must be an absolute ZooKeeper path like /steward (no trailing slash)"
    return None


def _cluster_id(value: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", value):
        return "must be 1-64 letters, digits, '.', '_' or '-'"
    return None


def _quorum(value: str) -> str | None:
    for part in value.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"{part.strip()!r} is not host:port (expected e.g. 127.0.0.1:2181,zk2:2181)"
    return None


LOCAL_CLUSTER_CONFIG = Path(".steward/steward.toml")
"""Written by ``steward cluster start``; read when no other configuration file is given, so
every command run beside a local cluster finds it."""

FENCE_AFTER_SHARE = 0.6
"""taskmanager.fence-after defaults to this share of the session timeout."""

OPTIONS: tuple[Option, ...] = (
    Option(
        "high-availability.zookeeper.quorum",
        _to_str,
        "127.0.0.1:2181",
        "Comma-separated host:port list of the ZooKeeper servers.",
        _quorum,
    ),
    Option(
        "high-availability.zookeeper.root",
        _to_str,
        "/steward",
        "Root znode under which every Steward cluster keeps its state.",
        _zk_path,
    ),
    Option(
        "high-availability.cluster-id",
        _to_str,
        "default",
        "Name of this cluster; its state lives in <root>/<cluster-id>.",
        _cluster_id,
    ),
    Option(
        "high-availability.zookeeper.session-timeout",
        _to_duration,
        "10s",
        "ZooKeeper session timeout. A crashed leader's host is declared dead after this long;"
        " shorter means faster failover and more false alarms on a slow network.",
        _positive,
    ),
    Option(
        "high-availability.zookeeper.connection-timeout",
        _to_duration,
        "15s",
        "How long a process waits for its first ZooKeeper connection before giving up.",
        _positive,
    ),
    Option(
        "high-availability.zookeeper.tolerate-suspended-connections",
        _to_bool,
        True,
        "Keep leadership while the connection is SUSPENDED and drop it only when the session is"
        " LOST. Safe because every leader write is fenced by its epoch (DESIGN rule 5).",
    ),
    Option(
        "high-availability.crash-detection",
        _to_duration,
        "500ms",
        "A standby that finds the leader's REST port refusing every connection for this long"
        " removes the leader's latch, so a crashed leader process is replaced without waiting"
        " for its session to expire. Only a refused connection counts (a frozen process or a"
        " dead host is left to the session timeout); fencing makes a wrong guess harmless."
        " 0 turns it off.",
        lambda v: None if v >= 0 else "must not be negative",
    ),
    Option(
        "high-availability.storage-dir",
        _to_str,
        "file://./.steward/storage",
        "fsspec URL of the blob storage for job graphs and checkpoint metadata (file://, s3://,"
        " hdfs://, gs://). A relative file:// path is resolved against the working directory.",
    ),
    Option(
        "taskmanager.numberOfTaskSlots",
        _to_int,
        2,
        "How many attempts one TaskManager runs at once.",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "taskmanager.fence-after",
        _to_duration,
        None,
        "A TaskManager whose ZooKeeper connection has been suspended this long kills its"
        " attempts (DESIGN rule 4). Must be shorter than the session timeout, so attempts are"
        " dead before the session expires and the leader may start a replacement. Default:"
        f" {int(FENCE_AFTER_SHARE * 100)}% of the session timeout.",
        _positive,
    ),
    Option(
        "taskmanager.deadman-timeout",
        _to_duration,
        None,
        "A runner whose TaskManager has written nothing to its stdin for this long kills itself"
        " and its Spark JVM (DESIGN rule 4). At most taskmanager.fence-after. Default: the"
        " fence-after (a share of the session timeout), so a frozen TaskManager's attempts are"
        " dead before its leases expire.",
        _positive,
    ),
    Option(
        "taskmanager.spark.prewarm-runners",
        _to_int,
        0,
        "How many warm spare runners (Python + a Spark JVM with a ready SparkSession) a"
        " TaskManager keeps for the next attempts, never more than its free slots. 0: every"
        " attempt starts cold.",
        lambda v: None if v >= 0 else "must not be negative (0 turns spares off)",
    ),
    Option(
        "taskmanager.workdir",
        _to_str,
        "./.steward/work",
        "Folder under which a TaskManager unpacks artifacts and keeps each attempt's work"
        " directory and log (<workdir>/<taskmanager-id>/<job-id>/<attempt>/).",
    ),
    Option(
        "taskmanager.attempt-log.max-size",
        _to_size,
        "64MiB",
        "Most bytes an attempt's runner.log may hold (the runner's, the pipeline's and the"
        " Spark JVM's stdout and stderr). Beyond it the first half is kept, then a line saying"
        " how many bytes were dropped, then the latest output. 0 turns the cap off.",
        _attempt_log_size,
    ),
    Option(
        "taskmanager.workdir.retention",
        _to_duration,
        "1h",
        "How long an ended attempt's folder (artifact, runner.log) stays after its outcome"
        " was acknowledged by the leader; 0 removes it at once. Folders of earlier runs of this"
        " TaskManager are removed this long after their last change.",
        lambda v: None if v >= 0 else "must not be negative",
    ),
    Option(
        "jobmanager.bind-host",
        _to_str,
        "127.0.0.1",
        "Address the JobManager's REST API listens on.",
    ),
    Option(
        "jobmanager.port",
        _to_int,
        8081,
        "Port of the JobManager's REST API; 0 picks a free port.",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
    ),
    Option(
        "jobmanager.advertised-address",
        _to_str,
        "",
        "URL other processes use to reach this JobManager (published in leader/info). Empty:"
        " http://<bind-host>:<port>.",
    ),
    Option(
        "jobmanager.fence-after",
        _to_duration,
        None,
        "A JobManager none of whose ZooKeeper round trips has worked for this long kills the"
        " initialize hooks it runs and starts none until one works again, so a leader cut off"
        " from ZooKeeper has stopped them before its session (and leadership) can expire and"
        " the next leader runs them. Default: taskmanager.fence-after.",
        _positive,
    ),
    Option(
        "jobmanager.initialize-timeout",
        _to_duration,
        "60s",
        "How long a job's initialize(ctx) hook may run (in a child process of the leader)"
        " before the job fails.",
        _positive,
    ),
    Option(
        "jobmanager.recovery-parallelism",
        _to_int,
        8,
        "How many jobs a new leader recovers at once (job graph reads, initialize hooks).",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "jobmanager.cancel-grace",
        _to_duration,
        "10s",
        "After a cancel, how long a runner has to end after SIGTERM before every process of"
        " the attempt (its group, its cgroup) is SIGKILLed.",
        _positive,
    ),
    Option(
        "jobmanager.replacement-grace",
        _to_duration,
        "1s",
        "After an attempt's TaskManager is gone (its lease with it), how long the leader waits"
        " before it starts a replacement (DESIGN rule 4).",
        lambda v: None if v >= 0 else "must not be negative",
    ),
    Option(
        "jobmanager.upload.max-size",
        _to_size,
        "8GiB",
        "Largest file a job may name (PUT /v1/contents): a py-file, file, archive or jar,"
        " streamed to blob storage, never held in memory. Packed Python environments are"
        " often hundreds of MB.",
        lambda v: None if v >= 1 else "must be at least one byte",
    ),
    Option(
        "jobmanager.contents.retention",
        _to_duration,
        "1h",
        "How long a stored file no live job names is kept before the leader's garbage"
        " collection removes it; an upload waiting for its submission is younger than this.",
        _positive,
    ),
    Option(
        "heartbeat.interval",
        _to_duration,
        "1s",
        "How often a TaskManager heartbeats to the leader when nothing changes. Commands reach"
        " it at once anyway (the leader holds each heartbeat up to this long).",
        _positive,
    ),
    Option(
        "spark.master",
        _to_str,
        "local[*]",
        "Spark master of every attempt unless the job's spark_conf sets spark.master: local[*],"
        " spark://host:7077, yarn, k8s://..., or a Spark Connect sc://host:15002 URL.",
    ),
    Option(
        "rest.address",
        _to_str,
        "",
        "Comma-separated JobManager URLs the CLI and Client talk to. Empty: the leader found"
        " through ZooKeeper, or the local cluster of ./.steward.",
    ),
    Option(
        "state.checkpoints.num-retained",
        _to_int,
        3,
        "How many completed checkpoints are kept per job; older ones are removed.",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
)

_BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}


class Configuration:
    """Validated, immutable settings. Read a key with ``config["key"]`` or a typed property."""

    def __init__(self, values: Mapping[str, Any], raw: Mapping[str, object] | None = None) -> None:
        self._values = dict(values)
        # The unparsed inputs, so overrides re-validate from what the user wrote (parsed
        # durations are seconds, while a bare number in the input means milliseconds).
        self._raw = dict(raw or {})

    def __getitem__(self, key: str) -> Any:
        if key not in _BY_KEY:
            raise ConfigurationError(f"unknown configuration key {key!r}", key=key)
        return self._values[key]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def with_overrides(self, overrides: Mapping[str, object]) -> Configuration:
        """A new configuration with ``overrides`` (raw values) merged in and validated."""
        merged: dict[str, object] = dict(self._raw)
        merged.update(overrides)
        return _validate(merged, sources=dict.fromkeys(overrides, "override"))

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


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    # steward.toml may spell keys flat ("a.b" = 1) or as nested tables ([a] b = 1).
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            yield from _flatten(value, prefix=f"{key}.")
        else:
            yield key, value


def read_toml(path: Path) -> dict[str, Any]:
    """Read a steward.toml into flat keys; a syntax error names the file and line."""
    try:
        with path.open("rb") as handle:
            return dict(_flatten(tomllib.load(handle)))
    except FileNotFoundError as exc:
        raise ConfigurationError(f"configuration file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: invalid TOML: {exc}") from exc


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``-D key=value`` arguments."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(f"-D expects key=value, got {pair!r}")
        result[key.strip()] = value
    return result


def _validate(raw: Mapping[str, object], sources: Mapping[str, str]) -> Configuration:
    values: dict[str, Any] = {}
    for key in raw:
        if key not in _BY_KEY:
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


def load(
    config_file: Path | None = None,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Configuration:
    """Merge defaults, ``config_file`` (else $STEWARD_CONFIG, else ./steward.toml, else the
    local cluster's ./.steward/steward.toml, the first that exists), env and overrides."""
    environ = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    sources: dict[str, str] = {}
    path = config_file
    if path is None and environ.get("STEWARD_CONFIG"):
        path = Path(environ["STEWARD_CONFIG"])
    if path is None and Path("steward.toml").is_file():
        path = Path("steward.toml")
    if path is None and LOCAL_CLUSTER_CONFIG.is_file():
        path = LOCAL_CLUSTER_CONFIG
    if path is not None:
        for key, value in read_toml(path).items():
            raw[key], sources[key] = value, str(path)
    for option in OPTIONS:
        if option.env_var in environ:
            raw[option.key], sources[option.key] = environ[option.env_var], option.env_var
    for key, value in (overrides or {}).items():
        raw[key], sources[key] = value, "-D"
    return _validate(raw, sources)
