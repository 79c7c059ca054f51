"""Typed settings: frozen value objects built once from a validated configuration.

A process reads ``config.settings.<group>.<field>``, never ``config["some.key"]``: every key of
:data:`steward.config.keys.OPTIONS` is a typed field of exactly one group below (a unit test
changes each key and checks that the settings change). The groups follow the keys' prefixes
and the processes that read them:

- :class:`ZooKeeperSettings`: ``high-availability.*`` except the storage folder (every process);
- :class:`StorageSettings`: blob storage and checkpoints (JobManager, TaskManager);
- :class:`JobManagerSettings`: ``jobmanager.*``;
- :class:`TaskManagerSettings`: ``taskmanager.*`` and ``heartbeat.interval``;
- :class:`SparkSettings`: ``spark.*``;
- :class:`ClientSettings`: ``rest.*`` and ``client.*`` (the CLI and Client);
- :class:`SecuritySettings`: ``security.*`` (JobManager, TaskManager);
- :class:`TlsSettings`: ``rest.ssl.*`` (a JobManager's HTTPS, and every client of it).

Frozen dataclasses with slots, as httpx's small config value objects: the values are already
parsed and checked by :func:`steward.config.configuration.validate`, so these need no
validation of their own (pydantic would validate a second time), and they are plain, hashable,
cheap to copy into a thread and compare in a test. Durations are seconds, sizes bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steward.timing import TimingChain


@dataclass(frozen=True, slots=True)
class ZooKeeperSettings:
    """Where the cluster's state lives in ZooKeeper and how a session behaves."""

    quorum: str
    """``high-availability.zookeeper.quorum``: comma-separated host:port list."""
    root: str
    """``high-availability.zookeeper.root``: the znode above every cluster."""
    cluster_id: str
    """``high-availability.cluster-id``: this cluster's name under the root."""
    session_timeout: float
    """``high-availability.zookeeper.session-timeout``, as configured (the server may grant
    another; see :mod:`steward.ha.session`)."""
    connection_timeout: float
    """``high-availability.zookeeper.connection-timeout``: wait for the first connection."""
    tolerate_suspended: bool
    """``high-availability.zookeeper.tolerate-suspended-connections``."""
    crash_detection: float
    """``high-availability.crash-detection``; 0 turns it off."""
    client_acl: str
    """``high-availability.zookeeper.client.acl``: ``creator`` or ``open`` (steward.ha.acl)."""
    digest_file: str
    """``high-availability.zookeeper.digest-file``: the credential file; empty for none."""

    @property
    def cluster_root(self) -> str:
        """The cluster's own znode: ``<root>/<cluster-id>``."""
        return f"{self.root}/{self.cluster_id}"

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> ZooKeeperSettings:
        return cls(
            quorum=str(values["high-availability.zookeeper.quorum"]),
            root=str(values["high-availability.zookeeper.root"]),
            cluster_id=str(values["high-availability.cluster-id"]),
            session_timeout=float(values["high-availability.zookeeper.session-timeout"]),
            connection_timeout=float(values["high-availability.zookeeper.connection-timeout"]),
            tolerate_suspended=bool(
                values["high-availability.zookeeper.tolerate-suspended-connections"]
            ),
            crash_detection=float(values["high-availability.crash-detection"]),
            client_acl=str(values["high-availability.zookeeper.client.acl"]),
            digest_file=str(values["high-availability.zookeeper.digest-file"]),
        )


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """Blob storage (job graphs, stored files) and checkpoint bookkeeping."""

    storage_dir: str
    """``high-availability.storage-dir``: an fsspec URL, a local one made absolute."""
    checkpoints_retained: int
    """``state.checkpoints.num-retained``."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> StorageSettings:
        return cls(
            storage_dir=str(values["high-availability.storage-dir"]),
            checkpoints_retained=int(values["state.checkpoints.num-retained"]),
        )


@dataclass(frozen=True, slots=True)
class ResultSettings:
    """How long the JobResultStore keeps results; the leader applies it (rule 7)."""

    max_age: float
    """``jobmanager.results.max-age`` in seconds; 0: for ever."""
    max_count: int
    """``jobmanager.results.max-count``; 0: no limit."""
    check_interval: float
    """``jobmanager.results.check-interval``: seconds between two retention rounds."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> ResultSettings:
        return cls(
            max_age=float(values["jobmanager.results.max-age"]),
            max_count=int(values["jobmanager.results.max-count"]),
            check_interval=float(values["jobmanager.results.check-interval"]),
        )


