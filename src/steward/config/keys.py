"""The table of known configuration keys: each key's converter, default, check and help text.

This is the one list of keys: loading rejects any other, docs/configuration.md documents each
(a test compares them), and :mod:`steward.config.settings` exposes each through a typed field.
Flink-style names (``high-availability.zookeeper.quorum``); a default of None means the value
is derived from other keys when the configuration is validated (the timing chain).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from steward.config.units import to_bool, to_duration, to_int, to_size, to_str


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


FENCE_AFTER_SHARE = 0.6
"""taskmanager.fence-after defaults to this share of the session timeout."""

OPTIONS: tuple[Option, ...] = (
    Option(
        "high-availability.zookeeper.quorum",
        to_str,
        "127.0.0.1:2181",
        "Comma-separated host:port list of the ZooKeeper servers.",
        _quorum,
    ),
    Option(
        "high-availability.zookeeper.root",
        to_str,
        "/steward",
        "Root znode under which every Steward cluster keeps its state.",
        _zk_path,
    ),
    Option(
        "high-availability.cluster-id",
        to_str,
        "default",
        "Name of this cluster; its state lives in <root>/<cluster-id>.",
        _cluster_id,
    ),
    Option(
        "high-availability.zookeeper.session-timeout",
        to_duration,
        "10s",
        "ZooKeeper session timeout. A crashed leader's host is declared dead after this long;"
        " shorter means faster failover and more false alarms on a slow network.",
        _positive,
    ),
    Option(
        "high-availability.zookeeper.connection-timeout",
        to_duration,
        "15s",
        "How long a process waits for its first ZooKeeper connection before giving up.",
        _positive,
    ),
    Option(
        "high-availability.zookeeper.tolerate-suspended-connections",
        to_bool,
        True,
        "Keep leadership while the connection is SUSPENDED and drop it only when the session is"
        " LOST. Safe because every leader write is fenced by its epoch (rule 5).",
    ),
    Option(
        "high-availability.zookeeper.client.acl",
        to_str,
        "creator",
        "ACL of the znodes under <root>/<cluster-id> (Flink's key). creator: every process"
        " authenticates with the credential of high-availability.zookeeper.digest-file and"
        " only that credential may read or change the cluster's state (a world-open state of"
        " an older cluster is migrated at start). open: world-open znodes, no credential"
        " (logged as a warning).",
        lambda v: None if v in ("creator", "open") else "must be creator or open",
    ),
    Option(
        "high-availability.zookeeper.digest-file",
        to_str,
        "",
        "File holding the cluster's ZooKeeper digest credential, one line user:password (mode"
        " 0600; its content is never logged). Required by JobManagers and TaskManagers when"
        " client.acl is creator; a client uses it to find the leader through ZooKeeper."
        " `steward cluster start` writes .steward/zookeeper.digest and sets this key.",
    ),
    Option(
        "high-availability.crash-detection",
        to_duration,
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
        to_str,
        "file://./.steward/storage",
        "fsspec URL of the blob storage for job graphs and checkpoint metadata (file://, s3://,"
        " hdfs://, gs://). A relative file:// path is resolved against the working directory.",
    ),
    Option(
        "taskmanager.numberOfTaskSlots",
        to_int,
        2,
        "How many attempts one TaskManager runs at once.",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "taskmanager.fence-after",
        to_duration,
        None,
        "A TaskManager whose ZooKeeper connection has been suspended this long kills its"
        " attempts (rule 4). Must be shorter than the session timeout, so attempts are"
        " dead before the session expires and the leader may start a replacement. Default:"
        f" {int(FENCE_AFTER_SHARE * 100)}% of the session timeout.",
        _positive,
    ),
    Option(
        "taskmanager.deadman-timeout",
        to_duration,
        None,
        "A runner whose TaskManager has written nothing to its stdin for this long kills itself"
        " and its Spark JVM (rule 4). At most taskmanager.fence-after. Default: the"
        " fence-after (a share of the session timeout), so a frozen TaskManager's attempts are"
        " dead before its leases expire.",
        _positive,
    ),
    Option(
        "taskmanager.spark.prewarm-runners",
        to_int,
        0,
        "How many warm spare runners (Python + a Spark JVM with a ready SparkSession) a"
        " TaskManager keeps for the next attempts, never more than its free slots. 0: every"
        " attempt starts cold.",
        lambda v: None if v >= 0 else "must not be negative (0 turns spares off)",
    ),
    Option(
        "taskmanager.workdir",
        to_str,
        "./.steward/work",
        "Folder under which a TaskManager unpacks artifacts and keeps each attempt's work"
        " directory and log (<workdir>/<taskmanager-id>/<job-id>/<attempt>/).",
    ),
    Option(
        "taskmanager.attempt-log.max-size",
        to_size,
        "64MiB",
        "Most bytes an attempt's runner.log may hold (the runner's, the pipeline's and the"
        " Spark JVM's stdout and stderr). Beyond it the first half is kept, then a line saying"
        " how many bytes were dropped, then the latest output. 0 turns the cap off.",
        _attempt_log_size,
    ),
    Option(
        "taskmanager.workdir.retention",
        to_duration,
        "1h",
        "How long an ended attempt's folder (artifact, runner.log) stays after its outcome"
        " was acknowledged by the leader; 0 removes it at once. Folders of earlier runs of this"
        " TaskManager are removed this long after their last change.",
        lambda v: None if v >= 0 else "must not be negative",
    ),
    Option(
        "taskmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the TaskManager's HTTP port (its attempts' logs, its probes) listens on.",
    ),
    Option(
        "taskmanager.port",
        to_int,
        0,
        "Port of the TaskManager's HTTP port; 0 picks a free port (the address registered in"
        " ZooKeeper is the real one).",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
    ),
    Option(
        "taskmanager.advertised-address",
        to_str,
        "",
        "URL JobManagers use to reach this TaskManager's HTTP port (registered in ZooKeeper)."
        " Empty: http://<bind-host>:<port> (https:// with rest.ssl.enabled; a wildcard bind"
        " host becomes the machine's name).",
    ),
    Option(
        "jobmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the JobManager's REST API listens on.",
    ),
    Option(
        "jobmanager.port",
        to_int,
        8081,
        "Port of the JobManager's REST API; 0 picks a free port.",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
    ),
    Option(
        "jobmanager.advertised-address",
        to_str,
        "",
        "URL other processes use to reach this JobManager (published in leader/info). Empty:"
        " http://<bind-host>:<port> (https:// with rest.ssl.enabled).",
    ),
    Option(
        "jobmanager.fence-after",
        to_duration,
        None,
        "A JobManager none of whose ZooKeeper round trips has worked for this long kills the"
        " initialize hooks it runs and starts none until one works again, so a leader cut off"
        " from ZooKeeper has stopped them before its session (and leadership) can expire and"
        " the next leader runs them. Default: taskmanager.fence-after.",
        _positive,
    ),
    Option(
        "jobmanager.initialize-timeout",
        to_duration,
        "60s",
        "How long a job's initialize(ctx) hook may run (in a child process of the leader)"
        " before the job fails.",
        _positive,
    ),
    Option(
        "jobmanager.recovery-parallelism",
        to_int,
        8,
        "How many jobs a new leader recovers at once (job graph reads, initialize hooks).",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "jobmanager.cancel-grace",
        to_duration,
        "10s",
        "After a cancel, how long a runner has to end after SIGTERM before every process of"
        " the attempt (its group, its cgroup) is SIGKILLed.",
        _positive,
    ),
    Option(
        "jobmanager.replacement-grace",
        to_duration,
        "1s",
        "After an attempt's TaskManager is gone (its lease with it), how long the leader waits"
        " before it starts a replacement (rule 4).",
        lambda v: None if v >= 0 else "must not be negative",
    ),
    Option(
        "jobmanager.upload.max-size",
        to_size,
        "8GiB",
        "Largest file a job may name (PUT /v1/contents): a py-file, file, archive or jar,"
        " streamed to blob storage, never held in memory. Packed Python environments are"
        " often hundreds of MB.",
        lambda v: None if v >= 1 else "must be at least one byte",
    ),
    Option(
        "jobmanager.contents.retention",
        to_duration,
        "1h",
        "How long a stored file no live job names is kept before the leader's garbage"
        " collection removes it; an upload waiting for its submission is younger than this.",
        _positive,
    ),
    Option(
        "jobmanager.events.keep-alive",
        to_duration,
        "15s",
        "How often an idle event stream (GET /v1/events) gets a comment line, so proxies keep"
        " it open; the caller's token is checked again at each (a revoked or expired one ends"
        " the stream).",
        _positive,
    ),
    Option(
        "jobmanager.events.buffer",
        to_int,
        "10000",
        "Job events each JobManager keeps for streams that resume (Last-Event-ID); a consumer"
        " further behind is told to re-read (a reset event).",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "heartbeat.interval",
        to_duration,
        "1s",
        "How often a TaskManager heartbeats to the leader when nothing changes. Commands reach"
        " it at once anyway (the leader holds each heartbeat up to this long).",
        _positive,
    ),
    Option(
        "spark.master",
        to_str,
        "local[*]",
        "Spark master of every attempt unless the job's spark_conf sets spark.master: local[*],"
        " spark://host:7077, yarn, k8s://..., or a Spark Connect sc://host:15002 URL.",
    ),
    Option(
        "rest.address",
        to_str,
        "",
        "Comma-separated JobManager URLs the CLI and Client talk to. Empty: the leader found"
        " through ZooKeeper, or the local cluster of ./.steward.",
    ),
    Option(
        "rest.ssl.enabled",
        to_bool,
        False,
        "Serve the JobManager's REST API over HTTPS with rest.ssl.certificate and"
        " rest.ssl.key; it then advertises an https:// address, which clients and"
        " TaskManagers find in ZooKeeper. `steward cluster start --tls` turns it on with a"
        " private CA of the cluster's own.",
    ),
    Option(
        "rest.ssl.certificate",
        to_str,
        "",
        "PEM file of this process's certificate (intermediate CAs after it). A JobManager"
        " serves it; every process also presents it as its client certificate where a"
        " JobManager requires one (rest.ssl.client-auth).",
    ),
    Option(
        "rest.ssl.key",
        to_str,
        "",
        "PEM file of the certificate's private key, unencrypted. Refused if other users may"
        " read it (chmod 600).",
    ),
    Option(
        "rest.ssl.ca",
        to_str,
        "",
        "PEM bundle of the CA certificates that the CLI, steward.Client, TaskManagers and"
        " standby JobManagers verify a JobManager's certificate with (and a JobManager a"
        " client's, under rest.ssl.client-auth=require). Empty: the system's CAs.",
    ),
    Option(
        "rest.ssl.client-auth",
        to_str,
        "none",
        "none: any client may connect over TLS. require: mutual TLS; a JobManager accepts only"
        " clients with a certificate signed by a CA of rest.ssl.ca. optional: a client may"
        " present such a certificate (and must, to be taken as its credential under"
        " security.auth.client-certificates); one it cannot verify is refused.",
        lambda v: (
            None if v in ("none", "optional", "require") else "must be none, optional or require"
        ),
    ),
    Option(
        "cluster.ssh.command",
        to_str,
        "ssh",
        "The SSH client `steward cluster start|status|stop` runs to reach the hosts of its"
        " masters and workers files that are not this machine (OpenSSH; split like a shell"
        " command line).",
        lambda v: None if v.strip() else "must name an SSH client, e.g. ssh",
    ),
    Option(
        "cluster.ssh.options",
        to_str,
        "-o BatchMode=yes -o ConnectTimeout=10",
        "Options given to cluster.ssh.command before the host. BatchMode=yes: key-based only,"
        " a host that would ask for a password is an error, never a prompt. Add -i KEY,"
        " -p PORT, -l USER or -F CONFIG here (or in ~/.ssh/config).",
    ),
    Option(
        "cluster.remote.python",
        to_str,
        "",
        "The Python that runs Steward on the other hosts of a cluster started over SSH."
        " Empty: the same path as this machine's (Steward installed alike on every host).",
    ),
    Option(
        "log.format",
        to_str,
        "text",
        "text: log records as lines of text. json: one JSON object per line (ts, level, logger,"
        " message, process, pid, and job, attempt, epoch, taskmanager when the record names"
        " them), from every Steward process: JobManagers, TaskManagers, their attempts' runners"
        " (STEWARD_LOG_FORMAT is passed on to them) and the CLI.",
        lambda v: None if v in ("text", "json") else "must be text or json",
    ),
    Option(
        "state.checkpoints.num-retained",
        to_int,
        3,
        "How many completed checkpoints are kept per job; older ones are removed.",
        lambda v: None if v >= 1 else "must be at least 1",
    ),
    Option(
        "security.auth.enabled",
        to_bool,
        True,
        "Every JobManager route but /healthz and /readyz requires a bearer token (401 without),"
        " and roles decide what it may do (403). false: anyone who reaches a JobManager may do"
        " anything; only on a trusted network (logged as a warning at start).",
    ),
    Option(
        "security.auth.client-certificates",
        to_bool,
        False,
        "A verified client certificate (mutual TLS: rest.ssl.client-auth optional or require)"
        " is a credential, for machines: its subject's CN names the caller, its O is the role"
        " (viewer, submitter or admin). A bearer token, when sent, decides instead.",
    ),
    Option(
        "security.internal.token-file",
        to_str,
        "",
        "File (mode 0600) holding the cluster's internal credential: TaskManagers send it with"
        " every heartbeat and JobManagers accept /internal/* only with it. Required by"
        " JobManagers and TaskManagers while security.auth.enabled. `steward cluster start`"
        " writes .steward/internal.token and sets this key.",
    ),
    Option(
        "security.audit.file",
        to_str,
        "",
        "File a JobManager appends its audit log to (one JSON line per submit, cancel, token"
        " create and revoke) besides its own log. Empty: its log only.",
    ),
    Option(
        "client.token-file",
        to_str,
        "",
        "File holding the token the CLI and Client send, when neither --token nor"
        " $STEWARD_TOKEN gives one. Empty: the local cluster's .steward/admin.token, if any.",
    ),
)

BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}
"""Every option by its key."""
