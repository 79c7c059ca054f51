"""Typed settings: frozen value objects built once from a validated configuration.

A process reads ``config.settings.<group>.<field>``, never ``config["some.key"]``. The key table
(:data:`steward.config.keys.OPTIONS`) is the one place a key is written: each option names the
field that exposes it (``setting="zookeeper.quorum"``), and :meth:`Settings.from_values` fills
every field from its option, so this module names no key (a unit test checks that every key has
exactly one field and every field one key). The groups follow the keys' prefixes and the
processes that read them:

- :class:`ZooKeeperSettings`: ``high-availability.*`` except the storage folder (every process);
- :class:`StorageSettings`: blob storage and checkpoints (JobManager, TaskManager);
- :class:`ResultSettings`: ``jobmanager.results.*`` (the leader's result retention);
- :class:`LogArchiveSettings`: ``jobmanager.logs.*`` (the leader's archived-log retention);
- :class:`JobManagerSettings`: ``jobmanager.*``;
- :class:`TaskManagerSettings`: ``taskmanager.*`` and ``heartbeat.*``;
- :class:`SparkSettings`: ``spark.*``;
- :class:`HistorySettings`: ``history.*`` (Spark event logs, the History Server);
- :class:`NotificationSettings`: ``notifications.*`` (the leader's job webhooks);
- :class:`SchedulingSettings`: ``scheduling.*`` (the leader's queues and concurrency limits);
- :class:`ClientSettings`: ``rest.address`` and ``client.*`` (the CLI and Client);
- :class:`SecuritySettings`: ``security.*`` (JobManager, TaskManager);
- :class:`OidcSettings`: ``security.oidc.*`` (a JobManager's sign-on);
- :class:`RateLimitSettings`: ``security.rate-limits.*`` (each JobManager's REST API);
- :class:`TlsSettings`: ``rest.ssl.*`` (a JobManager's HTTPS, and every client of it);
- :class:`LogSettings` and :class:`ClusterHostSettings`: ``log.*`` and ``cluster.*``.

Frozen dataclasses with slots, as httpx's small config value objects: the values are already
parsed and checked by :func:`steward.config.configuration.validate`, so these need no
validation of their own (pydantic would validate a second time), and they are plain, hashable,
cheap to copy into a thread and compare in a test. Durations are seconds, sizes bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

from steward.config.keys import OPTIONS
from steward.config.keys_scheduling import DEFAULT_QUEUE, LabelLimit, QueueSpec
from steward.config.settings_security import (
    OidcSettings,
    RateLimitSettings,
    SecuritySettings,
    TlsSettings,
)
from steward.timing import TimingChain


@dataclass(frozen=True, slots=True)
class ZooKeeperSettings:
    """Where the cluster's state lives in ZooKeeper and how a session behaves."""

    quorum: str
    """Comma-separated host:port list."""
    root: str
    """The znode above every cluster."""
    cluster_id: str
    """This cluster's name under the root."""
    session_timeout: float
    """As configured (the server may grant another; see :mod:`steward.ha.session`)."""
    connection_timeout: float
    """Wait for the first connection."""
    tolerate_suspended: bool
    """Keep leadership while SUSPENDED, drop it when LOST."""
    crash_detection: float
    """A standby's patience with a leader port that refuses; 0 turns it off."""
    client_acl: str
    """``creator`` or ``open`` (steward.ha.acl)."""
    digest_file: str
    """The credential file; empty for none."""
    record_format: int
    """The format of the per-job records a leader writes (steward.wire.record_format)."""

    @property
    def cluster_root(self) -> str:
        """The cluster's own znode: ``<root>/<cluster-id>``."""
        return f"{self.root}/{self.cluster_id}"


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """Blob storage (job graphs, stored files) and checkpoint bookkeeping."""

    storage_dir: str
    """An fsspec URL, a local one made absolute."""
    checkpoints_retained: int
    """Completed checkpoints kept per job."""