@dataclass(frozen=True, slots=True)
class JobManagerSettings:
    """What a JobManager (and, as leader, its term) runs with."""

    bind_host: str
    """``jobmanager.bind-host``: where the REST API listens."""
    port: int
    """``jobmanager.port``; 0 picks a free port."""
    advertised_address: str
    """``jobmanager.advertised-address``; empty: ``http(s)://<bind-host>:<port>``."""
    fence_after: float
    """``jobmanager.fence-after`` (derived from the TaskManager's when unset)."""
    initialize_timeout: float
    """``jobmanager.initialize-timeout``: longest an initialize(ctx) hook may run."""
    recovery_parallelism: int
    """``jobmanager.recovery-parallelism``: jobs a new leader recovers at once."""
    cancel_grace: float
    """``jobmanager.cancel-grace``: SIGTERM to SIGKILL of a cancelled attempt."""
    replacement_grace: float
    """``jobmanager.replacement-grace``: wait before replacing a lost attempt."""
    upload_max_size: int
    """``jobmanager.upload.max-size``: largest file PUT /v1/contents accepts."""
    contents_retention: float
    """``jobmanager.contents.retention``: age before an unnamed stored file is removed."""
    events_keep_alive: float
    """``jobmanager.events.keep-alive``: an idle event stream's comment (and token check)."""
    events_buffer: int
    """``jobmanager.events.buffer``: job events kept for streams that resume."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> JobManagerSettings:
        return cls(
            bind_host=str(values["jobmanager.bind-host"]),
            port=int(values["jobmanager.port"]),
            advertised_address=str(values["jobmanager.advertised-address"]),
            fence_after=float(values["jobmanager.fence-after"]),
            initialize_timeout=float(values["jobmanager.initialize-timeout"]),
            recovery_parallelism=int(values["jobmanager.recovery-parallelism"]),
            cancel_grace=float(values["jobmanager.cancel-grace"]),
            replacement_grace=float(values["jobmanager.replacement-grace"]),
            upload_max_size=int(values["jobmanager.upload.max-size"]),
            contents_retention=float(values["jobmanager.contents.retention"]),
            events_keep_alive=float(values["jobmanager.events.keep-alive"]),
            events_buffer=int(values["jobmanager.events.buffer"]),
        )


@dataclass(frozen=True, slots=True)
class TaskManagerSettings:
    """What a TaskManager runs with; the leader reads the heartbeat interval too."""

    slots: int
    """``taskmanager.numberOfTaskSlots``: attempts run at once."""
    fence_after: float
    """``taskmanager.fence-after`` (a share of the session timeout when unset)."""
    deadman_timeout: float
    """``taskmanager.deadman-timeout`` (the fence-after when unset)."""
    prewarm_runners: int
    """``taskmanager.spark.prewarm-runners``; 0: every attempt starts cold."""
    workdir: Path
    """``taskmanager.workdir``: as written (relative to the working directory if relative)."""
    attempt_log_max_size: int | None
    """``taskmanager.attempt-log.max-size`` in bytes; None when the cap is off (0)."""
    workdir_retention: float
    """``taskmanager.workdir.retention``: how long an ended attempt's folder stays."""
    heartbeat_interval: float
    """``heartbeat.interval``: a TaskManager's heartbeat period when nothing changes."""
    bind_host: str = "127.0.0.1"
    """``taskmanager.bind-host``: where the HTTP port (logs, probes) listens."""
    port: int = 0
    """``taskmanager.port``; 0 picks a free port."""
    advertised_address: str = ""
    """``taskmanager.advertised-address``; empty: ``http(s)://<bind-host>:<port>``."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> TaskManagerSettings:
        return cls(
            slots=int(values["taskmanager.numberOfTaskSlots"]),
            fence_after=float(values["taskmanager.fence-after"]),
            deadman_timeout=float(values["taskmanager.deadman-timeout"]),
            prewarm_runners=int(values["taskmanager.spark.prewarm-runners"]),
            workdir=Path(str(values["taskmanager.workdir"])),
            attempt_log_max_size=int(values["taskmanager.attempt-log.max-size"]) or None,
            workdir_retention=float(values["taskmanager.workdir.retention"]),
            heartbeat_interval=float(values["heartbeat.interval"]),
            bind_host=str(values["taskmanager.bind-host"]),
            port=int(values["taskmanager.port"]),
            advertised_address=str(values["taskmanager.advertised-address"]),
        )


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """Spark defaults of every attempt (and initialize hook)."""

    master: str
    """``spark.master``, unless the job's spark_conf sets it."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SparkSettings:
        return cls(master=str(values["spark.master"]))


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How the CLI and Client find the JobManagers, and the token they send."""

    rest_address: str
    """``rest.address``: comma-separated JobManager URLs; empty: found through ZooKeeper."""
    token_file: str = ""
    """``client.token-file``: the token's file; empty: $STEWARD_TOKEN or the local cluster's."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> ClientSettings:
        return cls(
            rest_address=str(values["rest.address"]),
            token_file=str(values["client.token-file"]),
        )


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    """Authentication of the JobManagers' REST API (steward.security)."""

    auth_enabled: bool
    """``security.auth.enabled``: bearer tokens on every route but /healthz and /readyz."""
    internal_token_file: str
    """``security.internal.token-file``: the cluster's internal credential; empty: none."""
    audit_file: str
    """``security.audit.file``: where the audit log is appended too; empty: the log only."""
    client_certificates: bool = False
    """``security.auth.client-certificates``: a verified client certificate is a credential."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SecuritySettings:
        return cls(
            auth_enabled=bool(values["security.auth.enabled"]),
            client_certificates=bool(values["security.auth.client-certificates"]),
            internal_token_file=str(values["security.internal.token-file"]),
            audit_file=str(values["security.audit.file"]),
        )


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """HTTPS on the REST API: what a JobManager serves, what every client verifies with
    (:mod:`steward.tls.contexts`)."""

    enabled: bool
    """``rest.ssl.enabled``: a JobManager serves HTTPS and advertises ``https://``."""
    certificate: Path | None
    """``rest.ssl.certificate``: PEM certificate (chain) served, and presented as a client."""
    key: Path | None
    """``rest.ssl.key``: PEM private key of the certificate."""
    ca: Path | None
    """``rest.ssl.ca``: PEM CA bundle to verify peers with; None: the system's CAs."""
    require_client_certificate: bool
    """``rest.ssl.client-auth`` is ``require``: mutual TLS."""
    optional_client_certificate: bool = False
    """``rest.ssl.client-auth`` is ``optional``: a client may present a certificate."""

    @property
    def request_client_certificate(self) -> bool:
        """A JobManager asks clients for a certificate (and verifies one it is given)."""
        return self.require_client_certificate or self.optional_client_certificate

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> TlsSettings:
        def path(key: str) -> Path | None:
            text = str(values[key])
            return Path(text) if text else None

        return cls(
            enabled=bool(values["rest.ssl.enabled"]),
            certificate=path("rest.ssl.certificate"),
            key=path("rest.ssl.key"),
            ca=path("rest.ssl.ca"),
            require_client_certificate=values["rest.ssl.client-auth"] == "require",
            optional_client_certificate=values["rest.ssl.client-auth"] == "optional",
        )


