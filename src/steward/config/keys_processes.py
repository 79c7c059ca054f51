"""The keys of the processes: ``taskmanager.*``, ``jobmanager.*``, the heartbeat, Spark."""

from __future__ import annotations

from pathlib import Path

from steward.config.option import (
    FENCE_AFTER_SHARE,
    Option,
    attempt_log_size,
    network_list,
    networks,
    positive,
    zero_is_none,
)
from steward.config.units import to_bool, to_duration, to_int, to_size, to_str

MAX_IDLE_HOLD = 20.0
"""Seconds: the longest ``heartbeat.idle-hold`` (an idle TaskManager's heartbeat age stays
well under the 30 s of the ``StewardTaskManagerSilent`` alert)."""

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
        "A TaskManager whose ZooKeeper connection has been SUSPENDED this long, or none of whose"
        " ZooKeeper round trips (a liveness probe every eighth of it) has worked for this long,"
        " kills its attempts (DESIGN rule 4, self-fencing). Must be shorter than the session"
        " timeout, and with the dead-man's switch and the probe's period fit within it plus"
        " `jobmanager.replacement-grace`: `max(this, deadman-timeout + this/8) + session/10 <="
        " session timeout + replacement-grace`, so an attempt is dead before its lease can vanish"
        " and a replacement start elsewhere; loading refuses anything else, and so does a"
        " JobManager or TaskManager whose server *granted* a session timeout too short for it (the"
        " servers' `maxSessionTimeout`), naming the keys (see"
        " [architecture.md](architecture.md#timing-chain)). Shorter: a frozen or cut-off"
        " TaskManager stops its work sooner, but a brief ZooKeeper hiccup costs more restarts.",
        positive,
        setting="taskmanager.fence_after",
        derived_default=f"{FENCE_AFTER_SHARE:.0%} of the session timeout",
    ),
    Option(
        "taskmanager.deadman-timeout",
        to_duration,
        None,
        "A runner whose TaskManager has written nothing to its stdin for this long SIGKILLs"
        " itself and its Spark JVM (DESIGN rule 4). At most `taskmanager.fence-after` (validation"
        " refuses more): a frozen TaskManager cannot fence itself, so its runners must be dead"
        " before its session (and so its leases) expire. It is part of the timing chain that"
        " loading checks as a whole, with the session timeout the server granted checked again"
        " after connecting (see [architecture.md](architecture.md#timing-chain)). Measured on a"
        " clock that counts a suspend of the host.",
        positive,
        setting="taskmanager.deadman_timeout",
        derived_default=f"the fence-after ({FENCE_AFTER_SHARE:.0%} of the session timeout)",
    ),
    Option(
        "taskmanager.spark.prewarm-runners",
        to_int,
        0,
        "How many warm spare runners a TaskManager keeps: runner processes that already imported"
        " PySpark, started their JVM and a SparkSession on `spark.master` with the default conf,"
        " and ran a few trivial jobs, waiting for an attempt. Never more than the TaskManager's"
        " free slots. An attempt whose job can use one (same master, and a `spark_conf` of only"
        " runtime SQL settings such as `spark.sql.shuffle.partitions`) starts on a spare, its"
        " `ctx.spark` already built (on this 2-core machine while it was shared by other work,"
        " load average about 20: 3.1 s from submission to a first result, against 67 s cold;"
        " `benchmarks/job_start.py`); other jobs start cold, as does every job while no spare is"
        " ready. Each spare serves one attempt and is replaced. Costs one idle JVM and Python"
        " (about 500 MB resident) and a few CPU-seconds per replacement, so it is off by default;"
        " turn it on for a TaskManager that runs short Spark jobs. See"
        " [architecture.md](architecture.md#warm-spare-runners).",
        lambda v: None if v >= 0 else "must not be negative (0 turns spares off)",
        setting="taskmanager.prewarm_runners",
    ),
    Option(
        "taskmanager.workdir",
        to_str,
        "./.steward/work",
        "Folder under which a TaskManager unpacks artifacts and keeps each attempt's work"
        " directory and log: `<workdir>/<taskmanager-id>/<job-id>/<attempt>/`.",
        setting="taskmanager.workdir",
        to_setting=Path,
    ),
    Option(
        "taskmanager.attempt-log.max-size",
        to_size,
        "64MiB",
        "Most bytes an attempt's `runner.log` keeps: everything the attempt printed (the runner,"
        " the pipeline, the Spark JVM and any other child). The leader applies it to a job's"
        " `initialize` hook too (`initialize.log` in the JobManager's folder). Beyond half of it"
        " the log keeps its first half, then one line `... N bytes dropped ...`, then the latest"
        " output (the last error and its traceback), so a pipeline printing in a loop cannot fill"
        " the disk. Larger: more of a long attempt's middle survives; smaller: less disk per"
        " attempt (at least `64k`). Costs a small capping process per attempt (about 13 MB"
        " resident) and, only for output beyond the cap, about twice its size in disk writes. `0`"
        " turns the cap off. See"
        " [operations.md](operations.md#attempt-logs-and-the-taskmanagers-disk).",
        attempt_log_size,
        setting="taskmanager.attempt_log_max_size",
        to_setting=zero_is_none,
    ),
    Option(
        "taskmanager.workdir.retention",
        to_duration,
        "1h",
        "How long an ended attempt's folder (`<workdir>/<tm-id>/<job-id>/<attempt>/`: its"
        " unpacked artifact and `runner.log`) stays after the leader acknowledged its outcome; the"
        " folders of dead warm spares likewise, and on a JobManager a job's `initialize` hook"
        " folder after the hook ended. `0` removes them as soon as the outcome is acknowledged"
        " (the attempt's processes are gone by then). Folders earlier runs of the TaskManager left"
        " are removed this long after their last change. Longer: logs stay readable on the host"
        " for longer; shorter: less disk. A folder that a process still uses is never removed.",
        lambda v: None if v >= 0 else "must not be negative",
        setting="taskmanager.workdir_retention",
    ),
    Option(
        "taskmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the TaskManager's HTTP port listens on: its attempts' logs (which every"
        " JobManager proxies as `GET /v1/jobs/{id}/attempts/{n}/log`) and its probes. Use"
        " `0.0.0.0` so that JobManagers on other hosts reach it.",
        setting="taskmanager.bind_host",
    ),
    Option(
        "taskmanager.port",
        to_int,
        0,
        "Port of the TaskManager's HTTP port; `0` picks a free port (the address registered in"
        " ZooKeeper, `taskmanagers/<id>`, is the real one). Set a fixed one to open it in a"
        " firewall: JobManagers must reach it (see"
        " [operations.md](operations.md#logs-from-anywhere)).",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
        setting="taskmanager.port",
    ),
    Option(
        "taskmanager.advertised-address",
        to_str,
        "",
        "URL JobManagers use to reach this TaskManager's HTTP port (registered in ZooKeeper)."
        " Empty: `http://<bind-host>:<port>` (`https://` with `rest.ssl.enabled`, which this port"
        " serves with too; a wildcard bind host becomes the machine's name). Set it behind NAT or"
        " when the machine's name does not resolve from the JobManagers.",
        setting="taskmanager.advertised_address",
    ),
    Option(
        "jobmanager.bind-host",
        to_str,
        "127.0.0.1",
        "Address the JobManager's REST API listens on. Use `0.0.0.0` to serve other hosts.",
        setting="jobmanager.bind_host",
    ),
    Option(
        "jobmanager.port",
        to_int,
        8081,
        "Port of the JobManager's REST API; `0` picks a free port (the address published in"
        " ZooKeeper is the real one).",
        lambda v: None if 0 <= v < 65536 else "must be a port number (0 picks a free one)",
        setting="jobmanager.port",
    ),
    Option(
        "jobmanager.advertised-address",
        to_str,
        "",
        "URL other processes use to reach this JobManager (published in `leader/info` and its"
        " latch). Empty: `http://<bind-host>:<port>` (`https://` with `rest.ssl.enabled`; an"
        " `http://` address with TLS on is refused). Set it when the bind host is not reachable as"
        " such (`0.0.0.0`, NAT).",
        setting="jobmanager.advertised_address",
    ),
    Option(
        "jobmanager.trusted-proxies",
        to_str,
        "",
        "Comma-separated IP addresses and networks (`10.0.0.5,10.1.0.0/16`) of reverse proxies"
        " in front of the REST API and web UI whose `X-Forwarded-For` and `X-Forwarded-Proto`"
        " headers the JobManager believes, from a request whose TCP peer is one of them: the"
        " client's address for the rate limits and the audit log, `https` for the UI's secure"
        " cookies and the sign-on redirect. Empty (the default): the headers are ignored from"
        " everyone, localhost included, so no local process can choose the address it is counted"
        " under. `*` is refused. See [security.md](security.md#reverse-proxies).",
        network_list,
        setting="jobmanager.trusted_proxies",
        to_setting=networks,
    ),
    Option(
        "jobmanager.fence-after",
        to_duration,
        None,
        "A JobManager none of whose ZooKeeper round trips has worked for this long (a liveness"
        " probe every eighth of it) kills the `initialize` hooks it runs and starts none until a"
        " round trip of the same session works again; then the interrupted hooks run again from"
        " the start. A leader that tolerates SUSPENDED keeps its term until kazoo reports LOST,"
        " which may come only after its session expired and the next leader ran the same hooks;"
        " this stops them first. With `taskmanager.deadman-timeout` it must fit the session:"
        " `max(this, deadman-timeout + this/8) + session/10 <= session timeout`, or loading"
        " refuses (see [architecture.md](architecture.md#timing-chain)).",
        positive,
        setting="jobmanager.fence_after",
        derived_default=(
            f"`taskmanager.fence-after` ({FENCE_AFTER_SHARE:.0%} of the session timeout)"
        ),
    ),
    Option(
        "jobmanager.initialize-timeout",
        to_duration,
        "60s",
        "How long a job's `initialize(ctx)` hook may run (in a child process of the leader, never"
        " inside it) before the job fails with a timeout as its cause.",
        positive,
        setting="jobmanager.initialize_timeout",
    ),
    Option(
        "jobmanager.recovery-parallelism",
        to_int,
        8,
        "How many jobs a new leader recovers at once (job graph reads and initialize hooks).",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="jobmanager.recovery_parallelism",
    ),
    Option(
        "jobmanager.warm-standby",
        to_bool,
        True,
        "Whether a standing-by JobManager keeps every live job's graph pointer and status record"
        " and every execution lease (persistent watches on `jobgraphs/`, `jobs/` and"
        " `executions/`, one re-read per change), so that when it is granted its recovery"
        " reads from ZooKeeper only what that copy cannot vouch for (see"
        " [architecture.md](architecture.md#a-warm-standby)). Off: it reads them all, as"
        " before; the copy costs a standby about 4.5 KB of memory a job.",
        setting="jobmanager.warm_standby",
    ),
    Option(
        "jobmanager.cancel-grace",
        to_duration,
        "10s",
        "After a cancel, how long a runner has to end after SIGTERM (its `finally` blocks run)"
        " before every process of the attempt (its group, its cgroup) is SIGKILLed.",
        positive,
        setting="jobmanager.cancel_grace",
    ),
    Option(
        "jobmanager.replacement-grace",
        to_duration,
        "1s",
        "After an attempt's TaskManager is gone (and its execution lease with it), how long the"
        " leader waits before starting a replacement (DESIGN rule 4).",
        lambda v: None if v >= 0 else "must not be negative",
        setting="jobmanager.replacement_grace",
    ),
    Option(
        "jobmanager.upload.max-size",
        to_size,
        "8GiB",
        "Largest file a job may name (`--py-files`, `--files`, `--archives`, `--jars`; `PUT"
        " /v1/contents/<sha256>`). Uploads stream to blob storage in 1 MiB chunks, so a JobManager"
        " never holds a file in memory whatever this is; an upload over it is refused with 413 and"
        " its connection closed, and nothing is stored. Packed Python environments (venv-pack,"
        " conda-pack) are often hundreds of MB. Any JobManager enforces its own value. See"
        " [dependencies.md](dependencies.md).",
        lambda v: None if v >= 1 else "must be at least one byte",
        setting="jobmanager.upload_max_size",
    ),
    Option(
        "jobmanager.artifact.max-size",
        to_size,
        "64MiB",
        "Largest pipeline (the `.py` file or zipped folder) a submission may carry in its body"
        " (`POST /v1/jobs`, a batch's artifacts in all, a Livy batch's `file`). The body is read"
        " and decoded in the JobManager's memory, base64 and all (a third more), so this stays"
        " small; data and large files travel as named files instead (`jobmanager.upload.max-size`)."
        " A submission over it is refused with 413 and nothing is stored. Any JobManager enforces"
        " its own value.",
        lambda v: None if v >= 1 else "must be at least one byte",
        setting="jobmanager.artifact_max_size",
    ),
    Option(
        "jobmanager.livy.allowed-sources",
        to_str,
        "",
        "Where Livy's `POST /batches` may have the JobManager read the files a batch names"
        " (`file`, `pyFiles`, `files`, `archives`, `jars`): comma-separated local folders"
        " (`/data/jobs`; symlinks and `..` are resolved before the check) and URL prefixes"
        " (`s3://bucket/jobs/`). Empty (the default): none, and such a batch is refused with 400."
        " The JobManager reads them with its own rights and credentials, so allow only what every"
        " submitter may read. See [coming-from.md](coming-from.md#livy-post-batches).",
        setting="jobmanager.livy_allowed_sources",
    ),
    Option(
        "jobmanager.contents.retention",
        to_duration,
        "1h",
        "How long a stored file that no live job names is kept before the leader's garbage"
        " collection removes it (checked every half of this, at most every 10 minutes). A file"
        " uploaded for a submission that has not arrived yet is younger than this and stays; a"
        " file a finished job named is re-uploaded by the next job that names it after it was"
        " removed. Longer: resubmitting the same archive later is more often free; shorter: less"
        " storage.",
        positive,
        setting="jobmanager.contents_retention",
    ),
    Option(
        "jobmanager.events.keep-alive",
        to_duration,
        "15s",
        "How often an idle event stream (`GET /v1/events`) gets a comment line, so that proxies"
        " and load balancers keep it open. The caller's token is verified again at each (through"
        " the token cache, `security.auth` docs): a stream whose token was revoked or has expired"
        " ends within this plus the cache's lifetime. Clients give up on a stream silent for three"
        " times this and reconnect. See [operations.md](operations.md#live-events).",
        positive,
        setting="jobmanager.events_keep_alive",
    ),
    Option(
        "jobmanager.events.buffer",
        to_int,
        "10000",
        "How many job events each JobManager keeps (about 300 bytes each) for streams that resume"
        " with `Last-Event-ID`. A consumer further behind, or resuming from another JobManager's"
        " cursor, gets a `reset` event and re-reads the jobs with a GET instead.",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="jobmanager.events_buffer",
    ),
    Option(
        "jobmanager.doctor.interval",
        to_duration,
        "1h",
        "How often the leader runs `steward doctor`'s examination by itself, so that"
        " `steward_doctor_findings` (and the alerts on it) stays current with nobody asking."
        " A round reads every record of the cluster once (as `steward doctor` does); the first"
        " comes one interval after the JobManager starts. 0 turns the rounds off.",
        lambda v: None if v >= 0 else "must not be negative (0 turns the rounds off)",
        setting="jobmanager.doctor_interval",
    ),
    Option(
        "heartbeat.interval",
        to_duration,
        "1s",
        "How often a TaskManager heartbeats to the leader when nothing changes. Commands reach it"
        " without waiting for the interval: the leader holds each heartbeat up to this long and"
        " answers as soon as there is a command.",
        positive,
        setting="taskmanager.heartbeat_interval",
    ),
    Option(
        "heartbeat.idle-hold",
        to_duration,
        "10s",
        "How long the leader may hold the heartbeat of an idle TaskManager: one whose reports the"
        " leader keeps and which has no start command in flight. Such a TaskManager then sends"
        " one request per this long instead of one per `heartbeat.interval`, while commands still"
        " reach it at once (the held reply answers them) and its changes still go at once (a"
        " heartbeat of their own; new progress within one `heartbeat.interval`). A TaskManager"
        " holds for the shorter of its own and the leader's value (the leader's reply says it),"
        " and for `heartbeat.interval` only with a leader that says none. At least"
        " `heartbeat.interval` (equal: no longer hold) and at most 20 s, so that an idle"
        " TaskManager's heartbeat age stays well under the `StewardTaskManagerSilent` alert's"
        " 30 s. Liveness does not rest on it: a TaskManager is alive as long as its ZooKeeper"
        " session (see [architecture.md](architecture.md#idle-holds)).",
        lambda v: (
            None if 0 < v <= MAX_IDLE_HOLD else f"must be above 0 and at most {MAX_IDLE_HOLD:g}s"
        ),
        setting="taskmanager.heartbeat_idle_hold",
    ),
    Option(
        "heartbeat.progress-interval",
        to_duration,
        "10s",
        "How often a TaskManager sends its attempts' new progress (`ctx.report_progress`) to the"
        " leader: the latest progress of each attempt goes at most once per this long (within it"
        " plus one `heartbeat.interval` of being reported), riding the heartbeat that is due"
        " anyway. A TaskManager whose pipelines report progress all the time then costs the"
        " leader what an idle one does (one request per `heartbeat.idle-hold`), instead of one"
        " heartbeat with every report per `heartbeat.interval`. Changes (a phase, a checkpoint,"
        " a Spark application, an outcome) never wait for it: they go at once. At least"
        " `heartbeat.interval` (equal: progress on every heartbeat, as before this key); see"
        " [architecture.md](architecture.md#busy-heartbeats).",
        positive,
        setting="taskmanager.heartbeat_progress_interval",
    ),
    Option(
        "spark.master",
        to_str,
        "local[*]",
        "Spark master of every attempt unless the job's `spark_conf` sets `spark.master`:"
        " `local[*]`, `spark://host:7077`, `yarn`, `k8s://...`, or a Spark Connect"
        " `sc://host:15002` URL.",
        setting="spark.master",
    ),
)
