"""The keys of the processes: ``taskmanager.*``, ``jobmanager.*``, the heartbeat, Spark."""

from __future__ import annotations

from pathlib import Path

from steward.config.option import (
    FENCE_AFTER_SHARE,
    Option,
    attempt_log_size,
    positive,
    zero_is_none,
)
from steward.config.units import to_duration, to_int, to_size, to_str

PROCESS_OPTIONS: tuple[Option, ...] = (
    Option(
        "taskmanager.numberOfTaskSlots",
        to_int,
        2,
        "How many attempts one TaskManager runs at once.",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="taskmanager.slots",
    ),
    Option(
        "taskmanager.fence-after",
        to_duration,
        None,
        "A TaskManager whose ZooKeeper connection has been suspended this long kills its"
        " attempts (rule 4). Must be shorter than the session timeout, so attempts are"
        " dead before the session expires and the leader may start a replacement. Default:"
        f" {int(FENCE_AFTER_SHARE * 100)}% of the session timeout.",
        positive,
        setting="taskmanager.fence_after",
    ),
    Option(
        "taskmanager.deadman-timeout",
        to_duration,
        None,
        "A runner whose TaskManager has written nothing to its stdin for this long kills itself"
        " and its Spark JVM (rule 4). At most taskmanager.fence-after. Default: the"
        " fence-after (a share of the session timeout), so a frozen TaskManager's attempts are"
        " dead before its leases expire.",
        positive,
        setting="taskmanager.deadman_timeout",
    ),
    Option(
        "taskmanager.spark.prewarm-runners",
        to_int,
        0,
        "How many warm spare runners (Python + a Spark JVM with a ready SparkSession) a"
        " TaskManager keeps for the next attempts, never more than its free slots. 0: every"
        " attempt starts cold.",
        lambda v: None if v >= 0 else "must not be negative (0 turns spares off)",
        setting="taskmanager.prewarm_runners",
    ),
    Option(
        "taskmanager.workdir",
        to_str,
        "./.steward/work",
        "Folder under which a TaskManager unpacks artifacts and keeps each attempt's work"
        " directory and log (<workdir>/<taskmanager-id>/<job-id>/<attempt>/).",
        setting="taskmanager.workdir",
        to_setting=Path,
    ),
    Option(
        "taskmanager.attempt-log.max-size",
        to_size,
        "64MiB",
        "Most bytes an attempt's runner.log may hold (the runner's, the pipeline's and the"
        " Spark JVM's stdout and stderr). Beyond it the first half is kept, then a line saying"
        " how many bytes were dropped, then the latest output. 0 turns the cap off.",
        attempt_log_size,
        setting="taskmanager.attempt_log_max_size",
        to_setting=zero_is_none,
    ),
    Option(
        "taskmanager.workdir.retention",
        to_duration,
        "1h",
        "How long an ended attempt's folder (artifact, runner.log) stays after its outcome"
        " was acknowledged by the leader; 0 removes it at once. Folders of earlier runs of this"
        " TaskManager are removed this long after their last change.",
        lambda v: None if v >= 0 else "must not be negative",
        setting="taskmanager.workdir_retention",
    ),
    Option(
        "taskmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the TaskManager's HTTP port (its attempts' logs, its probes) listens on.",
        setting="taskmanager.bind_host",
    ),
    Option(
        "taskmanager.port",
        to_int,
        0,
        "Port of the TaskManager's HTTP port; 0 picks a free port (the address registered in"
        " ZooKeeper is the real one).",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
        setting="taskmanager.port",
    ),
    Option(
        "taskmanager.advertised-address",
        to_str,
        "",
        "URL JobManagers use to reach this TaskManager's HTTP port (registered in ZooKeeper)."
        " Empty: http://<bind-host>:<port> (https:// with rest.ssl.enabled; a wildcard bind"
        " host becomes the machine's name).",
        setting="taskmanager.advertised_address",
    ),
    Option(
        "jobmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the JobManager's REST API listens on.",
        setting="jobmanager.bind_host",
    ),
    Option(
        "jobmanager.port",
        to_int,
        8081,
        "Port of the JobManager's REST API; 0 picks a free port.",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
        setting="jobmanager.port",
    ),
    Option(
        "jobmanager.advertised-address",
        to_str,
        "",
        "URL other processes use to reach this JobManager (published in leader/info). Empty:"
        " http://<bind-host>:<port> (https:// with rest.ssl.enabled).",
        setting="jobmanager.advertised_address",
    ),
    Option(
        "jobmanager.fence-after",
        to_duration,
        None,
        "A JobManager none of whose ZooKeeper round trips has worked for this long kills the"
        " initialize hooks it runs and starts none until one works again, so a leader cut off"
        " from ZooKeeper has stopped them before its session (and leadership) can expire and"
        " the next leader runs them. Default: taskmanager.fence-after.",
        positive,
        setting="jobmanager.fence_after",
    ),
    Option(
        "jobmanager.initialize-timeout",
        to_duration,
        "60s",
        "How long a job's initialize(ctx) hook may run (in a child process of the leader)"
        " before the job fails.",
        positive,
        setting="jobmanager.initialize_timeout",
    ),
    Option(
        "jobmanager.recovery-parallelism",
        to_int,
        8,
        "How many jobs a new leader recovers at once (job graph reads, initialize hooks).",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="jobmanager.recovery_parallelism",
    ),
    Option(
        "jobmanager.cancel-grace",
        to_duration,
        "10s",
        "After a cancel, how long a runner has to end after SIGTERM before every process of"
        " the attempt (its group, its cgroup) is SIGKILLed.",
        positive,
        setting="jobmanager.cancel_grace",
    ),
    Option(
        "jobmanager.replacement-grace",
        to_duration,
        "1s",
        "After an attempt's TaskManager is gone (its lease with it), how long the leader waits"
        " before it starts a replacement (rule 4).",
        lambda v: None if v >= 0 else "must not be negative",
        setting="jobmanager.replacement_grace",
    ),
    Option(
        "jobmanager.upload.max-size",
        to_size,
        "8GiB",
        "Largest file a job may name (PUT /v1/contents): a py-file, file, archive or jar,"
        " streamed to blob storage, never held in memory. Packed Python environments are"
        " often hundreds of MB.",
        lambda v: None if v >= 1 else "must be at least one byte",
        setting="jobmanager.upload_max_size",
    ),
    Option(
        "jobmanager.contents.retention",
        to_duration,
        "1h",
        "How long a stored file no live job names is kept before the leader's garbage"
        " collection removes it; an upload waiting for its submission is younger than this.",
        positive,
        setting="jobmanager.contents_retention",
    ),
    Option(
        "jobmanager.events.keep-alive",
        to_duration,
        "15s",
        "How often an idle event stream (GET /v1/events) gets a comment line, so proxies keep"
        " it open; the caller's token is checked again at each (a revoked or expired one ends"
        " the stream).",
        positive,
        setting="jobmanager.events_keep_alive",
    ),
    Option(
        "jobmanager.events.buffer",
        to_int,
        "10000",
        "Job events each JobManager keeps for streams that resume (Last-Event-ID); a consumer"
        " further behind is told to re-read (a reset event).",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="jobmanager.events_buffer",
    ),
    Option(
        "heartbeat.interval",
        to_duration,
        "1s",
        "How often a TaskManager heartbeats to the leader when nothing changes. Commands reach"
        " it at once anyway (the leader holds each heartbeat up to this long).",
        positive,
        setting="taskmanager.heartbeat_interval",
    ),
    Option(
        "spark.master",
        to_str,
        "local[*]",
        "Spark master of every attempt unless the job's spark_conf sets spark.master: local[*],"
        " spark://host:7077, yarn, k8s://..., or a Spark Connect sc://host:15002 URL.",
        setting="spark.master",
    ),
)
