"""spark-submit's options that each set one Spark key: the table ``steward submit`` and
``POST /v1/jobs`` share, so both mean by ``--driver-memory 2g`` what spark-submit means.

The REST API takes them in a submission's ``options`` object, under spark-submit's long name
(``"driver-memory"``) or as Livy spells its batch fields (``"driverMemory"``); an option wins
over the same key in ``spec.spark_conf``, as on spark-submit's command line. The files options
(``--py-files``, ``--files``, ``--archives``, ``--jars``) are not here: their files travel as
the spec's ``dependencies`` (uploaded first, see :mod:`steward.client.client`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from steward.errors import JobRejectedError

SPARK_OPTION_KEYS: Mapping[str, str] = {
    "master": "spark.master",
    "name": "spark.app.name",
    "packages": "spark.jars.packages",
    "exclude-packages": "spark.jars.excludes",
    "repositories": "spark.jars.repositories",
    "driver-memory": "spark.driver.memory",
    "driver-cores": "spark.driver.cores",
    "driver-java-options": "spark.driver.extraJavaOptions",
    "driver-class-path": "spark.driver.extraClassPath",
    "driver-library-path": "spark.driver.extraLibraryPath",
    "executor-memory": "spark.executor.memory",
    "executor-cores": "spark.executor.cores",
    "num-executors": "spark.executor.instances",
    "total-executor-cores": "spark.cores.max",
    "queue": "spark.yarn.queue",
}
"""spark-submit's option (without ``--``) -> the Spark key it sets (its SparkSubmitArguments)."""

DEPLOY_MODE = "deploy-mode"
DEPLOY_MODE_KEY = "spark.submit.deployMode"
CLUSTER_MODE_REFUSED = (
    "--deploy-mode cluster is not supported: Steward runs the driver on one of its"
    " TaskManagers (client mode) because that is where it supervises it (an execution lease,"
    " restarts, adoption on failover); in cluster mode the driver would run out of Steward's"
    " reach. Leave --deploy-mode out or use --deploy-mode client."
)


def option_name(raw: str) -> str:
    """``--driver-memory``, ``driver_memory`` and ``driverMemory`` are ``driver-memory``."""
    dashed = re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", raw.removeprefix("--"))
    return dashed.replace("_", "-").lower()


def check_deploy_mode(mode: str | None) -> None:
    """Refuse cluster mode (with the reason) and anything that is not a deploy mode."""
    if mode is None or mode == "client":
        return
    if mode == "cluster":
        raise JobRejectedError(CLUSTER_MODE_REFUSED)
    raise JobRejectedError(f"--deploy-mode must be client (or cluster, refused), not {mode!r}")


def apply(spark_conf: Mapping[str, str], options: Mapping[str, str]) -> dict[str, str]:
    """``spark_conf`` with ``options`` (spark-submit names) applied over it; raises
    JobRejectedError for an unknown option or cluster deploy mode, naming it."""
    conf = dict(spark_conf)
    check_deploy_mode(conf.get(DEPLOY_MODE_KEY))
    for raw, value in options.items():
        name = option_name(raw)
        if name == DEPLOY_MODE:
            check_deploy_mode(value)
            continue
        key = SPARK_OPTION_KEYS.get(name)
        if key is None:
            known = ", ".join(sorted([*SPARK_OPTION_KEYS, DEPLOY_MODE]))
            raise JobRejectedError(
                f"unknown spark-submit option {raw!r} (known: {known}; files travel as the"
                " spec's dependencies, other settings in spec.spark_conf)"
            )
        conf[key] = value
    return conf
