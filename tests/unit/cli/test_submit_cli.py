"""``steward submit`` with a spark-submit command line: what reaches the JobManager, the help,
and the errors (one line, exit code 2, nothing sent).

The command runs in-process through ``steward.cli.main.main``, the client pointed at a fake
JobManager (tests/unit/fake_jobmanager.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx

from unit.fake_jobmanager import FakeJobManagers
from unit.steward_cli import Run

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCRIPT = str(EXAMPLES / "spark_submit_wordcount.py")


def stored(_request: httpx.Request) -> httpx.Response:
    """The fake's answer to HEAD /v1/contents/<sha256>: the cluster has the file already."""
    return httpx.Response(200)


def test_a_spark_submit_line_prefixed_with_steward_submit(
    fake: FakeJobManagers, run: Run, tmp_path: Path
) -> None:
    helper = tmp_path / "helpers.py"
    helper.write_text("X = 1\n")
    fake.script = [stored]
    code, out, _err = run(
        "submit", "--master", "local[2]", "--deploy-mode", "client", "--name", "counts",
        "--conf", "spark.sql.shuffle.partitions=8", "--driver-memory", "1g",
        "--py-files", str(helper), "--detach", SCRIPT, "/in/text.txt", "--verbose",
    )  # fmt: skip
    assert code == 0, out
    assert "submitted spark_submit_wordcount-" in out
    (posted,) = fake.posts()
    spec = posted["spec"]
    assert spec["args"] == ["/in/text.txt", "--verbose"]
    assert spec["name"] == "counts"
    assert spec["spark_conf"] == {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.memory": "1g",
    }
    (dependency,) = spec["dependencies"]
    assert dependency["kind"] == "py-file"
    assert dependency["filename"] == "helpers.py"
    assert dependency["sha256"] == hashlib.sha256(b"X = 1\n").hexdigest()


def test_stewards_own_form_with_program_and_requirements(
    fake: FakeJobManagers, run: Run, tmp_path: Path
) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# pinned\nrequests==2.32.3\n")
    code, out, _err = run(
        "submit", SCRIPT, "--script", "--requirements", str(requirements), "--json", "--detach",
        "--", "in", "out",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["state"] == "SUBMITTED"
    (posted,) = fake.posts()
    assert posted["spec"]["program"] == "script"
    assert posted["spec"]["requirements"] == ["requests==2.32.3"]
    assert posted["spec"]["args"] == ["in", "out"]


def test_help_lists_both_kinds_of_option_with_their_spark_keys(run: Run) -> None:
    code, out, _err = run("submit", "--help")
    assert code == 0
    assert "Usage: steward submit [OPTIONS] FILE [ARGS]..." in out
    assert "Steward's options" in out
    assert "spark-submit's options" in out
    assert "--executor-memory MEM" in out
    assert "[spark.executor.memory]" in out
    assert "after '--'" in out


def test_cluster_deploy_mode_is_refused_and_nothing_is_sent(
    fake: FakeJobManagers, run: Run
) -> None:
    code, out, err = run("submit", "--deploy-mode", "cluster", SCRIPT)
    assert (code, out) == (2, "")
    assert "--deploy-mode cluster is not supported" in err
    assert "supervises" in err
    assert "Traceback" not in err
    assert fake.requests == []


def test_an_unknown_option_after_the_file_is_one_error_that_shows_the_fix(
    fake: FakeJobManagers, run: Run
) -> None:
    code, _out, err = run("submit", SCRIPT, "--input", "x")
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert errors == [
        "Error: No such option: --input. The application's own arguments go after '--':"
        " steward submit FILE [OPTIONS] -- --input ..."
    ]
    assert fake.requests == []


def test_a_missing_dependency_is_refused_before_anything_is_sent(
    fake: FakeJobManagers, run: Run
) -> None:
    code, _out, err = run("submit", "--files", "nowhere.csv", SCRIPT)
    assert code == 2
    assert "no such file: nowhere.csv" in err
    assert fake.requests == []


def test_verbose_and_properties_warnings_go_to_stderr(
    fake: FakeJobManagers, run: Run, tmp_path: Path
) -> None:
    conf = tmp_path / "job.conf"
    conf.write_text("spark.executor.memory 2g\nmapreduce.x 1\n")
    code, out, err = run(
        "submit", "--properties-file", str(conf), "--verbose", "--detach", SCRIPT, "a"
    )
    assert code == 0
    assert "warning: ignoring non-Spark property 'mapreduce.x'" in err
    assert "spark_conf: spark.executor.memory=2g" in err
    assert "spark_conf" not in out
    (posted,) = fake.posts()
    assert posted["spec"]["spark_conf"] == {"spark.executor.memory": "2g"}


def test_timeout_and_env_reach_the_spec_and_verbose_shows_env_redacted(
    fake: FakeJobManagers, run: Run
) -> None:
    code, out, err = run(
        "submit", "--timeout", "2h", "--env", "GREETING=hi", "--env", "DB_PASSWORD=hunter22",
        "--verbose", "--detach", SCRIPT,
    )  # fmt: skip
    assert code == 0, err
    (posted,) = fake.posts()
    assert posted["spec"]["timeout"] == 7200.0
    assert posted["spec"]["env"] == {"GREETING": "hi", "DB_PASSWORD": "hunter22"}
    assert "env: DB_PASSWORD=*********(redacted)" in err and "env: GREETING=hi" in err
    assert "timeout: 2h" in err
    assert "hunter22" not in out + err


def test_a_bad_timeout_or_env_is_one_error_and_nothing_is_sent(
    fake: FakeJobManagers, run: Run
) -> None:
    for words, says in (
        (("--timeout", "90"), "needs a unit"),
        (("--timeout", "0s"), "more than 0"),
        (("--timeout", "31d"), "at most 30d"),
        (("--env", "NOVALUE"), "key=value"),
        (("--env", "1BAD=x"), "letters, digits"),
        (("--env", "STEWARD_ATTEMPT_TOKEN=x"), "Steward's"),
    ):
        code, out, err = run("submit", *words, SCRIPT)
        assert (code, out) == (2, ""), words
        assert says in err, (words, err)
        assert "Traceback" not in err
    assert fake.requests == []
