"""The ``high-availability.*`` keys: ZooKeeper, the cluster's identity, its storage."""

from __future__ import annotations

from steward.config.option import (
    Option,
    cluster_id,
    positive,
    quorum,
    zk_path,
)
from steward.config.units import to_bool, to_duration, to_int, to_str

HA_OPTIONS: tuple[Option, ...] = (
    Option(
        "high-availability.zookeeper.quorum",
        to_str,
        "127.0.0.1:2181",
        "Comma-separated `host:port` list of the ZooKeeper servers.",
        quorum,
        setting="zookeeper.quorum",
    ),
    Option(
        "high-availability.zookeeper.root",
        to_str,
        "/steward",
        "Root znode under which every Steward cluster keeps its state.",
        zk_path,
        setting="zookeeper.root",
    ),
    Option(
        "high-availability.cluster-id",
        to_str,
        "default",
        "Name of this cluster; its state lives in `<root>/<cluster-id>`. Several clusters can"
        " share one ZooKeeper with different ids.",
        cluster_id,
        setting="zookeeper.cluster_id",
    ),
    Option(
        "high-availability.zookeeper.session-timeout",
        to_duration,
        "10s",
        "ZooKeeper session timeout. When a leader's host dies, a standby may take over only after"
        " this long. Shorter: faster failover, more false alarms on a slow or paused process (GC,"
        " swap). The servers clamp it to their `minSessionTimeout`..`maxSessionTimeout` (the"
        " managed ZooKeeper allows 1s..120s); a JobManager or TaskManager reads the timeout it was"
        " granted after connecting, warns when it differs, and refuses to start when it is too"
        " short for `taskmanager.fence-after`, `taskmanager.deadman-timeout` and"
        " `jobmanager.fence-after`.",
        positive,
        setting="zookeeper.session_timeout",
    ),
    Option(
        "high-availability.zookeeper.connection-timeout",
        to_duration,
        "15s",
        "How long a process waits for its first ZooKeeper connection before it gives up with an"
        " error.",
        positive,
        setting="zookeeper.connection_timeout",
    ),
    Option(
        "high-availability.zookeeper.tolerate-suspended-connections",
        to_bool,
        True,
        "Keep leadership while the ZooKeeper connection is SUSPENDED; give it up only when the"
        " session is LOST. Safe because every leader write is fenced by its epoch (DESIGN rule 5),"
        " and it is what makes the loss of one ZooKeeper server cost nothing (seed 001). `false`"
        " gives Flink's old behaviour: leadership drops on every connection hiccup.",
        setting="zookeeper.tolerate_suspended",
    ),
    Option(
        "high-availability.zookeeper.client.acl",
        to_str,
        "creator",
        "Who may read and change the cluster's state under `<root>/<cluster-id>` (Flink's key and"
        " values). `creator`: every JobManager and TaskManager authenticates with the digest"
        " credential of `high-availability.zookeeper.digest-file` and creates every znode with the"
        ' ACL "everything to this credential, nothing to anyone else"; a process without it'
        " refuses to start, naming this key. The state of an existing cluster that was created"
        " world-open is migrated (the ACL set on each znode) by the first process that starts with"
        " the credential. `open`: world-open znodes and no credential, as before; logged as a"
        " warning. See [security.md](security.md#zookeeper).",
        lambda v: None if v in ("creator", "open") else "must be creator or open",
        setting="zookeeper.client_acl",
    ),
    Option(
        "high-availability.zookeeper.digest-file",
        to_str,
        "",
        "File holding the cluster's ZooKeeper digest credential: one line `user:password`, mode"
        " `0600` (a file others may read is used with a warning). Its content is never logged."
        " `steward cluster start` writes a random one to `.steward/zookeeper.digest` and sets this"
        " key for its processes and for every command run in the folder; elsewhere, copy that file"
        " to each host. A client (`steward`, `steward.Client`) uses it only to find the leader"
        " through ZooKeeper; without it, it says that the cluster's ZooKeeper state is protected"
        " (or set `rest.address`). A relative path is resolved against the working directory.",
        setting="zookeeper.digest_file",
    ),
    Option(
        "high-availability.crash-detection",
        to_duration,
        "50ms",
        "Fast crash detection. A standby probes the published leader's REST port (a TCP connect"
        " every 50 ms, every 10 ms once one is refused); when every probe has been refused for"
        " this long (and at least three times), the leader's process is dead while its host lives,"
        " and the standby deletes that leader's latch node so the next contender is granted at"
        " once instead of after the session timeout. Only a refusal counts, and only from an"
        " address that accepted one of this standby's probes before (a wildcard such as `0.0.0.0`,"
        " or another host's loopback address, names nobody from here and is never acted on): a"
        " frozen leader (its kernel still accepts connections), a dead host or a partition"
        " (timeouts) wait for the session timeout as before. A wrong guess costs only a failover:"
        " the new grant bumps the epoch and fences the old leader (DESIGN rules 1 and 2). Shorter:"
        " faster takeover after a crash; longer: more patience with a leader that restarts its"
        " REST server (a JobManager never closes its port while it runs). A standby answers"
        " `/readyz` 200 only once its detector has seen the leader accept a probe. `0` turns it"
        " off.",
        lambda v: None if v >= 0 else "must not be negative",
        setting="zookeeper.crash_detection",
    ),
    Option(
        "high-availability.record-format",
        to_int,
        2,
        "The format of the records a leader writes per live job (`jobs/<job-id>/status` and"
        " `jobgraphs/<job-id>`). `2`: short keys, no job id, hashes in base64url (about 200 B less"
        " ZooKeeper per running job). `1`: the format of releases before 2026-11-28, which cannot"
        ' read format 2 and refuse it ("schema 2 was written by a newer Steward"). Every process'
        " of this release reads both. A new cluster keeps the default; a rolling upgrade from an"
        " older release sets `1` until every process runs this release, then `2` and rolls again"
        " (see [operations.md](operations.md#record-format)).",
        lambda v: None if v in (1, 2) else "must be 1 or 2",
        setting="zookeeper.record_format",
    ),
    Option(
        "high-availability.storage-dir",
        to_str,
        "file://./.steward/storage",
        "fsspec URL of the blob storage for job graphs and checkpoint metadata: `file://`,"
        " `s3://`, `hdfs://`, `gs://`, ... (install the fsspec driver, e.g. `s3fs`). A relative"
        " local path is resolved against the working directory at start-up, so every process must"
        " agree on it: use an absolute path or a shared filesystem in a real deployment.",
        setting="storage.storage_dir",
    ),
)
