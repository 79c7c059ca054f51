"""The table of known configuration keys: each key's converter, default, check and help text.

The ``high-availability.*`` keys are in keys_ha.py, the processes' in keys_processes.py, the
clients', security's and the rest here; :class:`Option` and the shared checks in option.py.

This is the one list of keys, and the one place each is written: loading rejects any other,
docs/configuration.md documents each (a test compares them), and each option names the typed
field of :mod:`steward.config.settings` that exposes it (``setting=``).
Flink-style names (``high-availability.zookeeper.quorum``); a default of None means the value
is derived from other keys when the configuration is validated (the timing chain).
"""

from __future__ import annotations

from steward.config.keys_ha import HA_OPTIONS
from steward.config.keys_processes import PROCESS_OPTIONS
from steward.config.keys_results import RESULT_OPTIONS
from steward.config.option import (
    FENCE_AFTER_SHARE,
    MIN_ATTEMPT_LOG_SIZE,
    Option,
    optional_path,
)
from steward.config.units import to_bool, to_int, to_str

OPTIONS: tuple[Option, ...] = (
    *HA_OPTIONS,
    *PROCESS_OPTIONS,
    *RESULT_OPTIONS,
    Option(
        "rest.address",
        to_str,
        "",
        "Comma-separated JobManager URLs the CLI and Client talk to. Empty: the leader found"
        " through ZooKeeper, or the local cluster of ./.steward.",
        setting="client.rest_address",
    ),
    Option(
        "rest.ssl.enabled",
        to_bool,
        False,
        "Serve the JobManager's REST API over HTTPS with rest.ssl.certificate and"
        " rest.ssl.key; it then advertises an https:// address, which clients and"
        " TaskManagers find in ZooKeeper. `steward cluster start --tls` turns it on with a"
        " private CA of the cluster's own.",
        setting="tls.enabled",
    ),
    Option(
        "rest.ssl.certificate",
        to_str,
        "",
        "PEM file of this process's certificate (intermediate CAs after it). A JobManager"
        " serves it; every process also presents it as its client certificate where a"
        " JobManager requires one (rest.ssl.client-auth).",
        setting="tls.certificate",
        to_setting=optional_path,
    ),
    Option(
        "rest.ssl.key",
        to_str,
        "",
        "PEM file of the certificate's private key, unencrypted. Refused if other users may"
        " read it (chmod 600).",
        setting="tls.key",
        to_setting=optional_path,
    ),
    Option(
        "rest.ssl.ca",
        to_str,
        "",
        "PEM bundle of the CA certificates that the CLI, steward.Client, TaskManagers and"
        " standby JobManagers verify a JobManager's certificate with (and a JobManager a"
        " client's, under rest.ssl.client-auth=require). Empty: the system's CAs.",
        setting="tls.ca",
        to_setting=optional_path,
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
        setting="tls.client_auth",
    ),
    Option(
        "cluster.ssh.command",
        to_str,
        "ssh",
        "The SSH client `steward cluster start|status|stop` runs to reach the hosts of its"
        " masters and workers files that are not this machine (OpenSSH; split like a shell"
        " command line).",
        lambda v: None if v.strip() else "must name an SSH client, e.g. ssh",
        setting="cluster.ssh_command",
    ),
    Option(
        "cluster.ssh.options",
        to_str,
        "-o BatchMode=yes -o ConnectTimeout=10",
        "Options given to cluster.ssh.command before the host. BatchMode=yes: key-based only,"
        " a host that would ask for a password is an error, never a prompt. Add -i KEY,"
        " -p PORT, -l USER or -F CONFIG here (or in ~/.ssh/config).",
        setting="cluster.ssh_options",
    ),
    Option(
        "cluster.remote.python",
        to_str,
        "",
        "The Python that runs Steward on the other hosts of a cluster started over SSH."
        " Empty: the same path as this machine's (Steward installed alike on every host).",
        setting="cluster.remote_python",
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
        setting="log.format",
    ),
    Option(
        "state.checkpoints.num-retained",
        to_int,
        3,
        "How many completed checkpoints are kept per job; older ones are removed.",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="storage.checkpoints_retained",
    ),
    Option(
        "security.auth.enabled",
        to_bool,
        True,
        "Every JobManager route but /healthz and /readyz requires a bearer token (401 without),"
        " and roles decide what it may do (403). false: anyone who reaches a JobManager may do"
        " anything; only on a trusted network (logged as a warning at start).",
        setting="security.auth_enabled",
    ),
    Option(
        "security.auth.client-certificates",
        to_bool,
        False,
        "A verified client certificate (mutual TLS: rest.ssl.client-auth optional or require)"
        " is a credential, for machines: its subject's CN names the caller, its O is the role"
        " (viewer, submitter or admin). A bearer token, when sent, decides instead.",
        setting="security.client_certificates",
    ),
    Option(
        "security.internal.token-file",
        to_str,
        "",
        "File (mode 0600) holding the cluster's internal credential: TaskManagers send it with"
        " every heartbeat and JobManagers accept /internal/* only with it. Required by"
        " JobManagers and TaskManagers while security.auth.enabled. `steward cluster start`"
        " writes .steward/internal.token and sets this key.",
        setting="security.internal_token_file",
    ),
    Option(
        "security.audit.file",
        to_str,
        "",
        "File a JobManager appends its audit log to (one JSON line per submit, cancel, token"
        " create and revoke) besides its own log. Empty: its log only.",
        setting="security.audit_file",
    ),
    Option(
        "client.token-file",
        to_str,
        "",
        "File holding the token the CLI and Client send, when neither --token nor"
        " $STEWARD_TOKEN gives one. Empty: the local cluster's .steward/admin.token, if any.",
        setting="client.token_file",
    ),
)

BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}
"""Every option by its key."""

__all__ = ["BY_KEY", "FENCE_AFTER_SHARE", "MIN_ATTEMPT_LOG_SIZE", "OPTIONS", "Option"]
