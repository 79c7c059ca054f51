"""``steward logs``: which attempt's log, from which TaskManager's folder, and clear errors.

The job views come from a fake JobManager (the command's logic is what is tested); the logs
are real files where a local cluster's TaskManager keeps them (``./.steward/work`` under the
test's working directory, the default ``taskmanager.workdir``).
"""

from __future__ import annotations

from pathlib import Path

from unit.fake_jobmanager import FakeJobManagers, attempt_json, job_json, result_json
from unit.steward_cli import Run

TWO_ATTEMPTS = job_json(
    "x",
    "FINISHED",
    attempts=[
        attempt_json(1, "FAILED", taskmanager="tm-1"),
        attempt_json(2, "FINISHED", taskmanager="tm-2"),
    ],
    attempt_count=2,
    result=result_json("x", value=1),
)


def write_log(tm_id: str, attempt: int, text: str) -> Path:
    path = Path(".steward/work") / tm_id / "x" / str(attempt) / "runner.log"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_the_last_attempts_log_is_printed_by_default(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    write_log("tm-1", 1, "first attempt\n")
    write_log("tm-2", 2, "second attempt, line 1\nline 2\n")
    code, out, _err = run("logs", "x")
    assert (code, out) == (0, "second attempt, line 1\nline 2\n")
    code, out, _err = run("logs", "x", "--attempt", "1")
    assert (code, out) == (0, "first attempt\n")


def test_tail_prints_only_the_last_lines(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    write_log("tm-2", 2, "".join(f"line {n}\n" for n in range(1, 100_001)))
    code, out, _err = run("logs", "x", "--tail", "3")
    assert (code, out) == (0, "line 99998\nline 99999\nline 100000\n")
    code, out, _err = run("logs", "x", "--tail", "200000")
    assert code == 0
    assert out.startswith("line 1\n")


def test_path_says_which_taskmanager_and_where(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    code, out, _err = run("logs", "x", "--path")
    assert (code, out.strip()) == (0, "tm-2 .steward/work/tm-2/x/2/runner.log")


def test_a_log_not_on_this_machine_is_one_clear_line(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    code, out, err = run("logs", "x")
    assert (code, out) == (2, "")
    assert "attempt 2 of x ran on TaskManager tm-2" in err
    assert ".steward/work/tm-2/x/2/runner.log" in err
    assert "Traceback" not in err


def test_an_attempt_not_on_record_or_a_job_without_attempts(
    fake: FakeJobManagers, run: Run
) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    code, _out, err = run("logs", "x", "--attempt", "9")
    assert code == 2
    assert "no attempt 9 on record (attempts: 1, 2)" in err
    fake.add_job("y", job_json("y", "SCHEDULED"))
    code, _out, err = run("logs", "y")
    assert code == 2
    assert "job y has no attempt yet (it is SCHEDULED)" in err
