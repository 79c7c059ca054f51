"""The job commands: --restart parsing, the --json documents, exit codes, one-line errors.

The commands run in-process through ``steward.cli.main.main`` (the real error handling), with
the client pointed at a fake JobManager (tests/unit/fake_jobmanager.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import httpx
import pytest

from steward.cli.options import parse_pairs, parse_restart
from steward.wire.jobs import ExponentialDelayRestart, FixedDelayRestart, NoRestart
from unit.fake_jobmanager import FakeJobManagers, attempt_json, job_json, result_json
from unit.steward_cli import Run

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PIPELINE = str(EXAMPLES / "long_running.py")

FINISHED = job_json(
    "x",
    "FINISHED",
    attempts=[attempt_json(1, "FINISHED", started_at=1.0, ended_at=2.0)],
    attempt_count=1,
    result=result_json("x", value={"ticks": 2}),
)
FAILED = job_json(
    "x",
    "FAILED",
    result=result_json(
        "x",
        "FAILED",
        error={"type": "ValueError", "message": "bad input", "traceback": "Traceback: line 3"},
    ),
)


# ---------------------------------------------------------------- --restart


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", NoRestart()),
        ("fixed-delay", FixedDelayRestart()),
        ("fixed-delay:attempts=5,delay=2s", FixedDelayRestart(attempts=5, delay=2.0)),
        ("fixed-delay:delay=500ms", FixedDelayRestart(delay=0.5)),
        ("exponential-delay", ExponentialDelayRestart()),
        (
            "exponential-delay:initial=500ms,max=1m,multiplier=3,max-attempts=4",
            ExponentialDelayRestart(initial=0.5, max=60.0, multiplier=3.0, max_attempts=4),
        ),
    ],
)
def test_restart_strategies_parse(text: str, expected: object) -> None:
    assert parse_restart(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("sometimes", "unknown restart strategy 'sometimes'"),
        ("fixed-delay:tries=3", "fixed-delay takes attempts, delay"),
        ("fixed-delay:delay=10", "needs a unit"),
        ("fixed-delay:attempts=three", "bad attempts='three'"),
        ("fixed-delay:attempts=-1", "attempts"),
        ("exponential-delay:multiplier=0.5", "multiplier"),
        ("none:attempts=1", "none takes no parameters"),
    ],
)
def test_bad_restart_strategies_say_what_is_expected(text: str, needle: str) -> None:
    with pytest.raises(click.BadParameter, match=needle):
        parse_restart(text)


def test_pairs_need_an_equals_sign() -> None:
    assert parse_pairs(["a=1", "b=x=y"], "--conf") == {"a": "1", "b": "x=y"}
    with pytest.raises(click.BadParameter, match="key=value"):
        parse_pairs(["novalue"], "--conf")


def test_bad_restart_on_the_command_line_is_a_usage_error(fake: FakeJobManagers, run: Run) -> None:
    code, _out, err = run("submit", PIPELINE, "--restart", "fixed-delay:delay=10")
    assert code == 2
    assert "needs a unit" in err
    assert "Traceback" not in err
    assert fake.requests == []


# ---------------------------------------------------------------- submit


def test_submit_detach_json_prints_the_job_with_its_id(fake: FakeJobManagers, run: Run) -> None:
    code, out, _err = run(
        "submit", PIPELINE, "--detach", "--json", "--name", "ticker", "--conf", "a.b=c",
        "--restart", "none", "--", "--ticks", "2",
    )  # fmt: skip
    assert code == 0
    document = json.loads(out)
    assert document["job_id"].startswith("long_running-")
    assert document["state"] == "SUBMITTED"
    (posted,) = fake.posts()
    assert posted["spec"]["args"] == ["--ticks", "2"]
    assert posted["spec"]["name"] == "ticker"
    assert posted["spec"]["spark_conf"] == {"a.b": "c"}
    assert posted["spec"]["restart_strategy"] == {"kind": "none"}


def test_submit_sends_its_own_job_id_and_the_same_body_when_its_answer_was_lost(
    fake: FakeJobManagers, run: Run
) -> None:
    # Issue 23, item 4: the job was stored, the answer lost; the retry is the same submission.
    def stored_then_lost(request: httpx.Request) -> httpx.Response:
        fake.route(request)
        raise httpx.ReadTimeout("timed out", request=request)

    fake.client_timeout = 30.0  # the retry must come within it even on a loaded machine
    fake.script.append(stored_then_lost)
    code, out, err = run("submit", PIPELINE, "--detach", "--json", "--", "--ticks", "2")
    assert code == 0, err
    posts = [r.content for r in fake.requests if r.method == "POST"]
    assert len(posts) == 2 and posts[0] == posts[1]
    sent_id = json.loads(posts[0])["spec"]["job_id"]
    assert sent_id.startswith("long_running-") and json.loads(out)["job_id"] == sent_id
    assert list(fake.views) == [sent_id]


def test_submit_follows_until_finished_and_prints_the_result(
    fake: FakeJobManagers, run: Run
) -> None:
    fake.run = [job_json("x", "RUNNING", progress={"ticks": 1}), FINISHED]
    code, out, _err = run("submit", PIPELINE, "--job-id", "ticks", "--", "--ticks", "2")
    assert code == 0
    assert "FINISHED" in out
    assert '"ticks": 2' in out


def test_submit_json_follows_and_prints_the_result_document(
    fake: FakeJobManagers, run: Run
) -> None:
    fake.run = [job_json("x", "RUNNING"), FAILED]
    code, out, _err = run("submit", PIPELINE, "--json")
    assert code == 1
    document = json.loads(out)
    assert document["state"] == "FAILED"
    assert document["job_id"].startswith("long_running-")
    assert document["error"]["type"] == "ValueError"


def test_a_failed_job_shows_its_error_and_traceback_and_exits_1(
    fake: FakeJobManagers, run: Run
) -> None:
    fake.run = [FAILED]
    code, out, _err = run("submit", PIPELINE)
    assert code == 1
    assert "ValueError: bad input" in out
    assert "Traceback: line 3" in out


def test_submitting_a_missing_pipeline_is_one_line(fake: FakeJobManagers, run: Run) -> None:
    code, out, err = run("submit", "nowhere/pipeline.py")
    assert code == 2
    assert err.strip() == "error: pipeline nowhere/pipeline.py does not exist"
    assert out == ""
    assert fake.requests == []


# ---------------------------------------------------------------- list, status, result, ...


def test_list_json_has_one_entry_per_job(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("a")
    fake.add_job("b", FINISHED | {"job_id": "b"})
    code, out, _err = run("list", "--json")
    assert code == 0
    assert [job["job_id"] for job in json.loads(out)] == ["a", "b"]


def test_list_text_shows_a_table(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("a")
    code, out, _err = run("list")
    assert code == 0
    assert "a" in out
    assert "RUNNING" in out


def test_list_shows_the_newest_50_and_says_how_to_see_more(fake: FakeJobManagers, run: Run) -> None:
    for n in range(120):
        fake.add_job(f"job-{n:03d}")
    code, out, err = run("list", "--json")
    assert code == 0
    assert [job["job_id"] for job in json.loads(out)] == [f"job-{n:03d}" for n in range(70, 120)]
    assert "showing the newest 50" in err
    assert "--all" in err


def test_list_all_reads_every_page(fake: FakeJobManagers, run: Run) -> None:
    for n in range(2500):
        fake.add_job(f"job-{n:04d}")
    code, out, err = run("list", "--all", "--json")
    assert code == 0
    assert [job["job_id"] for job in json.loads(out)] == [f"job-{n:04d}" for n in range(2500)]
    assert "newest" not in err
    pages = [r for r in fake.requests if r.url.path == "/v1/jobs"]
    assert len(pages) == 3  # 1000 a page


def test_list_sends_its_filters_and_limit(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("a")
    code, _out, err = run(
        "list",
        "--limit",
        "7",
        "--state",
        "running",
        "--label",
        "team=data",
        "--name",
        "etl",
        "--submitter",
        "alice",
    )
    assert code == 0, err
    sent = next(r for r in fake.requests if r.url.path == "/v1/jobs").url.params
    assert dict(sent) == {
        "limit": "8",
        "state": "RUNNING",
        "label": "team=data",
        "name": "etl",
        "submitter": "alice",
    }


def test_list_refuses_a_label_without_a_value(fake: FakeJobManagers, run: Run) -> None:
    code, _out, err = run("list", "--label", "team")
    assert code == 2
    assert "KEY=VALUE" in err
    assert fake.requests == []


def test_status_json_is_the_job_view_with_attempts(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", FINISHED)
    code, out, _err = run("status", "x", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["state"] == "FINISHED"
    assert document["attempts"][0]["taskmanager"] == "tm-1"


def test_status_text_shows_the_attempts_table(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", FINISHED)
    code, out, _err = run("status", "x")
    assert code == 0
    assert "tm-1" in out
    assert "taskmanager" in out


def test_status_text_shows_the_latest_spark_application(fake: FakeJobManagers, run: Run) -> None:
    app = {"app_id": "app-20261123-0007", "ui_url": "http://tm-1:4040", "master": "yarn"}
    fake.add_job("x", job_json("x", "RUNNING", attempts=[attempt_json(1, spark_app=app)]))
    code, out, _err = run("status", "x")
    assert code == 0
    assert "app-20261123-0007 on yarn" in out
    assert "http://tm-1:4040" in out


def test_status_text_shows_the_timeout_and_the_env_as_the_server_shows_it(
    fake: FakeJobManagers, run: Run
) -> None:
    env = {"GREETING": "hi", "DB_PASSWORD": "*********(redacted)"}
    fake.add_job(
        "x", job_json("x", "RUNNING", submitted_at=1.0, timeout=7200.0, deadline=7201.0, env=env)
    )
    code, out, _err = run("status", "x")
    assert code == 0
    assert "timeout" in out and "2h (until " in out
    assert "DB_PASSWORD=*********(redacted)" in out and "GREETING=hi" in out


def test_an_unknown_job_is_one_line_and_exit_2(fake: FakeJobManagers, run: Run) -> None:
    code, out, err = run("status", "nope", "--json")
    assert code == 2
    assert err.strip() == "error: no job 'nope' in this cluster"
    assert out == ""


def test_result_json_has_state_value_and_error(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x")
    fake.results["x"] = result_json("x", value={"ticks": 2})
    code, out, _err = run("result", "x", "--json")
    assert code == 0
    document = json.loads(out)
    assert (document["state"], document["value"], document["error"]) == (
        "FINISHED",
        {"ticks": 2},
        None,
    )


def test_result_of_a_running_job_is_an_error(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x")
    code, _out, err = run("result", "x")
    assert code == 2
    assert "has not terminated" in err


def test_cancel_json_is_the_job_view(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x")
    code, out, _err = run("cancel", "x", "--json")
    assert code == 0
    assert json.loads(out)["state"] == "CANCELLING"


def test_leader_json_and_no_leader(fake: FakeJobManagers, run: Run) -> None:
    code, out, _err = run("leader", "--json")
    assert (code, json.loads(out)["id"]) == (0, "jm-1")
    fake.leader = None
    code, out, _err = run("leader", "--json")
    assert (code, json.loads(out)) == (1, None)


def test_an_unreachable_cluster_is_one_line_and_exit_2(fake: FakeJobManagers, run: Run) -> None:
    fake.down.add("http://jm-a:8081")
    code, _out, err = run("list")
    assert code == 2
    assert err.startswith("error: no JobManager answered within 0.5s")
    assert len(err.strip().splitlines()) == 1


def test_status_follow_waits_for_the_end_and_exits_with_its_result(
    fake: FakeJobManagers, run: Run
) -> None:
    # An older JobManager (no /v1/events): the follow polls, as it did before live events.
    fake.add_job("x", job_json("x", "RUNNING"), FAILED)
    code, out, _err = run("status", "x", "-f", "--json")
    assert code == 1
    document = json.loads(out)
    assert document["state"] == "FAILED"
    assert document["error"]["type"] == "ValueError"
