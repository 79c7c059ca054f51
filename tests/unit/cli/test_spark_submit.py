"""spark-submit's command line read into a plan: each option's Spark key, where words go,
which setting wins, what is refused and why, and the properties file.

Pure parsing: no cluster, no client; files named are real files under ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from steward.cli.properties import parse_properties
from steward.cli.spark_submit import HelpRequested, read_command_line
from steward.cli.submit_plan import CLUSTER_MODE_REFUSED, describe, parse
from steward.wire.jobs import ExponentialDelayRestart, JobKind, NoRestart, ProgramKind


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("app.py", "lib.py", "util.zip", "data.csv", "env.tar.gz", "x.jar", "y.jar"):
        Path(name).write_text("x")


# ---------------------------------------------------------------- each option's Spark key


@pytest.mark.parametrize(
    ("option", "value", "key"),
    [
        ("--master", "yarn", "spark.master"),
        ("--master", "local[4]", "spark.master"),
        ("--master", "k8s://https://api:6443", "spark.master"),
        ("--master", "spark://a:7077,b:7077", "spark.master"),
        ("--packages", "org.apache.spark:spark-avro_2.13:4.0.0", "spark.jars.packages"),
        ("--repositories", "https://repo.example/maven", "spark.jars.repositories"),
        ("--exclude-packages", "com.x:y", "spark.jars.excludes"),
        ("--driver-memory", "2g", "spark.driver.memory"),
        ("--driver-cores", "2", "spark.driver.cores"),
        ("--driver-java-options", "-Dx=1 -XX:+UseG1GC", "spark.driver.extraJavaOptions"),
        ("--driver-class-path", "/opt/a.jar:/opt/b.jar", "spark.driver.extraClassPath"),
        ("--driver-library-path", "/opt/native", "spark.driver.extraLibraryPath"),
        ("--executor-memory", "4G", "spark.executor.memory"),
        ("--executor-cores", "4", "spark.executor.cores"),
        ("--num-executors", "10", "spark.executor.instances"),
        ("--total-executor-cores", "16", "spark.cores.max"),
    ],
)
def test_each_option_sets_the_spark_key_spark_submit_sets(
    option: str, value: str, key: str
) -> None:
    assert parse([option, value, "app.py"]).spark_conf == {key: value}
    assert parse([f"{option}={value}", "app.py"]).spark_conf == {key: value}


def test_queue_names_the_steward_queue_not_yarn_s() -> None:
    plan = parse(["--queue", "etl", "--priority", "-3", "--max-concurrent", "2", "app.py"])
    assert (plan.queue, plan.priority, plan.max_concurrent, plan.spark_conf) == ("etl", -3, 2, {})


def test_a_priority_that_is_not_a_whole_number_is_refused() -> None:
    with pytest.raises(click.BadParameter, match="whole number") as refused:
        parse(["--priority", "high", "app.py"])
    assert refused.value.param_hint == "--priority"


def test_conf_pairs_accumulate_and_split_at_the_first_equals_sign() -> None:
    plan = parse(["--conf", "spark.a=1", "-c", "spark.b=x=y", "--conf=spark.c=", "app.py"])
    assert plan.spark_conf == {"spark.a": "1", "spark.b": "x=y", "spark.c": ""}


def test_name_names_the_job_and_the_application() -> None:
    assert parse(["--name", "nightly", "app.py"]).name == "nightly"
    assert parse(["--conf", "spark.app.name=from-conf", "app.py"]).name == "from-conf"
    plan = parse(["--conf", "spark.app.name=from-conf", "--name", "nightly", "app.py"])
    assert (plan.name, plan.spark_conf) == ("nightly", {})


def test_files_options_take_comma_separated_local_files() -> None:
    plan = parse(
        ["--py-files", "lib.py,util.zip", "--files", "data.csv,", "--jars", "x.jar,y.jar",
         "--archives", "env.tar.gz#env,util.zip", "app.py"]
    )  # fmt: skip
    assert plan.py_files == (Path("lib.py"), Path("util.zip"))
    assert plan.files == (Path("data.csv"),)
    assert plan.jars == (Path("x.jar"), Path("y.jar"))
    assert plan.archives == ("env.tar.gz#env", "util.zip")
    assert plan.spark_conf == {}


def test_a_file_url_is_a_local_file(tmp_path: Path) -> None:
    plan = parse(["--py-files", f"file://{tmp_path}/lib.py", "app.py"])
    assert plan.py_files == (tmp_path / "lib.py",)


def test_steward_options_keep_working() -> None:
    Path("requirements.txt").write_text("requests\n")
    plan = parse(
        ["app.py", "--detach", "--json", "--job-id", "j1", "--slots", "2", "--restart", "none",
         "--entrypoint", "run", "--kind", "streaming", "--label", "team=data", "--label", "x=1",
         "--requirements", "requirements.txt", "--sdk", "--", "a"]
    )  # fmt: skip
    assert (plan.detach, plan.as_json, plan.job_id, plan.slots) == (True, True, "j1", 2)
    assert (plan.restart, plan.entrypoint, plan.kind) == (NoRestart(), "run", JobKind.STREAMING)
    assert plan.labels == {"team": "data", "x": "1"}
    assert plan.requirements == Path("requirements.txt")
    assert (plan.program, plan.args) == (ProgramKind.SDK, ("a",))


@pytest.mark.parametrize(
    ("words", "program"),
    [
        (["app.py"], None),
        (["--script", "app.py"], ProgramKind.SCRIPT),
        (["--sdk", "app.py"], ProgramKind.SDK),
        (["--program", "auto", "app.py"], ProgramKind.AUTO),
        (["--program=script", "--script", "app.py"], ProgramKind.SCRIPT),
    ],
)
def test_the_program_override(words: list[str], program: ProgramKind | None) -> None:
    assert parse(words).program == program


def test_restart_parses_as_before() -> None:
    plan = parse(["app.py", "--restart", "exponential-delay:max=5m"])
    assert plan.restart == ExponentialDelayRestart(max=300.0)


# ---------------------------------------------------------------- where words go


@pytest.mark.parametrize(
    ("words", "args"),
    [
        # spark-submit: everything after the file is the application's, even option-like words
        (["--master", "local", "app.py", "--name", "x", "--verbose"], ["--name", "x", "--verbose"]),
        (["--master", "local[2]", "app.py", "in", "--", "x"], ["in", "--", "x"]),
        (["--verbose", "app.py"], []),
        # Steward's form: options anywhere before "--"
        (["app.py", "--detach", "--", "--ticks", "2"], ["--ticks", "2"]),
        (["--detach", "app.py", "--json", "--", "a", "--", "b"], ["a", "--", "b"]),
        (["--master", "local", "app.py", "--detach", "--", "a"], ["a"]),
        # the file first: options after it up to the first word that is not one
        (["app.py", "in", "out"], ["in", "out"]),
        (["app.py", "--detach", "in", "--verbose"], ["in", "--verbose"]),
        (["app.py", "-1", "x"], ["-1", "x"]),
        (["app.py", "-"], ["-"]),
    ],
)  # fmt: skip
def test_where_the_applications_arguments_start(words: list[str], args: list[str]) -> None:
    line = read_command_line(words)
    assert (line.pipeline, line.args) == ("app.py", args)


def test_options_after_the_file_of_a_spark_submit_line_are_not_steward_options() -> None:
    plan = parse(["--master", "local", "app.py", "--detach", "--name", "n"])
    assert (plan.detach, plan.name, plan.args) == (False, None, ("--detach", "--name", "n"))


def test_an_unknown_option_after_a_leading_file_points_at_the_double_dash() -> None:
    with pytest.raises(click.NoSuchOption) as caught:
        parse(["app.py", "--input", "x"])
    assert "steward submit FILE [OPTIONS] -- --input" in caught.value.format_message()


def test_an_unknown_option_suggests_the_close_one() -> None:
    with pytest.raises(click.NoSuchOption) as caught:
        parse(["--mastr", "yarn", "app.py"])
    message = caught.value.format_message()
    assert "No such option: --mastr" in message
    assert "--master" in message


@pytest.mark.parametrize(
    "words", [["-h"], ["--master", "yarn", "--help", "app.py"], ["app.py", "-h"]]
)
def test_help_where_options_are_read(words: list[str]) -> None:
    with pytest.raises(HelpRequested):
        parse(words)


def test_help_among_the_applications_arguments_is_theirs() -> None:
    assert parse(["app.py", "--", "--help"]).args == ("--help",)
    assert parse(["--verbose", "app.py", "-h"]).args == ("-h",)


def test_the_last_value_of_an_option_wins_as_in_spark_submit() -> None:
    plan = parse(["--master", "yarn", "--master", "local", "--name", "a", "--name", "b", "app.py"])
    assert (plan.spark_conf, plan.name) == ({"spark.master": "local"}, "b")


# ---------------------------------------------------------------- precedence


def test_explicit_option_beats_conf_beats_properties_file() -> None:
    Path("job.conf").write_text(
        "spark.master yarn\nspark.driver.memory 1g\nspark.executor.cores 2\nspark.ui.port 4050\n"
    )
    plan = parse(
        ["--properties-file", "job.conf", "--conf", "spark.driver.memory=3g",
         "--conf", "spark.executor.cores=3", "--executor-cores", "4", "app.py"]
    )  # fmt: skip
    assert plan.spark_conf == {
        "spark.master": "yarn",
        "spark.driver.memory": "3g",
        "spark.executor.cores": "4",
        "spark.ui.port": "4050",
    }


def test_explicit_files_replace_the_conf_key_they_feed() -> None:
    plan = parse(
        ["--conf", "spark.jars=hdfs:///old.jar", "--conf", "spark.files=s3a://b/f",
         "--jars", "x.jar", "app.py"]
    )  # fmt: skip
    assert plan.spark_conf == {"spark.files": "s3a://b/f"}
    assert plan.jars == (Path("x.jar"),)


# ---------------------------------------------------------------- refusals


def test_client_deploy_mode_is_accepted() -> None:
    assert parse(["--deploy-mode", "client", "app.py"]).spark_conf == {}


def test_client_deploy_mode_wins_over_a_conf_that_says_cluster() -> None:
    plan = parse(["--conf", "spark.submit.deployMode=cluster", "--deploy-mode", "client", "app.py"])
    assert plan.spark_conf == {"spark.submit.deployMode": "client"}


@pytest.mark.parametrize(
    "words",
    [
        ["--deploy-mode", "cluster", "app.py"],
        ["--conf", "spark.submit.deployMode=cluster", "app.py"],
    ],
)
def test_cluster_deploy_mode_is_refused_with_the_reason(words: list[str]) -> None:
    with pytest.raises(click.UsageError) as caught:
        parse(words)
    assert caught.value.message == CLUSTER_MODE_REFUSED
    assert "supervises" in CLUSTER_MODE_REFUSED


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("--class", "Python applications"),
        ("--supervise", "always supervises the driver"),
        ("--kill", "steward cancel"),
        ("--status", "steward status"),
        ("--principal", "spark.kerberos.principal"),
    ],
)
def test_refused_options_say_why(option: str, needle: str) -> None:
    with pytest.raises(click.UsageError, match=f"{option} is not supported: .*{needle}"):
        parse([option, "x", "app.py"])


@pytest.mark.parametrize(
    ("words", "needle"),
    [
        ([], "Missing the application file"),
        (["--master", "yarn"], "Missing the application file"),
        (["--", "app.py"], "Missing the application file"),
        (["app.py", "--master"], "'--master' requires a value"),
        (["--master", "--name", "x", "app.py"], "'--master' requires a value"),
        (["--detach=yes", "app.py"], "does not take a value"),
        (["--conf", "spark.novalue", "app.py"], "expected key=value"),
        (["--deploy-mode", "remote", "app.py"], "must be client or cluster"),
        (["--master", "mesos://x:5050", "app.py"], "is no Spark master"),
        (["--driver-memory", "lots", "app.py"], "is no amount of memory"),
        (["--executor-cores", "0", "app.py"], "not a positive number"),
        (["--num-executors", "two", "app.py"], "not a positive number"),
        (["--slots", "0", "app.py"], "from 1 to 1024"),
        (["--kind", "micro", "app.py"], "batch | streaming"),
        (["--program", "jar", "app.py"], "auto | script | sdk"),
        (["--script", "--sdk", "app.py"], "both as script and sdk"),
        (["--restart", "sometimes", "app.py"], "unknown restart strategy"),
        (["--py-files", "nowhere.py", "app.py"], "no such file: nowhere.py"),
        (["--files", ".", "app.py"], ". is not a file"),
        (["--jars", "hdfs:///x.jar", "app.py"], "is not a local file"),
        (["--files", "data.csv#d", "app.py"], "only --archives take a '#alias'"),
        (["--archives", "env.tar.gz#../up", "app.py"], "plain file name"),
        (["--properties-file", "none.conf", "app.py"], "no such file: none.conf"),
        (["--requirements", "none.txt", "app.py"], "no such file: none.txt"),
    ],
)
def test_bad_lines_are_usage_errors_that_name_the_problem(words: list[str], needle: str) -> None:
    with pytest.raises(click.UsageError) as caught:
        parse(words)
    assert needle in caught.value.format_message()


def test_a_bad_value_names_its_option() -> None:
    with pytest.raises(click.BadParameter) as caught:
        parse(["--conf", "novalue", "app.py"])
    assert caught.value.param_hint == "--conf"


# ---------------------------------------------------------------- the properties file


def test_properties_file_reads_only_spark_keys_and_warns_about_the_rest() -> None:
    Path("job.conf").write_text("spark.a 1\nhadoop.b 2\n# spark.c 3\n")
    plan = parse(["--properties-file", "job.conf", "app.py"])
    assert plan.spark_conf == {"spark.a": "1"}
    assert plan.warnings == ("ignoring non-Spark property 'hadoop.b' of job.conf",)


def test_properties_format_is_javas() -> None:
    text = (
        "# comment\n"
        "  ! another comment\n"
        "\n"
        "spark.a   one two  \n"
        "spark.b=2\n"
        "spark.c : 3\n"
        "spark.d\t= 4\n"
        "spark.long = first,\\\n"
        "             second\n"
        "spark.key\\ with\\:odd\\=chars = v\n"
        "spark.escapes = tab\\there \\u00e9\\\\\n"
        "spark.empty\n"
        "spark.a = again\r\n"
        "spark.last = no newline \\\\"
    )
    assert parse_properties(text) == {
        "spark.a": "again",
        "spark.b": "2",
        "spark.c": "3",
        "spark.d": "4",
        "spark.long": "first,second",
        "spark.key with:odd=chars": "v",
        "spark.escapes": "tab\there \u00e9\\",
        "spark.empty": "",
        "spark.last": "no newline \\",
    }


def test_a_malformed_unicode_escape_is_refused() -> None:
    Path("bad.conf").write_text("spark.a = \\u12\n")
    with pytest.raises(click.BadParameter, match="malformed"):
        parse(["--properties-file", "bad.conf", "app.py"])


# ---------------------------------------------------------------- --verbose


def test_verbose_describes_what_is_submitted() -> None:
    plan = parse(["-v", "--master", "yarn", "--py-files", "lib.py", "app.py", "in"])
    assert plan.verbose
    assert describe(plan) == [
        "file: app.py",
        "arguments: ['in']",
        "py-files: lib.py",
        "spark_conf: spark.master=yarn",
    ]


def test_notify_repeats_and_verbose_shows_the_urls_without_their_query() -> None:
    plan = parse(
        ["-v", "--notify", "https://h/a?token=t:FAILED", "--notify", "https://h:8443/b", "app.py"]
    )
    assert plan.notify == ("https://h/a?token=t:FAILED", "https://h:8443/b")
    assert "notify: https://h/a?***,https://h:8443/b" in describe(plan)
