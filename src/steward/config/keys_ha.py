"""The ``high-availability.*`` keys: ZooKeeper, the cluster's identity, its storage."""

from __future__ import annotations

from steward.config.option import (
    Option,
    cluster_id,
    positive,
    quorum,
    zk_path,
)
from steward.config.units import to_bool, to_duration, to_str

HA_OPTIONS: tuple[Option, ...] = (
    Option(
        "high-availability.zookeeper.quorum",
        to_str,
        "127.0.0.1:2181",
        "Comma-separated host:port list of the ZooKeeper servers.",
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
        "Name of this cluster; its state lives in <root>/<cluster-id>.",
        cluster_id,
        setting="zookeeper.cluster_id",
    ),
    Option(
        "high-availability.zookeeper.session-timeout",
        to_duration,
        "10s",
        "ZooKeeper session timeout. A crashed leader's host is declared dead after this long;"
        " shorter means faster failover and more false alarms on a slow network.",
        positive,
        setting="zookeeper.session_timeout",
    ),
    Option(
        "high-availability.zookeeper.connection-timeout",
        to_duration,
        "15s",
        "How long a process waits for its first ZooKeeper connection before giving up.",
        positive,
        setting="zookeeper.connection_timeout",
    ),
    Option(
        "high-availability.zookeeper.tolerate-suspended-connections",
        to_bool,
        True,
        "Keep leadership while the connection is SUSPENDED and drop it only when the session is"
        " LOST. Safe because every leader write is fenced by its epoch (rule 5).",
        setting="zookeeper.tolerate_suspended",
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
        setting="zookeeper.client_acl",
    ),
    Option(
        "high-availability.zookeeper.digest-file",
        to_str,
        "",
        "File holding the cluster's ZooKeeper digest credential, one line user:password (mode"
        " 0600; its content is never logged). Required by JobManagers and TaskManagers when"
        " client.acl is creator; a client uses it to find the leader through ZooKeeper."
        " `steward cluster start` writes .steward/zookeeper.digest and sets this key.",
        setting="zookeeper.digest_file",
    ),
    Option(
        "high-availability.crash-detection",
        to_duration,
        "100ms",
        "A standby that finds the leader's REST port refusing every connection for this long"
        " removes the leader's latch, so a crashed leader process is replaced without waiting"
        " for its session to expire. Only a refused connection counts (a frozen process or a"
        " dead host is left to the session timeout); fencing makes a wrong guess harmless."
        " 0 turns it off.",
        lambda v: None if v >= 0 else "must not be negative",
        setting="zookeeper.crash_detection",
    ),
    Option(
        "high-availability.storage-dir",
        to_str,
        "file://./.steward/storage",
        "fsspec URL of the blob storage for job graphs and checkpoint metadata (file://, s3://,"
        " hdfs://, gs://). A relative file:// path is resolved against the working directory.",
        setting="storage.storage_dir",
    ),
)