@dataclass(frozen=True, slots=True)
class LogSettings:
    format: str
    """``log.format``: ``text`` or ``json`` (steward.logformat)."""


@dataclass(frozen=True, slots=True)
class ClusterHostSettings:
    """How ``steward cluster`` reaches the other hosts of its masters and workers files."""

    ssh_command: str
    """``cluster.ssh.command``."""
    ssh_options: str
    """``cluster.ssh.options``."""
    remote_python: str
    """``cluster.remote.python``; empty: this machine's interpreter path."""

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> ClusterHostSettings:
        return cls(
            ssh_command=str(values["cluster.ssh.command"]),
            ssh_options=str(values["cluster.ssh.options"]),
            remote_python=str(values["cluster.remote.python"]),
        )


@dataclass(frozen=True, slots=True)
class Settings:
    """Every group of a process's settings; ``Configuration.settings`` holds one."""

    zookeeper: ZooKeeperSettings
    storage: StorageSettings
    results: ResultSettings
    jobmanager: JobManagerSettings
    taskmanager: TaskManagerSettings
    spark: SparkSettings
    client: ClientSettings
    tls: TlsSettings
    security: SecuritySettings
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
        """Settings from every key's parsed value (derived ones filled in)."""
        return cls(
            zookeeper=ZooKeeperSettings.from_values(values),
            storage=StorageSettings.from_values(values),
            results=ResultSettings.from_values(values),
            jobmanager=JobManagerSettings.from_values(values),
            taskmanager=TaskManagerSettings.from_values(values),
            spark=SparkSettings.from_values(values),
            client=ClientSettings.from_values(values),
            tls=TlsSettings.from_values(values),
            security=SecuritySettings.from_values(values),
            log=LogSettings(format=str(values["log.format"])),
            cluster=ClusterHostSettings.from_values(values),
        )
