"""The runner as a TaskManager sees it: launch, events, outcome and exit code. No Spark.

Every test starts a real ``python -m steward.runtime.runner`` through the harness and checks
that, whatever the pipeline does, the events stream stays well-formed and ends as the
protocol says.
"""

from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest
from runner_harness import EXAMPLES, RunnerHarness, launch_document, running

from steward.wire.jobs import JobSpec
from steward.wire.runner_protocol import (
    FailedEvent,
    FinishedEvent,
    LaunchDocument,
    ProgressEvent,
    RunMode,
    StartedEvent,
)
from support import pid_alive, wait_until

EXIT_DEADLINE = 30.0


def write_pipeline(folder: Path, source: str, name: str = "pipeline_under_test.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def run_to_end(tmp_path: Path, launch: LaunchDocument | bytes) -> RunnerHarness:
    with running(tmp_path / "work", launch) as runner:
        runner.wait_final(EXIT_DEADLINE)
        return runner


def failure(runner: RunnerHarness) -> FailedEvent:
    final = runner.events[-1]
    assert isinstance(final, FailedEvent), runner.kinds()
    return final


def test_pipeline_without_spark_finishes_with_its_value_and_never_imports_pyspark(
    tmp_path: Path,
) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import sys

        def main(ctx):
            print("a line for the log, not for the events")
            print('{"event": "finished", "value": "forged"}')
            sys.stderr.write("and one on stderr\\n")
            ctx.report_progress(step=1, of=2)
            return {
                "args": ctx.args,
                "job": ctx.job_id,
                "attempt": ctx.attempt,
                "pyspark_imported": "pyspark" in sys.modules or "py4j" in sys.modules,
            }
        """,
    )
    launch = launch_document(artifact, tmp_path / "ck", args=["x", "y"], attempt=3)

    runner = run_to_end(tmp_path, launch)

    assert runner.kinds() == ["started", "progress", "finished"]
    started, progress, finished = runner.events
    assert isinstance(started, StartedEvent)
    assert started.pid == runner.pid and started.pgid == runner.pid
    assert isinstance(progress, ProgressEvent) and progress.progress == {"step": 1, "of": 2}
    assert isinstance(finished, FinishedEvent)
    assert finished.value == {
        "args": ["x", "y"],
        "job": "job-1",
        "attempt": 3,
        "pyspark_imported": False,
    }
    log = runner.log()
    assert "a line for the log" in log and "and one on stderr" in log and "forged" in log


def test_failing_example_is_failed_with_type_message_and_traceback(tmp_path: Path) -> None:
    runner = run_to_end(tmp_path, launch_document(EXAMPLES / "failing.py", tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == "failing.ReportValidationError"
    assert "2 of 4 rows have a negative amount" in error.message
    assert error.traceback is not None
    assert 'failing.py", line' in error.traceback and "in validate" in error.traceback
    # The runner's own frames are cut: the traceback starts in the pipeline.
    assert "steward/runtime" not in error.traceback
    assert runner.kinds() == ["started", "progress", "failed"]


@pytest.mark.parametrize(
    ("statement", "type_name", "message"),
    [
        ("raise SystemExit(3)", "SystemExit", "the pipeline called sys.exit(3)"),
        ("sys.exit(0)", "SystemExit", "the pipeline called sys.exit(0)"),
        ("raise KeyboardInterrupt('stop')", "KeyboardInterrupt", "stop"),
        ("raise Odd('very odd')", "pipeline_under_test.Odd", "very odd"),
        ("raise Unprintable()", "pipeline_under_test.Unprintable", "unprintable message"),
    ],
)
def test_anything_user_code_raises_is_recorded_as_failed(
    tmp_path: Path, statement: str, type_name: str, message: str
) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        f"""
        import sys

        class Odd(BaseException):
            pass

        class Unprintable(Exception):
            def __str__(self):
                raise RuntimeError("no")

        def main(ctx):
            {statement}
        """,
    )
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == type_name
    assert message in error.message
    assert error.traceback and "pipeline_under_test.py" in error.traceback


def test_os_exit_ends_the_attempt_without_a_final_event(tmp_path: Path) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import os

        def main(ctx):
            ctx.report_progress(about_to="exit")
            os._exit(7)
        """,
    )
    with running(tmp_path / "work", launch_document(artifact, tmp_path / "ck")) as runner:
        assert runner.wait_exit(EXIT_DEADLINE) == 7
        assert runner.kinds() == ["started", "progress"]
        assert not runner.bad_lines


