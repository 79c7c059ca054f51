"""The table of known configuration keys: each key's converter, default, help, check, field.

The ``high-availability.*`` keys are in keys_ha.py, the processes' in keys_processes.py, the
clients', security's and the rest here; :class:`Option` and the shared checks in option.py.

This is the one list of keys, and the one place each is written: loading rejects any other,
docs/configuration.md's table is generated from it (steward.config.docs), and each option
names the typed field of :mod:`steward.config.settings` that exposes it (``setting=``).
Flink-style names (``high-availability.zookeeper.quorum``); a default of None means the value
is derived from other keys when the configuration is validated (the timing chain).
"""

from __future__ import annotations

from steward.config.keys_ha import HA_OPTIONS
from steward.config.keys_history import HISTORY_OPTIONS
from steward.config.keys_logs import LOG_ARCHIVE_OPTIONS
from steward.config.keys_notifications import NOTIFICATION_OPTIONS
from steward.config.keys_oidc import OIDC_OPTIONS
from steward.config.keys_processes import PROCESS_OPTIONS
from steward.config.keys_proxy_users import PROXY_USER_OPTIONS
from steward.config.keys_rate_limits import RATE_LIMIT_OPTIONS
from steward.config.keys_results import RESULT_OPTIONS
from steward.config.keys_scheduling import SCHEDULING_OPTIONS
from steward.config.keys_teams import TEAM_OPTIONS
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
    *LOG_ARCHIVE_OPTIONS,
    *HISTORY_OPTIONS,
    *NOTIFICATION_OPTIONS,
    *OIDC_OPTIONS,
    *SCHEDULING_OPTIONS,
    *TEAM_OPTIONS,
    *PROXY_USER_OPTIONS,
    *RATE_LIMIT_OPTIONS,
    Option(
        "rest.address",
        to_str,
        "",
        "Comma-separated JobManager URLs that the CLI and `steward.Client` talk to. Empty: the"
        " local cluster of `./.steward` if there is one, else the leader found through ZooKeeper.",
        setting="client.rest_address",
    ),
    Option(
        "rest.ssl.enabled",
        to_bool,
        False,
        "Serve the JobManager's REST API over HTTPS with `rest.ssl.certificate` and"
        " `rest.ssl.key` (TLS 1.2 or newer). The JobManager then advertises"
        " `https://<host>:<port>` in ZooKeeper, so clients and TaskManagers find the scheme with"
        " the address; an `http://` `jobmanager.advertised-address` is refused. Plain HTTP to the"
        " port gets no answer. `steward cluster start --tls` turns it on with a private CA of its"
        " own. See [security.md](security.md#tls).",
        setting="tls.enabled",
    ),
    Option(
        "rest.ssl.certificate",
        to_str,
        "",
        "PEM file of this process's certificate, intermediate CA certificates after it. A"
        " JobManager serves it; it must name (subject alternative names) every host and IP address"
        " clients reach the JobManager by. Every Steward process (and the CLI) also presents it as"
        " its client certificate to a JobManager that requires one (`rest.ssl.client-auth`); it"
        " then needs the `clientAuth` extended key usage too.",
        setting="tls.certificate",
        to_setting=optional_path,
    ),
    Option(
        "rest.ssl.key",
        to_str,
        "",
        "PEM file of the certificate's private key, unencrypted (an encrypted key is refused"
        " rather than prompting for a password). A file other users may read or write is refused"
        " at start, naming the file and `chmod 600` (a group may read it, e.g. `ssl-cert`).",
        setting="tls.key",
        to_setting=optional_path,
    ),
    Option(
        "rest.ssl.ca",
        to_str,
        "",
        "PEM bundle of the CA certificates that the CLI, `steward.Client`, the TaskManagers'"
        " heartbeats, a standby forwarding writes, the local cluster's probes and the testing kit"
        " verify a JobManager's certificate with (and a JobManager verifies client certificates"
        " with, under `rest.ssl.client-auth=require`). Empty: the system's CAs (`/etc/ssl/certs`)."
        " Verification is never off: a certificate that cannot be verified is an error at once,"
        " naming this key.",
        setting="tls.ca",
        to_setting=optional_path,
    ),
    Option(
        "rest.ssl.client-auth",
        to_str,
        "none",
        "`none`: any client may open a TLS connection (who may do what is the tokens' business)."
        " `require`: mutual TLS; a JobManager completes a handshake only with a client whose"
        " certificate a CA of `rest.ssl.ca` signed. `optional`: a JobManager asks for a client"
        " certificate, refuses one it cannot verify, and lets a client without one in (to be"
        " judged by its token); what `security.auth.client-certificates` needs for clients that do"
        " not all have certificates.",
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
        " masters and workers files that are not this machine (OpenSSH; split like a shell command"
        " line). See [operations.md](operations.md#a-cluster-across-hosts).",
        lambda v: None if v.strip() else "must name an SSH client, e.g. ssh",
        setting="cluster.ssh_command",
    ),
    Option(
        "cluster.ssh.options",
        to_str,
        "-o BatchMode=yes -o ConnectTimeout=10",
        "Options given to `cluster.ssh.command` before the host. `BatchMode=yes`: key-based only,"
        " a host that would ask for a password is an error, never a prompt. Add `-i KEY`, `-p"
        " PORT`, `-l USER` or `-F CONFIG` here (or in `~/.ssh/config`).",
        setting="cluster.ssh_options",
    ),
    Option(
        "cluster.remote.python",
        to_str,
        "",
        "The Python that runs Steward on the other hosts of a cluster started over SSH. Empty:"
        " the same path as this machine's (Steward installed alike on every host).",
        setting="cluster.remote_python",
    ),
    Option(
        "log.format",
        to_str,
        "text",
        "`text`: log records as lines of text. `json`: one JSON object per line (`ts`, `level`,"
        " `logger`, `message`, `process`, `pid`, and `job`, `attempt`, `epoch`, `taskmanager` when"
        " the record names them; `exc` with a traceback), from every Steward process: JobManagers,"
        " TaskManagers, their attempts' runners (they inherit `STEWARD_LOG_FORMAT`) and the CLI."
        " See [operations.md](operations.md#structured-logs).",
        lambda v: None if v in ("text", "json") else "must be text or json",
        setting="log.format",
    ),
    Option(
        "state.checkpoints.num-retained",
        to_int,
        3,
        "How many completed checkpoints Steward keeps per job; older ones are removed (pointer"
        " first, then blob).",
        lambda v: None if v >= 1 else "must be at least 1",
        setting="storage.checkpoints_retained",
    ),
    Option(
        "security.auth.enabled",
        to_bool,
        True,
        "Every route of every JobManager except `/healthz` and `/readyz` (the OpenAPI document"
        " and `/docs` included) requires `Authorization: Bearer <token>`: none, an unknown,"
        " revoked or expired token is answered 401 before anything else is looked at; a role that"
        " may not do what is asked is answered 403. `false`: no credential is asked for and"
        " everyone is an admin; for a trusted, isolated network only (each JobManager logs a"
        " warning at start). See [security.md](security.md#authentication-and-roles).",
        setting="security.auth_enabled",
    ),
    Option(
        "security.auth.client-certificates",
        to_bool,
        False,
        "A client certificate the TLS handshake verified (`rest.ssl.client-auth` `optional` or"
        " `require`) is a credential, for machines: its subject's CN names the caller, its O is"
        " the role (`viewer`, `submitter`, `admin`); a certificate without such an O is none"
        " (401). A bearer token, when sent, decides instead. A JobManager with this key whose TLS"
        " does not ask for client certificates refuses to start. See"
        " [security.md](security.md#client-certificates-for-machines).",
        setting="security.client_certificates",
    ),
    Option(
        "security.internal.token-file",
        to_str,
        "",
        "File (mode `0600`) holding the cluster's internal credential, distinct from users'"
        " tokens: each TaskManager sends it with its heartbeats, and a JobManager accepts"
        " `/internal/*` only with it (users' tokens are refused there, and it is refused"
        " everywhere else). Required by JobManagers and TaskManagers while `security.auth.enabled`"
        " (a JobManager without it refuses to start, naming this key). `steward cluster start`"
        " writes a random one to `.steward/internal.token` and sets this key for its processes;"
        " elsewhere copy that file to each host.",
        setting="security.internal_token_file",
    ),
    Option(
        "security.audit.file",
        to_str,
        "",
        "File a JobManager also appends its audit log to: one JSON line per submit, cancel, token"
        " create and revoke, with who (name, role, token id, never the token), what, when, from"
        " which address and the outcome. Empty: the lines go to the JobManager's own log only"
        " (logger `steward.audit`).",
        setting="security.audit_file",
    ),
    Option(
        "client.token-file",
        to_str,
        "",
        "File holding the token the CLI and `steward.Client` send. Used when no token is given"
        " explicitly (`--token`, `Client(token=...)`) and `$STEWARD_TOKEN` is unset; empty: the"
        " local cluster's `.steward/admin.token` when the command runs in its folder.",
        setting="client.token_file",
    ),
)

BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}
"""Every option by its key."""

__all__ = ["BY_KEY", "FENCE_AFTER_SHARE", "MIN_ATTEMPT_LOG_SIZE", "OPTIONS", "Option"]