@dataclass(frozen=True, slots=True)
class ResultSettings:
    """How long the JobResultStore keeps results; the leader applies it (rule 7)."""

    max_age: float
    """Seconds a finished job's result is kept; 0: for ever."""
    max_count: int
    """Most results kept; 0: no limit."""
    check_interval: float
    """Seconds between two retention rounds."""


@dataclass(frozen=True, slots=True)
class LogArchiveSettings:
    """How long the log archive keeps attempts' logs; the leader applies it."""

    max_age: float
    """Seconds an archived log is kept; 0: for ever."""
    max_total_size: int
    """Bytes all archived logs may take; 0: no limit."""
    check_interval: float
    """Seconds between two log retention rounds."""


@dataclass(frozen=True, slots=True)
class JobManagerSettings:
    """What a JobManager (and, as leader, its term) runs with."""

    bind_host: str
    """Where the REST API listens."""
    port: int
    """The REST API's port; 0 picks a free port."""
    advertised_address: str
    """Empty: ``http(s)://<bind-host>:<port>``."""
    trusted_proxies: tuple[str, ...]
    """Addresses and networks whose ``X-Forwarded-For``/``-Proto`` the REST API believes."""
    fence_after: float
    """Derived from the TaskManager's when unset."""
    initialize_timeout: float
    """Longest an initialize(ctx) hook may run."""
    recovery_parallelism: int
    """Jobs a new leader recovers at once."""
    warm_standby: bool
    """A standby keeps every live job's pointer and record for its recovery."""
    cancel_grace: float
    """SIGTERM to SIGKILL of a cancelled attempt."""
    replacement_grace: float
    """Wait before replacing a lost attempt."""
    upload_max_size: int
    """Largest file PUT /v1/contents accepts."""
    artifact_max_size: int
    """Largest pipeline a submission's body may carry."""
    livy_allowed_sources: str
    """Comma-separated folders and URL prefixes ``POST /batches`` may read."""
    contents_retention: float
    """Age before an unnamed stored file is removed."""
    events_keep_alive: float
    """An idle event stream's comment (and token check)."""
    events_buffer: int
    """Job events kept for streams that resume."""
    doctor_interval: float
    """Seconds between the leader's own doctor examinations; 0: none."""


@dataclass(frozen=True, slots=True)
class TaskManagerSettings:
    """What a TaskManager runs with; the leader reads the heartbeat interval too."""

    slots: int
    """Attempts run at once."""
    fence_after: float
    """A share of the session timeout when unset."""
    deadman_timeout: float
    """The fence-after when unset."""
    prewarm_runners: int
    """Warm spare runners kept; 0: every attempt starts cold."""
    workdir: Path
    """As written (relative to the working directory if relative)."""
    attempt_log_max_size: int | None
    """Bytes; None when the cap is off (0)."""
    workdir_retention: float
    """How long an ended attempt's folder stays."""
    heartbeat_interval: float
    """A TaskManager's heartbeat period when nothing changes."""
    heartbeat_idle_hold: float
    """The longest the leader holds an idle TaskManager's heartbeat."""
    heartbeat_progress_interval: float
    """The least time between two sends of an attempt's new progress."""
    bind_host: str = "127.0.0.1"
    """Where the HTTP port (logs, probes) listens."""
    port: int = 0
    """The HTTP port; 0 picks a free port."""
    advertised_address: str = ""
    """Empty: ``http(s)://<bind-host>:<port>``."""


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """Spark defaults of every attempt (and initialize hook)."""

    master: str
    """Unless the job's spark_conf sets ``spark.master``."""


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """Spark event logs and the History Server (``history.*``)."""

    event_log_enabled: bool
    """Attempts write Spark event logs."""
    event_log_dir: str
    """Empty: ``<storage-dir>/spark-events`` for a local storage."""
    server_enabled: bool
    """``steward cluster start`` starts a History Server."""
    server_port: int
    """The History Server's port."""
    server_url: str
    """Empty: derived from the two above."""


