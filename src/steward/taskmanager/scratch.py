"""Each attempt's temporary files in a folder of its own, gone with the attempt.

A Spark driver writes its scratch into the JVM's ``java.io.tmpdir`` (``/tmp`` by default):
``spark-<uuid>`` (the context's temporary and added files), ``blockmgr-<uuid>`` (the block
manager's and the shuffle's files: ``spark.local.dir`` defaults to it), ``artifacts-<uuid>``,
and the JNI libraries ``liblz4-java-*.so`` and ``snappy-*.so`` unpacked at their first use;
PySpark's Python side and the pipeline's own code write through ``tempfile`` (``TMPDIR``).
Spark removes its folders in a JVM shutdown hook, which never runs when the driver is
SIGKILLed (a cancel's escalation, the TaskManager's containment of a process group, a
self-fenced TaskManager): a host that runs and cancels pipelines for months fills its disk
with them.

So every runner gets ``<attempt>/tmp`` (a warm spare ``<spare folder>/tmp``) as ``TMPDIR`` and,
appended to ``SPARK_SUBMIT_OPTS`` (which ``spark-submit`` gives the driver's JVM in client and
local mode, the only modes whose driver runs here), ``-Djava.io.tmpdir``. The folder is
removed as soon as the attempt's processes are gone (:mod:`steward.taskmanager.workdir_cleaner`),
not after the attempt folder's retention: the log stays readable, the scratch (up to a whole
shuffle) does not stay. A job that chose its own (``TMPDIR`` in its ``env``, a
``-Djava.io.tmpdir`` in ``SPARK_SUBMIT_OPTS``, or ``spark.local.dir`` and
``spark.driver.extraJavaOptions``, which come after on the JVM's command line) keeps its choice,
and cleaning it is then the job's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SCRATCH_FOLDER = "tmp"
"""An attempt's (or a spare's) temporary files: ``<attempt folder>/tmp``."""
JVM_OPTIONS = "SPARK_SUBMIT_OPTS"
"""The variable ``spark-submit`` adds to the driver JVM's command line."""
_TMPDIR_PROPERTY = "-Djava.io.tmpdir="


def scratch_dir(folder: Path) -> Path:
    """The scratch folder of the attempt (or spare) whose folder is ``folder``."""
    return folder / SCRATCH_FOLDER


def with_scratch(
    env: Mapping[str, str] | None, scratch: Path, job_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``env`` (None: this process's) with ``TMPDIR`` and the driver JVM's ``java.io.tmpdir``
    pointed at ``scratch``, except a ``TMPDIR`` the job's own ``job_env`` sets and a
    ``java.io.tmpdir`` already in ``env``'s ``SPARK_SUBMIT_OPTS`` (the job's or the host's)."""
    result = dict(os.environ if env is None else env)
    if "TMPDIR" not in (job_env or {}):
        result["TMPDIR"] = str(scratch)
    options = result.get(JVM_OPTIONS, "")
    if _TMPDIR_PROPERTY not in options:
        result[JVM_OPTIONS] = f"{options} {_jvm_option(scratch)}".strip()
    return result


def _jvm_option(scratch: Path) -> str:
    option = f"{_TMPDIR_PROPERTY}{scratch}"
    if not any(character.isspace() or character in "\"'\\" for character in option):
        return option
    # spark-submit's launcher splits the variable as a shell would: quoted, escaped.
    escaped = option.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
