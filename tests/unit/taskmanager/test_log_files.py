"""Which log file a request names and where its bytes start (``taskmanager/http/files.py``):
ids checked before they reach a path, 404 vs 410, tail from the end of a large file, and a
follower that ends once the attempt ended and the file stopped growing.

Real files in a temporary folder; the attempt's phase is a plain function (what is tested is
the file logic, not the attempts' table). The HTTP side is tested end to end in
tests/e2e/cluster/test_logs.py.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from steward.taskmanager.http.files import (
    AttemptLogs,
    LogRequest,
    LogUnavailableError,
    Phase,
    RemovedLogs,
    last_lines_start,
)


def _logs(root: Path, phase: Phase = Phase.ENDED) -> AttemptLogs:
    return AttemptLogs(root, lambda _job, _attempt: phase, RemovedLogs())


def _write(root: Path, job: str, attempt: int, data: bytes) -> Path:
    path = root / job / str(attempt) / "runner.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("job_id", ["..", "../x", "a/b", ".hidden", "", "a\x00b", "x" * 129])
def test_ids_that_cannot_name_a_job_are_400(tmp_path: Path, job_id: str) -> None:
    with pytest.raises(LogUnavailableError) as refused:
        _logs(tmp_path).path(job_id, 1)
    assert refused.value.status == 400


def test_never_ran_is_404_and_removed_by_the_retention_is_410_with_when(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    with pytest.raises(LogUnavailableError) as refused:
        logs.open("job", 1, offset=0, tail=None, follow=False)
    assert (refused.value.status, refused.value.code) == (404, "log_not_found")
    logs.removed.note("job", 1, at=0.0)
    with pytest.raises(LogUnavailableError) as gone:
        logs.open("job", 1, offset=0, tail=None, follow=False)
    assert (gone.value.status, gone.value.code) == (410, "log_removed")
    assert "removed at 1970-01-01T00:00:00Z by taskmanager.workdir.retention" in gone.value.message


def test_removed_logs_remembered_are_bounded_oldest_first() -> None:
    removed = RemovedLogs(limit=2)
    for attempt in (1, 2, 3):
        removed.note("job", attempt, at=float(attempt))
    assert [removed.when("job", n) for n in (1, 2, 3)] == [None, 2.0, 3.0]


def test_tail_and_offset_pick_the_start(tmp_path: Path) -> None:
    data = b"".join(f"line {n}\n".encode() for n in range(60_000))  # several blocks
    _write(tmp_path, "job", 1, data)
    logs = _logs(tmp_path)
    tail = logs.open("job", 1, offset=0, tail=3, follow=False)
    assert data[tail.start :] == b"line 59997\nline 59998\nline 59999\n"
    assert logs.open("job", 1, offset=10, tail=None, follow=False).start == 10
    assert logs.open("job", 1, offset=10**12, tail=None, follow=False).start == len(data)
    # The tail never starts before the offset.
    assert logs.open("job", 1, offset=len(data) - 5, tail=3, follow=False).start == len(data) - 5
    with (tmp_path / "job" / "1" / "runner.log").open("rb") as file:
        assert last_lines_start(file, 10**6) == 0


def test_a_running_attempt_without_a_log_yet_is_empty_not_404(tmp_path: Path) -> None:
    logs = _logs(tmp_path, Phase.RUNNING)
    request = logs.open("job", 1, offset=0, tail=None, follow=False)
    assert request.start == 0
    assert _collect(logs, request) == b""


def test_a_follower_gets_appended_bytes_and_ends_after_the_attempt(tmp_path: Path) -> None:
    path = _write(tmp_path, "job", 1, b"first\n")
    phase = [Phase.RUNNING]
    logs = AttemptLogs(tmp_path, lambda _job, _attempt: phase[0], RemovedLogs())
    request = logs.open("job", 1, offset=0, tail=None, follow=True)

    async def follow() -> bytes:
        got = b""
        with anyio.fail_after(10):
            async for block in logs.stream(request):
                got = await _react(got, block)
        return got

    async def _react(got: bytes, block: bytes) -> bytes:
        got += block
        if got == b"first\n":
            with path.open("ab") as file:
                file.write(b"second\n")
        elif got == b"first\nsecond\n":
            phase[0] = Phase.ENDED
        return got

    assert anyio.run(follow) == b"first\nsecond\n"


def _collect(logs: AttemptLogs, request: LogRequest) -> bytes:
    async def read() -> bytes:
        return b"".join([block async for block in logs.stream(request)])

    return anyio.run(read)