@dataclass(frozen=True, slots=True)
class NotificationSettings:
    """Webhooks the leader calls on a job's events (``notifications.*``)."""

    webhooks: str
    """Comma-separated cluster-wide URLs; empty: none."""
    events: str
    """Comma-separated events the cluster's webhooks get."""
    allowed_urls: str
    """Comma-separated prefixes a job's own webhook URLs must start with; empty: none."""
    secret_file: str
    """The HMAC secret's file; empty: unsigned."""
    timeout: float
    """One call's limit."""
    max_age: float
    """Retry an event this long, then give up."""
    outbox_max: int
    """Events kept waiting in ZooKeeper at most."""

    @property
    def webhook_urls(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in self.webhooks.split(",") if u.strip())

    @property
    def event_names(self) -> frozenset[str]:
        return frozenset(e.strip().upper() for e in self.events.split(",") if e.strip())

    @property
    def allowed_prefixes(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in self.allowed_urls.split(",") if u.strip())


@dataclass(frozen=True, slots=True)
class SchedulingSettings:
    """The leader's queues and concurrency limits (``scheduling.*``)."""

    queues: tuple[QueueSpec, ...] = (QueueSpec(DEFAULT_QUEUE, guarantee=1.0),)
    """Every queue, ``default`` among them."""
    label_limits: tuple[LabelLimit, ...] = ()
    """At most N jobs with a label at once."""

    def queue(self, name: str) -> QueueSpec | None:
        return next((queue for queue in self.queues if queue.name == name), None)


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How the CLI and Client find the JobManagers, and the token they send."""

    rest_address: str
    """Comma-separated JobManager URLs; empty: found through ZooKeeper."""
    token_file: str = ""
    """The token's file; empty: $STEWARD_TOKEN or the local cluster's."""


@dataclass(frozen=True, slots=True)
class LogSettings:
    """How every Steward process writes its log (steward.logformat)."""

    format: str
    """``text`` or ``json``."""


@dataclass(frozen=True, slots=True)
class ClusterHostSettings:
    """How ``steward cluster`` reaches the other hosts of its masters and workers files."""

    ssh_command: str
    """The SSH client, split like a shell command line."""
    ssh_options: str
    """Given to the SSH client before the host."""
    remote_python: str
    """Empty: this machine's interpreter path."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every group of a process's settings; ``Configuration.settings`` holds one."""

    zookeeper: ZooKeeperSettings
    storage: StorageSettings
    results: ResultSettings
    log_archive: LogArchiveSettings
    jobmanager: JobManagerSettings
    taskmanager: TaskManagerSettings
    spark: SparkSettings
    history: HistorySettings
    notifications: NotificationSettings
    scheduling: SchedulingSettings
    client: ClientSettings
    tls: TlsSettings
    security: SecuritySettings
    oidc: OidcSettings
    rate_limits: RateLimitSettings
    log: LogSettings
    cluster: ClusterHostSettings

    @property
    def timing(self) -> TimingChain:
        """The timeouts that must stay in order (docs/architecture.md, "Timing chain")."""
        return TimingChain(
            session_timeout=self.zookeeper.session_timeout,
            fence_after=self.taskmanager.fence_after,
            deadman_timeout=self.taskmanager.deadman_timeout,
            jobmanager_fence_after=self.jobmanager.fence_after,
            replacement_grace=self.jobmanager.replacement_grace,
        )

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from every key's parsed value (derived ones filled in), each to the field
        its option names."""
        fields: dict[str, dict[str, Any]] = {}
        for option in OPTIONS:
            value = option.to_setting(values[option.key])
            fields.setdefault(option.group, {})[option.field] = value
        groups = get_type_hints(cls)
        return cls(**{name: groups[name](**group) for name, group in fields.items()})
