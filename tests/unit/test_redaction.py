"""Spark's redaction rule (spark.redaction.regex) on settings, arguments and free text."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from steward.errors import JobRejectedError
from steward.wire.records import AttemptRecord, ErrorInfo
from steward.wire.redaction import (
    DEFAULT,
    DEFAULT_REGEX,
    REPLACEMENT,
    Redactor,
    check_conf,
    redact_attempts,
    redact_error,
)
from steward.wire.states import AttemptState


def test_the_default_is_sparks_own() -> None:
    """The installed spark-core's SECRET_REDACTION_PATTERN default, read from its class."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    core = next(jars.glob("spark-core_*.jar"), None)
    if core is None:
        pytest.skip("pyspark ships no spark-core jar here")
    with zipfile.ZipFile(core) as jar:
        constants = jar.read("org/apache/spark/internal/config/package$.class")
    assert DEFAULT_REGEX.encode() in constants


@pytest.mark.parametrize(
    "key",
    [
        "spark.hadoop.fs.s3a.secret.key",
        "spark.hadoop.fs.s3a.access.key",
        "spark.myapp.PASSWORD",
        "spark.authenticate.secret",
        "spark.executorEnv.API_TOKEN",
        "spark.hadoop.fs.azure.account.oauth2.client.credential",
    ],
)
def test_secret_looking_settings_are_redacted(key: str) -> None:
    assert DEFAULT.conf({key: "hunter2", "spark.executor.memory": "2g"}) == {
        key: REPLACEMENT,
        "spark.executor.memory": "2g",
    }


def test_a_value_that_looks_secret_is_redacted_too_as_in_spark() -> None:
    shown = DEFAULT.conf({"spark.executorEnv.X": "token-abcdef"})
    assert shown == {"spark.executorEnv.X": REPLACEMENT}


def test_a_job_sets_its_own_regex_in_its_spark_conf() -> None:
    conf = {"spark.redaction.regex": "(?i)pin", "spark.bank.pin": "1234", "spark.password": "pw"}
    shown = Redactor.for_job(conf).conf(conf)
    assert shown["spark.bank.pin"] == REPLACEMENT
    assert shown["spark.password"] == "pw"  # the job's rule replaces Spark's default


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--password", "hunter2", "in.csv"], ["--password", REPLACEMENT, "in.csv"]),
        (["--api-token=abc123", "x"], [f"--api-token={REPLACEMENT}", "x"]),
        (["db.password=abc123"], [f"db.password={REPLACEMENT}"]),
        (["--user", "ann", "--db-secret", "s"], ["--user", "ann", "--db-secret", REPLACEMENT]),
        (["s3://bucket/in", "3"], ["s3://bucket/in", "3"]),
        (["https://ann:pa55word@host/x"], [f"https://ann:{REPLACEMENT}@host/x"]),
    ],
)
def test_arguments_after_or_in_secret_options_are_redacted(
    args: list[str], shown: list[str]
) -> None:
    assert Redactor.for_job({}, args).args(args) == shown


def test_free_text_hides_the_jobs_secret_values_and_secret_pairs() -> None:
    rule = Redactor.for_job(
        {"spark.hadoop.fs.s3a.secret.key": "AKIA-very-secret", "spark.app.name": "etl"},
        ["--token", "tok-123456"],
    )
    text = (
        "could not log in with AKIA-very-secret (token tok-123456) for etl;"
        " conf password=plain1 and {'api_key': 'k'} url sc://h:15002/;token=abcd"
    )
    shown = rule.text(text)
    for secret in ("AKIA-very-secret", "tok-123456", "plain1", "abcd"):
        assert secret not in shown, shown
    assert "for etl" in shown
    assert shown.count(REPLACEMENT) >= 4


def test_short_values_are_not_hunted_in_text_but_still_hidden_as_settings() -> None:
    rule = Redactor.for_job({"spark.password": "on"})
    assert rule.text("turned on") == "turned on"
    assert rule.conf({"spark.password": "on"}) == {"spark.password": REPLACEMENT}


def test_string_regex_redacts_matches_inside_text() -> None:
    rule = Redactor.for_job({"spark.redaction.string.regex": r"ssn-\d+"})
    assert rule.text("user ssn-1234 failed") == f"user {REPLACEMENT} failed"


def test_a_regex_that_does_not_compile_is_refused_at_submission_and_never_fails_open() -> None:
    with pytest.raises(JobRejectedError, match=r"spark\.redaction\.regex"):
        check_conf({"spark.redaction.regex": "(unclosed"})
    check_conf({"spark.redaction.regex": "(?i)pin"})
    # A stored job with a broken regex still gets Spark's default rule, not none.
    assert Redactor("(unclosed").conf({"a.password": "x"}) == {"a.password": REPLACEMENT}


def test_errors_and_attempt_causes_are_redacted() -> None:
    error = ErrorInfo(
        type="RuntimeError",
        message="login failed: password=hunter22",
        traceback='  File "p.py", line 3\nRuntimeError: password=hunter22\n',
    )
    shown = redact_error(error)
    assert "hunter22" not in shown.message
    assert shown.traceback is not None and "hunter22" not in shown.traceback
    attempt = AttemptRecord(
        number=1, taskmanager="tm", epoch=1, state=AttemptState.FAILED, cause=error
    )
    (redacted,) = redact_attempts([attempt])
    assert redacted.cause is not None and "hunter22" not in redacted.cause.message
    plain = ErrorInfo(type="ValueError", message="bad input")
    assert redact_error(plain) is plain


def test_submit_verbose_shows_settings_and_arguments_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steward.cli.submit_plan import describe, parse

    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.py").write_text("print(1)\n")
    conf = ["--conf", "spark.hadoop.fs.s3a.secret.key=S3CRET-1", "--conf", "spark.x.y=plain"]
    plan = parse(["-v", *conf, "app.py", "--password", "pw-123", "in.csv"])
    lines = describe(plan)
    assert not [line for line in lines if "S3CRET-1" in line or "pw-123" in line], lines
    assert f"spark_conf: spark.hadoop.fs.s3a.secret.key={REPLACEMENT}" in lines
    assert "spark_conf: spark.x.y=plain" in lines
    assert f"arguments: ['--password', '{REPLACEMENT}', 'in.csv']" in lines


def test_a_secret_pair_after_a_plain_flag_keeps_its_name() -> None:
    args = ["--verbose", "db.password=abc123", "--token", "-dash-secret"]
    shown = Redactor.for_job({}, args).args(args)
    assert shown == ["--verbose", f"db.password={REPLACEMENT}", "--token", REPLACEMENT]


def test_env_is_shown_by_the_rule_of_settings() -> None:
    rule = Redactor.for_job({}, [], {"GREETING": "hi", "DB_PASSWORD": "hunter22"})
    shown = rule.env({"GREETING": "hi", "DB_PASSWORD": "hunter22", "URL": "x?token=y"})
    assert shown == {"GREETING": "hi", "DB_PASSWORD": REPLACEMENT, "URL": REPLACEMENT}


def test_a_secret_env_value_is_hidden_in_free_text() -> None:
    rule = Redactor.for_job({}, [], {"DB_PASSWORD": "hunter22", "GREETING": "hello"})
    assert rule.text("login failed with hunter22 (hello)") == (
        f"login failed with {REPLACEMENT} (hello)"
    )
