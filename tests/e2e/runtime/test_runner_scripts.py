"""Script mode: the runner runs a spark-submit script as ``python app.py ARGS`` would.

Real runner processes through the harness; no Spark here (the Spark cases are in
``test_runner_script_sessions.py``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from runner_harness import RunnerHarness, launch_document, running

from steward.wire.jobs import ProgramKind
from steward.wire.runner_protocol import FailedEvent, FinishedEvent, LaunchDocument

EXIT_DEADLINE = 30.0


def write_script(folder: Path, source: str, name: str = "app.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def run_script(tmp_path: Path, source: str, args: list[str] | None = None) -> RunnerHarness:
    script = write_script(tmp_path / "code", source)
    launch = launch_document(script, tmp_path / "ck", args=args or [], program=ProgramKind.SCRIPT)
    return run_launch(tmp_path, launch)


def run_launch(tmp_path: Path, launch: LaunchDocument) -> RunnerHarness:
    with running(tmp_path / "work", launch) as runner:
        runner.wait_final(EXIT_DEADLINE)
        runner.wait_exit(EXIT_DEADLINE)
        return runner


def failure(runner: RunnerHarness) -> FailedEvent:
    final = runner.events[-1]
    assert isinstance(final, FailedEvent), runner.kinds()
    return final


def test_script_runs_as_main_with_its_argv_and_output_in_the_log(tmp_path: Path) -> None:
    runner = run_script(
        tmp_path,
        """
        import json, sys

        def main():
            print("argv=" + json.dumps(sys.argv))
            print("name=" + __name__)
            sys.stderr.write("a line on stderr\\n")

        if __name__ == "__main__":
            main()
        """,
        args=["in.txt", "--flag", "two words"],
    )

    assert runner.kinds() == ["started", "finished"]
    final = runner.events[-1]
    assert isinstance(final, FinishedEvent) and final.value is None
    log = runner.log()
    assert "argv=" + json.dumps(["app.py", "in.txt", "--flag", "two words"]) in log
    assert "name=__main__" in log
    assert "a line on stderr" in log


def test_script_calling_sys_exit_zero_finishes(tmp_path: Path) -> None:
    runner = run_script(tmp_path, "import sys\nprint('done')\nsys.exit(0)\n")

    assert isinstance(runner.events[-1], FinishedEvent)


def test_script_exiting_non_zero_fails_with_its_status_and_stderr_tail(tmp_path: Path) -> None:
    runner = run_script(
        tmp_path,
        """
        import sys

        if __name__ == "__main__":
            if len(sys.argv) != 2:
                print("noise " * 2000, file=sys.stderr)
                print("Usage: wordcount <file>", file=sys.stderr)
                sys.exit(-1)
        """,
    )

    error = failure(runner).error
    assert error.message.startswith("the script exited with status -1")
    assert error.message.rstrip().endswith("Usage: wordcount <file>")
    assert len(error.message) < 6000  # the tail, not all of stderr
    assert not error.permanent  # a script's own failure may be transient: restarts apply


def test_script_exiting_with_a_message_fails_with_status_one_and_the_message(
    tmp_path: Path,
) -> None:
    runner = run_script(tmp_path, "import sys\nsys.exit('input folder is empty')\n")

    error = failure(runner).error
    assert "status 1" in error.message
    assert "input folder is empty" in error.message


def test_script_raising_fails_with_the_exception_and_its_traceback(tmp_path: Path) -> None:
    runner = run_script(
        tmp_path,
        """
        def load(path):
            raise FileNotFoundError(path)

        if __name__ == "__main__":
            load("/no/such/input")
        """,
    )

    error = failure(runner).error
    assert error.type == "FileNotFoundError"
    assert error.traceback is not None
    assert "app.py" in error.traceback and "in load" in error.traceback


def test_script_that_does_not_compile_fails_permanently(tmp_path: Path) -> None:
    runner = run_script(tmp_path, "if __name__ == '__main__':\n    print('unclosed'\n")

    error = failure(runner).error
    assert error.type == "SyntaxError"
    assert error.permanent


def test_pipeline_without_its_entrypoint_fails_permanently(tmp_path: Path) -> None:
    script = write_script(tmp_path / "code", "def mian(ctx):\n    return 1\n", "pipe.py")
    launch = launch_document(script, tmp_path / "ck", program=ProgramKind.SDK)

    runner = run_launch(tmp_path, launch)

    error = failure(runner).error
    assert "'main' not found" in error.message
    assert error.permanent


def test_pipeline_raising_at_run_time_is_not_permanent(tmp_path: Path) -> None:
    script = write_script(tmp_path / "code", "def main(ctx):\n    raise OSError('disk')\n", "p.py")
    launch = launch_document(script, tmp_path / "ck", program=ProgramKind.SDK)

    runner = run_launch(tmp_path, launch)

    error = failure(runner).error
    assert error.type == "OSError"
    assert not error.permanent
