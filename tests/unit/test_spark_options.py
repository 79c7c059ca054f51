"""spark-submit's options by name, as the REST API takes them (the CLI shares the table)."""

from __future__ import annotations

import pytest

from steward.errors import JobRejectedError
from steward.wire.spark_options import SPARK_OPTION_KEYS, apply, option_name


@pytest.mark.parametrize(
    "raw", ["driver-memory", "--driver-memory", "driverMemory", "driver_memory", "DriverMemory"]
)
def test_every_spelling_names_the_same_option(raw: str) -> None:
    assert option_name(raw) == "driver-memory"


def test_each_option_sets_the_key_spark_submit_sets() -> None:
    assert SPARK_OPTION_KEYS["num-executors"] == "spark.executor.instances"
    assert SPARK_OPTION_KEYS["total-executor-cores"] == "spark.cores.max"
    assert SPARK_OPTION_KEYS["packages"] == "spark.jars.packages"
    assert SPARK_OPTION_KEYS["exclude-packages"] == "spark.jars.excludes"


def test_options_win_over_spark_conf_and_leave_the_rest() -> None:
    conf = {"spark.executor.memory": "1g", "spark.sql.shuffle.partitions": "8"}
    applied = apply(conf, {"executorMemory": "4g", "queue": "etl"})
    assert applied == {
        "spark.executor.memory": "4g",
        "spark.sql.shuffle.partitions": "8",
        "spark.yarn.queue": "etl",
    }
    assert conf["spark.executor.memory"] == "1g"  # the caller's dict is untouched


def test_client_deploy_mode_is_accepted_and_sets_nothing() -> None:
    assert apply({}, {"deploy-mode": "client"}) == {}


@pytest.mark.parametrize(
    ("conf", "options"),
    [({}, {"deployMode": "cluster"}), ({"spark.submit.deployMode": "cluster"}, {})],
)
def test_cluster_deploy_mode_is_refused_with_the_reason(
    conf: dict[str, str], options: dict[str, str]
) -> None:
    with pytest.raises(JobRejectedError, match="client mode"):
        apply(conf, options)


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(JobRejectedError, match=r"'pyFiles'.*dependencies"):
        apply({}, {"pyFiles": "a.zip"})
