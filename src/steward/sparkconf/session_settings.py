"""The attempt's Spark settings, also for sessions that user code builds itself.

spark-submit hands a script its master and settings through the JVM it launches: PySpark's
``SparkSession.builder.getOrCreate()`` and ``SparkContext(...)`` start the JVM with
``bin/spark-submit pyspark-shell``, which reads ``$SPARK_CONF_DIR/spark-defaults.conf``.
The runner does the same before any user code runs (:func:`export`): it writes the
attempt's settings into a ``spark-defaults.conf`` of its own folder, on top of the
TaskManager's own Spark defaults (whose other files, such as ``log4j2.properties``, are
linked beside it), and points ``SPARK_CONF_DIR`` there. So whatever builds the session (the
SDK's ``ctx.spark`` or the user's own builder) gets, with spark-submit's precedence:

    Spark's defaults < the host's spark-defaults.conf < the job (master, name, spark_conf,
    dependencies) < what the code itself sets on its builder

and since there is one JVM per attempt, ``ctx.spark`` and a self-built session are the same
session (``getOrCreate`` returns the active one). For Spark Connect there is no local JVM:
``SPARK_REMOTE`` names the server instead, which is what PySpark's builder reads.

This module does not import pyspark.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from steward.sparkconf.event_log import event_log_conf
from steward.wire.redaction import DEFAULT as DEFAULT_RULE
from steward.wire.runner_protocol import LaunchDocument
from steward.wire.warm import APP_NAME, CONNECT_SCHEME, DEFAULT_CONF, SPARK_MASTER

log = logging.getLogger(__name__)

CONF_FOLDER = "spark-conf"
DEFAULTS_FILE = "spark-defaults.conf"
_LINE = re.compile(r"^\s*([^#!\s][^\s=:]*)\s*[=:\s]\s*(.*?)\s*$")


def app_name(job_id: str, attempt: int) -> str:
    """The Spark application name of an attempt whose job sets none."""
    return f"steward-{job_id}-{attempt}"


def settings(launch: LaunchDocument, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """What the attempt's session is built with: Steward's defaults, the job's ``spark_conf``,
    ``extra`` (the dependencies' settings), the app name and the master.

    The event log the TaskManager asks for comes under the job's own ``spark.eventLog.*``; a
    Spark Connect server writes its own (its session cannot change a JVM's settings)."""
    connect = launch.spark_master.startswith(CONNECT_SCHEME)
    conf = {**DEFAULT_CONF, **event_log_conf(None if connect else launch.event_log_dir)}
    conf.update({**launch.spec.spark_conf, **extra})
    conf.setdefault(APP_NAME, launch.spec.name or app_name(launch.job_id, launch.attempt))
    conf[SPARK_MASTER] = launch.spark_master
    return conf


def export(
    conf: Mapping[str, str],
    folder: Path,
    environ: MutableMapping[str, str] = os.environ,
    remote: str | None = None,
) -> Path:
    """Make ``conf`` the defaults of every session this process starts; returns the folder.

    ``remote`` is the ``sc://`` URL a Spark Connect session must use (it may carry a
    session id the master in ``conf`` does not).
    """
    master = conf.get(SPARK_MASTER, "")
    if master.startswith(CONNECT_SCHEME):
        environ["SPARK_REMOTE"] = remote or master
        log.info("sessions of this attempt connect to %s", DEFAULT_RULE.text(master))
        return folder
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = _host_conf_dir(environ)
    merged = {**_read_defaults(base / DEFAULTS_FILE), **conf} if base else dict(conf)
    if base is not None:
        _link_other_files(base, folder)
    # The job's settings may hold secrets: the file is this user's alone.
    descriptor = os.open(folder / DEFAULTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # also when an earlier run left the file
    with os.fdopen(descriptor, "w", encoding="utf-8") as defaults:
        defaults.write(render(merged))
    environ["SPARK_CONF_DIR"] = str(folder)
    environ.pop("SPARK_REMOTE", None)
    log.info("spark defaults written path=%s keys=%d", folder / DEFAULTS_FILE, len(merged))
    return folder


def render(conf: Mapping[str, str]) -> str:
    """``conf`` in the properties format Spark reads spark-defaults.conf with."""
    lines = ["# Written by Steward for this attempt: the job's settings over the host's.\n"]
    lines += [f"{_escape(key, True)}={_escape(value, False)}\n" for key, value in conf.items()]
    return "".join(lines)


def _escape(text: str, is_key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif (is_key and char in " =:#!") or (not is_key and index == 0 and char in " #!"):
            out.append("\\" + char)
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _host_conf_dir(environ: Mapping[str, str]) -> Path | None:
    """The Spark conf folder this host's spark-submit would read, if there is one."""
    configured = environ.get("SPARK_CONF_DIR")
    if configured:
        return Path(configured) if Path(configured).is_dir() else None
    home = environ.get("SPARK_HOME")
    if home and (Path(home) / "conf").is_dir():
        return Path(home) / "conf"
    return None


def _read_defaults(path: Path) -> dict[str, str]:
    """The simple ``key value`` lines of a spark-defaults.conf (comments and blanks skipped)."""
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _LINE.match(line)
        if match and match.group(1).startswith("spark."):
            found[match.group(1)] = match.group(2)
    return found


def _link_other_files(base: Path, folder: Path) -> None:
    for entry in base.iterdir():
        target = folder / entry.name
        if entry.name == DEFAULTS_FILE or target.exists() or target.is_symlink():
            continue
        try:
            target.symlink_to(entry.resolve())
        except OSError as exc:
            log.warning("could not link %s into the attempt's Spark conf: %s", entry, exc)