@pytest.mark.parametrize(
    ("value", "named"),
    [("{1, 2}", "set"), ("object()", "object"), ("float('nan')", "float"), ("b'x'", "bytes")],
)
def test_a_value_that_is_not_json_fails_naming_its_type(
    tmp_path: Path, value: str, named: str
) -> None:
    artifact = write_pipeline(tmp_path / "code", f"def main(ctx):\n    return {value}\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == "steward.wire.runner_protocol.ResultError"
    assert f"value of type {named} that is not JSON-serialisable" in error.message
    assert error.traceback is None


def test_a_huge_value_fails_with_the_limit(tmp_path: Path) -> None:
    artifact = write_pipeline(tmp_path / "code", "def main(ctx):\n    return 'x' * 2_000_000\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    assert "the limit is 1048576" in failure(runner).error.message


def test_an_import_error_in_the_module_is_failed_with_its_traceback(tmp_path: Path) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import steward_no_such_dependency

        def main(ctx):
            return 1
        """,
    )
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == "ModuleNotFoundError"
    assert "steward_no_such_dependency" in error.message
    assert error.traceback and 'pipeline_under_test.py", line 2' in error.traceback
    assert runner.kinds() == ["started", "failed"]


def test_a_syntax_error_in_the_module_is_failed(tmp_path: Path) -> None:
    artifact = write_pipeline(tmp_path / "code", "def main(ctx)\n    return 1\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    assert failure(runner).error.type == "SyntaxError"


def test_a_missing_entrypoint_is_failed_with_a_clear_message(tmp_path: Path) -> None:
    artifact = write_pipeline(tmp_path / "code", "def run(ctx):\n    return 1\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck", entrypoint="main"))

    error = failure(runner).error
    assert error.type == "steward.wire.runner_protocol.ArtifactError"
    assert "'main' not found in module pipeline_under_test" in error.message
    assert error.traceback is None


def test_a_missing_artifact_file_is_failed_with_a_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "job.py"
    runner = run_to_end(tmp_path, launch_document(missing, tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == "steward.wire.runner_protocol.ArtifactError"
    assert f"artifact {missing} does not exist" in error.message


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"this is not json", "not valid JSON"),
        (b'{"schema": 1, "job_id": "job-1"}', "launch document: attempt: Field required"),
        (b'{"schema": 9}', "schema 9 was written by a newer Steward"),
        (b"[1, 2]", "expected a JSON object"),
    ],
)
def test_a_malformed_launch_document_is_one_failed_event(
    tmp_path: Path, payload: bytes, says: str
) -> None:
    runner = run_to_end(tmp_path, payload)

    assert runner.kinds() == ["failed"]
    error = failure(runner).error
    assert error.type == "steward.wire.runner_protocol.LaunchError"
    assert says in error.message
    assert error.traceback is None


def test_stdin_closed_before_the_launch_document_is_failed(tmp_path: Path) -> None:
    with running(tmp_path / "work", None, feed=False) as runner:
        runner.close_stdin()
        runner.wait_final(EXIT_DEADLINE)
        assert "stdin closed before a launch document" in failure(runner).error.message


def test_no_launch_document_within_the_launch_timeout_is_failed(tmp_path: Path) -> None:
    with running(
        tmp_path / "work", None, feed=False, extra_args=["--launch-timeout", "0.5"]
    ) as runner:
        runner.wait_final(EXIT_DEADLINE)
        assert "no launch document on stdin within 0.5s" in failure(runner).error.message


def test_an_unusable_events_fd_exits_2_and_says_why_in_the_log(tmp_path: Path) -> None:
    harness = RunnerHarness(tmp_path / "work")
    with harness:
        harness.start(None, extra_args=["--events-fd", "97"], feed=False)
        assert harness.wait_exit(EXIT_DEADLINE) == 2
        assert "events fd 97 is not usable" in harness.log()


def test_initialize_mode_runs_the_hook_instead_of_main(tmp_path: Path) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        def initialize(ctx):
            return {"mode": ctx.mode, "recovery": ctx.is_recovery}

        def main(ctx):
            raise AssertionError("main must not run in initialize mode")
        """,
    )
    launch = launch_document(artifact, tmp_path / "ck", mode=RunMode.INITIALIZE, is_recovery=True)
    runner = run_to_end(tmp_path, launch)

    final = runner.events[-1]
    assert isinstance(final, FinishedEvent)
    assert final.value == {"mode": "initialize", "recovery": True}


def test_initialize_mode_without_a_hook_succeeds_with_null(tmp_path: Path) -> None:
    artifact = write_pipeline(tmp_path / "code", "def main(ctx):\n    raise SystemExit(1)\n")
    launch = launch_document(artifact, tmp_path / "ck", mode=RunMode.INITIALIZE)
    runner = run_to_end(tmp_path, launch)

    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value is None


def test_wordcount_initialize_refuses_an_existing_output_folder(tmp_path: Path) -> None:
    # Seed 000: the output exists when a new leader recovers the job. The hook fails in its
    # own process, so this job fails and nothing else is touched. No JVM is involved.
    output = tmp_path / "counts"
    output.mkdir()
    launch = launch_document(
        EXAMPLES / "wordcount.py",
        tmp_path / "ck",
        args=[str(tmp_path / "in.txt"), str(output)],
        mode=RunMode.INITIALIZE,
        is_recovery=True,
    )
    runner = run_to_end(tmp_path, launch)

    error = failure(runner).error
    assert error.type == "FileExistsError"
    assert f"output folder {output} already exists" in error.message


def test_wordcount_initialize_accepts_a_new_output_folder(tmp_path: Path) -> None:
    launch = launch_document(
        EXAMPLES / "wordcount.py",
        tmp_path / "ck",
        args=[str(tmp_path / "in.txt"), str(tmp_path / "counts")],
        mode=RunMode.INITIALIZE,
    )
    runner = run_to_end(tmp_path, launch)

    assert isinstance(runner.events[-1], FinishedEvent)


def test_a_folder_artifact_runs_its_entry_module_and_its_imports(tmp_path: Path) -> None:
    folder = tmp_path / "unpacked"
    write_pipeline(folder / "helpers", "def double(x):\n    return 2 * x\n", "maths.py")
    (folder / "helpers" / "__init__.py").write_text("")
    write_pipeline(
        folder,
        "from helpers.maths import double\n\ndef main(ctx):\n    return double(21)\n",
        "main.py",
    )
    runner = run_to_end(tmp_path, launch_document(folder, tmp_path / "ck"))

    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value == 42


def test_a_module_function_entrypoint_in_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "unpacked"
    write_pipeline(folder / "jobs", "", "__init__.py")
    write_pipeline(folder / "jobs", "def nightly(ctx):\n    return 'ran'\n", "report.py")
    launch = launch_document(folder, tmp_path / "ck", entrypoint="jobs.report:nightly")
    runner = run_to_end(tmp_path, launch)

    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value == "ran"


def test_the_pipeline_cannot_read_the_heartbeats(tmp_path: Path) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import sys

        def main(ctx):
            return sys.stdin.read()
        """,
    )
    launch = launch_document(artifact, tmp_path / "ck", deadman_timeout=2.0)
    runner = run_to_end(tmp_path, launch)

    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value == ""


def test_processes_the_pipeline_leaves_behind_are_killed_when_it_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    artifact = write_pipeline(
        tmp_path / "code",
        f"""
        import subprocess

        def main(ctx):
            sleeper = subprocess.Popen(["sleep", "1000"])
            open({str(pid_file)!r}, "w").write(str(sleeper.pid))
            return "done"
        """,
    )
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    assert isinstance(runner.events[-1], FinishedEvent)
    sleeper = int(pid_file.read_text())
    wait_until(lambda: not pid_alive(sleeper), 10.0, message=f"sleep {sleeper} killed")


def test_sigterm_cancels_the_attempt_and_lets_finally_blocks_run(tmp_path: Path) -> None:
    marker = tmp_path / "cleaned-up"
    artifact = write_pipeline(
        tmp_path / "code",
        f"""
        import time

        def main(ctx):
            try:
                ctx.report_progress(state="sleeping")
                time.sleep(1000)
            finally:
                open({str(marker)!r}, "w").write("yes")
        """,
    )
    with running(tmp_path / "work", launch_document(artifact, tmp_path / "ck")) as runner:
        runner.wait_event(lambda e: isinstance(e, ProgressEvent), EXIT_DEADLINE, "progress")
        assert runner.process is not None
        runner.process.send_signal(signal.SIGTERM)
        runner.wait_final(EXIT_DEADLINE)

        error = failure(runner).error
        assert error.type == "steward.wire.runner_protocol.AttemptCancelled"
        assert marker.read_text() == "yes"


def test_long_running_example_reports_progress_and_finishes_after_its_ticks(
    tmp_path: Path,
) -> None:
    launch = launch_document(
        EXAMPLES / "long_running.py",
        tmp_path / "ck",
        args=["--ticks", "3", "--interval", "0.05"],
    )
    runner = run_to_end(tmp_path, launch)

    ticks = [e.progress["ticks"] for e in runner.events if isinstance(e, ProgressEvent)]
    assert ticks == [1, 2, 3]
    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value == {"ticks": 3}


def test_the_events_are_plain_json_lines_on_the_wire(tmp_path: Path) -> None:
    # The TaskManager may read the pipe with any JSON parser: one object per line, with
    # "schema" and "event" keys.
    artifact = write_pipeline(tmp_path / "code", "def main(ctx):\n    return [1, 'two']\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    assert all(line.endswith(b"\n") for line in runner.raw_lines)
    decoded = [json.loads(line) for line in runner.raw_lines]
    assert [d["event"] for d in decoded] == ["started", "finished"]
    assert all(d["schema"] == 1 for d in decoded)
    assert decoded[-1]["value"] == [1, "two"]


def test_a_spec_for_another_job_is_refused(tmp_path: Path) -> None:
    doc = launch_document(tmp_path / "p.py", tmp_path / "ck").model_dump(by_alias=True)
    doc["spec"] = JobSpec(job_id="other").model_dump(by_alias=True)
    runner = run_to_end(tmp_path, json.dumps(doc).encode())

    assert "differs from spec.job_id" in failure(runner).error.message


def test_sigusr1_writes_the_stacks_of_a_stuck_attempt_to_its_log(tmp_path: Path) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import time

        def stuck_here(ctx):
            ctx.report_progress(state="stuck")
            time.sleep(1000)

        def main(ctx):
            stuck_here(ctx)
        """,
    )
    with running(tmp_path / "work", launch_document(artifact, tmp_path / "ck")) as runner:
        runner.wait_event(lambda e: isinstance(e, ProgressEvent), EXIT_DEADLINE, "progress")
        assert runner.process is not None
        runner.process.send_signal(signal.SIGUSR1)

        wait_until(lambda: "in stuck_here" in runner.log(), EXIT_DEADLINE, message="stack dump")
        assert runner.process.poll() is None  # dumping does not end the attempt


def test_a_forked_child_returning_from_main_cannot_report_or_kill_the_runner(
    tmp_path: Path,
) -> None:
    artifact = write_pipeline(
        tmp_path / "code",
        """
        import os

        def main(ctx):
            child = os.fork()
            if child == 0:
                return "from the child"
            os.waitpid(child, 0)
            return "from the runner"
        """,
    )
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    assert runner.kinds() == ["started", "finished"]
    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value == "from the runner"


@pytest.mark.parametrize(
    ("body", "type_name", "text"),
    [
        ("return 'bad \\udc80 text'", "steward.wire.runner_protocol.ResultError", "not JSON"),
        ("raise ValueError('bad \\udc80 text')", "ValueError", "bad \\udc80 text"),
    ],
)
def test_text_that_is_not_utf8_cannot_break_the_events(
    tmp_path: Path, body: str, type_name: str, text: str
) -> None:
    artifact = write_pipeline(tmp_path / "code", f"def main(ctx):\n    {body}\n")
    runner = run_to_end(tmp_path, launch_document(artifact, tmp_path / "ck"))

    error = failure(runner).error
    assert error.type == type_name
    assert text in error.message
